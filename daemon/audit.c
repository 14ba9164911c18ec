/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Audit records
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"

/* Message id of every audit record, so `journalctl MESSAGE_ID=...` finds them all. */
#define PMUGATE_AUDIT_MESSAGE_ID "4c7e0b3a9d2f4e61a58b6f0c2d9e1a77"

/* Buckets are keyed by uid modulo this size; two uids that share a bucket share its budget,
 * which can only make the limit stricter. */
#define AUDIT_BUCKETS 64U

typedef struct AuditBucket {
        uid_t uid;
        uint64_t window_start;
        unsigned used;
        uint64_t suppressed;
} AuditBucket;

struct Audit {
        AuditSink sink;
        FILE *file;
        AuditBucket buckets[AUDIT_BUCKETS];
        uint64_t emitted;
        uint64_t suppressed;
};

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U;
}

/* The log is named by the admin but opened by root, in a directory that may not be root's
 * alone: whoever prepared the path must not steer root's writes. A symbolic link (to
 * /etc/shadow, say) is not followed, a FIFO or device is not written to, and a file someone
 * else owns or may write is refused: its owner could read the records back, truncate them or
 * fill the disk under root's name. A hard link would make another file of root's the log. */
static int open_log_file(const char *path, FILE **ret) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        FILE *f;
        int flags;

        /* O_NONBLOCK: opening a FIFO for writing would wait for a reader. */
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0640);
        if (fd < 0 && errno == ELOOP)
                return log_error_errno(ELOOP, "Refusing the audit log %s: it is a symbolic link; name the file it "
                                       "points to instead", path);
        if (fd < 0 && errno == ENXIO)   /* a FIFO without a reader, or a device without a driver */
                return log_error_errno(ENXIO, "Refusing the audit log %s: it is not a regular file; name a file, "
                                       "or remove what is there", path);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open the audit log %s", path);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Cannot inspect the audit log %s", path);
        if (!S_ISREG(st.st_mode))
                return log_error_errno(EINVAL, "Refusing the audit log %s: it is not a regular file; name a file, "
                                       "or remove what is there", path);
        if (st.st_uid != geteuid())
                return log_error_errno(EPERM, "Refusing the audit log %s: it belongs to uid %u, not to uid %u that "
                                       "starts the daemon; remove it, or 'chown %u' it if its contents are to be "
                                       "trusted", path, (unsigned) st.st_uid, (unsigned) geteuid(),
                                       (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return log_error_errno(EPERM, "Refusing the audit log %s: group or others may write it (mode %04o); "
                                       "'chmod go-w' it", path, (unsigned) (st.st_mode & 07777));
        if (st.st_nlink != 1)
                return log_error_errno(EPERM, "Refusing the audit log %s: it has %lu hard links, so it is also "
                                       "another file; name a file of its own", path, (unsigned long) st.st_nlink);
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return log_error_errno(errno, "Cannot set up the audit log %s", path);
        f = fdopen(fd, "a");
        if (!f)
                return log_error_errno(errno, "Cannot open the audit log %s", path);
        (void) TAKE_FD(fd);
        *ret = f;
        return 0;
}

int audit_new(const char *log_path, Audit **ret) {
        _cleanup_free_ Audit *a = calloc(1, sizeof(*a));
        int r;

        if (!a)
                return -ENOMEM;
        if (log_path) {
                r = open_log_file(log_path, &a->file);
                if (r < 0)
                        return r;
                setvbuf(a->file, NULL, _IOLBF, 0);
                a->sink = AUDIT_SINK_FILE;
        } else if (access("/run/systemd/journal/socket", W_OK) == 0)
                a->sink = AUDIT_SINK_JOURNAL;
        else
                a->sink = AUDIT_SINK_STDERR;
        *ret = TAKE_PTR(a);
        return 0;
}

static void flush_suppressed(Audit *a, bool force);

Audit *audit_free(Audit *a) {
        if (!a)
                return NULL;
        flush_suppressed(a, true);
        if (a->file)
                (void) fclose(a->file);
        free(a);
        return NULL;
}

/* logfmt values: quoted when they hold a space, quote or equals sign. */
static void put_field(FILE *f, const char *key, const char *value) {
        if (!value || !*value)
                return;
        if (strpbrk(value, " \"=\\") == NULL) {
                (void) fprintf(f, " %s=%s", key, value);
                return;
        }
        (void) fprintf(f, " %s=\"", key);
        for (const char *p = value; *p; p++) {
                if (*p == '"' || *p == '\\')
                        (void) fputc('\\', f);
                (void) fputc(*p == '\n' ? ' ' : *p, f);
        }
        (void) fputc('"', f);
}

static void write_logfmt(Audit *a, const AuditRecord *rec, uint64_t suppressed) {
        FILE *f = a->file ?: stderr;
        struct timespec ts;
        struct tm tm;
        char stamp[64];

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        (void) gmtime_r(&ts.tv_sec, &tm);
        (void) strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
        (void) fprintf(f, "ts=%s.%06ldZ audit=pmugate event=%s", stamp, ts.tv_nsec / 1000, rec->event);
        put_field(f, "verdict", rec->verdict);
        (void) fprintf(f, " uid=%u gid=%u pid=%d", (unsigned) rec->uid, (unsigned) rec->gid, (int) rec->pid);
        put_field(f, "op", rec->op);
        put_field(f, "code", rec->code);
        put_field(f, "job", rec->job);
        put_field(f, "cpus", rec->cpus);
        put_field(f, "regs", rec->regs);
        if (rec->count > 0)
                (void) fprintf(f, " count=%llu", (unsigned long long) rec->count);
        if (suppressed > 0)
                (void) fprintf(f, " suppressed=%llu", (unsigned long long) suppressed);
        put_field(f, "reason", rec->reason);
        (void) fputc('\n', f);
        (void) fflush(f);
}

static void write_journal(const AuditRecord *rec, uint64_t suppressed) {
        (void) sd_journal_send("MESSAGE=pmugate %s %s uid=%u pid=%d%s%s%s%s", rec->event, rec->verdict ?: "",
                               (unsigned) rec->uid, (int) rec->pid, rec->regs ? " regs=" : "", rec->regs ?: "",
                               rec->reason ? ": " : "", rec->reason ?: "",
                               "MESSAGE_ID=" PMUGATE_AUDIT_MESSAGE_ID,
                               "PRIORITY=%d", rec->verdict && strcmp(rec->verdict, "denied") == 0 ? LOG_NOTICE : LOG_INFO,
                               "PMUGATE_EVENT=%s", rec->event,
                               "PMUGATE_VERDICT=%s", rec->verdict ?: "",
                               "PMUGATE_UID=%u", (unsigned) rec->uid,
                               "PMUGATE_GID=%u", (unsigned) rec->gid,
                               "PMUGATE_PID=%d", (int) rec->pid,
                               "PMUGATE_OP=%s", rec->op ?: "",
                               "PMUGATE_CODE=%s", rec->code ?: "",
                               "PMUGATE_JOB=%s", rec->job ?: "",
                               "PMUGATE_CPUS=%s", rec->cpus ?: "",
                               "PMUGATE_REGS=%s", rec->regs ?: "",
                               "PMUGATE_COUNT=%llu", (unsigned long long) rec->count,
                               "PMUGATE_SUPPRESSED=%llu", (unsigned long long) suppressed,
                               "PMUGATE_REASON=%s", rec->reason ?: "",
                               NULL);
}

static void emit(Audit *a, const AuditRecord *rec, uint64_t suppressed) {
        if (a->sink == AUDIT_SINK_JOURNAL)
                write_journal(rec, suppressed);
        else
                write_logfmt(a, rec, suppressed);
        a->emitted++;
}

bool audit_would_emit(const Audit *a, uid_t uid) {
        const AuditBucket *b = &a->buckets[uid % AUDIT_BUCKETS];

        return b->uid != uid || now_usec() - b->window_start >= PMUGATE_AUDIT_INTERVAL_USEC ||
               b->used < PMUGATE_AUDIT_BURST;
}

void audit_emit(Audit *a, const AuditRecord *rec) {
        AuditBucket *b = &a->buckets[rec->uid % AUDIT_BUCKETS];
        uint64_t now = now_usec(), held = 0;

        if (b->uid != rec->uid || now - b->window_start >= PMUGATE_AUDIT_INTERVAL_USEC) {
                held = b->suppressed;
                *b = (AuditBucket) { .uid = rec->uid, .window_start = now };
        }
        if (b->used >= PMUGATE_AUDIT_BURST) {
                b->suppressed++;
                a->suppressed++;
                return;
        }
        b->used++;
        /* The first record after a suppressed stretch carries the count it stands for. */
        held += b->suppressed;
        b->suppressed = 0;
        emit(a, rec, held);
}

static void flush_suppressed(Audit *a, bool force) {
        uint64_t now = now_usec();

        for (unsigned i = 0; i < AUDIT_BUCKETS; i++) {
                AuditBucket *b = &a->buckets[i];
                AuditRecord rec = {
                        .event = "suppressed",
                        .verdict = "rate-limited",
                        .uid = b->uid,
                        .reason = "audit records held back by the rate limit",
                };

                if (b->suppressed == 0 || (!force && now - b->window_start < PMUGATE_AUDIT_INTERVAL_USEC))
                        continue;
                rec.count = b->suppressed;
                b->suppressed = 0;
                emit(a, &rec, rec.count);
        }
}

void audit_flush(Audit *a) {
        flush_suppressed(a, false);
}

void audit_stats(const Audit *a, AuditStats *ret) {
        *ret = (AuditStats) { .emitted = a->emitted, .suppressed = a->suppressed, .sink = a->sink };
}

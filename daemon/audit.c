/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Audit records
 */
#include <assert.h>
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

/* Each uid seen in the current interval has a bucket of its own, found by open addressing on
 * the full uid: two uids never share one, so neither can reset or spend the other's budget. The
 * table is twice the number of uids it tracks, so a probe always ends at a free slot soon. */
#define AUDIT_TABLE_SIZE (2U * PMUGATE_AUDIT_UIDS_MAX)

/* The uid reported for what untracked uids had held back: the kernel's "no uid". */
#define AUDIT_UID_OTHERS ((uid_t) -1)

typedef struct AuditBucket {
        uid_t uid;
        bool used;
        uint64_t window_start;
        unsigned emitted;       /* records written in this window */
        uint64_t suppressed;    /* held back since the last record or report for this uid */
} AuditBucket;

struct Audit {
        AuditSink sink;
        FILE *file;
        uint64_t (*now)(void);

        AuditBucket table[AUDIT_TABLE_SIZE];
        unsigned n_tracked;
        uint64_t table_expiry;  /* no tracked uid's window is over before this */
        /* Once PMUGATE_AUDIT_UIDS_MAX uids are tracked, further uids share this one bucket
         * until slots free up: memory and records stay bounded however many uids there are. */
        AuditBucket others;

        /* All uids together write at most PMUGATE_AUDIT_GLOBAL_BURST records per interval. */
        uint64_t global_window_start;
        unsigned global_emitted;

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
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                  0640);
        if (fd < 0 && errno == ELOOP)
                return log_error_errno(ELOOP, "Refusing the audit log %s: it is a symbolic link; "
                                       "name the file it points to instead", path);
        if (fd < 0 && errno == ENXIO)   /* a FIFO without a reader, or a device without a driver */
                return log_error_errno(ENXIO, "Refusing the audit log %s: it is not a regular file; "
                                       "name a file, or remove what is there", path);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open the audit log %s", path);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Cannot inspect the audit log %s", path);
        if (!S_ISREG(st.st_mode))
                return log_error_errno(EINVAL, "Refusing the audit log %s: it is not a regular file; "
                                       "name a file, or remove what is there", path);
        if (st.st_uid != geteuid())
                return log_error_errno(EPERM, "Refusing the audit log %s: it belongs to uid %u, not to "
                                       "uid %u that starts the daemon; remove it, or 'chown %u' it "
                                       "if its contents are to be trusted", path, (unsigned) st.st_uid,
                                       (unsigned) geteuid(), (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return log_error_errno(EPERM, "Refusing the audit log %s: group or others may write it "
                                       "(mode %04o); 'chmod go-w' it", path,
                                       (unsigned) (st.st_mode & 07777));
        if (st.st_nlink != 1)
                return log_error_errno(EPERM, "Refusing the audit log %s: it has %lu hard links, so it "
                                       "is also another file; name a file of its own", path,
                                       (unsigned long) st.st_nlink);
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
        a->now = now_usec;
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

static size_t uid_slot(uid_t uid) {
        /* Fibonacci hashing spreads consecutive uids (a cluster's users) over the table. */
        return (size_t) (((uint32_t) uid * UINT32_C(2654435761)) % AUDIT_TABLE_SIZE);
}

/* The uid's bucket, or where it would go (a free slot); NULL only if the table is full, which
 * n_tracked <= PMUGATE_AUDIT_UIDS_MAX rules out. */
static AuditBucket *table_probe(AuditBucket *table, uid_t uid) {
        size_t i = uid_slot(uid);

        for (size_t n = 0; n < AUDIT_TABLE_SIZE; n++, i = (i + 1) % AUDIT_TABLE_SIZE)
                if (!table[i].used || table[i].uid == uid)
                        return &table[i];
        return NULL;
}

static bool window_over(const AuditBucket *b, uint64_t now) {
        return now - b->window_start >= PMUGATE_AUDIT_INTERVAL_USEC;
}

static void report_suppressed(Audit *a, AuditBucket *b) {
        bool others = b == &a->others;
        AuditRecord rec = {
                .event = "suppressed",
                .verdict = "rate-limited",
                .uid = others ? AUDIT_UID_OTHERS : b->uid,
                .gid = others ? (gid_t) -1 : 0,
                .reason = others ? "audit records of uids beyond the tracked ones held back by the rate "
                                   "limit"
                                 : "audit records held back by the rate limit",
                .count = b->suppressed,
        };

        if (b->suppressed == 0)
                return;
        b->suppressed = 0;
        emit(a, &rec, rec.count);
}

/* Reports what uids whose window is over (every uid, with force) had held back, and frees
 * their slots. The survivors are inserted again, as removing entries from an open-addressing
 * table would break the probe chains of the others. */
static void expire_buckets(Audit *a, uint64_t now, bool force) {
        AuditBucket kept[PMUGATE_AUDIT_UIDS_MAX];
        unsigned n_kept = 0;

        a->table_expiry = UINT64_MAX;
        for (size_t i = 0; i < AUDIT_TABLE_SIZE; i++) {
                AuditBucket *b = &a->table[i];

                if (!b->used)
                        continue;
                if (force || window_over(b, now)) {
                        report_suppressed(a, b);
                        continue;
                }
                if (n_kept < ELEMENTSOF(kept))
                        kept[n_kept++] = *b;
                /* Windows only move later, so this stays a lower bound until the next sweep. */
                if (b->window_start + PMUGATE_AUDIT_INTERVAL_USEC < a->table_expiry)
                        a->table_expiry = b->window_start + PMUGATE_AUDIT_INTERVAL_USEC;
        }
        if (force || window_over(&a->others, now))
                report_suppressed(a, &a->others);

        memset(a->table, 0, sizeof(a->table));
        for (unsigned i = 0; i < n_kept; i++)
                *table_probe(a->table, kept[i].uid) = kept[i];
        a->n_tracked = n_kept;
}

/* The bucket that pays for uid's next record: its own, taken now if need be, or the shared
 * one when every slot is held by a uid whose window is not over yet. */
static AuditBucket *bucket_of(Audit *a, uid_t uid, uint64_t now) {
        AuditBucket *b = table_probe(a->table, uid);

        if (b && b->used)
                return b;
        if (a->n_tracked >= PMUGATE_AUDIT_UIDS_MAX) {
                /* Sweeping is a pass over the table: only when a window can be over. */
                if (now < a->table_expiry)
                        return &a->others;
                expire_buckets(a, now, false);
                if (a->n_tracked >= PMUGATE_AUDIT_UIDS_MAX)
                        return &a->others;
                b = table_probe(a->table, uid);
        }
        assert(b && !b->used);
        *b = (AuditBucket) { .uid = uid, .used = true, .window_start = now };
        a->n_tracked++;
        if (now + PMUGATE_AUDIT_INTERVAL_USEC < a->table_expiry)
                a->table_expiry = now + PMUGATE_AUDIT_INTERVAL_USEC;
        return b;
}

static const AuditBucket *bucket_find(const Audit *a, uid_t uid) {
        size_t i = uid_slot(uid);

        for (size_t n = 0; n < AUDIT_TABLE_SIZE && a->table[i].used; n++, i = (i + 1) % AUDIT_TABLE_SIZE)
                if (a->table[i].uid == uid)
                        return &a->table[i];
        return NULL;
}

bool audit_would_emit(const Audit *a, uid_t uid) {
        uint64_t now = a->now();
        const AuditBucket *b;

        if (!(now - a->global_window_start >= PMUGATE_AUDIT_INTERVAL_USEC) &&
            a->global_emitted >= PMUGATE_AUDIT_GLOBAL_BURST)
                return false;
        /* A uid not tracked yet may get a slot, or the shared bucket may have room: say yes,
         * which at worst builds details for a record that is then held back. */
        b = bucket_find(a, uid);
        return !b || window_over(b, now) || b->emitted < PMUGATE_AUDIT_BURST;
}

void audit_emit(Audit *a, const AuditRecord *rec) {
        uint64_t now = a->now(), held;
        AuditBucket *b = bucket_of(a, rec->uid, now);

        if (window_over(b, now)) {
                b->window_start = now;
                b->emitted = 0;
        }
        if (now - a->global_window_start >= PMUGATE_AUDIT_INTERVAL_USEC) {
                a->global_window_start = now;
                a->global_emitted = 0;
        }
        if (b->emitted >= PMUGATE_AUDIT_BURST || a->global_emitted >= PMUGATE_AUDIT_GLOBAL_BURST) {
                b->suppressed++;
                a->suppressed++;
                return;
        }
        b->emitted++;
        a->global_emitted++;
        /* The first record after a suppressed stretch carries the count it stands for; in the
         * shared bucket that count belongs to other uids, and waits for its own report. */
        held = b == &a->others ? 0 : b->suppressed;
        if (b != &a->others)
                b->suppressed = 0;
        emit(a, rec, held);
}

static void flush_suppressed(Audit *a, bool force) {
        expire_buckets(a, a->now(), force);
}

void audit_flush(Audit *a) {
        flush_suppressed(a, false);
}

void audit_set_clock(Audit *a, uint64_t (*now)(void)) {
        a->now = now ?: now_usec;
        a->global_window_start = a->now();
        a->table_expiry = 0;
        for (size_t i = 0; i < AUDIT_TABLE_SIZE; i++)
                a->table[i].window_start = a->global_window_start;
        a->others.window_start = a->global_window_start;
}

void audit_stats(const Audit *a, AuditStats *ret) {
        *ret = (AuditStats) { .emitted = a->emitted, .suppressed = a->suppressed, .sink = a->sink };
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Audit records: one structured record per write, denial, grant, revoke or lease change. To the
 * journal when its socket exists, else one logfmt line on stderr or in --audit-log. Rate
 * limited per uid, and over all uids together, so a denial storm cannot flood the log; what is
 * held back is counted and reported with its uid, never dropped silently.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct Audit Audit;

typedef enum AuditSink {
        AUDIT_SINK_JOURNAL,
        AUDIT_SINK_STDERR,
        AUDIT_SINK_FILE,
} AuditSink;

typedef struct AuditRecord {
        const char *event;    /* "write", "deny", "grant", "revoke", "lease", "reload", ... */
        const char *verdict;  /* "allowed", "denied", ... */
        uid_t uid;
        gid_t gid;
        pid_t pid;
        const char *op;       /* request operation, e.g. "batch" */
        const char *code;     /* error name for denials */
        const char *reason;
        const char *cpus;     /* CPU list, e.g. "0-3" */
        const char *regs;     /* register list, e.g. "0x186,0x38f" */
        const char *job;
        uint64_t count;       /* operations covered by this record */
} AuditRecord;

/* log_path NULL: the journal when /run/systemd/journal/socket exists, else stderr. */
int audit_new(const char *log_path, Audit **ret);
Audit *audit_free(Audit *a);

void audit_emit(Audit *a, const AuditRecord *rec);

/* Whether a record for uid would be written now rather than held back: lets a caller skip
 * building details nobody will read (audit_emit() must still be called, to count it). */
bool audit_would_emit(const Audit *a, uid_t uid);

/* Reports what the rate limit held back since the last report, as its own record per uid, for
 * uids whose interval is over; their slots are freed for other uids. */
void audit_flush(Audit *a);

/* Tests: the monotonic clock in microseconds the rate limit reads (NULL: the real one). */
void audit_set_clock(Audit *a, uint64_t (*now)(void));

typedef struct AuditStats {
        uint64_t emitted;
        uint64_t suppressed;
        AuditSink sink;
} AuditStats;

void audit_stats(const Audit *a, AuditStats *ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lease journals: before a lease first changes a register, the register's old value is
 * appended to the lease's journal (state/lease-cpuN) and synced, so that a daemon started
 * after a crash can put it back. A journal is read back as hostile input: whoever could write
 * the state directory (the daemon's own user, for one) could have planted it. Every entry is
 * checked like a client's request before anything is written (allowlist, never-list, write
 * mask, the machine's CPUs and units), so a journal can never do more than an allowed client.
 *
 * Format, one sealed record per line (state-dir.h):
 *   pmugate-journal 1 boot=BOOT_ID cpu=N uid=U pid=P role=ROLE job=JOB|-
 *   msr|pci TARGET 0xREG WIDTH FLAGS 0xORIGINAL
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "backend/backend.h"
#include "backend/machine.h"
#include "pmu/allowlist.h"
#include "pmu/lease-entry.h"
#include "pmugate-limits.h"
#include "state-dir.h"

typedef struct Pmu Pmu;
typedef struct JournalWriter JournalWriter;

#define JOURNAL_VERSION 1U
#define JOURNAL_ROLE_MAX 16U

typedef enum JournalVerdict {
        JOURNAL_RESTORE,        /* passes every check: restored */
        JOURNAL_TORN,           /* the last line has no newline */
        JOURNAL_BAD_CHECKSUM,
        JOURNAL_BAD_SYNTAX,
        JOURNAL_TOO_MANY,       /* past PMUGATE_LEASE_JOURNAL_MAX entries */
        JOURNAL_NEVER_LIST,
        JOURNAL_NOT_ALLOWED,    /* not on this model's allowlist (or not for this unit's device) */
        JOURNAL_BAD_WIDTH,      /* access width or alignment other than the allowlist's */
        JOURNAL_READ_ONLY,      /* write mask 0 and not a counter */
        JOURNAL_ACTION,         /* "action" registers are written by clients only, never restored */
        JOURNAL_NO_SUCH_CPU,
        JOURNAL_CPU_OFFLINE,
        JOURNAL_NO_SUCH_UNIT,
        _JOURNAL_VERDICT_MAX,
} JournalVerdict;

/* Short name for logs and audit records, e.g. "never-list". */
const char *journal_verdict_to_string(JournalVerdict v);

typedef struct JournalHeader {
        char boot_id[STATE_BOOT_ID_LEN + 1];
        uint32_t cpu;
        uid_t uid;
        pid_t pid;
        char role[JOURNAL_ROLE_MAX + 1];
        char job[PMUGATE_STRING_MAX + 1];       /* empty: none */
} JournalHeader;

typedef struct JournalLine {
        LeaseEntry entry;       /* meaningful when the line parsed */
        JournalVerdict verdict;
        unsigned lineno;
} JournalLine;

typedef struct Journal {
        JournalHeader header;
        JournalLine *lines;     /* in file order; at most PMUGATE_LEASE_JOURNAL_MAX */
        size_t n_lines;
        size_t n_dropped;       /* lines past the limit, not even parsed */
} Journal;

/* Parses a journal's text (size bytes, need not be NUL-terminated). Returns 0 with the header
 * and every line, each with JOURNAL_RESTORE or the reason it cannot be used as read; -EBADMSG
 * with ret_reason when the header is missing or broken (then nothing in it is used); -ENOMEM. */
int journal_parse(const char *data, size_t size, Journal *ret, char *ret_reason, size_t reason_size);
void journal_done(Journal *j);

/* Checks one entry like a client's write: the machine has the CPU (online) or unit, the
 * register is not on the never-list, is on the allowlist with this width, and may be
 * restored. Returns JOURNAL_RESTORE with its allowlist entry, or why not with a reason. */
JournalVerdict journal_check(const Machine *m, const Allowlist *a, const LeaseEntry *e,
                             const AllowEntry **ret_entry, char *ret_reason, size_t reason_size);

typedef struct JournalContext {
        const StateDir *dir;
        const Machine *machine;
        const Allowlist *allowlist;
        Backend *backend;
        Audit *audit;           /* NULL: refusals are only logged */
        const Pmu *pmu;         /* foreign counters' bits to keep; NULL before they are detected */
        CpuSet *restored;       /* when not NULL: gets the CPUs whose MSRs a restore wrote */
} JournalContext;

typedef struct JournalOutcome {
        size_t restored;
        size_t refused;         /* audited and skipped */
        size_t failed;          /* passed the checks, but the device refused the read or write */
} JournalOutcome;

/* Checks every line of j and restores those that pass, newest first; every refused line is
 * logged and audited. name says where j came from, for those records. */
void journal_restore(const JournalContext *ctx, const char *name, const Journal *j, JournalOutcome *ret);

/* Restores the journals a previous run left in the state directory, through
 * clean_restore_entry() as a lease's end does. A journal whose every usable entry was restored
 * is removed; one where a restore failed stays (leases.h: its CPU is not leased until it is).
 * Files that are not journals the daemon could have written (a symlink, a FIFO, another
 * owner, too big) are left alone, logged and audited; journals of another boot are removed.
 * Returns how many journals were restored, or -ENOMEM. */
int journal_recover(const JournalContext *ctx);

/* The CPU whose journal file name is, when it is the name of a journal. */
bool journal_file_cpu(const char *name, uint32_t *ret);

/* Tries again to restore the journal a lease of cpu left behind because a restore failed
 * (journal_recover() for that one file). Returns 0 when there is none (any more), -EBUSY when it
 * is still there, or another negative errno. */
int journal_retry(const JournalContext *ctx, uint32_t cpu);

/* Writing, for a held lease. */
typedef struct JournalHolder {
        uid_t uid;
        pid_t pid;
        const char *role;
        const char *job;        /* NULL or empty: none */
} JournalHolder;

/* Creates the journal of cpu with its header, synced with the directory. A journal already
 * there is one whose restore failed: it is never replaced (-EEXIST). */
int journal_create(const StateDir *d, uint32_t cpu, const JournalHolder *h, JournalWriter **ret);

/* Appends e and syncs it: when this returns 0 the entry is on disk. */
int journal_append(JournalWriter *w, const LeaseEntry *e);

/* Closes w; with remove, deletes the file too (its registers were all restored). */
JournalWriter *journal_close(JournalWriter *w, bool remove);

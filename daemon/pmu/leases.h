/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leases: the exclusive right of one client to program the PMU of a CPU. Before a holder's
 * first write to a register, its old value goes into the lease's journal, on disk under the
 * runtime directory before the register changes. When the lease ends — release, disconnect,
 * revoke, preemption, or a daemon crash followed by a restart — every journaled register is
 * put back the one way clean.h defines (the journal's bits within the write mask, the clean
 * state in the rest and in every enable, interrupt and freeze bit), counters are zeroed, the
 * overflow status of the CPU's own counters (and of the boxes it wrote) is cleared, and the
 * journal is deleted: no counts leak to the next user, and no overflow bit or interrupt enable
 * is left for the kernel to trip over.
 *
 * A journal whose registers could not all be put back stays on disk, and its CPU is not leased
 * again until a retry of that restore succeeds (tried at each lease request and by an admin's
 * reset): a new journal never replaces it, so the original values are never lost.
 *
 * A register shared by the threads of a core or the CPUs of a package (and a PCI unit, which
 * belongs to a package) is one physical register: writing it needs leases on all of those
 * CPUs, and it is journaled once, under the lease of their first online CPU (the anchor).
 * It is put back as soon as any of those leases ends, since from then on its holder no longer
 * holds them all; two leases can never both remember it and restore over each other.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "backend/machine.h"
#include "cpuset.h"
#include "message.h"
#include "pmu/allowlist.h"
#include "pmu/lease-entry.h"
#include "policy/policy.h"
#include "refusal.h"
#include "state-dir.h"

typedef struct JournalWriter JournalWriter;
typedef struct Pmu Pmu;
typedef struct Audit Audit;

typedef struct Lease {
        const void *owner;      /* the client holding it; NULL when free */
        Role role;
        uid_t uid;
        pid_t pid;
        char job[PMUGATE_STRING_MAX + 1];
        LeaseEntry *journal;
        size_t n_journal;
        size_t journal_appends; /* entries ever journaled, those restored early included */
        bool written;           /* a register of this CPU was written: its overflow status may
                                 * be the holder's doing (a wrap, GLOBAL_STATUS_SET) */
        JournalWriter *state;   /* journal file (journal.h), open while the lease is held */
} Lease;

/* Told of every lease that ends, however it ends, after its registers were restored. */
typedef void (*LeaseEndedFn)(const void *owner, uint32_t cpu, void *userdata);

typedef struct Leases {
        Lease *cpus;            /* by CPU number */
        uint32_t n_cpus;
        bool *kept;             /* by CPU number: a journal whose restore failed is on disk */
        const StateDir *state;  /* NULL: journals are kept in memory only */
        Backend *backend;
        const Machine *machine;
        const Allowlist *allowlist;     /* the entries restores are checked and masked by */
        const Pmu *pmu;                 /* foreign counters, and the model's clean state */
        Audit *audit;
        LeaseEndedFn ended;
        void *ended_userdata;
} Leases;

typedef struct LeaseHolder {
        const void *owner;
        Role role;
        uid_t uid;
        pid_t pid;
        const char *job;                /* the job of every CPU, or NULL */
        const char *const *jobs;        /* or per CPU, parallel to the CPUs acquired: the job whose
                                         * grant gave that CPU (NULL entries: none) */
} LeaseHolder;

int leases_new(const StateDir *state, Backend *b, const Machine *m, Leases **ret);
/* Frees without restoring; end every lease first. */
Leases *leases_free(Leases *l);

void leases_set_ended_hook(Leases *l, LeaseEndedFn ended, void *userdata);

/* What restores need beside the backend: the allowlist (write masks), the PMU (foreign bits,
 * the clean state) and the audit log for refused journal entries (NULL: logged only). Without
 * an allowlist a journaled register is put back whole. */
void leases_set_restore(Leases *l, const Allowlist *a, const Pmu *p, Audit *audit);

/* Tries again to restore the journal a failed restore left for cpu. Returns 0 when there is
 * none (any more), -EBUSY when it is still there, or another negative errno. */
int leases_retry_kept(Leases *l, uint32_t cpu);

typedef void (*LeasePreemptedFn)(const void *owner, uint32_t cpu, void *userdata);

/* The first lease among cpus that keeps holder from taking them (held by another client and
 * not one holder preempts), with its CPU in ret_cpu; NULL when none does. */
const Lease *leases_blocker(const Leases *l, const LeaseHolder *holder, const uint32_t *cpus, size_t n_cpus,
                           uint32_t *ret_cpu);

/* Takes leases on cpus for holder, all or none. A CPU a monitor holds is taken over by a user
 * or admin: the monitor's lease ends with a restore and preempted() is told.
 * Returns 0, or refuses with PROTO_E_BUSY, the reason naming the holder's uid, pid, role and
 * job: for admins and the audit only (leases_blocker() tells a caller what it may say to
 * others); or with PROTO_E_INTERNAL when a CPU's last restore failed and still fails (its
 * journal is kept). Re-leasing one's own CPU is fine. */
int leases_acquire(Leases *l, const LeaseHolder *holder, const uint32_t *cpus, size_t n_cpus,
                   LeasePreemptedFn preempted, void *userdata, Refusal *ret_refusal);

/* Ends owner's leases on cpus (all of them when n_cpus is 0), restoring what it wrote.
 * Returns how many leases ended. */
size_t leases_release(Leases *l, const void *owner, const uint32_t *cpus, size_t n_cpus);

/* Ends whoever's lease on cpu. */
void leases_end_cpu(Leases *l, uint32_t cpu);

typedef bool (*LeaseAllowedFn)(const Lease *lease, uint32_t cpu, void *userdata);

/* Ends, with a restore, every lease of owner (on the CPUs of among, or anywhere when among is
 * NULL) that allowed() no longer allows. Returns how many ended, and which CPUs in ret_ended
 * (when not NULL). */
size_t leases_end_unless(Leases *l, const void *owner, const CpuSet *among, LeaseAllowedFn allowed,
                         void *userdata, CpuSet *ret_ended);

static inline bool leases_held_by(const Leases *l, uint32_t cpu, const void *owner) {
        return cpu < l->n_cpus && l->cpus[cpu].owner == owner;
}

/* The CPU whose lease journals a register of scope on target (a CPU, or with pci a unit):
 * the first online CPU of machine_scope_cpus()' set. A unit whose package is unknown or has
 * no online CPU (only admins may write it) is anchored on the machine's first online CPU.
 * Returns 0 or negative errno. */
int leases_anchor(const Leases *l, RegScope scope, uint32_t target, bool pci, uint32_t *ret);

/* Whether op's register still needs its original value journaled under the lease of anchor. */
bool leases_journal_needed(const Leases *l, uint32_t anchor, const RegOp *op);

/* Journals the original value (on disk first). Returns 0 or negative errno; a write whose
 * original could not be kept must not happen. */
int leases_journal_add(Leases *l, uint32_t anchor, const RegOp *op, const AllowEntry *e, uint64_t original);

/* Notes a write on cpu under its lease, so that its end clears the overflow status. */
static inline void leases_note_write(Leases *l, uint32_t cpu) {
        if (cpu < l->n_cpus && l->cpus[cpu].owner)
                l->cpus[cpu].written = true;
}

/* The CPUs a lease holds, for pmu_uncore_detect(). */
static inline void leases_held_cpus(const Leases *l, CpuSet *ret) {
        cpuset_clear(ret);
        for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++)
                if (l->cpus[cpu].owner)
                        cpuset_add(ret, cpu);
}

size_t leases_count(const Leases *l);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leases and their journals
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "macro.h"
#include "pmu/clean.h"
#include "pmu/journal.h"
#include "pmu/leases.h"
#include "pmu/pmu.h"
#include "pmugate-limits.h"

/* Journals still in the state directory once recovery is done are ones it could not restore:
 * their CPUs wait for a successful retry. */
static int note_kept(int dir_fd, const char *name, void *userdata) {
        Leases *l = userdata;
        uint32_t cpu;

        (void) dir_fd;
        if (journal_file_cpu(name, &cpu) && cpu < l->n_cpus) {
                l->kept[cpu] = true;
                log_warning("Lease journal %s is kept from an earlier run: CPU %" PRIu32 " is not leased until "
                            "its registers are restored", name, cpu);
        }
        return 0;
}

int leases_new(const StateDir *state, Backend *b, const Machine *m, Leases **ret) {
        Leases *l = calloc(1, sizeof(*l));
        int r;

        if (!l)
                return -ENOMEM;
        l->cpus = calloc(m->n_cpus ?: 1, sizeof(Lease));
        l->kept = calloc(m->n_cpus ?: 1, sizeof(bool));
        if (!l->cpus || !l->kept) {
                leases_free(l);
                return -ENOMEM;
        }
        l->n_cpus = m->n_cpus;
        l->backend = b;
        l->machine = m;
        l->state = state;
        if (state) {
                r = state_dir_foreach(state->fd, note_kept, l);
                if (r < 0) {
                        leases_free(l);
                        return r;
                }
        }
        *ret = l;
        return 0;
}

void leases_set_restore(Leases *l, const Allowlist *a, const Pmu *p, Audit *audit) {
        l->allowlist = a;
        l->pmu = p;
        l->audit = audit;
}

Leases *leases_free(Leases *l) {
        if (!l)
                return NULL;
        for (uint32_t cpu = 0; l->cpus && cpu < l->n_cpus; cpu++) {
                free(l->cpus[cpu].journal);
                (void) journal_close(l->cpus[cpu].state, /* remove= */ false);
        }
        free(l->cpus);
        free(l->kept);
        free(l);
        return NULL;
}

/* The allowlist entry a journaled register was written under. Without an allowlist (or should
 * the entry be gone) the register is put back whole, as the journal has it. */
static const AllowEntry *entry_allowed(const Leases *l, const LeaseEntry *e, AllowEntry *fallback) {
        const AllowEntry *a = NULL;

        if (l->allowlist && !e->pci)
                a = allowlist_find_msr(l->allowlist, e->reg);
        else if (l->allowlist && e->target < l->machine->n_units)
                a = allowlist_find_pci(l->allowlist, l->machine->units[e->target].vendor,
                                       l->machine->units[e->target].device, e->reg);
        if (a && a->width == e->width)
                return a;
        *fallback = (AllowEntry) { .first = e->reg, .last = e->reg, .write_mask = UINT64_MAX, .width = e->width,
                                   .flags = e->flags, .pci = e->pci };
        return fallback;
}

static int restore_entry(Leases *l, const LeaseEntry *e) {
        AllowEntry fallback;
        int r;

        r = clean_restore_entry(l->backend, l->pmu, l->pmu ? l->pmu->clean : clean_table_for(l->machine->cpu_model),
                                e, entry_allowed(l, e, &fallback));
        if (r < 0)
                log_warning_errno(r, "Cannot restore %s 0x%" PRIx32 " of %s %" PRIu32,
                                  e->pci ? "offset" : "MSR", e->reg, e->pci ? "unit" : "CPU", e->target);
        /* A box whose registers went back loses the overflow flags its holder caused. */
        else if (e->pci && l->pmu)
                r = clean_unit_status(l->pmu, e->target);
        return r;
}

/* Puts journaled registers back, newest first, so control registers that were changed after
 * the counters they enable are stopped before those counters are cleared. Counters are
 * zeroed rather than restored: their counts belong to the holder. */
static unsigned restore_entries(Leases *l, const LeaseEntry *entries, size_t n) {
        unsigned failed = 0;

        for (size_t i = n; i-- > 0;)
                failed += restore_entry(l, &entries[i]) < 0;
        return failed;
}

/* Whether entry, journaled under the lease of anchor, is a register cpu shares with anchor
 * at the given scope: a core register of their core, a CCX register of their CCX, or a package
 * register or a unit of their package. */
static bool entry_shared_with(const Leases *l, const LeaseEntry *e, RegScope scope, uint32_t cpu) {
        const Machine *m = l->machine;

        if (e->pci)
                return scope == REG_SCOPE_PACKAGE && e->target < m->n_units &&
                       m->units[e->target].package == m->cpus[cpu].package;
        return e->scope == scope;
}

/* The registers of that scope which anchor's journal keeps and cpu shares go back now, newest
 * first, and leave the journal, since their holder no longer holds every CPU sharing them. */
static void restore_journal_shared(Leases *l, uint32_t anchor, uint32_t cpu, RegScope scope) {
        Lease *lease = &l->cpus[anchor];
        size_t kept = 0;

        for (size_t i = lease->n_journal; i-- > 0;)
                if (entry_shared_with(l, &lease->journal[i], scope, cpu))
                        (void) restore_entry(l, &lease->journal[i]);
        /* The journal file keeps these entries: restored again after a crash, they put back
         * the value the register already holds, since nobody can write it without the anchor. */
        for (size_t i = 0; i < lease->n_journal; i++)
                if (!entry_shared_with(l, &lease->journal[i], scope, cpu))
                        lease->journal[kept++] = lease->journal[i];
        lease->n_journal = kept;
}

/* The lease on cpu ends while its holder may keep the anchor of cpu's core or package: the
 * registers of that core or package which the anchor's journal keeps go back now. */
static void restore_shared(Leases *l, uint32_t cpu, RegScope scope) {
        uint32_t anchor;

        if (machine_scope_anchor(l->machine, scope, cpu, false, &anchor) < 0 || anchor == cpu ||
            anchor >= l->n_cpus || !l->cpus[anchor].owner)
                return;
        restore_journal_shared(l, anchor, cpu, scope);
}

static bool journal_has_scope(const Lease *lease, RegScope scope) {
        for (size_t i = 0; i < lease->n_journal; i++)
                if (!lease->journal[i].pci && lease->journal[i].scope == scope)
                        return true;
        return false;
}

/* CCX registers the same way, except that cpu's own CCX anchor is not the only one: a CPU whose
 * L3 the kernel does not report belongs to every CCX of its package (and its registers to the
 * whole package), so every anchor whose CCX set holds cpu gives its registers back. */
static void restore_shared_ccx(Leases *l, uint32_t cpu) {
        for (uint32_t anchor = 0; anchor < l->n_cpus; anchor++) {
                CpuSet set;

                if (anchor == cpu || !l->cpus[anchor].owner ||
                    !journal_has_scope(&l->cpus[anchor], REG_SCOPE_CCX))
                        continue;
                if (machine_scope_cpus(l->machine, REG_SCOPE_CCX, anchor, false, &set) < 0 ||
                    !cpuset_has(&set, cpu))
                        continue;
                restore_journal_shared(l, anchor, cpu, REG_SCOPE_CCX);
        }
}

static void lease_end(Leases *l, uint32_t cpu) {
        Lease *lease = &l->cpus[cpu];
        const void *owner = lease->owner;
        unsigned failed;

        if (!owner)
                return;
        failed = restore_entries(l, lease->journal, lease->n_journal);
        /* Whatever the journal held, a holder that wrote anything may have set overflow bits
         * (through GLOBAL_STATUS_SET, or a counter that wrapped): the kernel's PMI handler must
         * not find them on a CPU nobody holds. */
        if (l->pmu && lease->written && clean_cpu_status(l->pmu, cpu) < 0)
                failed++;
        /* The journal goes only once everything in it is back; otherwise it stays, the CPU is
         * not leased again until a retry succeeds, and the next start tries again too. */
        if (failed > 0 && lease->state) {
                log_warning("Keeping the lease journal of CPU %" PRIu32 ": %u registers could not be restored; "
                            "the CPU is not leased again until they are", cpu, failed);
                l->kept[cpu] = true;
        }
        lease->state = journal_close(lease->state, /* remove= */ failed == 0);
        free(lease->journal);
        *lease = (Lease) {};
        restore_shared(l, cpu, REG_SCOPE_CORE);
        restore_shared_ccx(l, cpu);
        restore_shared(l, cpu, REG_SCOPE_PACKAGE);
        if (l->ended)
                l->ended(owner, cpu, l->ended_userdata);
}

void leases_set_ended_hook(Leases *l, LeaseEndedFn ended, void *userdata) {
        l->ended = ended;
        l->ended_userdata = userdata;
}

void leases_end_cpu(Leases *l, uint32_t cpu) {
        if (cpu < l->n_cpus)
                lease_end(l, cpu);
}

static bool end_unless(Leases *l, const void *owner, uint32_t cpu, LeaseAllowedFn allowed, void *userdata,
                       CpuSet *ret_ended) {
        if (cpu >= l->n_cpus || !owner || l->cpus[cpu].owner != owner)
                return false;
        if (allowed(&l->cpus[cpu], cpu, userdata))
                return false;
        lease_end(l, cpu);
        if (ret_ended)
                cpuset_add(ret_ended, cpu);
        return true;
}

size_t leases_end_unless(Leases *l, const void *owner, const CpuSet *among, LeaseAllowedFn allowed,
                         void *userdata, CpuSet *ret_ended) {
        size_t ended = 0;
        CpuSet candidates;

        if (ret_ended)
                cpuset_clear(ret_ended);
        if (!among) {
                for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++)
                        ended += end_unless(l, owner, cpu, allowed, userdata, ret_ended);
                return ended;
        }
        /* A copy: ending a lease may change the set it came from (the owner's own). */
        candidates = *among;
        CPUSET_FOREACH(cpu, &candidates)
                ended += end_unless(l, owner, cpu, allowed, userdata, ret_ended);
        return ended;
}

int leases_retry_kept(Leases *l, uint32_t cpu) {
        JournalContext ctx = { .dir = l->state, .machine = l->machine, .allowlist = l->allowlist,
                               .backend = l->backend, .audit = l->audit, .pmu = l->pmu };
        int r;

        if (cpu >= l->n_cpus || !l->kept[cpu])
                return 0;
        /* Without the allowlist nothing in the file could be checked, so nothing is written. */
        if (!l->state || !l->allowlist)
                return -EBUSY;
        r = journal_retry(&ctx, cpu);
        if (r == 0) {
                log_notice("The kept lease journal of CPU %" PRIu32 " is restored; the CPU may be leased again", cpu);
                l->kept[cpu] = false;
                if (l->pmu)
                        (void) clean_cpu_status(l->pmu, cpu);
        }
        return r;
}

/* Monitors yield to users and admins; anyone else keeps a lease until it ends it (admins
 * can end it with a reset). */
static bool lease_preemptible(const Lease *lease, const LeaseHolder *holder) {
        return lease->role == ROLE_MONITOR && holder->role > ROLE_MONITOR;
}

const Lease *leases_blocker(const Leases *l, const LeaseHolder *holder, const uint32_t *cpus, size_t n_cpus,
                           uint32_t *ret_cpu) {
        for (size_t i = 0; i < n_cpus; i++) {
                const Lease *lease;

                if (cpus[i] >= l->n_cpus)
                        continue;
                lease = &l->cpus[cpus[i]];
                if (!lease->owner || lease->owner == holder->owner || lease_preemptible(lease, holder))
                        continue;
                if (ret_cpu)
                        *ret_cpu = cpus[i];
                return lease;
        }
        return NULL;
}

int leases_acquire(Leases *l, const LeaseHolder *holder, const uint32_t *cpus, size_t n_cpus,
                   LeasePreemptedFn preempted, void *userdata, Refusal *ret_refusal) {
        uint32_t busy;
        const Lease *blocker = leases_blocker(l, holder, cpus, n_cpus, &busy);

        if (blocker)
                return refuse(ret_refusal, PROTO_E_BUSY, -1, "CPU %" PRIu32 " is leased by uid %u (pid %d, %s%s%s)",
                              busy, (unsigned) blocker->uid, (int) blocker->pid, role_to_string(blocker->role),
                              blocker->job[0] ? ", job " : "", blocker->job);
        for (size_t i = 0; i < n_cpus; i++)
                if (cpus[i] < l->n_cpus && l->cpus[cpus[i]].owner != holder->owner &&
                    leases_retry_kept(l, cpus[i]) < 0)
                        return refuse(ret_refusal, PROTO_E_INTERNAL, -1, "CPU %" PRIu32 "'s PMU could not be put back "
                                      "after its last lease (see the daemon's log); it is not leased again until it is",
                                      cpus[i]);

        for (size_t i = 0; i < n_cpus; i++) {
                const char *job;
                Lease *lease;

                if (cpus[i] >= l->n_cpus)
                        continue;
                lease = &l->cpus[cpus[i]];
                if (lease->owner == holder->owner)
                        continue;
                if (lease->owner) {
                        const void *old = lease->owner;

                        lease_end(l, cpus[i]);
                        if (preempted)
                                preempted(old, cpus[i], userdata);
                }
                *lease = (Lease) { .owner = holder->owner, .role = holder->role, .uid = holder->uid, .pid = holder->pid };
                /* The job whose grant gave the lease; a CPU leased again keeps its first. */
                job = holder->jobs ? holder->jobs[i] : holder->job;
                if (job)
                        (void) snprintf(lease->job, sizeof(lease->job), "%s", job);
        }
        return 0;
}

size_t leases_release(Leases *l, const void *owner, const uint32_t *cpus, size_t n_cpus) {
        size_t ended = 0;

        if (n_cpus == 0) {
                for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++)
                        if (l->cpus[cpu].owner == owner) {
                                lease_end(l, cpu);
                                ended++;
                        }
                return ended;
        }
        for (size_t i = 0; i < n_cpus; i++)
                if (cpus[i] < l->n_cpus && l->cpus[cpus[i]].owner == owner) {
                        lease_end(l, cpus[i]);
                        ended++;
                }
        return ended;
}

int leases_anchor(const Leases *l, RegScope scope, uint32_t target, bool pci, uint32_t *ret) {
        int r;

        r = machine_scope_anchor(l->machine, scope, target, pci, ret);
        if (r == -ENOENT && pci)
                return machine_first_online_cpu(l->machine, ret);
        return r;
}

bool leases_journal_needed(const Leases *l, uint32_t anchor, const RegOp *op) {
        const Lease *lease;
        bool pci = reg_op_is_pci(op);

        if (anchor >= l->n_cpus)
                return false;
        lease = &l->cpus[anchor];
        if (!lease->owner)
                return false;
        for (size_t i = 0; i < lease->n_journal; i++)
                if (lease->journal[i].reg == op->reg && lease->journal[i].target == op->target &&
                    lease->journal[i].pci == pci)
                        return false;
        return true;
}

int leases_journal_add(Leases *l, uint32_t anchor, const RegOp *op, const AllowEntry *e, uint64_t original) {
        Lease *lease = &l->cpus[anchor];
        LeaseEntry *journal, entry = {
                .target = op->target,
                .reg = op->reg,
                .original = original,
                .width = e->width,
                .flags = e->flags,
                .scope = reg_op_is_pci(op) ? REG_SCOPE_PACKAGE : e->scope,
                .pci = reg_op_is_pci(op),
        };

        /* Counted over the lease's life: a shared register put back early and written again
         * adds a line to the journal file, which must not grow without bound. */
        if (lease->journal_appends >= PMUGATE_LEASE_JOURNAL_MAX)
                return -ENOSPC;
        if (l->state && !lease->state) {
                JournalHolder h = { .uid = lease->uid, .pid = lease->pid,
                                    .role = role_to_string(lease->role), .job = lease->job };
                int r = journal_create(l->state, anchor, &h, &lease->state);

                if (r < 0)
                        return r;
        }
        /* On disk before the register changes: a crash between the two leaves a journal
         * entry for a value that is still in place, which restores harmlessly. */
        if (lease->state) {
                int r = journal_append(lease->state, &entry);

                if (r < 0)
                        return r;
        }
        journal = reallocarray(lease->journal, lease->n_journal + 1, sizeof(LeaseEntry));
        if (!journal)
                return -ENOMEM;
        lease->journal = journal;
        lease->journal[lease->n_journal++] = entry;
        lease->journal_appends++;
        return 0;
}

size_t leases_count(const Leases *l) {
        size_t n = 0;

        for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++)
                n += l->cpus[cpu].owner != NULL;
        return n;
}

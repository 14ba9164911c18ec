/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batch check and execution
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "error.h"
#include "macro.h"
#include "pmu/batch.h"
#include "pmu/clean-table.h"
#include "pmu/pmu-uncore.h"
#include "pmu/pmu.h"
#include "refusal.h"

/* Recently used entries by register: consecutive ops, and the CPU-major expansion of a sweep
 * that cycles through a few registers, find their entry without a search. */
#define ENTRY_CACHE_SIZE 16U

static int check_msr(const BatchContext *ctx, const RegOp *op, size_t i, const AllowEntry **cache, Refusal *ret) {
        const Machine *m = ctx->machine;
        const AllowEntry *e = cache[op->reg % ENTRY_CACHE_SIZE];
        const char *never = NULL;

        if (!machine_cpu(m, op->target))
                return refuse(ret, PROTO_E_NO_SUCH_CPU, i, "op %zu: CPU %" PRIu32 " does not exist (CPUs 0-%" PRIu32 ")",
                              i, op->target, m->n_cpus - 1);
        /* Consecutive ops usually touch the same range; skip the search then. */
        if (!e || op->reg < e->first || op->reg > e->last)
                e = allowlist_find_msr(ctx->allowlist, op->reg);
        /* The never-list only matters outside the allowlist or in ranges the parser found
         * overlapping it; everywhere else the lookup cannot find anything. */
        if (!e || (e->flags & ALLOW_FLAG_NEVER))
                never = never_list_lookup(op->reg, reg_op_is_write(op));
        if (never)
                return refuse(ret, PROTO_E_REG_FORBIDDEN, i,
                              "op %zu: MSR 0x%" PRIx32 " (%s) is on the built-in never-list", i, op->reg, never);
        if (!e)
                return refuse(ret, PROTO_E_REG_NOT_ALLOWED, i,
                              "op %zu: MSR 0x%" PRIx32 " is not on the allowlist for this CPU model", i, op->reg);
        if (reg_op_is_write(op) && e->write_mask == 0)
                return refuse(ret, PROTO_E_READ_ONLY, i, "op %zu: MSR 0x%" PRIx32 " (%s) is read-only", i, op->reg,
                              e->name);
        cache[op->reg % ENTRY_CACHE_SIZE] = e;
        return 0;
}

static int check_pci(const BatchContext *ctx, const RegOp *op, size_t i, const AllowEntry **ret_entry,
                     Refusal *ret) {
        const Machine *m = ctx->machine;
        const MachineUnit *u;
        const AllowEntry *e;

        if (op->target >= m->n_units)
                return refuse(ret, PROTO_E_NO_SUCH_UNIT, i, "op %zu: PCI unit %" PRIu32 " does not exist (%" PRIu32 " units)",
                              i, op->target, m->n_units);
        u = &m->units[op->target];
        if (reg_op_is_write(op) && op->reg < PCI_CONFIG_HEADER_END)
                return refuse(ret, PROTO_E_REG_FORBIDDEN, i,
                              "op %zu: offset 0x%" PRIx32 " of unit %" PRIu32 " is in the PCI configuration "
                              "header (below 0x%x), which is never written", i, op->reg, op->target,
                              PCI_CONFIG_HEADER_END);
        e = allowlist_find_pci(ctx->allowlist, u->vendor, u->device, op->reg);
        if (!e || (op->reg - e->first) % e->width != 0)
                return refuse(ret, PROTO_E_REG_NOT_ALLOWED, i,
                              "op %zu: offset 0x%" PRIx32 " of unit %" PRIu32 " (%04x:%04x) is not on the allowlist", i,
                              op->reg, op->target, u->vendor, u->device);
        if (reg_op_is_write(op) && e->write_mask == 0)
                return refuse(ret, PROTO_E_READ_ONLY, i, "op %zu: offset 0x%" PRIx32 " (%s) of unit %" PRIu32 " is read-only",
                              i, op->reg, e->name, op->target);
        *ret_entry = e;
        return 0;
}

static int check_class(const BatchContext *ctx, const RegOp *op, const AllowEntry *e, size_t i, Refusal *ret) {
        const Rights *r = ctx->rights;
        bool write = reg_op_is_write(op);
        const ClassSet *classes = write ? r->write_classes : r->read_classes;

        if (!classes || class_set_contains(classes, e->cls))
                return 0;
        return refuse(ret, PROTO_E_NOT_AUTHORIZED, i, "op %zu: the %s role may not %s registers of class '%s' (%s)", i,
                      role_to_string(r->role), write ? "write" : "read", e->cls, e->name);
}

/* The CPUs a core or package register, or a unit, is shared by (machine_scope_cpus()), kept
 * for the run of ops that names the same register scope and target. */
typedef struct SharedCpus {
        bool valid;
        bool pci;
        uint8_t scope;
        uint32_t target;
        int r;
        CpuSet cpus;
} SharedCpus;

static bool op_is_shared(const RegOp *op, const AllowEntry *e) {
        return reg_op_is_pci(op) || e->scope != REG_SCOPE_THREAD;
}

static const SharedCpus *shared_cpus(const BatchContext *ctx, const RegOp *op, const AllowEntry *e,
                                     SharedCpus *cache) {
        bool pci = reg_op_is_pci(op);
        uint8_t scope = pci ? REG_SCOPE_PACKAGE : e->scope;

        if (!cache->valid || cache->pci != pci || cache->scope != scope || cache->target != op->target) {
                *cache = (SharedCpus) { .valid = true, .pci = pci, .scope = scope, .target = op->target };
                cache->r = machine_scope_cpus(ctx->machine, scope, op->target, pci, &cache->cpus);
        }
        return cache;
}

static int package_of(const BatchContext *ctx, const RegOp *op) {
        const Machine *m = ctx->machine;

        return reg_op_is_pci(op) ? m->units[op->target].package : m->cpus[op->target].package;
}

/* A unit whose package is unknown or has no online CPU: no lease can stand for all of its
 * package, so nobody but an admin writes it. */
static int check_orphan_unit(const BatchContext *ctx, const RegOp *op, const SharedCpus *shared, size_t i,
                             Refusal *ret) {
        if (!shared || shared->r != -ENOENT || ctx->rights->role == ROLE_ADMIN)
                return 0;
        return refuse(ret, PROTO_E_NOT_AUTHORIZED, i,
                      "op %zu: the package of unit %" PRIu32 " is unknown or has no online CPU, so no lease "
                      "covers it: only an admin may write it", i, op->target);
}

static int check_scope(const BatchContext *ctx, const RegOp *op, const AllowEntry *e,
                       const SharedCpus *shared, size_t i, Refusal *ret) {
        bool write = reg_op_is_write(op), pci = reg_op_is_pci(op);
        const char *job = ctx->scope->job;

        if (!pci && (e->scope == REG_SCOPE_THREAD || (e->scope == REG_SCOPE_CORE && !write))) {
                if (cpuset_has(&ctx->scope->cpus, op->target))
                        return 0;
                return refuse(ret, PROTO_E_OUT_OF_SCOPE, i,
                              "op %zu: CPU %" PRIu32 " is not one of job %s's CPUs", i, op->target, job);
        }
        if (!write && (pci || e->scope == REG_SCOPE_PACKAGE || e->scope == REG_SCOPE_CCX) &&
            ctx->package_read_shared)
                return 0;
        /* "Every CPU of" is never true of no CPU at all. */
        if (shared->r < 0 && pci)
                return refuse(ret, PROTO_E_OUT_OF_SCOPE, i,
                              "op %zu: the package of unit %" PRIu32 " is unknown or has no online CPU, "
                              "so job %s cannot hold all of it", i, op->target, job);
        if (shared->r < 0)
                return refuse(ret, PROTO_E_NO_SUCH_CPU, i, "op %zu: CPU %" PRIu32 " is offline", i,
                              op->target);
        if (cpuset_is_subset(&shared->cpus, &ctx->scope->cpus))
                return 0;
        if (!pci && e->scope == REG_SCOPE_CORE)
                return refuse(ret, PROTO_E_OUT_OF_SCOPE, i,
                              "op %zu: %s is shared by the threads of CPU %" PRIu32 "'s core, and job %s "
                              "does not hold them all", i, e->name, op->target, job);
        if (!pci && e->scope == REG_SCOPE_CCX)
                return refuse(ret, PROTO_E_OUT_OF_SCOPE, i,
                              "op %zu: %s counts for every CPU of CPU %" PRIu32 "'s CCX (its L3), and job "
                              "%s does not hold them all", i, e->name, op->target, job);
        return refuse(ret, PROTO_E_OUT_OF_SCOPE, i,
                      "op %zu: %s counts for all of package %d, and job %s does not hold every CPU of it", i,
                      e->name, package_of(ctx, op), job);
}

/* An energy register counts the energy of every CPU of its core, package or machine, whoever
 * runs there: a power side channel (CVE-2020-8694, CVE-2020-8695, CVE-2020-12912). Admins and
 * monitors read it; a user only holding every one of those CPUs: in job mode the job's CPUs,
 * otherwise its own leases. energy_read_shared gives it to every user who may read the class. */
/* Cores and packages whose energy this batch was found to hold: a sweep of a package's CPUs
 * decides it once, not once per CPU (each decision walks the package). */
#define ENERGY_CACHE_SIZE 16U

typedef struct EnergyHeld {
        bool valid;
        EnergyScope scope;
        int32_t package, core;
} EnergyHeld;

static EnergyHeld energy_held_key(const Machine *m, const EnergyRegister *er, uint32_t cpu) {
        const MachineCpu *c = &m->cpus[cpu];

        return (EnergyHeld) {
                .valid = true,
                .scope = er->scope,
                .package = er->scope == ENERGY_SCOPE_MACHINE ? -1 : c->package,
                .core = er->scope == ENERGY_SCOPE_CORE ? c->core : -1,
        };
}

static EnergyHeld *energy_held_slot(EnergyHeld *cache, const EnergyHeld *key) {
        return &cache[((unsigned) key->package * 31U + (unsigned) key->core * 7U + key->scope) % ENERGY_CACHE_SIZE];
}

static bool energy_held_equal(const EnergyHeld *a, const EnergyHeld *b) {
        return a->valid && b->valid && a->scope == b->scope && a->package == b->package && a->core == b->core;
}

static int check_energy(const BatchContext *ctx, const RegOp *op, const AllowEntry *e, size_t i,
                        EnergyHeld *cache, Refusal *ret) {
        const EnergyRegister *er;
        CpuSet counted, missing;
        char list[96], what[96];
        EnergyHeld key, *slot;
        bool one;

        if (!(e->flags & ALLOW_FLAG_ENERGY) || reg_op_is_write(op) || reg_op_is_pci(op))
                return 0;
        er = energy_list_lookup(op->reg);
        if (!er || ctx->rights->role != ROLE_USER || ctx->energy_read_shared)
                return 0;
        /* check_msr() found the CPU; an offline one shares nothing, whatever the cache says */
        if (!ctx->machine->cpus[op->target].online)
                return refuse(ret, PROTO_E_NO_SUCH_CPU, i, "op %zu: CPU %" PRIu32 " is offline", i, op->target);
        key = energy_held_key(ctx->machine, er, op->target);
        slot = energy_held_slot(cache, &key);
        if (energy_held_equal(slot, &key))
                return 0;
        if (energy_scope_cpus(ctx->machine, er, op->target, &counted) < 0)
                return refuse(ret, PROTO_E_NO_SUCH_CPU, i, "op %zu: CPU %" PRIu32 " is offline", i, op->target);
        cpuset_clear(&missing);
        CPUSET_FOREACH(c, &counted)
                if (ctx->scope ? !cpuset_has(&ctx->scope->cpus, c) : !leases_held_by(ctx->leases, c, ctx->owner))
                        cpuset_add(&missing, c);
        if (cpuset_is_empty(&missing)) {
                /* a CPU whose package or core the kernel did not say is decided every time */
                if (key.package >= 0 || key.scope == ENERGY_SCOPE_MACHINE)
                        if (key.core >= 0 || key.scope != ENERGY_SCOPE_CORE)
                                *slot = key;
                return 0;
        }
        if (cpuset_format(&missing, list, sizeof(list)) < 0)
                (void) snprintf(list, sizeof(list), "%u of them", cpuset_count(&missing));
        one = cpuset_count(&missing) == 1;
        energy_scope_describe(ctx->machine, er, op->target, what, sizeof(what));
        if (ctx->scope)
                return refuse(ret, PROTO_E_OUT_OF_SCOPE, i,
                              "op %zu: %s counts the energy of %s, and job %s does not hold %s %s; energy "
                              "is a power side channel on whoever runs there, so a job reads it only holding "
                              "every CPU it counts (an admin may set energy_read_shared = yes)", i, er->name,
                              what, ctx->scope->job, one ? "CPU" : "CPUs", list);
        return refuse(ret, PROTO_E_NO_LEASE, i,
                      "op %zu: %s counts the energy of %s; energy is a power side channel on whoever runs "
                      "there, so a user reads it only holding leases on every CPU it counts (%s %s %s "
                      "not leased; an admin may set energy_read_shared = yes)", i, er->name, what,
                      one ? "CPU" : "CPUs", list, one ? "is" : "are");
}

static int check_lease(const BatchContext *ctx, const RegOp *op, const AllowEntry *e,
                       const SharedCpus *shared, size_t i, Refusal *ret) {
        bool pci = reg_op_is_pci(op);
        uint32_t anchor;

        if (!shared) {
                if (leases_held_by(ctx->leases, op->target, ctx->owner))
                        return 0;
                return refuse(ret, PROTO_E_NO_LEASE, i,
                              "op %zu: writing on CPU %" PRIu32 " needs a lease on it; take one with a "
                              "'lease' request first", i, op->target);
        }
        if (shared->r == -ENOENT && pci) {
                /* An admin's write of a unit without a package is journaled under the lease of
                 * the machine's first online CPU, which the admin must hold. */
                if (leases_anchor(ctx->leases, REG_SCOPE_PACKAGE, op->target, true, &anchor) < 0)
                        return refuse(ret, PROTO_E_NO_LEASE, i, "op %zu: no CPU is online to lease", i);
                if (leases_held_by(ctx->leases, anchor, ctx->owner))
                        return 0;
                return refuse(ret, PROTO_E_NO_LEASE, i,
                              "op %zu: unit %" PRIu32 " has no package with online CPUs; writing it needs a "
                              "lease on CPU %" PRIu32 ", the first online CPU", i, op->target, anchor);
        }
        if (shared->r < 0)
                return refuse(ret, PROTO_E_NO_SUCH_CPU, i, "op %zu: CPU %" PRIu32 " is offline", i,
                              op->target);
        CPUSET_FOREACH(c, &shared->cpus) {
                if (leases_held_by(ctx->leases, c, ctx->owner))
                        continue;
                if (pci)
                        return refuse(ret, PROTO_E_NO_LEASE, i,
                                      "op %zu: writing unit %" PRIu32 " needs leases on every CPU of "
                                      "package %d (CPU %" PRIu32 " is not leased)", i, op->target,
                                      package_of(ctx, op), c);
                if (e->scope == REG_SCOPE_CCX)
                        return refuse(ret, PROTO_E_NO_LEASE, i,
                                      "op %zu: %s is shared by every CPU of CPU %" PRIu32 "'s CCX (its "
                                      "L3); writing it needs leases on all of them (CPU %" PRIu32 " is not "
                                      "leased)", i, e->name, op->target, c);
                if (e->scope == REG_SCOPE_CORE)
                        return refuse(ret, PROTO_E_NO_LEASE, i,
                                      "op %zu: %s is shared by the threads of CPU %" PRIu32 "'s core; "
                                      "writing it needs leases on all of them (CPU %" PRIu32 " is not "
                                      "leased)", i, e->name, op->target, c);
                return refuse(ret, PROTO_E_NO_LEASE, i,
                              "op %zu: %s is shared by every CPU of package %d; writing it needs leases on "
                              "all of them (CPU %" PRIu32 " is not leased)", i, e->name, package_of(ctx, op),
                              c);
        }
        return 0;
}

/* A package counter is read-only and counts for its whole package, like an uncore register:
 * the role must read its class, and in job mode the job must hold every online CPU of the
 * package unless package_read_shared says package registers may be read anyway. */
static int check_counter(const BatchContext *ctx, const RegOp *op, size_t i, Refusal *ret) {
        const Machine *m = ctx->machine;
        const ClassSet *classes = ctx->rights->read_classes;
        const MachineCounter *c;
        CpuSet package;

        if (op->target >= m->n_counters)
                return refuse(ret, PROTO_E_NO_SUCH_UNIT, i, "op %zu: package counter %" PRIu32 " does not "
                              "exist (%" PRIu32 " counters)", i, op->target, m->n_counters);
        c = &m->counters[op->target];
        if (classes && !class_set_contains(classes, c->cls))
                return refuse(ret, PROTO_E_NOT_AUTHORIZED, i, "op %zu: the %s role may not read registers "
                              "of class '%s' (%s)", i, role_to_string(ctx->rights->role), c->cls, c->name);
        if (!ctx->scope || ctx->package_read_shared)
                return 0;
        if (machine_scope_cpus(m, REG_SCOPE_PACKAGE, c->cpu, false, &package) < 0)
                return refuse(ret, PROTO_E_OUT_OF_SCOPE, i, "op %zu: package %" PRIi32 " of %s has no "
                              "online CPU, so job %s cannot hold all of it", i, c->package, c->name,
                              ctx->scope->job);
        if (cpuset_is_subset(&package, &ctx->scope->cpus))
                return 0;
        return refuse(ret, PROTO_E_OUT_OF_SCOPE, i, "op %zu: %s counts for all of package %" PRIi32 ", and "
                      "job %s does not hold every CPU of it", i, c->name, c->package, ctx->scope->job);
}

int batch_check(const BatchContext *ctx, const RegOp *ops, size_t n_ops, const AllowEntry **entries,
                Refusal *ret_refusal) {
        return batch_check_range(ctx, ops, 0, n_ops, entries, ret_refusal);
}

int batch_check_range(const BatchContext *ctx, const RegOp *ops, size_t first, size_t end, const AllowEntry **entries,
                      Refusal *ret_refusal) {
        const Rights *rights = ctx->rights;
        const AllowEntry *cache[ENTRY_CACHE_SIZE] = {};
        SharedCpus shared_cache = {};
        EnergyHeld energy_cache[ENERGY_CACHE_SIZE] = {};
        int r;

        for (size_t i = first; i < end; i++) {
                const RegOp *op = &ops[i];
                bool write = reg_op_is_write(op);
                const SharedCpus *shared = NULL;
                const AllowEntry *e = NULL;

                if (write ? !rights->may_write : !rights->may_read)
                        return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, i, "op %zu: %s", i, rights->reason);
                if (!reg_op_is_counter(op) && cpu_model_is_arm(ctx->machine->cpu_model))
                        return refuse(ret_refusal, PROTO_E_REG_NOT_ALLOWED, i, "op %zu: %s (perf_open)", i,
                                      MACHINE_NO_MSRS_REASON);
                if (write && ctx->choice && ctx->choice->counters == BACKEND_COUNTERS_PERF)
                        return refuse(ret_refusal, PROTO_E_READ_ONLY, i,
                                      "op %zu: this node programs counters through perf (%s); "
                                      "MSR writes are off: use the perf path", i, ctx->choice->reason);
                if (write && ctx->choice && ctx->choice->counters == BACKEND_COUNTERS_NONE)
                        return refuse(ret_refusal, PROTO_E_READ_ONLY, i,
                                      "op %zu: this node cannot program counters (%s); MSR writes are off",
                                      i, ctx->choice->reason);
                if (reg_op_is_counter(op)) {
                        r = check_counter(ctx, op, i, ret_refusal);
                        if (r != 0)
                                return r;
                        entries[i] = NULL;
                        continue;
                }

                if (reg_op_is_pci(op))
                        r = check_pci(ctx, op, i, &e, ret_refusal);
                else {
                        r = check_msr(ctx, op, i, cache, ret_refusal);
                        e = cache[op->reg % ENTRY_CACHE_SIZE];
                }
                if (r == 0)
                        r = check_class(ctx, op, e, i, ret_refusal);
                if (r == 0 && !write)
                        r = check_energy(ctx, op, e, i, energy_cache, ret_refusal);
                if (r == 0 && op_is_shared(op, e) && (write || ctx->scope))
                        shared = shared_cpus(ctx, op, e, &shared_cache);
                if (r == 0 && write)
                        r = check_orphan_unit(ctx, op, shared, i, ret_refusal);
                if (r == 0 && ctx->scope)
                        r = check_scope(ctx, op, e, shared, i, ret_refusal);
                if (r == 0 && write && !reg_op_is_pci(op))
                        r = pmu_write_conflict(ctx->pmu, op->target, op->reg, e->write_mask & op->mask, op->value,
                                               e->flags & ALLOW_FLAG_ACTION, ret_refusal);
                if (r == 0 && write)
                        r = pmu_uncore_write_conflict(ctx->pmu, reg_op_is_pci(op), op->target, op->reg, ret_refusal);
                if (r == PROTO_E_BUSY)
                        ret_refusal->op_index = i;
                if (r == 0 && write)
                        r = check_lease(ctx, op, e, shared, i, ret_refusal);
                if (r != 0)
                        return r;
                entries[i] = e;
        }
        return 0;
}

static int op_read(Backend *b, const RegOp *op, const AllowEntry *e, uint64_t *ret) {
        if (reg_op_is_pci(op))
                return backend_pci_read(b, op->target, op->reg, e->width, ret);
        return backend_msr_read(b, op->target, op->reg, ret);
}

static int op_write(Backend *b, const RegOp *op, const AllowEntry *e, uint64_t value) {
        if (reg_op_is_pci(op))
                return backend_pci_write(b, op->target, op->reg, e->width, value);
        return backend_msr_write(b, op->target, op->reg, value);
}

/* Journals (as counters, to be zeroed) the not yet journaled counter reg of the lease. */
static int journal_counter(const BatchContext *ctx, uint32_t cpu, uint32_t reg) {
        const AllowEntry *e = allowlist_find_msr(ctx->allowlist, reg);
        RegOp counter = { .kind = REG_OP_MSR_WRITE, .target = cpu, .reg = reg, .mask = UINT64_MAX };

        if (!e || !(e->flags & ALLOW_FLAG_COUNTER) || !leases_journal_needed(ctx->leases, cpu, &counter))
                return 0;
        return leases_journal_add(ctx->leases, cpu, &counter, e, 0);
}

/* A control register can start counters the holder never writes itself; their counts must not
 * outlive the lease either. They go into the journal before the control register, so the
 * newest-first restore stops counting before it clears them. Counters another PMU user holds
 * are left alone. */
static int journal_counters_started_by(const BatchContext *ctx, const RegOp *op, uint32_t anchor) {
        const Pmu *p = ctx->pmu;
        const CpuModel *model = ctx->machine->cpu_model;
        uint32_t cpu = op->target, gp = machine_gp_counters(ctx->machine), fixed = model ? model->fixed_counters : 0;
        uint32_t foreign_gp = p->foreign_gp[cpu], foreign_fixed = p->foreign_fixed[cpu];
        bool all_gp = false, all_fixed = false;
        int r = 0;

        if (p->amd) {
                uint32_t counters[AMD_CORE_COUNTERS_MAX];
                size_t n = pmu_counters_started_by(p, cpu, op->reg, counters, ELEMENTSOF(counters));

                /* An L3 or data-fabric counter is shared like its event select: journaled under
                 * the same anchor. */
                for (size_t i = 0; i < n && r == 0; i++)
                        r = journal_counter(ctx, anchor, counters[i]);
                return r;
        }
        if (op->reg >= MSR_IA32_PERFEVTSEL0 && op->reg < MSR_IA32_PERFEVTSEL0 + gp) {
                uint32_t i = op->reg - MSR_IA32_PERFEVTSEL0;

                return (foreign_gp >> i) & 1 ? 0 : journal_counter(ctx, cpu, MSR_IA32_PMC0 + i);
        }
        if (op->reg == MSR_IA32_FIXED_CTR_CTRL)
                all_fixed = true;
        else if (op->reg == MSR_IA32_PERF_GLOBAL_CTRL)
                all_gp = all_fixed = true;
        else
                return 0;

        for (uint32_t i = 0; all_gp && r == 0 && i < gp; i++)
                if (!((foreign_gp >> i) & 1))
                        r = journal_counter(ctx, cpu, MSR_IA32_PMC0 + i);
        for (uint32_t i = 0; all_fixed && r == 0 && i < fixed; i++)
                if (!((foreign_fixed >> i) & 1))
                        r = journal_counter(ctx, cpu, MSR_IA32_FIXED_CTR0 + i);
        if (all_fixed && r == 0 && model && model->perf_metrics && !((foreign_fixed >> FIXED_SLOTS_INDEX) & 1))
                r = journal_counter(ctx, cpu, MSR_PERF_METRICS);
        return r;
}

/* The PCI analogue: programming a unit (say a memory controller channel) can start its
 * counters, which clients cannot write; they are journaled, as counters to zero, ahead of the
 * unit's first written register. */
static int journal_unit_counters(const BatchContext *ctx, uint32_t anchor, uint32_t unit) {
        const MachineUnit *u = &ctx->machine->units[unit];
        const Allowlist *a = ctx->allowlist;
        int r = 0;

        for (size_t i = 0; i < a->n_pci && r == 0; i++) {
                const AllowEntry *e = &a->pci[i];

                if (!(e->flags & ALLOW_FLAG_COUNTER) || e->pci_vendor != u->vendor || e->pci_device != u->device)
                        continue;
                for (uint32_t offset = e->first; offset <= e->last && r == 0; offset += e->width) {
                        RegOp counter = { .kind = REG_OP_PCI_WRITE, .target = unit, .reg = offset, .mask = UINT64_MAX };

                        if (leases_journal_needed(ctx->leases, anchor, &counter))
                                r = leases_journal_add(ctx->leases, anchor, &counter, e, 0);
                }
        }
        return r;
}

static int execute_write(const BatchContext *ctx, Backend *b, const RegOp *op, const AllowEntry *e, uint64_t *ret) {
        uint64_t old = 0, mask = e->write_mask & op->mask, keep = 0;
        bool pci = reg_op_is_pci(op);
        const CleanReg *clean = NULL;
        RegOp journaled = *op;
        uint32_t anchor;
        bool journal;
        int r;

        if (!pci)
                leases_note_write(ctx->leases, op->target);
        if (e->flags & ALLOW_FLAG_ACTION) {
                /* Write-1-to-clear/set: reading it back and writing the bits again would act
                 * on bits the client never named. */
                *ret = op->value & mask;
                return op_write(b, op, e, *ret);
        }
        if (!op_is_shared(op, e))
                anchor = op->target;
        else {
                r = leases_anchor(ctx->leases, e->scope, op->target, reg_op_is_pci(op), &anchor);
                if (r < 0)
                        return r;
                /* A core or package MSR is one register whichever of its CPUs names it: it is
                 * journaled, and restored, through the anchor. */
                if (!reg_op_is_pci(op))
                        journaled.target = anchor;
        }
        journal = leases_journal_needed(ctx->leases, anchor, &journaled);
        if (ctx->pmu) {
                clean = clean_find(ctx->pmu->clean, op->reg, pci);
                if (!pci)
                        keep = pmu_foreign_bits(ctx->pmu, op->target, op->reg);
        }
        /* The client's other writable bits and foreign bits keep their current value, the bits
         * it may not write take the clean one (clean.h); a write that leaves nothing to keep
         * needs no read unless the lease must remember the old value. */
        if (journal || clean_write_needs_current(e, clean, mask, keep)) {
                r = op_read(b, op, e, &old);
                if (r < 0)
                        return r;
        }
        if (journal) {
                r = reg_op_is_pci(op) ? journal_unit_counters(ctx, anchor, op->target) :
                                        journal_counters_started_by(ctx, op, anchor);
                if (r < 0)
                        return r;
                r = leases_journal_add(ctx->leases, anchor, &journaled, e, old);
                if (r < 0)
                        return r;
        }
        *ret = clean_write_value(e, clean, old, op->value, mask, keep);
        return op_write(b, op, e, *ret);
}

void batch_execute(const BatchContext *ctx, Backend *b, const RegOp *ops, const AllowEntry *const *entries,
                   size_t n_ops, int32_t *status, uint64_t *values) {
        /* The result arrays are touched before the first op runs: their first touch, cold
         * after an idle interval, otherwise falls between the first CPU's write of its global
         * control and the TSC read right after it, which a client takes as the edge of that
         * CPU's counting window (a +1e-6 window on the first CPU of each batch). */
        memset(status, 0, n_ops * sizeof(*status));
        memset(values, 0, n_ops * sizeof(*values));
        for (size_t i = 0; i < n_ops; i++) {
                const RegOp *op = &ops[i];
                uint64_t value = 0;
                int r;

                if (reg_op_is_counter(op))
                        r = backend_counter_read(b, op->target, &value);
                else if (reg_op_is_write(op)) {
                        r = execute_write(ctx, b, op, entries[i], &value);
                        /* The register's other bits are not the caller's to see: the kernel's
                         * enable bits in a global control, a bit someone else set. The reply
                         * shows only the bits it wrote. */
                        value &= entries[i]->write_mask & op->mask;
                } else
                        r = op_read(b, op, entries[i], &value);
                status[i] = r;
                values[i] = r == 0 ? value : 0;
        }
}

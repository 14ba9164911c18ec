/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Uncore boxes and counters the kernel holds
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "error.h"
#include "log.h"
#include "macro.h"
#include "pmu/pmu-state.h"
#include "pmu/pmu-uncore.h"

#define IMC_DAEMON_PMU_PREFIX "uncore_imc_"
#define IMC_CLASS "uncore-imc"

#define OWNER_DAEMON_EVENTS "the kernel's uncore_imc driver, for pmugated's own memory-bandwidth counters " \
                            "(read those: the package counters in hello)"
#define OWNER_IMC_ENABLED "the kernel's uncore_imc driver (a perf user enabled its counters)"
#define OWNER_AMD_UNCORE "the kernel's amd_uncore driver (a perf user enabled it)"
#define OWNER_IMC_UNKNOWN "an unknown PMU user (its counter controls could not be read; the kernel's " \
                          "uncore_imc driver may hold it)"
#define OWNER_AMD_UNKNOWN "an unknown PMU user (its control could not be read; the kernel's amd_uncore " \
                          "driver may hold it)"

/* A memory-controller channel the allowlist knows: its first counter control is listed as an
 * uncore-imc register. */
static bool unit_is_imc(const Pmu *p, uint32_t unit) {
        const MachineUnit *u = &p->machine->units[unit];
        const AllowEntry *e;

        if (u->vendor != IMC_PCI_VENDOR)
                return false;
        e = allowlist_find_pci(p->allowlist, u->vendor, u->device, IMC_PMON_CTL0);
        return e && strcmp(e->cls, IMC_CLASS) == 0;
}

/* The box uncore_imc_N of a package is its Nth memory-controller channel in PCI address order,
 * the order the kernel's driver numbers them in. Returns the unit, or -ENOENT. */
static int imc_box_unit(const Pmu *p, int32_t package, unsigned long box) {
        unsigned long seen = 0;

        for (uint32_t i = 0; i < p->machine->n_units; i++) {
                if (p->machine->units[i].package != package || !unit_is_imc(p, i))
                        continue;
                if (seen++ == box)
                        return (int) i;
        }
        return -ENOENT;
}

/* Every package counter pmugated opened on an uncore_imc_N PMU (not the free-running ones,
 * which program nothing) makes box N of its package the kernel's. When the box cannot be
 * told, every channel of the package is, rather than one the kernel programs being handed out. */
static void mark_daemon_events(Pmu *p) {
        const Machine *m = p->machine;

        for (uint32_t i = 0; i < m->n_counters; i++) {
                const MachineCounter *c = &m->counters[i];
                size_t prefix = strlen(IMC_DAEMON_PMU_PREFIX);
                unsigned long n;
                char *end;
                int unit;

                /* served, and on uncore_imc_<digits> */
                if (c->error[0] || strncmp(c->name, IMC_DAEMON_PMU_PREFIX, prefix) != 0 ||
                    c->name[prefix] < '0' || c->name[prefix] > '9')
                        continue;
                errno = 0;
                n = strtoul(c->name + prefix, &end, 10);
                unit = errno == 0 && *end == '/' ? imc_box_unit(p, c->package, n) : -ENOENT;
                if (unit >= 0) {
                        p->unit_owner[unit] = UNCORE_OWNER_DAEMON_EVENTS;
                        continue;
                }
                log_warning("Package counter %s names no memory-controller channel of package %" PRIi32
                            "; every channel of the package is left to the kernel", c->name, c->package);
                for (uint32_t u = 0; u < m->n_units; u++)
                        if (m->units[u].package == c->package && unit_is_imc(p, u))
                                p->unit_owner[u] = UNCORE_OWNER_DAEMON_EVENTS;
        }
}

int pmu_uncore_init(Pmu *p) {
        const Machine *m = p->machine;

        p->unit_owner = calloc(m->n_units ?: 1, sizeof(*p->unit_owner));
        p->foreign_l3 = calloc(m->n_cpus ?: 1, sizeof(*p->foreign_l3));
        p->unknown_l3 = calloc(m->n_cpus ?: 1, sizeof(*p->unknown_l3));
        p->foreign_df = calloc(m->n_cpus ?: 1, sizeof(*p->foreign_df));
        p->unknown_df = calloc(m->n_cpus ?: 1, sizeof(*p->unknown_df));
        if (!p->unit_owner || !p->foreign_l3 || !p->unknown_l3 || !p->foreign_df || !p->unknown_df)
                return -ENOMEM;
        mark_daemon_events(p);
        return 0;
}

void pmu_uncore_done(Pmu *p) {
        free(p->unit_owner);
        free(p->foreign_l3);
        free(p->unknown_l3);
        free(p->foreign_df);
        free(p->unknown_df);
        p->unit_owner = NULL;
        p->foreign_l3 = p->unknown_l3 = NULL;
        p->foreign_df = p->unknown_df = NULL;
}

static bool set_leased(const CpuSet *leased, const CpuSet *set) {
        if (!leased)
                return false;
        CPUSET_FOREACH(cpu, set)
                if (cpuset_has(leased, cpu))
                        return true;
        return false;
}

/* Bit i set when the control of pair i (first, first + 2, ...) reads enabled on cpu, and in
 * ret_unknown when it cannot be read; only registers the allowlist lists are read (the others
 * no client may write either). */
static uint64_t enabled_pairs(const Pmu *p, uint32_t cpu, uint32_t first, unsigned n,
                              uint64_t *ret_unknown) {
        uint64_t bits = 0, unknown = 0, v;

        for (unsigned i = 0; i < n && i < 64; i++) {
                uint32_t ctl = first + 2 * i;

                if (!allowlist_find_msr(p->allowlist, ctl))
                        continue;
                if (backend_msr_read(p->backend, cpu, ctl, &v) < 0)
                        unknown |= UINT64_C(1) << i;
                else if (v & UNCORE_CTL_ENABLE)
                        bits |= UINT64_C(1) << i;
        }
        *ret_unknown = unknown;
        return bits;
}

/* Reads the L3 (scope CCX) or data-fabric (scope package) controls of set on its first CPU,
 * unless a CPU of it is leased, and records the result on every CPU of the set. */
static void detect_amd_scope(Pmu *p, RegScope scope, const CpuSet *set, const CpuSet *leased) {
        const Machine *m = p->machine;
        bool l3 = scope == REG_SCOPE_CCX;
        uint32_t anchor = cpuset_next(set, 0);
        unsigned n = l3 ? MIN(m->l3_counters, AMD_L3_COUNTERS_MAX) :
                          MIN(m->df_counters, AMD_DF_COUNTERS_MAX);
        uint64_t bits, unknown;

        if (set_leased(leased, set))
                return;
        bits = enabled_pairs(p, anchor, l3 ? MSR_AMD_L3_CTL0 : MSR_AMD_DF_CTL0, n, &unknown);
        if (bits != (l3 ? p->foreign_l3[anchor] : p->foreign_df[anchor]))
                log_info("CPU %" PRIu32 ": %s counters enabled by the kernel's amd_uncore driver: 0x%"
                         PRIx64, anchor, l3 ? "L3" : "data-fabric", bits);
        if (unknown != (l3 ? p->unknown_l3[anchor] : p->unknown_df[anchor]))
                log_warning("CPU %" PRIu32 ": cannot read the controls of %s counters 0x%" PRIx64 "; they "
                            "count as held", anchor, l3 ? "L3" : "data-fabric", unknown);
        CPUSET_FOREACH(c, set)
                if (c < m->n_cpus) {
                        if (l3) {
                                p->foreign_l3[c] = (uint8_t) bits;
                                p->unknown_l3[c] = (uint8_t) unknown;
                        } else {
                                p->foreign_df[c] = bits;
                                p->unknown_df[c] = unknown;
                        }
                }
}

/* Enabled when a counter control (the four, the fixed counter's) has EN set; unknown when one
 * cannot be read. */
static UncoreOwner imc_box_owner(const Pmu *p, uint32_t unit) {
        uint64_t v;

        for (unsigned i = 0; i <= IMC_PMON_COUNTERS; i++) {
                uint32_t ctl = i < IMC_PMON_COUNTERS ? IMC_PMON_CTL0 + IMC_PMON_CTL_STRIDE * i :
                                                       IMC_PMON_FIXED_CTL;

                if (backend_pci_read(p->backend, unit, ctl, 4, &v) < 0)
                        return UNCORE_OWNER_UNKNOWN;
                if (v & UNCORE_CTL_ENABLE)
                        return UNCORE_OWNER_KERNEL_ENABLED;
        }
        return UNCORE_OWNER_NONE;
}

static void detect_unit(Pmu *p, uint32_t unit) {
        static const char *const changes[_UNCORE_OWNER_MAX] = {
                [UNCORE_OWNER_NONE] = "no longer held by the kernel's uncore_imc driver",
                [UNCORE_OWNER_KERNEL_ENABLED] = "counters enabled by the kernel's uncore_imc driver",
                [UNCORE_OWNER_UNKNOWN] = "cannot read its counter controls; it counts as held",
        };
        UncoreOwner o;

        if (p->unit_owner[unit] == UNCORE_OWNER_DAEMON_EVENTS || !unit_is_imc(p, unit))
                return;
        o = imc_box_owner(p, unit);
        if (o != p->unit_owner[unit])
                log_info("Unit %" PRIu32 " (%s): %s", unit, p->machine->units[unit].bdf, changes[o]);
        p->unit_owner[unit] = o;
}

void pmu_uncore_counters_opened(Pmu *p) {
        const Machine *m = p->machine;

        /* Counters waiting for the opener had no error yet and marked their boxes the kernel's;
         * now the box of one that failed is told from its controls, as any other is. */
        for (uint32_t u = 0; u < m->n_units; u++)
                if (p->unit_owner[u] == UNCORE_OWNER_DAEMON_EVENTS)
                        p->unit_owner[u] = UNCORE_OWNER_NONE;
        mark_daemon_events(p);
        for (uint32_t u = 0; u < m->n_units; u++)
                detect_unit(p, u);
}

/* The units of the package of CPUs set, unless a CPU of it is leased. */
static void detect_package_units(Pmu *p, const CpuSet *set, const CpuSet *leased) {
        const Machine *m = p->machine;
        int32_t package = m->cpus[cpuset_next(set, 0)].package;

        if (set_leased(leased, set))
                return;
        for (uint32_t u = 0; u < m->n_units; u++)
                if (m->units[u].package == package)
                        detect_unit(p, u);
}

/* Units of no package with an online CPU: only admins write them, under the lease of the
 * machine's first online CPU, so they are read while that CPU is not leased. */
static void detect_orphan_units(Pmu *p, const CpuSet *leased) {
        const Machine *m = p->machine;
        uint32_t first, anchor;

        if (machine_first_online_cpu(m, &first) < 0 || (leased && cpuset_has(leased, first)))
                return;
        for (uint32_t u = 0; u < m->n_units; u++)
                if (machine_scope_anchor(m, REG_SCOPE_PACKAGE, u, true, &anchor) == -ENOENT)
                        detect_unit(p, u);
}

/* Adds set to covered. */
static void cover(CpuSet *covered, const CpuSet *set) {
        CPUSET_FOREACH(c, set)
                cpuset_add(covered, c);
}

void pmu_uncore_detect(Pmu *p, const uint32_t *cpus, size_t n_cpus, const CpuSet *leased) {
        const Machine *m = p->machine;
        uint32_t first = UINT32_MAX;
        CpuSet ccx_done, package_done, set;

        if (!p->amd && m->n_units == 0)
                return;
        cpuset_clear(&ccx_done);
        cpuset_clear(&package_done);
        (void) machine_first_online_cpu(m, &first);
        /* Every CCX and package once, however many of its CPUs are named: a CPU of one already
         * read is skipped without looking its set up again. */
        for (size_t i = 0; i < n_cpus; i++) {
                uint32_t cpu = cpus[i];

                if (cpu >= m->n_cpus || !m->cpus[cpu].online)
                        continue;
                if (p->amd && !cpuset_has(&ccx_done, cpu) &&
                    machine_scope_cpus(m, REG_SCOPE_CCX, cpu, false, &set) == 0) {
                        cover(&ccx_done, &set);
                        detect_amd_scope(p, REG_SCOPE_CCX, &set, leased);
                }
                if (!cpuset_has(&package_done, cpu) &&
                    machine_scope_cpus(m, REG_SCOPE_PACKAGE, cpu, false, &set) == 0) {
                        cover(&package_done, &set);
                        if (p->amd)
                                detect_amd_scope(p, REG_SCOPE_PACKAGE, &set, leased);
                        detect_package_units(p, &set, leased);
                }
                if (cpu == first && m->n_units > 0)
                        detect_orphan_units(p, leased);
        }
}

void pmu_uncore_detect_all(Pmu *p) {
        _cleanup_free_ uint32_t *cpus = calloc(p->machine->n_cpus ?: 1, sizeof(uint32_t));

        if (!cpus) {
                log_warning("Out of memory: uncore counters the kernel holds are not looked for");
                return;
        }
        for (uint32_t cpu = 0; cpu < p->machine->n_cpus; cpu++)
                cpus[cpu] = cpu;
        pmu_uncore_detect(p, cpus, p->machine->n_cpus, NULL);
}

/* The index of the L3 or data-fabric pair reg belongs to (control or counter), or -1. */
static int amd_pair(uint32_t reg, uint32_t first, unsigned n) {
        if (reg < first || reg >= first + 2 * n)
                return -1;
        return (int) ((reg - first) / 2);
}

const char *pmu_uncore_owner(const Pmu *p, bool pci, uint32_t target, uint32_t reg) {
        int i;

        if (pci) {
                if (target >= p->machine->n_units)
                        return NULL;
                switch (p->unit_owner[target]) {
                case UNCORE_OWNER_DAEMON_EVENTS:
                        return OWNER_DAEMON_EVENTS;
                case UNCORE_OWNER_KERNEL_ENABLED:
                        return OWNER_IMC_ENABLED;
                case UNCORE_OWNER_UNKNOWN:
                        return OWNER_IMC_UNKNOWN;
                default:
                        return NULL;
                }
        }
        if (!p->amd || target >= p->machine->n_cpus)
                return NULL;
        i = amd_pair(reg, MSR_AMD_L3_CTL0, AMD_L3_COUNTERS_MAX);
        if (i >= 0)
                return (p->foreign_l3[target] >> i) & 1 ? OWNER_AMD_UNCORE :
                       (p->unknown_l3[target] >> i) & 1 ? OWNER_AMD_UNKNOWN : NULL;
        i = amd_pair(reg, MSR_AMD_DF_CTL0, AMD_DF_COUNTERS_MAX);
        if (i >= 0)
                return (p->foreign_df[target] >> i) & 1 ? OWNER_AMD_UNCORE :
                       (p->unknown_df[target] >> i) & 1 ? OWNER_AMD_UNKNOWN : NULL;
        return NULL;
}

int pmu_uncore_write_conflict(const Pmu *p, bool pci, uint32_t target, uint32_t reg, Refusal *ret_refusal) {
        const char *owner = pmu_uncore_owner(p, pci, target, reg);
        int l3 = amd_pair(reg, MSR_AMD_L3_CTL0, AMD_L3_COUNTERS_MAX);

        if (!owner)
                return 0;
        if (pci)
                return refuse(ret_refusal, PROTO_E_BUSY, -1,
                              "unit %" PRIu32 " (%s), a memory-controller channel, is held by %s; no "
                              "client may program it", target, p->machine->units[target].bdf, owner);
        return refuse(ret_refusal, PROTO_E_BUSY, -1,
                      "MSR 0x%" PRIx32 " on CPU %" PRIu32 " is %s counter %d, held by %s; pick "
                      "another counter", reg, target, l3 >= 0 ? "L3" : "data-fabric",
                      l3 >= 0 ? l3 : amd_pair(reg, MSR_AMD_DF_CTL0, AMD_DF_COUNTERS_MAX), owner);
}

uint64_t pmu_uncore_l3_union(const Pmu *p) {
        uint64_t u = 0;

        for (uint32_t cpu = 0; cpu < p->machine->n_cpus; cpu++)
                u |= p->foreign_l3[cpu] | p->unknown_l3[cpu];
        return u;
}

uint64_t pmu_uncore_df_union(const Pmu *p) {
        uint64_t u = 0;

        for (uint32_t cpu = 0; cpu < p->machine->n_cpus; cpu++)
                u |= p->foreign_df[cpu] | p->unknown_df[cpu];
        return u;
}

UncoreOwner pmu_uncore_unit_owner(const Pmu *p, uint32_t unit) {
        return unit < p->machine->n_units ? (UncoreOwner) p->unit_owner[unit] : UNCORE_OWNER_NONE;
}

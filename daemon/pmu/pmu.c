/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Core PMU layout: foreign counters and clean state
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "log.h"
#include "pmu/clean-table.h"
#include "pmu/pmu-uncore.h"
#include "pmu/pmu.h"

#define FIXED_FIELD_BITS 4U
#define FIXED_FIELD_ENABLE 0x3U   /* OS | USR: a fixed counter counts when either is set */
#define FIXED_FIELD_ALL 0xFU

int pmu_new(Backend *b, const Machine *m, const Allowlist *a, Pmu **ret) {
        Pmu *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        *p = (Pmu) { .backend = b, .machine = m, .allowlist = a, .amd = cpu_model_is_amd(m->cpu_model),
                     .clean = clean_table_for(m->cpu_model) };
        p->foreign_fixed = calloc(m->n_cpus ?: 1, sizeof(*p->foreign_fixed));
        p->foreign_gp = calloc(m->n_cpus ?: 1, sizeof(*p->foreign_gp));
        if (!p->foreign_fixed || !p->foreign_gp || pmu_uncore_init(p) < 0) {
                pmu_free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

Pmu *pmu_free(Pmu *p) {
        if (!p)
                return NULL;
        free(p->foreign_fixed);
        free(p->foreign_gp);
        pmu_uncore_done(p);
        free(p);
        return NULL;
}

static unsigned gp_counters(const Pmu *p) {
        return machine_gp_counters(p->machine);
}

static unsigned fixed_counters(const Pmu *p) {
        return p->machine->cpu_model ? p->machine->cpu_model->fixed_counters : 0;
}

static uint32_t amd_perf_ctl(unsigned i) {
        return MSR_AMD_PERF_CTL0 + 2 * i;
}

/* AMD has no fixed counters: the kernel's perf and its NMI watchdog take PerfCtr pairs, with
 * the event select's EN bit set. The watchdog's PMI handler may catch its counter with EN
 * clear, so with the sysctl on and no enabled cycles counter found, the counter the kernel
 * gives the first pinned event, PMC0, counts as taken. */
static uint32_t amd_detect(Pmu *p, uint32_t cpu) {
        uint32_t gp = 0;
        bool watchdog_seen = false;
        uint64_t evtsel;

        for (unsigned i = 0; i < gp_counters(p) && i < AMD_CORE_COUNTERS_MAX; i++)
                if (backend_msr_read(p->backend, cpu, amd_perf_ctl(i), &evtsel) == 0 &&
                    (evtsel & EVTSEL_ENABLE)) {
                        gp |= 1U << i;
                        if ((evtsel & 0xFF) == AMD_EVENT_CYCLES && ((evtsel >> 32) & 0xF) == 0)
                                watchdog_seen = true;
                }
        if (p->machine->nmi_watchdog && !watchdog_seen && gp_counters(p) > 0)
                gp |= 1U;
        return gp;
}

void pmu_detect(Pmu *p, uint32_t cpu) {
        uint64_t fixed_ctrl = 0, evtsel;
        uint8_t fixed = 0;
        uint32_t gp = 0;

        if (cpu >= p->machine->n_cpus || !p->machine->cpus[cpu].online)
                return;
        if (p->amd) {
                gp = amd_detect(p, cpu);
                if (gp != p->foreign_gp[cpu])
                        log_info("CPU %" PRIu32 ": core counters held by another PMU user: 0x%x", cpu, gp);
                p->foreign_gp[cpu] = gp;
                p->foreign_fixed[cpu] = 0;
                return;
        }
        if (backend_msr_read(p->backend, cpu, MSR_IA32_FIXED_CTR_CTRL, &fixed_ctrl) == 0)
                for (unsigned i = 0; i < fixed_counters(p); i++)
                        if ((fixed_ctrl >> (FIXED_FIELD_BITS * i)) & FIXED_FIELD_ENABLE)
                                fixed |= (uint8_t) (1U << i);
        for (unsigned i = 0; i < gp_counters(p); i++)
                if (backend_msr_read(p->backend, cpu, MSR_IA32_PERFEVTSEL0 + i, &evtsel) == 0 && (evtsel & EVTSEL_ENABLE))
                        gp |= 1U << i;
        /* The watchdog may be between periods with its enable bits momentarily clear; the
         * sysctl says it owns fixed counter 1 regardless. */
        if (p->machine->nmi_watchdog)
                fixed |= 1U << 1;
        if (fixed != p->foreign_fixed[cpu] || gp != p->foreign_gp[cpu])
                log_info("CPU %" PRIu32 ": counters held by another PMU user: fixed 0x%x, general-purpose 0x%x", cpu,
                         fixed, gp);
        p->foreign_fixed[cpu] = fixed;
        p->foreign_gp[cpu] = gp;
}

void pmu_detect_all(Pmu *p) {
        for (uint32_t cpu = 0; cpu < p->machine->n_cpus; cpu++)
                pmu_detect(p, cpu);
        pmu_uncore_detect_all(p);
}

uint64_t pmu_foreign_fixed_union(const Pmu *p) {
        uint64_t u = 0;

        for (uint32_t cpu = 0; cpu < p->machine->n_cpus; cpu++)
                u |= p->foreign_fixed[cpu];
        return u;
}

uint64_t pmu_foreign_gp_union(const Pmu *p) {
        uint64_t u = 0;

        for (uint32_t cpu = 0; cpu < p->machine->n_cpus; cpu++)
                u |= p->foreign_gp[cpu];
        return u;
}

static uint64_t fixed_fields(uint8_t fixed) {
        uint64_t m = 0;

        for (unsigned i = 0; i < 8; i++)
                if (fixed & (1U << i))
                        m |= (uint64_t) FIXED_FIELD_ALL << (FIXED_FIELD_BITS * i);
        return m;
}

/* A foreign counter's bits in GLOBAL_CTRL and the GLOBAL_STATUS registers. PERF_METRICS (bit
 * 48) goes with SLOTS: TopDown metrics are only meaningful as a pair, and whoever holds fixed
 * counter 3 enables, acknowledges and clears the metrics with it. */
static uint64_t global_bits(uint8_t fixed, uint32_t gp) {
        uint64_t bits = (uint64_t) gp | (uint64_t) fixed << 32;

        if ((fixed >> FIXED_SLOTS_INDEX) & 1)
                bits |= GLOBAL_CTRL_PERF_METRICS;
        return bits;
}

uint64_t pmu_foreign_bits(const Pmu *p, uint32_t cpu, uint32_t reg) {
        if (cpu >= p->machine->n_cpus)
                return 0;
        if (p->amd)
                return reg == MSR_AMD_GLOBAL_CTL ? p->foreign_gp[cpu] : 0;
        if (reg == MSR_IA32_FIXED_CTR_CTRL)
                return fixed_fields(p->foreign_fixed[cpu]);
        if (reg == MSR_IA32_PERF_GLOBAL_CTRL)
                return global_bits(p->foreign_fixed[cpu], p->foreign_gp[cpu]);
        return 0;
}

uint64_t pmu_own_status_bits(const Pmu *p, uint32_t cpu) {
        uint64_t bits = (UINT64_C(1) << gp_counters(p)) - 1;

        if (cpu >= p->machine->n_cpus)
                return 0;
        if (p->amd)
                return bits & ~(uint64_t) p->foreign_gp[cpu];
        bits |= ((UINT64_C(1) << fixed_counters(p)) - 1) << 32;
        if (p->machine->cpu_model && p->machine->cpu_model->perf_metrics)
                bits |= GLOBAL_CTRL_PERF_METRICS;
        return bits & ~global_bits(p->foreign_fixed[cpu], p->foreign_gp[cpu]);
}

bool pmu_unit_foreign(const Pmu *p, uint32_t unit) {
        return !p || unit >= p->machine->n_units || pmu_uncore_unit_owner(p, unit) != UNCORE_OWNER_NONE;
}

/* The index of AMD core counter pair reg belongs to (PerfEvtSel or PerfCtr), or -1. */
static int amd_core_index(const Pmu *p, uint32_t reg) {
        if (reg < MSR_AMD_PERF_CTL0 || reg >= MSR_AMD_PERF_CTL0 + 2 * AMD_CORE_COUNTERS_MAX)
                return -1;
        if ((reg - MSR_AMD_PERF_CTL0) / 2 >= gp_counters(p))
                return -1;
        return (int) ((reg - MSR_AMD_PERF_CTL0) / 2);
}

static int amd_write_conflict(const Pmu *p, uint32_t cpu, uint32_t reg, uint64_t mask, uint64_t value,
                              bool action, Refusal *ret_refusal) {
        uint32_t gp = p->foreign_gp[cpu];
        uint64_t touched = 0;
        int i = amd_core_index(p, reg);

        if (i >= 0 && (gp >> i) & 1)
                return refuse(ret_refusal, PROTO_E_BUSY, -1,
                              "MSR 0x%" PRIx32 " on CPU %" PRIu32 " is core counter %d, held by another "
                              "PMU user (%s); pick another counter", reg, cpu, i,
                              p->machine->nmi_watchdog ? "the kernel's NMI watchdog or perf" :
                                                         "the kernel's perf");
        if (reg == MSR_AMD_GLOBAL_CTL)
                touched = mask & gp;
        else if (reg == MSR_AMD_GLOBAL_STATUS_CLR)
                touched = (action ? value & mask : mask) & gp;
        if (touched == 0)
                return 0;
        return refuse(ret_refusal, PROTO_E_BUSY, -1,
                      "bits 0x%" PRIx64 " of MSR 0x%" PRIx32 " on CPU %" PRIu32 " belong to counters held "
                      "by another PMU user; write only your own bits (masked write)", touched, reg, cpu);
}

size_t pmu_counters_started_by(const Pmu *p, uint32_t cpu, uint32_t reg, uint32_t *ret, size_t n) {
        uint32_t gp = cpu < p->machine->n_cpus ? p->foreign_gp[cpu] : 0;
        size_t k = 0;

        if (!p->amd)
                return 0;
        if (reg == MSR_AMD_GLOBAL_CTL) {
                for (unsigned i = 0; i < gp_counters(p) && k < n; i++)
                        if (!((gp >> i) & 1))
                                ret[k++] = amd_perf_ctl(i) + 1;
                return k;
        }
        if (n == 0 || (reg & 1))
                return 0;
        /* An event select starts the counter beside it, whichever block it is in. */
        if (amd_core_index(p, reg) >= 0) {
                if ((gp >> amd_core_index(p, reg)) & 1)
                        return 0;
                ret[k++] = reg + 1;
        } else if ((reg >= MSR_AMD_L3_CTL0 && reg < MSR_AMD_L3_CTL0 + 2 * AMD_L3_COUNTERS_MAX) ||
                   (reg >= MSR_AMD_DF_CTL0 && reg < MSR_AMD_DF_CTL0 + 2 * AMD_DF_COUNTERS_MAX))
                ret[k++] = reg + 1;
        return k;
}

int pmu_write_conflict(const Pmu *p, uint32_t cpu, uint32_t reg, uint64_t mask, uint64_t value, bool action,
                       Refusal *ret_refusal) {
        uint8_t fixed;
        uint32_t gp;
        uint64_t touched = 0;
        const char *what = NULL;

        if (cpu >= p->machine->n_cpus)
                return 0;
        if (p->amd)
                return p->foreign_gp[cpu] == 0 ? 0 :
                       amd_write_conflict(p, cpu, reg, mask, value, action, ret_refusal);
        fixed = p->foreign_fixed[cpu];
        gp = p->foreign_gp[cpu];
        if (fixed == 0 && gp == 0)
                return 0;

        if ((reg >= MSR_IA32_PMC0 && reg < MSR_IA32_PMC0 + 32 && (gp >> (reg - MSR_IA32_PMC0)) & 1) ||
            (reg >= MSR_IA32_A_PMC0 && reg < MSR_IA32_A_PMC0 + 32 && (gp >> (reg - MSR_IA32_A_PMC0)) & 1) ||
            (reg >= MSR_IA32_PERFEVTSEL0 && reg < MSR_IA32_PERFEVTSEL0 + 32 && (gp >> (reg - MSR_IA32_PERFEVTSEL0)) & 1))
                what = "a general-purpose counter";
        else if (reg >= MSR_IA32_FIXED_CTR0 && reg < MSR_IA32_FIXED_CTR0 + 8 && (fixed >> (reg - MSR_IA32_FIXED_CTR0)) & 1)
                what = "a fixed counter";
        else if (reg == MSR_PERF_METRICS && (fixed >> FIXED_SLOTS_INDEX) & 1)
                what = "the TopDown slots counter";
        else if (reg == MSR_IA32_FIXED_CTR_CTRL)
                touched = mask & fixed_fields(fixed);
        else if (reg == MSR_IA32_PERF_GLOBAL_CTRL)
                touched = mask & global_bits(fixed, gp);
        else if (reg == MSR_IA32_PERF_GLOBAL_STATUS_RESET || reg == MSR_IA32_PERF_GLOBAL_STATUS_SET)
                touched = (action ? value & mask : mask) & global_bits(fixed, gp);

        if (!what && touched == 0)
                return 0;
        if (what)
                return refuse(ret_refusal, PROTO_E_BUSY, -1,
                              "MSR 0x%" PRIx32 " on CPU %" PRIu32 " is %s held by another PMU user (%s); pick "
                              "another counter", reg, cpu, what,
                              p->machine->nmi_watchdog ? "the kernel's NMI watchdog or perf" : "the kernel's perf");
        return refuse(ret_refusal, PROTO_E_BUSY, -1,
                      "bits 0x%" PRIx64 " of MSR 0x%" PRIx32 " on CPU %" PRIu32 " belong to counters held by "
                      "another PMU user; write only your own bits (masked write)",
                      touched, reg, cpu);
}

/* Writes value to reg when the model has the register; the daemon's own writes bypass the
 * client masks but never touch foreign bits (callers pass them preserved). */
static int write_if_present(Pmu *p, uint32_t cpu, uint32_t reg, uint64_t value) {
        if (!allowlist_find_msr(p->allowlist, reg))
                return 0;
        return backend_msr_write(p->backend, cpu, reg, value);
}

/* PerfMonV2: stop through the global control first, keeping foreign bits, then clear every
 * pair that is not foreign and its overflow bit. */
static int amd_reset_cpu(Pmu *p, uint32_t cpu) {
        uint32_t gp = p->foreign_gp[cpu];
        uint64_t own = ((UINT64_C(1) << gp_counters(p)) - 1) & ~(uint64_t) gp, v;
        int r, first = 0;

        if (backend_msr_read(p->backend, cpu, MSR_AMD_GLOBAL_CTL, &v) == 0) {
                r = write_if_present(p, cpu, MSR_AMD_GLOBAL_CTL, v & gp);
                first = r < 0 ? r : 0;
        }
        for (unsigned i = 0; i < gp_counters(p); i++) {
                if ((gp >> i) & 1)
                        continue;
                r = write_if_present(p, cpu, amd_perf_ctl(i), 0);
                if (r < 0 && first == 0)
                        first = r;
                r = write_if_present(p, cpu, amd_perf_ctl(i) + 1, 0);
                if (r < 0 && first == 0)
                        first = r;
        }
        r = write_if_present(p, cpu, MSR_AMD_GLOBAL_STATUS_CLR, own);
        if (r < 0 && first == 0)
                first = r;
        return first;
}

int pmu_reset_cpu(Pmu *p, uint32_t cpu) {
        uint8_t fixed = p->foreign_fixed[cpu];
        uint32_t gp = p->foreign_gp[cpu];
        uint64_t keep_global = global_bits(fixed, gp), keep_fixed = fixed_fields(fixed), v;
        int r, first = 0;

        if (p->amd)
                return amd_reset_cpu(p, cpu);

#define STEP(expr)                              \
        do {                                    \
                r = (expr);                     \
                if (r < 0 && first == 0)        \
                        first = r;              \
        } while (0)

        /* Stop first, so nothing counts while the counters are cleared. */
        if (backend_msr_read(p->backend, cpu, MSR_IA32_PERF_GLOBAL_CTRL, &v) == 0)
                STEP(write_if_present(p, cpu, MSR_IA32_PERF_GLOBAL_CTRL, v & keep_global));
        if (backend_msr_read(p->backend, cpu, MSR_IA32_FIXED_CTR_CTRL, &v) == 0)
                STEP(write_if_present(p, cpu, MSR_IA32_FIXED_CTR_CTRL, v & keep_fixed));
        for (unsigned i = 0; i < gp_counters(p); i++) {
                if ((gp >> i) & 1)
                        continue;
                STEP(write_if_present(p, cpu, MSR_IA32_PERFEVTSEL0 + i, 0));
                STEP(write_if_present(p, cpu, MSR_IA32_PMC0 + i, 0));
        }
        for (unsigned i = 0; i < fixed_counters(p); i++)
                if (!((fixed >> i) & 1))
                        STEP(write_if_present(p, cpu, MSR_IA32_FIXED_CTR0 + i, 0));
        /* PERF_METRICS after SLOTS, the order the kernel uses. */
        if (p->machine->cpu_model && p->machine->cpu_model->perf_metrics && !((fixed >> FIXED_SLOTS_INDEX) & 1))
                STEP(write_if_present(p, cpu, MSR_PERF_METRICS, 0));
        /* Overflow bits of every counter but the foreign ones, PERF_METRICS's with SLOTS's. */
        v = ((UINT64_C(1) << gp_counters(p)) - 1) | ((UINT64_C(1) << fixed_counters(p)) - 1) << 32;
        if (p->machine->cpu_model && p->machine->cpu_model->perf_metrics)
                v |= GLOBAL_CTRL_PERF_METRICS;
        STEP(write_if_present(p, cpu, MSR_IA32_PERF_GLOBAL_STATUS_RESET, v & ~keep_global));
#undef STEP
        return first;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated AMD Zen 4 / Zen 5 PMU (shared/reference/pmu-registers.md §3, amd-topdown.md)
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "backend/sim/sim-amd.h"
#include "backend/sim/sim-regs.h"

#define AMD_COUNTER_MASK ((UINT64_C(1) << 48) - 1)
#define AMD_LEGACY_COUNTERS 4U
/* The kernel's NMI watchdog on AMD: cycles (0x76) on the first free counter, USR | OS | INT |
 * EN, PerfCntrGlobalCtl = every counter (amd_pmu_v2_enable_all()). */
#define AMD_WATCHDOG_EVTSEL (UINT64_C(0x76) | EVTSEL_USR | EVTSEL_OS | EVTSEL_INT | EVTSEL_EN)

/* L3 events (perf's amdzen4 cache events): l3_lookup_state, event 0x04, umask 0x01 misses,
 * 0xfe hits, 0xff every coherent access. */
#define L3_EVENT_LOOKUP 0x04U
#define L3_UMASK_MISS 0x01U
#define L3_UMASK_HIT 0xfeU
#define L3_UMASK_ALL 0xffU
/* Data fabric: read and write data beats of DRAM channel N, event 0x1F + 0x40 N, umask 0x7FE
 * (read) and 0x7FF (write), one beat being 64 bytes. */
#define DF_EVENT_DRAM_BEATS 0x1FU
#define DF_EVENT_CHANNEL_STRIDE 0x40U
#define DF_UMASK_READ 0x7FEU
#define DF_UMASK_WRITE 0x7FFU
/* RAPL_PWR_UNIT on Zen: power 1/8 W, energy 2^-ESU J in bits 12:8, time 2^-10 s. */
#define AMD_RAPL_POWER_UNIT_BITS 3U
#define AMD_RAPL_TIME_UNIT_BITS 10U
#define AMD_RAPL_ESU_SHIFT 8
#define AMD_RAPL_TIME_SHIFT 16
#define AMD_RAPL_COUNTER_MASK UINT64_C(0xFFFFFFFF)

static unsigned counters(const SimPmu *p) {
        return p->model->gp_counters;
}

static uint64_t counter_bits(const SimPmu *p) {
        return SIM_BIT(counters(p)) - 1;
}

/* Index of the core pair reg belongs to; *is_ctl tells the event select from the counter. */
static int core_index(const SimPmu *p, uint32_t reg, bool *is_ctl) {
        if (reg >= MSR_AMD_PERF_CTL0 && reg < MSR_AMD_PERF_CTL0 + 2 * counters(p)) {
                *is_ctl = !((reg - MSR_AMD_PERF_CTL0) & 1);
                return (int) ((reg - MSR_AMD_PERF_CTL0) / 2);
        }
        /* the legacy PERF_CTL0-3 / PERF_CTR0-3 alias the first four pairs */
        if (reg >= MSR_AMD_PERF_CTL_LEGACY0 && reg < MSR_AMD_PERF_CTL_LEGACY0 + AMD_LEGACY_COUNTERS) {
                *is_ctl = true;
                return (int) (reg - MSR_AMD_PERF_CTL_LEGACY0);
        }
        if (reg >= MSR_AMD_PERF_CTR_LEGACY0 && reg < MSR_AMD_PERF_CTR_LEGACY0 + AMD_LEGACY_COUNTERS) {
                *is_ctl = false;
                return (int) (reg - MSR_AMD_PERF_CTR_LEGACY0);
        }
        return -1;
}

static void update_rate(SimPmu *p, unsigned i) {
        uint64_t evtsel = p->evtsel[i];

        if (!(evtsel & EVTSEL_EN)) {
                p->gp[i].rate = 0.0;
                return;
        }
        p->gp[i].rate = sim_rates_event(p->rates, p->model, evtsel, i, 0) *
                        sim_rates_ring_factor(p->rates, evtsel & EVTSEL_USR, evtsel & EVTSEL_OS);
}

void sim_amd_pmu_start_watchdog(SimPmu *p, uint64_t period) {
        p->watchdog_period = period;
        p->evtsel[0] = AMD_WATCHDOG_EVTSEL;
        p->global_ctrl = counter_bits(p);
        p->gp[0] = (SimCounter) { .value = (AMD_COUNTER_MASK + 1 - period) & AMD_COUNTER_MASK };
        update_rate(p, 0);
}

void sim_amd_pmu_advance(SimPmu *p, uint64_t cycles) {
        if (cycles == 0)
                return;
        p->tsc += cycles;
        (void) sim_counter_add(&p->mperf, cycles, UINT64_MAX, NULL);
        (void) sim_counter_add(&p->aperf, cycles, UINT64_MAX, NULL);
        (void) sim_counter_add(&p->irperf, cycles, UINT64_MAX, NULL);

        /* PerfMonV2: a counter counts only while both its EN and its global enable are set. */
        for (unsigned i = 0; i < counters(p); i++) {
                if (!(p->global_ctrl & SIM_BIT(i)) || p->gp[i].rate <= 0.0 ||
                    !sim_counter_add(&p->gp[i], cycles, AMD_COUNTER_MASK, NULL))
                        continue;
                p->global_status |= SIM_BIT(i);
                if (i == 0 && p->watchdog_period > 0 && p->evtsel[0] == AMD_WATCHDOG_EVTSEL) {
                        /* the watchdog's PMI handler re-arms and acknowledges; on Zen 4 the
                         * kernels 5.19-6.12 warn about status bits of counters not theirs */
                        uint64_t stray = p->global_status & ~SIM_BIT(0) & counter_bits(p);

                        p->gp[0].value = ((AMD_COUNTER_MASK + 1 - p->watchdog_period) +
                                          p->gp[0].value % p->watchdog_period) & AMD_COUNTER_MASK;
                        p->global_status &= ~SIM_BIT(0);
                        if (stray)
                                sim_pmu_unhandled_pmi(p, NULL, stray);
                } else if (p->evtsel[i] & EVTSEL_INT) {
                        char what[24];

                        (void) snprintf(what, sizeof(what), "PerfCtr%u", i);
                        sim_pmu_unhandled_pmi(p, what, 0);
                }
        }
}

int sim_amd_pmu_read(const SimPmu *p, uint32_t reg, uint64_t *ret_value) {
        bool is_ctl;
        int i = core_index(p, reg, &is_ctl);

        if (i >= 0) {
                *ret_value = is_ctl ? p->evtsel[i] : p->gp[i].value;
                return 0;
        }
        switch (reg) {
        case MSR_IA32_TSC:
                *ret_value = p->tsc;
                return 0;
        case MSR_IA32_MPERF:
        case MSR_AMD_MPERF_RO:
                *ret_value = p->mperf.value;
                return 0;
        case MSR_IA32_APERF:
        case MSR_AMD_APERF_RO:
                *ret_value = p->aperf.value;
                return 0;
        case MSR_AMD_IRPERF:
                *ret_value = p->irperf.value;
                return 0;
        case MSR_AMD_GLOBAL_STATUS:
        case MSR_AMD_GLOBAL_STATUS_SET:
                *ret_value = p->global_status;
                return 0;
        case MSR_AMD_GLOBAL_CTL:
                *ret_value = p->global_ctrl;
                return 0;
        case MSR_AMD_GLOBAL_STATUS_CLR:
                *ret_value = 0;
                return 0;
        default:
                return -EIO;
        }
}

int sim_amd_pmu_write(SimPmu *p, uint32_t reg, uint64_t value) {
        uint64_t status_bits = counter_bits(p) | AMD_GLOBAL_STATUS_LBR_FROZEN;
        bool is_ctl;
        int i = core_index(p, reg, &is_ctl);

        if (i >= 0) {
                if (is_ctl) {
                        p->evtsel[i] = value & AMD_EVTSEL_VALID;
                        update_rate(p, (unsigned) i);
                } else
                        sim_counter_set(&p->gp[i], value, AMD_COUNTER_MASK);
                return 0;
        }
        switch (reg) {
        case MSR_IA32_TSC:
                p->tsc = value;
                return 0;
        case MSR_IA32_MPERF:
                p->mperf.value = value;
                return 0;
        case MSR_IA32_APERF:
                p->aperf.value = value;
                return 0;
        case MSR_AMD_GLOBAL_CTL:
                p->global_ctrl = value & counter_bits(p);
                return 0;
        case MSR_AMD_GLOBAL_STATUS_CLR:
                p->global_status &= ~(value & status_bits);
                return 0;
        case MSR_AMD_GLOBAL_STATUS_SET:
                p->global_status |= value & status_bits;
                return 0;
        case MSR_AMD_GLOBAL_STATUS:
        case MSR_AMD_MPERF_RO:
        case MSR_AMD_APERF_RO:
        case MSR_AMD_IRPERF:
                /* read-only: the write is dropped */
                return 0;
        default:
                return -EIO;
        }
}

/* ---- L3 */

bool sim_amd_l3_owns(uint32_t reg) {
        return reg >= MSR_AMD_L3_CTL0 && reg < MSR_AMD_L3_CTL0 + 2 * SIM_AMD_L3_COUNTERS;
}

static double l3_rate(const SimAmdL3 *l3, uint64_t ctl) {
        unsigned event = ctl & EVTSEL_EVENT_MASK, umask = (ctl >> EVTSEL_UMASK_SHIFT) & EVTSEL_UMASK_MASK;

        if (!(ctl & EVTSEL_EN) || event != L3_EVENT_LOOKUP)
                return 0.0;
        switch (umask) {
        case L3_UMASK_ALL:
                return l3->access_per_cycle;
        case L3_UMASK_MISS:
                return l3->miss_per_cycle;
        case L3_UMASK_HIT:
                return l3->access_per_cycle - l3->miss_per_cycle;
        default:
                return 0.0;
        }
}

void sim_amd_l3_advance(SimAmdL3 *l3, uint64_t cycles) {
        for (unsigned i = 0; i < SIM_AMD_L3_COUNTERS; i++)
                if (l3->ctr[i].rate > 0.0)
                        (void) sim_counter_add(&l3->ctr[i], cycles, AMD_COUNTER_MASK, NULL);
}

int sim_amd_l3_read(const SimAmdL3 *l3, uint32_t reg, uint64_t *ret_value) {
        unsigned i = (reg - MSR_AMD_L3_CTL0) / 2;

        if (!sim_amd_l3_owns(reg))
                return -EIO;
        *ret_value = (reg - MSR_AMD_L3_CTL0) & 1 ? l3->ctr[i].value : l3->ctl[i];
        return 0;
}

int sim_amd_l3_write(SimAmdL3 *l3, uint32_t reg, uint64_t value) {
        unsigned i = (reg - MSR_AMD_L3_CTL0) / 2;

        if (!sim_amd_l3_owns(reg))
                return -EIO;
        if ((reg - MSR_AMD_L3_CTL0) & 1) {
                sim_counter_set(&l3->ctr[i], value, AMD_COUNTER_MASK);
                return 0;
        }
        l3->ctl[i] = value & AMD_L3_CTL_VALID;
        l3->ctr[i].rate = l3_rate(l3, l3->ctl[i]);
        return 0;
}

/* ---- Data fabric and RAPL */

void sim_amd_package_init(SimAmdPackage *pkg, const SimModel *m, double read_gbps, double write_gbps,
                          double package_watts, double core_watts_each, unsigned energy_unit_bits,
                          double cycles_per_second) {
        double beats = 1e9 / SIM_AMD_BYTES_PER_BEAT / SIM_AMD_DRAM_CHANNELS / cycles_per_second;
        double counts_per_joule = ldexp(1.0, (int) energy_unit_bits);

        *pkg = (SimAmdPackage) {
                .model = m,
                .read_beats_per_cycle = read_gbps * beats,
                .write_beats_per_cycle = write_gbps * beats,
                .power_unit = AMD_RAPL_POWER_UNIT_BITS | (uint64_t) energy_unit_bits << AMD_RAPL_ESU_SHIFT |
                              (uint64_t) AMD_RAPL_TIME_UNIT_BITS << AMD_RAPL_TIME_SHIFT,
                .package_energy.rate = package_watts / cycles_per_second * counts_per_joule,
                .core_energy.rate = core_watts_each / cycles_per_second * counts_per_joule,
        };
}

bool sim_amd_package_owns(uint32_t reg) {
        return (reg >= MSR_AMD_DF_CTL0 && reg < MSR_AMD_DF_CTL0 + 2 * SIM_AMD_DF_COUNTERS_MAX) ||
               reg == MSR_AMD_RAPL_POWER_UNIT || reg == MSR_AMD_CORE_ENERGY_STATUS ||
               reg == MSR_AMD_PKG_ENERGY_STATUS;
}

static unsigned df_counters(const SimAmdPackage *pkg) {
        return pkg->model->df_counters < SIM_AMD_DF_COUNTERS_MAX ? pkg->model->df_counters :
                                                                   SIM_AMD_DF_COUNTERS_MAX;
}

static double df_rate(const SimAmdPackage *pkg, uint64_t ctl) {
        unsigned event = (unsigned) ((ctl & EVTSEL_EVENT_MASK) |
                                     ((ctl >> AMD_DF_EVENT_HI_SHIFT) & AMD_DF_EVENT_HI_MASK) << 8);
        unsigned umask = (unsigned) (((ctl >> EVTSEL_UMASK_SHIFT) & EVTSEL_UMASK_MASK) |
                                     ((ctl >> AMD_DF_UMASK_HI_SHIFT) & AMD_DF_UMASK_HI_MASK) << 8);

        if (!(ctl & EVTSEL_EN) || (event & (DF_EVENT_CHANNEL_STRIDE - 1)) != DF_EVENT_DRAM_BEATS ||
            event / DF_EVENT_CHANNEL_STRIDE >= SIM_AMD_DRAM_CHANNELS)
                return 0.0;
        if (umask == DF_UMASK_READ)
                return pkg->read_beats_per_cycle;
        if (umask == DF_UMASK_WRITE)
                return pkg->write_beats_per_cycle;
        return 0.0;
}

void sim_amd_package_advance(SimAmdPackage *pkg, uint64_t cycles) {
        for (unsigned i = 0; i < df_counters(pkg); i++)
                if (pkg->df_ctr[i].rate > 0.0)
                        (void) sim_counter_add(&pkg->df_ctr[i], cycles, AMD_COUNTER_MASK, NULL);
        (void) sim_counter_add(&pkg->package_energy, cycles, AMD_RAPL_COUNTER_MASK, NULL);
        (void) sim_counter_add(&pkg->core_energy, cycles, AMD_RAPL_COUNTER_MASK, NULL);
}

int sim_amd_package_read(const SimAmdPackage *pkg, uint32_t reg, uint64_t *ret_value) {
        switch (reg) {
        case MSR_AMD_RAPL_POWER_UNIT:
                *ret_value = pkg->power_unit;
                return 0;
        case MSR_AMD_PKG_ENERGY_STATUS:
                *ret_value = pkg->package_energy.value;
                return 0;
        case MSR_AMD_CORE_ENERGY_STATUS:
                *ret_value = pkg->core_energy.value;
                return 0;
        default:
                break;
        }
        if (reg < MSR_AMD_DF_CTL0 || (reg - MSR_AMD_DF_CTL0) / 2 >= df_counters(pkg))
                return -EIO;
        *ret_value = (reg - MSR_AMD_DF_CTL0) & 1 ? pkg->df_ctr[(reg - MSR_AMD_DF_CTL0) / 2].value :
                                                   pkg->df_ctl[(reg - MSR_AMD_DF_CTL0) / 2];
        return 0;
}

int sim_amd_package_write(SimAmdPackage *pkg, uint32_t reg, uint64_t value) {
        unsigned i;

        /* RAPL is read-only; AMD drops the write */
        if (reg == MSR_AMD_RAPL_POWER_UNIT || reg == MSR_AMD_PKG_ENERGY_STATUS ||
            reg == MSR_AMD_CORE_ENERGY_STATUS)
                return 0;
        if (reg < MSR_AMD_DF_CTL0 || (reg - MSR_AMD_DF_CTL0) / 2 >= df_counters(pkg))
                return -EIO;
        i = (reg - MSR_AMD_DF_CTL0) / 2;
        if ((reg - MSR_AMD_DF_CTL0) & 1) {
                sim_counter_set(&pkg->df_ctr[i], value, AMD_COUNTER_MASK);
                return 0;
        }
        pkg->df_ctl[i] = value & AMD_DF_CTL_VALID;
        pkg->df_ctr[i].rate = df_rate(pkg, pkg->df_ctl[i]);
        return 0;
}

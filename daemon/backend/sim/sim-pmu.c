/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated core PMU of one logical CPU (shared/reference/pmu-registers.md §2)
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/sim/sim-amd.h"
#include "backend/sim/sim-arm.h"
#include "backend/sim/sim-pmu.h"
#include "backend/sim/sim-regs.h"
#include "log.h"
#include "macro.h"

/* The kernel's NMI watchdog field in FIXED_CTR_CTRL: OS | USR | PMI (§7.1). */
#define WATCHDOG_FIXED_FIELD (FIXED_CTRL_OS | FIXED_CTRL_USR | FIXED_CTRL_PMI)

static uint64_t fixed_field(const SimPmu *p, unsigned i) {
        return (p->fixed_ctrl >> (FIXED_CTRL_FIELD_BITS * i)) & FIXED_CTRL_FIELD_MASK;
}

static void update_gp_rate(SimPmu *p, unsigned i) {
        uint64_t evtsel = p->evtsel[i];

        if (!(evtsel & EVTSEL_EN)) {
                p->gp[i].rate = 0.0;
                return;
        }
        p->gp[i].rate = sim_rates_event(p->rates, p->model, evtsel, i, p->pebs_frontend) *
                        sim_rates_ring_factor(p->rates, evtsel & EVTSEL_USR, evtsel & EVTSEL_OS);
}

static void update_fixed_rates(SimPmu *p) {
        for (unsigned i = 0; i < p->model->fixed_counters; i++) {
                uint64_t field = fixed_field(p, i);
                bool any = p->model->any_thread && (field & FIXED_CTRL_ANY);
                double ring = sim_rates_ring_factor(p->rates, field & FIXED_CTRL_USR, field & FIXED_CTRL_OS);

                p->fixed[i].rate = sim_rates_fixed(p->rates, i, any) * ring;
        }
}

void sim_pmu_init(SimPmu *p, const SimModel *m, const SimRates *rates, uint64_t tsc) {
        *p = (SimPmu) {
                .model = m,
                .rates = rates,
                .tsc = tsc,
                /* MPERF and APERF count unhalted cycles; the simulated core runs at its
                 * nominal frequency, so both advance alike. */
                .mperf.rate = rates->thread[SIM_Q_REF_TSC],
                .aperf.rate = rates->thread[SIM_Q_CLK],
                .irperf.rate = rates->thread[SIM_Q_INST],
        };
}

void sim_pmu_set_rates(SimPmu *p, const SimRates *rates) {
        p->rates = rates;
        p->mperf.rate = rates->thread[SIM_Q_REF_TSC];
        p->aperf.rate = rates->thread[SIM_Q_CLK];
        p->irperf.rate = rates->thread[SIM_Q_INST];
        if (p->model->arm) {
                sim_arm_pmu_update_rates(p);
                return;
        }
        for (unsigned i = 0; i < p->model->gp_counters; i++)
                update_gp_rate(p, i);
        update_fixed_rates(p);
}

void sim_pmu_start_watchdog(SimPmu *p, uint64_t period) {
        uint64_t mask = sim_model_counter_mask(p->model);

        /* the arm64 hard-lockup detector is not modelled; the configuration refuses it */
        if (p->model->arm)
                return;
        if (p->model->amd) {
                sim_amd_pmu_start_watchdog(p, period);
                return;
        }
        p->watchdog_period = period;
        p->fixed_ctrl |= WATCHDOG_FIXED_FIELD << (FIXED_CTRL_FIELD_BITS * FIXED_CLK_UNHALTED);
        /* __intel_pmu_enable_all() writes every counter's global enable, not only its own */
        p->global_ctrl = sim_model_global_ctrl_valid(p->model);
        p->fixed[FIXED_CLK_UNHALTED] = (SimCounter) { .value = (mask + 1 - period) & mask };
        update_fixed_rates(p);
}

static bool watchdog_owns_fixed1(const SimPmu *p) {
        return p->watchdog_period > 0 && fixed_field(p, FIXED_CLK_UNHALTED) == WATCHDOG_FIXED_FIELD;
}

void sim_pmu_advance(SimPmu *p, uint64_t cycles) {
        uint64_t mask = sim_model_counter_mask(p->model);
        uint64_t metrics_gate = SIM_BIT(GLOBAL_SLOTS_BIT) | SIM_BIT(GLOBAL_PERF_METRICS_BIT);

        if (p->model->arm) {
                sim_arm_pmu_advance(p, cycles);
                return;
        }
        if (p->model->amd) {
                sim_amd_pmu_advance(p, cycles);
                return;
        }
        if (cycles == 0)
                return;
        p->tsc += cycles;
        (void) sim_counter_add(&p->mperf, cycles, UINT64_MAX, NULL);
        (void) sim_counter_add(&p->aperf, cycles, UINT64_MAX, NULL);

        for (unsigned i = 0; i < p->model->gp_counters; i++)
                if ((p->global_ctrl & SIM_BIT(i)) && p->gp[i].rate > 0.0 &&
                    sim_counter_add(&p->gp[i], cycles, mask, NULL)) {
                        p->global_status |= SIM_BIT(i);
                        if (p->evtsel[i] & EVTSEL_INT) {
                                char what[16];

                                (void) snprintf(what, sizeof(what), "PMC%u", i);
                                sim_pmu_unhandled_pmi(p, what, 0);
                        }
                }

        for (unsigned i = 0; i < p->model->fixed_counters; i++) {
                unsigned bit = GLOBAL_FIXED_SHIFT + i;
                double exact;

                if (!(p->global_ctrl & SIM_BIT(bit)) || p->fixed[i].rate <= 0.0)
                        continue;
                if (sim_counter_add(&p->fixed[i], cycles, mask, &exact)) {
                        p->global_status |= SIM_BIT(bit);
                        /* a SLOTS wrap also overflows PERF_METRICS (§2.8) */
                        if (i == FIXED_SLOTS)
                                p->global_status |= SIM_BIT(GLOBAL_PERF_METRICS_BIT);
                        if (i == FIXED_CLK_UNHALTED && watchdog_owns_fixed1(p)) {
                                /* the watchdog's PMI handler acks the overflow and re-arms;
                                 * status bits of counters it does not own make it warn */
                                uint64_t stray = p->global_status & ~SIM_BIT(bit) & sim_model_global_ctrl_valid(p->model);

                                p->fixed[i].value = ((mask + 1 - p->watchdog_period) +
                                                     p->fixed[i].value % p->watchdog_period) & mask;
                                p->global_status &= ~SIM_BIT(bit);
                                if (stray)
                                        sim_pmu_unhandled_pmi(p, NULL, stray);
                        } else if (fixed_field(p, i) & FIXED_CTRL_PMI) {
                                char what[24];

                                (void) snprintf(what, sizeof(what), "FIXED_CTR%u", i);
                                sim_pmu_unhandled_pmi(p, what, 0);
                        }
                }
                if (i == FIXED_SLOTS && p->model->perf_metrics > 0 &&
                    (p->global_ctrl & metrics_gate) == metrics_gate && exact > 0.0) {
                        for (unsigned f = 0; f < PERF_METRICS_FIELDS; f++)
                                p->metrics_slots[f] += exact * p->rates->metrics[f];
                        p->metrics_held = false;
                }
        }
}

/* Eight 8-bit fractions of the slots counted since the last reset. The L1 bytes use largest
 * remainder rounding so they sum to exactly 0xff; each L2 byte is rounded and kept within its
 * L1 parent. */
static uint64_t metrics_value(const SimPmu *p) {
        double total = 0.0, remainder[PERF_METRICS_L1_FIELDS];
        unsigned bytes[PERF_METRICS_FIELDS] = {}, assigned = 0;
        uint64_t v = 0;

        if (p->metrics_held)
                return p->metrics_written;
        for (unsigned i = 0; i < PERF_METRICS_L1_FIELDS; i++)
                total += p->metrics_slots[i];
        if (total <= 0.0)
                return 0;

        for (unsigned i = 0; i < PERF_METRICS_L1_FIELDS; i++) {
                double scaled = PERF_METRICS_FULL_SCALE * p->metrics_slots[i] / total;

                bytes[i] = (unsigned) floor(scaled);
                remainder[i] = scaled - bytes[i];
                assigned += bytes[i];
        }
        while (assigned < PERF_METRICS_FULL_SCALE) {
                unsigned best = 0;

                for (unsigned i = 1; i < PERF_METRICS_L1_FIELDS; i++)
                        if (remainder[i] > remainder[best])
                                best = i;
                bytes[best]++;
                remainder[best] = -1.0;
                assigned++;
        }

        if (p->model->perf_metrics >= 2)
                for (unsigned i = PERF_METRICS_L1_FIELDS; i < PERF_METRICS_FIELDS; i++) {
                        unsigned parent = bytes[i - PERF_METRICS_L1_FIELDS];
                        double scaled = PERF_METRICS_FULL_SCALE * p->metrics_slots[i] / total;
                        unsigned b = (unsigned) lround(scaled);

                        bytes[i] = b < parent ? b : parent;
                }

        for (unsigned i = 0; i < PERF_METRICS_FIELDS; i++)
                v |= (uint64_t) bytes[i] << (PERF_METRICS_FIELD_BITS * i);
        return v;
}

static void metrics_reset(SimPmu *p) {
        memset(p->metrics_slots, 0, sizeof(p->metrics_slots));
        p->metrics_held = false;
        p->metrics_written = 0;
}

static uint64_t global_inuse(const SimPmu *p) {
        uint64_t v = 0;
        bool pmi = false;

        /* SDM: bit n = EVTSELn[7:0] != 0; bit 32+i = the FIXED_CTR_CTRL ENABLE field of i;
         * PMI_InUse when any INT or fixed PMI bit is set. */
        for (unsigned i = 0; i < p->model->gp_counters; i++) {
                if (p->evtsel[i] & EVTSEL_EVENT_MASK)
                        v |= SIM_BIT(i);
                if (p->evtsel[i] & EVTSEL_INT)
                        pmi = true;
        }
        for (unsigned i = 0; i < p->model->fixed_counters; i++) {
                if (fixed_field(p, i) & FIXED_CTRL_ENABLE_MASK)
                        v |= SIM_BIT(GLOBAL_FIXED_SHIFT + i);
                if (fixed_field(p, i) & FIXED_CTRL_PMI)
                        pmi = true;
        }
        if (pmi)
                v |= SIM_BIT(GLOBAL_INUSE_PMI_BIT);
        return v;
}

/* Index of reg in a block of `count` registers starting at base, or -1. */
static int block_index(uint32_t reg, uint32_t base, unsigned count) {
        return reg >= base && reg < base + count ? (int) (reg - base) : -1;
}

int sim_pmu_read(const SimPmu *p, uint32_t reg, uint64_t *ret_value) {
        const SimModel *m = p->model;
        int i;

        if (m->arm)
                return sim_arm_pmu_read(p, reg, ret_value);
        if (m->amd)
                return sim_amd_pmu_read(p, reg, ret_value);
        if ((i = block_index(reg, MSR_IA32_PMC0, m->gp_counters)) >= 0 ||
            (i = block_index(reg, MSR_IA32_A_PMC0, m->gp_counters)) >= 0) {
                *ret_value = p->gp[i].value;
                return 0;
        }
        if ((i = block_index(reg, MSR_IA32_PERFEVTSEL0, m->gp_counters)) >= 0) {
                *ret_value = p->evtsel[i];
                return 0;
        }
        if ((i = block_index(reg, MSR_IA32_FIXED_CTR0, m->fixed_counters)) >= 0) {
                *ret_value = p->fixed[i].value;
                return 0;
        }
        if ((i = block_index(reg, MSR_OFFCORE_RSP_0, ELEMENTSOF(p->offcore_rsp))) >= 0) {
                *ret_value = p->offcore_rsp[i];
                return 0;
        }

        switch (reg) {
        case MSR_PEBS_FRONTEND:
                if (m->perf_metrics < 2)
                        return -EIO;
                *ret_value = p->pebs_frontend;
                return 0;
        case MSR_IA32_TSC:
                *ret_value = p->tsc;
                return 0;
        case MSR_IA32_MPERF:
                *ret_value = p->mperf.value;
                return 0;
        case MSR_IA32_APERF:
                *ret_value = p->aperf.value;
                return 0;
        case MSR_PERF_METRICS:
                if (m->perf_metrics == 0)
                        return -EIO;
                *ret_value = metrics_value(p);
                return 0;
        case MSR_IA32_PERF_CAPABILITIES:
                *ret_value = m->perf_capabilities;
                return 0;
        case MSR_IA32_FIXED_CTR_CTRL:
                *ret_value = p->fixed_ctrl;
                return 0;
        case MSR_IA32_PERF_GLOBAL_STATUS:
                *ret_value = p->global_status;
                return 0;
        case MSR_IA32_PERF_GLOBAL_CTRL:
                *ret_value = p->global_ctrl;
                return 0;
        case MSR_IA32_PERF_GLOBAL_STATUS_RESET:
        case MSR_IA32_PERF_GLOBAL_STATUS_SET:
                /* command registers: reads return 0, as KVM models them */
                *ret_value = 0;
                return 0;
        case MSR_IA32_PERF_GLOBAL_INUSE:
                *ret_value = global_inuse(p);
                return 0;
        default:
                return -EIO;
        }
}

static int write_gp_counter(SimPmu *p, unsigned i, uint64_t value, bool full_width) {
        uint64_t mask = sim_model_counter_mask(p->model);

        if (full_width) {
                /* KVM: #GP when bits above the counter width are set */
                if (value & ~mask)
                        return -EIO;
        } else
                /* only EAX[31:0] is written, sign-extended from bit 31 (SDM §18.2.5) */
                value = (uint64_t) (int64_t) (int32_t) (uint32_t) value;
        sim_counter_set(&p->gp[i], value, mask);
        return 0;
}

static void write_fixed_counter(SimPmu *p, unsigned i, uint64_t value) {
        /* fixed counters take the low width bits, without sign extension (KVM) */
        sim_counter_set(&p->fixed[i], value, sim_model_counter_mask(p->model));
        if (i == FIXED_SLOTS && p->fixed[i].value == 0)
                metrics_reset(p);
}

static void write_perf_metrics(SimPmu *p, uint64_t value) {
        double slots = (double) p->fixed[FIXED_SLOTS].value;

        if (value == 0) {
                metrics_reset(p);
                return;
        }
        /* Continue from the written fractions of the current SLOTS count, so that a restored
         * pair (SLOTS first, then PERF_METRICS) keeps accumulating where it left off. */
        for (unsigned i = 0; i < PERF_METRICS_FIELDS; i++) {
                uint64_t byte = (value >> (PERF_METRICS_FIELD_BITS * i)) & PERF_METRICS_FIELD_MASK;

                p->metrics_slots[i] = slots * (double) byte / PERF_METRICS_FULL_SCALE;
        }
        p->metrics_held = true;
        p->metrics_written = value;
}

int sim_pmu_write(SimPmu *p, uint32_t reg, uint64_t value) {
        const SimModel *m = p->model;
        int i;

        if (m->arm)
                return sim_arm_pmu_write(p, reg, value);
        if (m->amd)
                return sim_amd_pmu_write(p, reg, value);
        if ((i = block_index(reg, MSR_IA32_PMC0, m->gp_counters)) >= 0)
                return write_gp_counter(p, (unsigned) i, value, false);
        if ((i = block_index(reg, MSR_IA32_A_PMC0, m->gp_counters)) >= 0)
                return write_gp_counter(p, (unsigned) i, value, true);
        if ((i = block_index(reg, MSR_IA32_PERFEVTSEL0, m->gp_counters)) >= 0) {
                if (value & sim_model_evtsel_reserved(m, (unsigned) i))
                        return -EIO;
                p->evtsel[i] = value;
                update_gp_rate(p, (unsigned) i);
                return 0;
        }
        if ((i = block_index(reg, MSR_IA32_FIXED_CTR0, m->fixed_counters)) >= 0) {
                write_fixed_counter(p, (unsigned) i, value);
                return 0;
        }
        if ((i = block_index(reg, MSR_OFFCORE_RSP_0, ELEMENTSOF(p->offcore_rsp))) >= 0) {
                p->offcore_rsp[i] = value;
                return 0;
        }

        switch (reg) {
        case MSR_PEBS_FRONTEND:
                if (m->perf_metrics < 2)
                        return -EIO;
                p->pebs_frontend = value;
                for (unsigned k = 0; k < m->gp_counters; k++)
                        update_gp_rate(p, k);
                return 0;
        case MSR_IA32_TSC:
                p->tsc = value;
                return 0;
        case MSR_IA32_MPERF:
                p->mperf.value = value;
                return 0;
        case MSR_IA32_APERF:
                p->aperf.value = value;
                return 0;
        case MSR_PERF_METRICS:
                if (m->perf_metrics == 0)
                        return -EIO;
                write_perf_metrics(p, value);
                return 0;
        case MSR_IA32_FIXED_CTR_CTRL:
                if (value & ~sim_model_fixed_ctrl_valid(m))
                        return -EIO;
                p->fixed_ctrl = value;
                update_fixed_rates(p);
                return 0;
        case MSR_IA32_PERF_GLOBAL_CTRL:
                if (value & ~sim_model_global_ctrl_valid(m))
                        return -EIO;
                p->global_ctrl = value;
                return 0;
        case MSR_IA32_PERF_GLOBAL_STATUS_RESET:
                if (value & ~sim_model_global_status_valid(m))
                        return -EIO;
                p->global_status &= ~value;
                return 0;
        case MSR_IA32_PERF_GLOBAL_STATUS_SET:
                if (value & ~sim_model_global_status_valid(m))
                        return -EIO;
                p->global_status |= value;
                return 0;
        default:
                /* GLOBAL_STATUS, INUSE and PERF_CAPABILITIES are read-only: #GP on write */
                return -EIO;
        }
}

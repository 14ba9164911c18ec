/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated Arm PMUv3 (Arm ARM D13 "The Performance Monitors Extension"): a counter counts
 * while PMCR_EL0.E and its PMCNTENSET bit are set, the events its PMEVTYPER selects (the cycle
 * counter CPU_CYCLES), less the exception levels the U and P bits leave out. The simulated
 * workload runs at EL0 for user_fraction of the time and at EL1 otherwise, never at EL2. The
 * counters are 64 bits (PMUv3.5, PMCR_EL0.LP); overflow flags and interrupts are not modelled.
 */
#include <errno.h>

#include "backend/sim/sim-arm.h"
#include "backend/sim/sim-regs.h"

/* PMCR_EL0: E, P and C (write-only resets), LC and LP (64-bit cycle and event counters); N
 * (bits 15:11) reads the number of event counters. */
#define ARM_PMCR_P SIM_BIT(1)
#define ARM_PMCR_C SIM_BIT(2)
#define ARM_PMCR_LC SIM_BIT(6)
#define ARM_PMCR_LP SIM_BIT(7)
#define ARM_PMCR_N_SHIFT 11
#define ARM_PMCR_STORED (ARM_PMCR_E | ARM_PMCR_LC | ARM_PMCR_LP)

/* SimPmu keeps the PMEVTYPERs in evtsel[], the event counters in gp[] and the cycle counter in
 * fixed[0]; PMCR, PMCNTENSET and PMCCFILTR have fields of their own. */

static unsigned counters(const SimPmu *p) {
        return p->model->gp_counters;
}

static uint64_t enable_bits(const SimPmu *p) {
        return (SIM_BIT(counters(p)) - 1) | ARM_PMCNTEN_CYCLE;
}

/* The share of time the U (no EL0) and P (no EL1) filter bits let through. */
static double filter_factor(const SimPmu *p, uint64_t typer) {
        return sim_rates_ring_factor(p->rates, !(typer & ARM_EVTYPER_U), !(typer & ARM_EVTYPER_P));
}

static bool counting(const SimPmu *p, uint64_t enable_bit) {
        return (p->arm_pmcr & ARM_PMCR_E) && (p->arm_pmcntenset & enable_bit);
}

void sim_arm_pmu_update_rates(SimPmu *p) {
        for (unsigned i = 0; i < counters(p); i++)
                p->gp[i].rate = sim_rates_event(p->rates, p->model, p->evtsel[i], i, 0) *
                                filter_factor(p, p->evtsel[i]);
        p->fixed[0].rate = p->rates->thread[SIM_Q_CLK] * filter_factor(p, p->arm_pmccfiltr);
}

void sim_arm_pmu_advance(SimPmu *p, uint64_t cycles) {
        if (cycles == 0)
                return;
        p->tsc += cycles;
        (void) sim_counter_add(&p->mperf, cycles, UINT64_MAX, NULL);
        (void) sim_counter_add(&p->aperf, cycles, UINT64_MAX, NULL);
        for (unsigned i = 0; i < counters(p); i++)
                if (counting(p, SIM_BIT(i)) && p->gp[i].rate > 0.0)
                        (void) sim_counter_add(&p->gp[i], cycles, UINT64_MAX, NULL);
        if (counting(p, ARM_PMCNTEN_CYCLE) && p->fixed[0].rate > 0.0)
                (void) sim_counter_add(&p->fixed[0], cycles, UINT64_MAX, NULL);
}

/* The event counter a PMEVCNTR or PMEVTYPER register number names, or -1. */
static int event_index(const SimPmu *p, uint32_t reg, bool *ret_typer) {
        for (unsigned i = 0; i < counters(p); i++) {
                if (reg == ARM_PMEVCNTR_EL0(i) || reg == ARM_PMEVTYPER_EL0(i)) {
                        *ret_typer = reg == ARM_PMEVTYPER_EL0(i);
                        return (int) i;
                }
        }
        return -1;
}

int sim_arm_pmu_read(const SimPmu *p, uint32_t reg, uint64_t *ret_value) {
        bool typer;
        int i = event_index(p, reg, &typer);

        if (i >= 0) {
                *ret_value = typer ? p->evtsel[i] : p->gp[i].value;
                return 0;
        }
        switch (reg) {
        case ARM_PMCR_EL0:
                *ret_value = p->arm_pmcr | (uint64_t) counters(p) << ARM_PMCR_N_SHIFT;
                return 0;
        case ARM_PMCNTENSET_EL0:
        case ARM_PMCNTENCLR_EL0:
                *ret_value = p->arm_pmcntenset;
                return 0;
        case ARM_PMCCNTR_EL0:
                *ret_value = p->fixed[0].value;
                return 0;
        case ARM_PMCCFILTR_EL0:
                *ret_value = p->arm_pmccfiltr;
                return 0;
        default:
                return -EIO;
        }
}

int sim_arm_pmu_write(SimPmu *p, uint32_t reg, uint64_t value) {
        bool typer;
        int i = event_index(p, reg, &typer);

        if (i >= 0) {
                if (typer) {
                        p->evtsel[i] = value & ARM_EVTYPER_VALID;
                        p->gp[i].rate = sim_rates_event(p->rates, p->model, p->evtsel[i], (unsigned) i, 0) *
                                        filter_factor(p, p->evtsel[i]);
                } else
                        sim_counter_set(&p->gp[i], value, UINT64_MAX);
                return 0;
        }
        switch (reg) {
        case ARM_PMCR_EL0:
                p->arm_pmcr = value & ARM_PMCR_STORED;
                if (value & ARM_PMCR_P)
                        for (unsigned k = 0; k < counters(p); k++)
                                sim_counter_set(&p->gp[k], 0, UINT64_MAX);
                if (value & ARM_PMCR_C)
                        sim_counter_set(&p->fixed[0], 0, UINT64_MAX);
                return 0;
        case ARM_PMCNTENSET_EL0:
                p->arm_pmcntenset |= value & enable_bits(p);
                return 0;
        case ARM_PMCNTENCLR_EL0:
                p->arm_pmcntenset &= ~(value & enable_bits(p));
                return 0;
        case ARM_PMCCNTR_EL0:
                sim_counter_set(&p->fixed[0], value, UINT64_MAX);
                return 0;
        case ARM_PMCCFILTR_EL0:
                /* PMCCFILTR has PMEVTYPER's filter bits and no event */
                p->arm_pmccfiltr = value & ARM_EVTYPER_VALID & ~ARM_EVTYPER_EVENT_MASK;
                p->fixed[0].rate = p->rates->thread[SIM_Q_CLK] * filter_factor(p, p->arm_pmccfiltr);
                return 0;
        default:
                return -EIO;
        }
}

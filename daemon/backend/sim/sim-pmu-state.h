/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state of one logical CPU's simulated core PMU, and the unhandled-PMI count both the
 * Intel PMU (sim-pmu.c) and the AMD one (sim-amd.c) keep in it
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/sim/sim-counter.h"
#include "backend/sim/sim-events.h"
#include "backend/sim/sim-model.h"

typedef struct SimPmu {
        const SimModel *model;
        const SimRates *rates;
        uint64_t tsc;
        SimCounter mperf, aperf;
        SimCounter irperf;              /* AMD: instructions retired, free-running */
        uint64_t evtsel[SIM_GP_COUNTERS_MAX];
        SimCounter gp[SIM_GP_COUNTERS_MAX];
        SimCounter fixed[SIM_FIXED_COUNTERS_MAX];
        uint64_t fixed_ctrl;
        uint64_t global_ctrl;
        uint64_t global_status;
        uint64_t offcore_rsp[2];
        /* Arm PMUv3 (sim-arm.c): PMCR_EL0's E, LC and LP, PMCNTENSET_EL0, PMCCFILTR_EL0 */
        uint64_t arm_pmcr;
        uint64_t arm_pmcntenset;
        uint64_t arm_pmccfiltr;
        /* MSR_PEBS_FRONTEND: the facet some events count (UOPS_RETIRED.MS needs 0x8); the
         * perf layer writes it as the kernel does for an event's frontend field */
        uint64_t pebs_frontend;
        /* Slots per PERF_METRICS field accumulated since SLOTS or PERF_METRICS was zeroed. */
        double metrics_slots[PERF_METRICS_FIELDS];
        /* A non-zero value written to PERF_METRICS reads back as written until more slots
         * are counted (the kernel restores saved values this way). */
        bool metrics_held;
        uint64_t metrics_written;
        /* Period of the emulated kernel NMI watchdog on FIXED_CTR1; 0 when there is none. */
        uint64_t watchdog_period;
        uint32_t cpu;                   /* for messages */
        /* PMIs no PMU user would handle: an interrupt-enabled counter that is not the
         * watchdog's overflowed, or the watchdog's PMI found overflow status that is not its
         * own (the kernel warns on every such NMI). Each is logged. */
        uint64_t unhandled_pmis;
} SimPmu;

/* Counts and logs a PMI nobody handles: what names the counter that raised it, or the
 * watchdog's PMI that found status bits (stray) of counters it does not own. */
void sim_pmu_unhandled_pmi(SimPmu *p, const char *what, uint64_t stray);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated core PMU of one logical CPU: counters, controls, global status and PERF_METRICS
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/sim/sim-model.h"
#include "backend/sim/sim-pmu-state.h"

void sim_pmu_init(SimPmu *p, const SimModel *m, const SimRates *rates, uint64_t tsc);

/* Programs FIXED_CTR1 the way the kernel's NMI watchdog does: FIXED_CTR_CTRL[7:4] = 0xB,
 * every GLOBAL_CTRL enable set, the counter preloaded with -period and re-armed by the
 * "kernel" at each overflow. */
void sim_pmu_start_watchdog(SimPmu *p, uint64_t period);

/* Switches the workload the CPU runs (a phase change) from now on; counts so far stay. Intel
 * models only. */
void sim_pmu_set_rates(SimPmu *p, const SimRates *rates);

/* Lets `cycles` wall-clock (TSC) cycles pass. */
void sim_pmu_advance(SimPmu *p, uint64_t cycles);

/* Return 0, or -EIO for a register the model lacks, a read-only register, or a reserved bit. */
int sim_pmu_read(const SimPmu *p, uint32_t reg, uint64_t *ret_value);
int sim_pmu_write(SimPmu *p, uint32_t reg, uint64_t value);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated Arm PMUv3 of one logical CPU (NVIDIA Grace, Neoverse V2): PMCR, the counter enables,
 * the event counters with their PMEVTYPER and the cycle counter with PMCCFILTR. Its registers
 * are system registers, reached only by the simulator's perf layer as the kernel's
 * armv8_pmuv3 driver reaches them; no MSR exists.
 */
#pragma once

#include <stdint.h>

#include "backend/sim/sim-pmu-state.h"

void sim_arm_pmu_advance(SimPmu *p, uint64_t cycles);
/* Recomputes the counting rates after a profile phase change. */
void sim_arm_pmu_update_rates(SimPmu *p);
/* -EIO for a register the model lacks (the simulator's stand-in for an UNDEFINED access). */
int sim_arm_pmu_read(const SimPmu *p, uint32_t reg, uint64_t *ret_value);
int sim_arm_pmu_write(SimPmu *p, uint32_t reg, uint64_t value);

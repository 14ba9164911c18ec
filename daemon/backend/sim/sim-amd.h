/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated AMD Zen 4 / Zen 5 PMU: core counters with PerfMonV2, L3 counters per CCX,
 * data-fabric counters and RAPL per package
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/sim/sim-counter.h"
#include "backend/sim/sim-model.h"
#include "backend/sim/sim-pmu-state.h"

#define SIM_AMD_L3_COUNTERS 6U
#define SIM_AMD_DF_COUNTERS_MAX 16U
/* DRAM channels the data fabric reports beats for (Genoa and Turin: 12 per socket). */
#define SIM_AMD_DRAM_CHANNELS 12U
#define SIM_AMD_BYTES_PER_BEAT 64.0

/* ---- Core PMU of one logical CPU (its state lives in SimPmu) */
void sim_amd_pmu_start_watchdog(SimPmu *p, uint64_t period);
void sim_amd_pmu_advance(SimPmu *p, uint64_t cycles);
/* AMD ignores writes to reserved bits and to read-only PMU registers; -EIO only for a register
 * the model lacks. */
int sim_amd_pmu_read(const SimPmu *p, uint32_t reg, uint64_t *ret_value);
int sim_amd_pmu_write(SimPmu *p, uint32_t reg, uint64_t value);

/* ---- L3 counters of one CCX */
typedef struct SimAmdL3 {
        double access_per_cycle;        /* L3 lookups of all the CCX's threads, per wall-clock cycle */
        double miss_per_cycle;
        uint64_t ctl[SIM_AMD_L3_COUNTERS];
        SimCounter ctr[SIM_AMD_L3_COUNTERS];
} SimAmdL3;

bool sim_amd_l3_owns(uint32_t reg);
void sim_amd_l3_advance(SimAmdL3 *l3, uint64_t cycles);
int sim_amd_l3_read(const SimAmdL3 *l3, uint32_t reg, uint64_t *ret_value);
int sim_amd_l3_write(SimAmdL3 *l3, uint32_t reg, uint64_t value);

/* ---- Data fabric and RAPL of one package */
typedef struct SimAmdPackage {
        const SimModel *model;
        double read_beats_per_cycle;    /* per DRAM channel, per wall-clock cycle */
        double write_beats_per_cycle;
        uint64_t df_ctl[SIM_AMD_DF_COUNTERS_MAX];
        SimCounter df_ctr[SIM_AMD_DF_COUNTERS_MAX];
        uint64_t power_unit;
        SimCounter package_energy;      /* 32 bits, wrapping */
        SimCounter core_energy;         /* every core's share of the core power alike */
} SimAmdPackage;

void sim_amd_package_init(SimAmdPackage *pkg, const SimModel *m, double read_gbps, double write_gbps,
                          double package_watts, double core_watts_each, unsigned energy_unit_bits,
                          double cycles_per_second);
bool sim_amd_package_owns(uint32_t reg);
void sim_amd_package_advance(SimAmdPackage *pkg, uint64_t cycles);
int sim_amd_package_read(const SimAmdPackage *pkg, uint32_t reg, uint64_t *ret_value);
int sim_amd_package_write(SimAmdPackage *pkg, uint32_t reg, uint64_t value);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated CPU models: what the simulator does differently on SKX, CLX, ICX, SPR, Zen 4, Zen 5
 * and Grace
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/machine.h"

/* Largest counter set of any simulated model (ICX/SPR: 8 GP + 4 fixed). */
#define SIM_GP_COUNTERS_MAX 8U
#define SIM_FIXED_COUNTERS_MAX 4U

typedef enum SimFamily {
        SIM_FAMILY_SKYLAKE,             /* Skylake-SP and Cascade Lake: arch perfmon v4 */
        SIM_FAMILY_ICELAKE,             /* Ice Lake-SP: v5, SLOTS, PERF_METRICS L1 */
        SIM_FAMILY_SAPPHIRE_RAPIDS,     /* Sapphire Rapids: v5, PERF_METRICS L1 and L2 */
        SIM_FAMILY_SIERRA_FOREST,       /* Sierra Forest E-cores: v5, TopDown slot events, no SLOTS */
        SIM_FAMILY_ZEN4,                /* AMD Zen 4: PerfMonV2, 6 core counters, 6-wide dispatch */
        SIM_FAMILY_ZEN5,                /* AMD Zen 5: the same PMU, 8-wide dispatch */
        SIM_FAMILY_NEOVERSE_V2,         /* NVIDIA Grace: Arm PMUv3, 6 event counters and the cycle
                                         * counter, 8 TopDown slots per cycle */
} SimFamily;

typedef struct SimModel {
        const CpuModel *cpu;
        SimFamily family;
        unsigned stepping;
        unsigned gp_counters;           /* per logical CPU, for the configured SMT setting */
        unsigned fixed_counters;
        unsigned counter_width;         /* bits, GP and fixed alike */
        unsigned perf_metrics;          /* 0 none, 1 L1 bytes, 2 L1 and L2 bytes */
        unsigned slots_width;           /* TopDown slots per core cycle */
        bool any_thread;                /* EVTSEL bit 21 and FIXED_CTR_CTRL AnyThread exist */
        uint64_t perf_capabilities;     /* IA32_PERF_CAPABILITIES value */
        bool rapl_pp0;                  /* MSR_PP0_ENERGY_STATUS exists */
        bool rapl_platform;             /* MSR_PLATFORM_ENERGY_STATUS (psys) exists */
        bool rapl_dram_fixed_unit;      /* DRAM energy unit is 2^-16 J regardless of ESU */
        bool imc_pci;                   /* memory controller PMON lives in PCI config space */
        bool amd;                       /* AMD's PMU: PerfCtr pairs, PerfMonV2, L3 and DF counters */
        bool arm;                       /* Arm PMUv3 system registers: no MSRs, no RAPL, no uncore */
        unsigned l3_counters;           /* AMD: per CCX */
        unsigned df_counters;           /* AMD: per package */
} SimModel;

/* Fills ret for model key "skx", "clx", "icx", "spr", "emr", "gnr", "srf", "zen4", "zen5" or
 * "grace" (which has no SMT: smt is ignored); -EINVAL for anything else. */
int sim_model_init(const char *key, bool smt, SimModel *ret);

/* Bits of IA32_PERFEVTSELn that raise #GP (EIO through the msr driver) when set. */
uint64_t sim_model_evtsel_reserved(const SimModel *m, unsigned counter);

/* Bits of IA32_FIXED_CTR_CTRL, IA32_PERF_GLOBAL_CTRL and the GLOBAL_STATUS family that exist. */
uint64_t sim_model_fixed_ctrl_valid(const SimModel *m);
uint64_t sim_model_global_ctrl_valid(const SimModel *m);
uint64_t sim_model_global_status_valid(const SimModel *m);

/* Grace's counters are 64 bits wide: a shift by 64 would be undefined. */
static inline uint64_t sim_model_counter_mask(const SimModel *m) {
        return m->counter_width >= 64 ? UINT64_MAX : (UINT64_C(1) << m->counter_width) - 1;
}

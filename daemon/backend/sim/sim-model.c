/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated CPU models
 */
#include <errno.h>
#include <string.h>

#include "backend/sim/sim-model.h"
#include "backend/sim/sim-regs.h"
#include "macro.h"

/* IA32_PERF_CAPABILITIES fields (pmu-registers.md §2.3). The LBR and PEBS format numbers are
 * plausible values for these parts, not read from hardware; pmugate only looks at bits 13
 * and 15. */
#define PERF_CAP_LBR_FORMAT(n)          ((uint64_t) (n))
#define PERF_CAP_PEBS_TRAP              SIM_BIT(6)
#define PERF_CAP_PEBS_ARCH_REG          SIM_BIT(7)
#define PERF_CAP_PEBS_FORMAT(n)         ((uint64_t) (n) << 8)
#define PERF_CAP_SMM_FREEZE             SIM_BIT(12)
#define PERF_CAP_PEBS_BASELINE          SIM_BIT(14)

#define PERF_CAP_COMMON (PERF_CAP_LBR_FORMAT(5) | PERF_CAP_PEBS_TRAP | PERF_CAP_PEBS_ARCH_REG | \
                         PERF_CAP_SMM_FREEZE | PERF_CAP_FULL_WIDTH_WRITE)

/* Steppings of the simulated parts: Skylake-SP H0 (4) and Cascade Lake B1 (7) as the issue
 * asks; Ice Lake-SP D2 (6) and Sapphire Rapids E5 (8) are production steppings. */
typedef struct SimModelSpec {
        const char *key;
        SimFamily family;
        unsigned stepping;
        uint64_t perf_capabilities;
} SimModelSpec;

static const SimModelSpec sim_model_specs[] = {
        { "skx", SIM_FAMILY_SKYLAKE, 4, PERF_CAP_COMMON | PERF_CAP_PEBS_FORMAT(3) },
        { "clx", SIM_FAMILY_SKYLAKE, 7, PERF_CAP_COMMON | PERF_CAP_PEBS_FORMAT(3) },
        { "icx", SIM_FAMILY_ICELAKE, 6,
          PERF_CAP_COMMON | PERF_CAP_PEBS_FORMAT(4) | PERF_CAP_PEBS_BASELINE | PERF_CAP_PERF_METRICS },
        { "spr", SIM_FAMILY_SAPPHIRE_RAPIDS, 8,
          PERF_CAP_COMMON | PERF_CAP_PEBS_FORMAT(5) | PERF_CAP_PEBS_BASELINE | PERF_CAP_PERF_METRICS },
        /* Emerald Rapids, Granite Rapids and Sierra Forest: steppings as plausible as the PEBS
         * formats, not read from hardware */
        { "emr", SIM_FAMILY_SAPPHIRE_RAPIDS, 1,
          PERF_CAP_COMMON | PERF_CAP_PEBS_FORMAT(5) | PERF_CAP_PEBS_BASELINE | PERF_CAP_PERF_METRICS },
        { "gnr", SIM_FAMILY_SAPPHIRE_RAPIDS, 1,
          PERF_CAP_COMMON | PERF_CAP_PEBS_FORMAT(5) | PERF_CAP_PEBS_BASELINE | PERF_CAP_PERF_METRICS },
        { "srf", SIM_FAMILY_SIERRA_FOREST, 3,
          PERF_CAP_COMMON | PERF_CAP_PEBS_FORMAT(5) | PERF_CAP_PEBS_BASELINE },
        /* AMD has no IA32_PERF_CAPABILITIES; Genoa B1 and Turin C1 steppings. */
        { "zen4", SIM_FAMILY_ZEN4, 1, 0 },
        { "zen5", SIM_FAMILY_ZEN5, 1, 0 },
        /* Grace: Neoverse V2 r0p0, no IA32_PERF_CAPABILITIES (no MSRs at all) */
        { "grace", SIM_FAMILY_NEOVERSE_V2, 0, 0 },
};

int sim_model_init(const char *key, bool smt, SimModel *ret) {
        const SimModelSpec *spec = NULL;
        const CpuModel *cpu;
        bool spr_rapl;

        for (size_t i = 0; i < ELEMENTSOF(sim_model_specs); i++)
                if (strcmp(sim_model_specs[i].key, key) == 0)
                        spec = &sim_model_specs[i];
        cpu = cpu_model_by_key(key);
        if (!spec || !cpu)
                return -EINVAL;
        spr_rapl = spec->family == SIM_FAMILY_SAPPHIRE_RAPIDS || spec->family == SIM_FAMILY_SIERRA_FOREST;

        *ret = (SimModel) {
                .cpu = cpu,
                .family = spec->family,
                .stepping = spec->stepping,
                /* Skylake-era cores give a logical CPU the other thread's four GP counters
                 * when SMT is off; the daemon's model table says how many. */
                .gp_counters = smt && !cpu_model_is_arm(cpu) ? cpu->gp_counters : cpu->gp_counters_smt_off,
                .fixed_counters = cpu->fixed_counters,
                .counter_width = cpu->counter_width,
                .perf_metrics = cpu->perf_metrics,
                .slots_width = cpu->slots_width,
                /* Arch perfmon v5 deprecates AnyThread (CPUID.0AH:EDX[15]); KVM and the
                 * kernel treat EVTSEL bit 21 as reserved there. */
                .any_thread = cpu->pmu_version < 5,
                .perf_capabilities = spec->perf_capabilities,
                /* perf's rapl.c: SKX and ICX expose PP0, PKG and RAM with the fixed
                 * 2^-16 J DRAM unit (model_hsx); SPR and SRF expose PKG, RAM and PSYS
                 * (model_spr). */
                .rapl_pp0 = !spr_rapl,
                .rapl_platform = spr_rapl,
                .rapl_dram_fixed_unit = !spr_rapl,
                /* Only SKX/CLX keep the IMC in PCI config space (§6.1); ICX and SPR moved it
                 * to MMIO, which pmugate does not serve. */
                .imc_pci = spec->family == SIM_FAMILY_SKYLAKE,
                .amd = cpu_model_is_amd(cpu),
                .arm = cpu_model_is_arm(cpu),
                .l3_counters = cpu->l3_counters,
                .df_counters = cpu->df_counters,
        };
        if (ret->amd || ret->arm) {
                /* perf's rapl.c exposes only the package on AMD; the core counter is read too.
                 * ARM has no RAPL at all. */
                ret->rapl_pp0 = false;
                ret->rapl_platform = false;
                ret->rapl_dram_fixed_unit = false;
                ret->any_thread = false;
        }
        if (ret->gp_counters > SIM_GP_COUNTERS_MAX)
                ret->gp_counters = SIM_GP_COUNTERS_MAX;
        if (ret->fixed_counters > SIM_FIXED_COUNTERS_MAX)
                ret->fixed_counters = SIM_FIXED_COUNTERS_MAX;
        return 0;
}

uint64_t sim_model_evtsel_reserved(const SimModel *m, unsigned counter) {
        /* Bits 31:0 are architectural; of the upper half only IN_TX, IN_TXCP (PMC2 only) and,
         * from Ice Lake on, the adaptive-PEBS bit exist (pmu-registers.md §2.4, KVM's
         * reserved_bits). */
        uint64_t valid = UINT64_C(0xFFFFFFFF) | EVTSEL_IN_TX;

        if (counter == EVTSEL_IN_TXCP_COUNTER)
                valid |= EVTSEL_IN_TXCP;
        if (m->family != SIM_FAMILY_SKYLAKE)
                valid |= EVTSEL_ADAPTIVE;
        if (!m->any_thread)
                valid &= ~EVTSEL_ANY;
        return ~valid;
}

uint64_t sim_model_fixed_ctrl_valid(const SimModel *m) {
        uint64_t field = FIXED_CTRL_ENABLE_MASK | FIXED_CTRL_PMI, valid = 0;

        if (m->any_thread)
                field |= FIXED_CTRL_ANY;
        for (unsigned i = 0; i < m->fixed_counters; i++) {
                valid |= field << (FIXED_CTRL_FIELD_BITS * i);
                if (m->family != SIM_FAMILY_SKYLAKE)
                        valid |= SIM_BIT(FIXED_CTRL_ADAPTIVE_SHIFT + FIXED_CTRL_FIELD_BITS * i);
        }
        return valid;
}

uint64_t sim_model_global_ctrl_valid(const SimModel *m) {
        uint64_t valid = (SIM_BIT(m->gp_counters) - 1) |
                         ((SIM_BIT(m->fixed_counters) - 1) << GLOBAL_FIXED_SHIFT);

        if (m->perf_metrics > 0)
                valid |= SIM_BIT(GLOBAL_PERF_METRICS_BIT);
        return valid;
}

uint64_t sim_model_global_status_valid(const SimModel *m) {
        return sim_model_global_ctrl_valid(m) | GLOBAL_STATUS_OTHER;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate's event table. The encodings are those of Intel's event lists (intel/perfmon SKL
 * V59, CLX V1.25, ICX V1.30, SPR V1.39) as perf's tools/perf/pmu-events use them; the unit test
 * test_events.c compares every entry with libpfm4's list for the same model. Counter
 * restrictions are those of the event lists ("Counter": "0"), which libpfm4 does not export.
 *
 * AMD Zen 4 and Zen 5 events carry the names perf gives them (tools/perf/pmu-events/arch/x86/
 * amdzen4, amdzen5) and perf's raw encodings, event[11:8] in bits 32-35 of the config; the
 * pipeline-utilization ones are those of perf's pipeline.json metrics.
 */
#include <string.h>
#include <strings.h>

#include "events/event-table.h"
#include "events/evtsel.h"
#include "macro.h"

#define SKL EVENT_MODEL_SKL
#define ICX EVENT_MODEL_ICX
#define SPR EVENT_MODEL_SPR
#define GNR EVENT_MODEL_GNR
#define SRF EVENT_MODEL_SRF
/* the architectural events, which the E-cores count too */
#define ARCH (ALL | SRF)
#define ALL EVENT_MODEL_ALL
#define ZEN4 EVENT_MODEL_ZEN4
#define ZEN5 EVENT_MODEL_ZEN5
#define AMD EVENT_MODEL_AMD
#define GRACE EVENT_MODEL_GRACE
/* AMD: event[11:8] goes to PerfEvtSel bits 35:32 */
#define AMD_CODE(event, umask) (((uint64_t) (event) & 0xFF) | ((uint64_t) (event) >> 8) << 32 | \
                                (uint64_t) (umask) << EVTSEL_UMASK_SHIFT)

#define CODE(event, umask) ((uint64_t) (event) | (uint64_t) (umask) << EVTSEL_UMASK_SHIFT)
#define CMASK(n) ((uint64_t) (n) << EVTSEL_CMASK_SHIFT)
#define EDGE EVTSEL_EDGE

/* A GP event, one with a fixed counter and a GP equivalent, one only a fixed counter counts,
 * and a PERF_METRICS byte. */
#define GP(n, m, c) { .name = (n), .models = (m), .config = (c), .fixed = -1, .gp_ok = true, \
                      .gp_mask = GP_MASK_ALL, .metrics_field = -1 }
#define GP_ONLY_ON(n, m, c, mask) { .name = (n), .models = (m), .config = (c), .fixed = -1, .gp_ok = true, \
                                    .gp_mask = (mask), .metrics_field = -1 }
#define FIXED_OR_GP(n, m, f, c) { .name = (n), .models = (m), .config = (c), .fixed = (f), .gp_ok = true, \
                                  .gp_mask = GP_MASK_ALL, .metrics_field = -1 }
#define FIXED_ONLY(n, m, f) { .name = (n), .models = (m), .fixed = (f), .metrics_field = -1 }
#define METRIC(n, m, field) { .name = (n), .models = (m), .fixed = FIXED_SLOTS, .metrics_field = (field) }
/* A GP event that counts what its name says only with a facet of MSR_PEBS_FRONTEND set (perf's
 * "MSRIndex": "0x3F7", "MSRValue"): the kernel's perf sets that register for it (the frontend
 * field, config1), pmugated never writes it (docs/ALLOWLISTS.md, never-list). */
#define GP_FRONTEND(n, m, c, fe) { .name = (n), .models = (m), .config = (c), .fixed = -1, .gp_ok = true, \
                                   .gp_mask = GP_MASK_ALL, .metrics_field = -1, .frontend = (fe) }

static const EventTableEntry event_table[] = {
        /* Architectural events and the fixed counters */
        FIXED_OR_GP("INST_RETIRED.ANY", ARCH, FIXED_INST_RETIRED, CODE(0xc0, 0x00)),
        GP("INST_RETIRED.ANY_P", ARCH, CODE(0xc0, 0x00)),
        FIXED_OR_GP("CPU_CLK_UNHALTED.THREAD", ARCH, FIXED_CLK_UNHALTED, CODE(0x3c, 0x00)),
        GP("CPU_CLK_UNHALTED.THREAD_P", ARCH, CODE(0x3c, 0x00)),
        FIXED_ONLY("CPU_CLK_UNHALTED.REF_TSC", ARCH, FIXED_REF_TSC),
        GP("CPU_CLK_UNHALTED.REF_XCLK", SKL | ICX, CODE(0x3c, 0x01)),
        GP("CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE", ALL, CODE(0x3c, 0x02)),
        GP("BR_INST_RETIRED.ALL_BRANCHES", ARCH, CODE(0xc4, 0x00)),
        GP("BR_MISP_RETIRED.ALL_BRANCHES", ARCH, CODE(0xc5, 0x00)),
        GP("MACHINE_CLEARS.COUNT", ALL, CODE(0xc3, 0x01) | CMASK(1) | EDGE),

        /* Skylake-SP and Cascade Lake TopDown (perf's skx-metrics.json) */
        GP("UOPS_ISSUED.ANY", SKL | ICX, CODE(0x0e, 0x01)),
        GP("UOPS_RETIRED.RETIRE_SLOTS", SKL, CODE(0xc2, 0x02)),
        GP("UOPS_RETIRED.MACRO_FUSED", SKL, CODE(0xc2, 0x04)),
        GP("IDQ_UOPS_NOT_DELIVERED.CORE", ALL, CODE(0x9c, 0x01)),
        GP("IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE", SKL, CODE(0x9c, 0x01) | CMASK(4)),
        GP("INT_MISC.RECOVERY_CYCLES", SKL | ICX, CODE(0x0d, 0x01)),
        GP("CYCLE_ACTIVITY.STALLS_MEM_ANY", SKL | ICX, CODE(0xa3, 0x14) | CMASK(20)),
        GP("CYCLE_ACTIVITY.STALLS_TOTAL", SKL | ICX, CODE(0xa3, 0x04) | CMASK(4)),
        GP("EXE_ACTIVITY.BOUND_ON_STORES", SKL, CODE(0xa6, 0x40)),
        GP("EXE_ACTIVITY.1_PORTS_UTIL", SKL | ICX, CODE(0xa6, 0x02)),
        GP("EXE_ACTIVITY.2_PORTS_UTIL", SKL | ICX, CODE(0xa6, 0x04)),

        /* Ice Lake-SP and Sapphire Rapids: SLOTS, PERF_METRICS and the L1 correction terms */
        FIXED_OR_GP("TOPDOWN.SLOTS", ICX | SPR, FIXED_SLOTS, CODE(0xa4, 0x01)),
        GP("TOPDOWN.SLOTS_P", ICX | SPR, CODE(0xa4, 0x01)),
        GP("CPU_CLK_UNHALTED.DISTRIBUTED", ICX | SPR, CODE(0xec, 0x02)),
        GP("INT_MISC.UOP_DROPPING", ICX, CODE(0x0d, 0x10)),
        GP("INT_MISC.CLEARS_COUNT", ICX, CODE(0x0d, 0x01) | CMASK(1) | EDGE),
        METRIC("topdown-retiring", ICX | SPR, 0),
        METRIC("topdown-bad-spec", ICX | SPR, 1),
        METRIC("topdown-fe-bound", ICX | SPR, 2),
        METRIC("topdown-be-bound", ICX | SPR, 3),

        /* Ice Lake-SP level 2 (perf's icx-metrics.json) */
        GP("UOPS_RETIRED.SLOTS", ICX | SPR, CODE(0xc2, 0x02)),
        GP("IDQ.MS_UOPS", ICX, CODE(0x79, 0x30)),
        GP("IDQ.MITE_UOPS", ICX, CODE(0x79, 0x04)),
        GP("UOPS_DECODED.DEC0", ICX, CODE(0x56, 0x01)),
        GP("IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE", ICX, CODE(0x9c, 0x01) | CMASK(5)),
        GP("EXE_ACTIVITY.BOUND_ON_STORES", ICX, CODE(0xa6, 0x40) | CMASK(2)),

        /* Sapphire Rapids (perf's spr-metrics.json): level 2 in PERF_METRICS, the TOPDOWN.*_SLOTS
         * cross-checks, two of them only on PMC0 */
        METRIC("topdown-heavy-ops", SPR, 4),
        METRIC("topdown-br-mispredict", SPR, 5),
        METRIC("topdown-fetch-lat", SPR, 6),
        METRIC("topdown-mem-bound", SPR, 7),
        GP("INT_MISC.UOP_DROPPING", SPR, CODE(0xad, 0x10)),
        GP("INT_MISC.CLEARS_COUNT", SPR, CODE(0xad, 0x01) | CMASK(1) | EDGE),
        GP("TOPDOWN.BACKEND_BOUND_SLOTS", SPR, CODE(0xa4, 0x02)),
        GP_ONLY_ON("TOPDOWN.BAD_SPEC_SLOTS", SPR, CODE(0xa4, 0x04), 0x01),
        GP_ONLY_ON("TOPDOWN.BR_MISPREDICT_SLOTS", SPR, CODE(0xa4, 0x08), 0x01),
        GP("TOPDOWN.MEMORY_BOUND_SLOTS", SPR, CODE(0xa4, 0x10)),
        GP("UOPS_RETIRED.HEAVY", SPR, CODE(0xc2, 0x01)),
        GP("IDQ_BUBBLES.CORE", SPR, CODE(0x9c, 0x01)),
        GP("IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE", SPR, CODE(0x9c, 0x01) | CMASK(6)),

        /* TopDown levels 3-4 (client/groups/<model>/topdown-l3.conf, -l4.conf) use events that
         * libpfm4's lists lack or name otherwise. Ice Lake-SP: libpfm4 has the first three under
         * their older names (ICACHE_16B.IFDATA_STALL, ICACHE_64B.IFTAG_STALL, ILD_STALL.LCP) with
         * these codes. Sapphire Rapids: the codes of perf's graniterapids events
         * (contrib/tma/perf-json/gnr), the same on the Golden Cove core of perf's alderlake
         * cpu_core list; libpfm4 has none of them, or (EXE.AMX_BUSY) takes 0xB7 for an offcore
         * response event. */
        GP("ICACHE_DATA.STALLS", ICX, CODE(0x80, 0x04)),
        GP("ICACHE_TAG.STALLS", ICX, CODE(0x83, 0x04)),
        GP("DECODE.LCP", ICX, CODE(0x87, 0x01)),
        GP("ARITH.FP_DIVIDER_ACTIVE", ICX, CODE(0x14, 0x01) | CMASK(1)),
        GP("EXE.AMX_BUSY", SPR, CODE(0xb7, 0x02)),
        GP("EXE_ACTIVITY.2_3_PORTS_UTIL", SPR, CODE(0xa6, 0x0c)),
        GP("EXE_ACTIVITY.EXE_BOUND_0_PORTS", SPR, CODE(0xa6, 0x80)),
        GP_ONLY_ON("LOCK_CYCLES.CACHE_LOCK_DURATION", SPR, CODE(0x42, 0x02), 0x0f),
        GP_ONLY_ON("OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DEMAND_CODE_RD", SPR, CODE(0x20, 0x02) | CMASK(1),
                   0x0f),
        GP("RS.EMPTY_RESOURCE", SPR, CODE(0xa5, 0x01)),
        /* Granite Rapids' levels 3-4 add these (perf's graniterapids cache.json and
         * pipeline.json, "Counter" as there); libpfm4 4.13 has no Granite Rapids list. */
        GP("BR_MISP_RETIRED.COND_TAKEN", GNR, CODE(0xc5, 0x01)),
        GP("BR_MISP_RETIRED.INDIRECT_CALL", GNR, CODE(0xc5, 0x02)),
        GP("BR_MISP_RETIRED.RET", GNR, CODE(0xc5, 0x08)),
        GP("BR_MISP_RETIRED.COND_NTAKEN", GNR, CODE(0xc5, 0x10)),
        GP("BR_MISP_RETIRED.INDIRECT", GNR, CODE(0xc5, 0x80)),
        GP_ONLY_ON("MEM_INST_RETIRED.STLB_HIT_LOADS", GNR, CODE(0xd0, 0x09), 0x0f),
        /* Sapphire Rapids, Emerald and Granite Rapids: retired microcode-sequencer uops, event
         * 0xC2 umask 0x04 with MSR_PEBS_FRONTEND = 0x8 (perf's sapphirerapids, emeraldrapids and
         * graniterapids pipeline.json, and the kernel's extra register for 0x04c2); without the
         * facet the event select counts something else */
        GP_FRONTEND("UOPS_RETIRED.MS", SPR, CODE(0xc2, 0x04), 0x8),
        GP_ONLY_ON("MEM_INST_RETIRED.STLB_HIT_STORES", GNR, CODE(0xd0, 0x0a), 0x0f),
        GP_ONLY_ON("MEM_LOAD_RETIRED.LOCAL_CXL_MEM", GNR, CODE(0xd1, 0x80), 0x0f),
        GP_ONLY_ON("MEM_LOAD_L3_MISS_RETIRED.REMOTE_CXL_MEM", GNR, CODE(0xd3, 0x10), 0x0f),
        GP_ONLY_ON("OFFCORE_REQUESTS_OUTSTANDING.DATA_RD", GNR, CODE(0x20, 0x08), 0x0f),

        /* Sierra Forest's E-cores (perf's sierraforest pipeline.json; libpfm4 4.13 has no list
         * for them): the core-cycle names and the TopDown slot events of TMA 3.6 levels 1-3 */
        FIXED_OR_GP("CPU_CLK_UNHALTED.CORE", SRF, FIXED_CLK_UNHALTED, CODE(0x3c, 0x00)),
        GP("CPU_CLK_UNHALTED.CORE_P", SRF, CODE(0x3c, 0x00)),
        GP("TOPDOWN_FE_BOUND.ALL_P", SRF, CODE(0x71, 0x00)),
        GP("TOPDOWN_FE_BOUND.CISC", SRF, CODE(0x71, 0x01)),
        GP("TOPDOWN_FE_BOUND.BRANCH_DETECT", SRF, CODE(0x71, 0x02)),
        GP("TOPDOWN_FE_BOUND.PREDECODE", SRF, CODE(0x71, 0x04)),
        GP("TOPDOWN_FE_BOUND.DECODE", SRF, CODE(0x71, 0x08)),
        GP("TOPDOWN_FE_BOUND.ITLB_MISS", SRF, CODE(0x71, 0x10)),
        GP("TOPDOWN_FE_BOUND.ICACHE", SRF, CODE(0x71, 0x20)),
        GP("TOPDOWN_FE_BOUND.BRANCH_RESTEER", SRF, CODE(0x71, 0x40)),
        GP("TOPDOWN_FE_BOUND.FRONTEND_LATENCY", SRF, CODE(0x71, 0x72)),
        GP("TOPDOWN_FE_BOUND.OTHER", SRF, CODE(0x71, 0x80)),
        GP("TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH", SRF, CODE(0x71, 0x8d)),
        GP("TOPDOWN_RETIRING.ALL_P", SRF, CODE(0x72, 0x00)),
        GP("TOPDOWN_BAD_SPECULATION.ALL_P", SRF, CODE(0x73, 0x00)),
        GP("TOPDOWN_BAD_SPECULATION.NUKE", SRF, CODE(0x73, 0x01)),
        GP("TOPDOWN_BAD_SPECULATION.FASTNUKE", SRF, CODE(0x73, 0x02)),
        GP("TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS", SRF, CODE(0x73, 0x03)),
        GP("TOPDOWN_BAD_SPECULATION.MISPREDICT", SRF, CODE(0x73, 0x04)),
        GP("TOPDOWN_BE_BOUND.ALL_P", SRF, CODE(0x74, 0x00)),
        GP("TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS", SRF, CODE(0x74, 0x01)),
        GP("TOPDOWN_BE_BOUND.MEM_SCHEDULER", SRF, CODE(0x74, 0x02)),
        GP("TOPDOWN_BE_BOUND.NON_MEM_SCHEDULER", SRF, CODE(0x74, 0x08)),
        GP("TOPDOWN_BE_BOUND.SERIALIZATION", SRF, CODE(0x74, 0x10)),
        GP("TOPDOWN_BE_BOUND.REGISTER", SRF, CODE(0x74, 0x20)),
        GP("TOPDOWN_BE_BOUND.REORDER_BUFFER", SRF, CODE(0x74, 0x40)),
        /* the events of Sierra Forest's own L2, L3, FLOPS_DP/SP, DATA and TLB_DATA groups
         * (client/groups/srf/), from perf's sierraforest cache.json, pipeline.json and
         * virtual-memory.json: the E-cores have none of the P-cores' FP_ARITH_INST_RETIRED,
         * L1D.REPLACEMENT or MEM_INST_RETIRED */
        GP("L2_REQUEST.MISS", SRF, CODE(0x24, 0x01)),
        GP("L2_REQUEST.HIT", SRF, CODE(0x24, 0x02)),
        GP("L2_LINES_IN.S", SRF, CODE(0x25, 0x02)),
        GP("L2_LINES_IN.E", SRF, CODE(0x25, 0x04)),
        GP("L2_LINES_IN.M", SRF, CODE(0x25, 0x08)),
        GP("L2_LINES_IN.F", SRF, CODE(0x25, 0x10)),
        GP("L2_LINES_OUT.NON_SILENT", SRF, CODE(0x26, 0x02)),
        GP("MEM_LOAD_UOPS_RETIRED.L2_HIT", SRF, CODE(0xd1, 0x02)),
        GP("MEM_LOAD_UOPS_RETIRED.L3_HIT", SRF, CODE(0xd1, 0x1c)),
        GP("MEM_LOAD_UOPS_RETIRED.L2_MISS", SRF, CODE(0xd1, 0x80)),
        GP("MEM_LOAD_UOPS_L3_MISS_RETIRED.ALL", SRF, CODE(0xd3, 0xff)),
        GP("MEM_UOPS_RETIRED.ALL_LOADS", SRF, CODE(0xd0, 0x81)),
        GP("MEM_UOPS_RETIRED.ALL_STORES", SRF, CODE(0xd0, 0x82)),
        GP("FP_FLOPS_RETIRED.FP64", SRF, CODE(0xc8, 0x01)),
        GP("FP_FLOPS_RETIRED.FP32", SRF, CODE(0xc8, 0x02)),
        GP("FP_FLOPS_RETIRED.ALL", SRF, CODE(0xc8, 0x03)),
        GP("DTLB_LOAD_MISSES.WALK_COMPLETED", SRF, CODE(0x08, 0x0e)),
        GP("DTLB_LOAD_MISSES.WALK_PENDING", SRF, CODE(0x08, 0x10)),
        GP("DTLB_STORE_MISSES.WALK_COMPLETED", SRF, CODE(0x49, 0x0e)),
        GP("DTLB_STORE_MISSES.WALK_PENDING", SRF, CODE(0x49, 0x10)),

        /* AMD Zen 4 and Zen 5: cycles, instructions, branches, FLOPs */
        GP("ls_not_halted_cyc", AMD, AMD_CODE(0x076, 0x00)),
        /* unhalted cycles at the P0 (base) frequency, as Intel's REF_TSC: perf's amdzen4/amdzen5
         * other.json, PMCx120 */
        GP("ls_not_halted_p0_cyc.p0_freq_cyc", AMD, AMD_CODE(0x120, 0x01)),
        GP("ex_ret_instr", AMD, AMD_CODE(0x0c0, 0x00)),
        GP("ex_ret_ops", AMD, AMD_CODE(0x0c1, 0x00)),
        GP("ex_ret_brn", AMD, AMD_CODE(0x0c2, 0x00)),
        GP("ex_ret_brn_misp", AMD, AMD_CODE(0x0c3, 0x00)),
        GP("ex_ret_brn_tkn", AMD, AMD_CODE(0x0c4, 0x00)),
        GP("fp_ret_sse_avx_ops.all", AMD, AMD_CODE(0x003, 0x1f)),
        /* pipeline utilization (perf's amdzen4/amdzen5 pipeline.json) */
        GP("de_src_op_disp.all", AMD, AMD_CODE(0x0aa, 0x07)),
        GP("de_no_dispatch_per_slot.no_ops_from_frontend", AMD, AMD_CODE(0x1a0, 0x01)),
        GP("de_no_dispatch_per_slot.backend_stalls", AMD, AMD_CODE(0x1a0, 0x1e)),
        GP("de_no_dispatch_per_slot.smt_contention", AMD, AMD_CODE(0x1a0, 0x60)),
        GP("ex_no_retire.not_complete", AMD, AMD_CODE(0x0d6, 0x02)),
        GP("ex_no_retire.load_not_complete", AMD, AMD_CODE(0x0d6, 0xa2)),
        GP("ex_ret_ucode_ops", AMD, AMD_CODE(0x1c2, 0x00)),
        GP("resyncs_or_nc_redirects", ZEN4, AMD_CODE(0x096, 0x00)),
        GP("bp_redirects.resync", ZEN5, AMD_CODE(0x09f, 0x01)),

        /* NVIDIA Grace (Arm Neoverse V2): the PMUv3 common events by the names and numbers of
         * perf's arm64 armv8-common-and-microarch.json, those Neoverse V2 implements (perf's
         * arm/neoverse-n2-v2); any of the six event counters, CPU_CYCLES on the cycle counter
         * first, as the kernel places it. libpfm4 has no Neoverse V2 list. */
        GP("L1I_CACHE_REFILL", GRACE, 0x01),
        GP("L1I_TLB_REFILL", GRACE, 0x02),
        GP("L1D_CACHE_REFILL", GRACE, 0x03),
        GP("L1D_CACHE", GRACE, 0x04),
        GP("L1D_TLB_REFILL", GRACE, 0x05),
        GP("INST_RETIRED", GRACE, 0x08),
        GP("EXC_TAKEN", GRACE, 0x09),
        GP("EXC_RETURN", GRACE, 0x0a),
        GP("CID_WRITE_RETIRED", GRACE, 0x0b),
        GP("BR_MIS_PRED", GRACE, 0x10),
        FIXED_OR_GP("CPU_CYCLES", GRACE, FIXED_ARM_CYCLE_COUNTER, 0x11),
        GP("BR_PRED", GRACE, 0x12),
        GP("MEM_ACCESS", GRACE, 0x13),
        GP("L1I_CACHE", GRACE, 0x14),
        GP("L1D_CACHE_WB", GRACE, 0x15),
        GP("L2D_CACHE", GRACE, 0x16),
        GP("L2D_CACHE_REFILL", GRACE, 0x17),
        GP("L2D_CACHE_WB", GRACE, 0x18),
        GP("BUS_ACCESS", GRACE, 0x19),
        GP("MEMORY_ERROR", GRACE, 0x1a),
        GP("INST_SPEC", GRACE, 0x1b),
        GP("TTBR_WRITE_RETIRED", GRACE, 0x1c),
        GP("BUS_CYCLES", GRACE, 0x1d),
        GP("L2D_CACHE_ALLOCATE", GRACE, 0x20),
        GP("BR_RETIRED", GRACE, 0x21),
        GP("BR_MIS_PRED_RETIRED", GRACE, 0x22),
        GP("STALL_FRONTEND", GRACE, 0x23),
        GP("STALL_BACKEND", GRACE, 0x24),
        GP("L1D_TLB", GRACE, 0x25),
        GP("L1I_TLB", GRACE, 0x26),
        GP("L3D_CACHE_ALLOCATE", GRACE, 0x29),
        GP("L3D_CACHE_REFILL", GRACE, 0x2a),
        GP("L3D_CACHE", GRACE, 0x2b),
        GP("L2D_TLB_REFILL", GRACE, 0x2d),
        GP("L2I_TLB_REFILL", GRACE, 0x2e),
        GP("L2D_TLB", GRACE, 0x2f),
        GP("L2I_TLB", GRACE, 0x30),
        GP("REMOTE_ACCESS", GRACE, 0x31),
        GP("DTLB_WALK", GRACE, 0x34),
        GP("ITLB_WALK", GRACE, 0x35),
        GP("LL_CACHE_RD", GRACE, 0x36),
        GP("LL_CACHE_MISS_RD", GRACE, 0x37),
        GP("OP_RETIRED", GRACE, 0x3a),
        GP("OP_SPEC", GRACE, 0x3b),
        GP("STALL", GRACE, 0x3c),
        GP("STALL_SLOT_BACKEND", GRACE, 0x3d),
        GP("STALL_SLOT_FRONTEND", GRACE, 0x3e),
        GP("STALL_SLOT", GRACE, 0x3f),
        GP("BUS_ACCESS_RD", GRACE, 0x60),
        GP("BUS_ACCESS_WR", GRACE, 0x61),
        GP("MEM_ACCESS_RD", GRACE, 0x66),
        GP("MEM_ACCESS_WR", GRACE, 0x67),
        GP("LD_SPEC", GRACE, 0x70),
        GP("ST_SPEC", GRACE, 0x71),
        GP("DP_SPEC", GRACE, 0x73),
        GP("ASE_SPEC", GRACE, 0x74),
        GP("VFP_SPEC", GRACE, 0x75),
        GP("PC_WRITE_SPEC", GRACE, 0x76),
        GP("CRYPTO_SPEC", GRACE, 0x77),
        GP("BR_IMMED_SPEC", GRACE, 0x78),
        GP("BR_RETURN_SPEC", GRACE, 0x79),
        GP("BR_INDIRECT_SPEC", GRACE, 0x7a),
        GP("CNT_CYCLES", GRACE, 0x4004),
        GP("SVE_INST_SPEC", GRACE, 0x8006),
        GP("FP_HP_SPEC", GRACE, 0x8014),
        GP("FP_SP_SPEC", GRACE, 0x8018),
        GP("FP_DP_SPEC", GRACE, 0x801c),
        GP("FP_SCALE_OPS_SPEC", GRACE, 0x80c0),
        GP("FP_FIXED_OPS_SPEC", GRACE, 0x80c1),
};

unsigned event_table_model(const char *model) {
        if (!model)
                return 0;
        if (strcmp(model, "skx") == 0 || strcmp(model, "clx") == 0)
                return EVENT_MODEL_SKL;
        if (strcmp(model, "icx") == 0)
                return EVENT_MODEL_ICX;
        /* Emerald Rapids has Sapphire Rapids' event list (perf's emeraldrapids); Granite
         * Rapids' list adds events to it, with the same codes for the shared names */
        if (strcmp(model, "spr") == 0 || strcmp(model, "emr") == 0)
                return EVENT_MODEL_SPR;
        if (strcmp(model, "gnr") == 0)
                return EVENT_MODEL_SPR | EVENT_MODEL_GNR;
        if (strcmp(model, "srf") == 0)
                return EVENT_MODEL_SRF;
        if (strcmp(model, "zen4") == 0)
                return EVENT_MODEL_ZEN4;
        if (strcmp(model, "zen5") == 0)
                return EVENT_MODEL_ZEN5;
        if (strcmp(model, "grace") == 0)
                return EVENT_MODEL_GRACE;
        return 0;
}

const EventTableEntry *event_table_lookup(const char *model, const char *name) {
        unsigned bit = event_table_model(model);

        if (bit == 0 || !name)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(event_table); i++)
                if ((event_table[i].models & bit) && strcasecmp(event_table[i].name, name) == 0)
                        return &event_table[i];
        return NULL;
}

const EventTableEntry *event_table_entries(size_t *ret_n) {
        *ret_n = ELEMENTSOF(event_table);
        return event_table;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event rates per model, derived from a workload profile so that perf's TopDown formulas
 * (shared/reference/tma-formulas.md §3) applied to the simulated counts return the profile
 */
#include <math.h>
#include <string.h>

#include "backend/sim/sim-events.h"
#include "macro.h"

/* Server parts of all three generations run their core crystal clock at 25 MHz (CPUID leaf
 * 0x15); REF_XCLK and ONE_THREAD_ACTIVE count it. */
#define SIM_CRYSTAL_MHZ 25.0

/* How bad speculation splits: half of its slots are recovery cycles after a clear, the rest
 * are uops issued on the wrong path and never retired. */
#define SIM_RECOVERY_SHARE 0.5
/* Each mispredict or machine clear costs about 20 core cycles of slots. */
#define SIM_CLEAR_PENALTY_CYCLES 20.0
/* Ice Lake and later book a quarter of the machine-clear slots as dropped uops
 * (INT_MISC.UOP_DROPPING), which PERF_METRICS reports inside Frontend Bound and perf
 * subtracts again. */
#define SIM_DROP_SHARE 0.25

/* Shape of backend-bound cycles for the memory-bound formula: 80% are full stalls, 15% run
 * one port, 10% two ports, and a tenth of the memory-bound part waits on stores. */
#define SIM_STALLS_TOTAL_SHARE 0.80
#define SIM_EXE_1_PORT_SHARE 0.15
#define SIM_EXE_2_PORTS_SHARE 0.10
#define SIM_STORE_SHARE 0.10

/* Ice Lake heavy operations: 30% come from the microcode sequencer, the rest from decoder 0;
 * 40% of issued uops come from the legacy decoders (MITE); decoder 0 is busy in a quarter of
 * the cycles. */
#define SIM_MS_SHARE 0.30
#define SIM_MITE_SHARE 0.40
#define SIM_DEC0_ACTIVE_SHARE 0.25

#define ALL_COUNTERS 0xFFU

/* Sierra Forest's BRANCH group: one retired instruction in five is a branch. */
#define SIM_E_BRANCH_SHARE 0.2

/* AMD shapes: one retired instruction in six is a branch, two thirds of branches are taken, and
 * half an FP operation retires per instruction; 80% of backend-stalled cycles retire nothing
 * while the oldest op waits (ex_no_retire.not_complete). */
#define SIM_AMD_BRANCH_SHARE (1.0 / 6.0)
#define SIM_AMD_TAKEN_SHARE (2.0 / 3.0)
#define SIM_AMD_FLOPS_PER_INST 0.5
#define SIM_AMD_NOT_COMPLETE_SHARE 0.80

typedef struct SimEventEntry {
        uint16_t event;         /* AMD: the 12-bit event code, PerfEvtSel[35:32] as bits 11:8 */
        uint8_t umask;
        uint8_t cmask;
        bool edge;
        uint8_t counters;       /* GP counters the event may run on (bit n = PMCn) */
        SimQuantity quantity;
        uint8_t frontend;       /* MSR_PEBS_FRONTEND bits the event needs to count quantity, or 0 */
} SimEventEntry;

/* Encodings from tma-formulas.md §5 and pmu-registers.md §2.9, plus the architectural events
 * (0x3C/0x00 core cycles, 0xC0/0x00 instructions, 0x3C/0x01 reference cycles). */
static const SimEventEntry skylake_events[] = {
        { 0x3c, 0x00, 0, false, ALL_COUNTERS, SIM_Q_CLK },
        { 0x3c, 0x01, 0, false, ALL_COUNTERS, SIM_Q_XCLK },
        { 0x3c, 0x02, 0, false, ALL_COUNTERS, SIM_Q_XCLK_ONE_THREAD },
        { 0xc0, 0x00, 0, false, ALL_COUNTERS, SIM_Q_INST },
        { 0x0e, 0x01, 0, false, ALL_COUNTERS, SIM_Q_UOPS_ISSUED },
        { 0xc2, 0x02, 0, false, ALL_COUNTERS, SIM_Q_UOPS_RETIRED_SLOTS },
        { 0xc2, 0x04, 0, false, ALL_COUNTERS, SIM_Q_UOPS_MACRO_FUSED },
        { 0x9c, 0x01, 0, false, ALL_COUNTERS, SIM_Q_IDQ_NOT_DELIVERED },
        { 0x9c, 0x01, 4, false, ALL_COUNTERS, SIM_Q_IDQ_NOT_DELIVERED_CYCLES_0 },
        { 0x0d, 0x01, 0, false, ALL_COUNTERS, SIM_Q_RECOVERY_CYCLES },
        { 0xc5, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { 0xc3, 0x01, 1, true, ALL_COUNTERS, SIM_Q_MACHINE_CLEARS },
        { 0xa3, 0x14, 20, false, ALL_COUNTERS, SIM_Q_STALLS_MEM_ANY },
        { 0xa3, 0x04, 4, false, ALL_COUNTERS, SIM_Q_STALLS_TOTAL },
        { 0xa6, 0x40, 0, false, ALL_COUNTERS, SIM_Q_BOUND_ON_STORES },
        { 0xa6, 0x02, 0, false, ALL_COUNTERS, SIM_Q_EXE_1_PORTS_UTIL },
        { 0xa6, 0x04, 0, false, ALL_COUNTERS, SIM_Q_EXE_2_PORTS_UTIL },
};

static const SimEventEntry icelake_events[] = {
        { 0x3c, 0x00, 0, false, ALL_COUNTERS, SIM_Q_CLK },
        { 0x3c, 0x01, 0, false, ALL_COUNTERS, SIM_Q_XCLK },
        { 0x3c, 0x02, 0, false, ALL_COUNTERS, SIM_Q_XCLK_ONE_THREAD },
        { 0xc0, 0x00, 0, false, ALL_COUNTERS, SIM_Q_INST },
        { 0xec, 0x02, 0, false, ALL_COUNTERS, SIM_Q_CLK_DISTRIBUTED },
        { 0xa4, 0x01, 0, false, ALL_COUNTERS, SIM_Q_SLOTS },
        { 0x0d, 0x10, 0, false, ALL_COUNTERS, SIM_Q_UOP_DROPPING },
        { 0x0d, 0x01, 0, false, ALL_COUNTERS, SIM_Q_RECOVERY_CYCLES },
        { 0x0d, 0x01, 1, true, ALL_COUNTERS, SIM_Q_CLEARS_COUNT },
        { 0x0e, 0x01, 0, false, ALL_COUNTERS, SIM_Q_UOPS_ISSUED },
        { 0xc2, 0x02, 0, false, ALL_COUNTERS, SIM_Q_UOPS_RETIRED_SLOTS },
        { 0x79, 0x30, 0, false, ALL_COUNTERS, SIM_Q_IDQ_MS_UOPS },
        { 0x79, 0x04, 0, false, ALL_COUNTERS, SIM_Q_IDQ_MITE_UOPS },
        { 0x56, 0x01, 0, false, ALL_COUNTERS, SIM_Q_UOPS_DECODED_DEC0 },
        { 0x56, 0x01, 1, false, ALL_COUNTERS, SIM_Q_UOPS_DECODED_DEC0_CYCLES },
        { 0xc5, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { 0xc3, 0x01, 1, true, ALL_COUNTERS, SIM_Q_MACHINE_CLEARS },
        { 0x9c, 0x01, 0, false, ALL_COUNTERS, SIM_Q_IDQ_NOT_DELIVERED },
        { 0x9c, 0x01, 5, false, ALL_COUNTERS, SIM_Q_IDQ_NOT_DELIVERED_CYCLES_0 },
        { 0xa3, 0x14, 20, false, ALL_COUNTERS, SIM_Q_STALLS_MEM_ANY },
        { 0xa3, 0x04, 4, false, ALL_COUNTERS, SIM_Q_STALLS_TOTAL },
        { 0xa6, 0x40, 2, false, ALL_COUNTERS, SIM_Q_BOUND_ON_STORES },
        { 0xa6, 0x02, 0, false, ALL_COUNTERS, SIM_Q_EXE_1_PORTS_UTIL },
        { 0xa6, 0x04, 0, false, ALL_COUNTERS, SIM_Q_EXE_2_PORTS_UTIL },
};

/* Sapphire Rapids: only the encodings tma-formulas.md §5 lists for SPR, plus the
 * architectural ones; TOPDOWN.BAD_SPEC_SLOTS and BR_MISPREDICT_SLOTS count on PMC0 only. */
static const SimEventEntry sapphire_rapids_events[] = {
        { 0x3c, 0x00, 0, false, ALL_COUNTERS, SIM_Q_CLK },
        { 0x3c, 0x02, 0, false, ALL_COUNTERS, SIM_Q_XCLK_ONE_THREAD },
        { 0xc0, 0x00, 0, false, ALL_COUNTERS, SIM_Q_INST },
        { 0xec, 0x02, 0, false, ALL_COUNTERS, SIM_Q_CLK_DISTRIBUTED },
        { 0xa4, 0x01, 0, false, ALL_COUNTERS, SIM_Q_SLOTS },
        { 0xa4, 0x02, 0, false, ALL_COUNTERS, SIM_Q_TD_BACKEND_SLOTS },
        { 0xa4, 0x04, 0, false, 0x01, SIM_Q_TD_BAD_SPEC_SLOTS },
        { 0xa4, 0x08, 0, false, 0x01, SIM_Q_TD_BR_MISPREDICT_SLOTS },
        { 0xa4, 0x10, 0, false, ALL_COUNTERS, SIM_Q_TD_MEMORY_BOUND_SLOTS },
        { 0xad, 0x10, 0, false, ALL_COUNTERS, SIM_Q_UOP_DROPPING },
        { 0xad, 0x01, 1, true, ALL_COUNTERS, SIM_Q_CLEARS_COUNT },
        { 0xc2, 0x01, 0, false, ALL_COUNTERS, SIM_Q_UOPS_RETIRED_HEAVY },
        { 0xc2, 0x02, 0, false, ALL_COUNTERS, SIM_Q_UOPS_RETIRED_SLOTS },
        /* UOPS_RETIRED.MS counts microcode-sequencer uops with MSR_PEBS_FRONTEND bit 3 (perf's
         * sapphirerapids pipeline.json); with another facet, something the simulator does not
         * model */
        { 0xc2, 0x04, 0, false, ALL_COUNTERS, SIM_Q_UOPS_RETIRED_MS, 0x08 },
        { 0x9c, 0x01, 0, false, ALL_COUNTERS, SIM_Q_IDQ_NOT_DELIVERED },
        { 0x9c, 0x01, 6, false, ALL_COUNTERS, SIM_Q_IDQ_NOT_DELIVERED_CYCLES_0 },
        { 0xc5, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { 0xc3, 0x01, 1, true, ALL_COUNTERS, SIM_Q_MACHINE_CLEARS },
};

/* Sierra Forest (perf's sierraforest pipeline.json): the architectural events (branches for
 * the BRANCH group) and the E-core TopDown slot events of levels 1 and 2; level-3 facets and
 * the events of the other groups (L2, L3, FLOPS, DATA, TLB_DATA) come from a profile's extra
 * events. */
static const SimEventEntry sierra_forest_events[] = {
        { 0x3c, 0x00, 0, false, ALL_COUNTERS, SIM_Q_CLK },
        { 0xc0, 0x00, 0, false, ALL_COUNTERS, SIM_Q_INST },
        { 0xc4, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BRANCHES },
        { 0xc5, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { 0x71, 0x00, 0, false, ALL_COUNTERS, SIM_Q_E_FE_BOUND },
        { 0x71, 0x72, 0, false, ALL_COUNTERS, SIM_Q_E_FE_LATENCY },
        { 0x71, 0x8d, 0, false, ALL_COUNTERS, SIM_Q_E_FE_BANDWIDTH },
        { 0x72, 0x00, 0, false, ALL_COUNTERS, SIM_Q_E_RETIRING },
        { 0x73, 0x00, 0, false, ALL_COUNTERS, SIM_Q_E_BAD_SPEC },
        { 0x73, 0x03, 0, false, ALL_COUNTERS, SIM_Q_E_MACHINE_CLEARS },
        { 0x73, 0x04, 0, false, ALL_COUNTERS, SIM_Q_E_MISPREDICT },
        { 0x74, 0x00, 0, false, ALL_COUNTERS, SIM_Q_E_BE_BOUND },
        { 0x74, 0x01, 0, false, ALL_COUNTERS, SIM_Q_E_ALLOC_RESTRICTIONS },
};

/* AMD Zen 4 and Zen 5 (amd-topdown.md §5): perf's raw encodings, event[11:8] above the low byte. */
static const SimEventEntry zen4_events[] = {
        { 0x076, 0x00, 0, false, ALL_COUNTERS, SIM_Q_CLK },
        { 0x120, 0x01, 0, false, ALL_COUNTERS, SIM_Q_REF_TSC },
        { 0x0c0, 0x00, 0, false, ALL_COUNTERS, SIM_Q_INST },
        { 0x0c1, 0x00, 0, false, ALL_COUNTERS, SIM_Q_AMD_RET_OPS },
        { 0x0c2, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BRANCHES },
        { 0x0c3, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { 0x0c4, 0x00, 0, false, ALL_COUNTERS, SIM_Q_TAKEN_BRANCHES },
        { 0x003, 0x1f, 0, false, ALL_COUNTERS, SIM_Q_FLOPS },
        { 0x0aa, 0x07, 0, false, ALL_COUNTERS, SIM_Q_AMD_DISPATCHED },
        { 0x1a0, 0x01, 0, false, ALL_COUNTERS, SIM_Q_AMD_FRONTEND_SLOTS },
        { 0x1a0, 0x01, 6, false, ALL_COUNTERS, SIM_Q_AMD_FRONTEND_CYCLES },
        { 0x1a0, 0x1e, 0, false, ALL_COUNTERS, SIM_Q_AMD_BACKEND_SLOTS },
        { 0x1a0, 0x60, 0, false, ALL_COUNTERS, SIM_Q_AMD_SMT_SLOTS },
        { 0x096, 0x00, 0, false, ALL_COUNTERS, SIM_Q_AMD_RESYNCS },
        { 0x0d6, 0x02, 0, false, ALL_COUNTERS, SIM_Q_AMD_NOT_COMPLETE },
        { 0x0d6, 0xa2, 0, false, ALL_COUNTERS, SIM_Q_AMD_LOAD_NOT_COMPLETE },
        { 0x1c2, 0x00, 0, false, ALL_COUNTERS, SIM_Q_AMD_UCODE_OPS },
};

/* Zen 5: cmask 8 for the front-end latency, bp_redirects.resync for the restarts. */
static const SimEventEntry zen5_events[] = {
        { 0x076, 0x00, 0, false, ALL_COUNTERS, SIM_Q_CLK },
        { 0x120, 0x01, 0, false, ALL_COUNTERS, SIM_Q_REF_TSC },
        { 0x0c0, 0x00, 0, false, ALL_COUNTERS, SIM_Q_INST },
        { 0x0c1, 0x00, 0, false, ALL_COUNTERS, SIM_Q_AMD_RET_OPS },
        { 0x0c2, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BRANCHES },
        { 0x0c3, 0x00, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { 0x0c4, 0x00, 0, false, ALL_COUNTERS, SIM_Q_TAKEN_BRANCHES },
        { 0x003, 0x1f, 0, false, ALL_COUNTERS, SIM_Q_FLOPS },
        { 0x0aa, 0x07, 0, false, ALL_COUNTERS, SIM_Q_AMD_DISPATCHED },
        { 0x1a0, 0x01, 0, false, ALL_COUNTERS, SIM_Q_AMD_FRONTEND_SLOTS },
        { 0x1a0, 0x01, 8, false, ALL_COUNTERS, SIM_Q_AMD_FRONTEND_CYCLES },
        { 0x1a0, 0x1e, 0, false, ALL_COUNTERS, SIM_Q_AMD_BACKEND_SLOTS },
        { 0x1a0, 0x60, 0, false, ALL_COUNTERS, SIM_Q_AMD_SMT_SLOTS },
        { 0x09f, 0x01, 0, false, ALL_COUNTERS, SIM_Q_AMD_RESYNCS },
        { 0x0d6, 0x02, 0, false, ALL_COUNTERS, SIM_Q_AMD_NOT_COMPLETE },
        { 0x0d6, 0xa2, 0, false, ALL_COUNTERS, SIM_Q_AMD_LOAD_NOT_COMPLETE },
        { 0x1c2, 0x00, 0, false, ALL_COUNTERS, SIM_Q_AMD_UCODE_OPS },
};

/* Grace: the Arm common events by number (no umask, cmask or edge). */
static const SimEventEntry neoverse_v2_events[] = {
        { ARM_EVENT_CPU_CYCLES, 0, 0, false, ALL_COUNTERS, SIM_Q_CLK },
        { ARM_EVENT_INST_RETIRED, 0, 0, false, ALL_COUNTERS, SIM_Q_INST },
        { ARM_EVENT_INST_SPEC, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_INST_SPEC },
        { ARM_EVENT_CNT_CYCLES, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_CNT_CYCLES },
        { ARM_EVENT_OP_RETIRED, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_OP_RETIRED },
        { ARM_EVENT_OP_SPEC, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_OP_SPEC },
        { ARM_EVENT_STALL_SLOT_FRONTEND, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_STALL_SLOT_FRONTEND },
        { ARM_EVENT_STALL_SLOT_BACKEND, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_STALL_SLOT_BACKEND },
        { ARM_EVENT_STALL_SLOT, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_STALL_SLOT },
        { ARM_EVENT_STALL_FRONTEND, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_STALL_FRONTEND },
        { ARM_EVENT_STALL_BACKEND, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_STALL_BACKEND },
        { ARM_EVENT_STALL, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_STALL },
        { ARM_EVENT_BR_RETIRED, 0, 0, false, ALL_COUNTERS, SIM_Q_BRANCHES },
        { ARM_EVENT_BR_PRED, 0, 0, false, ALL_COUNTERS, SIM_Q_BRANCHES },
        { ARM_EVENT_BR_MIS_PRED_RETIRED, 0, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { ARM_EVENT_BR_MIS_PRED, 0, 0, false, ALL_COUNTERS, SIM_Q_BR_MISP_RETIRED },
        { ARM_EVENT_L1D_CACHE, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_L1D_CACHE },
        { ARM_EVENT_MEM_ACCESS, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_L1D_CACHE },
        { ARM_EVENT_MEM_ACCESS_RD, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_MEM_ACCESS_RD },
        { ARM_EVENT_MEM_ACCESS_WR, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_MEM_ACCESS_WR },
        { ARM_EVENT_L1D_CACHE_REFILL, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_L1D_CACHE_REFILL },
        { ARM_EVENT_L2D_CACHE, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_L1D_CACHE_REFILL },
        { ARM_EVENT_L2D_CACHE_REFILL, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_L2D_CACHE_REFILL },
        { ARM_EVENT_L3D_CACHE, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_L2D_CACHE_REFILL },
        { ARM_EVENT_L3D_CACHE_REFILL, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_L3D_CACHE_REFILL },
        { ARM_EVENT_FP_FIXED_OPS_SPEC, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_FP_FIXED_OPS },
        { ARM_EVENT_FP_SCALE_OPS_SPEC, 0, 0, false, ALL_COUNTERS, SIM_Q_ARM_FP_SCALE_OPS },
};

/* Arm's TopDown level 1 for Neoverse V2 (perf's TopdownL1 metrics, Arm's published formulas):
 * W slots per cycle, every one either stalled by the front end or the back end (STALL_SLOT =
 * FE + BE), or dispatching an operation, of which OP_RETIRED / OP_SPEC retire; and for each
 * mispredict (m per cycle, BR_MIS_PRED / CPU_CYCLES) the formulas move one slot-cycle from the
 * front-end and three from the back-end stall slots to bad speculation. So the stall slots
 * carry those: FE = (f + m) S, BE = (k + 3m) S, and OP_SPEC = (r + b - 4m) S, which gives
 * retiring r / (r + b - 4m) * (1 - (f + k + 4m)) = r and bad speculation b back (4m is a fifth
 * of branch_mispredicts, never more than b). The cache and FP shapes are plausible,
 * not measured: 40% of instructions access memory (two thirds of them reads), a twentieth of
 * those miss L1D, more with a larger memory-bound share; L2 and L3 miss a third and half of
 * what reaches them; half an FP operation per instruction, 40% of them scalable (SVE). */
#define SIM_ARM_MEM_PER_INST 0.40
#define SIM_ARM_READ_SHARE (2.0 / 3.0)
#define SIM_ARM_L1D_MISS_BASE 0.05
#define SIM_ARM_L2_MISS_SHARE (1.0 / 3.0)
#define SIM_ARM_L3_MISS_SHARE 0.5
#define SIM_ARM_FP_PER_INST 0.5
#define SIM_ARM_FP_SCALE_SHARE 0.4
/* Grace's generic timer runs at 1 GHz; CNT_CYCLES counts it while the core is not in WFI. */
#define SIM_ARM_TIMER_MHZ 1000.0
static void arm_thread_rates(const SimModel *m, const SimProfile *p, double *q) {
        double u = p->utilization, width = m->slots_width, slots = width * u;
        double r = p->retiring, b = p->bad_speculation, f = p->frontend_bound, k = p->backend_bound;
        double mem = SIM_ARM_MEM_PER_INST * q[SIM_Q_INST];
        double fp = SIM_ARM_FP_PER_INST * q[SIM_Q_INST];

        /* mispredicts per unhalted cycle, as BR_MIS_PRED counts them (thread_rates()) */
        double misp = u > 0.0 ? q[SIM_Q_BR_MISP_RETIRED] / u : 0.0;

        q[SIM_Q_ARM_OP_RETIRED] = r * slots;
        q[SIM_Q_ARM_OP_SPEC] = (r + b - 4.0 * misp) * slots;
        q[SIM_Q_ARM_STALL_SLOT_FRONTEND] = (f + misp) * slots;
        q[SIM_Q_ARM_STALL_SLOT_BACKEND] = (k + 3.0 * misp) * slots;
        q[SIM_Q_ARM_STALL_SLOT] = (f + k + 4.0 * misp) * slots;
        q[SIM_Q_ARM_STALL_FRONTEND] = p->fetch_latency * u;
        q[SIM_Q_ARM_STALL_BACKEND] = SIM_STALLS_TOTAL_SHARE * k * u;
        q[SIM_Q_ARM_STALL] = q[SIM_Q_ARM_STALL_FRONTEND] + q[SIM_Q_ARM_STALL_BACKEND];
        q[SIM_Q_ARM_INST_SPEC] = r > 0.0 ? q[SIM_Q_INST] * (r + b) / r : q[SIM_Q_INST];
        q[SIM_Q_ARM_CNT_CYCLES] = u * SIM_ARM_TIMER_MHZ / m->cpu->nominal_mhz;
        q[SIM_Q_BRANCHES] = SIM_AMD_BRANCH_SHARE * q[SIM_Q_INST];
        q[SIM_Q_ARM_L1D_CACHE] = mem;
        q[SIM_Q_ARM_MEM_ACCESS_RD] = SIM_ARM_READ_SHARE * mem;
        q[SIM_Q_ARM_MEM_ACCESS_WR] = (1.0 - SIM_ARM_READ_SHARE) * mem;
        q[SIM_Q_ARM_L1D_CACHE_REFILL] = (SIM_ARM_L1D_MISS_BASE + p->memory_bound) * mem / 10.0;
        q[SIM_Q_ARM_L2D_CACHE_REFILL] = SIM_ARM_L2_MISS_SHARE * q[SIM_Q_ARM_L1D_CACHE_REFILL];
        q[SIM_Q_ARM_L3D_CACHE_REFILL] = SIM_ARM_L3_MISS_SHARE * q[SIM_Q_ARM_L2D_CACHE_REFILL];
        q[SIM_Q_ARM_FP_FIXED_OPS] = (1.0 - SIM_ARM_FP_SCALE_SHARE) * fp;
        q[SIM_Q_ARM_FP_SCALE_OPS] = SIM_ARM_FP_SCALE_SHARE * fp;
}

/* AMD pipeline utilization (amd-topdown.md §4): W dispatch slots per unhalted cycle, every slot
 * either dispatches (retiring or bad speculation), or is empty because of the front end, the
 * back end or the SMT sibling; so FE + BE + SMT + de_src_op_disp.all = W * cycles exactly and
 * perf's formulas give back the profile. */
static void amd_thread_rates(const SimModel *m, const SimProfile *p, double *q) {
        double u = p->utilization, width = m->slots_width, slots = width * u;
        double b = p->bad_speculation, k = p->backend_bound, misp = p->branch_mispredicts;
        double clears = slots / (width * SIM_CLEAR_PENALTY_CYCLES);

        q[SIM_Q_AMD_RET_OPS] = p->retiring * slots;
        q[SIM_Q_AMD_DISPATCHED] = (p->retiring + b) * slots;
        q[SIM_Q_AMD_FRONTEND_SLOTS] = p->frontend_bound * slots;
        /* latency = W * (cycles with all W slots empty) / slots */
        q[SIM_Q_AMD_FRONTEND_CYCLES] = p->fetch_latency * slots / width;
        q[SIM_Q_AMD_BACKEND_SLOTS] = k * slots;
        q[SIM_Q_AMD_SMT_SLOTS] = p->smt_contention * slots;
        /* mispredicts : restarts = branch_mispredicts : (bad_speculation - branch_mispredicts) */
        q[SIM_Q_BR_MISP_RETIRED] = misp * clears;
        q[SIM_Q_AMD_RESYNCS] = (b - misp) * clears;
        q[SIM_Q_AMD_NOT_COMPLETE] = SIM_AMD_NOT_COMPLETE_SHARE * k * u;
        q[SIM_Q_AMD_LOAD_NOT_COMPLETE] = k > 0.0 ? p->memory_bound / k * q[SIM_Q_AMD_NOT_COMPLETE] : 0.0;
        q[SIM_Q_AMD_UCODE_OPS] = p->heavy_operations * slots;
        q[SIM_Q_BRANCHES] = SIM_AMD_BRANCH_SHARE * q[SIM_Q_INST];
        q[SIM_Q_TAKEN_BRANCHES] = SIM_AMD_TAKEN_SHARE * q[SIM_Q_BRANCHES];
        q[SIM_Q_FLOPS] = SIM_AMD_FLOPS_PER_INST * q[SIM_Q_INST];
}

/* Fills q[] for one thread with utilization p->utilization whose sibling is unhalted for
 * sibling_utilization of the time (0 without a sibling), assuming the two are independent. */
static void thread_rates(const SimModel *m, const SimProfile *p, double sibling_utilization, double *q,
                         double *metrics) {
        double u = p->utilization, width = m->slots_width;
        double r = p->retiring, b = p->bad_speculation, f = p->frontend_bound, k = p->backend_bound;
        double h = p->heavy_operations, misp = p->branch_mispredicts, l = p->fetch_latency;
        double mb = p->memory_bound;
        /* A thread owns the whole core while its sibling is halted and half of it otherwise. */
        double share = u * (2.0 - sibling_utilization) / 2.0;
        double slots = width * share;
        double clears_per_slot = b / (width * SIM_CLEAR_PENALTY_CYCLES);
        double drop = 0.0, clears_to_backend = 0.0, backend_cycles, q_mem, d0, mem;

        memset(q, 0, sizeof(double) * _SIM_Q_MAX);
        memset(metrics, 0, sizeof(double) * PERF_METRICS_FIELDS);

        q[SIM_Q_CLK] = u;
        q[SIM_Q_REF_TSC] = u;
        q[SIM_Q_XCLK] = u * SIM_CRYSTAL_MHZ / m->cpu->nominal_mhz;
        q[SIM_Q_XCLK_ONE_THREAD] = u * (1.0 - sibling_utilization) * SIM_CRYSTAL_MHZ / m->cpu->nominal_mhz;
        q[SIM_Q_CLK_DISTRIBUTED] = share;
        q[SIM_Q_INST] = p->ipc * u;
        q[SIM_Q_SLOTS] = slots;

        if (m->family != SIM_FAMILY_SKYLAKE) {
                /* PERF_METRICS books dropped uops as Frontend Bound and, on Ice Lake only, the
                 * clear-recovery bubbles (5 * INT_MISC.CLEARS_COUNT / SLOTS) as Bad
                 * Speculation; perf's formulas move both back. */
                drop = SIM_DROP_SHARE * (b - misp);
                if (m->family == SIM_FAMILY_ICELAKE)
                        clears_to_backend = fmin(k, b / SIM_CLEAR_PENALTY_CYCLES);
        }

        q[SIM_Q_UOPS_RETIRED_SLOTS] = r * slots;
        q[SIM_Q_UOPS_ISSUED] = (r + (1.0 - SIM_RECOVERY_SHARE) * b) * slots;
        q[SIM_Q_RECOVERY_CYCLES] = SIM_RECOVERY_SHARE * b * slots / width;
        q[SIM_Q_IDQ_NOT_DELIVERED] = (f + drop) * slots;
        q[SIM_Q_IDQ_NOT_DELIVERED_CYCLES_0] = (l + drop) * slots / width;
        q[SIM_Q_UOP_DROPPING] = drop * slots;
        q[SIM_Q_BR_MISP_RETIRED] = misp * slots / (width * SIM_CLEAR_PENALTY_CYCLES);
        q[SIM_Q_MACHINE_CLEARS] = (b - misp) * slots / (width * SIM_CLEAR_PENALTY_CYCLES);
        q[SIM_Q_CLEARS_COUNT] = m->family == SIM_FAMILY_ICELAKE ? clears_to_backend * slots / width
                                                                : clears_per_slot * slots;
        /* Skylake: heavy = (RETIRE_SLOTS + MACRO_FUSED - INST_RETIRED) / SLOTS */
        q[SIM_Q_UOPS_MACRO_FUSED] = fmax(0.0, q[SIM_Q_INST] - (r - h) * slots);
        q[SIM_Q_UOPS_RETIRED_HEAVY] = h * slots;
        /* Sapphire Rapids: the microcode sequencer's share of heavy operations, as Ice Lake's */
        q[SIM_Q_UOPS_RETIRED_MS] = SIM_MS_SHARE * h * slots;

        /* Ice Lake: heavy = RETIRED/ISSUED * MS_UOPS / SLOTS + retiring * (DEC0 - DEC0_c1) / MITE */
        if (r > 0.0) {
                double ms = SIM_MS_SHARE * h;
                double issued_per_retired = (r + (1.0 - SIM_RECOVERY_SHARE) * b) / r;

                q[SIM_Q_IDQ_MS_UOPS] = ms * slots * issued_per_retired;
                q[SIM_Q_IDQ_MITE_UOPS] = SIM_MITE_SHARE * q[SIM_Q_UOPS_ISSUED];
                q[SIM_Q_UOPS_DECODED_DEC0_CYCLES] = SIM_DEC0_ACTIVE_SHARE * u;
                q[SIM_Q_UOPS_DECODED_DEC0] = q[SIM_Q_UOPS_DECODED_DEC0_CYCLES] +
                                             (h - ms) / r * q[SIM_Q_IDQ_MITE_UOPS];
        }

        /* memory_bound = (STALLS_MEM_ANY + STORES) / (STALLS_TOTAL + EXE_1 + retiring * EXE_2
         * + STORES) * backend_bound; solve for numerator/denominator = memory/backend. */
        backend_cycles = k * u;
        q_mem = k > 0.0 ? mb / k : 0.0;
        q[SIM_Q_STALLS_TOTAL] = SIM_STALLS_TOTAL_SHARE * backend_cycles;
        q[SIM_Q_EXE_1_PORTS_UTIL] = SIM_EXE_1_PORT_SHARE * backend_cycles;
        q[SIM_Q_EXE_2_PORTS_UTIL] = SIM_EXE_2_PORTS_SHARE * backend_cycles;
        d0 = q[SIM_Q_STALLS_TOTAL] + q[SIM_Q_EXE_1_PORTS_UTIL] + r * q[SIM_Q_EXE_2_PORTS_UTIL];
        mem = q_mem * d0 / (1.0 - SIM_STORE_SHARE * q_mem);
        q[SIM_Q_BOUND_ON_STORES] = SIM_STORE_SHARE * mem;
        q[SIM_Q_STALLS_MEM_ANY] = mem - q[SIM_Q_BOUND_ON_STORES];

        /* PERF_METRICS as the hardware reports it, before perf's corrections */
        metrics[0] = r;
        metrics[1] = b - drop + clears_to_backend;
        metrics[2] = f + drop;
        metrics[3] = k - clears_to_backend;
        metrics[4] = h;
        metrics[5] = misp;
        metrics[6] = l + drop;
        metrics[7] = mb;
        q[SIM_Q_TD_BACKEND_SLOTS] = metrics[3] * slots;
        q[SIM_Q_TD_BAD_SPEC_SLOTS] = metrics[1] * slots;
        q[SIM_Q_TD_BR_MISPREDICT_SLOTS] = metrics[5] * slots;
        q[SIM_Q_TD_MEMORY_BOUND_SLOTS] = metrics[7] * slots;
        /* E-cores count TopDown in slots, 6 per cycle of the thread (no SMT on Sierra Forest).
         * The profile's memory_bound stands for Resource Bound, the rest of the backend for
         * Core Bound (allocation restrictions); fetch_latency for IFetch Latency. */
        q[SIM_Q_E_FE_BOUND] = f * slots;
        q[SIM_Q_E_FE_LATENCY] = l * slots;
        q[SIM_Q_E_FE_BANDWIDTH] = (f - l) * slots;
        q[SIM_Q_E_RETIRING] = r * slots;
        q[SIM_Q_E_BAD_SPEC] = b * slots;
        q[SIM_Q_E_MISPREDICT] = misp * slots;
        q[SIM_Q_E_MACHINE_CLEARS] = (b - misp) * slots;
        q[SIM_Q_E_BE_BOUND] = k * slots;
        q[SIM_Q_E_ALLOC_RESTRICTIONS] = (k - mb) * slots;
        q[SIM_Q_BRANCHES] = SIM_E_BRANCH_SHARE * q[SIM_Q_INST];
        if (m->amd)
                amd_thread_rates(m, p, q);
        if (m->arm)
                arm_thread_rates(m, p, q);
        if (m->perf_metrics < 2)
                for (unsigned i = PERF_METRICS_L1_FIELDS; i < PERF_METRICS_FIELDS; i++)
                        metrics[i] = 0.0;
}

void sim_rates_compute(const SimModel *m, const SimProfile *self, const SimProfile *sibling,
                       SimRates *ret) {
        double sibling_q[_SIM_Q_MAX], sibling_metrics[PERF_METRICS_FIELDS];
        double u = self->utilization, v = sibling ? sibling->utilization : 0.0;
        double core_active = u + v - u * v;
        double crystal_ratio = SIM_CRYSTAL_MHZ / m->cpu->nominal_mhz;

        *ret = (SimRates) { .user_fraction = self->user_fraction };
        thread_rates(m, self, v, ret->thread, ret->metrics);
        if (sibling)
                thread_rates(m, sibling, u, sibling_q, sibling_metrics);
        else
                memset(sibling_q, 0, sizeof(sibling_q));

        /* AnyThread sums the per-thread events of the core; cycle events count the cycles
         * in which any thread of the core is unhalted. */
        for (unsigned i = 0; i < _SIM_Q_MAX; i++)
                ret->core[i] = ret->thread[i] + sibling_q[i];
        ret->core[SIM_Q_CLK] = core_active;
        ret->core[SIM_Q_REF_TSC] = core_active;
        ret->core[SIM_Q_CLK_DISTRIBUTED] = core_active;
        ret->core[SIM_Q_XCLK] = core_active * crystal_ratio;
        ret->core[SIM_Q_XCLK_ONE_THREAD] = (u * (1.0 - v) + v * (1.0 - u)) * crystal_ratio;

        for (size_t i = 0; i < self->n_extra_events; i++) {
                ret->extra_events[i] = self->extra_events[i];
                ret->extra_events[i].per_cycle *= u;
        }
        ret->n_extra_events = self->n_extra_events;
}

static const SimEventEntry *event_table(const SimModel *m, size_t *ret_n) {
        switch (m->family) {
        case SIM_FAMILY_SKYLAKE:
                *ret_n = ELEMENTSOF(skylake_events);
                return skylake_events;
        case SIM_FAMILY_ICELAKE:
                *ret_n = ELEMENTSOF(icelake_events);
                return icelake_events;
        case SIM_FAMILY_ZEN4:
                *ret_n = ELEMENTSOF(zen4_events);
                return zen4_events;
        case SIM_FAMILY_ZEN5:
                *ret_n = ELEMENTSOF(zen5_events);
                return zen5_events;
        case SIM_FAMILY_SIERRA_FOREST:
                *ret_n = ELEMENTSOF(sierra_forest_events);
                return sierra_forest_events;
        case SIM_FAMILY_NEOVERSE_V2:
                *ret_n = ELEMENTSOF(neoverse_v2_events);
                return neoverse_v2_events;
        case SIM_FAMILY_SAPPHIRE_RAPIDS:
        default:
                *ret_n = ELEMENTSOF(sapphire_rapids_events);
                return sapphire_rapids_events;
        }
}

static uint64_t entry_config(const SimModel *m, uint16_t event, uint8_t umask, uint8_t cmask, bool edge) {
        uint64_t config;

        /* PMEVTYPER: the event number alone */
        if (m->arm)
                return event;
        config = (uint64_t) (event & EVTSEL_EVENT_MASK) | (uint64_t) umask << EVTSEL_UMASK_SHIFT |
                          (uint64_t) cmask << EVTSEL_CMASK_SHIFT | (edge ? EVTSEL_EDGE : 0);

        if (m->amd)
                config |= (uint64_t) ((event >> 8) & AMD_EVTSEL_EVENT_HI_MASK) << AMD_EVTSEL_EVENT_HI_SHIFT;
        return config;
}

size_t sim_events_modelled(const SimModel *m, uint64_t *ret, size_t max) {
        const SimEventEntry *table;
        size_t n;

        table = event_table(m, &n);
        for (size_t i = 0; i < n && i < max; i++)
                ret[i] = entry_config(m, table[i].event, table[i].umask, table[i].cmask, table[i].edge);
        return n;
}

uint64_t sim_extra_event_config(const SimModel *m, const SimExtraEvent *e) {
        return entry_config(m, e->event, e->umask, 0, false);
}

double sim_rates_event(const SimRates *r, const SimModel *m, uint64_t evtsel, unsigned counter,
                       uint64_t pebs_frontend) {
        uint16_t event = (uint16_t) (evtsel & EVTSEL_EVENT_MASK);
        uint8_t umask = (uint8_t) ((evtsel >> EVTSEL_UMASK_SHIFT) & EVTSEL_UMASK_MASK);
        uint8_t cmask = (uint8_t) ((evtsel >> EVTSEL_CMASK_SHIFT) & EVTSEL_CMASK_MASK);
        bool edge = evtsel & EVTSEL_EDGE, inv = evtsel & EVTSEL_INV;
        bool any = m->any_thread && (evtsel & EVTSEL_ANY);
        const SimEventEntry *table;
        size_t n;

        if (m->arm) {
                event = (uint16_t) (evtsel & ARM_EVTYPER_EVENT_MASK);
                umask = cmask = 0;
                edge = inv = any = false;
        }
        /* The simulated workload never runs a transaction, so TSX-filtered events stay 0. On
         * AMD those bits are the event code's upper nibble. */
        if (m->amd)
                event |= (uint16_t) (((evtsel >> AMD_EVTSEL_EVENT_HI_SHIFT) & AMD_EVTSEL_EVENT_HI_MASK)
                                     << 8);
        else if (!m->arm && (evtsel & (EVTSEL_IN_TX | EVTSEL_IN_TXCP)))
                return 0.0;

        if (cmask == 0 && !edge && !inv)
                for (size_t i = 0; i < r->n_extra_events; i++)
                        if (r->extra_events[i].event == event && r->extra_events[i].umask == umask)
                                return r->extra_events[i].per_cycle;

        if (inv)
                return 0.0;
        table = event_table(m, &n);
        for (size_t i = 0; i < n; i++) {
                const SimEventEntry *e = &table[i];

                if (e->event != event || e->umask != umask || e->cmask != cmask || e->edge != edge)
                        continue;
                if (!(e->counters & (1U << counter)))
                        return 0.0;
                if ((pebs_frontend & e->frontend) != e->frontend)
                        return 0.0;
                return any ? r->core[e->quantity] : r->thread[e->quantity];
        }
        return 0.0;
}

double sim_rates_fixed(const SimRates *r, unsigned index, bool any) {
        static const SimQuantity fixed_quantity[SIM_FIXED_COUNTERS_MAX] = {
                [FIXED_INST_RETIRED] = SIM_Q_INST,
                [FIXED_CLK_UNHALTED] = SIM_Q_CLK,
                [FIXED_REF_TSC] = SIM_Q_REF_TSC,
                [FIXED_SLOTS] = SIM_Q_SLOTS,
        };

        if (index >= SIM_FIXED_COUNTERS_MAX)
                return 0.0;
        return any ? r->core[fixed_quantity[index]] : r->thread[fixed_quantity[index]];
}

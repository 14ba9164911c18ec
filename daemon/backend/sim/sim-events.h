/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event rates: what every known event counts per wall-clock cycle for a workload profile, so
 * that perf's TopDown formulas applied to the counts give the profile back
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/sim/sim-model.h"
#include "backend/sim/sim-profile.h"
#include "backend/sim/sim-regs.h"

/* Quantities the event tables map onto. All are rates per wall-clock (TSC) cycle. */
typedef enum SimQuantity {
        SIM_Q_CLK,                      /* CPU_CLK_UNHALTED.THREAD(_P) */
        SIM_Q_REF_TSC,                  /* CPU_CLK_UNHALTED.REF_TSC: unhalted, at TSC rate */
        SIM_Q_XCLK,                     /* CPU_CLK_UNHALTED.REF_XCLK: unhalted crystal clocks */
        SIM_Q_XCLK_ONE_THREAD,          /* CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE */
        SIM_Q_CLK_DISTRIBUTED,          /* CPU_CLK_UNHALTED.DISTRIBUTED: share of core cycles */
        SIM_Q_INST,                     /* INST_RETIRED.ANY(_P) */
        SIM_Q_SLOTS,                    /* TOPDOWN.SLOTS(_P) */
        SIM_Q_UOPS_RETIRED_SLOTS,       /* UOPS_RETIRED.RETIRE_SLOTS / UOPS_RETIRED.SLOTS */
        SIM_Q_UOPS_ISSUED,              /* UOPS_ISSUED.ANY */
        SIM_Q_UOPS_MACRO_FUSED,         /* UOPS_RETIRED.MACRO_FUSED */
        SIM_Q_UOPS_RETIRED_HEAVY,       /* UOPS_RETIRED.HEAVY */
        SIM_Q_UOPS_RETIRED_MS,          /* UOPS_RETIRED.MS (spr, with MSR_PEBS_FRONTEND 0x8) */
        SIM_Q_IDQ_NOT_DELIVERED,        /* IDQ_UOPS_NOT_DELIVERED.CORE */
        SIM_Q_IDQ_NOT_DELIVERED_CYCLES_0, /* ... .CYCLES_0_UOPS_DELIV.CORE (cmask = width) */
        SIM_Q_RECOVERY_CYCLES,          /* INT_MISC.RECOVERY_CYCLES */
        SIM_Q_CLEARS_COUNT,             /* INT_MISC.CLEARS_COUNT */
        SIM_Q_UOP_DROPPING,             /* INT_MISC.UOP_DROPPING */
        SIM_Q_BR_MISP_RETIRED,          /* BR_MISP_RETIRED.ALL_BRANCHES */
        SIM_Q_MACHINE_CLEARS,           /* MACHINE_CLEARS.COUNT */
        SIM_Q_STALLS_MEM_ANY,           /* CYCLE_ACTIVITY.STALLS_MEM_ANY */
        SIM_Q_STALLS_TOTAL,             /* CYCLE_ACTIVITY.STALLS_TOTAL */
        SIM_Q_BOUND_ON_STORES,          /* EXE_ACTIVITY.BOUND_ON_STORES */
        SIM_Q_EXE_1_PORTS_UTIL,         /* EXE_ACTIVITY.1_PORTS_UTIL */
        SIM_Q_EXE_2_PORTS_UTIL,         /* EXE_ACTIVITY.2_PORTS_UTIL */
        SIM_Q_IDQ_MS_UOPS,              /* IDQ.MS_UOPS */
        SIM_Q_IDQ_MITE_UOPS,            /* IDQ.MITE_UOPS */
        SIM_Q_UOPS_DECODED_DEC0,        /* UOPS_DECODED.DEC0 */
        SIM_Q_UOPS_DECODED_DEC0_CYCLES, /* UOPS_DECODED.DEC0 with cmask 1 */
        SIM_Q_TD_BACKEND_SLOTS,         /* TOPDOWN.BACKEND_BOUND_SLOTS */
        SIM_Q_TD_BAD_SPEC_SLOTS,        /* TOPDOWN.BAD_SPEC_SLOTS */
        SIM_Q_TD_BR_MISPREDICT_SLOTS,   /* TOPDOWN.BR_MISPREDICT_SLOTS */
        SIM_Q_TD_MEMORY_BOUND_SLOTS,    /* TOPDOWN.MEMORY_BOUND_SLOTS */
        SIM_Q_E_FE_BOUND,               /* E-core TOPDOWN_FE_BOUND.ALL */
        SIM_Q_E_FE_LATENCY,             /* TOPDOWN_FE_BOUND.FRONTEND_LATENCY */
        SIM_Q_E_FE_BANDWIDTH,           /* TOPDOWN_FE_BOUND.FRONTEND_BANDWIDTH */
        SIM_Q_E_RETIRING,               /* TOPDOWN_RETIRING.ALL */
        SIM_Q_E_BAD_SPEC,               /* TOPDOWN_BAD_SPECULATION.ALL */
        SIM_Q_E_MISPREDICT,             /* TOPDOWN_BAD_SPECULATION.MISPREDICT */
        SIM_Q_E_MACHINE_CLEARS,         /* TOPDOWN_BAD_SPECULATION.MACHINE_CLEARS */
        SIM_Q_E_BE_BOUND,               /* TOPDOWN_BE_BOUND.ALL */
        SIM_Q_E_ALLOC_RESTRICTIONS,     /* TOPDOWN_BE_BOUND.ALLOC_RESTRICTIONS */
        /* AMD Zen 4 and Zen 5 (amd-topdown.md §5), perf's names */
        SIM_Q_AMD_RET_OPS,              /* ex_ret_ops */
        SIM_Q_AMD_DISPATCHED,           /* de_src_op_disp.all */
        SIM_Q_AMD_FRONTEND_SLOTS,       /* de_no_dispatch_per_slot.no_ops_from_frontend */
        SIM_Q_AMD_FRONTEND_CYCLES,      /* ... with cmask = dispatch width */
        SIM_Q_AMD_BACKEND_SLOTS,        /* de_no_dispatch_per_slot.backend_stalls */
        SIM_Q_AMD_SMT_SLOTS,            /* de_no_dispatch_per_slot.smt_contention */
        SIM_Q_AMD_RESYNCS,              /* resyncs_or_nc_redirects, bp_redirects.resync */
        SIM_Q_AMD_NOT_COMPLETE,         /* ex_no_retire.not_complete */
        SIM_Q_AMD_LOAD_NOT_COMPLETE,    /* ex_no_retire.load_not_complete */
        SIM_Q_AMD_UCODE_OPS,            /* ex_ret_ucode_ops */
        SIM_Q_BRANCHES,                 /* ex_ret_brn; BR_INST_RETIRED.ALL_BRANCHES on Sierra Forest */
        SIM_Q_TAKEN_BRANCHES,           /* ex_ret_brn_tkn */
        SIM_Q_FLOPS,                    /* fp_ret_sse_avx_ops.all */
        /* Arm Neoverse V2 (perf's arm64 common events; sbsa.json's TopDown) */
        SIM_Q_ARM_OP_RETIRED,           /* OP_RETIRED */
        SIM_Q_ARM_OP_SPEC,              /* OP_SPEC */
        SIM_Q_ARM_STALL_SLOT_FRONTEND,  /* STALL_SLOT_FRONTEND */
        SIM_Q_ARM_STALL_SLOT_BACKEND,   /* STALL_SLOT_BACKEND */
        SIM_Q_ARM_STALL_SLOT,           /* STALL_SLOT */
        SIM_Q_ARM_STALL_FRONTEND,       /* STALL_FRONTEND: cycles */
        SIM_Q_ARM_STALL_BACKEND,        /* STALL_BACKEND: cycles */
        SIM_Q_ARM_STALL,                /* STALL: cycles no operation was dispatched */
        SIM_Q_ARM_INST_SPEC,            /* INST_SPEC */
        SIM_Q_ARM_CNT_CYCLES,           /* CNT_CYCLES: the generic timer's cycles while unhalted */
        SIM_Q_ARM_L1D_CACHE,            /* L1D_CACHE, MEM_ACCESS */
        SIM_Q_ARM_L1D_CACHE_REFILL,     /* L1D_CACHE_REFILL, L2D_CACHE */
        SIM_Q_ARM_L2D_CACHE_REFILL,     /* L2D_CACHE_REFILL, L3D_CACHE */
        SIM_Q_ARM_L3D_CACHE_REFILL,     /* L3D_CACHE_REFILL */
        SIM_Q_ARM_MEM_ACCESS_RD,        /* MEM_ACCESS_RD */
        SIM_Q_ARM_MEM_ACCESS_WR,        /* MEM_ACCESS_WR */
        SIM_Q_ARM_FP_FIXED_OPS,         /* FP_FIXED_OPS_SPEC */
        SIM_Q_ARM_FP_SCALE_OPS,         /* FP_SCALE_OPS_SPEC (128-bit granules) */
        _SIM_Q_MAX,
} SimQuantity;

typedef struct SimRates {
        double thread[_SIM_Q_MAX];      /* this logical CPU */
        double core[_SIM_Q_MAX];        /* AnyThread view: the whole physical core */
        double metrics[PERF_METRICS_FIELDS];    /* PERF_METRICS fractions of SLOTS */
        double user_fraction;
        SimExtraEvent extra_events[SIM_EXTRA_EVENTS_MAX];       /* per wall-clock cycle */
        size_t n_extra_events;
} SimRates;

/* Computes the rates of a logical CPU running self whose SMT sibling runs sibling (NULL when
 * the core has no other online thread). */
void sim_rates_compute(const SimModel *m, const SimProfile *self, const SimProfile *sibling,
                       SimRates *ret);

/* Rate per wall-clock cycle of the event that evtsel selects on GP counter `counter` with
 * MSR_PEBS_FRONTEND holding pebs_frontend, before the USR/OS filter: 0 for events the model
 * does not know, and for an event whose facet pebs_frontend does not select. On ARM evtsel is
 * PMEVTYPER: the event number in bits 15:0, its filter bits ignored here (pebs_frontend 0). */
double sim_rates_event(const SimRates *r, const SimModel *m, uint64_t evtsel, unsigned counter,
                       uint64_t pebs_frontend);

/* The PERFEVTSEL encodings the model's table counts (event, umask, edge, cmask; on AMD
 * event[11:8] in bits 35:32), up to max of them into ret; returns how many there are. */
size_t sim_events_modelled(const SimModel *m, uint64_t *ret, size_t max);

/* The same encoding for an extra event of a profile (no cmask, edge or invert). */
uint64_t sim_extra_event_config(const SimModel *m, const SimExtraEvent *e);

/* Rate of fixed counter `index`; any selects the AnyThread (whole-core) count. */
double sim_rates_fixed(const SimRates *r, unsigned index, bool any);

/* Fraction of counted time a USR/OS filter lets through. */
static inline double sim_rates_ring_factor(const SimRates *r, bool usr, bool os) {
        return (usr ? r->user_fraction : 0.0) + (os ? 1.0 - r->user_fraction : 0.0);
}

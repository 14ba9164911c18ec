/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Register addresses and bit fields the simulator models (shared/reference/pmu-registers.md)
 */
#pragma once

#include <stdint.h>

#define SIM_BIT(n) (UINT64_C(1) << (n))

/* ---- Core MSRs (pmu-registers.md §2.1) */
#define MSR_IA32_TSC                    0x010U
#define MSR_IA32_PMC0                   0x0C1U  /* legacy alias: writes sign-extend bit 31 */
#define MSR_IA32_MPERF                  0x0E7U
#define MSR_IA32_APERF                  0x0E8U
#define MSR_IA32_PERFEVTSEL0            0x186U
#define MSR_OFFCORE_RSP_0               0x1A6U
#define MSR_OFFCORE_RSP_1               0x1A7U
#define MSR_IA32_FIXED_CTR0             0x309U
#define MSR_PERF_METRICS                0x329U
#define MSR_IA32_PERF_CAPABILITIES      0x345U
#define MSR_IA32_FIXED_CTR_CTRL         0x38DU
#define MSR_IA32_PERF_GLOBAL_STATUS     0x38EU
#define MSR_IA32_PERF_GLOBAL_CTRL       0x38FU
#define MSR_IA32_PERF_GLOBAL_STATUS_RESET 0x390U
#define MSR_IA32_PERF_GLOBAL_STATUS_SET 0x391U
#define MSR_IA32_PERF_GLOBAL_INUSE      0x392U
#define MSR_PEBS_FRONTEND               0x3F7U  /* on pmugated's never-list: only the simulated
                                                 * kernel (the perf layer) writes it */
#define MSR_IA32_A_PMC0                 0x4C1U  /* full-width alias (PERF_CAPABILITIES bit 13) */

/* ---- RAPL MSRs (§2.10), package scope */
#define MSR_RAPL_POWER_UNIT             0x606U
#define MSR_PKG_ENERGY_STATUS           0x611U
#define MSR_PKG_PERF_STATUS             0x613U
#define MSR_PKG_POWER_INFO              0x614U
#define MSR_DRAM_ENERGY_STATUS          0x619U
#define MSR_DRAM_PERF_STATUS            0x61BU
#define MSR_DRAM_POWER_INFO             0x61CU
#define MSR_PP0_ENERGY_STATUS           0x639U
#define MSR_PLATFORM_ENERGY_STATUS      0x64DU

/* ---- IA32_PERFEVTSELx fields (§2.4) */
#define EVTSEL_EVENT_MASK               UINT64_C(0xFF)
#define EVTSEL_UMASK_SHIFT              8
#define EVTSEL_UMASK_MASK               UINT64_C(0xFF)
#define EVTSEL_USR                      SIM_BIT(16)
#define EVTSEL_OS                       SIM_BIT(17)
#define EVTSEL_EDGE                     SIM_BIT(18)
#define EVTSEL_PC                       SIM_BIT(19)
#define EVTSEL_INT                      SIM_BIT(20)
#define EVTSEL_ANY                      SIM_BIT(21)
#define EVTSEL_EN                       SIM_BIT(22)
#define EVTSEL_INV                      SIM_BIT(23)
#define EVTSEL_CMASK_SHIFT              24
#define EVTSEL_CMASK_MASK               UINT64_C(0xFF)
#define EVTSEL_IN_TX                    SIM_BIT(32)
#define EVTSEL_IN_TXCP                  SIM_BIT(33)     /* only on PMC2 */
#define EVTSEL_ADAPTIVE                 SIM_BIT(34)     /* adaptive PEBS, Ice Lake and later */
#define EVTSEL_IN_TXCP_COUNTER          2U

/* ---- IA32_FIXED_CTR_CTRL: one 4-bit field per fixed counter (§2.5) */
#define FIXED_CTRL_FIELD_BITS           4
#define FIXED_CTRL_FIELD_MASK           UINT64_C(0xF)
#define FIXED_CTRL_OS                   UINT64_C(0x1)
#define FIXED_CTRL_USR                  UINT64_C(0x2)
#define FIXED_CTRL_ANY                  UINT64_C(0x4)
#define FIXED_CTRL_PMI                  UINT64_C(0x8)
#define FIXED_CTRL_ENABLE_MASK          (FIXED_CTRL_OS | FIXED_CTRL_USR)
#define FIXED_CTRL_ADAPTIVE_SHIFT       32      /* adaptive PEBS bit of fixed i: 32 + 4i */

/* ---- GLOBAL_CTRL / GLOBAL_STATUS layout (§2.6) */
#define GLOBAL_FIXED_SHIFT              32
#define GLOBAL_SLOTS_BIT                35      /* FIXED_CTR3 = TOPDOWN.SLOTS */
#define GLOBAL_PERF_METRICS_BIT         48      /* CTRL: EN_PERF_METRICS; STATUS: overflow */
#define GLOBAL_INUSE_PMI_BIT            63
/* Status bits other than counter overflows: 55 trace ToPA, 58 LBR frozen, 59 counters frozen,
 * 60 ASCI, 61 uncore overflow, 62 DS buffer overflow, 63 CondChgd. */
#define GLOBAL_STATUS_OTHER             (SIM_BIT(55) | SIM_BIT(58) | SIM_BIT(59) | SIM_BIT(60) | \
                                         SIM_BIT(61) | SIM_BIT(62) | SIM_BIT(63))

/* ---- IA32_PERF_CAPABILITIES (§2.3) */
#define PERF_CAP_FULL_WIDTH_WRITE       SIM_BIT(13)
#define PERF_CAP_PERF_METRICS           SIM_BIT(15)

/* ---- Fixed counter roles */
#define FIXED_INST_RETIRED              0U
#define FIXED_CLK_UNHALTED              1U
#define FIXED_REF_TSC                   2U
#define FIXED_SLOTS                     3U

/* ---- PERF_METRICS: eight 8-bit fractions (§2.8) */
#define PERF_METRICS_FIELDS             8U
#define PERF_METRICS_L1_FIELDS          4U
#define PERF_METRICS_FULL_SCALE         0xFFU   /* the four L1 bytes add up to 0xff */
#define PERF_METRICS_FIELD_BITS         8U
#define PERF_METRICS_FIELD_MASK         UINT64_C(0xFF)

/* ---- RAPL_POWER_UNIT fields (§2.10): power unit 3:0, energy status unit 12:8, time unit 19:16 */
#define RAPL_ESU_SHIFT                  8
#define RAPL_ESU_MASK                   UINT64_C(0x1F)
#define RAPL_ENERGY_COUNTER_MASK        UINT64_C(0xFFFFFFFF)    /* 32-bit, wrapping */
#define RAPL_DRAM_FIXED_ESU             16U     /* SKX/ICX DRAM unit is 2^-16 J (model_hsx) */
#define RAPL_PLATFORM_ESU               0U      /* SPR psys unit is 2^0 J (model_spr) */
#define RAPL_POWER_INFO_SPEC_MASK       UINT64_C(0x7FFF)        /* thermal spec power, bits 14:0 */

/* ---- AMD Zen 4 / Zen 5 (pmu-registers.md §3) */
#define MSR_AMD_PERF_CTL_LEGACY0        0xC0010000U     /* PERF_CTL0-3, aliases of the first four */
#define MSR_AMD_PERF_CTR_LEGACY0        0xC0010004U
#define MSR_AMD_PERF_CTL0               0xC0010200U     /* PerfEvtSel i at + 2i, PerfCtr i at + 2i + 1 */
#define MSR_AMD_L3_CTL0                 0xC0010230U
#define MSR_AMD_DF_CTL0                 0xC0010240U
#define MSR_AMD_GLOBAL_STATUS           0xC0000300U
#define MSR_AMD_GLOBAL_CTL              0xC0000301U
#define MSR_AMD_GLOBAL_STATUS_CLR       0xC0000302U
#define MSR_AMD_GLOBAL_STATUS_SET       0xC0000303U
#define MSR_AMD_MPERF_RO                0xC00000E7U
#define MSR_AMD_APERF_RO                0xC00000E8U
#define MSR_AMD_IRPERF                  0xC00000E9U
#define MSR_AMD_RAPL_POWER_UNIT         0xC0010299U
#define MSR_AMD_CORE_ENERGY_STATUS      0xC001029AU
#define MSR_AMD_PKG_ENERGY_STATUS       0xC001029BU
#define AMD_EVTSEL_EVENT_HI_SHIFT       32
#define AMD_EVTSEL_EVENT_HI_MASK        UINT64_C(0xF)
/* Bits of PerfEvtSel that exist: 0-18, INT (20), 22-35, GuestOnly (40), HostOnly (41). */
#define AMD_EVTSEL_VALID                UINT64_C(0x0000030FFFD7FFFF)
/* L3: event, umask, EN, CoreId, EnAllSlices, EnAllCores, SliceId, ThreadMask (F19h+). */
#define AMD_L3_CTL_VALID                UINT64_C(0x0307DC000040FFFF)
/* DF with PerfMonV2: event [7:0] and [13:8] at 37:32, umask [7:0] and [11:8] at 27:24, EN. */
#define AMD_DF_CTL_VALID                UINT64_C(0x0000003F0F40FFFF)
#define AMD_DF_UMASK_HI_SHIFT           24
#define AMD_DF_EVENT_HI_SHIFT           32
#define AMD_DF_EVENT_HI_MASK            UINT64_C(0x3F)
#define AMD_DF_UMASK_HI_MASK            UINT64_C(0xF)
/* Status bit 58: LBR stack frozen (LbrExtV2), beside the counters' overflow bits. */
#define AMD_GLOBAL_STATUS_LBR_FROZEN    SIM_BIT(58)

/* ---- Arm PMUv3 (Neoverse V2): system registers, not MSRs. The simulator numbers them as the
 * kernel's sys_reg(op0, op1, CRn, CRm, op2) does, so that its perf layer programs them through
 * the same register interface; the daemon serves none of them (no MSRs on ARM). */
#define ARM_SYS_REG(op0, op1, crn, crm, op2) \
        ((uint32_t) ((op0) << 19 | (op1) << 16 | (crn) << 12 | (crm) << 8 | (op2) << 5))
#define ARM_PMCR_EL0                    ARM_SYS_REG(3, 3, 9, 12, 0)
#define ARM_PMCNTENSET_EL0              ARM_SYS_REG(3, 3, 9, 12, 1)
#define ARM_PMCNTENCLR_EL0              ARM_SYS_REG(3, 3, 9, 12, 2)
#define ARM_PMCCNTR_EL0                 ARM_SYS_REG(3, 3, 9, 13, 0)
#define ARM_PMCCFILTR_EL0               ARM_SYS_REG(3, 3, 14, 15, 7)
/* PMEVCNTR<n>_EL0 and PMEVTYPER<n>_EL0: CRm 8-11 and 12-15, n = (CRm & 3) * 8 + op2. */
#define ARM_PMEVCNTR_EL0(n)             ARM_SYS_REG(3, 3, 14, 8 + (n) / 8, (n) % 8)
#define ARM_PMEVTYPER_EL0(n)            ARM_SYS_REG(3, 3, 14, 12 + (n) / 8, (n) % 8)
#define ARM_PMCR_E                      SIM_BIT(0)      /* every counter enable */
#define ARM_PMCR_LONG                   (SIM_BIT(6) | SIM_BIT(7))       /* LC, LP: 64-bit counters */
#define ARM_PMCNTEN_CYCLE               SIM_BIT(31)     /* PMCCNTR's bit in PMCNTEN{SET,CLR} */
/* PMEVTYPER and PMCCFILTR: the event (16 bits from PMUv3.1), U (do not count EL0), P (do not
 * count EL1), NSH (count EL2); other bits are RES0 or filters the simulator does not model. */
#define ARM_EVTYPER_EVENT_MASK          UINT64_C(0xFFFF)
#define ARM_EVTYPER_P                   SIM_BIT(31)
#define ARM_EVTYPER_U                   SIM_BIT(30)
#define ARM_EVTYPER_NSH                 SIM_BIT(27)
#define ARM_EVTYPER_VALID               (ARM_EVTYPER_EVENT_MASK | ARM_EVTYPER_P | ARM_EVTYPER_U | ARM_EVTYPER_NSH)
/* The common event numbers the simulator counts (Arm ARM D17.11, perf's arm64 common events). */
#define ARM_EVENT_L1D_CACHE_REFILL      0x0003U
#define ARM_EVENT_L1D_CACHE             0x0004U
#define ARM_EVENT_INST_RETIRED          0x0008U
#define ARM_EVENT_BR_MIS_PRED           0x0010U
#define ARM_EVENT_CPU_CYCLES            0x0011U
#define ARM_EVENT_BR_PRED               0x0012U
#define ARM_EVENT_MEM_ACCESS            0x0013U
#define ARM_EVENT_L2D_CACHE             0x0016U
#define ARM_EVENT_L2D_CACHE_REFILL      0x0017U
#define ARM_EVENT_INST_SPEC             0x001BU
#define ARM_EVENT_BR_RETIRED            0x0021U
#define ARM_EVENT_BR_MIS_PRED_RETIRED   0x0022U
#define ARM_EVENT_STALL_FRONTEND        0x0023U
#define ARM_EVENT_STALL_BACKEND         0x0024U
#define ARM_EVENT_L3D_CACHE_REFILL      0x002AU
#define ARM_EVENT_L3D_CACHE             0x002BU
#define ARM_EVENT_OP_RETIRED            0x003AU
#define ARM_EVENT_OP_SPEC               0x003BU
#define ARM_EVENT_STALL                 0x003CU
#define ARM_EVENT_STALL_SLOT_BACKEND    0x003DU
#define ARM_EVENT_STALL_SLOT_FRONTEND   0x003EU
#define ARM_EVENT_STALL_SLOT            0x003FU
#define ARM_EVENT_CNT_CYCLES            0x4004U
#define ARM_EVENT_MEM_ACCESS_RD         0x0066U
#define ARM_EVENT_MEM_ACCESS_WR         0x0067U
#define ARM_EVENT_FP_SCALE_OPS_SPEC     0x80C0U
#define ARM_EVENT_FP_FIXED_OPS_SPEC     0x80C1U

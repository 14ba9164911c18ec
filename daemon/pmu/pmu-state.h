/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The core PMU's registers and the Pmu's state: what pmu.c (the core counters) and pmu-uncore.c
 * (the uncore counters the kernel holds) both fill and read. Beneath both, so that neither needs
 * the other's header for it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/machine.h"
#include "pmu/allowlist.h"

typedef struct CleanTable CleanTable;

#define MSR_IA32_PMC0 0xC1U
#define MSR_IA32_A_PMC0 0x4C1U
#define MSR_IA32_PERFEVTSEL0 0x186U
#define MSR_IA32_FIXED_CTR0 0x309U
#define MSR_PERF_METRICS 0x329U
#define MSR_IA32_FIXED_CTR_CTRL 0x38DU
#define MSR_IA32_PERF_GLOBAL_STATUS 0x38EU
#define MSR_IA32_PERF_GLOBAL_CTRL 0x38FU
#define MSR_IA32_PERF_GLOBAL_STATUS_RESET 0x390U
#define MSR_IA32_PERF_GLOBAL_STATUS_SET 0x391U

/* AMD (pmu-registers.md §3): PerfEvtSel i at 0xC0010200 + 2i with its PerfCtr at + 1; L3 and
 * data-fabric pairs the same way; PerfMonV2 global registers. */
#define MSR_AMD_PERF_CTL0 0xC0010200U
#define MSR_AMD_L3_CTL0 0xC0010230U
#define MSR_AMD_DF_CTL0 0xC0010240U
#define MSR_AMD_GLOBAL_STATUS 0xC0000300U
#define MSR_AMD_GLOBAL_CTL 0xC0000301U
#define MSR_AMD_GLOBAL_STATUS_CLR 0xC0000302U
#define AMD_CORE_COUNTERS_MAX 16U
#define AMD_L3_COUNTERS_MAX 6U
#define AMD_DF_COUNTERS_MAX 64U
#define AMD_EVENT_CYCLES 0x76U          /* ls_not_halted_cyc: the NMI watchdog's event */

#define EVTSEL_ENABLE (UINT64_C(1) << 22)
#define GLOBAL_CTRL_PERF_METRICS (UINT64_C(1) << 48)
#define FIXED_SLOTS_INDEX 3U

typedef struct Pmu {
        Backend *backend;
        const Machine *machine;
        const Allowlist *allowlist;
        uint8_t *foreign_fixed;  /* per CPU: bit i = FIXED_CTRi held by another PMU user; with SLOTS (3)
                                  * goes PERF_METRICS, and bit 48 of the global registers */
        uint32_t *foreign_gp;    /* per CPU: bit i = PMCi held by another PMU user */
        const CleanTable *clean; /* the model's clean state (clean.h); NULL: none known */
        /* The kernel's uncore boxes and counters (pmu-uncore.h): per PCI unit its UncoreOwner;
         * per CPU bit i = L3 (its CCX's) or data-fabric (its package's) counter i, held by the
         * kernel, or (unknown_*) whose control could not be read and so counts as held. */
        uint8_t *unit_owner;
        uint8_t *foreign_l3, *unknown_l3;
        uint64_t *foreign_df, *unknown_df;
        bool amd;
} Pmu;

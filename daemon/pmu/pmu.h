/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the daemon knows of the core PMU's layout (Intel's architectural perfmon, AMD's PerfCtr
 * pairs with PerfMonV2): which counters another PMU user (the kernel's NMI watchdog, perf)
 * holds on each CPU, which writes would touch them, which counters a control register starts,
 * and how to put a CPU's PMU back to a clean state. It knows registers, not events.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/machine.h"
#include "pmu/allowlist.h"
#include "pmu/clean.h"
#include "pmu/pmu-uncore.h"
#include "refusal.h"

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

int pmu_new(Backend *b, const Machine *m, const Allowlist *a, Pmu **ret);
Pmu *pmu_free(Pmu *p);

/* Reads a CPU's control registers: a counter enabled by someone other than a lease holder
 * is foreign. Call only while no lease holds the CPU. */
void pmu_detect(Pmu *p, uint32_t cpu);
/* Every CPU, and the uncore (pmu_uncore_detect_all()): at start-up, while nobody leases anything. */
void pmu_detect_all(Pmu *p);

uint64_t pmu_foreign_fixed_union(const Pmu *p);
uint64_t pmu_foreign_gp_union(const Pmu *p);

/* Returns 0, or refuses with PROTO_E_BUSY when writing mask (value, for write-1 registers)
 * of reg on cpu would touch a foreign counter (op index -1: the caller knows the op). */
int pmu_write_conflict(const Pmu *p, uint32_t cpu, uint32_t reg, uint64_t mask, uint64_t value, bool action,
                       Refusal *ret_refusal);

/* The counter MSRs a write of control register reg can start: an event select's counter, or
 * for a global control register every counter (foreign ones left out). Returns how many were
 * put into ret (up to n). */
size_t pmu_counters_started_by(const Pmu *p, uint32_t cpu, uint32_t reg, uint32_t *ret, size_t n);

/* The bits of register reg on cpu that belong to foreign counters and must keep their value
 * whoever else writes the register: their fields of FIXED_CTR_CTRL, their global enables. */
uint64_t pmu_foreign_bits(const Pmu *p, uint32_t cpu, uint32_t reg);

/* The overflow status bits of cpu's counters that exist on the model and are not foreign. */
uint64_t pmu_own_status_bits(const Pmu *p, uint32_t cpu);

/* Whether another PMU user (the kernel's uncore driver) holds PCI unit unit. Such a box is never
 * cleaned or restored by the daemon. */
bool pmu_unit_foreign(const Pmu *p, uint32_t unit);

/* Stops and zeroes every counter of cpu that is not foreign and clears their overflow status.
 * Returns 0 or the first error. */
int pmu_reset_cpu(Pmu *p, uint32_t cpu);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the daemon knows of the Intel core PMU's layout: which counters another PMU user (the
 * kernel's NMI watchdog, perf) holds on each CPU, which writes would touch them, and how to put
 * a CPU's PMU back to a clean state. It knows registers, not events.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allowlist.h"
#include "backend.h"
#include "machine.h"

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
} Pmu;

int pmu_new(Backend *b, const Machine *m, const Allowlist *a, Pmu **ret);
Pmu *pmu_free(Pmu *p);

/* Reads a CPU's control registers: a counter enabled by someone other than a lease holder
 * is foreign. Call only while no lease holds the CPU. */
void pmu_detect(Pmu *p, uint32_t cpu);
void pmu_detect_all(Pmu *p);

uint64_t pmu_foreign_fixed_union(const Pmu *p);
uint64_t pmu_foreign_gp_union(const Pmu *p);

/* Returns 0, or PROTO_E_BUSY with reason when writing mask (value, for write-1 registers)
 * of reg on cpu would touch a foreign counter. */
int pmu_write_conflict(const Pmu *p, uint32_t cpu, uint32_t reg, uint64_t mask, uint64_t value, bool action,
                       char *reason, size_t reason_size);

/* Stops and zeroes every counter of cpu that is not foreign. Returns 0 or the first error. */
int pmu_reset_cpu(Pmu *p, uint32_t cpu);

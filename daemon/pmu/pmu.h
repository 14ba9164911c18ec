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
#include "pmu/pmu-state.h"
#include "refusal.h"

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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Uncore counters the kernel holds: the memory-controller boxes its uncore_imc driver programs
 * (Skylake-SP, Cascade Lake: PCI units), and the L3 and data-fabric counters its amd_uncore
 * driver enabled (Zen 4, Zen 5: MSRs). Like a core counter another PMU user holds, such a box
 * or counter is never a client's: writes to it are refused and no lease end touches it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "refusal.h"

typedef struct Pmu Pmu;

/* Who holds a PCI unit, per unit in Pmu.unit_owner. */
typedef enum UncoreOwner {
        UNCORE_OWNER_NONE,
        UNCORE_OWNER_DAEMON_EVENTS,     /* pmugated's own uncore_imc perf events count on it */
        UNCORE_OWNER_KERNEL_ENABLED,    /* a counter control was found enabled while no lease held it */
        UNCORE_OWNER_UNKNOWN,           /* a counter control could not be read: counted as held */
        _UNCORE_OWNER_MAX,
} UncoreOwner;

/* Skylake-SP and Cascade Lake IMC channel PMON in PCI config space (pmu-registers.md §6.1): the
 * four counter controls, the fixed counter's, each with EN in bit 22. */
#define IMC_PCI_VENDOR 0x8086U
#define IMC_PMON_CTL0 0xD8U
#define IMC_PMON_CTL_STRIDE 4U
#define IMC_PMON_COUNTERS 4U
#define IMC_PMON_FIXED_CTL 0xF0U
#define UNCORE_CTL_ENABLE (UINT64_C(1) << 22)

/* Allocates the per-unit and per-CPU state and marks the units whose boxes pmugated's own
 * uncore_imc events count on (the machine's package counters, opened before this). */
int pmu_uncore_init(Pmu *p);
void pmu_uncore_done(Pmu *p);

/* Marks the units again once the package counters were opened after pmu_uncore_init() (the
 * opener service is reached only after the privilege drop): a box is the kernel's for a counter
 * that is served, and read again for one that could not be opened. Call it before any lease. */
void pmu_uncore_counters_opened(Pmu *p);

/* Reads the counter controls of the L3s (CCX), data fabrics (package) and PCI units (package)
 * that cpus belong to, each once and only while no CPU sharing it is leased (leased, the CPUs
 * a lease holds, leases_held_cpus(); NULL: none is): whatever is enabled then is the
 * kernel's. Units of no package with an online CPU go with the machine's first online CPU. */
void pmu_uncore_detect(Pmu *p, const uint32_t *cpus, size_t n_cpus, const CpuSet *leased);
void pmu_uncore_detect_all(Pmu *p);

/* Whether register reg of target (a PCI unit with pci, else an MSR on CPU target) belongs to a
 * box or counter the kernel holds (or one whose control could not be read). Returns NULL when
 * it does not, else the holder in words that name the kernel's driver. The one query the batch
 * check and every clean-up step use: what it names is never written, restored or zeroed. */
const char *pmu_uncore_owner(const Pmu *p, bool pci, uint32_t target, uint32_t reg);

/* Returns 0, or refuses with PROTO_E_BUSY when writing reg of target would touch a box or
 * counter the kernel holds (op index -1: the caller knows the op). */
int pmu_uncore_write_conflict(const Pmu *p, bool pci, uint32_t target, uint32_t reg, Refusal *ret_refusal);

/* Over every CPU: bit i set where the kernel holds L3 (data-fabric) counter i, or where its
 * control could not be read, for hello. */
uint64_t pmu_uncore_l3_union(const Pmu *p);
uint64_t pmu_uncore_df_union(const Pmu *p);

/* Per-unit owner for status and hello; UNCORE_OWNER_NONE for a unit out of range. */
UncoreOwner pmu_uncore_unit_owner(const Pmu *p, uint32_t unit);

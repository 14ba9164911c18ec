/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The PMUs the simulator's perf driver shows: the core PMU's config bits, the generic
 * hardware events, and one uncore PMU per memory-controller box of the machine's
 * kernel-uncore package counters (sim-perf-pmus.c; the catalogue is sim-perf-catalog.c)
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/machine.h"
#include "pmugate-limits.h"

/* Uncore PMU types start here, as dynamic PMU types do in the kernel. */
#define SIM_PERF_UNCORE_TYPE_FIRST 32U
#define SIM_PERF_UNCORE_BOXES_MAX 16U

/* The EVTSEL bits a raw config may carry: event, umask, edge, inv, cmask; AMD adds the
 * event's high nibble at 35:32. */
#define INTEL_RAW_CONFIG_MASK UINT64_C(0xFF84FFFF)
#define AMD_RAW_CONFIG_MASK (INTEL_RAW_CONFIG_MASK | UINT64_C(0xF) << 32)

/* Grace's core PMU as the kernel's armv8_pmuv3 driver registers it: a dynamic type (below the
 * uncore ones here), raw configs of the event number alone (format "event" config:0-15). */
#define SIM_PERF_ARM_CORE_PMU "armv8_pmuv3_0"
#define SIM_PERF_ARM_CORE_TYPE 10U
#define ARM_RAW_CONFIG_MASK UINT64_C(0xFFFF)

/* The bits that hold a generic hardware event's id (PERF_COUNT_HW_*). */
#define HARDWARE_CONFIG_MASK UINT64_C(0xF)
_Static_assert(PERF_COUNT_HW_MAX - 1 <= HARDWARE_CONFIG_MASK, "generic hardware ids outgrew their mask");

/* The kernel's uncore_imc CAS events on the Intel models. */
#define IMC_EVENT_CAS 0x04U
#define IMC_UMASK_READ 0x03U
#define IMC_UMASK_WRITE 0x0cU

typedef struct SimPerfBox {
        char name[PERF_PMU_NAME_MAX];   /* "uncore_imc_<n>", the same on every package */
        uint32_t type;
        int32_t package;                /* the first package that has it */
        uint32_t cpu;                   /* that package's first online CPU */
} SimPerfBox;

/* The boxes of m's "uncore_imc_<n>/cas_count_read|write" counters, in the order m lists them,
 * with types from SIM_PERF_UNCORE_TYPE_FIRST up; at most SIM_PERF_UNCORE_BOXES_MAX. */
size_t sim_perf_find_boxes(const Machine *m, SimPerfBox *boxes);
/* The index of the counter of box's read or write CAS count on package; -ENODEV if none. */
int sim_perf_box_counter(const Machine *m, const char *box, bool write, int32_t package, uint32_t *ret);
/* Whether counters a and b belong to boxes of the same name. */
bool sim_perf_same_box(const Machine *m, uint32_t a, uint32_t b);

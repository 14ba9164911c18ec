/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clean PMU: what a CPU's core PMU and each uncore box hold when nobody holds them, per CPU
 * model, and the one path every lease end takes to get there.
 *
 * Clean means: counters stopped and zeroed, no enable, PMI or interrupt bit (EVTSEL.EN/INT/PC,
 * the fixed counters' enable and PMI fields, the uncore enables and overflow-interrupt bits), no
 * box frozen, and no overflow status bit of a counter that is not another PMU user's. Bits of a
 * counter another PMU user holds (the kernel's NMI watchdog, perf; pmu.h) are never part of it:
 * they keep whatever they hold.
 *
 * Every lease end (release, disconnect, revoke, preemption, a reload that ends leases, an
 * admin's reset) and the recovery of a crashed run's journal write a journaled register through
 * clean_restore_value(): the journal's value within the register's write mask, the clean value
 * outside it and in the enable/interrupt/freeze bits, the current value in foreign bits. Then
 * the overflow status the holder may have caused is cleared (clean_cpu_status(),
 * clean_unit_status()). A client's masked write takes the bits it may not write from the clean
 * value the same way (clean_write_value()), so a bit someone else left (an INT in an event
 * select) never ends up set beside the client's EN.
 */
#pragma once

#include <stdint.h>

#include "backend/backend.h"
#include "pmu/allowlist.h"
#include "pmu/clean-table.h"

typedef struct Pmu Pmu;
typedef struct LeaseEntry LeaseEntry;

/* The one restore of a journaled register, for a lease's end and for a crashed run's journal:
 * reads the register (not a counter, which is zeroed), writes clean_restore_value(). a is the
 * register's allowlist entry; p (NULL: none is known yet, as during recovery) gives the foreign
 * bits to keep. Returns 0 or negative errno. */
int clean_restore_entry(Backend *b, const Pmu *p, const CleanTable *t, const LeaseEntry *e, const AllowEntry *a);

/* Clears the overflow status bits of cpu's counters that are not foreign (GLOBAL_STATUS through
 * GLOBAL_STATUS_RESET; PerfCntrGlobalStatus through PerfCntrGlobalStatusClr). Returns 0 or the
 * first error. */
int clean_cpu_status(const Pmu *p, uint32_t cpu);

/* The same for an uncore box (a PCI unit); a box another PMU user holds is skipped. */
int clean_unit_status(const Pmu *p, uint32_t unit);

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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/machine.h"
#include "pmu/allowlist.h"

typedef struct Pmu Pmu;
typedef struct LeaseEntry LeaseEntry;

typedef enum CleanKind {
        CLEAN_COUNTER,          /* stopped with its control register; zeroed */
        CLEAN_CONTROL,          /* event select, enable or box control: holds value */
        CLEAN_STATUS,           /* overflow status: its bits cleared through clear_reg */
        CLEAN_ACTION,           /* a write-1 register (status clear or set): holds nothing */
        _CLEAN_KIND_MAX,
} CleanKind;

typedef struct CleanReg {
        uint32_t first, last;   /* MSR addresses, or config offsets of an uncore box */
        uint32_t stride;        /* between the registers of a range (1 for every address) */
        bool pci;
        uint8_t kind;           /* CleanKind */
        uint64_t value;         /* CLEAN_CONTROL: what it holds when nobody holds it */
        uint64_t off;           /* bits that are never left on: enable, PMI/INT, freeze; for
                                 * CLEAN_STATUS the overflow bits the clean state clears */
        uint32_t clear_reg;     /* CLEAN_STATUS: its write-1-to-clear register */
        const char *name;
} CleanReg;

typedef struct CleanTable {
        const char *models[4];  /* CpuModel keys */
        const CleanReg *regs;
        size_t n_regs;
} CleanTable;

/* The table of model (its key), or NULL for a model the daemon has no clean state for. */
const CleanTable *clean_table_for(const CpuModel *model);

/* Every table, for tests and documentation. */
const CleanTable *clean_tables(size_t *ret_n);

const CleanReg *clean_find(const CleanTable *t, uint32_t reg, bool pci);

const char *clean_kind_to_string(CleanKind k);

/* What a restore writes into a register allowlist entry e describes (c its clean entry, NULL
 * when the table has none): a counter is zeroed; anything else gets original within e's write
 * mask and the clean value outside it and in c's enable/interrupt/freeze bits. keep bits (a
 * foreign counter's, pmu_foreign_bits()) keep their current value. Without a clean entry the
 * bits outside the write mask keep their current value. */
uint64_t clean_restore_value(const AllowEntry *e, const CleanReg *c, uint64_t current, uint64_t original,
                             uint64_t keep);

/* What a client's masked write puts into the register: value within mask (already limited to
 * e's write mask), the current value in the rest of the write mask and in keep, the clean value
 * in every bit the client may not write. Without a clean entry those keep their current value. */
uint64_t clean_write_value(const AllowEntry *e, const CleanReg *c, uint64_t current, uint64_t value,
                           uint64_t mask, uint64_t keep);

/* Whether clean_write_value() needs the register's current value. */
bool clean_write_needs_current(const AllowEntry *e, const CleanReg *c, uint64_t mask, uint64_t keep);

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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clean PMU's tables, per CPU model, and the values a restore and a client's masked write
 * put into a register so that it keeps to them (clean.h tells what clean means). Below the
 * Pmu: it knows registers and their clean values, not who holds them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/machine.h"
#include "pmu/allowlist.h"

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

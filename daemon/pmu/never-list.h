/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The built-in never-list: MSRs no allowlist can open, whatever a data file says, checked at
 * every request before the allowlist; and the PCI configuration header, which no allowlist
 * can make writable. docs/ALLOWLISTS.md gives the reason for every entry.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef enum NeverKind {
        NEVER_ACCESS,   /* neither read nor written, whatever an allowlist says */
        NEVER_WRITE,    /* read where an allowlist lists it, never written */
} NeverKind;

typedef struct NeverEntry {
        uint32_t first, last;
        const char *name;
        NeverKind kind;
} NeverEntry;

/* Returns the register's name when the never-list forbids the access (write: a write, else a
 * read), or NULL. Most entries forbid both; a few (the TSC, for one) forbid only writes, and
 * are read where an allowlist lists them. */
const char *never_list_lookup(uint32_t msr, bool write);

/* The first entry within first-last that forbids what an allowlist entry there allows: any
 * read, and with writable a write. NULL when there is none. */
const NeverEntry *never_list_overlap(uint32_t first, uint32_t last, bool writable);

/* PCI configuration offsets below this are the header the kernel's PCI core owns: never
 * written, whatever an allowlist says (reads follow the allowlist). */
#define PCI_CONFIG_HEADER_END 0x40U

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One journaled register: what a lease's journal (leases.h), its file (journal.h) and the one
 * restore (clean.h) all speak of. On its own so that each of them can name it without the
 * others.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct LeaseEntry {
        uint32_t target;        /* CPU, or PCI unit */
        uint32_t reg;
        uint64_t original;
        uint8_t width;
        uint8_t flags;          /* AllowFlags of the register */
        uint8_t scope;          /* RegScope: who shares the register (PCI units: their package) */
        bool pci;
} LeaseEntry;

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Register allowlists: per CPU model data files (policy/allowlists/MODEL.conf, format in
 * docs/ALLOWLISTS.md) that name every register a client may touch, with a write mask, a scope
 * and a class. Anything not listed is refused; the built-in never-list wins over any file.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/machine.h"

#include "pmu/energy-list.h"
#include "pmu/never-list.h"


/* Optional trailing tokens of an entry. */
typedef enum AllowFlags {
        ALLOW_FLAG_COUNTER = 1 << 0, /* "counter": zeroed, not restored, when a lease ends */
        ALLOW_FLAG_ACTION = 1 << 1,  /* "action": write-1 semantics (STATUS_RESET/SET): written as
                                      * value & mask with no read first, never restored */
        ALLOW_FLAG_NEVER = 1 << 2,   /* set by the parser: the range overlaps the never-list (or,
                                      * writable, the PCI configuration header), so requests
                                      * inside it must consult the never-list */
        ALLOW_FLAG_ENERGY = 1 << 3,  /* set by the parser: the range holds a register of the
                                      * built-in energy list, so reads inside it must consult it */
} AllowFlags;

#define ALLOW_CLASS_MAX 16
#define ALLOW_NAME_MAX 40

typedef struct AllowEntry {
        uint32_t first, last;   /* MSR addresses, or config offsets, inclusive */
        uint64_t write_mask;    /* 0: read-only */
        uint16_t pci_vendor;    /* PCI entries only */
        uint16_t pci_device;
        uint8_t width;          /* bytes per access: 8 for MSRs; 4 or 8 for PCI */
        uint8_t scope;          /* RegScope */
        bool pci;
        uint8_t flags;          /* AllowFlags */
        char cls[ALLOW_CLASS_MAX];
        char name[ALLOW_NAME_MAX];
} AllowEntry;

typedef struct Allowlist {
        char path[256];
        char models[8][16];     /* model keys this file serves */
        unsigned n_models;
        AllowEntry *msr;        /* sorted by first address, non-overlapping */
        size_t n_msr;
        AllowEntry *pci;        /* sorted by (vendor, device, first), non-overlapping */
        size_t n_pci;
} Allowlist;

Allowlist *allowlist_free(Allowlist *a);

/* An allowlist of no register for model_key: a machine without MSRs (ARM), whose counters the
 * perf path serves alone. -EINVAL for a key longer than the models' field, -ENOMEM. */
int allowlist_new_empty(const char *model_key, Allowlist **ret);

/* Parses one file. On a syntax error returns -EINVAL and, when ret_line is given, the
 * offending line number and a reason. */
int allowlist_parse_file(const char *path, Allowlist **ret, unsigned *ret_line, char *ret_reason,
                         size_t reason_size);
/* The same for an open stream (the fuzz target feeds it memory); path names it in messages and
 * in the result. */
int allowlist_parse_stream(FILE *f, const char *path, Allowlist **ret, unsigned *ret_line, char *ret_reason,
                           size_t reason_size);

/* Loads the file in dir that names model_key on its "models" line. Logs and returns -ENOENT
 * when no file does, and -ENOTUNIQ when two files name the same model (any model). */
int allowlist_load_for_model(const char *dir, const char *model_key, Allowlist **ret);

const AllowEntry *allowlist_find_msr(const Allowlist *a, uint32_t reg);
const AllowEntry *allowlist_find_pci(const Allowlist *a, uint16_t vendor, uint16_t device, uint32_t offset);

/* Register name for display: the entry's name, with the index appended for ranges
 * (IA32_PERFEVTSEL + 0x188 -> "IA32_PERFEVTSEL2"). */
void allow_entry_register_name(const AllowEntry *e, uint32_t reg, char *buf, size_t size);

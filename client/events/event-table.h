/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate's own event table: the events its TopDown recipes use, per CPU model, with the
 * counter constraints libpfm4 does not describe
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Models an entry applies to. */
#define EVENT_MODEL_SKL (1U << 0)       /* Skylake-SP and Cascade Lake */
#define EVENT_MODEL_ICX (1U << 1)       /* Ice Lake-SP */
#define EVENT_MODEL_SPR (1U << 2)       /* Sapphire Rapids */
#define EVENT_MODEL_ALL (EVENT_MODEL_SKL | EVENT_MODEL_ICX | EVENT_MODEL_SPR)
#define EVENT_MODEL_ZEN4 (1U << 3)      /* AMD Zen 4 */
#define EVENT_MODEL_ZEN5 (1U << 4)      /* AMD Zen 5 */
#define EVENT_MODEL_AMD (EVENT_MODEL_ZEN4 | EVENT_MODEL_ZEN5)
#define EVENT_MODEL_GNR (1U << 5)       /* Granite Rapids' events beyond Sapphire Rapids' list */
#define EVENT_MODEL_SRF (1U << 6)       /* Sierra Forest (E-cores) */
#define EVENT_MODEL_GRACE (1U << 7)     /* NVIDIA Grace (Arm Neoverse V2): PMUv3 event numbers */

/* An Arm PMUv3 event's config: its 16-bit event number, nothing else (the kernel's "event"
 * format, config:0-15). */
#define EVENT_CONFIG_MASK_ARM UINT64_C(0xFFFF)
/* Arm's cycle counter (PMCCNTR_EL0), the one fixed counter hello reports there: the kernel puts
 * CPU_CYCLES on it while it is free, so six more events fit the six event counters. */
#define FIXED_ARM_CYCLE_COUNTER 0

typedef struct EventTableEntry {
        const char *name;
        unsigned models;
        uint64_t config;        /* on a GP counter; ignored where gp_ok is false */
        int8_t fixed;           /* fixed counter, or -1 */
        bool gp_ok;
        uint32_t gp_mask;
        int8_t metrics_field;   /* PERF_METRICS byte, or -1 */
        uint32_t frontend;      /* MSR_PEBS_FRONTEND value the event needs, or 0 (EventDesc) */
} EventTableEntry;

/* The EVENT_MODEL_* bits of a model key ("skx", "clx", "icx", "spr", "emr", "gnr", "srf", "zen4",
 * "zen5", "grace"), or 0: Emerald Rapids has Sapphire Rapids' bit, Granite Rapids that and its own. */
unsigned event_table_model(const char *model);

/* The entry named name (case-insensitive) for a model, or NULL. */
const EventTableEntry *event_table_lookup(const char *model, const char *name);

/* Every entry, for tests that compare the table with libpfm4. */
const EventTableEntry *event_table_entries(size_t *ret_n);

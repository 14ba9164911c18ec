/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events: a name (Intel's spelling, e.g. "UOPS_ISSUED.ANY") resolved to a counter encoding
 * and the counters that may count it, for one CPU model
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events/event-models.h"
#include "events/evtsel.h"

typedef enum EventKind {
        EVENT_COUNTER,          /* a GP counter, or a fixed one where the event has one */
        EVENT_PERF_METRICS,     /* a PERF_METRICS byte scaled by SLOTS: the topdown-* counts */
        EVENT_SOFTWARE,         /* one of the kernel's software events (config: its
                                 * PERF_COUNT_SW_* number): counted only through perf */
} EventKind;

typedef enum EventSource {
        EVENT_SOURCE_TABLE,     /* pmugate's table of the events its recipes use */
        EVENT_SOURCE_LIBPFM,    /* libpfm4's event list for the model */
        EVENT_SOURCE_RAW,       /* rHEX given by the user */
} EventSource;

typedef struct EventDesc {
        char name[EVENT_NAME_MAX];      /* as given, e.g. "UOPS_DECODED.DEC0:c=1" */
        EventKind kind;
        EventSource source;
        int fixed;                      /* fixed counter that counts it, or -1 */
        bool gp_ok;                     /* config can also run on a GP counter */
        uint64_t config;                /* EVTSEL bits within EVENT_CONFIG_MASK */
        uint32_t gp_mask;               /* GP counters it may run on (bit n = PMCn) */
        bool usr, os;                   /* rings counted */
        unsigned metrics_field;         /* PERF_METRICS byte, for EVENT_PERF_METRICS */
        uint32_t frontend;              /* MSR_PEBS_FRONTEND value it needs (perf's frontend=,
                                         * config1), or 0: only the perf path can count it, since
                                         * pmugated never writes that register */
        bool pinned;                    /* keep on a GP counter in every event set when sets take turns */
        unsigned needed_by;             /* reported metrics that use it: when sets take turns, the
                                         * most needed go into the first set */
} EventDesc;

/* Resolves text: NAME[:MOD...] where NAME is an event name the model knows (Intel's names, or
 * perf's for AMD; pmugate's table, then libpfm4 when it has the model's PMU active), a topdown-*
 * PERF_METRICS count, one of perf's generic names (instructions, cycles, cpu-cycles, ref-cycles,
 * branches, branch-instructions, branch-misses), or rHEX (event | umask << 8 | edge << 18 |
 * inv << 23 | cmask << 24, and on AMD event[11:8] << 32); MOD is c=N (cmask), e (edge),
 * i (invert), u (user only) or k (kernel only). Names and modifiers are case-insensitive;
 * ret->name is the one spelling of the event (the table's, libpfm4's in upper case, perf's
 * generic names as the model's name), modifiers in lower case. An unknown name's reason suggests
 * the closest known ones. model is a key such as "spr" or "zen4" (machine.c lists them).
 * Returns -ENOENT for an unknown name, -EINVAL for bad modifiers, -EOPNOTSUPP for an event
 * pmugate cannot program (AnyThread, extra registers), each with a reason. */
int event_resolve(const char *model, const char *text, EventDesc *ret, char *reterr_reason, size_t reason_size);

/* Resolves one of the kernel's software events by perf's name (task-clock, cpu-clock,
 * page-faults or faults, context-switches or cs, cpu-migrations or migrations, minor-faults,
 * major-faults; any case, no modifiers): they need no PMU and no CPU model. Returns 0, or
 * -ENOENT for any other name. */
int event_resolve_software(const char *text, EventDesc *ret);

/* The name a formula uses for an event: characters other than letters, digits, '_' and '.'
 * become '_' ("topdown-retiring" -> "topdown_retiring"). Returns -ENOBUFS when it does not fit. */
int event_variable_name(const char *event, char *buf, size_t size);

/* Whether pmugate's table or libpfm4 can resolve names for the model. */
bool event_model_known(const char *model);


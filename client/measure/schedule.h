/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counter assignment: events onto fixed counters, GP counters (respecting the counters each
 * event may use and those another PMU user holds) and PERF_METRICS, with event sets that take
 * turns on the GP counters when there are more events than counters
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"
#include <stdint.h>

#include "events/events.h"

/* Event sets one measurement may rotate through, and events it may hold: TopDown level 4 has
 * about 100 events, 14 sets of 8 counters on Sapphire Rapids, and more where another PMU user
 * holds counters. */
#define SCHEDULE_SETS_MAX 32U
#define SCHEDULE_EVENTS_MAX 128U

typedef struct ScheduleLimits {
        unsigned gp_counters;           /* per logical CPU */
        unsigned fixed_counters;
        uint64_t foreign_gp_mask;       /* held by another PMU user: never used */
        uint64_t foreign_fixed_mask;
        unsigned perf_metrics;          /* 0 none, 1 level-1 bytes, 2 all eight */
} ScheduleLimits;

typedef enum PlacementKind {
        PLACE_FIXED,
        PLACE_GP,
        PLACE_PERF_METRICS,
        PLACE_SOFTWARE,         /* a software event: no counter, the kernel counts it */
} PlacementKind;

typedef struct Placement {
        PlacementKind kind;
        unsigned counter;       /* fixed counter, GP counter or PERF_METRICS byte */
        unsigned set;           /* GP: the event set it belongs to */
        bool pinned;            /* GP: in every set, on set_counter[set] */
        int8_t set_counter[SCHEDULE_SETS_MAX];
} Placement;

typedef struct Schedule {
        Placement *placements;  /* one per event, in the order given */
        size_t n_events;
        unsigned n_sets;        /* GP event sets; more than 1 means multiplexing */
        int set_counters[SCHEDULE_SETS_MAX][GP_COUNTERS_MAX];  /* event on each GP counter, or -1 */
        uint32_t gp_used;       /* GP counters any set uses */
        uint32_t fixed_used;    /* fixed counters programmed, SLOTS and the time base included */
        bool perf_metrics;      /* PERF_METRICS (and so SLOTS on fixed counter 3) in use */
        int timebase_fixed;     /* always-running fixed counter that times each CPU's counting, or -1 */
} Schedule;

/* Places events (already resolved). Events with a fixed counter take it when it exists, is
 * free and is not foreign, else their GP encoding; GP events fill sets first-fit, each set
 * checked by bipartite matching against the counters every event may use. Pinned GP events
 * (EventDesc.pinned) come first and are in every set, when they fit one set with a counter to
 * spare; otherwise they take turns like the others. An always-running
 * fixed counter (REF_TSC, else CLK_UNHALTED, else SLOTS) is added as the time base if one is
 * free: it times the sets when multiplexing, and each CPU's counting window. Returns -EBUSY or -EOPNOTSUPP with a reason when an
 * event cannot be counted at all, -E2BIG past the limits above. */
int schedule_build(const EventDesc *events, size_t n_events, const ScheduleLimits *limits, Schedule **ret,
                   char *reterr_reason, size_t reason_size);

Schedule *schedule_free(Schedule *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Schedule *, schedule_free);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counter assignment and multiplexing plan
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reason.h"
#include "macro.h"
#include "measure/schedule.h"

/* Always-running fixed counters that can time the sets, best first: REF_TSC ticks at a
 * constant rate while the CPU is unhalted, which is when events count. */
static const unsigned timebase_candidates[] = { FIXED_REF_TSC, FIXED_CLK_UNHALTED, FIXED_SLOTS };

typedef struct Matcher {
        const uint32_t *masks;          /* allowed counters of each event in the set */
        size_t n;
        uint32_t available;
        int owner[GP_COUNTERS_MAX];     /* event index on each counter, or -1 */
        bool visited[GP_COUNTERS_MAX];
} Matcher;

Schedule *schedule_free(Schedule *s) {
        if (!s)
                return NULL;
        free(s->placements);
        free(s);
        return NULL;
}

/* Kuhn's augmenting path: can event e take a counter, moving others along? */
static bool match_event(Matcher *m, size_t e) {
        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++) {
                if (!(m->masks[e] & m->available & (UINT32_C(1) << c)) || m->visited[c])
                        continue;
                m->visited[c] = true;
                if (m->owner[c] < 0 || match_event(m, (size_t) m->owner[c])) {
                        m->owner[c] = (int) e;
                        return true;
                }
        }
        return false;
}

/* Assigns every event of a set to a counter; fills owner[] (indexes into masks). */
static bool match_set(const uint32_t *masks, size_t n, uint32_t available, int owner[GP_COUNTERS_MAX]) {
        Matcher m = { .masks = masks, .n = n, .available = available };

        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++)
                m.owner[c] = -1;
        for (size_t e = 0; e < n; e++) {
                memset(m.visited, 0, sizeof(m.visited));
                if (!match_event(&m, e))
                        return false;
        }
        memcpy(owner, m.owner, sizeof(m.owner));
        return true;
}

static int place_fixed(const EventDesc *d, size_t i, const ScheduleLimits *limits, Schedule *s,
                       char *reterr_reason, size_t reason_size) {
        unsigned f = (unsigned) d->fixed;
        bool exists = f < limits->fixed_counters, foreign = limits->foreign_fixed_mask & (UINT64_C(1) << f);

        if (exists && !foreign && !(s->fixed_used & (UINT32_C(1) << f))) {
                s->placements[i] = (Placement) { .kind = PLACE_FIXED, .counter = f };
                s->fixed_used |= UINT32_C(1) << f;
                return 0;
        }
        if (d->gp_ok)
                return 0;
        if (!exists)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "%s needs fixed counter %u, which this CPU does not have", d->name, f);
        if (foreign)
                return reason_fail(reterr_reason, reason_size, -EBUSY,
                                   "%s needs fixed counter %u, which another PMU user (the kernel) holds", d->name, f);
        return reason_fail(reterr_reason, reason_size, -EBUSY, "%s is listed twice and has no GP encoding", d->name);
}

static int place_perf_metrics(const EventDesc *d, size_t i, const ScheduleLimits *limits, Schedule *s,
                              char *reterr_reason, size_t reason_size) {
        unsigned level = d->metrics_field < PERF_METRICS_L1_FIELDS ? 1 : 2;

        if (limits->perf_metrics < level)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "%s needs PERF_METRICS level %u; the daemon reports level %u", d->name, level,
                                   limits->perf_metrics);
        if (limits->fixed_counters <= FIXED_SLOTS)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "%s needs fixed counter 3 (TOPDOWN.SLOTS), which this CPU does not have", d->name);
        if (limits->foreign_fixed_mask & (UINT64_C(1) << FIXED_SLOTS))
                return reason_fail(reterr_reason, reason_size, -EBUSY,
                                   "%s needs fixed counter 3 (TOPDOWN.SLOTS), which another PMU user holds", d->name);
        s->placements[i] = (Placement) { .kind = PLACE_PERF_METRICS, .counter = d->metrics_field };
        s->perf_metrics = true;
        return 0;
}

/* The GP event sets being filled; the pinned events seed every set. */
typedef struct SetBuilder {
        uint32_t masks[SCHEDULE_SETS_MAX][GP_COUNTERS_MAX];
        size_t members[SCHEDULE_SETS_MAX][GP_COUNTERS_MAX];
        size_t sizes[SCHEDULE_SETS_MAX];
        size_t n_pinned;        /* the first n_pinned members of every set */
} SetBuilder;

static void seed_set(SetBuilder *b, unsigned set) {
        if (set == 0)
                return;
        memcpy(b->masks[set], b->masks[0], b->n_pinned * sizeof(uint32_t));
        memcpy(b->members[set], b->members[0], b->n_pinned * sizeof(size_t));
        b->sizes[set] = b->n_pinned;
}

static int place_gp(const EventDesc *events, size_t i, uint32_t available, Schedule *s, SetBuilder *b,
                    char *reterr_reason, size_t reason_size) {
        uint32_t mask = events[i].gp_mask & available;
        int owner[GP_COUNTERS_MAX];

        if (mask == 0)
                return reason_fail(reterr_reason, reason_size, -EBUSY,
                                   "%s can only run on GP counters 0x%x, and none of them is free of other PMU users",
                                   events[i].name, events[i].gp_mask);
        for (unsigned set = 0; set <= s->n_sets && set < SCHEDULE_SETS_MAX; set++) {
                size_t n;

                if (set == s->n_sets)
                        seed_set(b, set);
                n = b->sizes[set];
                if (n >= GP_COUNTERS_MAX)
                        continue;
                b->masks[set][n] = mask;
                if (!match_set(b->masks[set], n + 1, available, owner))
                        continue;
                b->members[set][n] = i;
                b->sizes[set] = n + 1;
                if (set == s->n_sets)
                        s->n_sets++;
                for (unsigned c = 0; c < GP_COUNTERS_MAX; c++)
                        s->set_counters[set][c] = owner[c] < 0 ? -1 : (int) b->members[set][owner[c]];
                return 0;
        }
        return reason_fail(reterr_reason, reason_size, -E2BIG, "more than %u event sets would be needed to count %s",
                           SCHEDULE_SETS_MAX, events[i].name);
}

/* Puts the pinned GP events in set 0, where every later set starts from, when they fit one set
 * and leave a counter for the rest; returns whether they did. */
static bool place_pinned(const EventDesc *events, size_t n_events, uint32_t available, Schedule *s,
                         SetBuilder *b) {
        int owner[GP_COUNTERS_MAX];
        size_t n = 0;

        for (size_t i = 0; i < n_events; i++) {
                if (s->placements[i].kind != PLACE_GP || !events[i].pinned)
                        continue;
                if (n + 1 >= (size_t) __builtin_popcount(available) || (events[i].gp_mask & available) == 0)
                        return false;
                b->masks[0][n] = events[i].gp_mask & available;
                b->members[0][n++] = i;
        }
        if (n == 0 || !match_set(b->masks[0], n, available, owner))
                return false;
        b->sizes[0] = b->n_pinned = n;
        s->n_sets = 1;
        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++)
                s->set_counters[0][c] = owner[c] < 0 ? -1 : (int) b->members[0][owner[c]];
        for (size_t k = 0; k < n; k++)
                s->placements[b->members[0][k]].pinned = true;
        return true;
}

static void pick_timebase(const ScheduleLimits *limits, Schedule *s) {
        s->timebase_fixed = -1;
        for (size_t k = 0; k < ELEMENTSOF(timebase_candidates); k++) {
                unsigned f = timebase_candidates[k];

                if (f >= limits->fixed_counters || (limits->foreign_fixed_mask & (UINT64_C(1) << f)))
                        continue;
                /* SLOTS is reset with PERF_METRICS, but the measurement reads it first */
                s->timebase_fixed = (int) f;
                s->fixed_used |= UINT32_C(1) << f;
                return;
        }
}

/* The order GP events fill the sets in: those more metrics need first, else as given. A run
 * shorter than one rotation counts the first set only, so the metrics that need only its
 * events still have values (a TopDown base every node divides by, say). */
static void order_by_need(const EventDesc *events, size_t n_events, size_t *order) {
        for (size_t k = 0; k < n_events; k++) {
                size_t j = k;

                while (j > 0 && events[order[j - 1]].needed_by < events[k].needed_by) {
                        order[j] = order[j - 1];
                        j--;
                }
                order[j] = k;
        }
}

int schedule_build(const EventDesc *events, size_t n_events, const ScheduleLimits *limits, Schedule **ret,
                   char *reterr_reason, size_t reason_size) {
        _cleanup_(schedule_freep) Schedule *s = NULL;
        _cleanup_free_ SetBuilder *b = calloc(1, sizeof(SetBuilder));
        size_t order[SCHEDULE_EVENTS_MAX];
        uint32_t available;
        bool pinned;
        int r;

        if (!events || !limits || !ret)
                return -EINVAL;
        if (n_events == 0 || n_events > SCHEDULE_EVENTS_MAX)
                return reason_fail(reterr_reason, reason_size, -E2BIG, "a measurement holds 1 to %u events",
                                   SCHEDULE_EVENTS_MAX);
        s = calloc(1, sizeof(*s));
        if (!s || !b)
                return -ENOMEM;
        s->placements = calloc(n_events, sizeof(Placement));
        if (!s->placements)
                return -ENOMEM;
        s->n_events = n_events;
        for (unsigned set = 0; set < SCHEDULE_SETS_MAX; set++)
                for (unsigned c = 0; c < GP_COUNTERS_MAX; c++)
                        s->set_counters[set][c] = -1;
        available = (limits->gp_counters >= GP_COUNTERS_MAX ? GP_MASK_ALL : (UINT32_C(1) << limits->gp_counters) - 1) &
                    ~(uint32_t) limits->foreign_gp_mask;

        /* Fixed counters and PERF_METRICS first, so an event that loses its fixed counter can
         * still go to a GP counter below. */
        for (size_t i = 0; i < n_events; i++) {
                s->placements[i].kind = PLACE_GP;
                if (events[i].kind == EVENT_SOFTWARE) {
                        s->placements[i].kind = PLACE_SOFTWARE;
                        r = 0;
                } else if (events[i].kind == EVENT_PERF_METRICS)
                        r = place_perf_metrics(&events[i], i, limits, s, reterr_reason, reason_size);
                else if (events[i].fixed >= 0)
                        r = place_fixed(&events[i], i, limits, s, reterr_reason, reason_size);
                else
                        r = 0;
                if (r < 0)
                        return r;
        }
        if (s->perf_metrics)
                s->fixed_used |= UINT32_C(1) << FIXED_SLOTS;

        pinned = place_pinned(events, n_events, available, s, b);
        order_by_need(events, n_events, order);
        for (size_t k = 0; k < n_events; k++) {
                size_t i = order[k];

                if (s->placements[i].kind != PLACE_GP || s->placements[i].pinned)
                        continue;
                r = place_gp(events, i, available, s, b, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n_events; i++)
                memset(s->placements[i].set_counter, -1, sizeof(s->placements[i].set_counter));
        for (unsigned set = 0; set < s->n_sets; set++)
                for (unsigned c = 0; c < GP_COUNTERS_MAX; c++) {
                        int e = s->set_counters[set][c];

                        if (e < 0)
                                continue;
                        if (pinned && s->placements[e].pinned) {
                                if (set == 0)
                                        s->placements[e].counter = c;
                                s->placements[e].set_counter[set] = (int8_t) c;
                        } else
                                s->placements[e] = (Placement) { .kind = PLACE_GP, .counter = c,
                                                                .set = set };
                        s->gp_used |= UINT32_C(1) << c;
                }
        pick_timebase(limits, s);
        *ret = TAKE_PTR(s);
        return 0;
}

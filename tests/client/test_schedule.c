/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: counter assignment, constraints and multiplexing sets
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/schedule.h"

static EventDesc gp(const char *name, uint32_t mask) {
        EventDesc d = { .kind = EVENT_COUNTER, .fixed = -1, .gp_ok = true, .gp_mask = mask, .usr = true, .os = true };

        strncpy(d.name, name, sizeof(d.name) - 1);
        return d;
}

static EventDesc fixed(const char *name, int counter, bool gp_ok) {
        EventDesc d = gp(name, GP_MASK_ALL);

        d.fixed = counter;
        d.gp_ok = gp_ok;
        return d;
}

static EventDesc metrics(const char *name, unsigned field) {
        EventDesc d = fixed(name, FIXED_SLOTS, false);

        d.kind = EVENT_PERF_METRICS;
        d.metrics_field = field;
        return d;
}

static const ScheduleLimits icx = { .gp_counters = 8, .fixed_counters = 4, .perf_metrics = 1 };
static const ScheduleLimits spr = { .gp_counters = 8, .fixed_counters = 4, .perf_metrics = 2 };
static const ScheduleLimits skx_smt = { .gp_counters = 4, .fixed_counters = 3 };
static const ScheduleLimits skx_two_free = { .gp_counters = 4, .fixed_counters = 3, .foreign_gp_mask = 0x3 };

/* Every GP event is in exactly one set, on a counter it may use, alone on it in its set. */
static void check_consistent(const Schedule *s, const EventDesc *events, size_t n, uint32_t available) {
        for (size_t i = 0; i < n; i++) {
                const Placement *p = &s->placements[i];

                if (p->kind != PLACE_GP)
                        continue;
                assert_true(p->set < s->n_sets);
                assert_true(events[i].gp_mask & available & (1U << p->counter));
                assert_int_equal(s->set_counters[p->set][p->counter], (int) i);
        }
}

static void test_fixed_and_gp(void **state) {
        EventDesc ev[] = {
                fixed("INST_RETIRED.ANY", 0, true), fixed("CPU_CLK_UNHALTED.THREAD", 1, true),
                gp("UOPS_ISSUED.ANY", GP_MASK_ALL), gp("UOPS_RETIRED.RETIRE_SLOTS", GP_MASK_ALL),
        };
        Schedule *s = NULL;

        (void) state;
        assert_int_equal(schedule_build(ev, 4, &skx_smt, &s, NULL, 0), 0);
        assert_int_equal(s->placements[0].kind, PLACE_FIXED);
        assert_int_equal(s->placements[0].counter, 0);
        assert_int_equal(s->placements[1].kind, PLACE_FIXED);
        assert_int_equal(s->placements[1].counter, 1);
        assert_int_equal(s->n_sets, 1);
        /* REF_TSC joins as the time base */
        assert_int_equal(s->fixed_used, 0x7);
        assert_int_equal(s->gp_used, 0x3);
        assert_int_equal(s->timebase_fixed, FIXED_REF_TSC);
        check_consistent(s, ev, 4, 0xF);
        schedule_free(s);
}

static void test_foreign_fixed(void **state) {
        /* the NMI watchdog holds fixed counter 1: cycles go to a GP counter */
        ScheduleLimits watchdog = skx_smt;
        EventDesc ev[] = { fixed("CPU_CLK_UNHALTED.THREAD", 1, true), fixed("CPU_CLK_UNHALTED.REF_TSC", 2, false) };
        char reason[256];
        Schedule *s = NULL;

        (void) state;
        watchdog.foreign_fixed_mask = 1U << 1;
        assert_int_equal(schedule_build(ev, 2, &watchdog, &s, reason, sizeof(reason)), 0);
        assert_int_equal(s->placements[0].kind, PLACE_GP);
        assert_int_equal(s->placements[1].kind, PLACE_FIXED);
        assert_false(s->fixed_used & (1U << 1));
        s = schedule_free(s);

        /* an event only a foreign fixed counter counts cannot run */
        watchdog.foreign_fixed_mask = 1U << 2;
        assert_int_equal(schedule_build(ev, 2, &watchdog, &s, reason, sizeof(reason)), -EBUSY);
        assert_non_null(strstr(reason, "CPU_CLK_UNHALTED.REF_TSC"));
        assert_null(s);
}

static void test_foreign_gp_and_restrictions(void **state) {
        ScheduleLimits limits = spr;
        EventDesc ev[] = {
                gp("TOPDOWN.BAD_SPEC_SLOTS", 0x01), gp("TOPDOWN.BR_MISPREDICT_SLOTS", 0x01),
                gp("A", GP_MASK_ALL), gp("B", 0x03),
        };
        char reason[256];
        Schedule *s = NULL;

        (void) state;
        /* two PMC0-only events cannot share a set */
        assert_int_equal(schedule_build(ev, 4, &limits, &s, reason, sizeof(reason)), 0);
        assert_int_equal(s->n_sets, 2);
        assert_int_equal(s->placements[0].counter, 0);
        assert_int_equal(s->placements[1].counter, 0);
        assert_int_not_equal(s->placements[0].set, s->placements[1].set);
        check_consistent(s, ev, 4, 0xFF);
        /* the time base: REF_TSC */
        assert_int_equal(s->timebase_fixed, FIXED_REF_TSC);
        assert_true(s->fixed_used & (1U << FIXED_REF_TSC));
        s = schedule_free(s);

        /* B moves aside for the PMC0-only event (matching, not first fit on counters) */
        {
                EventDesc ev2[] = { gp("B", 0x03), gp("TOPDOWN.BAD_SPEC_SLOTS", 0x01) };

                assert_int_equal(schedule_build(ev2, 2, &limits, &s, reason, sizeof(reason)), 0);
                assert_int_equal(s->n_sets, 1);
                assert_int_equal(s->placements[0].counter, 1);
                assert_int_equal(s->placements[1].counter, 0);
                check_consistent(s, ev2, 2, 0xFF);
                s = schedule_free(s);
        }

        /* the kernel holds PMC0: the PMC0-only events cannot be counted */
        limits.foreign_gp_mask = 0x01;
        assert_int_equal(schedule_build(ev, 4, &limits, &s, reason, sizeof(reason)), -EBUSY);
        assert_non_null(strstr(reason, "TOPDOWN.BAD_SPEC_SLOTS"));
        /* others avoid it */
        assert_int_equal(schedule_build(ev + 2, 2, &limits, &s, reason, sizeof(reason)), 0);
        assert_false(s->gp_used & 0x01);
        check_consistent(s, ev + 2, 2, 0xFE);
        schedule_free(s);
}

static void test_multiplexing(void **state) {
        EventDesc ev[20];
        char names[20][8];
        Schedule *s = NULL;
        size_t per_set[SCHEDULE_SETS_MAX] = {};

        (void) state;
        for (size_t i = 0; i < 20; i++) {
                (void) snprintf(names[i], sizeof(names[i]), "E%zu", i);
                ev[i] = gp(names[i], GP_MASK_ALL);
        }
        assert_int_equal(schedule_build(ev, 20, &icx, &s, NULL, 0), 0);
        assert_int_equal(s->n_sets, 3);
        for (size_t i = 0; i < 20; i++)
                per_set[s->placements[i].set]++;
        assert_int_equal(per_set[0], 8);
        assert_int_equal(per_set[1], 8);
        assert_int_equal(per_set[2], 4);
        check_consistent(s, ev, 20, 0xFF);
        s = schedule_free(s);

        /* SMT-on Skylake: 4 counters per thread */
        assert_int_equal(schedule_build(ev, 13, &skx_smt, &s, NULL, 0), 0);
        assert_int_equal(s->n_sets, 4);
        assert_int_equal(s->timebase_fixed, FIXED_REF_TSC);
        s = schedule_free(s);

        /* REF_TSC held by another user: the time base falls back to CLK_UNHALTED, then none */
        {
                ScheduleLimits limits = skx_smt;

                limits.foreign_fixed_mask = 1U << FIXED_REF_TSC;
                assert_int_equal(schedule_build(ev, 13, &limits, &s, NULL, 0), 0);
                assert_int_equal(s->timebase_fixed, FIXED_CLK_UNHALTED);
                s = schedule_free(s);
                limits.foreign_fixed_mask = 0x7;
                assert_int_equal(schedule_build(ev, 13, &limits, &s, NULL, 0), 0);
                assert_int_equal(s->timebase_fixed, -1);
                schedule_free(s);
        }
}

static void test_perf_metrics(void **state) {
        EventDesc ev[] = {
                fixed("TOPDOWN.SLOTS", 3, true), metrics("topdown-retiring", 0), metrics("topdown-heavy-ops", 4),
        };
        ScheduleLimits no_slots = spr;
        char reason[256];
        Schedule *s = NULL;

        (void) state;
        assert_int_equal(schedule_build(ev, 3, &spr, &s, reason, sizeof(reason)), 0);
        assert_true(s->perf_metrics);
        assert_int_equal(s->placements[0].kind, PLACE_FIXED);
        assert_int_equal(s->placements[1].kind, PLACE_PERF_METRICS);
        assert_int_equal(s->placements[2].counter, 4);
        assert_int_equal(s->fixed_used, 1U << FIXED_SLOTS | 1U << FIXED_REF_TSC);
        s = schedule_free(s);

        /* level-2 bytes on a level-1 PMU */
        assert_int_equal(schedule_build(ev, 3, &icx, &s, reason, sizeof(reason)), -EOPNOTSUPP);
        assert_non_null(strstr(reason, "PERF_METRICS level 2"));
        /* SLOTS held by the kernel */
        no_slots.foreign_fixed_mask = 1U << FIXED_SLOTS;
        assert_int_equal(schedule_build(ev + 1, 1, &no_slots, &s, reason, sizeof(reason)), -EBUSY);
        /* no PERF_METRICS on Skylake */
        assert_int_equal(schedule_build(ev + 1, 1, &skx_smt, &s, reason, sizeof(reason)), -EOPNOTSUPP);
}

static void test_limits(void **state) {
        EventDesc ev[SCHEDULE_EVENTS_MAX + 1];
        Schedule *s = NULL;

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(ev); i++)
                ev[i] = gp("X", GP_MASK_ALL);
        assert_int_equal(schedule_build(ev, 0, &icx, &s, NULL, 0), -E2BIG);
        assert_int_equal(schedule_build(ev, SCHEDULE_EVENTS_MAX + 1, &icx, &s, NULL, 0), -E2BIG);
        /* more than SCHEDULE_SETS_MAX sets of the 2 counters another PMU user leaves */
        assert_int_equal(schedule_build(ev, SCHEDULE_SETS_MAX * 2 + 1, &skx_two_free, &s, NULL, 0), -E2BIG);
        assert_int_equal(schedule_build(ev, SCHEDULE_SETS_MAX * 2, &skx_two_free, &s, NULL, 0), 0);
        assert_int_equal(s->n_sets, SCHEDULE_SETS_MAX);
        s = schedule_free(s);
        assert_null(s);
}

/* Pinned events (an included group's, such as TopDown level 1's correction terms under level
 * 2) are in every set and never scaled; when they cannot leave a counter free they rotate. */
static void test_pinned(void **state) {
        EventDesc events[12];
        _cleanup_(schedule_freep) Schedule *s = NULL;
        char reason[256];

        (void) state;
        events[0] = gp("INT_MISC.UOP_DROPPING", GP_MASK_ALL);
        events[1] = gp("INT_MISC.CLEARS_COUNT", GP_MASK_ALL);
        events[0].pinned = events[1].pinned = true;
        for (unsigned i = 2; i < 12; i++) {
                char name[16];

                (void) snprintf(name, sizeof(name), "E%u", i);
                events[i] = gp(name, GP_MASK_ALL);
        }
        /* 8 counters: 2 pinned + 6 others per set, so 10 others need two sets */
        assert_int_equal(schedule_build(events, 12, &icx, &s, reason, sizeof(reason)), 0);
        assert_int_equal(s->n_sets, 2);
        for (unsigned set = 0; set < s->n_sets; set++)
                for (size_t e = 0; e < 2; e++) {
                        int8_t c = s->placements[e].set_counter[set];

                        assert_true(s->placements[e].pinned);
                        assert_true(c >= 0);
                        assert_int_equal(s->set_counters[set][c], (int) e);
                }
        for (size_t e = 2; e < 12; e++) {
                assert_false(s->placements[e].pinned);
                assert_int_equal(s->set_counters[s->placements[e].set][s->placements[e].counter], (int) e);
        }
        s = schedule_free(s);

        /* four counters and four pinned events: nothing would be left, so they rotate */
        for (unsigned i = 0; i < 4; i++)
                events[i].pinned = true;
        assert_int_equal(schedule_build(events, 6, &skx_smt, &s, reason, sizeof(reason)), 0);
        assert_int_equal(s->n_sets, 2);
        for (size_t e = 0; e < 6; e++)
                assert_false(s->placements[e].pinned);
        check_consistent(s, events, 6, 0x0f);
}

/* Skylake-SP TopDown level 1 with SMT on: six GP events on four counters. The two every node
 * needs (the core clock's SMT correction) go into the first set, so that a run shorter than a
 * rotation still has the nodes whose events are all there. */
static void test_most_needed_first(void **state) {
        EventDesc ev[] = {
                gp("UOPS_ISSUED.ANY", GP_MASK_ALL), gp("UOPS_RETIRED.RETIRE_SLOTS", GP_MASK_ALL),
                gp("IDQ_UOPS_NOT_DELIVERED.CORE", GP_MASK_ALL), gp("INT_MISC.RECOVERY_CYCLES", GP_MASK_ALL),
                gp("CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE", GP_MASK_ALL), gp("CPU_CLK_UNHALTED.REF_XCLK", GP_MASK_ALL),
        };
        Schedule *s = NULL;

        (void) state;
        ev[0].needed_by = ev[1].needed_by = ev[2].needed_by = ev[3].needed_by = 2;
        ev[4].needed_by = ev[5].needed_by = 4;
        assert_int_equal(schedule_build(ev, ELEMENTSOF(ev), &skx_smt, &s, NULL, 0), 0);
        assert_int_equal(s->n_sets, 2);
        assert_int_equal(s->placements[4].set, 0);
        assert_int_equal(s->placements[5].set, 0);
        /* ties keep the order given */
        assert_int_equal(s->placements[0].set, 0);
        assert_int_equal(s->placements[1].set, 0);
        assert_int_equal(s->placements[2].set, 1);
        assert_int_equal(s->placements[3].set, 1);
        check_consistent(s, ev, ELEMENTSOF(ev), 0xF);
        schedule_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixed_and_gp),
                cmocka_unit_test(test_foreign_fixed),
                cmocka_unit_test(test_foreign_gp_and_restrictions),
                cmocka_unit_test(test_multiplexing),
                cmocka_unit_test(test_perf_metrics),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_pinned),
                cmocka_unit_test(test_most_needed_first),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

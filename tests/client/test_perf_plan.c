/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: a measurement's events as perf groups (measure_perf_plan() in
 * client/measure/measure-perf.c), from the TopDown recipes of Ice Lake-SP, Sapphire Rapids,
 * Skylake-SP and Zen 4 placed as the engine places them
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/groups.h"
#include "macro.h"
#include "measure/measure-internal.h"

typedef struct Planned {
        EventDesc descs[SCHEDULE_EVENTS_MAX];
        size_t n;
        Schedule *schedule;
        PerfPlan *plan;
} Planned;

/* Resolves a recipe's events (conditions taken as holding: SMT on), places them on a PMU of
 * gp GP and fixed fixed counters, and plans its perf groups. */
static int plan_group(const char *model, const char *group, const char *extra, unsigned gp, unsigned fixed,
                      unsigned perf_metrics, unsigned topdown, Planned *ret, char *reason, size_t size) {
        ScheduleLimits limits = { .gp_counters = gp, .fixed_counters = fixed, .perf_metrics = perf_metrics };
        Group *g = NULL;
        int r;

        *ret = (Planned) {};
        if (group) {
                r = group_load(group, model, &g, reason, size);
                assert_int_equal(r, 0);
                for (size_t i = 0; i < g->n_events; i++) {
                        assert_int_equal(event_resolve(model, g->events[i].name, &ret->descs[ret->n], reason, size), 0);
                        ret->descs[ret->n++].pinned = g->events[i].included;
                }
                group_free(g);
        }
        if (extra) {
                r = event_resolve_software(extra, &ret->descs[ret->n]);
                if (r < 0)
                        r = event_resolve(model, extra, &ret->descs[ret->n], reason, size);
                assert_int_equal(r, 0);
                ret->n++;
        }
        r = schedule_build(ret->descs, ret->n, &limits, &ret->schedule, reason, size);
        assert_int_equal(r, 0);
        return measure_perf_plan(model, strcmp(model, "grace") == 0 ? "armv8_pmuv3_0" : "cpu", ret->descs,
                                 ret->schedule, topdown, true, &ret->plan, reason, size);
}

static void planned_done(Planned *p) {
        measure_perf_plan_free(p->plan);
        schedule_free(p->schedule);
}

static size_t events_counted(const PerfPlan *p) {
        size_t n = 0;

        for (size_t e = 0; e < p->n_events; e++)
                n += p->programmed[e] >= 0;
        return n;
}

static void test_icx_l1(void **state) {
        char reason[400] = "";
        Planned p;

        assert_int_equal(plan_group("icx", "topdown-l1", NULL, 8, 4, 1, 1, &p, reason, sizeof(reason)), 0);
        /* SLOTS and the four level-1 metric events, then the GP events in one group */
        assert_int_equal(p.plan->n_groups, 2);
        assert_int_equal(p.plan->groups[0].n_events, 5);
        assert_string_equal(p.plan->groups[0].events[0].pmu, "cpu");
        assert_true(p.plan->groups[0].events[0].config == 0x0400);
        for (size_t i = 1; i < 5; i++)
                assert_true(p.plan->groups[0].events[i].config >= 0x8000 &&
                            p.plan->groups[0].events[i].config <= 0x8300);
        assert_true(p.plan->groups[0].events[1].config == 0x8000);    /* retiring: byte 0 */
        assert_int_equal(p.plan->groups[1].n_events, 2);
        /* INT_MISC.UOP_DROPPING, INT_MISC.CLEARS_COUNT by their EVTSEL fields, no USR/OS/EN */
        for (size_t i = 0; i < 2; i++)
                assert_true((p.plan->groups[1].events[i].config & ~EVENT_CONFIG_MASK) == 0 &&
                            (p.plan->groups[1].events[i].config & 0xff) == 0x0d);
        assert_int_equal(events_counted(p.plan), p.n);
        assert_string_equal(p.plan->note, "");
        planned_done(&p);
}

static void test_spr_l2(void **state) {
        char reason[400] = "";
        Planned p;

        assert_int_equal(plan_group("spr", "topdown-l2", NULL, 8, 4, 2, 2, &p, reason, sizeof(reason)), 0);
        assert_int_equal(p.plan->groups[0].n_events, 9);
        assert_true(p.plan->groups[0].events[0].config == 0x0400);
        for (size_t i = 1; i < 9; i++)
                assert_true(p.plan->groups[0].events[i].config == 0x8000 + 0x100 * p.schedule->placements[p.plan->programmed[i]].counter);
        assert_int_equal(events_counted(p.plan), p.n);
        planned_done(&p);

        /* a kernel with level-1 metric events only: the level-2 ones are left out, and said */
        assert_int_equal(plan_group("spr", "topdown-l2", NULL, 8, 4, 2, 1, &p, reason, sizeof(reason)), 0);
        assert_int_equal(p.plan->groups[0].n_events, 5);
        assert_non_null(strstr(p.plan->note, "topdown-heavy-ops: the kernel has no such topdown metric event"));
        planned_done(&p);
}

/* UOPS_RETIRED.MS counts what it names with MSR_PEBS_FRONTEND = 0x8: its perf event carries
 * the kernel's frontend field (config1), the other events none. */
static void test_frontend_field(void **state) {
        char reason[400] = "";
        bool found = false;
        Planned p;

        assert_int_equal(plan_group("spr", "topdown-l1", "UOPS_RETIRED.MS:c=1", 8, 4, 2, 2, &p, reason,
                                    sizeof(reason)), 0);
        for (size_t e = 0; e < p.plan->n_events; e++) {
                const pmugate_perf_event *ev = &p.plan->events[e];

                if ((ev->config & 0xffff) == 0x04c2) {
                        found = true;
                        assert_true(ev->has_config1);
                        assert_int_equal(ev->config1, 0x8);
                        assert_int_equal(ev->config & ~UINT64_C(0xffff), UINT64_C(1) << 24);  /* c=1 */
                } else
                        assert_false(ev->has_config1);
        }
        assert_true(found);
        planned_done(&p);
}

static void test_skx_l1(void **state) {
        char reason[400] = "";
        Planned p;
        size_t counted = 0;

        /* four GP counters (SMT on): six GP events take two sets, each its own group;
         * CPU_CLK_UNHALTED.THREAD by its fixed pseudo-encoding in the first */
        assert_int_equal(plan_group("skx", "topdown-l1", NULL, 4, 3, 0, 0, &p, reason, sizeof(reason)), 0);
        assert_int_equal(p.schedule->n_sets, 2);
        assert_int_equal(p.plan->n_groups, 2);
        assert_true(p.plan->groups[0].events[0].config == 0x003c);
        for (size_t g = 0; g < p.plan->n_groups; g++)
                for (size_t e = 0; e < p.plan->groups[g].n_events; e++) {
                        const pmugate_perf_event *ev = &p.plan->groups[g].events[e];

                        assert_string_equal(ev->pmu, "cpu");
                        assert_true((ev->config & ~EVENT_CONFIG_MASK) == 0);
                        assert_true(ev->kernel);        /* both rings, asked for */
                        counted++;
                }
        /* the events of one set count together */
        for (size_t e = 0; e < p.plan->n_events; e++) {
                const Placement *pl = &p.schedule->placements[p.plan->programmed[e]];
                size_t g = e < p.plan->group_first[1] ? 0 : 1;

                if (pl->kind == PLACE_GP)
                        assert_int_equal(pl->set, g);
        }
        assert_int_equal(counted, p.n);
        planned_done(&p);
}

static void test_zen4(void **state) {
        char reason[400] = "";
        Planned p;

        assert_int_equal(plan_group("zen4", "topdown-l1", NULL, 6, 0, 0, 0, &p, reason, sizeof(reason)), 0);
        assert_int_equal(p.plan->n_groups, 1);
        assert_int_equal(p.plan->groups[0].n_events, p.n);
        for (size_t e = 0; e < p.n; e++) {
                const EventDesc *d = &p.descs[p.plan->programmed[e]];

                assert_true(p.plan->events[e].config == (d->config & EVENT_CONFIG_MASK_AMD));
        }
        planned_done(&p);
}

/* Grace: Arm's level 1 on the cycle counter and the six event counters, one group on the
 * daemon's armv8_pmuv3_0, each config the bare event number (CPU_CYCLES's too). */
static void test_grace_l1(void **state) {
        static const uint64_t numbers[] = { 0x3e, 0x11, 0x10, 0x3a, 0x3b, 0x3f, 0x3d };
        char reason[400] = "";
        Planned p;

        assert_int_equal(plan_group("grace", "topdown-l1", NULL, 6, 1, 0, 0, &p, reason, sizeof(reason)), 0);
        assert_int_equal(p.n, ELEMENTSOF(numbers));
        assert_int_equal(p.plan->n_groups, 1);
        assert_int_equal(p.plan->groups[0].n_events, p.n);
        for (size_t e = 0; e < p.n; e++) {
                assert_string_equal(p.plan->events[e].pmu, "armv8_pmuv3_0");
                assert_true(p.plan->events[e].config == numbers[p.plan->programmed[e]]);
        }
        planned_done(&p);
        /* with the daemon's hello naming no core PMU, events open on "cpu" as before */
        assert_string_equal(measure_perf_core_pmu(NULL), "cpu");
}

static void test_software(void **state) {
        char reason[400] = "";
        EventDesc d;
        Planned p;

        assert_int_equal(event_resolve_software("Task-Clock", &d), 0);
        assert_string_equal(d.name, "task-clock");
        assert_int_equal(d.kind, EVENT_SOFTWARE);
        assert_int_equal(event_resolve_software("cs", &d), 0);
        assert_string_equal(d.name, "context-switches");
        assert_int_equal(event_resolve_software("cycles", &d), -ENOENT);
        /* software events a group of their own, after the PMU's */
        assert_int_equal(plan_group("icx", "topdown-l1", "page-faults", 8, 4, 1, 1, &p, reason, sizeof(reason)), 0);
        assert_int_equal(p.plan->n_groups, 3);
        assert_string_equal(p.plan->groups[2].events[0].pmu, "software");
        assert_true(p.plan->groups[2].events[0].config == 2);
        assert_false(p.plan->groups[2].events[0].kernel);
        planned_done(&p);
}

static void test_kernel_alone_refused(void **state) {
        char reason[400] = "";
        Planned p;

        assert_int_equal(plan_group("icx", NULL, "INT_MISC.CLEARS_COUNT:k", 8, 4, 1, 1, &p, reason, sizeof(reason)),
                         -EOPNOTSUPP);
        assert_non_null(strstr(reason, "kernel mode alone"));
        planned_done(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_icx_l1),
                cmocka_unit_test(test_spr_l2),
                cmocka_unit_test(test_skx_l1),
                cmocka_unit_test(test_zen4),
                cmocka_unit_test(test_grace_l1),
                cmocka_unit_test(test_software),
                cmocka_unit_test(test_frontend_field),
                cmocka_unit_test(test_kernel_alone_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

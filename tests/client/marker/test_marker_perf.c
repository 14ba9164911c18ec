/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the markers' perf read mode: the events the runner passes the program (and what
 * the program refuses of its environment), perf's software event names, a region's scaled
 * difference, and the -e lists that choose the mode
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "marker/marker-perf.h"
#include "marker/marker-runner.h"

static void test_events_text(void **state) {
        MarkerPerfEvents e = {}, back;
        char text[512];

        (void) state;
        assert_int_equal(marker_perf_events_add(&e, "software", 1, false), 0);
        assert_int_equal(marker_perf_events_add(&e, "software", 2, false), 0);
        assert_int_equal(marker_perf_events_add(&e, "cpu", 0x1d3, true), 0);
        e.events[2].has_config1 = true;
        e.events[2].config1 = 0x7;
        assert_int_equal(marker_perf_events_format(&e, text, sizeof(text)), 0);
        assert_string_equal(text, "software:0x1,software:0x2;cpu:0x1d3:0x7");
        assert_int_equal(marker_perf_events_parse(text, &back), 0);
        assert_int_equal(back.n_events, 3);
        assert_int_equal(back.n_groups, 2);
        assert_int_equal(back.group_sizes[0], 2);
        assert_int_equal(back.group_sizes[1], 1);
        assert_string_equal(back.events[2].pmu, "cpu");
        assert_int_equal(back.events[2].config, 0x1d3);
        assert_true(back.events[2].has_config1);
        assert_false(back.events[2].has_config2);
        assert_int_equal(back.events[2].config1, 7);
        assert_false(back.events[0].has_config1);
        /* an event that counts the kernel too */
        e.events[0].kernel = true;
        assert_int_equal(marker_perf_events_format(&e, text, sizeof(text)), 0);
        assert_string_equal(text, "software:0x1/k,software:0x2;cpu:0x1d3:0x7");
        assert_int_equal(marker_perf_events_parse(text, &back), 0);
        assert_true(back.events[0].kernel);
        assert_false(back.events[1].kernel);
        assert_int_equal(marker_perf_events_parse("cpu:0xc0/k:0x1", &back), -EINVAL);
        assert_int_equal(marker_perf_events_parse("cpu:0xc0/x", &back), -EINVAL);
        assert_int_equal(marker_perf_events_parse("uncore_imc_0:0x4:0x0:0x1", &back), 0);
        assert_true(back.events[0].has_config2);
        assert_int_equal(back.events[0].config2, 1);
        /* a buffer too short says so */
        assert_int_equal(marker_perf_events_format(&e, text, 10), -ENOBUFS);
}

static void test_events_refused(void **state) {
        static const char *const bad[] = {
                "", "software", "software:", "software:1", "software:0x", "software:0xg", ":0x1",
                "software:0x1,", "software:0x1;", "software:0x1,,software:0x2", "soft ware:0x1",
                "software:0x1:0x2:0x3:0x4", "software:0x1 ", "software:0x10000000000000000",
                "a/b:0x1", "abcdefghijabcdefghijabcdefghijabcdefghij:0x1",
        };
        MarkerPerfEvents e = { .n_events = 99 };
        char many[1024] = "";

        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(marker_perf_events_parse(bad[i], &e) < 0 ? 0 : (int) i + 1, 0);
        assert_int_equal(e.n_events, 99);       /* untouched */
        assert_true(marker_perf_events_parse(NULL, &e) < 0);
        /* more events than a start reads */
        for (unsigned i = 0; i <= MARKER_REGS_MAX; i++)
                (void) snprintf(many + strlen(many), sizeof(many) - strlen(many), "%ssoftware:0x1", i ? ";" : "");
        assert_int_equal(marker_perf_events_parse(many, &e), -E2BIG);
}

static void test_software_names(void **state) {
        uint64_t config = 99;

        (void) state;
        assert_int_equal(marker_perf_software_event("task-clock", &config), 0);
        assert_int_equal(config, PERF_COUNT_SW_TASK_CLOCK);
        assert_int_equal(marker_perf_software_event("page-faults", &config), 0);
        assert_int_equal(config, PERF_COUNT_SW_PAGE_FAULTS);
        assert_int_equal(marker_perf_software_event("cs", &config), 0);
        assert_int_equal(config, PERF_COUNT_SW_CONTEXT_SWITCHES);
        assert_int_equal(marker_perf_software_event("major-faults", &config), 0);
        assert_int_equal(config, PERF_COUNT_SW_PAGE_FAULTS_MAJ);
        config = 99;
        assert_int_equal(marker_perf_software_event("Task-Clock", &config), -ENOENT);
        assert_int_equal(marker_perf_software_event("INST_RETIRED.ANY", &config), -ENOENT);
        assert_int_equal(marker_perf_software_event(NULL, &config), -ENOENT);
        assert_int_equal(config, 99);
}

static void test_delta(void **state) {
        PerfSelfCount a = { 100, 1000, 1000 }, b = { 350, 2000, 2000 };
        uint64_t d = 0;

        (void) state;
        assert_true(marker_perf_delta(&a, &b, &d));
        assert_int_equal(d, 250);
        /* on the counter half the time: counted twice over, as perf scales */
        b = (PerfSelfCount) { 350, 2000, 1500 };
        assert_true(marker_perf_delta(&a, &b, &d));
        assert_int_equal(d, 500);
        /* never on the counter: unknown, not zero */
        d = 7;
        b = (PerfSelfCount) { 100, 2000, 1000 };
        assert_false(marker_perf_delta(&a, &b, &d));
        assert_int_equal(d, 7);
        /* no time at all between the two: nothing counted */
        assert_true(marker_perf_delta(&a, &a, &d));
        assert_int_equal(d, 0);
        /* the product of a large count and a long time does not overflow on the way */
        a = (PerfSelfCount) { 0, 0, 0 };
        b = (PerfSelfCount) { UINT64_C(1) << 60, UINT64_C(4000000000), UINT64_C(1000000000) };
        assert_true(marker_perf_delta(&a, &b, &d));
        assert_int_equal(d, UINT64_C(1) << 62);
}

static void test_plan(void **state) {
        MarkerPerfPlan plan;
        char reason[256] = "";

        (void) state;
        assert_int_equal(marker_runner_perf_plan("task-clock,page-faults", &plan, reason, sizeof(reason)), 0);
        assert_int_equal(plan.events.n_events, 2);
        assert_int_equal(plan.events.n_groups, 1);
        assert_string_equal(plan.names[1], "page-faults");
        assert_string_equal(plan.events.events[0].pmu, "software");
        assert_int_equal(plan.events.events[0].config, PERF_COUNT_SW_TASK_CLOCK);
        assert_string_equal(plan.events.events[1].name, "page-faults");
        assert_int_equal(plan.programmed[1], 1);
        /* counter events alone: the registers' path */
        assert_int_equal(marker_runner_perf_plan("INST_RETIRED.ANY,cycles", &plan, reason, sizeof(reason)), -ENOENT);
        assert_int_equal(marker_runner_perf_plan(NULL, &plan, reason, sizeof(reason)), -ENOENT);
        /* both: refused, naming the first that is not a software event */
        assert_int_equal(marker_runner_perf_plan("task-clock,cycles,faults", &plan, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "'cycles' is not one of perf's software events"));
        /* more than one group holds */
        assert_int_equal(marker_runner_perf_plan("cs,cs,cs,cs,cs,cs,cs,cs,cs,cs,cs,cs,cs,cs,cs,cs,cs", &plan,
                                                 reason, sizeof(reason)), -E2BIG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_events_text),
                cmocka_unit_test(test_events_refused),
                cmocka_unit_test(test_software_names),
                cmocka_unit_test(test_delta),
                cmocka_unit_test(test_plan),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

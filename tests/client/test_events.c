/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: event names to encodings and counter constraints
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "events/event-list.h"
#include "events/events.h"

static void test_table_events(void **state) {
        char reason[256];
        EventDesc d;

        (void) state;
        assert_int_equal(event_resolve("spr", "INT_MISC.UOP_DROPPING", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.kind, EVENT_COUNTER);
        assert_int_equal(d.source, EVENT_SOURCE_TABLE);
        assert_int_equal(d.config, 0x10ad);
        assert_int_equal(d.fixed, -1);
        assert_true(d.usr && d.os);

        assert_int_equal(event_resolve("skx", "CPU_CLK_UNHALTED.THREAD", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.fixed, 1);
        assert_true(d.gp_ok);
        assert_int_equal(d.config, 0x3c);       /* the GP twin, for when fixed counter 1 is taken */

        assert_int_equal(event_resolve("icx", "CPU_CLK_UNHALTED.REF_TSC", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.fixed, 2);
        assert_false(d.gp_ok);

        assert_int_equal(event_resolve("spr", "TOPDOWN.BAD_SPEC_SLOTS", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.gp_mask, 0x01);

        assert_int_equal(event_resolve("icx", "MACHINE_CLEARS.COUNT", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0x10401c3);
}

static void test_perf_metrics_events(void **state) {
        char reason[256];
        EventDesc d;

        (void) state;
        assert_int_equal(event_resolve("spr", "topdown-mem-bound", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.kind, EVENT_PERF_METRICS);
        assert_int_equal(d.metrics_field, 7);
        assert_int_equal(event_resolve("icx", "topdown-be-bound", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.metrics_field, 3);
        /* ICX has no level-2 bytes, SKX no PERF_METRICS at all */
        assert_int_equal(event_resolve("icx", "topdown-heavy-ops", &d, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "topdown-heavy-ops"));
        assert_int_equal(event_resolve("skx", "topdown-retiring", &d, reason, sizeof(reason)), -ENOENT);
        assert_int_equal(event_resolve("spr", "topdown-retiring:u", &d, reason, sizeof(reason)), -EINVAL);
}

static void test_modifiers(void **state) {
        char reason[256];
        EventDesc d;

        (void) state;
        assert_int_equal(event_resolve("icx", "UOPS_DECODED.DEC0:c=1", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0x1000156);
        assert_int_equal(event_resolve("icx", "UOPS_ISSUED.ANY:c=2:e:i", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0x010e | (2ULL << 24) | EVTSEL_EDGE | EVTSEL_INV);
        assert_int_equal(event_resolve("icx", "UOPS_ISSUED.ANY:u", &d, reason, sizeof(reason)), 0);
        assert_true(d.usr);
        assert_false(d.os);
        assert_int_equal(event_resolve("icx", "UOPS_ISSUED.ANY:k", &d, reason, sizeof(reason)), 0);
        assert_false(d.usr);
        assert_true(d.os);
        /* a filter moves a fixed-counter event to its GP encoding */
        assert_int_equal(event_resolve("icx", "INST_RETIRED.ANY:c=1", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.fixed, -1);
        assert_int_equal(d.config, 0x10000c0);
        assert_int_equal(event_resolve("icx", "CPU_CLK_UNHALTED.REF_TSC:e", &d, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(event_resolve("icx", "UOPS_ISSUED.ANY:c=256", &d, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(event_resolve("icx", "UOPS_ISSUED.ANY:x", &d, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "unknown modifier 'x'"));
        /* perf's cpu@EXE_ACTIVITY.3_PORTS_UTIL,umask=0x80@ (Ice Lake-SP TopDown level 4): the
         * event's code with another unit mask, on a GP counter */
        assert_int_equal(event_resolve("icx", "EXE_ACTIVITY.1_PORTS_UTIL:umask=0x80", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0x80a6);
        assert_string_equal(d.name, "EXE_ACTIVITY.1_PORTS_UTIL:umask=0x80");
        assert_int_equal(event_resolve("icx", "INST_RETIRED.ANY:umask=1", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.fixed, -1);
        assert_int_equal(d.config, 0x1c0);
        assert_int_equal(event_resolve("icx", "UOPS_ISSUED.ANY:umask=0x100", &d, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "umask= needs a unit mask"));
}

static void test_raw_events(void **state) {
        char reason[256];
        EventDesc d;

        (void) state;
        assert_int_equal(event_resolve("spr", "r10ad", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.source, EVENT_SOURCE_RAW);
        assert_int_equal(d.config, 0x10ad);
        /* a raw code inherits the table's counter restriction */
        assert_int_equal(event_resolve("spr", "r08a4", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.gp_mask, 0x01);
        /* INT and ANY are never the user's to set */
        assert_int_equal(event_resolve("skx", "r20010d", &d, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(event_resolve("skx", "r10010d", &d, reason, sizeof(reason)), -EINVAL);
}

static void test_libpfm_events(void **state) {
        char reason[256];
        EventDesc d;

        (void) state;
        /* main() forced libpfm4's icx PMU: its list resolves what the table lacks */
        assert_int_equal(event_resolve("icx", "MEM_INST_RETIRED.ALL_LOADS", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.source, EVENT_SOURCE_LIBPFM);
        assert_int_equal(d.config, 0x81d0);
        assert_int_equal(d.config & ~EVENT_CONFIG_MASK, 0);
        assert_int_equal(event_resolve("icx", "NO_SUCH.EVENT", &d, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "NO_SUCH.EVENT"));
        /* SPR's PMU is not active in libpfm4 here: only the table answers */
        assert_int_equal(event_resolve("spr", "MEM_INST_RETIRED.ALL_LOADS", &d, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "LIBPFM_FORCE_PMU"));
}

static void test_names_case_and_aliases(void **state) {
        char reason[512];
        EventDesc d, upper;

        (void) state;
        /* one encoding either way: the lower-case name takes fixed counter 0 like the upper */
        assert_int_equal(event_resolve("spr", "INST_RETIRED.ANY", &upper, reason, sizeof(reason)), 0);
        assert_int_equal(event_resolve("spr", "inst_retired.any", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.source, EVENT_SOURCE_TABLE);
        assert_int_equal(d.fixed, upper.fixed);
        assert_int_equal(d.fixed, 0);
        assert_int_equal(d.config, upper.config);
        assert_string_equal(d.name, "INST_RETIRED.ANY");
        assert_int_equal(event_resolve("spr", "Topdown-Retiring", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.kind, EVENT_PERF_METRICS);
        assert_string_equal(d.name, "topdown-retiring");
        assert_int_equal(event_resolve("spr", "br_misp_retired.all_branches:U", &d, reason, sizeof(reason)),
                         0);
        assert_string_equal(d.name, "BR_MISP_RETIRED.ALL_BRANCHES:u");
        assert_true(d.usr && !d.os);
        /* libpfm4 names are spelled in upper case too */
        assert_int_equal(event_resolve("icx", "mem_inst_retired.all_loads", &d, reason, sizeof(reason)), 0);
        assert_string_equal(d.name, "MEM_INST_RETIRED.ALL_LOADS");
        assert_int_equal(d.config, 0x81d0);

        /* perf's generic names */
        assert_int_equal(event_resolve("skx", "instructions", &d, reason, sizeof(reason)), 0);
        assert_string_equal(d.name, "INST_RETIRED.ANY");
        assert_int_equal(d.fixed, 0);
        assert_int_equal(event_resolve("icx", "cycles", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.fixed, 1);
        assert_int_equal(event_resolve("icx", "cpu-cycles:k", &d, reason, sizeof(reason)), 0);
        assert_string_equal(d.name, "CPU_CLK_UNHALTED.THREAD:k");
        assert_int_equal(event_resolve("spr", "ref-cycles", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.fixed, 2);
        assert_int_equal(event_resolve("spr", "branches", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0xc4);
        assert_int_equal(event_resolve("spr", "Branch-Misses", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0xc5);
        assert_string_equal(d.name, "BR_MISP_RETIRED.ALL_BRANCHES");

        /* raw codes keep one spelling as well */
        assert_int_equal(event_resolve("spr", "r10AD", &d, reason, sizeof(reason)), 0);
        assert_string_equal(d.name, "r10ad");
}

static void test_suggestions(void **state) {
        char reason[512], hint[EVENT_SUGGESTIONS_MAX];
        EventDesc d;

        (void) state;
        /* a typo gets the closest names, not libpfm4's error text */
        assert_int_equal(event_resolve("icx", "INST_RETIRED.AN", &d, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "did you mean INST_RETIRED.ANY"));
        assert_null(strstr(reason, "libpfm4:"));
        assert_int_equal(event_resolve("icx", "instrutions", &d, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "instructions"));
        /* without libpfm4's list the table still suggests */
        assert_int_equal(event_resolve("spr", "UOPS_RETIRED.SLOT", &d, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "UOPS_RETIRED.SLOTS"));
        /* nothing close: no suggestion */
        event_suggest("spr", "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ", hint, sizeof(hint));
        assert_string_equal(hint, "");
        assert_int_equal(event_name_distance("abc", "ABD"), 1);
        assert_int_equal(event_name_distance("", "abc"), 3);
        assert_int_equal(event_name_distance("kitten", "sitting"), 3);
}

static int count_event(const char *name, const char *description, EventListSource source, void *userdata) {
        size_t *counts = userdata;

        assert_non_null(name);
        assert_non_null(description);
        counts[source]++;
        if (strcmp(name, "MEM_INST_RETIRED.ALL_LOADS") == 0)
                assert_non_null(strcasestr(description, "load"));
        return 0;
}

static void test_list(void **state) {
        size_t counts[3] = {};

        (void) state;
        assert_int_equal(event_list("icx", count_event, counts), 0);
        assert_int_equal(counts[EVENT_LIST_GENERIC], 7);
        assert_true(counts[EVENT_LIST_TABLE] > 20);
        assert_true(counts[EVENT_LIST_LIBPFM] > 100);
        assert_int_equal(event_list("zen9", count_event, counts), -EOPNOTSUPP);
}

static void test_bad_input(void **state) {
        char reason[256], long_name[EVENT_NAME_MAX + 8];
        EventDesc d;

        (void) state;
        assert_int_equal(event_resolve("zen3", "ex_ret_ops", &d, reason, sizeof(reason)), -EOPNOTSUPP);
        assert_non_null(strstr(reason, "zen3"));
        /* AMD: perf's names and the cmask modifier; raw codes may use bits 32-35 there only */
        assert_int_equal(event_resolve("zen4", "de_no_dispatch_per_slot.no_ops_from_frontend:c=6", &d,
                                       reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0x1060001a0ULL);
        assert_int_equal(event_resolve("zen5", "r1000000c2", &d, reason, sizeof(reason)), 0);
        assert_int_equal(d.config, 0x1000000c2ULL);
        assert_int_equal(event_resolve("spr", "r1000000c2", &d, reason, sizeof(reason)), -EINVAL);
        /* INT (bit 20) and GuestOnly/HostOnly (40, 41) are never the user's on AMD either */
        assert_int_equal(event_resolve("zen4", "r1000c2", &d, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(event_resolve("zen4", "r100000000c2", &d, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(event_resolve("zen4", "INST_RETIRED.ANY", &d, reason, sizeof(reason)), -ENOENT);
        assert_int_equal(event_resolve("spr", "", &d, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(event_resolve("spr", ":", &d, reason, sizeof(reason)), -EINVAL);
        memset(long_name, 'A', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        assert_int_equal(event_resolve("spr", long_name, &d, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(event_resolve("spr", "INST_RETIRED.ANY", &d, NULL, 0), 0);
}

static void test_variable_names(void **state) {
        char buf[64];

        (void) state;
        assert_int_equal(event_variable_name("topdown-retiring", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "topdown_retiring");
        assert_int_equal(event_variable_name("UOPS_DECODED.DEC0:c=1", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "UOPS_DECODED.DEC0_c_1");
        assert_int_equal(event_variable_name("EXE_ACTIVITY.1_PORTS_UTIL", buf, 8), -ENOBUFS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table_events),
                cmocka_unit_test(test_perf_metrics_events),
                cmocka_unit_test(test_modifiers),
                cmocka_unit_test(test_raw_events),
                cmocka_unit_test(test_libpfm_events),
                cmocka_unit_test(test_bad_input),
                cmocka_unit_test(test_variable_names),
                cmocka_unit_test(test_names_case_and_aliases),
                cmocka_unit_test(test_suggestions),
                cmocka_unit_test(test_list),
        };

        /* before libpfm4 is first used */
        (void) setenv("LIBPFM_FORCE_PMU", "icx", 1);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: a TopDown drilldown (client/measure/drilldown.c) opened against a fake daemon
 * that says hello as a Sapphire Rapids: levels 1 and 2 whole, at level 3 only the children of
 * the node drilled into, the others n/a "not drilled into" and their events off the counters;
 * wrong levels, counts and nodes refused with a reason; the largest node of a level in a result.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "events/event-models.h"
#include "fake-daemon.h"
#include "measure/measure-internal.h"

static void hello_body(msgpack_packer *pk) {
        pack_string(pk, "cpu");
        msgpack_pack_map(pk, 3);
        pack_key_string(pk, "vendor", "GenuineIntel");
        pack_key_string(pk, "key", "spr");
        pack_key_string(pk, "name", "Sapphire Rapids");
        pack_string(pk, "pmu");
        msgpack_pack_map(pk, 5);
        pack_key_uint(pk, "version", 5);
        pack_key_uint(pk, "gp_counters", 8);
        pack_key_uint(pk, "fixed_counters", 4);
        pack_key_uint(pk, "counter_width", 48);
        pack_key_uint(pk, "perf_metrics", 2);
        pack_string(pk, "cpus");
        msgpack_pack_array(pk, 1);
        msgpack_pack_array(pk, 7);
        for (int i = 0; i < 5; i++)
                msgpack_pack_int(pk, 0);
        msgpack_pack_true(pk);
        msgpack_pack_int(pk, -1);
        pack_string(pk, "units");
        msgpack_pack_array(pk, 0);
        pack_string(pk, "registers");
        msgpack_pack_array(pk, 0);
}

static uint64_t next_id = 1;

static int open_drilled(FakeDaemon *f, pmugate *c, unsigned level, const char *const *nodes, size_t n,
                        pmugate_measure **ret, char *reason, size_t reason_size) {
        uint32_t cpu = 0;

        fake_reply(f, next_id++, 5, hello_body, 0);
        return pmugate_measure_open_topdown_drilldown(c, level, nodes, n, &cpu, 1, 0, ret, reason, reason_size);
}

static const MeasureMetric *metric(const pmugate_measure *m, const char *name) {
        for (size_t k = 0; k < m->n_metrics; k++)
                if (strcmp(m->metrics[k].info.name, name) == 0)
                        return &m->metrics[k];
        fail_msg("no metric %s", name);
        return NULL;
}

static bool programmed(const pmugate_measure *m, const char *event) {
        for (size_t i = 0; i < m->n_events; i++)
                if (strcasecmp(m->events[i].desc.name, event) == 0)
                        return m->events[i].programmed;
        fail_msg("no event %s", event);
        return false;
}

static void test_level3(void **state) {
        static const char *const nodes[] = { "tma_fetch_latency" };
        pmugate_measure *m = NULL;
        char reason[400] = "";
        size_t measured = 0;
        FakeDaemon f;
        pmugate *c = fake_connect(&f);

        (void) state;
        assert_int_equal(open_drilled(&f, c, 3, nodes, 1, &m, reason, sizeof(reason)), 0);
        for (size_t k = 0; k < m->n_metrics; k++) {
                const pmugate_metric_info *mi = &m->metrics[k].info;
                bool child = mi->parent >= 0 && strcmp(m->metrics[mi->parent].info.name, nodes[0]) == 0;

                if (mi->level <= 2 || child)
                        assert_string_not_equal(mi->unavailable, PMUGATE_NOT_DRILLED);
                else
                        assert_string_equal(mi->unavailable, PMUGATE_NOT_DRILLED);
                measured += mi->level == 3 && child;
        }
        assert_int_equal(measured, 6);
        assert_string_equal(metric(m, "tma_icache_misses")->info.unavailable, "");
        assert_string_equal(metric(m, "tma_divider")->info.unavailable, PMUGATE_NOT_DRILLED);
        assert_true(programmed(m, "ICACHE_DATA.STALLS"));
        assert_true(programmed(m, "DECODE.LCP"));
        assert_true(programmed(m, "UOPS_ISSUED.ANY"));
        assert_false(programmed(m, "ARITH.DIV_ACTIVE"));
        assert_false(programmed(m, "MEM_LOAD_RETIRED.L1_MISS"));
        assert_true(pmugate_measure_event_sets(m) <= 2);
        m = pmugate_measure_close(m);
        pmugate_disconnect(c);
        fake_done(&f);
        next_id = 1;
}

static void test_level4(void **state) {
        static const char *const nodes[] = { "tma_memory_bound", "tma_store_bound" };
        pmugate_measure *m = NULL;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);

        (void) state;
        assert_int_equal(open_drilled(&f, c, 4, nodes, 2, &m, reason, sizeof(reason)), 0);
        /* level 3: the children of Memory Bound; level 4: those of Store Bound */
        assert_string_equal(metric(m, "tma_l1_bound")->info.unavailable, "");
        assert_string_equal(metric(m, "tma_icache_misses")->info.unavailable, PMUGATE_NOT_DRILLED);
        assert_string_equal(metric(m, "tma_store_latency")->info.unavailable, "");
        assert_string_equal(metric(m, "tma_split_loads")->info.unavailable, PMUGATE_NOT_DRILLED);
        /* a node pmugate cannot count keeps that reason, drilled into or not */
        assert_non_null(strstr(metric(m, "tma_false_sharing")->info.unavailable, "offcore"));
        assert_non_null(strstr(metric(m, "tma_contested_accesses")->info.unavailable, "offcore"));
        assert_true(programmed(m, "MEM_STORE_RETIRED.L2_HIT"));
        assert_false(programmed(m, "ICACHE_DATA.STALLS"));
        m = pmugate_measure_close(m);
        pmugate_disconnect(c);
        fake_done(&f);
        next_id = 1;
}

static void test_refusals(void **state) {
        static const char *const l2[] = { "tma_fetch_latency" };
        static const char *const l3[] = { "tma_icache_misses" };
        static const char *const pair[] = { "tma_fetch_latency", "tma_divider" };
        static const char *const l3_first[] = { "tma_icache_misses", "tma_fetch_latency" };
        pmugate_measure *m = NULL;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);
        uint32_t cpu = 0;

        (void) state;
        /* levels 1 and 2 are always whole: refused before asking the daemon */
        assert_int_equal(pmugate_measure_open_topdown_drilldown(c, 2, l2, 1, &cpu, 1, 0, &m, reason,
                                                                sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "level 3 or 4"));
        assert_int_equal(open_drilled(&f, c, 3, l3, 1, &m, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "'tma_icache_misses' is no level-2 node"));
        assert_int_equal(open_drilled(&f, c, 3, pair, 2, &m, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "takes 1 node"));
        assert_int_equal(open_drilled(&f, c, 4, pair, 2, &m, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "'tma_divider' is no child of 'tma_fetch_latency'"));
        assert_int_equal(open_drilled(&f, c, 4, l3_first, 2, &m, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "no level-2 node"));
        assert_int_equal(open_drilled(&f, c, 3, (const char *const[]) { "tma_frobnicate" }, 1, &m, reason,
                                      sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "'tma_frobnicate'"));
        assert_null(m);
        pmugate_disconnect(c);
        fake_done(&f);
        next_id = 1;
}

static void test_largest(void **state) {
        pmugate_metric_info metrics[] = {
                { .name = "a", .level = 1, .unavailable = "" },
                { .name = "b", .level = 2, .parent = 0, .unavailable = "" },
                { .name = "c", .level = 2, .parent = 0, .unavailable = "" },
                { .name = "d", .level = 2, .parent = 0, .unavailable = "not modelled" },
                { .name = "e", .level = 2, .parent = 0, .unavailable = "" },
        };
        double values[] = { 0.9, 0.2, 0.5, 0.8, NAN };
        pmugate_result r = { .n_metrics = 5, .metrics = metrics, .aggregate = { .metrics = values } };

        (void) state;
        /* the largest with a value; an n/a node (NaN or unavailable) never wins */
        assert_int_equal(pmugate_result_largest_metric(&r, 2), 2);
        assert_int_equal(pmugate_result_largest_metric(&r, 1), 0);
        assert_int_equal(pmugate_result_largest_metric(&r, 3), -ENOENT);
        values[2] = NAN;
        assert_int_equal(pmugate_result_largest_metric(&r, 2), 1);
        assert_int_equal(pmugate_result_largest_metric(NULL, 2), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_level3),
                cmocka_unit_test(test_level4),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_largest),
        };

        (void) setenv("LIBPFM_FORCE_PMU", event_libpfm_pmu("spr") ?: "spr", 0);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

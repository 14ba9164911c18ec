/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: a measurement through the perf path (client/measure/measure-perf.c) against a
 * fake daemon whose counters go via perf: one perf_open at start, the first perf_read the
 * baseline, deltas accumulated, the multiplexing scale from time_enabled / time_running, and
 * an event whose group the kernel never scheduled n/a with the reason, never 0, and the
 * counted window (duration_time) from time_enabled.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "fake-daemon.h"

static void hello_body(msgpack_packer *pk) {
        pack_string(pk, "cpu");
        msgpack_pack_map(pk, 3);
        pack_key_string(pk, "vendor", "GenuineIntel");
        pack_key_string(pk, "key", "icx");
        pack_key_string(pk, "name", "Ice Lake-SP");
        pack_string(pk, "pmu");
        msgpack_pack_map(pk, 5);
        pack_key_uint(pk, "version", 5);
        pack_key_uint(pk, "gp_counters", 8);
        pack_key_uint(pk, "fixed_counters", 4);
        pack_key_uint(pk, "counter_width", 48);
        pack_key_uint(pk, "perf_metrics", 1);
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
        pack_string(pk, "counting");
        msgpack_pack_map(pk, 1);
        pack_key_string(pk, "via", "perf");
}

/* A node without a PMU the daemon knows (hello without "pmu"), counting through perf. */
static void hello_no_pmu_body(msgpack_packer *pk) {
        pack_string(pk, "cpu");
        msgpack_pack_map(pk, 1);
        pack_key_string(pk, "vendor", "ARM");
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
        pack_string(pk, "counting");
        msgpack_pack_map(pk, 1);
        pack_key_string(pk, "via", "perf");
}

static void cpus_body(msgpack_packer *pk) {
        pack_string(pk, "cpus");
        msgpack_pack_array(pk, 1);
        msgpack_pack_uint32(pk, 0);
}

static void empty_body(msgpack_packer *pk) {
}

static void open_body(msgpack_packer *pk) {
        pack_key_uint(pk, "handle", 9);
        pack_string(pk, "targets");
        msgpack_pack_array(pk, 1);
        msgpack_pack_uint32(pk, 0);
}

/* The two groups' rows of the next read: [enabled, running, value] of each. */
static uint64_t next_rows[2][3];

static void rows_body(msgpack_packer *pk) {
        pack_string(pk, "rows");
        msgpack_pack_array(pk, 2);
        for (int g = 0; g < 2; g++) {
                msgpack_pack_array(pk, 6);
                msgpack_pack_uint32(pk, 0);
                msgpack_pack_uint32(pk, (uint32_t) g);
                msgpack_pack_int(pk, 0);
                msgpack_pack_uint64(pk, next_rows[g][0]);
                msgpack_pack_uint64(pk, next_rows[g][1]);
                msgpack_pack_array(pk, 1);
                msgpack_pack_uint64(pk, next_rows[g][2]);
        }
}

static void rows(FakeDaemon *f, uint64_t id, const uint64_t r[2][3]) {
        memcpy(next_rows, r, sizeof(next_rows));
        fake_reply(f, id, 1, rows_body, 0);
}

static void test_accumulate(void **state) {
        static const uint64_t baseline[2][3] = { { 1000, 0, 0 }, { 1000, 1000, 1000 } };
        /* the GP group never on the PMU; task-clock on it all the time, then half of it */
        static const uint64_t sample[2][3] = { { 5000, 0, 0 }, { 5000, 5000, 5000 } };
        static const uint64_t last[2][3] = { { 9000, 0, 0 }, { 9000, 7000, 8000 } };
        uint32_t cpu = 0;
        pmugate_measure *m = NULL;
        pmugate_result *r = NULL;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);
        int clears, clock;

        fake_reply(&f, 1, 6, hello_body, 0);
        assert_int_equal(pmugate_measure_open_group(c, NULL, "INT_MISC.CLEARS_COUNT,task-clock", &cpu, 1, 0, &m,
                                                    reason, sizeof(reason)), 0);
        assert_true(pmugate_measure_via_perf(m));
        fake_reply(&f, 2, 1, cpus_body, 0);     /* the lease: hardware events on a CPU */
        fake_reply(&f, 3, 2, open_body, 0);
        rows(&f, 4, baseline);
        assert_int_equal(pmugate_measure_start(m), 0);
        rows(&f, 5, sample);
        assert_int_equal(pmugate_measure_sample(m), 0);
        rows(&f, 6, last);
        fake_reply(&f, 7, 0, empty_body, 0);    /* perf_close */
        fake_reply(&f, 8, 1, cpus_body, 0);     /* release */
        assert_int_equal(pmugate_measure_stop(m), 0);

        assert_int_equal(pmugate_measure_read(m, PMUGATE_SPAN_TOTAL, &r), 0);
        clears = pmugate_result_event_index(r, "INT_MISC.CLEARS_COUNT");
        clock = pmugate_result_event_index(r, "task-clock");
        assert_true(clears >= 0 && clock >= 0);
        /* never scheduled: n/a, not 0, and said why */
        assert_true(isnan(r->aggregate.counts[clears]));
        assert_true(isinf(r->aggregate.scale[clears]));
        assert_non_null(strstr(r->withheld, "INT_MISC.CLEARS_COUNT"));
        assert_non_null(strstr(r->withheld, "the kernel never scheduled it"));
        /* 4000 + 3000 ns counted in 4000 + 2000 ns on the PMU of 8000 ns enabled */
        assert_int_equal(r->aggregate.raw[clock], 7000);
        assert_true(fabs(r->aggregate.scale[clock] - 8000.0 / 6000.0) < 1e-9);
        assert_true(fabs(r->aggregate.counts[clock] - 7000.0 * 8000.0 / 6000.0) < 1e-6);
        assert_int_equal(r->samples, 2);
        /* rates divide by the counted window, time_enabled of the reads: 8000 ns, not the
         * client's clock between the replies */
        assert_string_equal(r->window_clock, "perf");
        assert_true(fabs(r->window - 8000e-9) < 1e-15);
        pmugate_result_free(r);
        pmugate_measure_close(m);
        pmugate_disconnect(c);
        fake_done(&f);
}

static uint64_t hello_tsc_value;
static bool hello_tsc_nil;

static void hello_tsc_body(msgpack_packer *pk) {
        hello_no_pmu_body(pk);
        pack_string(pk, "tsc_hz");
        if (hello_tsc_nil)
                msgpack_pack_nil(pk);
        else
                msgpack_pack_uint64(pk, hello_tsc_value);
}

/* hello's tsc_hz: a rate is kept, nil or a rate no TSC has (a garbled reply) is unknown (0),
 * so that it cannot scale every rate. */
static void test_hello_tsc_hz(void **state) {
        static const struct {
                bool nil;
                uint64_t hz, want;
        } cases[] = {
                { false, 2000000000, 2000000000 },
                { true, 0, 0 },
                { false, 1, 0 },
                { false, UINT64_MAX, 0 },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                pmugate_info *info = NULL;
                FakeDaemon f;
                pmugate *c = fake_connect(&f);

                hello_tsc_nil = cases[i].nil;
                hello_tsc_value = cases[i].hz;
                fake_reply(&f, 1, 6, hello_tsc_body, 0);
                assert_int_equal(pmugate_hello(c, &info), 0);
                assert_int_equal(info->tsc_hz, cases[i].want);
                pmugate_info_free(info);
                pmugate_disconnect(c);
                fake_done(&f);
        }
}

static void test_software_without_pmu(void **state) {
        uint32_t cpu = 0;
        pmugate_measure *m = NULL;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);

        /* the kernel's software events need no PMU */
        fake_reply(&f, 1, 5, hello_no_pmu_body, 0);
        assert_int_equal(pmugate_measure_open_group(c, NULL, "task-clock,cs", &cpu, 1, 0, &m, reason, sizeof(reason)),
                         0);
        assert_true(pmugate_measure_via_perf(m));
        m = pmugate_measure_close(m);
        /* a hardware event there is refused, saying why */
        fake_reply(&f, 2, 5, hello_no_pmu_body, 0);
        assert_int_equal(pmugate_measure_open_group(c, NULL, "task-clock,cycles", &cpu, 1, 0, &m, reason,
                                                    sizeof(reason)), -EOPNOTSUPP);
        assert_null(m);
        assert_non_null(strstr(reason, "cycles: the daemon reports no PMU on this machine"));
        pmugate_disconnect(c);
        fake_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accumulate),
                cmocka_unit_test(test_software_without_pmu),
                cmocka_unit_test(test_hello_tsc_hz),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

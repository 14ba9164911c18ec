/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: PERF_METRICS decoding, kernel-style slot accumulation over reset windows, and
 * multiplex scaling
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>

#include "measure/measure-internal.h"

#define FULL_SCALE 255.0

/* cmocka 1.1.5 has no double comparison */
static void assert_near(double got, double want, double tolerance) {
        if (!(fabs(got - want) <= tolerance))
                fail_msg("got %.17g, want %.17g within %g", got, want, tolerance);
}

static uint64_t pack(const unsigned bytes[PERF_METRICS_FIELDS]) {
        uint64_t v = 0;

        for (unsigned i = 0; i < PERF_METRICS_FIELDS; i++)
                v |= (uint64_t) bytes[i] << (8 * i);
        return v;
}

/* PERF_METRICS as the hardware reports a window: L1 fractions rounded to bytes that sum to
 * 0xff (largest remainder), L2 bytes rounded within their parent. */
static uint64_t hardware_bytes(const double f[PERF_METRICS_FIELDS]) {
        unsigned bytes[PERF_METRICS_FIELDS] = {}, sum = 0;
        double rem[PERF_METRICS_L1_FIELDS];

        for (unsigned i = 0; i < PERF_METRICS_L1_FIELDS; i++) {
                bytes[i] = (unsigned) floor(f[i] * FULL_SCALE);
                rem[i] = f[i] * FULL_SCALE - bytes[i];
                sum += bytes[i];
        }
        while (sum < 255) {
                unsigned best = 0;

                for (unsigned i = 1; i < PERF_METRICS_L1_FIELDS; i++)
                        if (rem[i] > rem[best])
                                best = i;
                bytes[best]++;
                rem[best] = -1;
                sum++;
        }
        for (unsigned i = PERF_METRICS_L1_FIELDS; i < PERF_METRICS_FIELDS; i++) {
                unsigned b = (unsigned) lround(f[i] * FULL_SCALE);

                bytes[i] = b < bytes[i - PERF_METRICS_L1_FIELDS] ? b : bytes[i - PERF_METRICS_L1_FIELDS];
        }
        return pack(bytes);
}

static void test_decode(void **state) {
        const unsigned bytes[PERF_METRICS_FIELDS] = { 0x59, 0x0d, 0x26, 0x73, 0x0d, 0x08, 0x17, 0x52 };
        uint64_t pm = pack(bytes);

        (void) state;
        /* floor(slots * byte / 255), as icl_get_metrics_event_value() */
        assert_int_equal(measure_metrics_slots(255, pm, 0), 0x59);
        assert_int_equal(measure_metrics_slots(1000, pm, 0), 1000 * 0x59 / 255);
        assert_int_equal(measure_metrics_slots(1000, pm, 7), 1000 * 0x52 / 255);
        assert_int_equal(measure_metrics_slots(0, pm, 3), 0);
        /* no overflow where slots * byte exceeds 64 bits */
        assert_int_equal(measure_metrics_slots(UINT64_C(1) << 60, UINT64_C(0xff), 0), UINT64_C(1) << 60);
        assert_int_equal(measure_metrics_slots(UINT64_MAX, UINT64_C(0xff) << 56, 7), UINT64_MAX);
        assert_int_equal(measure_metrics_slots(UINT64_MAX, 0x80, 0), (uint64_t) (((unsigned __int128) UINT64_MAX * 0x80) / 255));
}

/* Many reset windows of varying size and the kernel's accumulation: each share stays within
 * one byte (1/255) of the truth however long the run. */
static void test_accumulation_over_resets(void **state) {
        const double f[PERF_METRICS_FIELDS] = { 0.35, 0.05, 0.15, 0.45, 0.05, 0.03, 0.09, 0.32 };
        uint64_t sums[PERF_METRICS_FIELDS] = {}, sum4 = 0, pm = hardware_bytes(f);
        uint64_t seed = 12345;

        (void) state;
        for (unsigned w = 0; w < 10000; w++) {
                uint64_t slots;

                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                slots = 100000000 + (seed >> 34);       /* about a second of an SPR core */
                for (unsigned i = 0; i < PERF_METRICS_FIELDS; i++)
                        sums[i] += measure_metrics_slots(slots, pm, i);
        }
        for (unsigned i = 0; i < PERF_METRICS_L1_FIELDS; i++)
                sum4 += sums[i];
        for (unsigned i = 0; i < PERF_METRICS_FIELDS; i++)
                assert_near((double) sums[i] / (double) sum4, f[i], 1.0 / FULL_SCALE);
}

/* Why the counters are reset: without, a short window read as the difference of two long
 * cumulative ones inherits one byte of the whole run's slots as its error. */
static void test_reset_keeps_precision(void **state) {
        const double before[PERF_METRICS_FIELDS] = { 0.30, 0.10, 0.20, 0.40 };
        const double after[PERF_METRICS_FIELDS] = { 0.60, 0.05, 0.15, 0.20 };
        const uint64_t long_slots = UINT64_C(1000000000000), short_slots = UINT64_C(1000000000);
        double mixed[PERF_METRICS_FIELDS] = {};
        uint64_t with_reset, cumulative_delta;

        (void) state;
        for (unsigned i = 0; i < PERF_METRICS_L1_FIELDS; i++)
                mixed[i] = (before[i] * (double) long_slots + after[i] * (double) short_slots) /
                           (double) (long_slots + short_slots);
        /* reset at the window's start: the short window has bytes of its own */
        with_reset = measure_metrics_slots(short_slots, hardware_bytes(after), 0);
        assert_near((double) with_reset / (double) short_slots, after[0], 1.0 / FULL_SCALE);
        /* no reset: the bytes describe the whole run, and the difference loses the window */
        cumulative_delta = measure_metrics_slots(long_slots + short_slots, hardware_bytes(mixed), 0) -
                           measure_metrics_slots(long_slots, hardware_bytes(before), 0);
        assert_true(fabs((double) cumulative_delta / (double) short_slots - after[0]) > 0.1);
}

static void test_multiplex_scaling(void **state) {
        double scale;

        (void) state;
        /* counted half the time: doubled */
        assert_near(measure_scaled_count(500, 50.0, 100.0, true, &scale), 1000.0, 1e-9);
        assert_near(scale, 2.0, 1e-12);
        /* a quarter of the time */
        assert_near(measure_scaled_count(1234, 25.0, 100.0, true, &scale), 4936.0, 1e-9);
        /* never on a counter: not counted */
        assert_true(isnan(measure_scaled_count(0, 0.0, 100.0, true, &scale)));
        assert_true(isinf(scale));
        /* never multiplexed: as counted */
        assert_near(measure_scaled_count(777, 3.0, 100.0, false, &scale), 777.0, 0);
        assert_near(scale, 1.0, 0);
}

/* docs/TOPDOWN.md's bound for a workload whose phases change at the rotation period: with n
 * event sets taking one turn each per interval, a node counted on a multiplexed generic
 * counter and divided by a count every set shares (slots, cycles) is off by at most
 * max |node_phase - node_interval| over the phases the interval holds; for two phases A and B
 * alternating every turn, |A - B| / 2. A node from pinned (every-set) counts is exact. */
static void test_phases_meet_rotation(void **state) {
        const double slots_rate = 1000.0, turn = 0.025;         /* slots per second, seconds per turn */
        const double phase[2] = { 0.10, 0.142 };                 /* the node in phases A and B */
        const unsigned sets = 4;

        (void) state;
        for (unsigned set = 0; set < sets; set++) {
                /* this set's event counts in its own turn only; the phase flips every turn */
                double truth = (phase[0] + phase[1]) / 2, scale;
                uint64_t raw = (uint64_t) llround(phase[set % 2] * slots_rate * turn * 1e6);
                double count = measure_scaled_count(raw, turn, sets * turn, true, &scale);
                double slots = slots_rate * sets * turn * 1e6;          /* pinned: every turn */
                double node = count / slots;

                assert_near(scale, sets, 1e-12);
                assert_true(fabs(node - truth) <= fabs(phase[0] - phase[1]) / 2 + 1e-9);
                /* and the bound is reached: it is the error, not a loose estimate */
                assert_near(fabs(node - truth), fabs(phase[0] - phase[1]) / 2, 1e-9);
        }
        /* phases as long as the interval: every set sees the same phase, the node is exact */
        for (unsigned set = 0; set < sets; set++) {
                double scale;
                uint64_t raw = (uint64_t) llround(phase[0] * slots_rate * turn * 1e6);
                double node = measure_scaled_count(raw, turn, sets * turn, true,
                                                   &scale) / (slots_rate * sets * turn * 1e6);

                assert_near(node, phase[0], 1e-9);
        }
}

/* The bound printed per multiplexed term holds for whatever the uncounted part of the span
 * held, and is reached at one end: a term t counted 1/scale of the span stands for the span,
 * and the rest holds u in [0, 1]. A difference of two such terms is within the sum. */
static void test_term_bound_holds(void **state) {
        const double scales[] = { 1.0, 1.5, 2.0, 3.0, 14.0 };

        (void) state;
        for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++)
                for (double t = 0.0; t <= 1.0; t += 0.05) {
                        double s = scales[i], bound = measure_term_bound(t, s), worst = 0.0;

                        for (double u = 0.0; u <= 1.0 + 1e-12; u += 0.01) {
                                double truth = t / s + u * (1.0 - 1.0 / s);

                                assert_true(fabs(t - truth) <= bound + 1e-12);
                                worst = fmax(worst, fabs(t - truth));
                        }
                        assert_near(worst, bound, 1e-9);
                        /* a difference a - b of terms from two sets */
                        for (double u = 0.0; u <= 1.0 + 1e-12; u += 0.05)
                                for (double w = 0.0; w <= 1.0 + 1e-12; w += 0.05) {
                                        double b = 1.0 - t, truth_a = t / s + u * (1.0 - 1.0 / s);
                                        double truth_b = b / 2.0 + w / 2.0;

                                        assert_true(fabs((t - b) - (truth_a - truth_b)) <=
                                                    bound + measure_term_bound(b, 2.0) + 1e-12);
                                }
                }
        assert_near(measure_term_bound(-0.25, 2.0), 0.375, 1e-12);
        assert_near(measure_term_bound(0.3, 1.0), 0.0, 1e-12);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode),
                cmocka_unit_test(test_accumulation_over_resets),
                cmocka_unit_test(test_reset_keeps_precision),
                cmocka_unit_test(test_multiplex_scaling),
                cmocka_unit_test(test_phases_meet_rotation),
                cmocka_unit_test(test_term_bound_holds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

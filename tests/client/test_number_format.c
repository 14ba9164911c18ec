/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CLI's number formatting gives printf's text: "%.17g" and "%" PRIu64, for random values
 * of every magnitude, the metric and count values the outputs hold, ties and edges.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli/number-format.h"

static uint64_t state = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ULL);

        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
}

static void check(double x) {
        char want[64], got[NUMBER_TEXT_MAX];
        size_t n = number_format_g17(x, got);

        (void) snprintf(want, sizeof(want), "%.17g", x);
        if (strcmp(got, want) != 0)
                fail_msg("%a: got %s, want %s", x, got, want);
        assert_int_equal(n, strlen(want));
}

static void test_g17_edges(void **state_) {
        static const double values[] = {
                0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e-6, 9.9999999999999995e-7, 1e-5, 1e-4, 0.001, 99.999999999999986,
                100.0, 1e16, 1e17, 9.9999999999999984e16, 1e22, 1e300, 5e-324, 2.2250738585072014e-308,
                9007199254740992.0, 9007199254740993.0, 4503599627370495.5, 20.034313718916266,
                40.000000028887058, 0.30000000000000004, 123456789.125, 1.5, 2.5, 0.125, 1e-7,
                INFINITY, -INFINITY, NAN, 18446744073709551615.0, 3.0517578125e-05,
        };

        for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
                check(values[i]);
}

static void test_g17_random(void **state_) {
        for (int i = 0; i < 2000000; i++) {
                uint64_t bits = next();
                double x;

                /* any finite double, then the magnitudes outputs hold */
                memcpy(&x, &bits, sizeof(x));
                if (isfinite(x))
                        check(x);
                check(ldexp((double) (bits >> 11), -53) * pow(10.0, (double) (int) (next() % 30) - 8));
                check((double) (next() >> (next() % 64)));
                check((double) (next() % 100000) / 1000.0);
        }
}

static void test_u64(void **state_) {
        char got[NUMBER_TEXT_MAX], want[32];

        for (int i = 0; i < 100000; i++) {
                uint64_t v = next() >> (next() % 64);

                assert_int_equal(number_format_u64(v, got), (size_t) snprintf(want, sizeof(want), "%" PRIu64, v));
                assert_string_equal(got, want);
        }
        assert_int_equal(number_format_u64(0, got), 1);
        assert_string_equal(got, "0");
        (void) number_format_u64(UINT64_MAX, got);
        assert_string_equal(got, "18446744073709551615");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_g17_edges),
                cmocka_unit_test(test_g17_random),
                cmocka_unit_test(test_u64),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

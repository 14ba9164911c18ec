/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: formulas evaluated by muparser
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "events/metrics.h"
#include "macro.h"

/* cmocka 1.1.5 has no double comparison */
static void assert_near(double got, double want, double tolerance) {
        if (!(fabs(got - want) <= tolerance))
                fail_msg("got %.17g, want %.17g within %g", got, want, tolerance);
}

static void test_evaluate(void **state) {
        MetricSet *s = NULL;
        char reason[256];
        double v[4];
        int a, b, smt;

        (void) state;
        assert_int_equal(metric_set_new(&s), 0);
        a = metric_set_add_variable(s, "UOPS_RETIRED.RETIRE_SLOTS");
        b = metric_set_add_variable(s, "CPU_CLK_UNHALTED.THREAD");
        smt = metric_set_add_variable(s, "SMT_on");
        assert_true(a >= 0 && b >= 0 && smt >= 0);
        assert_int_equal(metric_set_add_variable(s, "SMT_on"), -EEXIST);
        /* a formula may use one defined after it */
        assert_int_equal(metric_set_add_formula(s, "tma_retiring", "UOPS_RETIRED.RETIRE_SLOTS / slots", reason,
                                                sizeof(reason)), 0);
        assert_int_equal(metric_set_add_formula(s, "slots", "4 * (SMT_on ? CPU_CLK_UNHALTED.THREAD / 2 : CPU_CLK_UNHALTED.THREAD)",
                                                reason, sizeof(reason)), 1);
        assert_int_equal(metric_set_add_formula(s, "rest", "max(0, 1 - tma_retiring)", reason, sizeof(reason)), 2);
        assert_int_equal(metric_set_add_formula(s, "nothing", "CPU_CLK_UNHALTED.THREAD / 0 * 0", reason,
                                                sizeof(reason)), 3);
        assert_int_equal(metric_set_compile(s, reason, sizeof(reason)), 0);
        assert_int_equal(metric_set_n_formulas(s), 4);
        assert_int_equal(metric_set_formula_index(s, "rest"), 2);
        assert_int_equal(metric_set_variable_index(s, "SMT_on"), smt);

        metric_set_set(s, (size_t) a, 1000);
        metric_set_set(s, (size_t) b, 1000);
        metric_set_set(s, (size_t) smt, 0);
        assert_int_equal(metric_set_evaluate(s, v, 4), 0);
        assert_near(v[0], 0.25, 1e-12);
        assert_near(v[1], 4000, 1e-9);
        assert_near(v[2], 0.75, 1e-12);
        assert_true(isnan(v[3]));               /* x / 0 is undefined, as in perf */

        metric_set_set(s, (size_t) smt, 1);
        assert_int_equal(metric_set_evaluate(s, v, 4), 0);
        assert_near(v[0], 0.5, 1e-12);
        metric_set_free(s);
}

/* perf's d_ratio (0 for a zero denominator, where nothing happened) and the variables a
 * metric uses through others, for its multiplexing scale */
static void test_d_ratio_and_variables(void **state) {
        MetricSet *s = NULL;
        char reason[256];
        bool used[3];
        double v[3];
        int a, b, c;

        (void) state;
        assert_int_equal(metric_set_new(&s), 0);
        a = metric_set_add_variable(s, "A");
        b = metric_set_add_variable(s, "B");
        c = metric_set_add_variable(s, "C");
        assert_int_equal(metric_set_add_formula(s, "r", "d_ratio(A, B)", reason, sizeof(reason)), 0);
        assert_int_equal(metric_set_add_formula(s, "top", "r + 1", reason, sizeof(reason)), 1);
        assert_int_equal(metric_set_add_formula(s, "other", "C", reason, sizeof(reason)), 2);
        assert_int_equal(metric_set_compile(s, reason, sizeof(reason)), 0);
        metric_set_set(s, (size_t) a, 3);
        metric_set_set(s, (size_t) b, 0);
        assert_int_equal(metric_set_evaluate(s, v, 3), 0);
        assert_near(v[0], 0, 0);
        metric_set_set(s, (size_t) b, 4);
        assert_int_equal(metric_set_evaluate(s, v, 3), 0);
        assert_near(v[0], 0.75, 1e-15);
        assert_near(v[1], 1.75, 1e-15);
        /* an unknown input is not 0: NaN goes through d_ratio */
        metric_set_set(s, (size_t) a, NAN);
        assert_int_equal(metric_set_evaluate(s, v, 3), 0);
        assert_true(isnan(v[1]));
        assert_int_equal(metric_set_formula_variables(s, 1, used), 0);
        assert_true(used[a] && used[b] && !used[c]);
        assert_int_equal(metric_set_formula_variables(s, 2, used), 0);
        assert_true(!used[a] && !used[b] && used[c]);
        metric_set_free(s);
}

/* Unknown is never 0: a NaN input gives NaN through every operator and function of the
 * engine, and a branch not taken does not spread its unknown */
static void test_nan_everywhere(void **state) {
        static const char *const unknown_out[] = {
                "max(0, K - U)", "min(1, K - U)", "max(0, U, K)", "min(U, K, 2)", "d_ratio(U, K)",
                "d_ratio(K, U)", "U > 0.5 ? K : 0", "K > U ? K : 0", "(U > 0) * K",
                "U >= 0 && K > 0 ? 1 : 0", "max(0, unknown_helper)", "sum(U, K)", "avg(K, U)",
                "U * 0",
        };
        static const char *const known_out[] = {
                "S ? K : U", "0 > 0 ? U - K : K", "S < 1 ? U : max(0, K)", "d_ratio(K, 0)",
        };
        size_t n_unknown = ELEMENTSOF(unknown_out), n = n_unknown + ELEMENTSOF(known_out);
        MetricSet *s = NULL;
        char reason[256], name[16];
        double v[32];
        int k, u, sv;

        (void) state;
        assert_int_equal(metric_set_new(&s), 0);
        k = metric_set_add_variable(s, "K");
        u = metric_set_add_variable(s, "U");
        sv = metric_set_add_variable(s, "S");
        assert_int_equal(metric_set_add_formula(s, "unknown_helper", "U + 1", reason, sizeof(reason)), 0);
        for (size_t i = 0; i < n; i++) {
                (void) snprintf(name, sizeof(name), "f%zu", i);
                assert_int_equal(metric_set_add_formula(s, name, i < n_unknown ? unknown_out[i] : known_out[i - n_unknown],
                                                        reason, sizeof(reason)),
                                 (int) i + 1);
        }
        assert_int_equal(metric_set_compile(s, reason, sizeof(reason)), 0);
        metric_set_set(s, (size_t) k, 0.25);
        metric_set_set(s, (size_t) u, NAN);
        metric_set_set(s, (size_t) sv, 1);
        assert_int_equal(metric_set_evaluate(s, v, n + 1), 0);
        for (size_t i = 0; i < n_unknown; i++) {
                if (!isnan(v[i + 1]))
                        fail_msg("%s is %g with U unknown, not NaN", unknown_out[i], v[i + 1]);
        }
        assert_near(v[n_unknown + 1], 0.25, 0);
        assert_near(v[n_unknown + 2], 0.25, 0);
        assert_near(v[n_unknown + 3], 0.25, 0);
        assert_near(v[n_unknown + 4], 0, 0);
        /* with U known again every formula has its value: the stand-ins were put back */
        metric_set_set(s, (size_t) u, 0.5);
        assert_int_equal(metric_set_evaluate(s, v, n + 1), 0);
        assert_near(v[1], 0, 0);
        assert_near(v[5], 2, 1e-15);
        assert_near(v[9], 0.25, 0);
        metric_set_free(s);
}

static void expect_compile_error(const char *formula, const char *expected, int error) {
        MetricSet *s = NULL;
        char reason[256] = "";

        assert_int_equal(metric_set_new(&s), 0);
        assert_true(metric_set_add_variable(s, "INST_RETIRED.ANY") >= 0);
        assert_true(metric_set_add_formula(s, "m", formula, reason, sizeof(reason)) >= 0);
        assert_true(metric_set_add_formula(s, "other", "m + 1", reason, sizeof(reason)) >= 0);
        assert_int_equal(metric_set_compile(s, reason, sizeof(reason)), error);
        if (!strstr(reason, expected))
                fail_msg("'%s': reason '%s' lacks '%s'", formula, reason, expected);
        metric_set_free(s);
}

static void test_errors(void **state) {
        MetricSet *s = NULL;
        char reason[256];

        (void) state;
        expect_compile_error("INST_RETIRED.ANY +", "formula of 'm'", -EINVAL);
        expect_compile_error("INST_RETIRED.ANYY * 2", "'INST_RETIRED.ANYY'", -EINVAL);
        expect_compile_error("other * 2", "depends on itself", -EINVAL);
        expect_compile_error("(INST_RETIRED.ANY", "formula of 'm'", -EINVAL);

        assert_int_equal(metric_set_new(&s), 0);
        assert_int_equal(metric_set_add_formula(s, "9lives", "1", reason, sizeof(reason)), -EINVAL);
        assert_int_equal(metric_set_add_formula(s, "a-b", "1", reason, sizeof(reason)), -EINVAL);
        assert_int_equal(metric_set_add_formula(s, "x", "1", reason, sizeof(reason)), 0);
        assert_int_equal(metric_set_add_formula(s, "x", "2", reason, sizeof(reason)), -EEXIST);
        assert_int_equal(metric_set_add_variable(s, "x"), -EEXIST);
        assert_int_equal(metric_set_add_variable(s, "bad name"), -EINVAL);
        assert_int_equal(metric_set_compile(s, reason, sizeof(reason)), 0);
        /* nothing is added after compiling */
        assert_int_equal(metric_set_add_variable(s, "y"), -EINVAL);
        metric_set_free(s);
        assert_null(metric_set_free(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_evaluate),
                cmocka_unit_test(test_d_ratio_and_variables),
                cmocka_unit_test(test_nan_everywhere),
                cmocka_unit_test(test_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: TopDown recipe selection from what hello reports
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "measure/topdown.h"

static pmugate_info machine(const char *key, const char *label, unsigned perf_metrics, unsigned fixed) {
        pmugate_info info = { .has_pmu = true, .family = 6, .gp_counters = 8, .fixed_counters = fixed,
                              .perf_metrics = perf_metrics, .counter_width = 48 };

        (void) snprintf(info.model_key, sizeof(info.model_key), "%s", key);
        (void) snprintf(info.model_label, sizeof(info.model_label), "%s", label);
        return info;
}

static void test_recipes(void **state) {
        const TopdownRecipe *recipe;
        const char *group;
        pmugate_info info;

        (void) state;
        info = machine("skx", "Skylake-SP", 0, 3);
        assert_int_equal(topdown_recipe(&info, 2, &recipe, &group, NULL, 0), 0);
        assert_string_equal(group, "topdown-l2");
        assert_string_equal(recipe->model, "skx");
        info = machine("clx", "Cascade Lake", 0, 3);
        assert_int_equal(topdown_recipe(&info, 1, &recipe, &group, NULL, 0), 0);
        assert_string_equal(group, "topdown-l1");
        info = machine("icx", "Ice Lake-SP", 1, 4);
        assert_int_equal(topdown_recipe(&info, 2, &recipe, &group, NULL, 0), 0);
        assert_non_null(strstr(recipe->method, "PERF_METRICS"));
        info = machine("spr", "Sapphire Rapids", 2, 4);
        assert_int_equal(topdown_recipe(&info, 2, &recipe, &group, NULL, 0), 0);
        assert_string_equal(group, "topdown-l2");
        /* AMD: generic counters only, no PERF_METRICS and no fixed counters needed */
        info = machine("zen4", "Zen 4 (Genoa)", 0, 0);
        assert_int_equal(topdown_recipe(&info, 1, &recipe, &group, NULL, 0), 0);
        assert_string_equal(group, "topdown-l1");
        assert_non_null(strstr(recipe->method, "6 dispatch slots"));
        info = machine("zen5", "Zen 5 (Turin)", 0, 0);
        assert_int_equal(topdown_recipe(&info, 2, &recipe, &group, NULL, 0), 0);
        assert_string_equal(group, "topdown-l2");
        assert_non_null(strstr(recipe->method, "8 dispatch slots"));
}

static void test_refusals(void **state) {
        const char *group;
        char reason[256];
        pmugate_info info;

        (void) state;
        /* a model without a recipe: the reason names it */
        info = machine("zen3", "AMD Zen 3", 0, 0);
        assert_int_equal(topdown_recipe(&info, 1, NULL, &group, reason, sizeof(reason)), -EOPNOTSUPP);
        assert_non_null(strstr(reason, "'zen3'"));
        assert_non_null(strstr(reason, "AMD Zen 3"));
        info = machine("", "", 0, 0);
        info.model = 0x99;
        assert_int_equal(topdown_recipe(&info, 1, NULL, &group, reason, sizeof(reason)), -EOPNOTSUPP);
        assert_non_null(strstr(reason, "'unknown'"));
        assert_non_null(strstr(reason, "0x99"));
        /* an SPR whose PMU reports only level-1 PERF_METRICS (a hypervisor, say) */
        info = machine("spr", "Sapphire Rapids", 1, 4);
        assert_int_equal(topdown_recipe(&info, 1, NULL, &group, reason, sizeof(reason)), 0);
        assert_int_equal(topdown_recipe(&info, 2, NULL, &group, reason, sizeof(reason)), -EOPNOTSUPP);
        assert_non_null(strstr(reason, "PERF_METRICS level 2"));
        info = machine("icx", "Ice Lake-SP", 0, 4);
        assert_int_equal(topdown_recipe(&info, 1, NULL, &group, reason, sizeof(reason)), -EOPNOTSUPP);
        info = machine("icx", "Ice Lake-SP", 1, 3);
        assert_int_equal(topdown_recipe(&info, 1, NULL, &group, reason, sizeof(reason)), -EOPNOTSUPP);
        assert_non_null(strstr(reason, "fixed counters"));
        info = machine("spr", "Sapphire Rapids", 2, 4);
        assert_int_equal(topdown_recipe(&info, 5, NULL, &group, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "use 1 to 4"));
        /* levels 3 and 4 are the generated group files, measured on the level-2 base */
        assert_int_equal(topdown_recipe(&info, 3, NULL, &group, reason, sizeof(reason)), 0);
        assert_string_equal(group, "topdown-l3");
        assert_int_equal(topdown_recipe(&info, 4, NULL, &group, reason, sizeof(reason)), 0);
        assert_string_equal(group, "topdown-l4");
        info = machine("spr", "Sapphire Rapids", 1, 4);
        assert_int_equal(topdown_recipe(&info, 3, NULL, &group, reason, sizeof(reason)), -EOPNOTSUPP);
        info = machine("spr", "Sapphire Rapids", 2, 4);
        assert_int_equal(topdown_recipe(&info, 0, NULL, &group, reason, sizeof(reason)), -EINVAL);
        info.has_pmu = false;
        assert_int_equal(topdown_recipe(&info, 1, NULL, &group, reason, sizeof(reason)), -EOPNOTSUPP);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_recipes),
                cmocka_unit_test(test_refusals),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

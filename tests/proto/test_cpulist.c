/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: CPU list parsing and formatting
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "cpulist.h"

static void test_parse(void **state) {
        uint32_t *cpus = NULL;
        size_t n;

        (void) state;
        assert_int_equal(cpulist_parse("0-3,8, 10-11,2", 64, &cpus, &n), 0);
        assert_int_equal(n, 7);
        assert_int_equal(cpus[0], 0);
        assert_int_equal(cpus[3], 3);
        assert_int_equal(cpus[4], 8);
        assert_int_equal(cpus[6], 11);
        free(cpus);
}

static void test_parse_errors(void **state) {
        uint32_t *cpus = NULL;
        size_t n;

        (void) state;
        assert_int_equal(cpulist_parse("", 64, &cpus, &n), -EINVAL);
        assert_int_equal(cpulist_parse("3-1", 64, &cpus, &n), -EINVAL);
        assert_int_equal(cpulist_parse("1,,2", 64, &cpus, &n), -EINVAL);
        assert_int_equal(cpulist_parse("a", 64, &cpus, &n), -EINVAL);
        assert_int_equal(cpulist_parse("-1", 64, &cpus, &n), -EINVAL);
        assert_int_equal(cpulist_parse("64", 64, &cpus, &n), -ERANGE);
        assert_int_equal(cpulist_parse("99999999999", 64, &cpus, &n), -ERANGE);
}

static void test_format(void **state) {
        static const uint32_t cpus[] = { 11, 0, 1, 2, 3, 8, 10 };
        char buf[64];

        (void) state;
        assert_int_equal(cpulist_format(cpus, 7, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "0-3,8,10-11");
        assert_int_equal(cpulist_format(cpus, 0, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "");
        assert_int_equal(cpulist_format(cpus, 7, buf, 4), -ENOBUFS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_parse_errors),
                cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

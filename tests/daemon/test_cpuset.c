/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: CPU bitmaps, their iteration and their text form
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "cpulist.h"
#include "cpuset.h"

static void test_next_and_foreach(void **state) {
        CpuSet s;
        uint32_t seen[8], n = 0;

        (void) state;
        cpuset_clear(&s);
        assert_int_equal(cpuset_next(&s, 0), PMUGATE_CPUS_MAX);
        cpuset_add(&s, 0);
        cpuset_add(&s, 63);
        cpuset_add(&s, 64);
        cpuset_add(&s, PMUGATE_CPUS_MAX - 1);
        cpuset_add(&s, PMUGATE_CPUS_MAX);       /* out of range: ignored */
        assert_int_equal(cpuset_next(&s, 1), 63);
        assert_int_equal(cpuset_next(&s, 64), 64);
        assert_int_equal(cpuset_next(&s, 65), PMUGATE_CPUS_MAX - 1);
        CPUSET_FOREACH(cpu, &s)
                seen[n++] = cpu;
        assert_int_equal(n, 4);
        assert_int_equal(seen[3], PMUGATE_CPUS_MAX - 1);
}

static void test_format_round_trip(void **state) {
        static const char *const lists[] = { "0", "0-3,8,10-11", "63-64,127-129", "5,8191" };
        char *buf = malloc(CPUSET_FORMAT_MAX);
        CpuSet s;

        (void) state;
        assert_non_null(buf);
        for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
                uint32_t *cpus = NULL;
                size_t n;

                assert_int_equal(cpulist_parse(lists[i], PMUGATE_CPUS_MAX, &cpus, &n), 0);
                cpuset_clear(&s);
                for (size_t j = 0; j < n; j++)
                        cpuset_add(&s, cpus[j]);
                free(cpus);
                assert_int_equal(cpuset_format(&s, buf, CPUSET_FORMAT_MAX), 0);
                assert_string_equal(buf, lists[i]);
        }

        /* The worst case, every other CPU, fits the documented bound. */
        cpuset_clear(&s);
        for (uint32_t c = 0; c < PMUGATE_CPUS_MAX; c += 2)
                cpuset_add(&s, c);
        assert_int_equal(cpuset_format(&s, buf, CPUSET_FORMAT_MAX), 0);
        assert_int_equal(cpuset_format(&s, buf, 16), -ENOBUFS);
        cpuset_clear(&s);
        assert_int_equal(cpuset_format(&s, buf, 1), 0);
        assert_string_equal(buf, "");
        free(buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_next_and_foreach),
                cmocka_unit_test(test_format_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

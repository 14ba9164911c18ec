/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: CPU expressions of the command line (plain lists and likwid's domains)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cpu-expr.h"

/* Two sockets of four cores with SMT: CPUs 0-3 and 8-11 on socket 0 (threads 0 and 1 of its
 * cores), 4-7 and 12-15 on socket 1; CPU 15 offline. */
static pmugate_cpu machine_cpus[16];
static pmugate_info machine = { .cpus = machine_cpus, .n_cpus = 16 };

static void build_machine(void) {
        for (uint32_t cpu = 0; cpu < 16; cpu++)
                machine_cpus[cpu] = (pmugate_cpu) {
                        .cpu = cpu,
                        .package = (int32_t) ((cpu % 8) / 4),
                        .core = (int32_t) (cpu % 4),
                        .thread = cpu / 8,
                        .online = cpu != 15,
                };
}

static void expect(const char *text, const uint32_t *want, size_t n_want) {
        char reason[CPU_EXPR_REASON_MAX] = "";
        uint32_t *cpus = NULL;
        size_t n = 0;

        if (cpu_expr_parse(text, &machine, &cpus, &n, reason, sizeof(reason)) != 0)
                fail_msg("%s: %s", text, reason);
        assert_int_equal(n, n_want);
        for (size_t i = 0; i < n; i++)
                if (cpus[i] != want[i])
                        fail_msg("%s: CPU %zu is %u, expected %u", text, i, cpus[i], want[i]);
        free(cpus);
}

static void expect_error(const char *text, const char *reason_part) {
        char reason[CPU_EXPR_REASON_MAX] = "";
        uint32_t *cpus = NULL;
        size_t n = 0;
        int r = cpu_expr_parse(text, &machine, &cpus, &n, reason, sizeof(reason));
        /* syntax: -EINVAL; a CPU or domain the machine lacks: -ENXIO */
        bool missing = strstr(reason_part, "exist") || strstr(reason_part, "offline") ||
                       strstr(reason_part, "has 8") || strstr(reason_part, "no socket");

        assert_int_equal(r, missing ? -ENXIO : -EINVAL);
        assert_null(cpus);
        if (!strstr(reason, reason_part))
                fail_msg("%s: reason '%s' lacks '%s'", text, reason, reason_part);
}

static void test_plain(void **state) {
        (void) state;
        expect("0-3,8", (const uint32_t[]) { 0, 1, 2, 3, 8 }, 5);
        expect("5,1", (const uint32_t[]) { 5, 1 }, 2);                  /* the order given */
        expect("2,2-3", (const uint32_t[]) { 2, 3 }, 2);                /* each once */
}

static void test_domains(void **state) {
        (void) state;
        /* physical cores first: socket 0 is cores 0-3 (CPUs 0-3), then their siblings 8-11 */
        expect("S0:0-3", (const uint32_t[]) { 0, 1, 2, 3 }, 4);
        expect("S0:3-5", (const uint32_t[]) { 3, 8, 9 }, 3);
        expect("S1:0,2", (const uint32_t[]) { 4, 6 }, 2);
        expect("S1:", (const uint32_t[]) { 4, 5, 6, 7, 12, 13, 14 }, 7);        /* 15 is offline */
        expect("N:0-7", (const uint32_t[]) { 0, 1, 2, 3, 4, 5, 6, 7 }, 8);
        expect("N:8-9", (const uint32_t[]) { 8, 9 }, 2);
        expect("C0:0-1", (const uint32_t[]) { 0, 1 }, 2);
        expect("M1:0", (const uint32_t[]) { 4 }, 1);
        expect("S0:0-1@S1:0-1", (const uint32_t[]) { 0, 1, 4, 5 }, 4);
        expect("S0:0-1,S1:0-1", (const uint32_t[]) { 0, 1, 4, 5 }, 4);
        expect("S0:0,1,S1:0", (const uint32_t[]) { 0, 1, 4 }, 3);
        expect("C0:,M1:", (const uint32_t[]) { 0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14 }, 15);
}

static void test_errors(void **state) {
        (void) state;
        expect_error("3-1", "CPU list '3-1' is descending");
        expect_error("S0:3-1", "descending");
        expect_error("99", "CPU 99 does not exist");
        expect_error("15", "CPU 15 is offline");
        expect_error("S2:0", "no socket 2");
        expect_error("S0:8", "S0 has 8 CPUs (S0:0-7)");
        expect_error("X0:1", "'X0' is not a domain");
        expect_error("S:1", "needs a domain number");
        expect_error("N1:0", "just N");
        expect_error("0-", "not a CPU number");
        expect_error("a", "not a CPU number");
        expect_error("", "empty");
        expect_error(",", "selects no CPU");
        expect_error("0, 1", "no spaces");
        expect_error("99999999999999999999", "not a CPU number");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain),
                cmocka_unit_test(test_domains),
                cmocka_unit_test(test_errors),
        };

        build_machine();
        return cmocka_run_group_tests(tests, NULL, NULL);
}

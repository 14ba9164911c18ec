/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: -o file names (likwid-perfctr's %h %p %j %r) and the format their suffix names
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output-file.h"

static void clear_env(void) {
        static const char *const names[] = {
                "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "SLURM_PROCID", "PMI_RANK", "PMIX_RANK",
                "OMPI_COMM_WORLD_RANK",
        };

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                (void) unsetenv(names[i]);
}

static void test_expand(void **state) {
        char buf[OUTPUT_PATH_MAX], reason[256], want[OUTPUT_PATH_MAX], host[256];

        (void) state;
        clear_env();
        assert_int_equal(output_path_expand("out-%j-%r.csv", buf, sizeof(buf), reason, sizeof(reason)), 0);
        assert_string_equal(buf, "out-nojob-0.csv");
        assert_int_equal(setenv("SLURM_JOB_ID", "4711", 1), 0);
        assert_int_equal(setenv("SLURM_PROCID", "3", 1), 0);
        assert_int_equal(setenv("PMI_RANK", "9", 1), 0);
        assert_int_equal(output_path_expand("/d/%j/r%r-100%%", buf, sizeof(buf), reason, sizeof(reason)), 0);
        assert_string_equal(buf, "/d/4711/r3-100%");           /* Slurm's rank before PMI's */
        (void) unsetenv("SLURM_PROCID");
        assert_int_equal(output_path_expand("%r", buf, sizeof(buf), reason, sizeof(reason)), 0);
        assert_string_equal(buf, "9");
        assert_int_equal(output_path_expand("p%p", buf, sizeof(buf), reason, sizeof(reason)), 0);
        (void) snprintf(want, sizeof(want), "p%d", (int) getpid());
        assert_string_equal(buf, want);
        assert_int_equal(gethostname(host, sizeof(host)), 0);
        host[strcspn(host, ".")] = '\0';
        assert_int_equal(output_path_expand("%h.txt", buf, sizeof(buf), reason, sizeof(reason)), 0);
        (void) snprintf(want, sizeof(want), "%s.txt", host);
        assert_string_equal(buf, want);
        /* the environment cannot add directories */
        assert_int_equal(setenv("SLURM_JOB_ID", "../../etc", 1), 0);
        assert_int_equal(output_path_expand("x-%j", buf, sizeof(buf), reason, sizeof(reason)), 0);
        assert_null(strchr(buf, '/'));
        clear_env();
}

static void test_expand_errors(void **state) {
        char buf[16], reason[256];

        (void) state;
        assert_int_equal(output_path_expand("a%q", buf, sizeof(buf), reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "%q"));
        assert_int_equal(output_path_expand("a%", buf, sizeof(buf), reason, sizeof(reason)), -EINVAL);
        assert_int_equal(output_path_expand("a-very-long-file-name", buf, sizeof(buf), reason,
                                            sizeof(reason)),
                         -ENAMETOOLONG);
}

static void test_suffix(void **state) {
        OutputFormat f = OUTPUT_TABLE;

        (void) state;
        assert_true(output_format_from_path("a.csv", &f));
        assert_int_equal(f, OUTPUT_CSV);
        assert_true(output_format_from_path("dir.x/a.JSON", &f));
        assert_int_equal(f, OUTPUT_JSON_DOCUMENT);
        assert_true(output_format_from_path("a.jsonl", &f));
        assert_int_equal(f, OUTPUT_JSONL);
        assert_true(output_format_from_path("a.txt", &f));
        assert_int_equal(f, OUTPUT_TABLE);
        assert_false(output_format_from_path("a.out", &f));
        assert_false(output_format_from_path("dir.csv/name", &f));
        assert_false(output_format_from_path("name", &f));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_expand),
                cmocka_unit_test(test_expand_errors),
                cmocka_unit_test(test_suffix),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

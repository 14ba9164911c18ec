/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: -o file names (likwid-perfctr's %h %p %j %r) and the format their suffix names
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/output-file.h"

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

/* -o never writes through a link or into a file another uid owns; the caller's own file is
 * truncated, a new one created, a character device written. */
static void test_open(void **state) {
        char dir[] = "/tmp/pmugate-test-output-XXXXXX", path[256], link[256], fifo[256], reason[512];
        FILE *f = NULL;
        struct stat st;

        (void) state;
        assert_non_null(mkdtemp(dir));
        (void) snprintf(path, sizeof(path), "%s/out.csv", dir);
        (void) snprintf(link, sizeof(link), "%s/link.csv", dir);
        (void) snprintf(fifo, sizeof(fifo), "%s/fifo", dir);

        assert_int_equal(output_file_open(path, &f, reason, sizeof(reason)), 0);
        assert_true(fputs("0123456789", f) >= 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(output_file_open(path, &f, reason, sizeof(reason)), 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, 0);        /* one's own file: truncated */

        assert_int_equal(symlink(path, link), 0);
        reason[0] = '\0';
        assert_int_equal(output_file_open(link, &f, reason, sizeof(reason)), -ELOOP);
        assert_non_null(strstr(reason, "symbolic link"));
        assert_int_equal(unlink(link), 0);
        assert_int_equal(symlink("/nonexistent/target", link), 0);     /* dangling: not created through */
        assert_int_equal(output_file_open(link, &f, reason, sizeof(reason)), -ELOOP);
        assert_int_equal(lstat("/nonexistent/target", &st), -1);

        assert_int_equal(mkfifo(fifo, 0600), 0);
        /* a FIFO: nobody reads it (ENXIO) or someone does, and it is no regular file (EINVAL) */
        assert_true(output_file_open(fifo, &f, reason, sizeof(reason)) < 0);
        assert_int_equal(output_file_open(dir, &f, reason, sizeof(reason)), -EISDIR);

        assert_int_equal(output_file_open("/dev/null", &f, reason, sizeof(reason)), 0);
        assert_int_equal(fclose(f), 0);

        if (geteuid() == 0) {
                assert_int_equal(chown(path, 65534, 65534), 0);
                reason[0] = '\0';
                assert_int_equal(output_file_open(path, &f, reason, sizeof(reason)), -EPERM);
                assert_non_null(strstr(reason, "belongs to uid 65534"));
        }

        assert_int_equal(unlink(fifo), 0);
        assert_int_equal(unlink(link), 0);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_expand),
                cmocka_unit_test(test_expand_errors),
                cmocka_unit_test(test_suffix),
                cmocka_unit_test(test_open),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

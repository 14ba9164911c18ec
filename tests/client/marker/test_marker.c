/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the markers: region names, RDPMC indexes, detection and fallback, the results
 * file parser, and markers without a runner
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "marker/marker-internal.h"
#include "pmugate-limits.h"
#include "pmugate/marker.h"

static void test_names(void **state) {
        char long_name[PMUGATE_MARKER_NAME_MAX + 2];

        (void) state;
        assert_true(marker_name_valid("solve"));
        assert_true(marker_name_valid("phase-1.a:b/c"));
        assert_false(marker_name_valid(""));
        assert_false(marker_name_valid(NULL));
        assert_false(marker_name_valid("two words"));
        assert_false(marker_name_valid("tab\there"));
        assert_false(marker_name_valid("new\nline"));
        assert_false(marker_name_valid("\xc3\xa9t\xc3\xa9"));
        memset(long_name, 'x', sizeof(long_name));
        long_name[PMUGATE_MARKER_NAME_MAX] = '\0';
        assert_true(marker_name_valid(long_name));
        long_name[PMUGATE_MARKER_NAME_MAX] = 'x';
        long_name[PMUGATE_MARKER_NAME_MAX + 1] = '\0';
        assert_false(marker_name_valid(long_name));
}

static void test_rdpmc_index(void **state) {
        uint32_t index;

        (void) state;
        assert_int_equal(marker_rdpmc_index(0xC1, &index), 0);
        assert_int_equal(index, 0);
        assert_int_equal(marker_rdpmc_index(0xC8, &index), 0);
        assert_int_equal(index, 7);
        assert_int_equal(marker_rdpmc_index(0x309, &index), 0);
        assert_int_equal(index, 1U << 30);
        assert_int_equal(marker_rdpmc_index(0x30C, &index), 0);
        assert_int_equal(index, (1U << 30) | 3);
        assert_int_equal(marker_rdpmc_index(0x329, &index), 0);
        assert_int_equal(index, 1U << 29);
        /* event selects, the global control and the next registers are not counters */
        assert_int_equal(marker_rdpmc_index(0x186, &index), -EINVAL);
        assert_int_equal(marker_rdpmc_index(0x38F, &index), -EINVAL);
        assert_int_equal(marker_rdpmc_index(0xC9, &index), -EINVAL);
        assert_int_equal(marker_rdpmc_index(0x30D, &index), -EINVAL);
        /* AMD: PerfCtr i is RDPMC index i; its event select and a seventh pair are not */
        assert_int_equal(marker_rdpmc_index(0xC0010201, &index), 0);
        assert_int_equal(index, 0);
        assert_int_equal(marker_rdpmc_index(0xC001020B, &index), 0);
        assert_int_equal(index, 5);
        assert_int_equal(marker_rdpmc_index(0xC0010200, &index), -EINVAL);
        assert_int_equal(marker_rdpmc_index(0xC001020D, &index), -EINVAL);
        assert_int_equal(marker_rdpmc_index(0xC0000301, &index), -EINVAL);
}

static void test_rdpmc_decide(void **state) {
        char reason[128];

        (void) state;
        /* the fast path needs both: the kernel's permission and a probe that worked */
        assert_int_equal(marker_rdpmc_decide(2, true, reason, sizeof(reason)), MARKER_READ_RDPMC);
        assert_non_null(strstr(reason, "is 2"));
        assert_int_equal(marker_rdpmc_decide(1, true, reason, sizeof(reason)), MARKER_READ_RDPMC);
        assert_non_null(strstr(reason, "perf event"));
        /* everything else falls back to the daemon, saying why */
        assert_int_equal(marker_rdpmc_decide(2, false, reason, sizeof(reason)), MARKER_READ_DAEMON);
        assert_non_null(strstr(reason, "faulted"));
        assert_int_equal(marker_rdpmc_decide(1, false, reason, sizeof(reason)), MARKER_READ_DAEMON);
        assert_non_null(strstr(reason, "no perf event"));
        assert_int_equal(marker_rdpmc_decide(0, true, reason, sizeof(reason)), MARKER_READ_DAEMON);
        assert_non_null(strstr(reason, "disabled"));
        assert_int_equal(marker_rdpmc_decide(-ENOENT, false, reason, sizeof(reason)), MARKER_READ_DAEMON);
        assert_non_null(strstr(reason, "no x86 PMU"));
        assert_int_equal(marker_rdpmc_decide(-EINVAL, false, reason, sizeof(reason)), MARKER_READ_DAEMON);
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static void test_rdpmc_sysfs(void **state) {
        char root[] = "/tmp/test-marker-sysfs.XXXXXX", path[256];

        (void) state;
        assert_non_null(mkdtemp(root));
        assert_int_equal(marker_rdpmc_sysfs(root), -ENOENT);
        snprintf(path, sizeof(path), "%s/bus", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/bus/event_source", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/bus/event_source/devices", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/bus/event_source/devices/cpu", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/" MARKER_SYSFS_RDPMC, root);
        write_file(path, "2\n");
        assert_int_equal(marker_rdpmc_sysfs(root), 2);
        write_file(path, "1\n");
        assert_int_equal(marker_rdpmc_sysfs(root), 1);
        write_file(path, "0");
        assert_int_equal(marker_rdpmc_sysfs(root), 0);
        write_file(path, "22\n");
        assert_int_equal(marker_rdpmc_sysfs(root), -EINVAL);
        write_file(path, "");
        assert_int_equal(marker_rdpmc_sysfs(root), -EINVAL);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "rm -r %s", root);
        assert_int_equal(system(path), 0);
}

static volatile sig_atomic_t segv_seen;

static void on_segv(int signo) {
        (void) signo;
        segv_seen = 1;
}

static void test_rdpmc_probe(void **state) {
        struct sigaction mine = { .sa_handler = on_segv }, now;

        (void) state;
        /* whatever this machine allows, the probe returns and puts the program's own SIGSEGV
         * handler back */
        sigemptyset(&mine.sa_mask);
        assert_int_equal(sigaction(SIGSEGV, &mine, NULL), 0);
        (void) marker_rdpmc_probe(0);
        (void) marker_rdpmc_probe(UINT32_C(1) << 29);
        assert_int_equal(sigaction(SIGSEGV, NULL, &now), 0);
        assert_ptr_equal(now.sa_handler, on_segv);
        assert_int_equal(segv_seen, 0);
        signal(SIGSEGV, SIG_DFL);
}

static const char *GOOD = "pmugate-markers 1\n"
                          "mode daemon\n"
                          "columns 3\n"
                          "region 0 solve\n"
                          "region 1 setup\n"
                          "row 0 0 1 10 200000000 0 100 200 -3\n"
                          "row 1 0 1 10 50000000 1 5 6 7\n"
                          "row 0 1 -1 9 190000000 0 1 2 3\n"
                          "error 2 thread 1 stopped region 'x' without starting it\n";

static void test_file_good(void **state) {
        MarkerFile *f = NULL;
        char reason[256] = "";

        (void) state;
        assert_int_equal(marker_file_parse(GOOD, strlen(GOOD), 3, &f, reason, sizeof(reason)), 0);
        assert_string_equal(f->mode, "daemon");
        assert_int_equal(f->n_regions, 2);
        assert_string_equal(f->regions[1], "setup");
        assert_int_equal(f->n_rows, 3);
        assert_int_equal(f->rows[0].calls, 10);
        assert_int_equal(f->rows[0].time_ns, 200000000);
        assert_int_equal(f->rows[0].values[2], -3);
        assert_int_equal(f->rows[1].migrated, 1);
        assert_int_equal(f->rows[2].cpu, -1);
        assert_int_equal(f->n_errors, 1);
        assert_int_equal(f->errors[0].count, 2);
        assert_non_null(strstr(f->errors[0].text, "without starting"));
        marker_file_free(f);
}

/* Replaces the first occurrence of from in GOOD by to and expects a refusal naming line. */
static void refused(const char *from, const char *to, size_t columns, const char *want) {
        char text[2048], reason[256] = "";
        const char *at = strstr(GOOD, from);
        MarkerFile *f = NULL;

        assert_non_null(at);
        snprintf(text, sizeof(text), "%.*s%s%s", (int) (at - GOOD), GOOD, to, at + strlen(from));
        assert_int_equal(marker_file_parse(text, strlen(text), columns, &f, reason, sizeof(reason)),
                         -EBADMSG);
        assert_null(f);
        if (!strstr(reason, want))
                fail_msg("reason '%s' lacks '%s'", reason, want);
}

static const char *FAILED = "pmugate-markers 1\nfailed PMUGATE_MARKER_WIDTH is bad\n";
static const char *FAILED_ESCAPE = "pmugate-markers 1\nfailed \x1b[2J\n";

static void test_file_refused(void **state) {
        MarkerFile *f = NULL;
        char reason[256] = "";

        (void) state;
        refused("pmugate-markers 1", "pmugate-markers 2", 3, "line 1: not a pmugate marker file");
        refused("mode daemon", "mode fast", 3, "line 2");
        refused("columns 3", "columns 4", 3, "other registers");
        refused("region 1 setup", "region 2 setup", 3, "line 5: bad region");
        refused("region 1 setup", "region 1 two words", 3, "line 5");
        refused("row 0 0 1 10", "row 7 0 1 10", 3, "line 6: no region 7");
        refused("row 0 0 1 10", "row 0 0 99999 10", 3, "bad CPU");
        refused("row 0 0 1 10", "row 0 0 1 0", 3, "bad call count");
        refused("row 0 0 1 10", "row 0 0 1 -10", 3, "bad call count");
        refused("0 1 -1 9 190000000 0", "0 1 -1 9 190000000 10", 3, "moved calls");
        refused("100 200 -3", "100 200", 3, "fields");
        refused("100 200 -3", "100 200 x", 3, "bad count");
        refused("100 200 -3", "100 200 99999999999999999999", 3, "bad count");
        refused("row 0 0", "rows 0 0", 3, "unknown line");
        refused("error 2 thread", "error 0 thread", 3, "bad error");
        refused("without starting", "with\x1b[31m", 3, "control character");
        /* cut short inside a line, a NUL byte, nothing but a header */
        assert_int_equal(marker_file_parse(GOOD, strlen(GOOD) - 1, 3, &f, reason, sizeof(reason)), -EBADMSG);
        assert_non_null(strstr(reason, "cut short"));
        assert_int_equal(marker_file_parse("pmugate-markers 1\nmode d\0emon\ncolumns 3\n", 38, 3, &f, reason,
                                           sizeof(reason)), -EBADMSG);
        assert_int_equal(marker_file_parse("pmugate-markers 1\n", 18, 3, &f, reason, sizeof(reason)),
                         -EBADMSG);
        assert_int_equal(marker_file_parse("", 0, 3, &f, reason, sizeof(reason)), -EBADMSG);
        assert_null(f);
        /* a program whose markers could not start says why */
        assert_int_equal(marker_file_parse(FAILED, strlen(FAILED), 3, &f, reason, sizeof(reason)),
                         -ECANCELED);
        assert_string_equal(reason, "the program's markers could not start: PMUGATE_MARKER_WIDTH is bad");
        assert_int_equal(marker_file_parse(FAILED_ESCAPE, strlen(FAILED_ESCAPE), 3, &f, reason,
                                           sizeof(reason)), -EBADMSG);
        assert_null(f);
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

/* Run without pmugate: every call succeeds at once and nothing is measured or written. */
static void test_without_runner(void **state) {
        int n = 4, calls = -1;
        double counts[4], seconds = -1.0;
        uint64_t start;

        (void) state;
        unsetenv(MARKER_ENV_FILE);
        assert_int_equal(pmugate_marker_init(0), 0);
        assert_false(pmugate_marker_active());
        assert_string_equal(pmugate_marker_read_mode(), "off");
        assert_int_equal(pmugate_marker_register("a", 0), 0);
        assert_int_equal(pmugate_marker_stop("never started"), 0);
        start = now_ns();
        for (int i = 0; i < 1000000; i++) {
                pmugate_marker_start("a");
                pmugate_marker_stop("a");
        }
        /* about 2 ns a pair; the bound leaves room for a slow, shared machine */
        assert_true(now_ns() - start < UINT64_C(500000000));
        assert_int_equal(pmugate_marker_get("a", &n, counts, &seconds, &calls), 0);
        assert_int_equal(n, 0);
        assert_int_equal(calls, 0);
        assert_int_equal(pmugate_marker_register("a", 0x80), -EINVAL);
        assert_int_equal(pmugate_marker_close(), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_rdpmc_index),
                cmocka_unit_test(test_rdpmc_decide),
                cmocka_unit_test(test_rdpmc_sysfs),
                cmocka_unit_test(test_rdpmc_probe),
                cmocka_unit_test(test_file_good),
                cmocka_unit_test(test_file_refused),
                cmocka_unit_test(test_without_runner),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job's logic (client/cli/job-report.c): summary file names, the checks of a summary
 * document, Slurm host lists, and the total, imbalance and clock skew over nodes.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/job-report.h"

#define GOOD "{\"job\": \"7\", \"host\": \"n1.cluster\", \"cpus\": \"0-3\", \"covers\": \"allocation\", " \
             "\"start\": 1000, \"end\": 1100, \"cpu_model\": \"spr\", \"instructions\": 2e9, \"cycles\": 1e9, " \
             "\"slots\": 6e9, \"ipc\": 2.0, \"topdown_percent\": {\"frontend_bound\": 10, \"bad_speculation\": 5, " \
             "\"backend_bound\": 45, \"retiring\": 40}, \"topdown_level2_percent\": {\"memory_bound\": 30}, " \
             "\"memory_read_bytes\": 100, \"memory_written_bytes\": 50, \"energy_joules\": null, " \
             "\"future_key\": [1, 2]}\n"

static int parse(const char *text, const char *host, JobNode *node, char *why, size_t size) {
        return job_node_parse(text, strlen(text), "7", host, node, why, size);
}

static void test_names(void **state) {
        char host[PMUGATE_JOB_HOST_MAX + 1];

        assert_true(job_summary_name("7.n1.json", "7", host, sizeof(host)));
        assert_string_equal(host, "n1");
        assert_true(job_summary_name("7.5.n1.json", "7", host, sizeof(host)));
        assert_string_equal(host, "5.n1");      /* the content tells job 7.5 apart */
        assert_false(job_summary_name("7..json", "7", host, sizeof(host)));
        assert_false(job_summary_name("70.n1.json", "7", host, sizeof(host)));
        assert_false(job_summary_name("7.n1.json.tmp", "7", host, sizeof(host)));
        assert_true(job_id_valid("4711") && job_id_valid("12_3") && job_id_valid("1.2+x-y"));
        assert_false(job_id_valid("") || job_id_valid(".7") || job_id_valid("../x") || job_id_valid("7 8"));
}

static void test_parse(void **state) {
        JobNode n;
        char why[256] = "";

        assert_int_equal(parse(GOOD, "n1", &n, why, sizeof(why)), 0);
        assert_string_equal(n.host, "n1");
        assert_string_equal(n.covers, "allocation");
        assert_false(n.covers_assumed);
        assert_true(n.v[JOB_IPC] == 2.0 && n.v[JOB_MEMORY_BYTES] == 150 && n.slots == 6e9);
        assert_true(n.v[JOB_TD_RETIRING] == 40 && n.v[JOB_TD_MEMORY_BOUND] == 30);
        /* not measured is NaN, never 0 */
        assert_true(isnan(n.v[JOB_ENERGY]) && isnan(n.v[JOB_FLOPS]) && isnan(n.v[JOB_TD_CORE_BOUND]));
        /* another job's, whose id only starts like this one's */
        assert_int_equal(job_node_parse(GOOD, strlen(GOOD), "8", "n1", &n, why, sizeof(why)), 1);
}

static void refused(const char *text, const char *want) {
        JobNode n;
        char why[256] = "";

        assert_int_equal(parse(text, "n1", &n, why, sizeof(why)), -EBADMSG);
        if (!strstr(why, want))
                fail_msg("reason '%s' lacks '%s'", why, want);
}

static void test_refused(void **state) {
        char *big = malloc(PMUGATE_JOB_SUMMARY_SIZE_MAX + 2);

        refused("{\"job\": \"7\"", "not JSON");
        refused("{\"job\": \"7\"} {}", "text after it");
        refused("[]", "not a JSON object");
        refused("{\"job\": 7}", "\"job\" is not a string");
        refused("{\"job\": \"7\", \"host\": \"n2\", \"cpus\": \"0\", \"start\": 1, \"end\": 2}", "node n2");
        refused("{\"job\": \"7\", \"host\": \"n1\", \"cpus\": \"0;rm\", \"start\": 1, \"end\": 2}", "not a CPU list");
        refused("{\"job\": \"7\", \"host\": \"n1\", \"cpus\": \"0\", \"start\": 3, \"end\": 2}", "ends before");
        refused("{\"job\": \"7\", \"host\": \"n1\", \"cpus\": \"0\", \"start\": -3, \"end\": 2}", "plausible");
        refused("{\"job\": \"7\", \"host\": \"n1\", \"cpus\": \"0\", \"start\": 1, \"end\": 2, \"ipc\": \"2\"}",
                "not a number");
        refused("{\"job\": \"7\", \"host\": \"n1\", \"cpus\": \"0\", \"start\": 1, \"end\": 2, \"cycles\": -1}",
                "outside 0");
        refused("{\"job\": \"7\", \"host\": \"n1\", \"cpus\": \"0\", \"start\": 1, \"end\": 2, "
                "\"topdown_percent\": {\"retiring\": 150}}", "outside 0");
        refused("{\"job\": \"7\", \"host\": \"n1\", \"cpus\": \"0\", \"start\": 1, \"end\": 2, \"topdown_percent\": 3}",
                "not an object");
        refused("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "not JSON");
        refused("", "empty");
        assert_non_null(big);
        memset(big, ' ', PMUGATE_JOB_SUMMARY_SIZE_MAX + 1);
        big[PMUGATE_JOB_SUMMARY_SIZE_MAX + 1] = '\0';
        refused(big, "larger");
        free(big);
}

static void hosts(const char *list, int want_n, const char *first, const char *last) {
        char **h = NULL;
        int n = job_hosts_expand(list, &h);

        assert_int_equal(n, want_n);
        if (n > 0) {
                assert_string_equal(h[0], first);
                assert_string_equal(h[n - 1], last);
                job_hosts_free(h, (size_t) n);
        }
}

static void test_hosts(void **state) {
        hosts("node[01-03,7],login1", 5, "node01", "login1");
        hosts("a,b", 2, "a", "b");
        hosts("n[8-11]x", 4, "n8x", "n11x");
        hosts("n[08-11]x", 4, "n08x", "n11x");
        hosts("rack[1-2]-n", 2, "rack1-n", "rack2-n");
        hosts("n[3-1]", -EINVAL, NULL, NULL);
        hosts("n[1-2", -EINVAL, NULL, NULL);
        hosts("n1]", -EINVAL, NULL, NULL);
        hosts("a,", -EINVAL, NULL, NULL);
        hosts("", -EINVAL, NULL, NULL);
        hosts("n[x]", -EINVAL, NULL, NULL);
        hosts("n[0-99999]", -EINVAL, NULL, NULL);
        hosts("a[0-9999],b[0-9999]", -E2BIG, NULL, NULL);
}

static JobNode node(const char *host, double instructions, double cycles, double slots, double retiring,
                    int64_t start, int64_t end) {
        JobNode n = { .start = start, .end = end, .slots = slots };

        (void) snprintf(n.host, sizeof(n.host), "%s", host);
        for (unsigned m = 0; m < JOB_METRICS; m++)
                n.v[m] = NAN;
        n.v[JOB_INSTRUCTIONS] = instructions;
        n.v[JOB_CYCLES] = cycles;
        n.v[JOB_IPC] = instructions / cycles;
        n.v[JOB_TD_RETIRING] = retiring;
        return n;
}

static void test_compute(void **state) {
        JobNode n[3] = {
                node("a", 1e9, 1e9, 4e9, 20, 1000, 2000),
                node("b", 3e9, 1e9, 6e9, 50, 1002, 2001),
                node("c", 2e9, 2e9, 12e9, 30, 4600, 5600),     /* an hour off */
        };
        JobReport r;
        double mean = (1.0 + 3.0 + 1.0) / 3;   /* the IPCs */

        job_report_compute(n, 3, 60, &r);
        assert_int_equal(r.window_start, 1002);
        assert_int_equal(r.window_end, 2001);
        assert_false(n[0].clock_skewed || n[1].clock_skewed);
        assert_true(n[2].clock_skewed);
        assert_int_equal(n[2].clock_offset, 3599);
        assert_int_equal(r.n_skewed, 1);
        assert_true(r.stat[JOB_INSTRUCTIONS].total == 6e9);
        /* by cycles: 6e9 instructions over 4e9 cycles, not the mean of the IPCs */
        assert_float_equal(r.stat[JOB_IPC].total, 1.5, 1e-12);
        /* by slots: (20 * 4 + 50 * 6 + 30 * 12) / 22 */
        assert_float_equal(r.stat[JOB_TD_RETIRING].total, (80.0 + 300 + 360) / 22, 1e-12);
        assert_float_equal(r.stat[JOB_IPC].max_over_mean, 3.0 / mean, 1e-12);
        assert_float_equal(r.stat[JOB_IPC].cv, sqrt(((1 - mean) * (1 - mean) * 2 + (3 - mean) * (3 - mean)) / 3) / mean,
                           1e-12);
        /* nobody measured energy: no total, not 0 */
        assert_true(isnan(r.stat[JOB_ENERGY].total) && r.stat[JOB_ENERGY].n == 0);
        /* a node without a count leaves the sum to those with one, and says how many */
        n[1].v[JOB_INSTRUCTIONS] = NAN;
        job_report_compute(n, 3, 60, &r);
        assert_true(r.stat[JOB_INSTRUCTIONS].total == 3e9 && r.stat[JOB_INSTRUCTIONS].n == 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_hosts),
                cmocka_unit_test(test_compute),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

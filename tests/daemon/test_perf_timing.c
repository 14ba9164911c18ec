/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * timing_open's checks (daemon/perf/perf-timing.c): period bounds and the rate against the
 * kernel's perf_event_max_sample_rate (read as hostile input), the model's branch stack, and
 * the opener's own check (perf_attr_verify()) letting through exactly timing_attr_fill()'s attr
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "error.h"
#include "macro.h"
#include "perf/perf-attr.h"
#include "perf/perf-timing.h"
#include "pmugate-limits.h"
#include "refusal.h"
#include "tmpdir_fixture.h"

static const uint32_t kernel_types[] = { PERF_TYPE_SOFTWARE, PERF_TYPE_RAW, 12 };

static void write_rate(const char *text) {
        char path[600];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/proc", tmpdir);
        (void) mkdir(path, 0755);
        (void) snprintf(path, sizeof(path), "%s/proc/sys", tmpdir);
        (void) mkdir(path, 0755);
        (void) snprintf(path, sizeof(path), "%s/proc/sys/kernel", tmpdir);
        (void) mkdir(path, 0755);
        (void) snprintf(path, sizeof(path), "%s/proc/sys/kernel/perf_event_max_sample_rate", tmpdir);
        (void) unlink(path);
        (void) rmdir(path);
        if (!text)
                return;
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static void test_kernel_rate(void **state) {
        char path[600], target[600];
        uint64_t v = 0;

        (void) state;
        write_rate("100000\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), 0);
        assert_int_equal(v, 100000);
        write_rate("1");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), 0);
        assert_int_equal(v, 1);

        /* hostile: none of these is a rate, and v is left alone */
        v = 7;
        write_rate(NULL);
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -ENOENT);
        write_rate("0\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        write_rate("");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        write_rate("-5\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        write_rate("10000001\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        write_rate("18446744073709551617\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        write_rate("1000 2000\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        write_rate("0x100\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        write_rate("00000000000000000000000000000000000000000001\n");
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        assert_int_equal(v, 7);

        /* not a regular file, or a link to one: refused, never followed */
        write_rate(NULL);
        (void) snprintf(path, sizeof(path), "%s/proc/sys/kernel/perf_event_max_sample_rate", tmpdir);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -EBADMSG);
        assert_int_equal(rmdir(path), 0);
        (void) snprintf(target, sizeof(target), "%s/elsewhere", tmpdir);
        write_rate(NULL);
        {
                FILE *f = fopen(target, "we");

                assert_non_null(f);
                (void) fputs("100000\n", f);
                (void) fclose(f);
        }
        assert_int_equal(symlink(target, path), 0);
        assert_int_equal(timing_kernel_max_sample_rate(tmpdir, &v), -ELOOP);
        assert_int_equal(v, 7);
}

static void test_period(void **state) {
        Refusal why;
        uint64_t p = 0;

        (void) state;
        refusal_clear(&why);
        /* the default, and bounds inclusive */
        assert_int_equal(timing_check_period(TIMING_MODE_IPS, 0, 1000000000ULL, 100000, &p, &why), 0);
        assert_int_equal(p, TIMING_PERIOD_IPS_DEFAULT);
        assert_int_equal(timing_check_period(TIMING_MODE_IPS, TIMING_PERIOD_IPS_MAX, 1000000000ULL, 100000, &p, &why),
                         0);
        assert_int_equal(timing_check_period(TIMING_MODE_IPS, TIMING_PERIOD_IPS_MAX + 1, 1000000000ULL, 100000, &p,
                                             &why), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(why.reason, "outside"));
        assert_int_equal(timing_check_period(TIMING_MODE_IPS, 1, 1000000000ULL, 100000, &p, &why), PROTO_E_BAD_FIELD);
        assert_int_equal(timing_check_period(TIMING_MODE_BRANCHES, UINT64_MAX, 3000000000ULL, 100000, &p, &why),
                         PROTO_E_BAD_FIELD);

        /* the rate: 3 GHz / 10007 cycles is 299790 a second, over a kernel's 100000 */
        p = 0;
        assert_int_equal(timing_check_period(TIMING_MODE_BRANCHES, TIMING_PERIOD_BRANCHES_MIN, 3000000000ULL, 100000,
                                             &p, &why), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(why.reason, "perf_event_max_sample_rate of 100000"));
        assert_non_null(strstr(why.reason, "at least 30000"));
        assert_int_equal(p, 0);
        /* exactly at the rate is allowed, one cycle shorter is not */
        assert_int_equal(timing_check_period(TIMING_MODE_BRANCHES, 30000, 3000000000ULL, 100000, &p, &why), 0);
        assert_int_equal(timing_check_period(TIMING_MODE_BRANCHES, 29999, 3000000000ULL, 100000, &p, &why),
                         PROTO_E_BAD_FIELD);
        /* no rate known: no period in cycles is bounded */
        assert_int_equal(timing_check_period(TIMING_MODE_BRANCHES, 200003, 0, 100000, &p, &why), PROTO_E_BAD_FIELD);
        /* a large kernel rate cannot overflow the comparison */
        assert_int_equal(timing_check_period(TIMING_MODE_BRANCHES, TIMING_PERIOD_BRANCHES_MAX, UINT32_MAX,
                                             TIMING_KERNEL_SAMPLE_RATE_MAX, &p, &why), 0);
}

static void test_events_per_second(void **state) {
        const CpuModel *spr = cpu_model_by_key("spr");

        (void) state;
        assert_non_null(spr);
        assert_int_equal(timing_events_per_second(TIMING_MODE_IPS, 0, NULL), 1000000000ULL);
        assert_int_equal(timing_events_per_second(TIMING_MODE_BRANCHES, 2100000000ULL, spr), 2100000000ULL);
        assert_int_equal(timing_events_per_second(TIMING_MODE_BRANCHES, 0, spr), (uint64_t) spr->nominal_mhz * 1000000U);
        assert_int_equal(timing_events_per_second(TIMING_MODE_BRANCHES, 0, NULL), 0);
}

static void test_model(void **state) {
        PerfCatalog *c = NULL;
        PerfPmu core = { .name = "cpu", .type = PERF_TYPE_RAW, .kind = PERF_PMU_CORE, .package = -1, .cpu = -1 };
        Refusal why;

        (void) state;
        refusal_clear(&why);
        assert_int_equal(perf_catalog_new(&c), 0);
        /* IP mode anywhere, branch mode not without a core PMU */
        assert_int_equal(timing_check_model(TIMING_MODE_IPS, NULL, c, &why), 0);
        assert_int_equal(timing_check_model(TIMING_MODE_BRANCHES, cpu_model_by_key("spr"), c, &why), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(why.reason, "has no branch stack"));
        assert_int_equal(perf_catalog_add(c, &core), 0);
        assert_int_equal(timing_check_model(TIMING_MODE_BRANCHES, cpu_model_by_key("spr"), c, &why), PROTO_E_BAD_FIELD);
        c->pmus[c->n_pmus - 1].branches = 32;
        assert_int_equal(timing_check_model(TIMING_MODE_BRANCHES, cpu_model_by_key("spr"), c, &why), 0);
        /* AMD's LBR (LbrExtV2) records no cycles, whatever its depth */
        assert_int_equal(timing_check_model(TIMING_MODE_BRANCHES, cpu_model_by_key("zen4"), c, &why), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(why.reason, "records no cycles (AMD LbrExtV2)"));
        assert_int_equal(timing_check_model(TIMING_MODE_BRANCHES, cpu_model_by_key("zen5"), c, &why), PROTO_E_BAD_FIELD);
        assert_int_equal(timing_check_model(TIMING_MODE_IPS, cpu_model_by_key("zen4"), c, &why), 0);
        perf_catalog_free(c);
}

/* The opener lets through timing_attr_fill()'s attr of either mode, on_exec or not, any period
 * in bounds; one byte changed anywhere but the period, or a period out of bounds, and it is the
 * counting-only check's, which refuses every sampling attr. */
static void test_verify_timing_attr(void **state) {
        char reason[256];

        (void) state;
        for (int m = 0; m < _TIMING_MODE_MAX; m++)
                for (int on_exec = 0; on_exec < 2; on_exec++) {
                        struct perf_event_attr good, bad;
                        const size_t period_at = offsetof(struct perf_event_attr, sample_period);

                        timing_attr_fill(&good, (TimingMode) m, timing_period_default((TimingMode) m), on_exec);
                        assert_true(timing_attr_is_ours(&good));
                        assert_int_equal(perf_attr_verify(&good, kernel_types, ELEMENTSOF(kernel_types), reason,
                                                          sizeof(reason)), 0);
                        for (size_t i = 0; i < sizeof(good); i++)
                                for (unsigned bit = 0; bit < 8; bit++) {
                                        if (i >= period_at && i < period_at + sizeof(uint64_t))
                                                continue;
                                        bad = good;
                                        ((uint8_t *) &bad)[i] ^= (uint8_t) (1U << bit);
                                        assert_false(timing_attr_is_ours(&bad));
                                        assert_int_equal(perf_attr_verify(&bad, kernel_types, ELEMENTSOF(kernel_types),
                                                                          reason, sizeof(reason)), -EPERM);
                                }
                        timing_attr_fill(&bad, (TimingMode) m, timing_period_min((TimingMode) m) - 1, on_exec);
                        assert_int_equal(perf_attr_verify(&bad, kernel_types, ELEMENTSOF(kernel_types), reason,
                                                          sizeof(reason)), -EPERM);
                        timing_attr_fill(&bad, (TimingMode) m, timing_period_max((TimingMode) m) + 1, on_exec);
                        assert_int_equal(perf_attr_verify(&bad, kernel_types, ELEMENTSOF(kernel_types), reason,
                                                          sizeof(reason)), -EPERM);
                        timing_attr_fill(&bad, (TimingMode) m, timing_period_max((TimingMode) m), on_exec);
                        assert_int_equal(perf_attr_verify(&bad, kernel_types, ELEMENTSOF(kernel_types), reason,
                                                          sizeof(reason)), 0);
                        /* the other mode's type with this mode's fields */
                        bad = good;
                        bad.type = m == TIMING_MODE_BRANCHES ? PERF_TYPE_SOFTWARE : PERF_TYPE_HARDWARE;
                        bad.config = m == TIMING_MODE_BRANCHES ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_HW_CPU_CYCLES;
                        assert_int_equal(perf_attr_verify(&bad, kernel_types, ELEMENTSOF(kernel_types), reason,
                                                          sizeof(reason)), -EPERM);
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_kernel_rate, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test(test_period),
                cmocka_unit_test(test_events_per_second),
                cmocka_unit_test(test_model),
                cmocka_unit_test(test_verify_timing_attr),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

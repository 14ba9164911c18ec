/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LIKWID's core PMU programming as perf events (likwid-perf.h): which registers are translated
 * and which refused, the events a programmed CPU opens, the registers rebuilt from counts, and
 * which kernel uncore_imc counter serves a memory channel of LIKWID's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "likwid/likwid-map.h"
#include "likwid/likwid-perf.h"
#include "macro.h"

/* What LIKWID 5.2 writes: EN and USR, event and umask */
#define EVTSEL(event, umask) (LIKWID_EVTSEL_EN | LIKWID_EVTSEL_USR | ((uint64_t) (umask) << 8) | (event))
#define GLOBAL_FIXED(i) (UINT64_C(1) << (32 + (i)))
#define GLOBAL_METRICS (UINT64_C(1) << 48)

static const LikwidPerfModel icx = { .n_gp = 8, .n_fixed = 4, .topdown = 1, .counter_width = 48 };
static const LikwidPerfModel skx = { .n_gp = 4, .n_fixed = 3, .topdown = 0, .counter_width = 48 };

static void test_classify(void **state) {
        LikwidPerfReg r;

        r = likwid_perf_classify(true, 0x188);
        assert_int_equal(r.kind, LIKWID_PERF_REG_EVTSEL);
        assert_int_equal(r.index, 2);
        r = likwid_perf_classify(true, 0xC3);
        assert_int_equal(r.kind, LIKWID_PERF_REG_PMC);
        assert_int_equal(r.index, 2);
        r = likwid_perf_classify(true, 0x4C8);
        assert_int_equal(r.kind, LIKWID_PERF_REG_PMC);
        assert_int_equal(r.index, 7);
        assert_int_equal(likwid_perf_classify(true, 0x30C).kind, LIKWID_PERF_REG_FIXED_CTR);
        assert_int_equal(likwid_perf_classify(true, 0x38D).kind, LIKWID_PERF_REG_FIXED_CTRL);
        assert_int_equal(likwid_perf_classify(true, 0x38F).kind, LIKWID_PERF_REG_GLOBAL_CTRL);
        assert_int_equal(likwid_perf_classify(true, 0x329).kind, LIKWID_PERF_REG_PERF_METRICS);
        assert_int_equal(likwid_perf_classify(true, 0x38E).kind, LIKWID_PERF_REG_STATUS);
        assert_int_equal(likwid_perf_classify(true, 0x390).kind, LIKWID_PERF_REG_STATUS);
        /* offcore response, PEBS, LBR: refused with a reason */
        r = likwid_perf_classify(true, 0x1A6);
        assert_int_equal(r.kind, LIKWID_PERF_REG_REFUSED);
        assert_non_null(strstr(r.why, "offcore"));
        assert_int_equal(likwid_perf_classify(true, 0x3F6).kind, LIKWID_PERF_REG_REFUSED);
        assert_int_equal(likwid_perf_classify(true, 0x1D9).kind, LIKWID_PERF_REG_REFUSED);
        /* RAPL, TSC, the U-box: the daemon's, as before */
        assert_int_equal(likwid_perf_classify(true, 0x611).kind, LIKWID_PERF_REG_NONE);
        assert_int_equal(likwid_perf_classify(true, 0x10).kind, LIKWID_PERF_REG_NONE);
        assert_int_equal(likwid_perf_classify(true, 0x700).kind, LIKWID_PERF_REG_NONE);
        /* AMD: refused, not mistaken for Intel's addresses */
        assert_int_equal(likwid_perf_classify(false, 0xC0010200).kind, LIKWID_PERF_REG_REFUSED);
        assert_int_equal(likwid_perf_classify(false, 0xC0000301).kind, LIKWID_PERF_REG_REFUSED);
        assert_int_equal(likwid_perf_classify(false, 0xC0010230).kind, LIKWID_PERF_REG_REFUSED);
        assert_int_equal(likwid_perf_classify(false, 0x186).kind, LIKWID_PERF_REG_NONE);
        assert_int_equal(likwid_perf_classify(false, 0xC0010299).kind, LIKWID_PERF_REG_NONE);
}

static void test_checks(void **state) {
        char why[256];

        assert_int_equal(likwid_perf_check_evtsel(EVTSEL(0xc7, 0x01), why, sizeof(why)), 0);
        assert_int_equal(likwid_perf_check_evtsel(EVTSEL(0xc7, 0x01) | LIKWID_EVTSEL_OS | LIKWID_EVTSEL_EDGE |
                                                  LIKWID_EVTSEL_INV | (UINT64_C(3) << 24), why, sizeof(why)), 0);
        assert_int_equal(likwid_perf_check_evtsel(EVTSEL(0xc4, 0) | LIKWID_EVTSEL_INT, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "INT"));
        assert_int_equal(likwid_perf_check_evtsel(EVTSEL(0xc4, 0) | LIKWID_EVTSEL_ANY, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "ANY"));
        assert_int_equal(likwid_perf_check_evtsel(EVTSEL(0xc4, 0) | LIKWID_EVTSEL_PC, why, sizeof(why)), -EPERM);
        /* IN_TX and friends, bit 32 up */
        assert_int_equal(likwid_perf_check_evtsel(EVTSEL(0x3c, 0) | (UINT64_C(1) << 32), why, sizeof(why)), -EPERM);
        /* kernel only */
        assert_int_equal(likwid_perf_check_evtsel(LIKWID_EVTSEL_EN | LIKWID_EVTSEL_OS | 0xc0, why, sizeof(why)),
                         -EPERM);
        /* LIKWID's clearing write */
        assert_int_equal(likwid_perf_check_evtsel(0, why, sizeof(why)), 0);

        assert_int_equal(likwid_perf_check_fixed_ctrl(&icx, 0x2222, why, sizeof(why)), 0);
        assert_int_equal(likwid_perf_check_fixed_ctrl(&icx, 0x3332, why, sizeof(why)), 0);
        assert_int_equal(likwid_perf_check_fixed_ctrl(&skx, 0x2222, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "fixed counter 3"));
        assert_int_equal(likwid_perf_check_fixed_ctrl(&icx, 0x0A2, why, sizeof(why)), -EPERM);  /* PMI */
        assert_int_equal(likwid_perf_check_fixed_ctrl(&icx, 0x062, why, sizeof(why)), -EPERM);  /* ANY */
        assert_int_equal(likwid_perf_check_fixed_ctrl(&icx, 0x1, why, sizeof(why)), -EPERM);    /* OS only */

        assert_int_equal(likwid_perf_check_global_ctrl(&icx, 0xFF | GLOBAL_FIXED(3) | GLOBAL_METRICS, why,
                                                       sizeof(why)), 0);
        assert_int_equal(likwid_perf_check_global_ctrl(&skx, 0x1F, why, sizeof(why)), -EPERM);
        assert_int_equal(likwid_perf_check_global_ctrl(&skx, GLOBAL_METRICS, why, sizeof(why)), -EPERM);
        assert_non_null(strstr(why, "PERF_METRICS"));
}

static void test_plan_counters(void **state) {
        LikwidCoreShadow s = {
                .evtsel = { EVTSEL(0xc7, 0x04), EVTSEL(0xc7, 0x01) | LIKWID_EVTSEL_OS, 0,
                            EVTSEL(0xa3, 0x14) | LIKWID_EVTSEL_INV | (UINT64_C(0x14) << 24) },
                .fixed_ctrl = 0x222,
                .global_ctrl = 0xF | GLOBAL_FIXED(0) | GLOBAL_FIXED(1) | GLOBAL_FIXED(2),
        };
        LikwidPerfPlan p;
        char why[256];

        assert_int_equal(likwid_perf_plan(&skx, &s, &p, why, sizeof(why)), 0);
        /* one group: the three fixed counters, then PMC0, PMC1, PMC3 (PMC2 is not enabled) */
        assert_int_equal(p.n_groups, 1);
        assert_int_equal(p.group_first[0], 0);
        assert_int_equal(p.group_len[0], 6);
        assert_int_equal(p.slots_event, -1);
        assert_int_equal(p.events[0].config, LIKWID_PERF_INST_RETIRED);
        assert_int_equal(p.events[1].config, LIKWID_PERF_CPU_CLK_UNHALTED);
        assert_int_equal(p.events[2].config, LIKWID_PERF_REF_TSC);
        assert_string_equal(p.events[0].pmu, "cpu");
        assert_int_equal(p.events[3].config, 0x04c7);
        assert_false(p.events[3].kernel);
        assert_int_equal(p.slots[3].kind, LIKWID_SLOT_PMC);
        assert_int_equal(p.slots[3].index, 0);
        assert_int_equal(p.events[4].config, 0x01c7);
        assert_true(p.events[4].kernel);
        /* USR, OS and EN are attr flags, not config bits; INV and CMASK stay */
        assert_int_equal(p.events[5].config, 0x14a3 | LIKWID_EVTSEL_INV | (UINT64_C(0x14) << 24));
        assert_int_equal(p.slots[5].index, 3);

        /* an enabled general counter with a bit perf cannot express */
        s.evtsel[1] |= LIKWID_EVTSEL_ANY;
        assert_int_equal(likwid_perf_plan(&skx, &s, &p, why, sizeof(why)), -EPERM);

        /* nothing enabled: no event, no error */
        s = (LikwidCoreShadow) { .evtsel = { EVTSEL(0xc4, 0) } };
        assert_int_equal(likwid_perf_plan(&skx, &s, &p, why, sizeof(why)), 0);
        assert_int_equal(p.n_events, 0);
        assert_int_equal(p.n_groups, 0);
}

static void test_plan_topdown(void **state) {
        /* LIKWID's TMA group on Ice Lake-SP: the four fixed counters and PERF_METRICS */
        LikwidCoreShadow s = {
                .fixed_ctrl = 0x2222,
                .global_ctrl = GLOBAL_FIXED(0) | GLOBAL_FIXED(1) | GLOBAL_FIXED(2) | GLOBAL_FIXED(3) | GLOBAL_METRICS,
        };
        LikwidPerfModel level2 = icx;
        LikwidPerfPlan p;
        char why[256];

        assert_int_equal(likwid_perf_plan(&icx, &s, &p, why, sizeof(why)), 0);
        /* SLOTS leads the four level-1 metric events; the other fixed counters apart */
        assert_int_equal(p.n_groups, 2);
        assert_int_equal(p.group_len[0], 5);
        assert_int_equal(p.slots_event, 0);
        assert_int_equal(p.events[0].config, LIKWID_PERF_SLOTS);
        assert_int_equal(p.slots[0].kind, LIKWID_SLOT_FIXED);
        assert_int_equal(p.slots[0].index, 3);
        for (unsigned i = 0; i < 4; i++) {
                assert_int_equal(p.events[1 + i].config, 0x8000 + 0x100 * i);
                assert_int_equal(p.slots[1 + i].kind, LIKWID_SLOT_METRIC);
                assert_int_equal(p.slots[1 + i].index, i);
        }
        /* FIXC3 is the leader's count, not a second SLOTS event */
        assert_int_equal(p.group_first[1], 5);
        assert_int_equal(p.group_len[1], 3);
        for (size_t i = 0; i < p.n_events; i++)
                assert_true(i == 0 || p.events[i].config != LIKWID_PERF_SLOTS);

        level2.topdown = 2;
        assert_int_equal(likwid_perf_plan(&level2, &s, &p, why, sizeof(why)), 0);
        assert_int_equal(p.group_len[0], 9);

        /* PERF_METRICS where the kernel has no metric events */
        level2.topdown = 0;
        assert_int_equal(likwid_perf_plan(&level2, &s, &p, why, sizeof(why)), -EPERM);
}

static void test_counts(void **state) {
        LikwidCoreShadow s = {
                .evtsel = { EVTSEL(0xc4, 0) },
                .fixed_ctrl = 0x2,
                .global_ctrl = 0x1 | GLOBAL_FIXED(0),
        };
        LikwidPerfCounts c = {};
        LikwidPerfPlan p;
        char why[256];
        uint64_t first[] = { 1000, 50 }, second[] = { 3000, 250 }, third[] = { 7000, 450 };

        assert_int_equal(likwid_perf_plan(&skx, &s, &p, why, sizeof(why)), 0);
        assert_int_equal(p.n_events, 2);
        /* the open's first read is the base; counting starts there */
        c.counting = true;
        likwid_perf_counts_rebase(&c, &p, first);
        likwid_perf_counts_sample(&c, &p, second);
        assert_int_equal(likwid_perf_counts_read(&c, &skx, LIKWID_PERF_REG_FIXED_CTR, 0), 2000);
        assert_int_equal(likwid_perf_counts_read(&c, &skx, LIKWID_PERF_REG_PMC, 0), 200);
        /* LIKWID zeroes PMC0: from here */
        likwid_perf_counts_write(&c, LIKWID_PERF_REG_PMC, 0, 0);
        assert_int_equal(likwid_perf_counts_read(&c, &skx, LIKWID_PERF_REG_PMC, 0), 0);
        /* stopped: what the kernel counts meanwhile is not LIKWID's */
        c.counting = false;
        likwid_perf_counts_sample(&c, &p, third);
        assert_int_equal(likwid_perf_counts_read(&c, &skx, LIKWID_PERF_REG_FIXED_CTR, 0), 2000);
        assert_int_equal(likwid_perf_counts_read(&c, &skx, LIKWID_PERF_REG_PMC, 0), 0);
        /* the counter's width: a value LIKWID wrote near the top wraps as the register would */
        likwid_perf_counts_write(&c, LIKWID_PERF_REG_PMC, 0, (UINT64_C(1) << 48) - 10);
        c.counting = true;
        third[1] += 20;
        likwid_perf_counts_sample(&c, &p, third);
        assert_int_equal(likwid_perf_counts_read(&c, &skx, LIKWID_PERF_REG_PMC, 0), 10);
}

static void test_perf_metrics(void **state) {
        LikwidCoreShadow s = {
                .fixed_ctrl = 0x2000,
                .global_ctrl = GLOBAL_FIXED(3) | GLOBAL_METRICS,
        };
        LikwidPerfCounts c = { .counting = true };
        LikwidPerfPlan p;
        char why[256];
        /* SLOTS, retiring, bad speculation, frontend bound, backend bound: the kernel counts
         * slots * byte / 255 per metric (35%, 5%, 15%, 45% of 255: 89, 13, 38, 115) */
        uint64_t base[] = { 100, 0, 0, 0, 0 };
        uint64_t now[] = { 100 + 255000, 89000, 13000, 38000, 115000 };
        uint64_t reg;

        assert_int_equal(likwid_perf_plan(&icx, &s, &p, why, sizeof(why)), 0);
        assert_int_equal(p.n_events, 5);
        likwid_perf_counts_rebase(&c, &p, base);
        likwid_perf_counts_sample(&c, &p, now);
        reg = likwid_perf_counts_read(&c, &icx, LIKWID_PERF_REG_PERF_METRICS, 0);
        assert_int_equal(reg & 0xFF, 89);
        assert_int_equal((reg >> 8) & 0xFF, 13);
        assert_int_equal((reg >> 16) & 0xFF, 38);
        assert_int_equal((reg >> 24) & 0xFF, 115);
        assert_int_equal(reg >> 32, 0);
        assert_int_equal(likwid_perf_counts_read(&c, &icx, LIKWID_PERF_REG_FIXED_CTR, 3), 255000);
        /* zeroed: no slots, no fractions (never a division by zero) */
        likwid_perf_counts_write(&c, LIKWID_PERF_REG_PERF_METRICS, 0, 0);
        assert_int_equal(likwid_perf_counts_read(&c, &icx, LIKWID_PERF_REG_PERF_METRICS, 0), 0);

        /* rounding to the nearest 255th, a metric past its slots capped at a full byte */
        {
                uint64_t m[] = { 2, 3, 4 };

                assert_int_equal(likwid_perf_metrics_register(m, 3, 2), 0xFFFFFF);
                m[0] = 51;
                assert_int_equal(likwid_perf_metrics_register(m, 1, 255), 51);
        }
}

static void test_scale(void **state) {
        assert_int_equal(likwid_perf_scale(100, 1000, 1000), 100);
        assert_int_equal(likwid_perf_scale(100, 1000, 500), 200);
        /* never scheduled: nothing to scale (the forwarder voids the run) */
        assert_int_equal(likwid_perf_scale(0, 1000, 0), 0);
        /* no overflow on large counts */
        assert_int_equal(likwid_perf_scale(UINT64_C(1) << 60, 2, 1), UINT64_C(1) << 61);
}

static void test_cas_map(void **state) {
        pmugate_counter counters[] = {
                { .index = 7, .name = "uncore_imc_1/cas_count_read", .package = 0, .width = 64, .scale = 64,
                  .unit = "B" },
                { .index = 8, .name = "uncore_imc_1/cas_count_write", .package = 0, .width = 64, .scale = 64,
                  .unit = "B" },
                { .index = 9, .name = "uncore_imc_5/cas_count_read", .package = 1, .width = 64, .scale = 64,
                  .unit = "B" },
                { .index = 10, .name = "uncore_imc_2/cas_count_read", .package = 0, .width = 64, .scale = 64,
                  .unit = "B", .error = "the kernel refused it" },
        };
        pmugate_info info = { .model_key = "skx", .counters = counters, .n_counters = ELEMENTSOF(counters) };
        uint32_t counter = 0;

        /* LIKWID's devices in the kernel's channel order: 0a.2 0a.6 0b.2, 0c.2 0c.6 0d.2 */
        assert_int_equal(likwid_imc_channel(&info, 5), 0);
        assert_int_equal(likwid_imc_channel(&info, 6), 1);
        assert_int_equal(likwid_imc_channel(&info, 7), 2);
        assert_int_equal(likwid_imc_channel(&info, 9), 3);
        assert_int_equal(likwid_imc_channel(&info, 11), 5);
        assert_int_equal(likwid_imc_channel(&info, 8), -ENODEV);       /* channel 3 of controller 0 */
        assert_int_equal(likwid_imc_channel(&info, 51), -ENODEV);

        assert_int_equal(likwid_map_cas(&info, 6, 0, false, &counter), 0);
        assert_int_equal(counter, 7);
        assert_int_equal(likwid_map_cas(&info, 6, 0, true, &counter), 0);
        assert_int_equal(counter, 8);
        assert_int_equal(likwid_map_cas(&info, 11, 1, false, &counter), 0);
        assert_int_equal(counter, 9);
        /* the socket matters; a counter the daemon could not open is not served */
        assert_int_equal(likwid_map_cas(&info, 6, 1, false, &counter), -ENODEV);
        assert_int_equal(likwid_map_cas(&info, 7, 0, false, &counter), -ENODEV);
        assert_int_equal(likwid_map_cas(&info, 11, 1, true, &counter), -ENODEV);

        /* Ice Lake-SP's channels are MMIO, not these devices */
        (void) snprintf(info.model_key, sizeof(info.model_key), "icx");
        assert_int_equal(likwid_imc_channel(&info, 6), -ENODEV);
        assert_int_equal(likwid_map_cas(&info, 6, 0, false, &counter), -ENODEV);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify),
                cmocka_unit_test(test_checks),
                cmocka_unit_test(test_plan_counters),
                cmocka_unit_test(test_plan_topdown),
                cmocka_unit_test(test_counts),
                cmocka_unit_test(test_perf_metrics),
                cmocka_unit_test(test_scale),
                cmocka_unit_test(test_cas_map),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated AMD Zen 4 / Zen 5: models, PerfMonV2 gating and overflow, AMD's fault policy, the
 * NMI watchdog, L3 per CCX, data fabric and RAPL per package, and perf's pipeline-utilization
 * formulas applied to the simulated counts giving the profile back
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sim/sim-model.h"
#include "backend/sim/sim-profile.h"
#include "macro.h"
#include "sim_test_util.h"

#define PERF_CTL(i) (0xC0010200U + 2U * (i))
#define PERF_CTR(i) (0xC0010201U + 2U * (i))
#define LEGACY_CTL0 0xC0010000U
#define LEGACY_CTR0 0xC0010004U
#define GLOBAL_STATUS 0xC0000300U
#define GLOBAL_CTL 0xC0000301U
#define GLOBAL_STATUS_CLR 0xC0000302U
#define GLOBAL_STATUS_SET 0xC0000303U
#define L3_CTL(i) (0xC0010230U + 2U * (i))
#define L3_CTR(i) (0xC0010231U + 2U * (i))
#define DF_CTL(i) (0xC0010240U + 2U * (i))
#define DF_CTR(i) (0xC0010241U + 2U * (i))
#define RAPL_UNIT 0xC0010299U
#define PKG_ENERGY 0xC001029BU
#define IRPERF 0xC00000E9U

#define EN (UINT64_C(1) << 22)
#define RINGS (UINT64_C(3) << 16)
#define INT_BIT (UINT64_C(1) << 20)
#define AMD_EVENT(code, umask) \
        (((uint64_t) (code) & 0xFF) | ((uint64_t) (code) >> 8) << 32 | (uint64_t) (umask) << 8)
#define CMASK(n) ((uint64_t) (n) << 24)
#define COUNTER_MASK ((UINT64_C(1) << 48) - 1)

#define DETERMINISTIC "[clock]\nmode = deterministic\ncycles_per_access = 0\n"

static void test_models(void **state) {
        static const struct {
                const char *key;
                unsigned family, width;
        } models[] = { { "zen4", SIM_FAMILY_ZEN4, 6 }, { "zen5", SIM_FAMILY_ZEN5, 8 } };

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(models); i++) {
                SimModel m;

                assert_int_equal(sim_model_init(models[i].key, true, &m), 0);
                assert_true(m.amd);
                assert_int_equal(m.family, models[i].family);
                assert_int_equal(m.gp_counters, 6);
                assert_int_equal(m.fixed_counters, 0);
                assert_int_equal(m.counter_width, 48);
                assert_int_equal(m.slots_width, models[i].width);
                assert_int_equal(m.perf_metrics, 0);
                assert_false(m.any_thread);
                assert_int_equal(m.l3_counters, 6);
                assert_int_equal(m.df_counters, 16);
                assert_int_equal(sim_model_init(models[i].key, false, &m), 0);
                assert_int_equal(m.gp_counters, 6);

                SimTest t = sim_test_new(models[i].key, DETERMINISTIC);
                assert_string_equal(t.machine->vendor, "AuthenticAMD");
                assert_string_equal(t.machine->cpu_model->key, models[i].key);
                assert_true(t.machine->perfmon_v2);
                assert_true(t.machine->cpuid_read);
                assert_int_equal(machine_gp_counters(t.machine), 6);
                assert_int_equal(t.machine->df_counters, 16);
                sim_test_free(&t);
        }
}

static void test_perfmon_v2_gating(void **state) {
        SimTest t = sim_test_new("zen4", DETERMINISTIC);
        uint64_t v;

        (void) state;
        sim_wr(&t, 0, PERF_CTL(3), AMD_EVENT(0x76, 0) | RINGS | EN);
        sim_advance(&t, 1000000);
        assert_int_equal(sim_rd(&t, 0, PERF_CTR(3)), 0);
        sim_wr(&t, 0, GLOBAL_CTL, 1U << 3);
        sim_advance(&t, 1000000);
        v = sim_rd(&t, 0, PERF_CTR(3));
        assert_true(v > 900000 && v <= 1000000);
        /* EN clear with the global bit set: no counting either */
        sim_wr(&t, 0, PERF_CTL(3), AMD_EVENT(0x76, 0) | RINGS);
        sim_advance(&t, 1000000);
        assert_int_equal(sim_rd(&t, 0, PERF_CTR(3)), v);
        /* another CPU's PMU is its own */
        assert_int_equal(sim_rd(&t, 1, GLOBAL_CTL), 0);
        sim_test_free(&t);
}

static void test_overflow_and_status(void **state) {
        SimTest t = sim_test_new("zen5", DETERMINISTIC);

        (void) state;
        sim_wr(&t, 0, PERF_CTR(1), COUNTER_MASK - 100);
        sim_wr(&t, 0, PERF_CTL(1), AMD_EVENT(0x76, 0) | RINGS | EN);
        sim_wr(&t, 0, GLOBAL_CTL, 0x3F);
        sim_advance(&t, 100000);
        assert_true(sim_rd(&t, 0, PERF_CTR(1)) < 100000);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_STATUS), 1U << 1);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_STATUS_CLR), 0);
        sim_wr(&t, 0, GLOBAL_STATUS_CLR, 1U << 1);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_STATUS), 0);
        sim_wr(&t, 0, GLOBAL_STATUS_SET, UINT64_MAX);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_STATUS), 0x3F | (UINT64_C(1) << 58));
        /* the status itself is read-only: AMD drops the write */
        assert_int_equal(sim_wr_err(&t, 0, GLOBAL_STATUS, 0), 0);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_STATUS), 0x3F | (UINT64_C(1) << 58));
        sim_wr(&t, 0, GLOBAL_STATUS_CLR, UINT64_MAX);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_STATUS), 0);
        /* counters take 48 bits; global control only the counters' bits */
        sim_wr(&t, 0, PERF_CTR(0), UINT64_MAX);
        assert_int_equal(sim_rd(&t, 0, PERF_CTR(0)), COUNTER_MASK);
        sim_wr(&t, 0, GLOBAL_CTL, UINT64_MAX);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_CTL), 0x3F);
        sim_test_free(&t);
}

static void test_fault_policy(void **state) {
        SimTest t = sim_test_new("zen4", DETERMINISTIC);

        (void) state;
        /* reserved bits (19, 21, 36-39, 42+) are dropped, INT and Host/GuestOnly kept */
        sim_wr(&t, 0, PERF_CTL(0), UINT64_MAX);
        assert_int_equal(sim_rd(&t, 0, PERF_CTL(0)), UINT64_C(0x0000030FFFD7FFFF));
        /* the legacy PERF_CTL0-3 / PERF_CTR0-3 alias the first four pairs */
        assert_int_equal(sim_rd(&t, 0, LEGACY_CTL0), UINT64_C(0x0000030FFFD7FFFF));
        sim_wr(&t, 0, LEGACY_CTR0 + 2, 12345);
        assert_int_equal(sim_rd(&t, 0, PERF_CTR(2)), 12345);
        /* Intel's registers and counters past the sixth do not exist */
        assert_int_equal(sim_rd_err(&t, 0, 0x186), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, 0x38F), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, 0x345), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, PERF_CTL(6)), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, PERF_CTL(6), 0), -EIO);
        /* IRPERF counts instructions and ignores writes */
        sim_advance(&t, 1000);
        assert_true(sim_rd(&t, 0, IRPERF) > 0);
        sim_test_free(&t);
}

static void test_watchdog(void **state) {
        SimTest t = sim_test_new("zen4", DETERMINISTIC "[inject]\nnmi_watchdog = yes\n");
        uint64_t evtsel;

        (void) state;
        evtsel = sim_rd(&t, 0, PERF_CTL(0));
        assert_int_equal(evtsel & 0xFF, 0x76);
        assert_true(evtsel & EN);
        assert_true(evtsel & INT_BIT);
        assert_int_equal(sim_rd(&t, 0, GLOBAL_CTL), 0x3F);
        assert_true(t.machine->nmi_watchdog);
        /* armed at -period: far from 0, re-armed instead of overflowing */
        assert_true(sim_rd(&t, 0, PERF_CTR(0)) > COUNTER_MASK / 2);
        sim_test_free(&t);
}

static void test_l3_and_data_fabric(void **state) {
        /* two sockets of four cores, two per CCX, SMT: CCX 0 = CPUs 0,1,8,9, CCX 1 = 2,3,10,11,
         * CCX 2 (socket 1) = 4,5,12,13 */
        SimTest t = sim_test_new("zen4",
                                 DETERMINISTIC "[machine]\nsockets = 2\ncores = 4\ncores_per_ccx = 2\n");
        uint64_t a, miss, hit;

        (void) state;
        assert_int_equal(t.machine->cpus[0].ccx, 0);
        assert_int_equal(t.machine->cpus[9].ccx, 0);
        assert_int_equal(t.machine->cpus[2].ccx, 1);
        assert_int_equal(t.machine->cpus[12].ccx, 2);
        sim_wr(&t, 0, L3_CTL(0), 0x04 | 0xFF << 8 | EN);
        sim_wr(&t, 1, L3_CTL(1), 0x04 | 0x01 << 8 | EN);
        sim_wr(&t, 8, L3_CTL(2), 0x04 | 0xFE << 8 | EN);
        assert_int_equal(sim_rd(&t, 9, L3_CTL(0)), 0x04 | 0xFF << 8 | EN);
        assert_int_equal(sim_rd(&t, 2, L3_CTL(0)), 0);
        sim_advance(&t, 10000000);
        a = sim_rd(&t, 0, L3_CTR(0));
        miss = sim_rd(&t, 0, L3_CTR(1));
        hit = sim_rd(&t, 0, L3_CTR(2));
        assert_true(a > 0 && miss > 0 && hit > 0);
        assert_true(llabs((long long) (a - miss - hit)) <= 2);
        assert_int_equal(sim_rd(&t, 2, L3_CTR(0)), 0);
        /* no INT in L3 selects */
        sim_wr(&t, 0, L3_CTL(3), UINT64_MAX);
        assert_int_equal(sim_rd(&t, 0, L3_CTL(3)), UINT64_C(0x0307DC000040FFFF));

        /* data fabric: read beats of channel 3 (event 0x1F + 3 * 0x40 = 0xDF), umask 0x7FE */
        sim_wr(&t, 0, DF_CTL(0), 0xDF | 0xFE << 8 | UINT64_C(0x7) << 24 | EN);
        sim_wr(&t, 0, DF_CTL(1), 0x1F | 0xFF << 8 | UINT64_C(0x7) << 24 | UINT64_C(0x1) << 32 | EN);
        sim_advance(&t, 10000000);
        assert_true(sim_rd(&t, 3, DF_CTR(0)) > 0);
        /* event 0x11F is channel 4, write beats */
        assert_true(sim_rd(&t, 11, DF_CTR(1)) > 0);
        assert_int_equal(sim_rd(&t, 4, DF_CTR(0)), 0);
        assert_int_equal(sim_rd_err(&t, 0, DF_CTL(16)), -EIO);

        /* RAPL: energy unit 2^-14 J by default, the package counter runs, writes are dropped */
        assert_int_equal((sim_rd(&t, 0, RAPL_UNIT) >> 8) & 0x1F, 14);
        a = sim_rd(&t, 0, PKG_ENERGY);
        assert_true(a > 0 && a <= UINT32_MAX);
        assert_int_equal(sim_wr_err(&t, 0, PKG_ENERGY, 0), 0);
        assert_true(sim_rd(&t, 0, PKG_ENERGY) >= a);
        sim_test_free(&t);
}

/* Counts of events on CPU cpu, six per round of `cycles` cycles, the way the client programs
 * PerfMonV2: stop through the global control, program and zero, start, stop, read. */
static void amd_measure(SimTest *t, uint32_t cpu, const uint64_t *events, size_t n_events, uint64_t cycles,
                        double *ret_counts) {
        for (size_t first = 0; first < n_events; first += 6) {
                size_t n = n_events - first < 6 ? n_events - first : 6;

                sim_wr(t, cpu, GLOBAL_CTL, 0);
                for (unsigned i = 0; i < 6; i++) {
                        sim_wr(t, cpu, PERF_CTL(i), i < n ? events[first + i] | RINGS | EN : 0);
                        sim_wr(t, cpu, PERF_CTR(i), 0);
                }
                sim_wr(t, cpu, GLOBAL_CTL, 0x3F);
                sim_advance(t, cycles);
                sim_wr(t, cpu, GLOBAL_CTL, 0);
                for (size_t i = 0; i < n; i++)
                        ret_counts[first + i] = (double) sim_rd(t, cpu, PERF_CTR((unsigned) i));
        }
}

/* perf's PipelineL1/L2 (amd-topdown.md §4) on the counts of one round each. */
static void check_topdown(const char *model, unsigned width, uint32_t resync_code, uint8_t resync_umask) {
        char config[1024];
        const uint64_t l1[] = {
                AMD_EVENT(0x76, 0), AMD_EVENT(0xaa, 0x07), AMD_EVENT(0xc1, 0), AMD_EVENT(0x1a0, 0x01),
                AMD_EVENT(0x1a0, 0x1e), AMD_EVENT(0x1a0, 0x60),
                AMD_EVENT(0x1a0, 0x01) | CMASK(width), AMD_EVENT(0xc3, 0),
                AMD_EVENT(resync_code, resync_umask),
                AMD_EVENT(0xd6, 0xa2), AMD_EVENT(0xd6, 0x02), AMD_EVENT(0x1c2, 0),
        };
        double e[ELEMENTSOF(l1)];
        double cyc, slots, fe, bs, be, smt, ret, misp_share, mem_share, ucode_share;

        (void) snprintf(config, sizeof(config),
                        DETERMINISTIC "[machine]\nsockets = 1\ncores = 2\n"
                        "[profile p]\nretiring = 0.31\nbad_speculation = 0.09\nfrontend_bound = 0.17\n"
                        "backend_bound = 0.33\nsmt_contention = 0.10\nheavy_operations = 0.05\n"
                        "branch_mispredicts = 0.06\nfetch_latency = 0.11\nmemory_bound = 0.21\nipc = 1.3\n"
                        "utilization = 0.8\n[cpus 0-3]\nprofile = p\n");
        SimTest t = sim_test_new(model, config);
        amd_measure(&t, 0, l1, ELEMENTSOF(l1), 100000000, e);
        /* each round counted as long as the other: compare like with like */
        cyc = e[0];
        slots = width * cyc;
        fe = e[3] / slots;
        bs = (e[1] - e[2]) / slots;
        be = e[4] / slots;
        smt = e[5] / slots;
        ret = e[2] / slots;
        assert_true(fabs(fe - 0.17) < 1e-6 && fabs(bs - 0.09) < 1e-6 && fabs(be - 0.33) < 1e-6);
        assert_true(fabs(smt - 0.10) < 1e-6 && fabs(ret - 0.31) < 1e-6);
        assert_true(fabs(fe + bs + be + smt + ret - 1.0) < 1e-6);
        assert_true(fabs(width * e[6] / slots - 0.11) < 1e-6);
        misp_share = e[7] / (e[7] + e[8]);
        assert_true(fabs(0.09 * misp_share - 0.06) < 1e-6);
        mem_share = e[9] / e[10];
        assert_true(fabs(0.33 * mem_share - 0.21) < 1e-6);
        ucode_share = e[11] / e[2];
        assert_true(fabs(0.31 * ucode_share - 0.05) < 1e-6);
        sim_test_free(&t);
}

static void test_topdown_formulas(void **state) {
        (void) state;
        check_topdown("zen4", 6, 0x96, 0x00);
        check_topdown("zen5", 8, 0x9f, 0x01);
}

static void test_profile_smt_contention(void **state) {
        char *log = NULL;

        (void) state;
        assert_true(sim_test_try("icx", DETERMINISTIC "[profile p]\nretiring = 0.3\nbad_speculation = 0.1\n"
                                        "frontend_bound = 0.2\nbackend_bound = 0.3\nsmt_contention = 0.1\n"
                                        "[cpus 0]\nprofile = p\n", &log) < 0);
        assert_non_null(strstr(log, "smt_contention"));
        free(log);
        log = NULL;
        /* the five classes must add up to 1 */
        assert_true(sim_test_try("zen4", DETERMINISTIC "[profile p]\nretiring = 0.3\nbad_speculation = 0.1\n"
                                         "frontend_bound = 0.2\nbackend_bound = 0.4\nsmt_contention = 0.1\n"
                                         "[cpus 0]\nprofile = p\n", &log) < 0);
        assert_non_null(strstr(log, "smt_contention"));
        free(log);
        log = NULL;
        assert_int_equal(sim_test_try("zen5", DETERMINISTIC "[machine]\ncores_per_ccx = 0\n", &log),
                         -EINVAL);
        free(log);
}

/* amd_uncore at work: the L3 counters listed enabled in every CCX, the data-fabric counters in
 * every package, counting; a configuration that names them on Intel, or a data-fabric counter
 * the model lacks, is refused. */
static void test_kernel_enabled_counters(void **state) {
        SimTest t = sim_test_new("zen4", DETERMINISTIC
                                 "[machine]\nsockets = 2\ncores = 4\ncores_per_ccx = 2\n"
                                 "[inject]\nkernel_l3_counters = 0,5\nkernel_df_counters = 15\n");
        _cleanup_free_ char *log = NULL;

        (void) state;
        for (uint32_t cpu = 0; cpu < 16; cpu++) {
                assert_true(sim_rd(&t, cpu, L3_CTL(0)) & EN);
                assert_true(sim_rd(&t, cpu, L3_CTL(5)) & EN);
                assert_int_equal(sim_rd(&t, cpu, L3_CTL(1)), 0);
                assert_true(sim_rd(&t, cpu, DF_CTL(15)) & EN);
                assert_int_equal(sim_rd(&t, cpu, DF_CTL(14)), 0);
        }
        sim_advance(&t, 10000000);
        assert_true(sim_rd(&t, 12, L3_CTR(0)) > 0);
        sim_test_free(&t);

        assert_int_equal(sim_test_try("skx", "[inject]\nkernel_l3_counters = 0\n", &log), -EINVAL);
        assert_non_null(strstr(log, "need an AMD model"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_models),
                cmocka_unit_test(test_perfmon_v2_gating),
                cmocka_unit_test(test_overflow_and_status),
                cmocka_unit_test(test_fault_policy),
                cmocka_unit_test(test_watchdog),
                cmocka_unit_test(test_l3_and_data_fabric),
                cmocka_unit_test(test_topdown_formulas),
                cmocka_unit_test(test_profile_smt_contention),
                cmocka_unit_test(test_kernel_enabled_counters),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

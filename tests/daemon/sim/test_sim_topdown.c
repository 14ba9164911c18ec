/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perf's TopDown L1/L2 formulas (shared/reference/tma-formulas.md §3), written as perf writes
 * them, applied to simulated raw counts must give the workload profile back: within 1e-6 for
 * generic counters (integer rounding of ~1e10 counts), within the 8-bit quantization of
 * PERF_METRICS where it is used
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/sim/sim-profile.h"
#include "backend/sim/sim-regs.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "sim_test_util.h"

/* Every measurement round lasts this many wall-clock cycles (~5 s at 2 GHz): counts of 1e9
 * and more, so integer rounding stays far below 1e-6. */
#define WINDOW_CYCLES UINT64_C(10000000000)

/* Bounds the tests enforce. PERF_METRICS bytes are within one LSB (1/255) of the exact
 * fraction; a value combining two such bytes (derived L2 siblings) within two. */
#define GENERIC_BOUND 1e-6
#define ONE_BYTE_BOUND (1.0 / 255 + 1e-6)
#define TWO_BYTES_BOUND (2.0 / 255 + 1e-6)

typedef struct Topdown {
        double retiring, bad_speculation, frontend_bound, backend_bound;
        double heavy_operations, light_operations, branch_mispredicts, machine_clears;
        double fetch_latency, fetch_bandwidth, memory_bound, core_bound;
} Topdown;

static const char *const metric_names[] = {
        "retiring", "bad_speculation", "frontend_bound", "backend_bound",
        "heavy_operations", "light_operations", "branch_mispredicts", "machine_clears",
        "fetch_latency", "fetch_bandwidth", "memory_bound", "core_bound",
};

static Topdown expected_topdown(const SimProfile *p) {
        return (Topdown) {
                .retiring = p->retiring, .bad_speculation = p->bad_speculation,
                .frontend_bound = p->frontend_bound, .backend_bound = p->backend_bound,
                .heavy_operations = p->heavy_operations,
                .light_operations = p->retiring - p->heavy_operations,
                .branch_mispredicts = p->branch_mispredicts,
                .machine_clears = p->bad_speculation - p->branch_mispredicts,
                .fetch_latency = p->fetch_latency,
                .fetch_bandwidth = p->frontend_bound - p->fetch_latency,
                .memory_bound = p->memory_bound,
                .core_bound = p->backend_bound - p->memory_bound,
        };
}

/* Largest error seen per bound class, reported at the end. */
static double worst_generic, worst_one_byte, worst_two_bytes;

static void note_error(double err, double bound) {
        double *worst = bound == GENERIC_BOUND ? &worst_generic :
                        bound == ONE_BYTE_BOUND ? &worst_one_byte : &worst_two_bytes;

        if (err > *worst)
                *worst = err;
}

static void check_topdown(const char *what, const Topdown *got, const Topdown *want, const double *bounds) {
        const double *g = (const double *) got, *w = (const double *) want;

        for (size_t i = 0; i < sizeof(Topdown) / sizeof(double); i++) {
                double err = fabs(g[i] - w[i]);

                note_error(err, bounds[i]);
                if (err > bounds[i]) {
                        print_error("%s: %s = %.9f, profile says %.9f (error %.3g > bound %.3g)\n", what,
                                    metric_names[i], g[i], w[i], err, bounds[i]);
                        fail();
                }
        }
}

/* ---- Skylake-SP / Cascade Lake (§3.1) */

enum {
        SKX_THREAD_P, SKX_THREAD_ANY, SKX_ONE_THREAD_ACTIVE, SKX_REF_XCLK, SKX_UOPS_ISSUED_ANY,
        SKX_RETIRE_SLOTS, SKX_MACRO_FUSED, SKX_IDQ_NOT_DELIVERED_CORE, SKX_IDQ_CYCLES_0_UOPS,
        SKX_RECOVERY_CYCLES, SKX_RECOVERY_CYCLES_ANY, SKX_BR_MISP_RETIRED, SKX_MACHINE_CLEARS,
        SKX_STALLS_MEM_ANY, SKX_STALLS_TOTAL, SKX_BOUND_ON_STORES, SKX_EXE_1_PORTS, SKX_EXE_2_PORTS,
        _SKX_EVENTS,
};

/* Raw configs from tma-formulas.md §5 (the *_ANY forms with AnyThread, bit 21). */
static const uint64_t skx_events[_SKX_EVENTS] = {
        [SKX_THREAD_P] = 0x3c,
        [SKX_THREAD_ANY] = 0x20003c,
        [SKX_ONE_THREAD_ACTIVE] = 0x23c,
        [SKX_REF_XCLK] = 0x13c,
        [SKX_UOPS_ISSUED_ANY] = 0x10e,
        [SKX_RETIRE_SLOTS] = 0x2c2,
        [SKX_MACRO_FUSED] = 0x4c2,
        [SKX_IDQ_NOT_DELIVERED_CORE] = 0x19c,
        [SKX_IDQ_CYCLES_0_UOPS] = 0x400019c,
        [SKX_RECOVERY_CYCLES] = 0x10d,
        [SKX_RECOVERY_CYCLES_ANY] = 0x20010d,
        [SKX_BR_MISP_RETIRED] = 0xc5,
        [SKX_MACHINE_CLEARS] = 0x10401c3,
        [SKX_STALLS_MEM_ANY] = 0x140014a3,
        [SKX_STALLS_TOTAL] = 0x40004a3,
        [SKX_BOUND_ON_STORES] = 0x40a6,
        [SKX_EXE_1_PORTS] = 0x2a6,
        [SKX_EXE_2_PORTS] = 0x4a6,
};

/* e: event counts, inst = INST_RETIRED.ANY (fixed 0), clks = CPU_CLK_UNHALTED.THREAD (fixed 1) */
static Topdown skx_formulas(const double *e, double inst, double clks, bool smt_on, bool core_wide) {
        double core_clks, slots, recovery;
        Topdown t;

        core_clks = !core_wide ? clks / 2 * (1 + e[SKX_ONE_THREAD_ACTIVE] / e[SKX_REF_XCLK])
                               : (smt_on ? e[SKX_THREAD_ANY] / 2 : clks);
        slots = 4 * core_clks;
        recovery = smt_on ? e[SKX_RECOVERY_CYCLES_ANY] / 2 : e[SKX_RECOVERY_CYCLES];

        t.frontend_bound = e[SKX_IDQ_NOT_DELIVERED_CORE] / slots;
        t.bad_speculation = (e[SKX_UOPS_ISSUED_ANY] - e[SKX_RETIRE_SLOTS] + 4 * recovery) / slots;
        t.retiring = e[SKX_RETIRE_SLOTS] / slots;
        t.backend_bound = 1 - t.frontend_bound - (e[SKX_UOPS_ISSUED_ANY] + 4 * recovery) / slots;

        t.heavy_operations = (e[SKX_RETIRE_SLOTS] + e[SKX_MACRO_FUSED] - inst) / slots;
        t.light_operations = t.retiring - t.heavy_operations;
        t.branch_mispredicts = e[SKX_BR_MISP_RETIRED] / (e[SKX_BR_MISP_RETIRED] + e[SKX_MACHINE_CLEARS]) *
                               t.bad_speculation;
        t.machine_clears = t.bad_speculation - t.branch_mispredicts;
        t.fetch_latency = 4 * e[SKX_IDQ_CYCLES_0_UOPS] / slots;
        t.fetch_bandwidth = t.frontend_bound - t.fetch_latency;
        t.memory_bound = (e[SKX_STALLS_MEM_ANY] + e[SKX_BOUND_ON_STORES]) /
                         (e[SKX_STALLS_TOTAL] + (e[SKX_EXE_1_PORTS] + t.retiring * e[SKX_EXE_2_PORTS]) +
                          e[SKX_BOUND_ON_STORES]) * t.backend_bound;
        t.core_bound = t.backend_bound - t.memory_bound;
        return t;
}

static void sum_samples(const SimSample *a, const SimSample *b, SimSample *ret) {
        for (size_t i = 0; i < SIM_TEST_EVENTS_MAX; i++)
                ret->event[i] = a->event[i] + b->event[i];
        for (size_t i = 0; i < 4; i++)
                ret->fixed[i] = a->fixed[i] + b->fixed[i];
}

static void fill_bounds(double *bounds, double value) {
        for (size_t i = 0; i < sizeof(Topdown) / sizeof(double); i++)
                bounds[i] = value;
}

/* Measures a core's two threads (or one thread with SMT off) running profile_name, and
 * checks perf's formulas in every #SMT_on / #core_wide combination that applies. */
static void check_skx(const char *model, const char *profile_name, bool smt, double u0, double u1) {
        double bounds[sizeof(Topdown) / sizeof(double)];
        const SimProfile *p = sim_profile_builtin(profile_name);
        SimSample s[2], core;
        char config[512], what[128];
        uint32_t cpus[2] = { 1, 5 };    /* core 1 of a 4-core socket and its sibling */
        Topdown want, got;
        SimTest t;

        assert_non_null(p);
        (void) snprintf(config, sizeof(config),
                        "[machine]\nsockets = 1\ncores = 4\nsmt = %s\n"
                        "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                        "[cpus 0-%d]\nprofile = %s\n"
                        "[cpus 1]\nutilization = %g\n[cpus %d]\nutilization = %g\n",
                        smt ? "yes" : "no", smt ? 7 : 3, profile_name, u0, smt ? 5 : 2, u1);
        t = sim_test_new(model, config);
        want = expected_topdown(p);
        fill_bounds(bounds, GENERIC_BOUND);

        sim_measure(&t, cpus, smt ? 2 : 1, skx_events, _SKX_EVENTS, WINDOW_CYCLES, s);
        if (!smt) {
                for (int core_wide = 0; core_wide <= 1; core_wide++) {
                        got = skx_formulas(s[0].event, s[0].fixed[0], s[0].fixed[1], false, core_wide);
                        (void) snprintf(what, sizeof(what), "%s %s SMT off core_wide=%d", model,
                                        profile_name, core_wide);
                        check_topdown(what, &got, &want, bounds);
                }
        } else {
                /* core-wide: perf sums both siblings' counts */
                sum_samples(&s[0], &s[1], &core);
                got = skx_formulas(core.event, core.fixed[0], core.fixed[1], true, true);
                (void) snprintf(what, sizeof(what), "%s %s SMT on core_wide=1", model, profile_name);
                check_topdown(what, &got, &want, bounds);
                /* per thread: core clocks estimated from ONE_THREAD_ACTIVE / REF_XCLK; exact
                 * when the siblings are alike, as the recovery term splits the core's evenly */
                if (u0 == u1)
                        for (size_t k = 0; k < 2; k++) {
                                got = skx_formulas(s[k].event, s[k].fixed[0], s[k].fixed[1], true, false);
                                (void) snprintf(what, sizeof(what), "%s %s SMT on core_wide=0 cpu %u", model,
                                                profile_name, cpus[k]);
                                check_topdown(what, &got, &want, bounds);
                        }
        }
        sim_test_free(&t);
}

static const char *const builtin_names[] = {
        "default", "memory-bound", "frontend-bound", "branchy", "compute",
};

static void test_skx_smt_on(void **state) {
        for (size_t i = 0; i < 5; i++) {
                check_skx("skx", builtin_names[i], true, 0.9, 0.9);
                check_skx("skx", builtin_names[i], true, 1.0, 0.35);
        }
}

static void test_skx_smt_off(void **state) {
        for (size_t i = 0; i < 5; i++)
                check_skx("skx", builtin_names[i], false, 0.8, 0.8);
}

static void test_clx(void **state) {
        for (size_t i = 0; i < 5; i++) {
                check_skx("clx", builtin_names[i], true, 0.98, 0.98);
                check_skx("clx", builtin_names[i], false, 1.0, 1.0);
        }
}

/* ---- Ice Lake-SP (§3.2) and Sapphire Rapids (§3.3) */

enum {
        ICX_UOP_DROPPING, ICX_CLEARS_COUNT, ICX_UOPS_RETIRED_SLOTS, ICX_UOPS_ISSUED_ANY, ICX_IDQ_MS_UOPS,
        ICX_UOPS_DECODED_DEC0, ICX_UOPS_DECODED_DEC0_CMASK1, ICX_IDQ_MITE_UOPS, ICX_BR_MISP_RETIRED,
        ICX_MACHINE_CLEARS, ICX_IDQ_CYCLES_0_UOPS, ICX_STALLS_MEM_ANY, ICX_STALLS_TOTAL,
        ICX_BOUND_ON_STORES, ICX_EXE_1_PORTS, ICX_EXE_2_PORTS, ICX_SLOTS_P,
        _ICX_EVENTS,
};

static const uint64_t icx_events[_ICX_EVENTS] = {
        [ICX_UOP_DROPPING] = 0x100d,
        [ICX_CLEARS_COUNT] = 0x104010d,
        [ICX_UOPS_RETIRED_SLOTS] = 0x2c2,
        [ICX_UOPS_ISSUED_ANY] = 0x10e,
        [ICX_IDQ_MS_UOPS] = 0x3079,
        [ICX_UOPS_DECODED_DEC0] = 0x156,
        [ICX_UOPS_DECODED_DEC0_CMASK1] = 0x1000156,
        [ICX_IDQ_MITE_UOPS] = 0x479,
        [ICX_BR_MISP_RETIRED] = 0xc5,
        [ICX_MACHINE_CLEARS] = 0x10401c3,
        [ICX_IDQ_CYCLES_0_UOPS] = 0x500019c,
        [ICX_STALLS_MEM_ANY] = 0x140014a3,
        [ICX_STALLS_TOTAL] = 0x40004a3,
        [ICX_BOUND_ON_STORES] = 0x20040a6,
        [ICX_EXE_1_PORTS] = 0x2a6,
        [ICX_EXE_2_PORTS] = 0x4a6,
        [ICX_SLOTS_P] = 0x1a4,
};

enum { SPR_UOP_DROPPING, SPR_SLOTS_P, _SPR_EVENTS };
static const uint64_t spr_events[_SPR_EVENTS] = {
        [SPR_UOP_DROPPING] = 0x10ad,
        [SPR_SLOTS_P] = 0x1a4,
};

/* The kernel's topdown-* values: floor(slots * byte / 0xff) (icl_get_metrics_event_value). */
static double metric_slots(double slots, uint64_t metrics, unsigned index) {
        return floor(slots * (double) ((metrics >> (8 * index)) & 0xFF) / 0xFF);
}

static Topdown icx_formulas(const double *e, double slots, uint64_t metrics) {
        double td_retiring = metric_slots(slots, metrics, 0), td_bad_spec = metric_slots(slots, metrics, 1);
        double td_fe_bound = metric_slots(slots, metrics, 2), td_be_bound = metric_slots(slots, metrics, 3);
        double sum4 = td_fe_bound + td_bad_spec + td_retiring + td_be_bound, microcode_sequencer;
        Topdown t;

        t.retiring = td_retiring / sum4;
        t.frontend_bound = td_fe_bound / sum4 - e[ICX_UOP_DROPPING] / slots;
        t.backend_bound = td_be_bound / sum4 + 5 * e[ICX_CLEARS_COUNT] / slots;
        t.bad_speculation = fmax(1 - (t.frontend_bound + t.backend_bound + t.retiring), 0);

        microcode_sequencer = e[ICX_UOPS_RETIRED_SLOTS] / e[ICX_UOPS_ISSUED_ANY] * e[ICX_IDQ_MS_UOPS] /
                              slots;
        t.heavy_operations = microcode_sequencer +
                             t.retiring * (e[ICX_UOPS_DECODED_DEC0] - e[ICX_UOPS_DECODED_DEC0_CMASK1]) /
                             e[ICX_IDQ_MITE_UOPS];
        t.light_operations = fmax(0, t.retiring - t.heavy_operations);
        t.branch_mispredicts = e[ICX_BR_MISP_RETIRED] / (e[ICX_BR_MISP_RETIRED] + e[ICX_MACHINE_CLEARS]) *
                               t.bad_speculation;
        t.machine_clears = fmax(0, t.bad_speculation - t.branch_mispredicts);
        t.fetch_latency = (5 * e[ICX_IDQ_CYCLES_0_UOPS] - e[ICX_UOP_DROPPING]) / slots;
        t.fetch_bandwidth = fmax(0, t.frontend_bound - t.fetch_latency);
        t.memory_bound = (e[ICX_STALLS_MEM_ANY] + e[ICX_BOUND_ON_STORES]) /
                         (e[ICX_STALLS_TOTAL] + (e[ICX_EXE_1_PORTS] + t.retiring * e[ICX_EXE_2_PORTS]) +
                          e[ICX_BOUND_ON_STORES]) * t.backend_bound;
        t.core_bound = fmax(0, t.backend_bound - t.memory_bound);
        return t;
}

static Topdown spr_formulas(const double *e, double slots, uint64_t metrics) {
        double td[8], sum4;
        Topdown t;

        for (unsigned i = 0; i < 8; i++)
                td[i] = metric_slots(slots, metrics, i);
        sum4 = td[2] + td[1] + td[0] + td[3];

        t.retiring = td[0] / sum4;
        t.frontend_bound = td[2] / sum4 - e[SPR_UOP_DROPPING] / slots;
        t.backend_bound = td[3] / sum4;
        t.bad_speculation = fmax(1 - (t.frontend_bound + t.backend_bound + t.retiring), 0);
        t.heavy_operations = td[4] / sum4;
        t.light_operations = fmax(0, t.retiring - t.heavy_operations);
        t.branch_mispredicts = td[5] / sum4;
        t.machine_clears = fmax(0, t.bad_speculation - t.branch_mispredicts);
        t.fetch_latency = td[6] / sum4 - e[SPR_UOP_DROPPING] / slots;
        t.fetch_bandwidth = fmax(0, t.frontend_bound - t.fetch_latency);
        t.memory_bound = td[7] / sum4;
        t.core_bound = fmax(0, t.backend_bound - t.memory_bound);
        return t;
}

static void check_metrics_model(const char *model, const char *profile_name, bool smt) {
        bool icx = strcmp(model, "icx") == 0;
        const SimProfile *p = sim_profile_builtin(profile_name);
        double bounds[sizeof(Topdown) / sizeof(double)];
        uint32_t cpus[2] = { 2, 6 };
        char config[512], what[128];
        SimSample s[2];
        Topdown want, got;
        SimTest t;

        assert_non_null(p);
        (void) snprintf(config, sizeof(config),
                        "[machine]\nsockets = 1\ncores = 4\nsmt = %s\n"
                        "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                        "[cpus 0-%d]\nprofile = %s\n", smt ? "yes" : "no", smt ? 7 : 3, profile_name);
        t = sim_test_new(model, config);
        want = expected_topdown(p);

        /* L1 nodes: one PERF_METRICS byte each (bad speculation is the remainder of three
         * bytes that sum with it to exactly 0xff); derived L2 siblings: two bytes */
        fill_bounds(bounds, TWO_BYTES_BOUND);
        bounds[0] = bounds[1] = bounds[2] = bounds[3] = ONE_BYTE_BOUND;
        if (icx) {
                /* from generic counters; heavy and mispredicts scale a quantized L1 node by a
                 * ratio <= 1, memory bound one scaled quantized node and one in its ratio */
                bounds[4] = bounds[6] = ONE_BYTE_BOUND;
                bounds[8] = GENERIC_BOUND;
        } else
                bounds[4] = bounds[6] = bounds[8] = bounds[10] = ONE_BYTE_BOUND;

        sim_measure(&t, cpus, smt ? 2 : 1, icx ? icx_events : spr_events, icx ? _ICX_EVENTS : _SPR_EVENTS,
                    WINDOW_CYCLES, s);
        for (size_t k = 0; k < (smt ? 2U : 1U); k++) {
                double slots = s[k].fixed[3];

                /* TOPDOWN.SLOTS_P on a GP counter agrees with fixed counter 3 */
                assert_true(fabs(s[k].event[icx ? ICX_SLOTS_P : SPR_SLOTS_P] - slots) <= 1);
                got = icx ? icx_formulas(s[k].event, slots, s[k].perf_metrics)
                          : spr_formulas(s[k].event, slots, s[k].perf_metrics);
                (void) snprintf(what, sizeof(what), "%s %s SMT %s cpu %u", model, profile_name,
                                smt ? "on" : "off", cpus[k]);
                check_topdown(what, &got, &want, bounds);
        }
        sim_test_free(&t);
}

static void test_icx(void **state) {
        for (size_t i = 0; i < 5; i++) {
                check_metrics_model("icx", builtin_names[i], true);
                check_metrics_model("icx", builtin_names[i], false);
        }
}

static void test_spr(void **state) {
        for (size_t i = 0; i < 5; i++) {
                check_metrics_model("spr", builtin_names[i], true);
                check_metrics_model("spr", builtin_names[i], false);
        }
}

static void test_anythread_and_extra_events(void **state) {
        SimTest t = sim_test_new("skx", "[machine]\nsockets = 1\ncores = 2\n"
                                        "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                        "[cpus 0]\nutilization = 0.5\nuser_fraction = 1\n"
                                        "event.0xd1.0x01 = 0.25\n"
                                        "[cpus 2]\nutilization = 0.5\n");
        const uint64_t n = 1000000;

        /* fixed counter 1 with AnyThread counts cycles in which either thread runs:
         * 0.5 + 0.5 - 0.25 of the time */
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0x070);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, 0xd1 | 0x0100 | EVTSEL_EN | EVTSEL_USR);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 1,
               0xd1 | 0x0100 | (UINT64_C(1) << 24) | EVTSEL_EN | EVTSEL_USR);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x3 | SIM_BIT(33));
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 1), n * 3 / 4);
        /* the configured extra event: 0.25 per unhalted cycle; with a cmask it is unknown */
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), n / 8);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0 + 1), 0);

        /* hello's sim_events: the model's encodings and the extra event, each once; not the
         * cmask variant the simulator counts as 0 */
        {
                uint64_t events[PMUGATE_SIM_EVENTS_MAX];
                size_t n_events = t.backend->vtable->modelled_events(t.backend, events, ELEMENTSOF(events));
                bool extra = false, cycles = false, with_cmask = false;

                assert_true(n_events > 2 && n_events <= ELEMENTSOF(events));
                for (size_t i = 0; i < n_events; i++) {
                        extra = extra || events[i] == 0x01d1;
                        cycles = cycles || events[i] == 0x003c;
                        with_cmask = with_cmask || events[i] == (0x01d1 | (UINT64_C(1) << 24));
                        for (size_t k = 0; k < i; k++)
                                assert_true(events[k] != events[i]);
                }
                assert_true(extra && cycles && !with_cmask);
        }
        sim_test_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_skx_smt_on),
                cmocka_unit_test(test_skx_smt_off),
                cmocka_unit_test(test_clx),
                cmocka_unit_test(test_icx),
                cmocka_unit_test(test_spr),
                cmocka_unit_test(test_anythread_and_extra_events),
        };
        int r;

        log_set_max_level(LOG_WARNING);
        r = cmocka_run_group_tests(tests, NULL, NULL);
        print_message("largest errors: generic counters %.3g (bound %g), one PERF_METRICS byte %.3g (bound "
                      "1/255 = %.3g), two bytes %.3g (bound %.3g)\n", worst_generic, GENERIC_BOUND,
                      worst_one_byte, 1.0 / 255, worst_two_bytes, 2.0 / 255);
        return r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulator configuration: bundled files load, profiles inherit, and every kind of bad file
 * is refused with its line and a reason
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/sim/sim-clock.h"
#include "backend/sim/sim-regs.h"
#include "log.h"
#include "sim_test_util.h"

typedef struct BadConfig {
        const char *model;
        const char *text;
        const char *location;   /* ":LINE:" the message must name; NULL when none applies */
        const char *reason;     /* a part of the reason */
} BadConfig;

static const BadConfig bad_configs[] = {
        { "spr", "[machine]\nsockets = 2\n[gpu]\nfoo = 1\n", ":3:", "unknown section [gpu]" },
        { "spr", "[machine]\nsocket = 2\n", ":2:", "unknown key 'socket' in [machine]" },
        { "spr", "# comment\n[machine]\nsockets = two\n", ":3:", "sockets = 'two'" },
        { "spr", "[machine]\nsockets = 0\n", ":2:", "from 1 to 8" },
        { "spr", "[machine]\nsockets = 2 # no\n", ":2:", "expected an integer" },
        { "spr", "[machine]\nsmt = maybe\n", ":2:", "expected yes or no" },
        { "spr", "[machine]\nmodel = zen3\n", ":2:", "expected skx, clx, icx, spr, emr, gnr, srf, zen4, zen5 or grace" },
        { "spr", "sockets = 2\n", ":1:", "key outside a section" },
        { "spr", "[machine]\nsockets = 2\nthis is not ini\n", ":3:",
          "expected '[section]' or 'key = value'" },
        { "spr", "[clock]\nmode = fast\n", ":2:", "expected realtime or deterministic" },
        { "spr", "[clock]\njitter = 2\n", ":2:", "jitter" },
        { "spr", "[inject]\neio_msr = 0x38f, zzz\n", ":2:", "'zzz' is not an MSR address" },
        { "spr", "[inject]\noffline_cpus = 3-1\n", ":2:", "expected a CPU list" },
        { "spr", "[inject]\nlockdown = full\n", ":2:", "expected none, integrity or confidentiality" },
        { "spr", "[inject]\noffline_cpus = 0-15\n", ":2:", "takes every CPU offline" },
        { "spr", "[inject]\noffline_cpus = 40\n", ":2:", "CPU 40 does not exist" },
        { "spr", "[rapl]\npackage_watts = -5\n", ":2:", "package_watts" },
        { "spr", "[imc]\nread_bandwidth = 5\n", ":2:", "unknown key 'read_bandwidth' in [imc]" },
        { "spr", "[imc]\ncounter_start = 0x1000000000000\n", ":2:", "counter_start" },
        { "spr", "[imc]\nkernel_pmu = maybe\n", ":2:", "expected yes or no" },
        { "zen4", "[inject]\nkernel_l3_counters = 6\n", ":2:", "expected counter numbers below 6" },
        { "zen4", "[inject]\nkernel_df_counters = 0,x\n", ":2:", "kernel_df_counters = '0,x'" },
        { "skx", "[inject]\nkernel_imc_units = 2-1\n", ":2:", "expected unit numbers" },
        { "spr", "[rapl]\nenergy_start = 0x100000000\n", ":2:", "energy_start" },
        { "spr", "\n[profile mine]\nretiring = 0.5\n", ":2:", "must be 1" },
        { "spr", "[profile mine]\nbase = compute\nheavy_operations = 0.75\n", ":1:",
          "heavy_operations = 0.75 exceeds its parent retiring = 0.7" },
        { "spr", "[profile mine]\nretiring = 1.5\n", ":2:", "expected a number from 0 to 1" },
        { "spr", "[profile Bad Name]\nipc = 1\n", ":1:", "a profile name is" },
        { "spr", "[profile a]\nipc = 1\n[profile b]\nipc = 2\n[profile a]\nipc = 3\n", ":5:",
          "defined twice" },
        { "spr", "[profile a]\nbase = b\n[profile b]\nbase = a\n", NULL, "part of a loop" },
        { "spr", "[profile a]\nevent.0x1ff.0x01 = 1\n", ":2:", "event.0xEE.0xUU" },
        { "spr", "[profile a]\nevent.0xd1.0x01 = lots\n", ":2:", "rate per cycle" },
        { "spr", "[cpus 0-3]\nprofile = nope\n", ":1:", "unknown profile 'nope'" },
        { "spr", "[cpus 0-3]\nprofile = compute\n[cpus 99]\nipc = 2\n", ":3:", "CPU 99 does not exist" },
        { "spr", "[cpus 2]\nretiring = 0.6\n", ":1:", "must be 1" },
        { "spr", "[cpus x]\nipc = 2\n", ":1:", "expected a CPU list" },
        { "spr", "[cpus 0]\ncolour = red\n", ":2:", "unknown key 'colour' in [cpus 0]" },
        /* Skylake's heavy-operations formula needs ipc >= 4 * (retiring - heavy) */
        { "skx", "[cpus 0-3]\nipc = 0.5\n", ":1:",
          "ipc = 0.5 is below 4 * (retiring - heavy_operations) = 1.2" },
        { "zen3", NULL, NULL, "Unknown simulated CPU model 'zen3'" },
        { "zen4", "[machine]\ncores_per_ccx = 0\n", ":2:", "cores_per_ccx" },
        { "spr", "[cpus 0]\nsmt_contention = 0.1\nretiring = 0.25\n", ":1:", "only the AMD models" },
        { NULL, "[machine]\nsockets = 1\n", NULL, "No simulated CPU model" },
        { "spr", "[cpus 0]\nphase = compute,branchy\n", ":2:", "expected PROFILE,PROFILE,PERIOD_MS" },
        { "spr", "[cpus 0]\nphase = compute,branchy,0\n", ":2:", "the period is 1-3600000 milliseconds" },
        { "spr", "[cpus 0]\nphase = compute,Bad,100\n", ":2:", "is not a profile name" },
        { "spr", "[cpus 0]\nphase = compute,nope,100\n", ":1:", "unknown profile 'nope'" },
        { "spr", "[cpus 0]\nprofile = compute\nphase = compute,branchy,100\n", ":1:", "use one" },
        { "zen4", "[cpus 0]\nphase = compute,branchy,100\n", ":1:", "not simulated on AMD" },
};

static void test_bad_configs(void **state) {
        for (size_t i = 0; i < sizeof(bad_configs) / sizeof(bad_configs[0]); i++) {
                const BadConfig *c = &bad_configs[i];
                char *log = NULL;
                int r;

                r = sim_test_try(c->model, c->text, &log);
                if (r != -EINVAL || (c->location && !strstr(log, c->location)) || !strstr(log, c->reason)) {
                        print_error("config %zu: r=%d, log: %s", i, r, log);
                        free(log);
                        fail();
                }
                free(log);
        }
}

static void test_long_line(void **state) {
        char text[512], *log = NULL;

        (void) snprintf(text, sizeof(text), "[machine]\n# %0300d\nsockets = 1\n", 0);
        assert_int_equal(sim_test_try("skx", text, &log), -EINVAL);
        assert_non_null(strstr(log, ":2: line longer than"));
        free(log);
}

static void test_missing_file(void **state) {
        Machine *m = NULL;
        Backend *b = NULL;

        log_set_max_level(LOG_CRIT);
        assert_int_equal(backend_sim_new("skx", "/nonexistent/sim.conf", &m, &b), -ENOENT);
        log_set_max_level(LOG_WARNING);
        assert_null(m);
        assert_null(b);
}

static void test_bundled_configs(void **state) {
        static const struct {
                const char *file;
                const char *key;
                uint32_t n_cpus;
        } bundled[] = {
                { "default.conf", "spr", 32 },
                { "skx-smt.conf", "skx", 16 },
                { "icx.conf", "icx", 16 },
                { "clx-faults.conf", "clx", 8 },
        };

        for (size_t i = 0; i < sizeof(bundled) / sizeof(bundled[0]); i++) {
                char path[4096];
                Machine *m = NULL;
                Backend *b = NULL;

                sim_test_bundled_path(bundled[i].file, path, sizeof(path));
                assert_int_equal(backend_sim_new(NULL, path, &m, &b), 0);
                assert_string_equal(m->cpu_model->key, bundled[i].key);
                assert_int_equal(m->n_cpus, bundled[i].n_cpus);
                b->vtable->free(b);
                machine_free(m);
        }
}

static void test_comments_and_overrides(void **state) {
        /* ';' starts an inline comment; the command line's model and the file's may agree */
        SimTest t = sim_test_new("icx", "# a comment\n; another\n[machine]\nmodel = icx\n"
                                        "sockets = 1 ; one socket\ncores = 2\n");
        char *log = NULL;

        assert_string_equal(t.machine->cpu_model->key, "icx");
        assert_int_equal(t.machine->n_cpus, 4);
        sim_test_free(&t);
        /* but not differ: the file's topology and profiles are written for its model */
        assert_int_equal(sim_test_try("icx", "[machine]\nmodel = skx\nsockets = 1\n", &log), -EINVAL);
        assert_non_null(strstr(log, "--sim-model=icx conflicts with model = skx"));
        free(log);
        /* without one, the file's model is used */
        t = sim_test_new(NULL, "[machine]\nmodel = clx\n");
        assert_string_equal(t.machine->cpu_model->key, "clx");
        sim_test_free(&t);
}

/* IPC as the simulated counters show it: INST_RETIRED.ANY / CPU_CLK_UNHALTED.THREAD. */
static double measured_ipc(SimTest *t, uint32_t cpu) {
        SimSample s;

        sim_measure(t, &cpu, 1, NULL, 0, 100000000, &s);
        return s.fixed[0] / s.fixed[1];
}

static void test_profile_inheritance(void **state) {
        SimTest t = sim_test_new("spr", "[machine]\nsockets = 1\ncores = 4\nsmt = no\n"
                                        "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                        "[profile default]\nipc = 1.1\n"
                                        "[profile fast]\nbase = compute\nipc = 3.0\n"
                                        "[profile faster]\nbase = fast\nipc = 3.5\n"
                                        "[profile fresh]\nutilization = 0.5\n"
                                        "[cpus 1]\nprofile = fast\n"
                                        "[cpus 2]\nprofile = faster\n"
                                        "[cpus 2-3]\nuser_fraction = 0.5\n"
                                        "[cpus 3]\nprofile = fresh\n");

        /* [profile default] changes what every other CPU runs */
        assert_float_equal(measured_ipc(&t, 0), 1.1, 1e-6);
        assert_float_equal(measured_ipc(&t, 1), 3.0, 1e-6);
        /* a later [cpus] without profile= adjusts, it does not reset */
        assert_float_equal(measured_ipc(&t, 2), 3.5, 1e-6);
        /* a new profile without base= starts from (the adjusted) default */
        assert_float_equal(measured_ipc(&t, 3), 1.1, 1e-6);
        sim_test_free(&t);
}

/* phase = A,B,MS: A for the first MS of simulated time, then B, then A, ...; a window over
 * both phases sees their time-weighted mean, and a [cpus] adjustment holds in both. */
static void test_phases(void **state) {
        SimTest t = sim_test_new("spr", "[machine]\nsockets = 1\ncores = 4\nsmt = no\n"
                                        "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                        "[profile slow]\nipc = 1.0\n"
                                        "[profile fast]\nipc = 3.0\n"
                                        "[cpus 0-1]\nphase = slow,fast,10\n"
                                        "[cpus 1]\nutilization = 0.5\n");
        uint64_t phase = (uint64_t) (sim_test_hz(&t) / 100.0);
        uint32_t cpu = 0;
        SimSample s;

        sim_measure(&t, &cpu, 1, NULL, 0, phase, &s);
        assert_float_equal(s.fixed[0] / s.fixed[1], 1.0, 1e-6);
        sim_measure(&t, &cpu, 1, NULL, 0, phase, &s);
        assert_float_equal(s.fixed[0] / s.fixed[1], 3.0, 1e-6);
        sim_measure(&t, &cpu, 1, NULL, 0, 2 * phase, &s);
        assert_float_equal(s.fixed[0] / s.fixed[1], 2.0, 1e-6);
        /* half a phase of each */
        sim_measure(&t, &cpu, 1, NULL, 0, phase / 2, &s);
        sim_measure(&t, &cpu, 1, NULL, 0, phase, &s);
        assert_float_equal(s.fixed[0] / s.fixed[1], 2.0, 1e-6);
        cpu = 1;
        sim_measure(&t, &cpu, 1, NULL, 0, 4 * phase, &s);
        assert_float_equal(s.fixed[0] / s.fixed[1], 2.0, 1e-6);
        assert_float_equal(s.fixed[2] / (4.0 * (double) phase), 0.5, 1e-6);
        sim_test_free(&t);
}

static void test_deterministic_defaults(void **state) {
        /* deterministic mode without cycles_per_access: 1000 cycles per access */
        SimTest t = sim_test_new("icx", "[clock]\nmode = deterministic\n");
        uint64_t a = sim_rd(&t, 0, MSR_IA32_TSC), b = sim_rd(&t, 0, MSR_IA32_TSC);

        assert_int_equal(b - a, 1000);
        sim_test_free(&t);
}

/* In real time an access happens at the instant it begins: the time the simulator spends on it
 * is not simulated time (a cold first access after an idle interval would otherwise lengthen
 * the window between a write and the next read), the time between accesses is. */
static void test_realtime_access_is_an_instant(void **state) {
        const struct timespec five_ms = { .tv_nsec = 5 * 1000 * 1000 };
        SimConfig config = { .clock_mode = SIM_CLOCK_REALTIME };
        uint64_t at, after_inside, after_outside;
        SimClock c;

        (void) state;
        sim_clock_init(&c, &config, 1000);
        at = sim_clock_access(&c);
        (void) nanosleep(&five_ms, NULL);
        assert_int_equal(sim_clock_now(&c), at);
        sim_clock_leave(&c);
        after_inside = sim_clock_now(&c);
        /* 1000 MHz: a cycle a nanosecond; well under the 5 ms spent inside */
        assert_true(after_inside - at < UINT64_C(1000000));
        (void) nanosleep(&five_ms, NULL);
        after_outside = sim_clock_now(&c);
        assert_true(after_outside - after_inside >= UINT64_C(5000000));
}

/* Lockdown: the msr driver and PCI config space refuse writes with EPERM, reads work, and the
 * backend says its lockdown for the backend choice. */
static void test_lockdown(void **state) {
        SimTest t = sim_test_new("skx", "[inject]\nlockdown = integrity\n");
        SimTest open_node = sim_test_new("skx", "[inject]\nlockdown = none\n");
        uint64_t v;

        (void) state;
        assert_string_equal(t.backend->lockdown, "integrity");
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERFEVTSEL0, 0x43003c), -EPERM);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_PERFEVTSEL0), 0);
        assert_int_equal(sim_rd_err(&t, 0, 0x611), 0);
        assert_true(t.machine->n_units > 0);
        assert_int_equal(backend_pci_write(t.backend, 0, 0xD8, 4, 0), -EPERM);
        assert_int_equal(backend_pci_read(t.backend, 0, 0xD8, 4, &v), 0);

        assert_null(open_node.backend->lockdown);
        assert_int_equal(sim_wr_err(&open_node, 0, MSR_IA32_PERFEVTSEL0, 0x43003c), 0);
        sim_test_free(&t);
        sim_test_free(&open_node);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bad_configs),
                cmocka_unit_test(test_long_line),
                cmocka_unit_test(test_missing_file),
                cmocka_unit_test(test_bundled_configs),
                cmocka_unit_test(test_comments_and_overrides),
                cmocka_unit_test(test_profile_inheritance),
                cmocka_unit_test(test_phases),
                cmocka_unit_test(test_deterministic_defaults),
                cmocka_unit_test(test_lockdown),
                cmocka_unit_test(test_realtime_access_is_an_instant),
        };

        log_set_max_level(LOG_WARNING);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated core PMU: topology, register semantics, counting gates, overflow, status,
 * INUSE, PERF_METRICS, injection and determinism, driven through the Backend vtable
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/sim/sim-regs.h"
#include "log.h"
#include "sim_test_util.h"

#define COUNTER_MASK ((UINT64_C(1) << 48) - 1)
#define MILLION UINT64_C(1000000)

/* One socket, two SMT cores, exact time; utilization 1 and a 3:1 user/kernel split so the
 * expected counts are easy to state. */
#define SMALL_DETERMINISTIC \
        "[machine]\nsockets = 1\ncores = 2\nsmt = yes\n" \
        "[clock]\nmode = deterministic\ncycles_per_access = 0\n" \
        "[cpus 0-3]\nutilization = 1.0\nuser_fraction = 0.75\n"

static const uint64_t CLK_EVENT = 0x3c;         /* CPU_CLK_UNHALTED.THREAD_P */

static void test_topology(void **state) {
        SimTest t = sim_test_new("skx", "[machine]\nsockets = 2\ncores = 4\nsmt = yes\n");
        const Machine *m = t.machine;

        assert_string_equal(m->vendor, "GenuineIntel");
        assert_int_equal(m->family, 6);
        assert_int_equal(m->model, 0x55);
        assert_int_equal(m->stepping, 4);
        assert_string_equal(m->model_name, "Simulated Intel Skylake-SP");
        assert_string_equal(m->cpu_model->key, "skx");
        assert_int_equal(m->n_cpus, 16);
        assert_int_equal(m->n_online, 16);
        assert_int_equal(m->n_packages, 2);
        assert_true(m->smt);
        assert_false(m->nmi_watchdog);
        /* CPUs 0-7: first threads, socket-major; 8-15 their siblings */
        assert_int_equal(m->cpus[0].package, 0);
        assert_int_equal(m->cpus[0].core, 0);
        assert_int_equal(m->cpus[0].thread, 0);
        assert_int_equal(m->cpus[5].package, 1);
        assert_int_equal(m->cpus[5].core, 1);
        assert_int_equal(m->cpus[13].package, 1);
        assert_int_equal(m->cpus[13].core, 1);
        assert_int_equal(m->cpus[13].thread, 1);
        /* six IMC channels per socket, each socket on its own bus */
        assert_int_equal(m->n_units, 12);
        assert_string_equal(m->units[0].bdf, "0000:3a:0a.2");
        assert_int_equal(m->units[0].device, 0x2042);
        assert_string_equal(m->units[1].bdf, "0000:3a:0a.6");
        assert_int_equal(m->units[2].device, 0x204a);
        assert_string_equal(m->units[5].bdf, "0000:3a:0d.2");
        assert_string_equal(m->units[6].bdf, "0000:ae:0a.2");
        assert_int_equal(m->units[6].package, 1);
        assert_int_equal(m->units[6].vendor, 0x8086);
        /* the backend */
        assert_string_equal(t.backend->vtable->name, "sim");
        assert_true(t.backend->simulated);
        assert_ptr_equal(t.backend->machine, t.machine);
        sim_test_free(&t);

        t = sim_test_new("clx", NULL);
        assert_int_equal(t.machine->stepping, 7);
        assert_string_equal(t.machine->cpu_model->key, "clx");
        sim_test_free(&t);

        t = sim_test_new("icx", "[machine]\nsmt = no\n");
        assert_int_equal(t.machine->model, 0x6a);
        assert_false(t.machine->smt);
        assert_int_equal(t.machine->n_cpus, 8);
        assert_int_equal(t.machine->n_units, 0);
        sim_test_free(&t);

        t = sim_test_new("spr", NULL);
        assert_int_equal(t.machine->model, 0x8f);
        assert_string_equal(t.machine->model_name, "Simulated Intel Sapphire Rapids");
        sim_test_free(&t);
}

static void test_register_existence(void **state) {
        SimTest t = sim_test_new("skx", SMALL_DETERMINISTIC);

        /* not a modelled MSR: EIO both ways, like the msr driver after #GP */
        assert_int_equal(sim_rd_err(&t, 0, 0x1234), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, 0x1234, 0), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, 0x3F1), -EIO);  /* PEBS_ENABLE */
        /* SKX: no SLOTS, no PERF_METRICS, four GP counters per thread with SMT on */
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_FIXED_CTR0 + 3), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, MSR_PERF_METRICS), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_PERFEVTSEL0 + 4), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_PMC0 + 4), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_A_PMC0 + 3), 0);
        /* storage registers */
        sim_wr(&t, 1, MSR_OFFCORE_RSP_0, 0x3F80408FFF);
        assert_int_equal(sim_rd(&t, 1, MSR_OFFCORE_RSP_0), 0x3F80408FFF);
        assert_int_equal(sim_rd(&t, 1, MSR_OFFCORE_RSP_1), 0);
        /* CPUs beyond the machine */
        assert_int_equal(sim_rd_err(&t, 4, MSR_IA32_TSC), -ENXIO);
        assert_int_equal(sim_rd_err(&t, 1000, MSR_IA32_TSC), -ENXIO);
        sim_test_free(&t);

        /* SMT off: the sibling's counters become this thread's */
        t = sim_test_new("skx", "[machine]\nsmt = no\n");
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_PERFEVTSEL0 + 7), 0);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_PERFEVTSEL0 + 8), -EIO);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0xFF);
        sim_test_free(&t);

        t = sim_test_new("icx", SMALL_DETERMINISTIC);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_PERFEVTSEL0 + 7), 0);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_FIXED_CTR0 + 3), 0);
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_FIXED_CTR0 + 4), -EIO);
        assert_int_equal(sim_rd_err(&t, 0, MSR_PERF_METRICS), 0);
        sim_test_free(&t);
}

static void test_capabilities_and_read_only(void **state) {
        static const char *const models[] = { "skx", "clx", "icx", "spr" };

        for (size_t i = 0; i < 4; i++) {
                SimTest t = sim_test_new(models[i], SMALL_DETERMINISTIC);
                uint64_t caps = sim_rd(&t, 0, MSR_IA32_PERF_CAPABILITIES);
                bool metrics = i >= 2;

                assert_true(caps & PERF_CAP_FULL_WIDTH_WRITE);
                assert_int_equal(!!(caps & PERF_CAP_PERF_METRICS), metrics);
                assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_CAPABILITIES, caps), -EIO);
                assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS, 0), -EIO);
                assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_INUSE, 0), -EIO);
                /* the command registers read as 0, so read-modify-write works */
                assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET), 0);
                assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS_SET), 0);
                sim_test_free(&t);
        }
}

static void test_reserved_bits(void **state) {
        SimTest t = sim_test_new("skx", SMALL_DETERMINISTIC);

        /* SKX: AnyThread and IN_TX exist; IN_TXCP only on PMC2; bits 34+ reserved */
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_ANY | EVTSEL_INT | EVTSEL_PC);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_IN_TX);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_IN_TXCP), -EIO);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 2, CLK_EVENT | EVTSEL_IN_TXCP);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERFEVTSEL0, EVTSEL_ADAPTIVE), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERFEVTSEL0, SIM_BIT(63)), -EIO);
        /* the failed write left the register as it was */
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERFEVTSEL0), CLK_EVENT | EVTSEL_IN_TX);
        /* FIXED_CTR_CTRL: 3 counters with AnyThread; GLOBAL_CTRL: 4 GP, 3 fixed, no bit 48 */
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0xFFF);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0x1000), -EIO);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x70000000F);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x10), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(35)), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(48)), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET, SIM_BIT(48)), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS_SET, SIM_BIT(20)), -EIO);
        sim_test_free(&t);

        t = sim_test_new("icx", SMALL_DETERMINISTIC);
        /* v5: AnyThread is gone (KVM's reserved 0xffffffff00200000 minus TSX/adaptive) */
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_ANY), -EIO);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_ADAPTIVE);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERFEVTSEL0, SIM_BIT(35)), -EIO);
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0xBBBB);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0x4), -EIO);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x1000F000000FF);
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(36)), -EIO);
        sim_test_free(&t);
}

static void test_counting_gates(void **state) {
        SimTest t = sim_test_new("icx", SMALL_DETERMINISTIC);
        const uint64_t n = 10 * MILLION;

        /* EN set, GLOBAL_CTRL clear: nothing */
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0);
        /* both: every cycle (utilization 1) */
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x1);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), n);
        /* EN clear: stops */
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_USR | EVTSEL_OS);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), n);
        /* no ring selected: nothing */
        sim_wr(&t, 0, MSR_IA32_PMC0, 0);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_EN);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0);
        /* USR only: the user share (0.75), OS only: the rest */
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_EN | EVTSEL_USR);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), n * 3 / 4);
        sim_wr(&t, 0, MSR_IA32_PMC0, 0);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_EN | EVTSEL_OS);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), n / 4);
        /* another CPU saw none of this */
        assert_int_equal(sim_rd(&t, 1, MSR_IA32_PMC0), 0);
        /* an event the model does not know counts 0; so does a TSX-filtered one */
        sim_wr(&t, 0, MSR_IA32_PMC0, 0);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, 0xEE | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS | EVTSEL_IN_TX);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0);

        /* fixed counters: GLOBAL_CTRL bit 32+i AND the field's ring bits */
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0x0320);         /* FC1 USR, FC2 all rings */
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 1), 0);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(33) | SIM_BIT(34));
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 1), n * 3 / 4);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 2), n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 0), 0);
        /* MPERF/APERF and the TSC run regardless of the PMU */
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_APERF), 10 * n);
        assert_true(sim_rd(&t, 0, MSR_IA32_TSC) >= 10 * n);
        sim_test_free(&t);
}

/* Sapphire Rapids' UOPS_RETIRED.MS (0xC2/0x04) counts microcode-sequencer uops only with
 * MSR_PEBS_FRONTEND bit 3, which the perf layer writes as the kernel does: 0 without it, 30 %
 * of UOPS_RETIRED.HEAVY with it. Ice Lake-SP has no such register. */
static void test_frontend_facet(void **state) {
        SimTest t = sim_test_new("spr", SMALL_DETERMINISTIC);
        const uint64_t n = 10 * MILLION, rings = EVTSEL_EN | EVTSEL_USR | EVTSEL_OS;
        uint64_t ms, heavy;

        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, 0x04c2 | rings);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 1, 0x01c2 | rings);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x3);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0);
        assert_true(sim_rd(&t, 0, MSR_IA32_PMC0 + 1) > 0);
        sim_wr(&t, 0, MSR_PEBS_FRONTEND, 0x8);
        assert_int_equal(sim_rd(&t, 0, MSR_PEBS_FRONTEND), 0x8);
        sim_wr(&t, 0, MSR_IA32_PMC0 + 1, 0);
        sim_advance(&t, n);
        ms = sim_rd(&t, 0, MSR_IA32_PMC0);
        heavy = sim_rd(&t, 0, MSR_IA32_PMC0 + 1);
        assert_true(ms > 0 && heavy > 0);
        assert_true(ms * 10 >= heavy * 3 - 10 && ms * 10 <= heavy * 3 + 10);
        /* another facet: not what the event names, so 0 again */
        sim_wr(&t, 0, MSR_PEBS_FRONTEND, 0x1);
        sim_wr(&t, 0, MSR_IA32_PMC0, 0);
        sim_advance(&t, n);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0);
        sim_test_free(&t);

        t = sim_test_new("icx", SMALL_DETERMINISTIC);
        assert_int_equal(sim_wr_err(&t, 0, MSR_PEBS_FRONTEND, 0x8), -EIO);
        sim_test_free(&t);
}

static void test_utilization_and_halt(void **state) {
        SimTest t = sim_test_new("spr", "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                        "[cpus 0]\nutilization = 0.5\n[cpus 1]\nutilization = 0\n");
        const uint64_t n = 10 * MILLION;

        for (uint32_t cpu = 0; cpu < 2; cpu++) {
                sim_wr(&t, cpu, MSR_IA32_FIXED_CTR_CTRL, 0x0330);
                sim_wr(&t, cpu, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(33) | SIM_BIT(34));
        }
        uint64_t tsc0 = sim_rd(&t, 0, MSR_IA32_TSC);
        sim_advance(&t, n);
        /* unhalted cycles follow utilization; the TSC follows the wall clock */
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 1), n / 2);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 2), n / 2);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_TSC) - tsc0, n);
        assert_int_equal(sim_rd(&t, 1, MSR_IA32_FIXED_CTR0 + 1), 0);
        /* TSC writes move only that CPU's TSC */
        sim_wr(&t, 1, MSR_IA32_TSC, 5);
        assert_int_equal(sim_rd(&t, 1, MSR_IA32_TSC), 5);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_TSC) - tsc0, n);
        sim_test_free(&t);
}

/* A CPU that never runs counts nothing on any event, and no rate degenerates. */
static void test_halted_cpu(void **state) {
        static const uint64_t events[] = {
                0x3c, 0x13c, 0x23c, 0xc0, 0x2ec, 0x1a4, 0x100d, 0x10d, 0x104010d, 0x10e, 0x2c2, 0x4c2,
                0x3079, 0x479, 0x156, 0x1000156, 0xc5, 0x10401c3, 0x19c, 0x500019c, 0x140014a3,
                0x40004a3, 0x20040a6, 0x2a6, 0x4a6,
        };
        static const char *const models[] = { "skx", "icx", "spr" };

        for (size_t m = 0; m < 3; m++) {
                SimTest t = sim_test_new(models[m], "[clock]\nmode = deterministic\n"
                                                    "[cpus 0-15]\nutilization = 0\n");

                sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x1);
                for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
                        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, events[i] | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS);
                        sim_advance(&t, MILLION);
                        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0);
                }
                sim_test_free(&t);
        }
}

static void test_overflow_and_status(void **state) {
        SimTest t = sim_test_new("icx", SMALL_DETERMINISTIC);

        sim_wr(&t, 0, MSR_IA32_A_PMC0, COUNTER_MASK - 99);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS);
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR0 + 2, COUNTER_MASK - 9);
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR0 + 3, COUNTER_MASK - 9);
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0x3300);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0x1 | SIM_BIT(34) | SIM_BIT(35) | SIM_BIT(48));
        sim_advance(&t, 50);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS),
                         SIM_BIT(34) | SIM_BIT(35) | SIM_BIT(48));
        sim_advance(&t, 100);
        /* the 48-bit counter wrapped to a small value and flagged bit 0 */
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 50);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS),
                         0x1 | SIM_BIT(34) | SIM_BIT(35) | SIM_BIT(48));
        /* write-1-to-clear, write-1-to-set */
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET, 0x1 | SIM_BIT(48));
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS), SIM_BIT(34) | SIM_BIT(35));
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS_SET, 0x80 | SIM_BIT(63));
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS),
                         0x80 | SIM_BIT(34) | SIM_BIT(35) | SIM_BIT(63));
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET,
               UINT64_C(0x80) | SIM_BIT(34) | SIM_BIT(35) | SIM_BIT(63));
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS), 0);
        /* counting went on after the wrap */
        sim_advance(&t, 1000);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 1050);
        sim_test_free(&t);
}

static void test_counter_writes(void **state) {
        SimTest t = sim_test_new("skx", SMALL_DETERMINISTIC);

        /* legacy alias: bit 31 sign-extends, then 48 bits are kept */
        sim_wr(&t, 0, MSR_IA32_PMC0, 0x80000000);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), UINT64_C(0xFFFF80000000));
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_A_PMC0), UINT64_C(0xFFFF80000000));
        sim_wr(&t, 0, MSR_IA32_PMC0, 0x7FFFFFFF);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0), 0x7FFFFFFF);
        /* only EAX is written */
        sim_wr(&t, 0, MSR_IA32_PMC0 + 1, UINT64_C(0x123456789));
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0 + 1), 0x23456789);
        sim_wr(&t, 0, MSR_IA32_PMC0 + 1, UINT64_C(0xFFFFFFFFFFFFFFFF));
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0 + 1), COUNTER_MASK);
        /* full-width alias: as is, and EIO above 48 bits */
        sim_wr(&t, 0, MSR_IA32_A_PMC0 + 2, UINT64_C(0x800000000000));
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0 + 2), UINT64_C(0x800000000000));
        assert_int_equal(sim_wr_err(&t, 0, MSR_IA32_A_PMC0 + 2, UINT64_C(0x1000000000000)), -EIO);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PMC0 + 2), UINT64_C(0x800000000000));
        sim_wr(&t, 0, MSR_IA32_A_PMC0 + 3, COUNTER_MASK);
        /* fixed counters keep the low 48 bits, without sign extension */
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR0, 0x80000000);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0), 0x80000000);
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR0, UINT64_MAX);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0), COUNTER_MASK);
        sim_test_free(&t);
}

static void test_inuse(void **state) {
        SimTest t = sim_test_new("icx", SMALL_DETERMINISTIC);

        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_INUSE), 0);
        /* only EVTSEL[7:0] matters, not EN or UMASK */
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 2, CLK_EVENT);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 3, 0x0100 | EVTSEL_EN);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_INUSE), SIM_BIT(2));
        /* fixed: the ENABLE field only; PMI bits set bit 63 */
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0x8010);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_INUSE), SIM_BIT(2) | SIM_BIT(33) | SIM_BIT(63));
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR_CTRL, 0);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 5, 0xc0 | EVTSEL_INT);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_INUSE), SIM_BIT(2) | SIM_BIT(5) | SIM_BIT(63));
        /* derived live */
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 5, 0);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0 + 2, 0);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_INUSE), 0);
        sim_test_free(&t);
}

/* PERF_METRICS invariants of one raw value. */
static void check_metrics(uint64_t v, unsigned level) {
        unsigned b[8], sum = 0;

        for (unsigned i = 0; i < 8; i++)
                b[i] = (unsigned) (v >> (8 * i)) & 0xFF;
        for (unsigned i = 0; i < 4; i++)
                sum += b[i];
        assert_int_equal(sum, 0xFF);
        for (unsigned i = 4; i < 8; i++) {
                if (level < 2)
                        assert_int_equal(b[i], 0);
                assert_true(b[i] <= b[i - 4]);
        }
}

static void start_slots(SimTest *t, uint32_t cpu, uint64_t global) {
        sim_wr(t, cpu, MSR_IA32_PERF_GLOBAL_CTRL, 0);
        sim_wr(t, cpu, MSR_IA32_FIXED_CTR_CTRL, 0x3000);
        sim_wr(t, cpu, MSR_IA32_FIXED_CTR0 + 3, 0);
        sim_wr(t, cpu, MSR_PERF_METRICS, 0);
        sim_wr(t, cpu, MSR_IA32_PERF_GLOBAL_CTRL, global);
}

static void test_perf_metrics_reset_and_gates(void **state) {
        SimTest t = sim_test_new("spr", SMALL_DETERMINISTIC);
        uint64_t v;

        /* SLOTS counts with bit 35 alone, but PERF_METRICS needs bit 48 too */
        start_slots(&t, 0, SIM_BIT(35));
        sim_advance(&t, MILLION);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 3), 6 * MILLION / 2); /* width 6, SMT share */
        assert_int_equal(sim_rd(&t, 0, MSR_PERF_METRICS), 0);
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(35) | SIM_BIT(48));
        sim_advance(&t, MILLION);
        v = sim_rd(&t, 0, MSR_PERF_METRICS);
        check_metrics(v, 2);
        /* bit 48 alone: SLOTS does not count, so neither do the metrics */
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(48));
        uint64_t slots = sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 3);
        sim_advance(&t, MILLION);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 3), slots);
        assert_int_equal(sim_rd(&t, 0, MSR_PERF_METRICS), v);

        /* zeroing both (kernel order) resets */
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR0 + 3, 0);
        sim_wr(&t, 0, MSR_PERF_METRICS, 0);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 3), 0);
        assert_int_equal(sim_rd(&t, 0, MSR_PERF_METRICS), 0);
        /* PCM's opposite order works too */
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(35) | SIM_BIT(48));
        sim_advance(&t, MILLION);
        sim_wr(&t, 0, MSR_PERF_METRICS, 0);
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR0 + 3, 0);
        assert_int_equal(sim_rd(&t, 0, MSR_PERF_METRICS), 0);
        sim_advance(&t, MILLION);
        assert_int_equal(sim_rd(&t, 0, MSR_PERF_METRICS), v);

        /* a non-zero write is stored as is (the kernel restores saved values) ... */
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0);
        sim_wr(&t, 0, MSR_IA32_FIXED_CTR0 + 3, 123456);
        sim_wr(&t, 0, MSR_PERF_METRICS, UINT64_C(0x0102030405060708));
        assert_int_equal(sim_rd(&t, 0, MSR_PERF_METRICS), UINT64_C(0x0102030405060708));
        /* ... and counting continues from it, with valid fractions */
        sim_wr(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL, SIM_BIT(35) | SIM_BIT(48));
        sim_advance(&t, MILLION);
        check_metrics(sim_rd(&t, 0, MSR_PERF_METRICS), 2);
        sim_test_free(&t);
}

static void test_perf_metrics_invariants(void **state) {
        static const char *const profiles[] = {
                "default", "memory-bound", "frontend-bound", "branchy", "compute",
        };
        static const char *const models[] = { "icx", "spr" };
        char config[512];

        for (size_t m = 0; m < 2; m++)
                for (size_t p = 0; p < 5; p++) {
                        SimTest t;

                        (void) snprintf(config, sizeof(config),
                                        "[clock]\nmode = deterministic\ncycles_per_access = 7\n"
                                        "[cpus 0-15]\nprofile = %s\n", profiles[p]);
                        t = sim_test_new(models[m], config);
                        start_slots(&t, 3, SIM_BIT(35) | SIM_BIT(48));
                        /* short and long windows, including ones of a few slots */
                        for (uint64_t n = 1; n < 100 * MILLION; n = n * 7 + 3) {
                                uint64_t v;

                                sim_advance(&t, n);
                                v = sim_rd(&t, 3, MSR_PERF_METRICS);
                                if (v != 0)
                                        check_metrics(v, m == 0 ? 1 : 2);
                        }
                        sim_test_free(&t);
                }
}

static void test_nmi_watchdog(void **state) {
        SimTest t = sim_test_new("skx", "[machine]\nsockets = 1\ncores = 2\n"
                                        "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                        "[inject]\nnmi_watchdog = yes\n");
        uint64_t period = 2100 * MILLION * 10, start, later;

        assert_true(t.machine->nmi_watchdog);
        for (uint32_t cpu = 0; cpu < 4; cpu++) {
                assert_int_equal(sim_rd(&t, cpu, MSR_IA32_FIXED_CTR_CTRL) & 0xF0, 0xB0);
                assert_true(sim_rd(&t, cpu, MSR_IA32_PERF_GLOBAL_CTRL) & SIM_BIT(33));
                assert_int_equal(sim_rd(&t, cpu, MSR_IA32_PERF_GLOBAL_INUSE), SIM_BIT(33) | SIM_BIT(63));
        }
        /* FC1 counts from -period and is re-armed at each overflow, status acked */
        start = sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 1);
        assert_int_equal(start, (COUNTER_MASK + 1) - period);
        sim_advance(&t, MILLION);
        later = sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 1);
        assert_true(later > start);
        sim_advance(&t, 3 * period);
        later = sim_rd(&t, 0, MSR_IA32_FIXED_CTR0 + 1);
        assert_true(later >= (COUNTER_MASK + 1) - period);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERF_GLOBAL_STATUS) & SIM_BIT(33), 0);
        /* a user programming the other counters works beside it */
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS);
        sim_advance(&t, MILLION);
        assert_true(sim_rd(&t, 0, MSR_IA32_PMC0) > 0);
        sim_test_free(&t);
}

static void test_injected_faults(void **state) {
        SimTest t = sim_test_new("spr", "[machine]\nsockets = 1\ncores = 4\n"
                                        "[clock]\nmode = deterministic\n"
                                        "[inject]\noffline_cpus = 5\neio_msr = 0x38f, 0x611\n"
                                        "eio_cpus = 0-3\n");

        assert_false(t.machine->cpus[5].online);
        assert_true(t.machine->cpus[5].present);
        assert_int_equal(t.machine->n_online, 7);
        /* offline: ENXIO for every access */
        assert_int_equal(sim_rd_err(&t, 5, MSR_IA32_TSC), -ENXIO);
        assert_int_equal(sim_wr_err(&t, 5, MSR_IA32_PERF_GLOBAL_CTRL, 0), -ENXIO);
        assert_int_equal(sim_rd_err(&t, 5, MSR_PKG_ENERGY_STATUS), -ENXIO);
        /* injected EIO on the listed CPUs, both ways; other registers work */
        assert_int_equal(sim_rd_err(&t, 0, MSR_IA32_PERF_GLOBAL_CTRL), -EIO);
        assert_int_equal(sim_wr_err(&t, 3, MSR_IA32_PERF_GLOBAL_CTRL, 1), -EIO);
        assert_int_equal(sim_rd_err(&t, 2, MSR_PKG_ENERGY_STATUS), -EIO);
        sim_wr(&t, 0, MSR_IA32_PERFEVTSEL0, CLK_EVENT);
        assert_int_equal(sim_rd(&t, 0, MSR_IA32_PERFEVTSEL0), CLK_EVENT);
        (void) sim_rd(&t, 0, MSR_RAPL_POWER_UNIT);
        /* CPUs outside eio_cpus are not affected */
        sim_wr(&t, 4, MSR_IA32_PERF_GLOBAL_CTRL, 1);
        assert_int_equal(sim_rd(&t, 4, MSR_IA32_PERF_GLOBAL_CTRL), 1);
        (void) sim_rd(&t, 6, MSR_PKG_ENERGY_STATUS);
        sim_test_free(&t);
}

/* The same accesses give the same values; another seed gives other values. */
static void run_sequence(const char *config, uint64_t *out, size_t n) {
        SimTest t = sim_test_new("clx", config);
        size_t k = 0;

        for (uint32_t cpu = 0; cpu < 4; cpu++) {
                sim_wr(&t, cpu, MSR_IA32_PERFEVTSEL0, 0x10e | EVTSEL_EN | EVTSEL_USR);
                sim_wr(&t, cpu, MSR_IA32_FIXED_CTR_CTRL, 0x333);
                sim_wr(&t, cpu, MSR_IA32_PERF_GLOBAL_CTRL, 0x70000000F);
        }
        sim_advance(&t, 12345);
        while (k < n) {
                uint32_t cpu = (uint32_t) (k % 4);

                out[k++] = sim_rd(&t, cpu, MSR_IA32_PMC0);
                out[k++] = sim_rd(&t, cpu, MSR_IA32_FIXED_CTR0);
                out[k++] = sim_rd(&t, cpu, MSR_IA32_TSC);
                out[k++] = sim_rd(&t, cpu, MSR_PKG_ENERGY_STATUS);
        }
        sim_test_free(&t);
}

static void test_determinism(void **state) {
        static const char config_a[] =
                "[clock]\nmode = deterministic\nseed = 42\ncycles_per_access = 5000\njitter = 0.3\n";
        static const char config_b[] =
                "[clock]\nmode = deterministic\nseed = 43\ncycles_per_access = 5000\njitter = 0.3\n";
        uint64_t a[400], a2[400], b[400];

        run_sequence(config_a, a, 400);
        run_sequence(config_a, a2, 400);
        run_sequence(config_b, b, 400);
        assert_memory_equal(a, a2, sizeof(a));
        assert_memory_not_equal(a, b, sizeof(a));
        /* counts grow with accesses alone */
        assert_true(a[396] > a[0]);
}

static uint64_t elapsed_ns(const struct timespec *a, const struct timespec *b) {
        return (uint64_t) (b->tv_sec - a->tv_sec) * 1000000000U + (uint64_t) b->tv_nsec -
               (uint64_t) a->tv_nsec;
}

static void test_realtime_and_cost(void **state) {
        SimTest t = sim_test_new("spr", "[machine]\nsockets = 2\ncores = 32\n");
        struct timespec before, after, pause = { .tv_nsec = 5 * 1000 * 1000 };
        uint64_t tsc0, tsc1, ns;

        /* realtime: the TSC moves with CLOCK_MONOTONIC at the nominal 2000 MHz */
        clock_gettime(CLOCK_MONOTONIC, &before);
        tsc0 = sim_rd(&t, 0, MSR_IA32_TSC);
        nanosleep(&pause, NULL);
        tsc1 = sim_rd(&t, 0, MSR_IA32_TSC);
        clock_gettime(CLOCK_MONOTONIC, &after);
        ns = elapsed_ns(&before, &after);
        assert_true(tsc1 - tsc0 >= 5 * 1000 * 1000 * 2);
        assert_true(tsc1 - tsc0 <= ns * 2 + 2000);

        /* a 1024-register batch (8 registers on 128 CPUs) costs microseconds */
        for (uint32_t cpu = 0; cpu < 128; cpu++)
                sim_wr(&t, cpu, MSR_IA32_PERF_GLOBAL_CTRL, 0xFF | SIM_BIT(32) | SIM_BIT(33));
        clock_gettime(CLOCK_MONOTONIC, &before);
        for (uint32_t cpu = 0; cpu < 128; cpu++)
                for (uint32_t i = 0; i < 8; i++)
                        (void) sim_rd(&t, cpu, MSR_IA32_PMC0 + i);
        clock_gettime(CLOCK_MONOTONIC, &after);
        ns = elapsed_ns(&before, &after);
        print_message("1024 simulated reads took %.1f us\n", ns / 1000.0);
        assert_true(ns < 20 * 1000 * 1000);     /* generous for sanitizer builds */
        sim_test_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_topology),
                cmocka_unit_test(test_register_existence),
                cmocka_unit_test(test_capabilities_and_read_only),
                cmocka_unit_test(test_reserved_bits),
                cmocka_unit_test(test_counting_gates),
                cmocka_unit_test(test_frontend_facet),
                cmocka_unit_test(test_utilization_and_halt),
                cmocka_unit_test(test_halted_cpu),
                cmocka_unit_test(test_overflow_and_status),
                cmocka_unit_test(test_counter_writes),
                cmocka_unit_test(test_inuse),
                cmocka_unit_test(test_perf_metrics_reset_and_gates),
                cmocka_unit_test(test_perf_metrics_invariants),
                cmocka_unit_test(test_nmi_watchdog),
                cmocka_unit_test(test_injected_faults),
                cmocka_unit_test(test_determinism),
                cmocka_unit_test(test_realtime_and_cost),
        };

        log_set_max_level(LOG_WARNING);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

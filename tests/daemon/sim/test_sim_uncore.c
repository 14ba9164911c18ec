/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Package-scope simulation: RAPL energy counters (units, rates, 32-bit wrap, package
 * sharing) and the Skylake-SP IMC PMON in PCI config space (CAS counts against the
 * configured bandwidth, box freeze and resets, access widths, the channels the kernel's
 * uncore_imc driver programs)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "backend/sim/sim-regs.h"
#include "log.h"
#include "sim_test_util.h"

#define RAPL_CONFIG \
        "[machine]\nsockets = 2\ncores = 4\n" \
        "[clock]\nmode = deterministic\ncycles_per_access = 0\n" \
        "[rapl]\npackage_watts = 200\ndram_watts = 32\npp0_watts = 100\nplatform_watts = 400\n" \
        "package_tdp_watts = 205\ndram_tdp_watts = 40\n"

#define IMC_CONFIG \
        "[machine]\nsockets = 2\ncores = 2\n" \
        "[clock]\nmode = deterministic\ncycles_per_access = 0\n" \
        "[imc]\nread_gbps = 48\nwrite_gbps = 12\ndclk_mhz = 1200\n"

/* IMC registers (pmu-registers.md §6.1) */
#define IMC_CTR(i) (0xA0U + 8U * (i))
#define IMC_FIXED_CTR 0xD0U
#define IMC_CTL(i) (0xD8U + 4U * (i))
#define IMC_FIXED_CTL 0xF0U
#define IMC_BOX_CTL 0xF4U
#define IMC_EN 0x00400000U
#define IMC_RST (1U << 17)
#define CAS_COUNT_RD 0x00400304U
#define CAS_COUNT_WR 0x00400C04U
#define IMC_CLOCKTICKS 0x00400000U
#define CHANNELS 6U

static uint32_t energy_delta(uint64_t before, uint64_t after) {
        return (uint32_t) (after - before);     /* the counters are 32 bits and wrap */
}

static void test_rapl_units_and_rates(void **state) {
        SimTest t = sim_test_new("skx", RAPL_CONFIG);
        uint64_t one_second = (uint64_t) sim_test_hz(&t);
        uint64_t pkg0, dram0, pp00;

        /* ESU 14 (61 uJ), power 1/8 W, time 2^-10 s */
        assert_int_equal(sim_rd(&t, 0, MSR_RAPL_POWER_UNIT), 0x000A0E03);
        assert_int_equal(sim_rd(&t, 0, MSR_PKG_POWER_INFO) & 0x7FFF, 205 * 8);
        assert_int_equal(sim_rd(&t, 0, MSR_DRAM_POWER_INFO) & 0x7FFF, 40 * 8);
        assert_int_equal(sim_rd(&t, 0, MSR_PKG_PERF_STATUS), 0);

        pkg0 = sim_rd(&t, 0, MSR_PKG_ENERGY_STATUS);
        dram0 = sim_rd(&t, 0, MSR_DRAM_ENERGY_STATUS);
        pp00 = sim_rd(&t, 0, MSR_PP0_ENERGY_STATUS);
        sim_advance(&t, one_second);
        /* joules * 2^ESU; SKX DRAM uses the fixed 2^-16 J unit */
        assert_int_equal(energy_delta(pkg0, sim_rd(&t, 0, MSR_PKG_ENERGY_STATUS)), 200 << 14);
        assert_int_equal(energy_delta(dram0, sim_rd(&t, 0, MSR_DRAM_ENERGY_STATUS)), 32 << 16);
        assert_int_equal(energy_delta(pp00, sim_rd(&t, 0, MSR_PP0_ENERGY_STATUS)), 100 << 14);
        /* no psys on SKX; nothing writable */
        assert_int_equal(sim_rd_err(&t, 0, MSR_PLATFORM_ENERGY_STATUS), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, MSR_PKG_ENERGY_STATUS, 0), -EIO);
        assert_int_equal(sim_wr_err(&t, 0, MSR_RAPL_POWER_UNIT, 0x000A0E03), -EIO);
        /* package limits are not modelled */
        assert_int_equal(sim_rd_err(&t, 0, 0x610), -EIO);
        sim_test_free(&t);

        t = sim_test_new("spr", RAPL_CONFIG "energy_unit = 15\n");
        one_second = (uint64_t) sim_test_hz(&t);
        assert_int_equal(sim_rd(&t, 0, MSR_RAPL_POWER_UNIT), 0x000A0F03);
        pkg0 = sim_rd(&t, 0, MSR_PKG_ENERGY_STATUS);
        dram0 = sim_rd(&t, 0, MSR_DRAM_ENERGY_STATUS);
        uint64_t psys0 = sim_rd(&t, 0, MSR_PLATFORM_ENERGY_STATUS);
        sim_advance(&t, one_second);
        /* SPR: DRAM follows ESU, psys counts whole joules; no PP0 */
        assert_int_equal(energy_delta(pkg0, sim_rd(&t, 0, MSR_PKG_ENERGY_STATUS)), 200 << 15);
        assert_int_equal(energy_delta(dram0, sim_rd(&t, 0, MSR_DRAM_ENERGY_STATUS)), 32 << 15);
        assert_int_equal(energy_delta(psys0, sim_rd(&t, 0, MSR_PLATFORM_ENERGY_STATUS)), 400);
        assert_int_equal(sim_rd_err(&t, 0, MSR_PP0_ENERGY_STATUS), -EIO);
        sim_test_free(&t);

        t = sim_test_new("icx", RAPL_CONFIG);
        one_second = (uint64_t) sim_test_hz(&t);
        dram0 = sim_rd(&t, 0, MSR_DRAM_ENERGY_STATUS);
        sim_advance(&t, one_second);
        assert_int_equal(energy_delta(dram0, sim_rd(&t, 0, MSR_DRAM_ENERGY_STATUS)), 32 << 16);
        (void) sim_rd(&t, 0, MSR_PP0_ENERGY_STATUS);
        sim_test_free(&t);
}

static void test_rapl_wrap_and_scope(void **state) {
        SimTest t = sim_test_new("skx", RAPL_CONFIG);
        uint64_t one_second = (uint64_t) sim_test_hz(&t), before, after;
        /* 200 W at 2^14 counts per joule wraps 32 bits after about 1311 s */
        uint64_t seconds = 1000;

        before = sim_rd(&t, 0, MSR_PKG_ENERGY_STATUS);
        sim_advance(&t, seconds * one_second);
        after = sim_rd(&t, 0, MSR_PKG_ENERGY_STATUS);
        assert_true(after <= UINT32_MAX);
        sim_advance(&t, seconds * one_second);
        before = after;
        after = sim_rd(&t, 0, MSR_PKG_ENERGY_STATUS);
        /* this stretch crossed 2^32: the value went down, the delta mod 2^32 is right */
        assert_true(after < before);
        assert_true(after <= UINT32_MAX);
        assert_int_equal(energy_delta(before, after), (uint32_t) (seconds * (200 << 14)));

        /* package scope: every CPU of a package sees the same counter, threads included */
        assert_int_equal(sim_rd(&t, 1, MSR_PKG_ENERGY_STATUS), after);
        assert_int_equal(sim_rd(&t, 8 + 3, MSR_PKG_ENERGY_STATUS), after);
        /* the other package has its own counter, read for the first time now */
        assert_int_equal(sim_rd(&t, 4, MSR_PKG_ENERGY_STATUS), after);
        sim_advance(&t, one_second / 2);
        assert_int_equal(sim_rd(&t, 5, MSR_PKG_ENERGY_STATUS), sim_rd(&t, 12, MSR_PKG_ENERGY_STATUS));
        sim_test_free(&t);
}

static uint64_t pci_rd(SimTest *t, uint32_t unit, uint32_t offset, unsigned width) {
        uint64_t v = 0;

        assert_int_equal(backend_pci_read(t->backend, unit, offset, width, &v), 0);
        return v;
}

static void pci_wr(SimTest *t, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        assert_int_equal(backend_pci_write(t->backend, unit, offset, width, value), 0);
}

/* The kernel's programming sequence (§6.1): reset, then enable counters. */
static void program_imc(SimTest *t, uint32_t unit) {
        pci_wr(t, unit, IMC_BOX_CTL, 4, 0x3);
        pci_wr(t, unit, IMC_CTL(0), 4, CAS_COUNT_RD);
        pci_wr(t, unit, IMC_CTL(1), 4, CAS_COUNT_WR);
        pci_wr(t, unit, IMC_CTL(2), 4, IMC_CLOCKTICKS);
        pci_wr(t, unit, IMC_CTL(3), 4, 0x00400F04);     /* CAS_COUNT.ALL */
        pci_wr(t, unit, IMC_FIXED_CTL, 4, IMC_EN);
}

static void test_imc_bandwidth(void **state) {
        /* without the kernel's uncore PMUs, which program counters 0 and 1 of every channel */
        SimTest t = sim_test_new("skx", IMC_CONFIG "kernel_pmu = no\n");
        uint64_t one_second = (uint64_t) sim_test_hz(&t);
        double rd = 0, wr = 0;

        /* identity header: vendor 0x8086 with the channel's device id */
        assert_int_equal(pci_rd(&t, 0, 0, 4), 0x20428086);
        assert_int_equal(pci_rd(&t, 1, 0, 4), 0x20468086);
        assert_int_equal(pci_rd(&t, 2, 0, 4), 0x204a8086);

        for (uint32_t unit = 0; unit < CHANNELS; unit++)
                program_imc(&t, unit);
        sim_advance(&t, one_second);
        for (uint32_t unit = 0; unit < CHANNELS; unit++) {
                uint64_t r = pci_rd(&t, unit, IMC_CTR(0), 8), w = pci_rd(&t, unit, IMC_CTR(1), 8);

                rd += (double) r;
                wr += (double) w;
                /* two dwords, low first, give the same 48-bit value */
                assert_int_equal(pci_rd(&t, unit, IMC_CTR(0), 4) | pci_rd(&t, unit, IMC_CTR(0) + 4, 4) << 32,
                                 r);
                assert_true(llabs((long long) pci_rd(&t, unit, IMC_CTR(3), 8) - (long long) (r + w)) <= 1);
                /* DCLK on a GP counter and on the fixed counter */
                assert_int_equal(pci_rd(&t, unit, IMC_CTR(2), 8), 1200000000);
                assert_int_equal(pci_rd(&t, unit, IMC_FIXED_CTR, 8), 1200000000);
        }
        /* 64 bytes per CAS; configured GB/s per socket, split over its six channels */
        assert_true(fabs(rd * 64 - 48e9) <= 64 * CHANNELS);
        assert_true(fabs(wr * 64 - 12e9) <= 64 * CHANNELS);
        /* socket 1's channels were not programmed */
        assert_int_equal(pci_rd(&t, CHANNELS, IMC_CTR(0), 8), 0);
        sim_test_free(&t);
}

/* The package counters stand in for the kernel's uncore PMUs on every model: per socket a read
 * and a write counter per box, 48 bits, together counting the configured bandwidth in lines. */
static void test_package_counters(void **state) {
        static const struct {
                const char *model;
                unsigned boxes;
                const char *first;
        } models[] = {
                { "skx", 6, "uncore_imc_0/cas_count_read" },
                { "icx", 4, "uncore_imc_free_running_0/read" },
                { "spr", 8, "uncore_imc_0/cas_count_read" },
        };

        for (size_t k = 0; k < sizeof(models) / sizeof(models[0]); k++) {
                SimTest t = sim_test_new(models[k].model, IMC_CONFIG "counter_start = 0xffffff000000\n");
                const Machine *m = t.machine;
                uint64_t before[64], one_second = (uint64_t) sim_test_hz(&t);
                double rd = 0, wr = 0;

                assert_int_equal(m->n_counters, 2 * 2 * models[k].boxes);
                assert_string_equal(m->counters[0].name, models[k].first);
                assert_int_equal(m->counters[0].package, 0);
                assert_int_equal(m->counters[m->n_counters - 1].package, 1);
                assert_int_equal(m->counters[0].width, 48);
                for (uint32_t i = 0; i < m->n_counters; i++)
                        assert_int_equal(backend_counter_read(t.backend, i, &before[i]), 0);
                sim_advance(&t, one_second);
                for (uint32_t i = 0; i < m->n_counters / 2; i++) {
                        uint64_t v;

                        assert_int_equal(backend_counter_read(t.backend, i, &v), 0);
                        /* started 2^24 before the end: every counter wrapped */
                        assert_true(v < before[i]);
                        *(i % 2 == 0 ? &rd : &wr) += (double) ((v - before[i]) & ((UINT64_C(1) << 48) - 1));
                }
                assert_true(fabs(rd * 64 / 48e9 - 1) < 1e-4);
                assert_true(fabs(wr * 64 / 12e9 - 1) < 1e-4);
                assert_int_equal(backend_counter_read(t.backend, m->n_counters, &before[0]), -ENXIO);
                sim_test_free(&t);
        }
        /* without the kernel's uncore driver there are none */
        {
                SimTest t = sim_test_new("skx", IMC_CONFIG "kernel_pmu = no\n");

                assert_int_equal(t.machine->n_counters, 0);
                assert_int_equal(t.machine->n_units, 12);
                sim_test_free(&t);
        }
}

static void test_imc_freeze_and_reset(void **state) {
        SimTest t = sim_test_new("clx", IMC_CONFIG);
        uint64_t v, frozen;

        program_imc(&t, 7);
        sim_advance(&t, 1000000);
        v = pci_rd(&t, 7, IMC_CTR(0), 8);
        assert_true(v > 0);

        /* FRZ (bit 8) stops every counter of the box and reads back */
        pci_wr(&t, 7, IMC_BOX_CTL, 4, 0x100);
        assert_int_equal(pci_rd(&t, 7, IMC_BOX_CTL, 4), 0x100);
        frozen = pci_rd(&t, 7, IMC_CTR(0), 8);
        v = pci_rd(&t, 7, IMC_FIXED_CTR, 8);
        sim_advance(&t, 1000000);
        assert_int_equal(pci_rd(&t, 7, IMC_CTR(0), 8), frozen);
        assert_int_equal(pci_rd(&t, 7, IMC_FIXED_CTR, 8), v);
        pci_wr(&t, 7, IMC_BOX_CTL, 4, 0);
        sim_advance(&t, 1000000);
        assert_true(pci_rd(&t, 7, IMC_CTR(0), 8) > frozen);

        /* RST_CTRS (bit 1) zeroes the counters and keeps the controls */
        pci_wr(&t, 7, IMC_BOX_CTL, 4, 0x2);
        assert_int_equal(pci_rd(&t, 7, IMC_CTR(0), 8), 0);
        assert_int_equal(pci_rd(&t, 7, IMC_FIXED_CTR, 8), 0);
        assert_int_equal(pci_rd(&t, 7, IMC_CTL(0), 4), CAS_COUNT_RD);
        assert_int_equal(pci_rd(&t, 7, IMC_BOX_CTL, 4), 0);
        /* a control's RST (bit 17) zeroes its counter and does not stick */
        sim_advance(&t, 1000000);
        assert_true(pci_rd(&t, 7, IMC_CTR(1), 8) > 0);
        pci_wr(&t, 7, IMC_CTL(1), 4, CAS_COUNT_WR | IMC_RST);
        assert_int_equal(pci_rd(&t, 7, IMC_CTR(1), 8), 0);
        assert_int_equal(pci_rd(&t, 7, IMC_CTL(1), 4), CAS_COUNT_WR);
        assert_true(pci_rd(&t, 7, IMC_CTR(0), 8) > 0);
        /* RST_CTRL (bit 0) clears the controls: nothing counts afterwards */
        pci_wr(&t, 7, IMC_BOX_CTL, 4, 0x1);
        assert_int_equal(pci_rd(&t, 7, IMC_CTL(0), 4), 0);
        assert_int_equal(pci_rd(&t, 7, IMC_FIXED_CTL, 4), 0);
        v = pci_rd(&t, 7, IMC_CTR(0), 8);
        sim_advance(&t, 1000000);
        assert_int_equal(pci_rd(&t, 7, IMC_CTR(0), 8), v);
        /* counters are writable as dwords, 48 bits wide */
        pci_wr(&t, 7, IMC_CTR(2), 8, UINT64_C(0xFFFFFFFFFFFFFFFF) >> 16);
        assert_int_equal(pci_rd(&t, 7, IMC_CTR(2) + 4, 4), 0xFFFF);
        sim_test_free(&t);
}

static void test_imc_access_errors(void **state) {
        SimTest t = sim_test_new("skx", IMC_CONFIG);
        uint64_t v;

        assert_int_equal(backend_pci_read(t.backend, 0, IMC_CTR(0), 2, &v), -EINVAL);
        assert_int_equal(backend_pci_read(t.backend, 0, IMC_CTR(0) + 2, 4, &v), -EINVAL);
        assert_int_equal(backend_pci_read(t.backend, 0, IMC_CTR(0) + 4, 8, &v), -EINVAL);
        assert_int_equal(backend_pci_read(t.backend, 0, 4096, 4, &v), -EINVAL);
        assert_int_equal(backend_pci_write(t.backend, 0, IMC_CTL(0), 4, UINT64_C(0x100000000)), -EINVAL);
        assert_int_equal(backend_pci_write(t.backend, 0, IMC_CTL(0), 1, 0), -EINVAL);
        assert_int_equal(backend_pci_read(t.backend, 2 * CHANNELS, 0, 4, &v), -ENXIO);
        /* unmodelled offsets read 0 and ignore writes */
        pci_wr(&t, 0, 0x40, 4, 0x1234);
        assert_int_equal(pci_rd(&t, 0, 0x40, 4), 0);
        assert_int_equal(pci_rd(&t, 0, 4092, 4), 0);
        sim_test_free(&t);

        /* Ice Lake and Sapphire Rapids keep the IMC in MMIO: no PCI units */
        t = sim_test_new("spr", IMC_CONFIG);
        assert_int_equal(t.machine->n_units, 0);
        assert_int_equal(backend_pci_read(t.backend, 0, 0, 4, &v), -ENXIO);
        sim_test_free(&t);
}

/* The kernel's uncore_imc driver at work: with its PMUs served, CAS_COUNT.RD and .WR on counters
 * 0 and 1 of every channel (counting, like the events pmugated opens there); kernel_imc_units
 * programs the first free counter of the units listed for another perf user. */
static void test_kernel_programmed_channels(void **state) {
        SimTest t = sim_test_new("skx", IMC_CONFIG);

        for (uint32_t unit = 0; unit < 2 * CHANNELS; unit++) {
                assert_int_equal(pci_rd(&t, unit, IMC_CTL(0), 4), CAS_COUNT_RD);
                assert_int_equal(pci_rd(&t, unit, IMC_CTL(1), 4), CAS_COUNT_WR);
                assert_int_equal(pci_rd(&t, unit, IMC_CTL(2), 4), 0);
        }
        sim_advance(&t, 1000000);
        assert_true(pci_rd(&t, 7, IMC_CTR(0), 8) > 0);
        sim_test_free(&t);

        t = sim_test_new("clx", IMC_CONFIG "kernel_pmu = no\n[inject]\nkernel_imc_units = 1,7\n");
        for (uint32_t unit = 0; unit < 2 * CHANNELS; unit++)
                assert_int_equal(pci_rd(&t, unit, IMC_CTL(0), 4), unit == 1 || unit == 7 ? CAS_COUNT_RD : 0);
        sim_test_free(&t);

        t = sim_test_new("skx", IMC_CONFIG "[inject]\nkernel_imc_units = 2\n");
        assert_int_equal(pci_rd(&t, 2, IMC_CTL(2), 4), CAS_COUNT_RD);
        assert_int_equal(pci_rd(&t, 3, IMC_CTL(2), 4), 0);
        sim_test_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rapl_units_and_rates),
                cmocka_unit_test(test_rapl_wrap_and_scope),
                cmocka_unit_test(test_imc_bandwidth),
                cmocka_unit_test(test_imc_freeze_and_reset),
                cmocka_unit_test(test_imc_access_errors),
                cmocka_unit_test(test_package_counters),
                cmocka_unit_test(test_kernel_programmed_channels),
        };

        log_set_max_level(LOG_WARNING);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

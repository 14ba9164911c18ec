/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: package counters and RAPL units (include/pmugate/package.h) and the planning of
 * a measurement's package events: what each package reads, and what is withheld and why
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "measure/package-events.h"
#include "pmugate/package.h"

#define SKX_POWER_UNIT 0x000A0E03U      /* ESU 14 */

static void test_delta(void **state) {
        assert_true(pmugate_counter_delta(10, 25, 48) == 15);
        /* wraps: 48-bit memory controller, 32-bit RAPL, the kernel's 64-bit counts */
        assert_true(pmugate_counter_delta((UINT64_C(1) << 48) - 5, 3, 48) == 8);
        assert_true(pmugate_counter_delta(UINT32_MAX, 0, 32) == 1);
        assert_true(pmugate_counter_delta(UINT64_MAX - 1, 1, 64) == 3);
        assert_true(pmugate_counter_delta(UINT64_MAX - 1, 1, 0) == 3);
}

static pmugate_counter counter(const char *name, int32_t package, const char *unit, double scale) {
        pmugate_counter c = { .package = package, .width = 48, .scale = scale };

        (void) snprintf(c.name, sizeof(c.name), "%s", name);
        (void) snprintf(c.unit, sizeof(c.unit), "%s", unit);
        (void) snprintf(c.cls, sizeof(c.cls), "uncore-imc");
        return c;
}

static void test_counter_kinds_and_bytes(void **state) {
        pmugate_counter c = counter("uncore_imc_0/cas_count_read", 0, "MiB", 6.103515625e-5);

        assert_int_equal(pmugate_counter_kind_of(&c), PMUGATE_COUNTER_DRAM_READ);
        assert_true(fabs(pmugate_counter_bytes(&c) - 64.0) < 1e-9);
        c = counter("uncore_imc_free_running_3/write", 1, "MiB", 6.103515625e-5);
        assert_int_equal(pmugate_counter_kind_of(&c), PMUGATE_COUNTER_DRAM_WRITE);
        c = counter("uncore_imc_free_running_3/dclk", 1, "", 1.0);
        assert_int_equal(pmugate_counter_kind_of(&c), PMUGATE_COUNTER_OTHER);
        assert_true(pmugate_counter_bytes(&c) == 0.0);
        c = counter("uncore_imc_0/cas_count_read", 0, "MiB", -1.0);
        assert_true(pmugate_counter_bytes(&c) == 0.0);
        /* another class is not memory traffic, whatever its name */
        (void) snprintf(c.cls, sizeof(c.cls), "uncore-cha");
        assert_int_equal(pmugate_counter_kind_of(&c), PMUGATE_COUNTER_OTHER);
        assert_int_equal(pmugate_counter_kind_of(NULL), PMUGATE_COUNTER_OTHER);
}

static void test_rapl_units(void **state) {
        double j = 0;

        assert_int_equal(pmugate_rapl_joules_per_count("skx", PMUGATE_RAPL_PACKAGE, SKX_POWER_UNIT, &j), 0);
        assert_true(j == ldexp(1.0, -14));
        /* server parts before Sapphire Rapids count DRAM in 2^-16 J whatever the ESU */
        assert_int_equal(pmugate_rapl_joules_per_count("icx", PMUGATE_RAPL_DRAM, SKX_POWER_UNIT, &j), 0);
        assert_true(j == ldexp(1.0, -16));
        assert_int_equal(pmugate_rapl_joules_per_count("spr", PMUGATE_RAPL_DRAM, SKX_POWER_UNIT, &j), 0);
        assert_true(j == ldexp(1.0, -14));
        assert_int_equal(pmugate_rapl_joules_per_count("spr", PMUGATE_RAPL_PLATFORM, SKX_POWER_UNIT, &j), 0);
        assert_true(j == 1.0);
        assert_int_equal(pmugate_rapl_joules_per_count("spr", PMUGATE_RAPL_PP0, SKX_POWER_UNIT, &j),
                         -EOPNOTSUPP);
        assert_int_equal(pmugate_rapl_joules_per_count("clx", PMUGATE_RAPL_PLATFORM, SKX_POWER_UNIT, &j),
                         -EOPNOTSUPP);
        assert_int_equal(pmugate_rapl_joules_per_count("zen3", PMUGATE_RAPL_PACKAGE, SKX_POWER_UNIT, &j),
                         -EOPNOTSUPP);
        /* AMD: the package domain only, in 2^-ESU J, through AMD's registers */
        assert_int_equal(pmugate_rapl_joules_per_count("zen4", PMUGATE_RAPL_PACKAGE, SKX_POWER_UNIT, &j), 0);
        assert_true(j == ldexp(1.0, -14));
        assert_int_equal(pmugate_rapl_joules_per_count("zen5", PMUGATE_RAPL_DRAM, SKX_POWER_UNIT, &j),
                         -EOPNOTSUPP);
        assert_int_equal(pmugate_rapl_energy_msr_for("zen4", PMUGATE_RAPL_PACKAGE), 0xC001029B);
        assert_int_equal(pmugate_rapl_energy_msr_for("zen5", PMUGATE_RAPL_PP0), 0);
        assert_int_equal(pmugate_rapl_energy_msr_for("spr", PMUGATE_RAPL_PACKAGE), 0x611);
        assert_int_equal(pmugate_rapl_power_unit_msr("zen5"), 0xC0010299);
        assert_int_equal(pmugate_rapl_power_unit_msr("icx"), 0x606);
        assert_int_equal(pmugate_rapl_joules_per_count("skx", _PMUGATE_RAPL_DOMAIN_MAX, 0, &j), -EINVAL);
        assert_int_equal(pmugate_rapl_energy_msr(PMUGATE_RAPL_PACKAGE), 0x611);
        assert_int_equal(pmugate_rapl_energy_msr(PMUGATE_RAPL_PLATFORM), 0x64D);
        assert_string_equal(pmugate_rapl_domain_name(PMUGATE_RAPL_DRAM), "DRAM");
}

static void test_event_names(void **state) {
        PackageEvents *pe = NULL;
        PackageEventKind kind;

        assert_true(package_event_lookup("UNC_M_CAS_COUNT.WR", &kind));
        assert_int_equal(kind, PACKAGE_EVENT_CAS_WRITE);
        assert_false(package_event_lookup("UNC_M_CAS_COUNT", NULL));
        assert_false(package_event_lookup("INST_RETIRED.ANY", NULL));
        assert_string_equal(package_event_unit(PACKAGE_EVENT_ENERGY_DRAM), "J");
        assert_string_equal(package_event_unit(PACKAGE_EVENT_CAS_READ), "");
        assert_int_equal(package_events_add(&pe, "PWR_PKG_ENERGY"), 0);
        assert_int_equal(package_events_add(&pe, "UNC_M_CAS_COUNT.RD"), 1);
        assert_int_equal(package_events_add(&pe, "PWR_PKG_ENERGY"), -EEXIST);
        assert_int_equal(package_events_add(&pe, "NOT_AN_EVENT"), -ENOENT);
        package_events_free(pe);
}

/* Two packages measured; the daemon serves two read counters of package 0 (one it could not
 * open) and none of package 1. */
static void test_plan(void **state) {
        pmugate_cpu cpus[] = {
                { .cpu = 0, .package = 0, .online = true }, { .cpu = 1, .package = 0, .online = true },
                { .cpu = 2, .package = 1, .online = true }, { .cpu = 3, .package = 1, .online = true },
        };
        pmugate_counter counters[] = {
                counter("uncore_imc_0/cas_count_read", 0, "MiB", 6.103515625e-5),
                counter("uncore_imc_1/cas_count_read", 0, "MiB", 6.103515625e-5),
                counter("uncore_imc_0/cas_count_write", 0, "MiB", 6.103515625e-5),
        };
        pmugate_info info = { .cpus = cpus, .n_cpus = 4, .counters = counters, .n_counters = 3 };
        uint32_t measured[] = { 3, 1, 2 };
        PackageEvents *pe = NULL;

        (void) snprintf(info.model_key, sizeof(info.model_key), "spr");
        (void) snprintf(info.model_label, sizeof(info.model_label), "Sapphire Rapids");
        (void) snprintf(counters[2].error, sizeof(counters[2].error), "perf_event_open: Permission denied");
        for (size_t i = 0; i < 3; i++)
                counters[i].index = (uint32_t) i;
        assert_int_equal(package_events_add(&pe, "UNC_M_CAS_COUNT.RD"), 0);
        assert_int_equal(package_events_add(&pe, "UNC_M_CAS_COUNT.WR"), 1);
        assert_int_equal(package_events_add(&pe, "PWR_PP0_ENERGY"), 2);
        assert_int_equal(package_events_add(&pe, "PWR_PKG_ENERGY"), 3);
        assert_int_equal(package_events_plan(pe, &info, measured, 3), 0);

        assert_int_equal(pe->n_packages, 2);
        assert_int_equal(pe->packages[0], 0);
        assert_int_equal(pe->packages[1], 1);
        assert_int_equal(pe->package_cpu[0], 1);        /* the first measured CPU of the package */
        assert_int_equal(pe->package_cpu[1], 3);
        /* package 0 reads both read counters; package energy on both packages */
        assert_int_equal(pe->n_sources, 4);
        assert_true(pe->sources[0].is_counter && pe->sources[0].target == 0 && pe->sources[1].target == 1);
        assert_true(fabs(pe->sources[0].factor - 1.0) < 1e-12);
        assert_true(!pe->sources[2].is_counter && pe->sources[2].msr == 0x611 && pe->sources[2].target == 1);
        assert_int_equal(pe->sources[2].width, 32);
        assert_null(pe->withheld[0 * 4 + 0]);
        assert_non_null(strstr(pe->withheld[0 * 4 + 1], "could not open"));
        assert_non_null(strstr(pe->withheld[0 * 4 + 1], "Permission denied"));
        assert_non_null(strstr(pe->withheld[1 * 4 + 0], "serves no memory-controller counter of package 1"));
        assert_non_null(strstr(pe->withheld[0 * 4 + 2], "Sapphire Rapids has no PP0"));
        assert_null(pe->withheld[1 * 4 + 3]);
        assert_true(isnan(package_events_value(pe, 1, 0, false)));
        assert_true(package_events_value(pe, 0, 0, false) == 0.0);
        package_events_free(pe);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_delta),
                cmocka_unit_test(test_counter_kinds_and_bytes),
                cmocka_unit_test(test_rapl_units),
                cmocka_unit_test(test_event_names),
                cmocka_unit_test(test_plan),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the LIKWID forwarder's mapping: devices, registers, leases and answers
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "error.h"
#include "likwid/likwid-map.h"
#include "macro.h"

/* A one-socket Skylake-SP with two cores, SMT on (CPUs 0-3, CPU 3 offline), the six memory
 * channels of socket 0, and a few allowlist entries. */
static pmugate_cpu cpus[] = {
        { .cpu = 0, .package = 0, .core = 0, .thread = 0, .online = true },
        { .cpu = 1, .package = 0, .core = 1, .thread = 0, .online = true },
        { .cpu = 2, .package = 0, .core = 0, .thread = 1, .online = true },
        { .cpu = 3, .package = 0, .core = 1, .thread = 1, .online = false },
};
static pmugate_unit units[] = {
        { .index = 0, .bdf = "0000:3a:0a.2", .vendor = 0x8086, .device = 0x2042, .package = 0 },
        { .index = 1, .bdf = "0000:3a:0a.6", .vendor = 0x8086, .device = 0x2046, .package = 0 },
        { .index = 2, .bdf = "0000:3a:0b.2", .vendor = 0x8086, .device = 0x204a, .package = 0 },
        { .index = 3, .bdf = "0000:3a:0c.2", .vendor = 0x8086, .device = 0x2042, .package = 0 },
        { .index = 4, .bdf = "0000:3a:0c.6", .vendor = 0x8086, .device = 0x2046, .package = 0 },
        { .index = 5, .bdf = "0000:3a:0d.2", .vendor = 0x8086, .device = 0x204a, .package = 0 },
        { .index = 6, .bdf = "0000:ae:0a.2", .vendor = 0x8086, .device = 0x2042, .package = 1 },
};
static pmugate_register regs[] = {
        { .first = 0x186, .last = 0x18D, .width = 8, .write_mask = 0xFFC7FFFF, .scope = "thread",
          .cls = "core-pmu", .name = "IA32_PERFEVTSEL" },
        { .first = 0x611, .last = 0x611, .width = 8, .scope = "package", .cls = "rapl",
          .name = "PKG_ENERGY" },
        { .pci = true, .first = 0xA0, .last = 0xB8, .width = 8, .scope = "package", .cls = "uncore-imc",
          .name = "IMC_PMON_CTR", .pci_vendor = 0x8086, .pci_device = 0x2046 },
        { .pci = true, .first = 0xD8, .last = 0xE4, .width = 4, .write_mask = 0xFFC6FFFF, .scope = "package",
          .cls = "uncore-imc", .name = "IMC_PMON_CTL", .pci_vendor = 0x8086, .pci_device = 0x2046 },
};

static pmugate_info skx(const char *key) {
        pmugate_info info = {
                .cpus = cpus, .n_cpus = ELEMENTSOF(cpus), .units = units, .n_units = ELEMENTSOF(units),
                .registers = regs, .n_registers = ELEMENTSOF(regs),
        };

        strcpy(info.model_key, key);
        return info;
}

static void test_units(void **state) {
        pmugate_info info = skx("skx");
        uint32_t unit = 99;
        static const uint32_t want[][2] = { { 5, 0 }, { 6, 1 }, { 7, 2 }, { 9, 3 }, { 10, 4 }, { 11, 5 } };

        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(likwid_map_unit(&info, want[i][0], 0, &unit), 0);
                assert_int_equal(unit, want[i][1]);
        }
        assert_int_equal(likwid_map_unit(&info, 5, 1, &unit), 0);
        assert_int_equal(unit, 6);
        unit = 99;
        /* Channel 3 (index 8, 12) does not exist on this part; UPI, MMIO and garbage are not served. */
        for (uint32_t dev = 0; dev < 1000; dev++)
                if (dev < 5 || dev == 8 || dev > 11)
                        assert_int_equal(likwid_map_unit(&info, dev, 0, &unit), -ENODEV);
        assert_int_equal(likwid_map_unit(&info, 6, 1, &unit), -ENODEV);
        assert_int_equal(likwid_map_unit(&info, 5, 7, &unit), -ENODEV);
        assert_int_equal(likwid_map_unit(&info, 5, UINT32_MAX, &unit), -ENODEV);
        assert_int_equal(unit, 99);
        info = skx("icx");
        assert_int_equal(likwid_map_unit(&info, 5, 0, &unit), -ENODEV);
        info = skx("clx");
        assert_int_equal(likwid_map_unit(&info, 7, 0, &unit), 0);
        assert_int_equal(unit, 2);
}

static void test_registers(void **state) {
        pmugate_info info = skx("skx");

        assert_ptr_equal(likwid_find_msr(&info, 0x188), &regs[0]);
        assert_null(likwid_find_msr(&info, 0x185));
        assert_null(likwid_find_msr(&info, 0x1A0));
        assert_null(likwid_find_msr(&info, 0xA0));
        assert_ptr_equal(likwid_find_pci(&info, 1, 0xA8), &regs[2]);
        assert_null(likwid_find_pci(&info, 1, 0xA4));          /* inside a counter */
        assert_null(likwid_find_pci(&info, 0, 0xA0));          /* another device ID */
        assert_null(likwid_find_pci(&info, 77, 0xA0));         /* no such unit */
        assert_ptr_equal(likwid_find_pci(&info, 4, 0xDC), &regs[3]);
        assert_true(likwid_register_is_readonly_counter(&regs[2]));
        assert_false(likwid_register_is_readonly_counter(&regs[3]));
        assert_false(likwid_register_is_readonly_counter(&regs[1]));
        assert_false(likwid_register_is_readonly_counter(NULL));
        assert_non_null(likwid_map_cpu(&info, 2));
        assert_null(likwid_map_cpu(&info, 3));                  /* offline */
        assert_null(likwid_map_cpu(&info, 4));
        assert_null(likwid_map_cpu(&info, 0x40000000));
}

static void test_leases(void **state) {
        pmugate_info info = skx("skx");
        uint32_t out[8];

        assert_int_equal(likwid_lease_cpus(&info, &cpus[1], "thread", out, 8), 1);
        assert_int_equal(out[0], 1);
        assert_int_equal(likwid_lease_cpus(&info, &cpus[0], "core", out, 8), 2);
        assert_int_equal(out[0], 0);
        assert_int_equal(out[1], 2);
        /* Offline CPU 3 is not leased. */
        assert_int_equal(likwid_lease_cpus(&info, &cpus[0], "package", out, 8), 3);
        assert_int_equal(likwid_lease_cpus(&info, &cpus[0], "package", out, 2), -E2BIG);
        assert_int_equal(likwid_lease_cpus(&info, &cpus[0], "thread", out, 0), -E2BIG);

        /* AMD's L3 counters: every online CPU on the target's L3 (CCX), and a CPU whose L3 is
         * unknown with any of them */
        cpus[0].ccx = 0;
        cpus[1].ccx = 1;
        cpus[2].ccx = 0;
        assert_int_equal(likwid_lease_cpus(&info, &cpus[1], "ccx", out, 8), 1);
        assert_int_equal(out[0], 1);
        assert_int_equal(likwid_lease_cpus(&info, &cpus[2], "ccx", out, 8), 2);
        assert_int_equal(out[0], 0);
        assert_int_equal(out[1], 2);
        cpus[1].ccx = -1;
        assert_int_equal(likwid_lease_cpus(&info, &cpus[0], "ccx", out, 8), 3);
        cpus[0].ccx = cpus[1].ccx = cpus[2].ccx = 0;
}

static void test_rules(void **state) {
        pmugate_info info = skx("skx");

        assert_true(likwid_write_is_switch_off(0x3F1, 0));
        assert_false(likwid_write_is_switch_off(0x3F1, 1));
        assert_false(likwid_write_is_switch_off(0x3F1, UINT64_C(1) << 32));
        assert_true(likwid_write_is_switch_off(0x701, 0));
        assert_false(likwid_write_is_switch_off(0x701, 1));
        assert_false(likwid_write_is_switch_off(0x1A0, 0));
        assert_false(likwid_write_is_switch_off(0x600, 0));
        assert_false(likwid_write_is_switch_off(0x1D9, 0));
        assert_true(likwid_write_is_gate(false, 0x38F));
        assert_true(likwid_write_is_gate(true, 0xF4));
        assert_false(likwid_write_is_gate(false, 0xF4));
        assert_false(likwid_write_is_gate(false, 0x186));
        /* AMD: PerfCntrGlobalCtl and the core, L3 and data-fabric selects, not their counters */
        assert_true(likwid_write_is_gate(false, 0xC0000301));
        assert_true(likwid_write_is_gate(false, 0xC0010200));
        assert_true(likwid_write_is_gate(false, 0xC001020A));
        assert_true(likwid_write_is_gate(false, 0xC0010230));
        assert_true(likwid_write_is_gate(false, 0xC001025E));
        assert_false(likwid_write_is_gate(false, 0xC0010201));
        assert_false(likwid_write_is_gate(false, 0xC0010231));
        assert_false(likwid_write_is_gate(false, 0xC0000302));
        assert_false(likwid_write_is_gate(false, 0xC0010260));
        assert_true(likwid_model_has_ubox(&info));
        assert_true(likwid_read_is_placeholder(&info, 0xE02));
        assert_false(likwid_read_is_placeholder(&info, 0xE01));
        info = skx("icx");
        assert_false(likwid_model_has_ubox(&info));
        assert_false(likwid_read_is_placeholder(&info, 0xE02));
}

/* Ice Lake-SP's package counters as pmugated lists them: controllers 0-1 on package 0 (1 not
 * opened), controller 0 on package 1, and a CAS counter that is not free-running. */
static pmugate_counter counters[] = {
        { .index = 0, .name = "uncore_imc_free_running_0/read", .package = 0, .width = 64,
          .scale = 6.103515625e-05, .unit = "MiB", .cls = "uncore-imc" },
        { .index = 1, .name = "uncore_imc_free_running_0/write", .package = 0, .width = 64,
          .scale = 6.103515625e-05, .unit = "MiB", .cls = "uncore-imc" },
        { .index = 2, .name = "uncore_imc_free_running_1/read", .package = 0, .width = 64,
          .scale = 6.103515625e-05, .unit = "MiB", .cls = "uncore-imc" },
        { .index = 3, .name = "uncore_imc_free_running_1/write", .package = 0, .width = 64,
          .scale = 6.103515625e-05, .unit = "MiB", .cls = "uncore-imc", .error = "not opened" },
        { .index = 4, .name = "uncore_imc_0/cas_count_read", .package = 0, .width = 64,
          .scale = 6.103515625e-05, .unit = "MiB", .cls = "uncore-imc" },
        { .index = 5, .name = "uncore_imc_free_running_0/read", .package = 1, .width = 48,
          .scale = 64, .unit = "B", .cls = "uncore-imc" },
        { .index = 6, .name = "uncore_imc_free_running_0/write", .package = 1, .width = 48,
          .scale = 1, .unit = "lines", .cls = "uncore-imc" },
};

static void test_freerun(void **state) {
        pmugate_info info = skx("icx");
        uint32_t counter = 99;

        info.counters = counters;
        info.n_counters = ELEMENTSOF(counters);
        for (uint32_t dev = 0; dev < 100; dev++)
                assert_int_equal(likwid_device_is_freerun(dev), dev >= 51 && dev <= 54);
        assert_int_equal(likwid_map_freerun(&info, 51, 0, 0x0, &counter), 0);
        assert_int_equal(counter, 0);
        assert_int_equal(likwid_map_freerun(&info, 51, 0, 0x8, &counter), 0);
        assert_int_equal(counter, 1);
        assert_int_equal(likwid_map_freerun(&info, 52, 0, 0x0, &counter), 0);
        assert_int_equal(counter, 2);
        assert_int_equal(likwid_map_freerun(&info, 51, 1, 0x0, &counter), 0);
        assert_int_equal(counter, 5);
        counter = 99;
        /* Not opened, a unit that is not a size, a controller or socket the machine lacks, the
         * programmable MMIO channels, an offset the devices do not have. */
        assert_int_equal(likwid_map_freerun(&info, 52, 0, 0x8, &counter), -ENODEV);
        assert_int_equal(likwid_map_freerun(&info, 51, 1, 0x8, &counter), -ENODEV);
        assert_int_equal(likwid_map_freerun(&info, 53, 0, 0x0, &counter), -ENODEV);
        assert_int_equal(likwid_map_freerun(&info, 51, 2, 0x0, &counter), -ENODEV);
        assert_int_equal(likwid_map_freerun(&info, 51, UINT32_MAX, 0x0, &counter), -ENODEV);
        assert_int_equal(likwid_map_freerun(&info, 43, 0, 0x8, &counter), -ENODEV);
        assert_int_equal(likwid_map_freerun(&info, 51, 0, 0x10, &counter), -EINVAL);
        assert_int_equal(likwid_map_freerun(&info, 51, 0, 0x4, &counter), -EINVAL);
        assert_int_equal(counter, 99);
        assert_true(likwid_freerun_present(&info, 51, 0));
        assert_false(likwid_freerun_present(&info, 52, 0));
        assert_false(likwid_freerun_present(&info, 51, 1));
        assert_non_null(likwid_find_counter(&info, 6));
        assert_null(likwid_find_counter(&info, 7));
        assert_true(likwid_model_answers_ubox_freeze(&info));
        /* The device numbers are Ice Lake-SP's: nothing elsewhere, even with the same names. */
        strcpy(info.model_key, "spr");
        assert_int_equal(likwid_map_freerun(&info, 51, 0, 0x0, &counter), -ENODEV);
        assert_false(likwid_model_answers_ubox_freeze(&info));
        strcpy(info.model_key, "skx");
        assert_int_equal(likwid_map_freerun(&info, 51, 0, 0x0, &counter), -ENODEV);
        assert_true(likwid_model_answers_ubox_freeze(&info));
}

static void test_errors(void **state) {
        assert_int_equal(likwid_error_from_refusal(PROTO_E_REG_NOT_ALLOWED), LIKWID_ERR_RESTREG);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_REG_FORBIDDEN), LIKWID_ERR_RESTREG);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_READ_ONLY), LIKWID_ERR_RESTREG);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_OUT_OF_SCOPE), LIKWID_ERR_RESTREG);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_NO_GRANT), LIKWID_ERR_RESTREG);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_NOT_AUTHORIZED), LIKWID_ERR_RESTREG);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_NO_SUCH_CPU), LIKWID_ERR_OPENFAIL);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_NO_SUCH_UNIT), LIKWID_ERR_NODEV);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_BUSY), LIKWID_ERR_DAEMONBUSY);
        assert_int_equal(likwid_error_from_refusal(PROTO_E_INTERNAL), LIKWID_ERR_RWFAIL);
        assert_int_equal(likwid_error_from_refusal(-1), LIKWID_ERR_RWFAIL);
        assert_int_equal(likwid_error_from_errno(0), LIKWID_ERR_NOERROR);
        assert_int_equal(likwid_error_from_errno(-EIO), LIKWID_ERR_RWFAIL);
        assert_int_equal(likwid_error_from_errno(-EBUSY), LIKWID_ERR_DAEMONBUSY);
        assert_int_equal(likwid_error_from_errno(-ENXIO), LIKWID_ERR_NODEV);
        assert_true(likwid_refusal_is_permanent(PROTO_E_REG_NOT_ALLOWED));
        assert_true(likwid_refusal_is_permanent(PROTO_E_READ_ONLY));
        /* Rights and leases change during a run: never remembered. */
        assert_false(likwid_refusal_is_permanent(PROTO_E_OUT_OF_SCOPE));
        assert_false(likwid_refusal_is_permanent(PROTO_E_BUSY));
        assert_false(likwid_refusal_is_permanent(PROTO_E_NO_LEASE));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_units),
                cmocka_unit_test(test_registers),
                cmocka_unit_test(test_leases),
                cmocka_unit_test(test_rules),
                cmocka_unit_test(test_freerun),
                cmocka_unit_test(test_errors),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: an ARM machine's identity, MIDR_EL1 as sysfs prints it or as /proc/cpuinfo spells
 * it out, read under a root directory as hostile input; the Grace model it finds
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/machine.h"
#include "log.h"
#include "macro.h"
#include "tmpdir_fixture.h"

static void test_parse_midr(void **state) {
        static const char *const bad[] = {
                "", "0x", "410fd4f0", "0x410fd4f0 ", " 0x410fd4f0", "0x410fd4fg", "0x-1", "0x+410fd4f0",
                "0x0000000100000000", "0x00000000000000000", "0x1410fd4f0", "0X", "00x410fd4f0",
        };
        uint32_t midr = 0;

        assert_int_equal(machine_parse_midr("0x00000000410fd4f0", &midr), 0);
        assert_int_equal(midr, 0x410fd4f0);
        assert_int_equal(machine_parse_midr("0x410FD4F1", &midr), 0);
        assert_int_equal(midr, 0x410fd4f1);
        assert_int_equal(machine_parse_midr("0x00000000ffffffff", &midr), 0);
        assert_int_equal(midr, 0xffffffff);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                midr = 7;
                assert_int_equal(machine_parse_midr(bad[i], &midr), -EINVAL);
                assert_int_equal(midr, 7);
        }
}

static void test_set_midr(void **state) {
        Machine *m = machine_new();
        const CpuModel *c;

        assert_non_null(m);
        machine_set_midr(m, 0x412fd4f3);
        assert_string_equal(m->vendor, "ARM");
        assert_int_equal(m->family, 0xf);
        assert_int_equal(m->model, 0xd4f);
        assert_int_equal(m->stepping, 0x23);
        assert_string_equal(m->model_name, "MIDR 0x412fd4f3");
        c = cpu_model_find(m->vendor, m->family, m->model, m->stepping);
        assert_non_null(c);
        assert_string_equal(c->key, "grace");
        assert_true(cpu_model_is_arm(c));
        assert_false(cpu_model_is_amd(c));
        assert_int_equal(c->gp_counters, 6);
        assert_int_equal(c->fixed_counters, 1);
        assert_int_equal(c->slots_width, 8);

        /* Neoverse N2 (0xd49), and NVIDIA's own implementer: no model */
        machine_set_midr(m, 0x410fd490);
        assert_null(cpu_model_find(m->vendor, m->family, m->model, m->stepping));
        machine_set_midr(m, 0x4e0fd4f0);
        assert_string_equal(m->vendor, "arm64:0x4e");
        assert_null(cpu_model_find(m->vendor, m->family, m->model, m->stepping));
        /* no x86 model is an ARM one, nor the other way round */
        assert_false(cpu_model_is_arm(cpu_model_by_key("zen4")));
        assert_true(cpu_model_is_amd(cpu_model_by_key("zen4")));
        assert_false(cpu_model_is_arm(cpu_model_by_key("spr")));
        machine_free(m);
}

static void write_file(const char *rel, const char *text) {
        char path[4096];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        for (char *p = strchr(path + strlen(tmpdir) + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                (void) mkdir(path, 0755);
                *p = '/';
        }
        f = fopen(path, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

/* Two CPUs, as an arm64 kernel shows them: its cpuinfo, optionally each CPU's midr_el1. */
static void fake_arm(const char *cpuinfo_part, const char *midr_el1) {
        char text[1024];

        (void) snprintf(text, sizeof(text),
                        "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\n"
                        "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: %s\nCPU revision\t: 1\n\n"
                        "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd49\n\n", cpuinfo_part);
        write_file("proc/cpuinfo", text);
        write_file("sys/devices/system/cpu/present", "0-1\n");
        write_file("sys/devices/system/cpu/online", "0-1\n");
        for (int cpu = 0; cpu < 2; cpu++) {
                char path[256];

                (void) snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
                write_file(path, "0\n");
                (void) snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
                write_file(path, cpu ? "1\n" : "0\n");
                if (midr_el1) {
                        (void) snprintf(path, sizeof(path),
                                        "sys/devices/system/cpu/cpu%d/regs/identification/midr_el1", cpu);
                        write_file(path, midr_el1);
                }
        }
}

/* cpuinfo alone: the first processor block's fields make the MIDR, architecture 0xf whatever
 * the kernel's "CPU architecture: 8" says. */
static void test_discover_cpuinfo(void **state) {
        Machine *m = NULL;

        fake_arm("0xd4f", NULL);
        assert_int_equal(machine_discover(tmpdir, &m), 0);
        assert_int_equal(m->midr, 0x410fd4f1);
        assert_non_null(m->cpu_model);
        assert_string_equal(m->cpu_model->key, "grace");
        assert_int_equal(m->n_online, 2);
        machine_free(m);
}

/* sysfs wins over cpuinfo: the register as the kernel read it. */
static void test_discover_sysfs(void **state) {
        Machine *m = NULL;

        fake_arm("0xd49", "0x00000000410fd4f0\n");
        assert_int_equal(machine_discover(tmpdir, &m), 0);
        assert_int_equal(m->midr, 0x410fd4f0);
        assert_string_equal(m->cpu_model->key, "grace");
        machine_free(m);
}

/* Hostile files refuse the machine, they are never read in part. */
static void test_discover_hostile(void **state) {
        Machine *m = NULL;

        fake_arm("0xd4f", "0x410fd4f0\nq\n");
        assert_int_equal(machine_discover(tmpdir, &m), -EINVAL);
        assert_null(m);
        fake_arm("0xd4f", "0x1000000000000000000000000000000000000000000000000000000000000000000000000\n");
        assert_true(machine_discover(tmpdir, &m) < 0);
        assert_null(m);
}

static void test_discover_hostile_cpuinfo(void **state) {
        Machine *m = NULL;

        fake_arm("0xd4f0", NULL);
        assert_int_equal(machine_discover(tmpdir, &m), -EINVAL);
        fake_arm("d4f", NULL);
        assert_int_equal(machine_discover(tmpdir, &m), -EINVAL);
        fake_arm("-1", NULL);
        assert_int_equal(machine_discover(tmpdir, &m), -EINVAL);
        assert_null(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_midr),
                cmocka_unit_test(test_set_midr),
                cmocka_unit_test_setup_teardown(test_discover_cpuinfo, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_discover_sysfs, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_discover_hostile, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_discover_hostile_cpuinfo, tmpdir_setup, tmpdir_teardown),
        };

        log_set_max_level(LOG_CRIT);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

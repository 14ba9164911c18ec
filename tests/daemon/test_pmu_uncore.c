/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Uncore boxes and counters the kernel holds: which memory-controller channel an uncore_imc_N
 * package counter makes the kernel's, channels found enabled (and re-read only while nobody
 * leases their package), AMD L3 counters per CCX and data-fabric counters per package, a
 * control that cannot be read counting as held, and the busy refusal naming the driver
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/sim/backend-sim.h"
#include "error.h"
#include "fake_pmu.h"
#include "log.h"
#include "pmu/pmu-uncore.h"
#include "pmu/pmu.h"

#define EN (UINT64_C(1) << 22)
#define CAS_READ 0x400304U

static void add_counter(Machine *m, const char *name, int32_t package, const char *error) {
        MachineCounter *c;

        m->counters = reallocarray(m->counters, m->n_counters + 1, sizeof(MachineCounter));
        assert_non_null(m->counters);
        c = &m->counters[m->n_counters++];
        *c = (MachineCounter) { .package = package, .fd = -EBADF };
        (void) snprintf(c->name, sizeof(c->name), "%s", name);
        (void) snprintf(c->error, sizeof(c->error), "%s", error);
}

/* Counters are opened before the Pmu exists; the test rebuilds it after adding them. */
static void rebuild_pmu(FakePmu *f) {
        pmu_free(f->pmu);
        assert_int_equal(pmu_new(f->backend, f->machine, f->allowlist, &f->pmu), 0);
        pmu_detect_all(f->pmu);
}

static void test_daemon_counters_name_their_box(void **state) {
        static const int32_t packages[] = { 0, 0, 0, 1, 1, 1, -1 };
        FakePmu *f = fake_pmu_new(2, 2, 1, NULL, 0, packages, ELEMENTSOF(packages));

        (void) state;
        /* package 0: box 1 served; package 1: box 0 failed to open, the free-running PMU programs
         * nothing */
        add_counter(f->machine, "uncore_imc_1/cas_count_read", 0, "");
        add_counter(f->machine, "uncore_imc_1/cas_count_write", 0, "");
        add_counter(f->machine, "uncore_imc_0/cas_count_read", 1, "perf_event_open: No such device");
        add_counter(f->machine, "uncore_imc_free_running_0/read", 1, "");
        rebuild_pmu(f);
        for (uint32_t u = 0; u < ELEMENTSOF(packages); u++)
                assert_int_equal(pmu_uncore_unit_owner(f->pmu, u),
                                 u == 1 ? UNCORE_OWNER_DAEMON_EVENTS : UNCORE_OWNER_NONE);
        assert_non_null(strstr(pmu_uncore_owner(f->pmu, true, 1, FAKE_IMC_BOX_CTL), "uncore_imc"));
        assert_null(pmu_uncore_owner(f->pmu, true, 0, FAKE_IMC_BOX_CTL));

        /* a box the package does not have: every channel of the package is the kernel's */
        add_counter(f->machine, "uncore_imc_9/cas_count_read", 1, "");
        rebuild_pmu(f);
        for (uint32_t u = 0; u < ELEMENTSOF(packages); u++)
                assert_int_equal(pmu_uncore_unit_owner(f->pmu, u), u == 1 || u == 3 || u == 4 || u == 5 ?
                                 UNCORE_OWNER_DAEMON_EVENTS : UNCORE_OWNER_NONE);
        fake_pmu_free(f);
}

/* With the opener service the package counters open after the Pmu exists: a counter still
 * waiting makes its box the kernel's, and once it failed the box is told from its controls. */
static void test_counters_opened_later(void **state) {
        static const int32_t packages[] = { 0, 0, 1, -1 };
        FakePmu *f = fake_pmu_new(2, 2, 1, NULL, 0, packages, ELEMENTSOF(packages));

        (void) state;
        add_counter(f->machine, "uncore_imc_0/cas_count_read", 0, "");
        add_counter(f->machine, "uncore_imc_1/cas_count_read", 0, "");
        add_counter(f->machine, "uncore_imc_0/cas_count_read", 1, "");
        rebuild_pmu(f);
        for (uint32_t u = 0; u < ELEMENTSOF(packages); u++)
                assert_int_equal(pmu_uncore_unit_owner(f->pmu, u),
                                 u < 3 ? UNCORE_OWNER_DAEMON_EVENTS : UNCORE_OWNER_NONE);

        /* box 1 of package 0 did not open, and its controls are free; package 1's box did not
         * open either, and another perf user enabled a counter of it */
        (void) snprintf(f->machine->counters[1].error, sizeof(f->machine->counters[1].error),
                        "perf_event_open: Operation not permitted");
        (void) snprintf(f->machine->counters[2].error, sizeof(f->machine->counters[2].error),
                        "perf_event_open: No such device");
        fake_set_pci(f, 2, FAKE_IMC_CTL0, CAS_READ);
        log_set_max_level(LOG_ERR);
        pmu_uncore_counters_opened(f->pmu);
        log_set_max_level(LOG_WARNING);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 0), UNCORE_OWNER_DAEMON_EVENTS);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 1), UNCORE_OWNER_NONE);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 2), UNCORE_OWNER_KERNEL_ENABLED);
        assert_null(pmu_uncore_owner(f->pmu, true, 1, FAKE_IMC_BOX_CTL));
        fake_pmu_free(f);
}

static int conflict(const FakePmu *f, bool pci, uint32_t target, uint32_t reg, const char *want) {
        Refusal why = {};
        int r = pmu_uncore_write_conflict(f->pmu, pci, target, reg, &why);

        if (want)
                assert_non_null(strstr(why.reason, want));
        return r;
}

/* Re-reads the uncore of cpu, skipping what a CPU leased in f shares. */
static void detect_unleased(FakePmu *f, uint32_t cpu) {
        CpuSet leased;

        leases_held_cpus(f->leases, &leased);
        pmu_uncore_detect(f->pmu, &cpu, 1, &leased);
}

static void test_enabled_channel_and_leases(void **state) {
        static const int32_t packages[] = { 0, 1, -1 };
        FakePmu *f = fake_pmu_new(2, 2, 1, NULL, 0, packages, ELEMENTSOF(packages));
        LeaseHolder holder = { .owner = &holder, .role = ROLE_USER, .uid = 1000, .pid = 1 };
        uint32_t cpu0 = fake_cpu(f, 0, 0, 0), cpu2 = fake_cpu(f, 1, 0, 0), cpu3 = fake_cpu(f, 1, 1, 0);
        Refusal why = {};

        (void) state;
        fake_set_pci(f, 1, FAKE_IMC_CTL0 + 4, CAS_READ);
        fake_set_pci(f, 2, FAKE_IMC_CTL0, CAS_READ);
        pmu_detect_all(f->pmu);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 0), UNCORE_OWNER_NONE);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 1), UNCORE_OWNER_KERNEL_ENABLED);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 2), UNCORE_OWNER_KERNEL_ENABLED);
        assert_int_equal(conflict(f, true, 1, FAKE_IMC_BOX_CTL, "the kernel's uncore_imc driver"),
                         PROTO_E_BUSY);
        assert_int_equal(conflict(f, true, 0, FAKE_IMC_BOX_CTL, NULL), 0);
        /* MSRs of an Intel machine are never uncore counters of the kernel's */
        assert_int_equal(conflict(f, false, 0, 0xC0010230U, NULL), 0);

        /* While a CPU of package 1 is leased, what its channel holds is not re-read: a holder of
         * the whole package may have enabled it. */
        assert_int_equal(leases_acquire(f->leases, &holder, &cpu2, 1, NULL, NULL, &why),
                         0);
        fake_set_pci(f, 1, FAKE_IMC_CTL0 + 4, 0);
        detect_unleased(f, cpu3);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 1), UNCORE_OWNER_KERNEL_ENABLED);
        (void) leases_release(f->leases, &holder, NULL, 0);
        detect_unleased(f, cpu3);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 1), UNCORE_OWNER_NONE);

        /* a unit of no package goes with the machine's first online CPU */
        fake_set_pci(f, 2, FAKE_IMC_CTL0, 0);
        detect_unleased(f, cpu3);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 2), UNCORE_OWNER_KERNEL_ENABLED);
        detect_unleased(f, cpu0);
        assert_int_equal(pmu_uncore_unit_owner(f->pmu, 2), UNCORE_OWNER_NONE);
        fake_pmu_free(f);
}

/* The default simulated zen4: two sockets of four cores with SMT, one CCX per socket (CPUs 0-3
 * and 8-11 on socket 0). */
static void test_amd_l3_and_data_fabric(void **state) {
        Machine *m = NULL;
        Backend *b = NULL;
        Allowlist *a = NULL;
        Pmu *p = NULL;

        (void) state;
        assert_int_equal(backend_sim_new("zen4", NULL, &m, &b), 0);
        assert_int_equal(allowlist_load_for_model(getenv("PMUGATE_ALLOWLIST_DIR"), "zen4", &a), 0);
        assert_int_equal(pmu_new(b, m, a, &p), 0);
        assert_int_equal(backend_msr_write(b, 1, MSR_AMD_L3_CTL0 + 4, 0x04 | 0xFF << 8 | EN), 0);
        assert_int_equal(backend_msr_write(b, 5, MSR_AMD_DF_CTL0 + 2 * 15, 0x1F | EN), 0);
        pmu_detect_all(p);

        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                bool socket0 = m->cpus[cpu].package == 0, socket1 = !socket0;

                assert_int_equal(pmu_uncore_owner(p, false, cpu, MSR_AMD_L3_CTL0 + 4) != NULL, socket0);
                assert_int_equal(pmu_uncore_owner(p, false, cpu, MSR_AMD_L3_CTL0 + 5) != NULL, socket0);
                assert_null(pmu_uncore_owner(p, false, cpu, MSR_AMD_L3_CTL0));
                assert_int_equal(pmu_uncore_owner(p, false, cpu, MSR_AMD_DF_CTL0 + 30) != NULL, socket1);
                assert_null(pmu_uncore_owner(p, false, cpu, MSR_AMD_DF_CTL0 + 28));
                /* core counters are pmu.c's, not this module's */
                assert_null(pmu_uncore_owner(p, false, cpu, MSR_AMD_PERF_CTL0));
        }
        assert_int_equal(pmu_uncore_l3_union(p), 1U << 2);
        assert_int_equal(pmu_uncore_df_union(p), 1U << 15);
        {
                Refusal why = {};

                assert_int_equal(pmu_uncore_write_conflict(p, false, 9, MSR_AMD_L3_CTL0 + 4, &why), PROTO_E_BUSY);
                assert_non_null(strstr(why.reason, "L3 counter 2"));
                assert_non_null(strstr(why.reason, "the kernel's amd_uncore driver"));
                assert_int_equal(pmu_uncore_write_conflict(p, false, 12, MSR_AMD_DF_CTL0 + 31, &why), PROTO_E_BUSY);
                assert_non_null(strstr(why.reason, "data-fabric counter 15"));
        }

        /* the kernel let go: seen at the next detection */
        assert_int_equal(backend_msr_write(b, 1, MSR_AMD_L3_CTL0 + 4, 0), 0);
        pmu_uncore_detect(p, (const uint32_t[]) { 8 }, 1, NULL);
        assert_null(pmu_uncore_owner(p, false, 0, MSR_AMD_L3_CTL0 + 4));

        pmu_free(p);
        allowlist_free(a);
        backend_free(b);
        machine_free(m);
}

/* An L3 control that cannot be read counts as held, by no one the daemon can name. */
static void test_unreadable_counts_as_held(void **state) {
        static const char config[] = "[machine]\nsockets = 1\ncores = 2\n[inject]\neio_msr = 0xC0010232\n";
        char path[] = "/tmp/test-pmu-uncore-XXXXXX";
        Refusal why = {};
        Machine *m = NULL;
        Backend *b = NULL;
        Allowlist *a = NULL;
        Pmu *p = NULL;
        int fd = mkstemp(path);

        (void) state;
        assert_true(fd >= 0);
        assert_int_equal(write(fd, config, sizeof(config) - 1), (ssize_t) sizeof(config) - 1);
        assert_int_equal(close(fd), 0);
        assert_int_equal(backend_sim_new("zen4", path, &m, &b), 0);
        (void) unlink(path);
        assert_int_equal(allowlist_load_for_model(getenv("PMUGATE_ALLOWLIST_DIR"), "zen4", &a), 0);
        assert_int_equal(pmu_new(b, m, a, &p), 0);
        pmu_detect_all(p);

        assert_null(pmu_uncore_owner(p, false, 0, MSR_AMD_L3_CTL0));
        assert_int_equal(pmu_uncore_write_conflict(p, false, 3, MSR_AMD_L3_CTL0 + 3, &why),
                         PROTO_E_BUSY);
        assert_non_null(strstr(why.reason, "L3 counter 1, held by an unknown PMU user (its control could not "
                                       "be read"));
        assert_int_equal(pmu_uncore_l3_union(p), 1U << 1);

        pmu_free(p);
        allowlist_free(a);
        backend_free(b);
        machine_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_daemon_counters_name_their_box),
                cmocka_unit_test(test_counters_opened_later),
                cmocka_unit_test(test_enabled_channel_and_leases),
                cmocka_unit_test(test_amd_l3_and_data_fabric),
                cmocka_unit_test(test_unreadable_counts_as_held),
        };

        log_set_max_level(LOG_WARNING);
        return cmocka_run_group_tests(tests, NULL, NULL);
}

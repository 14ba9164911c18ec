/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: foreign counters on the simulated PMU, PERF_METRICS going with SLOTS
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist.h"
#include "backend-sim.h"
#include "error.h"
#include "pmu.h"

#define FIXED_CTRL_FC3_ENABLE 0x3000U   /* OS | USR of fixed counter 3 (SLOTS) */
#define GLOBAL_SLOTS (UINT64_C(1) << 35)
#define METRICS GLOBAL_CTRL_PERF_METRICS

typedef struct Fixture {
        Machine *machine;
        Backend *backend;
        Allowlist *allowlist;
        Pmu *pmu;
} Fixture;

/* An Ice Lake-SP whose CPU 0 has SLOTS enabled by another PMU user (perf), metrics on. */
static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(backend_sim_new("icx", NULL, &f->machine, &f->backend), 0);
        assert_int_equal(allowlist_load_for_model(getenv("PMUGATE_ALLOWLIST_DIR"), "icx", &f->allowlist), 0);
        assert_int_equal(pmu_new(f->backend, f->machine, f->allowlist, &f->pmu), 0);
        assert_int_equal(backend_msr_write(f->backend, 0, MSR_IA32_FIXED_CTR_CTRL, FIXED_CTRL_FC3_ENABLE),
                         0);
        assert_int_equal(backend_msr_write(f->backend, 0, MSR_IA32_PERF_GLOBAL_CTRL,
                                           GLOBAL_SLOTS | GLOBAL_CTRL_PERF_METRICS | 1), 0);
        pmu_detect_all(f->pmu);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        pmu_free(f->pmu);
        backend_free(f->backend);
        allowlist_free(f->allowlist);
        machine_free(f->machine);
        free(f);
        return 0;
}

static int conflict(const Fixture *f, uint32_t cpu, uint32_t reg, uint64_t mask, uint64_t value,
                    bool action) {
        char reason[256] = "";
        int r = pmu_write_conflict(f->pmu, cpu, reg, mask, value, action, reason, sizeof(reason));

        if (r != 0)
                assert_non_null(strstr(reason, "another PMU user"));
        return r;
}

static void test_perf_metrics_goes_with_slots(void **state) {
        Fixture *f = *state;

        assert_int_equal(f->pmu->foreign_fixed[0], 1U << FIXED_SLOTS_INDEX);
        assert_int_equal(f->pmu->foreign_fixed[1], 0);

        /* Bit 48 alone, in each register that carries it. */
        assert_int_equal(conflict(f, 0, MSR_IA32_PERF_GLOBAL_CTRL, METRICS, 0, false), PROTO_E_BUSY);
        assert_int_equal(conflict(f, 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET, UINT64_MAX, METRICS, true),
                         PROTO_E_BUSY);
        assert_int_equal(conflict(f, 0, MSR_IA32_PERF_GLOBAL_STATUS_SET, UINT64_MAX, METRICS, true),
                         PROTO_E_BUSY);
        assert_int_equal(conflict(f, 0, MSR_PERF_METRICS, UINT64_MAX, 0, false), PROTO_E_BUSY);
        assert_int_equal(conflict(f, 0, MSR_IA32_FIXED_CTR0 + 3, UINT64_MAX, 0, false), PROTO_E_BUSY);

        /* One's own bits stay writable; a write-1 register names only the bits it acts on. */
        assert_int_equal(conflict(f, 0, MSR_IA32_PERF_GLOBAL_CTRL, 0xFF, 0, false), 0);
        assert_int_equal(conflict(f, 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET, UINT64_MAX, 1, true), 0);

        /* Where nobody holds SLOTS, bit 48 is the lease holder's. */
        assert_int_equal(conflict(f, 1, MSR_IA32_PERF_GLOBAL_CTRL, METRICS, 0, false), 0);
        assert_int_equal(conflict(f, 1, MSR_IA32_PERF_GLOBAL_STATUS_RESET, UINT64_MAX, METRICS, true), 0);
}

static void test_reset_keeps_foreign_perf_metrics(void **state) {
        Fixture *f = *state;
        uint64_t v;

        assert_int_equal(backend_msr_write(f->backend, 1, MSR_IA32_PERF_GLOBAL_CTRL,
                                           GLOBAL_SLOTS | GLOBAL_CTRL_PERF_METRICS | 1), 0);
        /* Overflow flags: perf's PERF_METRICS and SLOTS ones, and PMC0's, which is no one's. */
        assert_int_equal(backend_msr_write(f->backend, 0, MSR_IA32_PERF_GLOBAL_STATUS_SET,
                                           GLOBAL_SLOTS | GLOBAL_CTRL_PERF_METRICS | 1), 0);
        assert_int_equal(pmu_reset_cpu(f->pmu, 0), 0);
        assert_int_equal(pmu_reset_cpu(f->pmu, 1), 0);

        assert_int_equal(backend_msr_read(f->backend, 0, MSR_IA32_PERF_GLOBAL_CTRL, &v), 0);
        assert_int_equal(v, GLOBAL_SLOTS | GLOBAL_CTRL_PERF_METRICS);
        assert_int_equal(backend_msr_read(f->backend, 0, MSR_IA32_FIXED_CTR_CTRL, &v), 0);
        assert_int_equal(v, FIXED_CTRL_FC3_ENABLE);
        assert_int_equal(backend_msr_read(f->backend, 0, MSR_IA32_PERF_GLOBAL_STATUS, &v), 0);
        assert_int_equal(v & (GLOBAL_SLOTS | METRICS | 1), GLOBAL_SLOTS | METRICS);
        /* On a CPU where nothing is foreign, everything stops. */
        assert_int_equal(backend_msr_read(f->backend, 1, MSR_IA32_PERF_GLOBAL_CTRL, &v), 0);
        assert_int_equal(v, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_perf_metrics_goes_with_slots, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reset_keeps_foreign_perf_metrics, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

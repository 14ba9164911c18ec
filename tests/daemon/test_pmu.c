/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Foreign counters on the simulated PMU: which writes would touch a counter another PMU user holds
 * (one table row per case), PERF_METRICS going with SLOTS, and what a reset leaves alone
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sim/backend-sim.h"
#include "error.h"
#include "macro.h"
#include "pmu/allowlist.h"
#include "pmu/pmu.h"

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
        Refusal why = {};
        int r = pmu_write_conflict(f->pmu, cpu, reg, mask, value, action, &why);

        if (r != 0)
                assert_non_null(strstr(why.reason, "another PMU user"));
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

#define FIXED_CTR_CTRL_FIELD(i) (UINT64_C(0x3) << (4 * (i)))

/* A Sapphire Rapids whose CPU 0 has three counters of another PMU user (the kernel's perf, say):
 * fixed counter 1, SLOTS (fixed counter 3) and general-purpose counter 0. */
static int setup_mixed(void **state) {
        const char *dir = getenv("PMUGATE_ALLOWLIST_DIR");
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_non_null(dir);
        assert_int_equal(backend_sim_new("spr", NULL, &f->machine, &f->backend), 0);
        assert_int_equal(allowlist_load_for_model(dir, "spr", &f->allowlist), 0);
        assert_int_equal(pmu_new(f->backend, f->machine, f->allowlist, &f->pmu), 0);
        assert_int_equal(backend_msr_write(f->backend, 0, MSR_IA32_FIXED_CTR_CTRL,
                                           FIXED_CTR_CTRL_FIELD(1) | FIXED_CTR_CTRL_FIELD(3)), 0);
        assert_int_equal(backend_msr_write(f->backend, 0, MSR_IA32_PERFEVTSEL0, EVTSEL_ENABLE | 0x3c), 0);
        pmu_detect_all(f->pmu);
        *state = f;
        return 0;
}

static void test_detection(void **state) {
        Fixture *f = *state;

        assert_int_equal(f->pmu->foreign_fixed[0], (1U << 1) | (1U << FIXED_SLOTS_INDEX));
        assert_int_equal(f->pmu->foreign_gp[0], 1U);
        assert_int_equal(f->pmu->foreign_fixed[1], 0);
        assert_int_equal(f->pmu->foreign_gp[1], 0);
}

typedef struct ConflictRow {
        const char *what;
        uint32_t cpu;
        uint32_t reg;
        uint64_t mask;
        uint64_t value;
        bool action;
        int expected;   /* 0 or PROTO_E_BUSY */
} ConflictRow;

static const ConflictRow conflict_rows[] = {
        { "the foreign counter's event select", 0, MSR_IA32_PERFEVTSEL0, UINT64_MAX, 0, false,
          PROTO_E_BUSY },
        { "a free event select", 0, MSR_IA32_PERFEVTSEL0 + 1, UINT64_MAX, 0, false, 0 },
        { "the foreign counter", 0, MSR_IA32_PMC0, UINT64_MAX, 0, false, PROTO_E_BUSY },
        { "the foreign counter's full-width alias", 0, MSR_IA32_A_PMC0, UINT64_MAX, 0, false, PROTO_E_BUSY },
        { "a free counter", 0, MSR_IA32_PMC0 + 1, UINT64_MAX, 0, false, 0 },
        { "the foreign fixed counter 1", 0, MSR_IA32_FIXED_CTR0 + 1, UINT64_MAX, 0, false, PROTO_E_BUSY },
        { "free fixed counter 0", 0, MSR_IA32_FIXED_CTR0, UINT64_MAX, 0, false, 0 },
        { "SLOTS held by another user", 0, MSR_IA32_FIXED_CTR0 + FIXED_SLOTS_INDEX, UINT64_MAX, 0, false,
          PROTO_E_BUSY },
        { "PERF_METRICS while SLOTS is foreign", 0, MSR_PERF_METRICS, UINT64_MAX, 0, false, PROTO_E_BUSY },
        { "FIXED_CTR_CTRL, every field", 0, MSR_IA32_FIXED_CTR_CTRL, 0x3333, 0, false, PROTO_E_BUSY },
        { "FIXED_CTR_CTRL, field 0 only", 0, MSR_IA32_FIXED_CTR_CTRL, 0x3, 0, false, 0 },
        { "FIXED_CTR_CTRL, field 2 only", 0, MSR_IA32_FIXED_CTR_CTRL, 0x300, 0, false, 0 },
        { "GLOBAL_CTRL, every bit", 0, MSR_IA32_PERF_GLOBAL_CTRL, UINT64_MAX, 0, false, PROTO_E_BUSY },
        { "GLOBAL_CTRL, free GP bits", 0, MSR_IA32_PERF_GLOBAL_CTRL, 0xFE, 0, false, 0 },
        { "GLOBAL_CTRL, free fixed bits", 0, MSR_IA32_PERF_GLOBAL_CTRL, UINT64_C(0x5) << 32, 0, false, 0 },
        { "GLOBAL_CTRL, foreign fixed bit", 0, MSR_IA32_PERF_GLOBAL_CTRL, UINT64_C(0x2) << 32, 0, false,
          PROTO_E_BUSY },
        { "GLOBAL_CTRL, PERF_METRICS bit while SLOTS is foreign", 0, MSR_IA32_PERF_GLOBAL_CTRL,
          GLOBAL_CTRL_PERF_METRICS, 0, false, PROTO_E_BUSY },
        { "STATUS_RESET of the foreign GP counter", 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET, UINT64_MAX, 0x1,
          true,
          PROTO_E_BUSY },
        { "STATUS_RESET of a free GP counter", 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET, UINT64_MAX, 0x2, true,
          0 },
        { "STATUS_RESET of PERF_METRICS while SLOTS is foreign", 0, MSR_IA32_PERF_GLOBAL_STATUS_RESET,
          UINT64_MAX,
          GLOBAL_CTRL_PERF_METRICS, true, PROTO_E_BUSY },
        { "STATUS_SET of PERF_METRICS while SLOTS is foreign", 0, MSR_IA32_PERF_GLOBAL_STATUS_SET,
          UINT64_MAX,
          GLOBAL_CTRL_PERF_METRICS, true, PROTO_E_BUSY },
        { "STATUS_SET of a free fixed counter", 0, MSR_IA32_PERF_GLOBAL_STATUS_SET, UINT64_MAX,
          UINT64_C(1) << 32,
          true, 0 },
        { "another CPU's GLOBAL_CTRL, every bit", 1, MSR_IA32_PERF_GLOBAL_CTRL, UINT64_MAX, 0, false, 0 },
        { "another CPU's PERF_METRICS", 1, MSR_PERF_METRICS, UINT64_MAX, 0, false, 0 },
        { "a CPU that does not exist", 100000, MSR_IA32_PERF_GLOBAL_CTRL, UINT64_MAX, 0, false, 0 },
};

static void test_conflicts(void **state) {
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(conflict_rows); i++) {
                const ConflictRow *row = &conflict_rows[i];
                Refusal why = {};
                int r;

                r = pmu_write_conflict(f->pmu, row->cpu, row->reg, row->mask, row->value, row->action, &why);
                if (r != row->expected)
                        fail_msg("row %zu (%s): got %d, expected %d (%s)", i, row->what, r, row->expected,
                                 why.reason);
                if (r != 0 && strstr(why.reason, "another PMU user") == NULL)
                        fail_msg("row %zu (%s): the refusal does not say who holds the counter: %s", i,
                                 row->what, why.reason);
        }
}

/* A reset stops and clears what is ours and leaves the other user's counters running. */
static void test_reset_keeps_foreign(void **state) {
        Fixture *f = *state;
        uint64_t v;

        assert_int_equal(backend_msr_write(f->backend, 0, MSR_IA32_PERFEVTSEL0 + 1, EVTSEL_ENABLE | 0xc0),
                0);
        assert_int_equal(backend_msr_write(f->backend, 0, MSR_IA32_PERF_GLOBAL_CTRL,
                                           0x3 | (UINT64_C(0xF) << 32) | GLOBAL_CTRL_PERF_METRICS), 0);
        assert_int_equal(pmu_reset_cpu(f->pmu, 0), 0);

        assert_int_equal(backend_msr_read(f->backend, 0, MSR_IA32_PERFEVTSEL0, &v), 0);
        assert_true(v & EVTSEL_ENABLE);
        assert_int_equal(backend_msr_read(f->backend, 0, MSR_IA32_PERFEVTSEL0 + 1, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(backend_msr_read(f->backend, 0, MSR_IA32_FIXED_CTR_CTRL, &v), 0);
        assert_int_equal(v, FIXED_CTR_CTRL_FIELD(1) | FIXED_CTR_CTRL_FIELD(3));
        assert_int_equal(backend_msr_read(f->backend, 0, MSR_IA32_PERF_GLOBAL_CTRL, &v), 0);
        assert_int_equal(v, 0x1 | (UINT64_C(0xA) << 32) | GLOBAL_CTRL_PERF_METRICS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_perf_metrics_goes_with_slots, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reset_keeps_foreign_perf_metrics, setup, teardown),
                cmocka_unit_test_setup_teardown(test_detection, setup_mixed, teardown),
                cmocka_unit_test_setup_teardown(test_conflicts, setup_mixed, teardown),
                cmocka_unit_test_setup_teardown(test_reset_keeps_foreign, setup_mixed, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the daemon's AMD Zen knowledge: model table, CPUID leaf 0x80000022 decoding, the
 * CCX register scope, and the PMU layer's foreign counters, write conflicts, counters started
 * by a control register and reset, on the simulated Zen 4
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/machine.h"
#include "backend/sim/backend-sim.h"
#include "error.h"
#include "macro.h"
#include "pmu/allowlist.h"
#include "pmu/leases.h"
#include "pmu/pmu.h"

#define EN (UINT64_C(1) << 22)
#define CYCLES (UINT64_C(0x76) | UINT64_C(3) << 16 | EN)

static void test_model_table(void **state) {
        static const struct {
                const char *vendor;
                unsigned family, model;
                const char *key, *name;
        } cases[] = {
                { "AuthenticAMD", 0x19, 0x11, "zen4", "Zen 4 (Genoa)" },
                { "AuthenticAMD", 0x19, 0x18, "zen4", "Zen 4 (Genoa)" },
                { "AuthenticAMD", 0x19, 0xA0, "zen4", "Zen 4 (Bergamo)" },
                { "AuthenticAMD", 0x19, 0x61, "zen4", "Zen 4" },
                { "AuthenticAMD", 0x1A, 0x02, "zen5", "Zen 5 (Turin)" },
                { "AuthenticAMD", 0x1A, 0x11, "zen5", "Zen 5 (Turin)" },
                { "AuthenticAMD", 0x1A, 0x44, "zen5", "Zen 5" },
                /* Zen 3 (perf's amdzen3 ranges), older families, another vendor */
                { "AuthenticAMD", 0x19, 0x01, NULL, NULL },
                { "AuthenticAMD", 0x19, 0x0F, NULL, NULL },
                { "AuthenticAMD", 0x19, 0x21, NULL, NULL },
                { "AuthenticAMD", 0x19, 0x5F, NULL, NULL },
                { "AuthenticAMD", 0x17, 0x31, NULL, NULL },
                { "GenuineIntel", 0x19, 0x11, NULL, NULL },
                { "HygonGenuine", 0x18, 0x01, NULL, NULL },
        };

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const CpuModel *c = cpu_model_find(cases[i].vendor, cases[i].family, cases[i].model, 1);

                if (!cases[i].key) {
                        if (c)
                                fail_msg("%s family 0x%x model 0x%x taken for %s", cases[i].vendor,
                                         cases[i].family, cases[i].model, c->key);
                        continue;
                }
                assert_non_null(c);
                assert_string_equal(c->key, cases[i].key);
                assert_string_equal(c->name, cases[i].name);
                assert_true(cpu_model_is_amd(c));
                assert_int_equal(c->fixed_counters, 0);
        }
        assert_false(cpu_model_is_amd(cpu_model_by_key("spr")));
        assert_int_equal(cpu_model_by_key("zen4")->slots_width, 6);
        assert_int_equal(cpu_model_by_key("zen5")->slots_width, 8);
}

static void test_cpuid_caps(void **state) {
        Machine m = { .cpu_model = cpu_model_by_key("zen4") };

        (void) state;
        machine_default_pmu_caps(&m);
        assert_true(m.perfmon_v2);
        assert_false(m.cpuid_read);
        assert_int_equal(m.core_counters, 6);
        assert_int_equal(m.l3_counters, 6);
        /* EBX: 5 core counters, 12 DF, 24 UMC; the LBR stack size (9:4) is not a counter */
        machine_set_amd_pmu_caps(&m, 0x7, 5 | 0xF << 4 | 12 << 10 | 24 << 16);
        assert_true(m.cpuid_read);
        assert_int_equal(m.core_counters, 5);
        assert_int_equal(m.df_counters, 12);
        assert_int_equal(m.umc_counters, 24);
        assert_int_equal(machine_gp_counters(&m), 5);
        /* a leaf claiming more counters than the model has is capped by the model */
        machine_set_amd_pmu_caps(&m, 0x1, 0xF);
        assert_int_equal(machine_gp_counters(&m), 6);
        /* without PerfMonV2 the leaf says nothing: the defaults stay */
        machine_set_amd_pmu_caps(&m, 0x0, 0xFFFFFFFF);
        assert_false(m.perfmon_v2);
        assert_int_equal(m.core_counters, 6);
        assert_int_equal(m.df_counters, 16);
}

/* Two packages of four cores, two threads, two cores per CCX: CPU = thread * 8 + package * 4
 * + core. */
static Machine *ccx_machine(bool known) {
        Machine *m = machine_new();

        assert_non_null(m);
        m->cpu_model = cpu_model_by_key("zen4");
        m->n_cpus = 16;
        m->cpus = calloc(m->n_cpus, sizeof(MachineCpu));
        assert_non_null(m->cpus);
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                uint32_t core = cpu % 8;

                m->cpus[cpu] = (MachineCpu) {
                        .present = true, .online = true, .package = (int32_t) (core / 4),
                        .core = (int32_t) (core % 4), .thread = cpu / 8,
                        .ccx = known ? (int32_t) (core / 2) : -1,
                };
        }
        machine_update_summary(m);
        machine_default_pmu_caps(m);
        return m;
}

static void test_ccx_scope(void **state) {
        Machine *m = ccx_machine(true);
        CpuSet set;
        uint32_t anchor;

        (void) state;
        assert_int_equal(machine_scope_cpus(m, REG_SCOPE_CCX, 9, false, &set), 0);
        assert_int_equal(cpuset_count(&set), 4);
        assert_true(cpuset_has(&set, 0) && cpuset_has(&set, 1));
        assert_true(cpuset_has(&set, 8) && cpuset_has(&set, 9));
        assert_int_equal(machine_scope_anchor(m, REG_SCOPE_CCX, 9, false, &anchor), 0);
        assert_int_equal(anchor, 0);
        assert_int_equal(machine_scope_anchor(m, REG_SCOPE_CCX, 15, false, &anchor), 0);
        assert_int_equal(anchor, 6);
        /* the anchor skips offline CPUs, and an offline target has no scope */
        m->cpus[6].online = false;
        assert_int_equal(machine_scope_anchor(m, REG_SCOPE_CCX, 15, false, &anchor), 0);
        assert_int_equal(anchor, 7);
        assert_int_equal(machine_scope_cpus(m, REG_SCOPE_CCX, 6, false, &set), -ENXIO);
        /* a CPU whose L3 is unknown shares CCX registers with its package: never fewer CPUs */
        m->cpus[12].ccx = -1;
        assert_int_equal(machine_scope_cpus(m, REG_SCOPE_CCX, 12, false, &set), 0);
        assert_int_equal(cpuset_count(&set), 7);
        /* and every CCX of the package counts it in, the one it may belong to and the others */
        assert_int_equal(machine_scope_cpus(m, REG_SCOPE_CCX, 4, false, &set), 0);
        assert_true(cpuset_has(&set, 12));
        assert_int_equal(cpuset_count(&set), 4);
        /* CCX 3: CPUs 7, 14, 15 (6 is offline) and 12 */
        assert_int_equal(machine_scope_cpus(m, REG_SCOPE_CCX, 7, false, &set), 0);
        assert_true(cpuset_has(&set, 12) && !cpuset_has(&set, 6));
        assert_int_equal(cpuset_count(&set), 4);
        machine_free(m);

        m = ccx_machine(false);
        assert_int_equal(machine_scope_cpus(m, REG_SCOPE_CCX, 1, false, &set), 0);
        assert_int_equal(cpuset_count(&set), 8);
        machine_free(m);
}

typedef struct AmdFixture {
        Machine *machine;
        Backend *backend;
        Allowlist *allowlist;
        Pmu *pmu;
} AmdFixture;

static int setup(void **state) {
        AmdFixture *f = calloc(1, sizeof(*f));
        const char *dir = getenv("PMUGATE_ALLOWLIST_DIR");

        if (!f || !dir)
                return -1;
        if (backend_sim_new("zen4", NULL, &f->machine, &f->backend) < 0 ||
            allowlist_load_for_model(dir, "zen4", &f->allowlist) < 0 ||
            pmu_new(f->backend, f->machine, f->allowlist, &f->pmu) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        AmdFixture *f = *state;

        pmu_free(f->pmu);
        allowlist_free(f->allowlist);
        backend_free(f->backend);
        machine_free(f->machine);
        free(f);
        return 0;
}

static uint64_t rd(AmdFixture *f, uint32_t cpu, uint32_t reg) {
        uint64_t v = 0;

        assert_int_equal(backend_msr_read(f->backend, cpu, reg, &v), 0);
        return v;
}

static void wr(AmdFixture *f, uint32_t cpu, uint32_t reg, uint64_t v) {
        assert_int_equal(backend_msr_write(f->backend, cpu, reg, v), 0);
}

static void test_pmu_foreign(void **state) {
        AmdFixture *f = *state;
        Refusal why = {};

        assert_true(f->pmu->amd);
        wr(f, 1, MSR_AMD_PERF_CTL0 + 4, CYCLES);
        pmu_detect(f->pmu, 1);
        pmu_detect(f->pmu, 0);
        assert_int_equal(f->pmu->foreign_gp[1], 0x4);
        assert_int_equal(f->pmu->foreign_gp[0], 0);
        assert_int_equal(pmu_foreign_gp_union(f->pmu), 0x4);
        assert_int_equal(pmu_foreign_fixed_union(f->pmu), 0);

        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_PERF_CTL0 + 4, UINT64_MAX, 0, false, &why),
                         PROTO_E_BUSY);
        assert_non_null(strstr(why.reason, "core counter 2"));
        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_PERF_CTL0 + 5, UINT64_MAX, 0, false, &why),
                         PROTO_E_BUSY);
        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_PERF_CTL0 + 2, UINT64_MAX, 0, false, &why), 0);
        assert_int_equal(pmu_write_conflict(f->pmu, 0, MSR_AMD_PERF_CTL0 + 4, UINT64_MAX, 0, false, &why), 0);
        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_GLOBAL_CTL, 0x3F, 0, false, &why), PROTO_E_BUSY);
        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_GLOBAL_CTL, 0x3B, 0, false, &why), 0);
        /* status-clear is write-1: only the bits written count */
        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_GLOBAL_STATUS_CLR, 0x3F, 0x3, true, &why), 0);
        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_GLOBAL_STATUS_CLR, 0x3F, 0x4, true, &why), PROTO_E_BUSY);
        /* L3 and DF are not core counters */
        assert_int_equal(pmu_write_conflict(f->pmu, 1, MSR_AMD_L3_CTL0 + 4, UINT64_MAX, 0, false, &why), 0);

        /* a reset keeps the foreign counter and its global enable */
        wr(f, 1, MSR_AMD_GLOBAL_CTL, 0x3F);
        wr(f, 1, MSR_AMD_PERF_CTL0, CYCLES);
        wr(f, 1, MSR_AMD_PERF_CTL0 + 1, 1234);
        assert_int_equal(pmu_reset_cpu(f->pmu, 1), 0);
        assert_int_equal(rd(f, 1, MSR_AMD_GLOBAL_CTL), 0x4);
        assert_int_equal(rd(f, 1, MSR_AMD_PERF_CTL0), 0);
        assert_int_equal(rd(f, 1, MSR_AMD_PERF_CTL0 + 1), 0);
        assert_int_equal(rd(f, 1, MSR_AMD_PERF_CTL0 + 4), CYCLES);

        /* the NMI watchdog's counter caught with EN clear still counts as taken */
        f->machine->nmi_watchdog = true;
        pmu_detect(f->pmu, 0);
        assert_int_equal(f->pmu->foreign_gp[0], 0x1);
        f->machine->nmi_watchdog = false;
        pmu_detect(f->pmu, 0);
        assert_int_equal(f->pmu->foreign_gp[0], 0);
}

static void test_pmu_started_by(void **state) {
        AmdFixture *f = *state;
        uint32_t regs[16];

        f->pmu->foreign_gp[2] = 0x2;
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, MSR_AMD_PERF_CTL0 + 6, regs, 16), 1);
        assert_int_equal(regs[0], MSR_AMD_PERF_CTL0 + 7);
        /* a foreign pair's select starts nothing of ours; a counter starts nothing */
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, MSR_AMD_PERF_CTL0 + 2, regs, 16), 0);
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, MSR_AMD_PERF_CTL0 + 7, regs, 16), 0);
        /* the global control starts every counter but the foreign one */
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, MSR_AMD_GLOBAL_CTL, regs, 16), 5);
        assert_int_equal(regs[0], MSR_AMD_PERF_CTL0 + 1);
        assert_int_equal(regs[1], MSR_AMD_PERF_CTL0 + 5);
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, MSR_AMD_GLOBAL_CTL, regs, 2), 2);
        /* L3 and data-fabric selects start the counter beside them */
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, MSR_AMD_L3_CTL0 + 10, regs, 16), 1);
        assert_int_equal(regs[0], MSR_AMD_L3_CTL0 + 11);
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, MSR_AMD_DF_CTL0 + 30, regs, 16), 1);
        assert_int_equal(regs[0], MSR_AMD_DF_CTL0 + 31);
        assert_int_equal(pmu_counters_started_by(f->pmu, 2, 0xC0000302, regs, 16), 0);
        f->pmu->foreign_gp[2] = 0;
}

/* A CPU whose L3 the kernel does not report shares CCX registers with every CCX of its package:
 * when its lease ends, a CCX register journaled under another CCX's anchor goes back too. */
static void test_ccx_restore_unknown_l3(void **state) {
        AmdFixture *f = *state;
        static const int owner = 1;
        const LeaseHolder holder = { .owner = &owner, .role = ROLE_USER, .uid = 1000, .pid = 1 };
        uint32_t cpus[] = { 0, 1, 2, 3, 8, 9, 10, 11 }, released = 11, anchor;
        const AllowEntry *e = allowlist_find_msr(f->allowlist, MSR_AMD_L3_CTL0);
        RegOp op = { .kind = REG_OP_MSR_WRITE, .target = 3, .reg = MSR_AMD_L3_CTL0, .mask = UINT64_MAX };
        Leases *l = NULL;
        Refusal why = {};

        /* package 0: CCX 0 = CPUs 0, 1, 8, 9; CCX 1 = 2, 3, 10; CPU 11's L3 unknown */
        for (uint32_t i = 0; i < ELEMENTSOF(cpus); i++)
                f->machine->cpus[cpus[i]].ccx = cpus[i] % 8 < 2 ? 0 : 1;
        f->machine->cpus[11].ccx = -1;
        assert_non_null(e);
        assert_int_equal(e->scope, REG_SCOPE_CCX);
        assert_int_equal(leases_new(NULL, f->backend, f->machine, &l), 0);
        leases_set_restore(l, f->allowlist, f->pmu, NULL);
        assert_int_equal(leases_acquire(l, &holder, cpus, ELEMENTSOF(cpus), NULL, NULL, &why), 0);
        assert_int_equal(leases_anchor(l, REG_SCOPE_CCX, 3, false, &anchor), 0);
        assert_int_equal(anchor, 2);
        op.target = anchor;
        assert_true(leases_journal_needed(l, anchor, &op));
        assert_int_equal(leases_journal_add(l, anchor, &op, e, 0), 0);
        wr(f, 3, MSR_AMD_L3_CTL0, 0x4004FF);

        /* a CPU of the other CCX leaving changes nothing */
        assert_int_equal(leases_release(l, &owner, &cpus[4], 1), 1);
        assert_int_equal(rd(f, 2, MSR_AMD_L3_CTL0), 0x4004FF);
        /* CPU 11, of unknown L3, may share it: the register goes back */
        assert_int_equal(leases_release(l, &owner, &released, 1), 1);
        assert_int_equal(rd(f, 2, MSR_AMD_L3_CTL0), 0);
        assert_int_equal(leases_release(l, &owner, NULL, 0), 6);
        leases_free(l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_model_table),
                cmocka_unit_test(test_cpuid_caps),
                cmocka_unit_test(test_ccx_scope),
                cmocka_unit_test_setup_teardown(test_pmu_foreign, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pmu_started_by, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ccx_restore_unknown_l3, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

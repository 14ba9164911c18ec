/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the whole-batch check, one row per refusal, on an in-memory machine
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cpulist.h"
#include "error.h"
#include "fake_pmu.h"
#include "macro.h"
#include "pmu/batch.h"

/* Three sockets of two cores of two threads, Linux numbering (cpu = thread * 6 + socket * 2 +
 * core): package 0 is CPUs 0,1,6,7 (core 0: 0 and 6), package 1 is 2,3,8,9, and package 2
 * (4,5,10,11) is offline. Unit 0 is package 0's, unit 1 package 1's, unit 2 belongs to the
 * offline package 2, and the package of unit 3 is unknown. */
static const uint32_t offline_cpus[] = { 4, 5, 10, 11 };
static const int32_t unit_packages[] = { 0, 1, 2, -1 };

#define R(t, r) { .kind = REG_OP_MSR_READ, .target = (t), .reg = (r), .mask = UINT64_MAX }
#define W(t, r) { .kind = REG_OP_MSR_WRITE, .target = (t), .reg = (r), .value = 1, .mask = UINT64_MAX }
#define PR(t, r) { .kind = REG_OP_PCI_READ, .target = (t), .reg = (r), .mask = UINT64_MAX }
#define PW(t, r) { .kind = REG_OP_PCI_WRITE, .target = (t), .reg = (r), .value = 1, .mask = UINT64_MAX }

typedef struct Row {
        const char *name;
        Role role;              /* monitors may write core-pmu and uncore-imc registers only */
        const char *scope;      /* a job-mode user's CPUs; NULL: not scoped */
        bool package_read_shared;
        const char *leased;     /* CPUs the caller holds leases on */
        bool foreign_pmc0;      /* another PMU user holds PMC0 of the op's CPU */
        RegOp op;
        int code;
        const char *reason;     /* part of the refusal's reason */
} Row;

static const Row rows[] = {
        /* rights, allowlist, never-list, write mask, classes */
        { "no rights", ROLE_NONE, NULL, false, NULL, false,
          R(0, 0xC1), PROTO_E_NOT_AUTHORIZED, "no role" },
        { "a CPU that does not exist", ROLE_ADMIN, NULL, false, NULL, false,
          R(99, 0xC1), PROTO_E_NO_SUCH_CPU, "CPU 99" },
        { "a unit that does not exist", ROLE_ADMIN, NULL, false, NULL, false,
          PR(9, 0xF4), PROTO_E_NO_SUCH_UNIT, "unit 9" },
        { "off the allowlist", ROLE_ADMIN, NULL, false, NULL, false,
          R(0, 0x124), PROTO_E_REG_NOT_ALLOWED, "not on the allowlist" },
        { "on the never-list", ROLE_ADMIN, NULL, false, NULL, false,
          R(0, 0x1D9), PROTO_E_REG_FORBIDDEN, "IA32_DEBUGCTL" },
        { "read-only", ROLE_ADMIN, NULL, false, "0,1,6,7", false,
          W(0, FAKE_PKG_ENERGY), PROTO_E_READ_ONLY, "read-only" },
        { "a class the role may not write", ROLE_MONITOR, NULL, false, "0", false,
          W(0, 0x1A6), PROTO_E_NOT_AUTHORIZED, "class 'offcore'" },
        { "another PMU user's counter", ROLE_USER, NULL, false, "0", true,
          W(0, 0x186), PROTO_E_BUSY, NULL },

        /* thread scope */
        { "thread: no lease", ROLE_USER, NULL, false, NULL, false,
          W(0, 0x186), PROTO_E_NO_LEASE, "lease on it" },
        { "thread: leased", ROLE_USER, NULL, false, "0", false,
          W(0, 0x186), 0, NULL },
        { "thread: another CPU leased", ROLE_USER, NULL, false, "6", false,
          W(0, 0x186), PROTO_E_NO_LEASE, NULL },
        { "thread: an offline CPU", ROLE_ADMIN, NULL, false, NULL, false,
          W(4, 0x186), PROTO_E_NO_LEASE, NULL },

        /* core scope: every online thread of the core */
        { "core: one thread leased", ROLE_USER, NULL, false, "0", false,
          W(0, FAKE_CORE_CTL), PROTO_E_NO_LEASE, "CPU 6 is not leased" },
        { "core: the sibling leased", ROLE_USER, NULL, false, "6", false,
          W(0, FAKE_CORE_CTL), PROTO_E_NO_LEASE, "CPU 0 is not leased" },
        { "core: both threads leased", ROLE_USER, NULL, false, "0,6", false,
          W(6, FAKE_CORE_CTL), 0, NULL },
        { "core: read needs no lease", ROLE_USER, NULL, false, NULL, false,
          R(0, FAKE_CORE_CTL), 0, NULL },

        /* package scope: every online CPU of the package */
        { "package: one core leased", ROLE_USER, NULL, false, "0,6", false,
          W(0, FAKE_PKG_CTL), PROTO_E_NO_LEASE, "CPU 1 is not leased" },
        { "package: all leased", ROLE_USER, NULL, false, "0,1,6,7", false,
          W(7, FAKE_PKG_CTL), 0, NULL },

        /* PCI units: every online CPU of the unit's package */
        { "unit: no lease", ROLE_USER, NULL, false, NULL, false,
          PW(0, FAKE_IMC_BOX_CTL), PROTO_E_NO_LEASE, "package 0" },
        { "unit: the other package leased", ROLE_USER, NULL, false, "2,3,8,9", false,
          PW(0, FAKE_IMC_BOX_CTL), PROTO_E_NO_LEASE, "package 0" },
        { "unit: its package leased", ROLE_USER, NULL, false, "0,1,6,7", false,
          PW(0, FAKE_IMC_BOX_CTL), 0, NULL },

        /* a unit of a package with no online CPU, or of an unknown package: admins only, and
         * then under a lease on the machine's first online CPU */
        { "empty package: a user", ROLE_USER, NULL, false, "0,1,2,3,6,7,8,9", false,
          PW(2, FAKE_IMC_BOX_CTL), PROTO_E_NOT_AUTHORIZED, "only an admin" },
        { "empty package: a monitor", ROLE_MONITOR, NULL, false, "0,1,2,3,6,7,8,9", false,
          PW(2, FAKE_IMC_CTL0), PROTO_E_NOT_AUTHORIZED, "only an admin" },
        { "empty package: an admin without the anchor", ROLE_ADMIN, NULL, false, "1", false,
          PW(2, FAKE_IMC_BOX_CTL), PROTO_E_NO_LEASE, "lease on CPU 0" },
        { "empty package: an admin with the anchor", ROLE_ADMIN, NULL, false, "0", false,
          PW(2, FAKE_IMC_BOX_CTL), 0, NULL },
        { "unknown package: a user", ROLE_USER, NULL, false, "0,1,2,3,6,7,8,9", false,
          PW(3, FAKE_IMC_BOX_CTL), PROTO_E_NOT_AUTHORIZED, "only an admin" },
        { "unknown package: an admin without a lease", ROLE_ADMIN, NULL, false, NULL, false,
          PW(3, FAKE_IMC_BOX_CTL), PROTO_E_NO_LEASE, "lease on CPU 0" },
        { "unknown package: an admin with the anchor", ROLE_ADMIN, NULL, false, "0", false,
          PW(3, FAKE_IMC_BOX_CTL), 0, NULL },
        { "unknown package: reads stay open", ROLE_USER, NULL, false, NULL, false,
          PR(3, FAKE_IMC_BOX_CTL), 0, NULL },

        /* a job-mode user's scope */
        { "scope: a thread register in it", ROLE_USER, "0", false, NULL, false,
          R(0, 0xC1), 0, NULL },
        { "scope: a thread register outside", ROLE_USER, "0", false, NULL, false,
          R(1, 0xC1), PROTO_E_OUT_OF_SCOPE, "CPU 1 is not one of job" },
        { "scope: a core write without the sibling", ROLE_USER, "0", false, "0,6", false,
          W(0, FAKE_CORE_CTL), PROTO_E_OUT_OF_SCOPE, "does not hold them all" },
        { "scope: a core read of its own thread", ROLE_USER, "0", false, NULL, false,
          R(0, FAKE_CORE_CTL), 0, NULL },
        { "scope: part of a package", ROLE_USER, "0,6", false, NULL, false,
          R(0, FAKE_PKG_ENERGY), PROTO_E_OUT_OF_SCOPE, "package 0" },
        { "scope: all of a package", ROLE_USER, "0,1,6,7", false, NULL, false,
          R(0, FAKE_PKG_ENERGY), 0, NULL },
        { "scope: package_read_shared", ROLE_USER, "0", true, NULL, false,
          R(0, FAKE_PKG_CTL), 0, NULL },
        { "scope: package_read_shared is not energy", ROLE_USER, "0", true, NULL, false,
          R(0, FAKE_PKG_ENERGY), PROTO_E_OUT_OF_SCOPE, "does not hold CPUs 1,6-7" },
        { "scope: another package's unit", ROLE_USER, "0,1,6,7", false, "0,1,6,7", false,
          PW(1, FAKE_IMC_BOX_CTL), PROTO_E_OUT_OF_SCOPE, "package 1" },
        { "scope: an empty package's unit", ROLE_USER, "0-11", false, NULL, false,
          PR(2, FAKE_IMC_BOX_CTL), PROTO_E_OUT_OF_SCOPE, "cannot hold all of it" },
        { "scope: an unknown package's unit", ROLE_USER, "0-11", false, NULL, false,
          PR(3, FAKE_IMC_BOX_CTL), PROTO_E_OUT_OF_SCOPE, "cannot hold all of it" },
        { "scope: its own package's unit", ROLE_USER, "0,1,6,7", false, "0,1,6,7", false,
          PW(0, FAKE_IMC_BOX_CTL), 0, NULL },
};

static void set_rights(Role role, Rights *ret, ClassSet *monitor_classes) {
        *ret = (Rights) { .role = role };
        switch (role) {
        case ROLE_NONE:
                (void) snprintf(ret->reason, sizeof(ret->reason), "no role");
                break;
        case ROLE_MONITOR:
                *monitor_classes = (ClassSet) { .n = 2 };
                memcpy(monitor_classes->classes[0], "core-pmu", sizeof("core-pmu"));
                memcpy(monitor_classes->classes[1], "uncore-imc", sizeof("uncore-imc"));
                ret->may_read = ret->may_write = true;
                ret->write_classes = monitor_classes;
                break;
        case ROLE_USER:
                ret->may_read = ret->may_write = true;
                break;
        default:
                ret->may_read = ret->may_write = ret->may_admin = true;
                break;
        }
}

static void cpus_from_list(const char *list, uint32_t **ret, size_t *ret_n) {
        *ret = NULL;
        *ret_n = 0;
        if (list)
                assert_int_equal(cpulist_parse(list, PMUGATE_CPUS_MAX, ret, ret_n), 0);
}

static void test_refusal_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const Row *row = &rows[i];
                FakePmu *f = fake_pmu_new(3, 2, 2, offline_cpus, ELEMENTSOF(offline_cpus), unit_packages,
                                          ELEMENTSOF(unit_packages));
                static const char owner = 'o';
                ClassSet classes;
                Rights rights;
                Scope scope = { .job = "4711", .from_cgroup = true };
                const AllowEntry *entries[1] = {};
                Refusal refusal = {};
                uint32_t *cpus;
                size_t n;
                Refusal why = {};
                int r;

                set_rights(row->role, &rights, &classes);
                rights.scoped = row->scope != NULL;
                cpus_from_list(row->scope, &cpus, &n);
                for (size_t j = 0; j < n; j++)
                        cpuset_add(&scope.cpus, cpus[j]);
                free(cpus);
                cpus_from_list(row->leased, &cpus, &n);
                if (n > 0) {
                        LeaseHolder holder = { .owner = &owner, .role = row->role, .uid = 1000, .pid = 1 };

                        r = leases_acquire(f->leases, &holder, cpus, n, NULL, NULL, &why);
                        assert_int_equal(r, 0);
                }
                free(cpus);
                if (row->foreign_pmc0)
                        f->pmu->foreign_gp[row->op.target] = 1;

                BatchContext ctx = {
                        .machine = f->machine,
                        .allowlist = f->allowlist,
                        .rights = &rights,
                        .scope = row->scope ? &scope : NULL,
                        .package_read_shared = row->package_read_shared,
                        .leases = f->leases,
                        .owner = &owner,
                        .pmu = f->pmu,
                };
                r = batch_check(&ctx, &row->op, 1, entries, &refusal);
                if (r != row->code)
                        fail_msg("%s: got code %d (%s), want %d", row->name, r, refusal.reason, row->code);
                if (row->reason && !strstr(refusal.reason, row->reason))
                        fail_msg("%s: reason '%s' lacks '%s'", row->name, refusal.reason, row->reason);
                if (r == 0)
                        assert_non_null(entries[0]);
                fake_pmu_free(f);
        }
}

/* A batch checked in slices: a slice's refusal names the op by its index in the whole batch,
 * and entries are filled at the batch's own indexes. */
static void test_check_range(void **state) {
        FakePmu *f = fake_pmu_new(3, 2, 2, offline_cpus, ELEMENTSOF(offline_cpus), unit_packages,
                                  ELEMENTSOF(unit_packages));
        static const char owner = 'o';
        ClassSet classes;
        Rights rights;
        RegOp ops[12];
        const AllowEntry *entries[12] = {};
        Refusal refusal = {};
        char index[16];

        (void) state;
        set_rights(ROLE_USER, &rights, &classes);
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                ops[i] = (RegOp) R(0, 0xC1);
        ops[9] = (RegOp) R(0, 0x1D9);
        BatchContext ctx = {
                .machine = f->machine,
                .allowlist = f->allowlist,
                .rights = &rights,
                .leases = f->leases,
                .owner = &owner,
                .pmu = f->pmu,
        };
        assert_int_equal(batch_check_range(&ctx, ops, 0, 8, entries, &refusal), 0);
        for (size_t i = 0; i < 8; i++)
                assert_non_null(entries[i]);
        assert_null(entries[8]);
        assert_int_equal(batch_check_range(&ctx, ops, 8, 12, entries, &refusal), PROTO_E_REG_FORBIDDEN);
        assert_int_equal(refusal.op_index, 9);
        (void) snprintf(index, sizeof(index), "op 9");
        assert_non_null(strstr(refusal.reason, index));
        assert_non_null(entries[8]);
        /* the whole batch at once says the same */
        assert_int_equal(batch_check(&ctx, ops, 12, entries, &refusal), PROTO_E_REG_FORBIDDEN);
        assert_int_equal(refusal.op_index, 9);
        fake_pmu_free(f);
}

/* The sets every "all CPUs of" check is decided from; never empty on success. */
static void test_scope_cpus(void **state) {
        FakePmu *f = fake_pmu_new(3, 2, 2, offline_cpus, ELEMENTSOF(offline_cpus), unit_packages,
                                  ELEMENTSOF(unit_packages));
        char list[64];
        uint32_t anchor;
        CpuSet set;

        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_THREAD, 7, false, &set), 0);
        assert_int_equal(cpuset_format(&set, list, sizeof(list)), 0);
        assert_string_equal(list, "7");
        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_CORE, 7, false, &set), 0);
        assert_int_equal(cpuset_format(&set, list, sizeof(list)), 0);
        assert_string_equal(list, "1,7");
        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_PACKAGE, 8, false, &set), 0);
        assert_int_equal(cpuset_format(&set, list, sizeof(list)), 0);
        assert_string_equal(list, "2-3,8-9");
        /* a PCI unit: its package, whatever scope is named */
        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_THREAD, 1, true, &set), 0);
        assert_int_equal(cpuset_format(&set, list, sizeof(list)), 0);
        assert_string_equal(list, "2-3,8-9");

        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_PACKAGE, 2, true, &set), -ENOENT);
        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_PACKAGE, 3, true, &set), -ENOENT);
        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_PACKAGE, 4, true, &set), -ENXIO);
        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_THREAD, 4, false, &set), -ENXIO);
        assert_int_equal(machine_scope_cpus(f->machine, REG_SCOPE_CORE, 12, false, &set), -ENXIO);

        assert_int_equal(machine_scope_anchor(f->machine, REG_SCOPE_CORE, 9, false, &anchor), 0);
        assert_int_equal(anchor, 3);
        assert_int_equal(machine_scope_anchor(f->machine, REG_SCOPE_PACKAGE, 9, false, &anchor), 0);
        assert_int_equal(anchor, 2);
        assert_int_equal(machine_scope_anchor(f->machine, REG_SCOPE_PACKAGE, 0, true, &anchor), 0);
        assert_int_equal(anchor, 0);
        assert_int_equal(machine_scope_anchor(f->machine, REG_SCOPE_PACKAGE, 2, true, &anchor), -ENOENT);
        fake_pmu_free(f);
}

/* Energy registers: who reads them, holding which CPUs. */
typedef struct EnergyRow {
        const char *name;
        Role role;
        const char *scope;      /* a job-mode user's CPUs; NULL: open mode */
        bool energy_read_shared;
        const char *leased;
        RegOp op;
        int code;
        const char *reason;
} EnergyRow;

static const EnergyRow energy_rows[] = {
        { "open: a user without leases", ROLE_USER, NULL, false, NULL,
          R(0, FAKE_PKG_ENERGY), PROTO_E_NO_LEASE, "CPUs 0-1,6-7 are not leased" },
        { "open: a user holding part of the package", ROLE_USER, NULL, false, "0,6",
          R(0, FAKE_PKG_ENERGY), PROTO_E_NO_LEASE, "CPUs 1,7 are not leased" },
        { "open: a user holding the package", ROLE_USER, NULL, false, "0,1,6,7",
          R(7, FAKE_PKG_ENERGY), 0, NULL },
        { "open: the other package's energy", ROLE_USER, NULL, false, "0,1,6,7",
          R(2, FAKE_PKG_ENERGY), PROTO_E_NO_LEASE, "all of package 1" },
        { "open: core energy with one thread", ROLE_USER, NULL, false, "0",
          R(0, FAKE_CORE_ENERGY), PROTO_E_NO_LEASE, "CPU 6 is not leased" },
        { "open: core energy with the whole core", ROLE_USER, NULL, false, "0,6",
          R(6, FAKE_CORE_ENERGY), 0, NULL },
        { "open: energy_read_shared", ROLE_USER, NULL, true, NULL,
          R(0, FAKE_PKG_ENERGY), 0, NULL },
        { "a monitor", ROLE_MONITOR, NULL, false, NULL,
          R(0, FAKE_PKG_ENERGY), 0, NULL },
        { "an admin", ROLE_ADMIN, NULL, false, NULL,
          R(0, FAKE_CORE_ENERGY), 0, NULL },
        { "job: one thread of a core", ROLE_USER, "0", false, NULL,
          R(0, FAKE_CORE_ENERGY), PROTO_E_OUT_OF_SCOPE, "does not hold CPU 6" },
        { "job: the whole core", ROLE_USER, "0,6", false, NULL,
          R(0, FAKE_CORE_ENERGY), 0, NULL },
        { "job: the whole core is not the package", ROLE_USER, "0,6", false, NULL,
          R(0, FAKE_PKG_ENERGY), PROTO_E_OUT_OF_SCOPE, "energy_read_shared" },
        { "job: energy_read_shared", ROLE_USER, "0", true, NULL,
          R(0, FAKE_CORE_ENERGY), 0, NULL },
        { "job: leases do not widen the job", ROLE_USER, "0", false, "0",
          R(0, FAKE_CORE_ENERGY), PROTO_E_OUT_OF_SCOPE, NULL },
        { "an offline CPU", ROLE_USER, NULL, false, NULL,
          R(4, FAKE_PKG_ENERGY), PROTO_E_NO_SUCH_CPU, "offline" },
};

static void test_energy_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(energy_rows); i++) {
                const EnergyRow *row = &energy_rows[i];
                FakePmu *f = fake_pmu_new(3, 2, 2, offline_cpus, ELEMENTSOF(offline_cpus), unit_packages,
                                          ELEMENTSOF(unit_packages));
                static const char owner = 'o';
                ClassSet classes;
                Rights rights;
                Scope scope = { .job = "4711", .from_cgroup = true };
                const AllowEntry *entries[1] = {};
                Refusal refusal = {};
                uint32_t *cpus;
                size_t n;
                Refusal why = {};
                int r;

                set_rights(row->role, &rights, &classes);
                rights.scoped = row->scope != NULL;
                cpus_from_list(row->scope, &cpus, &n);
                for (size_t j = 0; j < n; j++)
                        cpuset_add(&scope.cpus, cpus[j]);
                free(cpus);
                cpus_from_list(row->leased, &cpus, &n);
                if (n > 0) {
                        LeaseHolder holder = { .owner = &owner, .role = row->role, .uid = 1000, .pid = 1 };

                        assert_int_equal(leases_acquire(f->leases, &holder, cpus, n, NULL, NULL, &why), 0);
                }
                free(cpus);

                BatchContext ctx = {
                        .machine = f->machine,
                        .allowlist = f->allowlist,
                        .rights = &rights,
                        .scope = row->scope ? &scope : NULL,
                        .energy_read_shared = row->energy_read_shared,
                        .leases = f->leases,
                        .owner = &owner,
                        .pmu = f->pmu,
                };
                r = batch_check(&ctx, &row->op, 1, entries, &refusal);
                if (r != row->code)
                        fail_msg("%s: got code %d (%s), want %d", row->name, r, refusal.reason, row->code);
                if (row->reason && !strstr(refusal.reason, row->reason))
                        fail_msg("%s: reason '%s' lacks '%s'", row->name, refusal.reason, row->reason);
                fake_pmu_free(f);
        }
}

/* The list the energy rule is decided from, and the allowlist flag that sends reads to it. */
static void test_energy_list(void **state) {
        FakePmu *f = fake_pmu_new(3, 2, 2, offline_cpus, ELEMENTSOF(offline_cpus), unit_packages,
                                  ELEMENTSOF(unit_packages));
        char list[64];
        CpuSet set;

        assert_int_equal(energy_list_lookup(0xC001029A)->scope, ENERGY_SCOPE_CORE);
        assert_int_equal(energy_list_lookup(0x611)->scope, ENERGY_SCOPE_PACKAGE);
        assert_int_equal(energy_list_lookup(0x64D)->scope, ENERGY_SCOPE_MACHINE);
        assert_null(energy_list_lookup(0x606));
        assert_null(energy_list_lookup(0x613));
        assert_true(energy_list_overlaps(0x600, 0x6FF));
        assert_false(energy_list_overlaps(0x612, 0x618));
        assert_true(allowlist_find_msr(f->allowlist, FAKE_CORE_ENERGY)->flags & ALLOW_FLAG_ENERGY);
        assert_false(allowlist_find_msr(f->allowlist, FAKE_PKG_CTL)->flags & ALLOW_FLAG_ENERGY);

        assert_int_equal(energy_scope_cpus(f->machine, energy_list_lookup(0x64D), 3, &set), 0);
        assert_int_equal(cpuset_format(&set, list, sizeof(list)), 0);
        assert_string_equal(list, "0-3,6-9");
        assert_int_equal(energy_scope_cpus(f->machine, energy_list_lookup(0xC001029A), 7, &set), 0);
        assert_int_equal(cpuset_format(&set, list, sizeof(list)), 0);
        assert_string_equal(list, "1,7");
        assert_int_equal(energy_scope_cpus(f->machine, energy_list_lookup(0x611), 4, &set), -ENXIO);
        fake_pmu_free(f);
}

/* A batch decides a core's or package's energy once; the decision never carries over to
 * another core or package. */
static void test_energy_batches(void **state) {
        static const char owner = 'o';
        static const uint32_t core0_and_package1[] = { 0, 6, 2, 3, 8, 9 };
        static const struct {
                RegOp ops[4];
                size_t n;
                int code;
                int64_t op_index;
        } cases[] = {
                { { R(0, FAKE_CORE_ENERGY), R(6, FAKE_CORE_ENERGY), R(0, FAKE_CORE_ENERGY) }, 3, 0, 0 },
                { { R(0, FAKE_CORE_ENERGY), R(1, FAKE_CORE_ENERGY) }, 2, PROTO_E_NO_LEASE, 1 },
                { { R(2, FAKE_PKG_ENERGY), R(9, FAKE_PKG_ENERGY), R(0, FAKE_PKG_ENERGY) }, 3, PROTO_E_NO_LEASE, 2 },
                { { R(0, FAKE_CORE_ENERGY), R(0, FAKE_PKG_ENERGY) }, 2, PROTO_E_NO_LEASE, 1 },
                { { R(3, FAKE_PKG_ENERGY), R(8, FAKE_CORE_ENERGY), R(2, FAKE_CORE_ENERGY) }, 3, 0, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                FakePmu *f = fake_pmu_new(3, 2, 2, offline_cpus, ELEMENTSOF(offline_cpus), unit_packages,
                                          ELEMENTSOF(unit_packages));
                LeaseHolder holder = { .owner = &owner, .role = ROLE_USER, .uid = 1000, .pid = 1 };
                Rights rights = { .role = ROLE_USER, .may_read = true, .may_write = true };
                BatchContext ctx = { .machine = f->machine, .allowlist = f->allowlist, .rights = &rights,
                                     .leases = f->leases, .owner = &owner, .pmu = f->pmu };
                const AllowEntry *entries[4];
                Refusal refusal = {};
                Refusal why = {};
                int r;

                assert_int_equal(leases_acquire(f->leases, &holder, core0_and_package1,
                                                ELEMENTSOF(core0_and_package1), NULL, NULL, &why), 0);
                r = batch_check(&ctx, cases[i].ops, cases[i].n, entries, &refusal);
                if (r != cases[i].code || (r != 0 && refusal.op_index != cases[i].op_index))
                        fail_msg("case %zu: got %d at op %" PRIi64 " (%s)", i, r, refusal.op_index, refusal.reason);
                fake_pmu_free(f);
        }
}

/* A write's reply carries only the bits the caller wrote, never the bits the register kept
 * (another PMU user's enable bits, an INT bit someone else set). */
static void test_write_reply(void **state) {
        FakePmu *f = fake_pmu_new(1, 2, 1, NULL, 0, NULL, 0);
        static const char owner = 'o';
        static const uint32_t cpu0[] = { 0 };
        LeaseHolder holder = { .owner = &owner, .role = ROLE_USER, .uid = 1000, .pid = 1 };
        Rights rights = { .role = ROLE_USER, .may_read = true, .may_write = true };
        BatchContext ctx = { .machine = f->machine, .allowlist = f->allowlist, .rights = &rights,
                             .leases = f->leases, .owner = &owner, .pmu = f->pmu };
        RegOp ops[] = {
                { .kind = REG_OP_MSR_WRITE, .target = 0, .reg = 0x38F, .value = 0x3, .mask = UINT64_MAX },
                { .kind = REG_OP_MSR_WRITE, .target = 0, .reg = 0x186, .value = UINT64_MAX, .mask = UINT64_MAX },
                { .kind = REG_OP_MSR_WRITE, .target = 0, .reg = 0x187, .value = 0x43003C, .mask = 0xFF },
        };
        const AllowEntry *entries[ELEMENTSOF(ops)];
        Refusal refusal;
        int32_t status[ELEMENTSOF(ops)];
        uint64_t values[ELEMENTSOF(ops)];
        Refusal why = {};

        assert_int_equal(leases_acquire(f->leases, &holder, cpu0, 1, NULL, NULL, &why), 0);
        fake_set_msr(f, 0, 0x38F, UINT64_C(1) << 40);
        fake_set_msr(f, 0, 0x186, UINT64_C(1) << 20);
        fake_set_msr(f, 0, 0x187, 0x4300D1);
        assert_int_equal(batch_check(&ctx, ops, ELEMENTSOF(ops), entries, &refusal), 0);
        batch_execute(&ctx, f->backend, ops, entries, ELEMENTSOF(ops), status, values);
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                assert_int_equal(status[i], 0);
        assert_int_equal(values[0], 0x3);
        assert_int_equal(values[1], 0xFFC7FFFF);
        assert_int_equal(values[2], 0x3C);
        fake_pmu_free(f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_refusal_table),
                cmocka_unit_test(test_scope_cpus),
                cmocka_unit_test(test_energy_table),
                cmocka_unit_test(test_energy_list),
                cmocka_unit_test(test_energy_batches),
                cmocka_unit_test(test_write_reply),
                cmocka_unit_test(test_check_range),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: leases on an in-memory machine (acquire, preemption, release and restore, the
 * anchors of core and package registers and units, and ending leases a right no longer allows)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "error.h"
#include "fake_pmu.h"
#include "macro.h"
#include "pmu/batch.h"

/* Two sockets of two cores of two threads: package 0 is CPUs 0,1,4,5 (core 0: 0 and 4, core
 * 1: 1 and 5), package 1 is 2,3,6,7. Unit 0 is package 0's, unit 1 package 1's, the package
 * of unit 2 is unknown. */
static const int32_t unit_packages[] = { 0, 1, -1 };

static const char owner_a = 'a', owner_b = 'b';

typedef struct Ended {
        const void *owner[16];
        uint32_t cpu[16];
        size_t n;
} Ended;

static void on_ended(const void *owner, uint32_t cpu, void *userdata) {
        Ended *e = userdata;

        assert_true(e->n < ELEMENTSOF(e->cpu));
        e->owner[e->n] = owner;
        e->cpu[e->n++] = cpu;
}

static FakePmu *machine(Ended *ended) {
        FakePmu *f = fake_pmu_new(2, 2, 2, NULL, 0, unit_packages, ELEMENTSOF(unit_packages));

        if (ended) {
                *ended = (Ended) {};
                leases_set_ended_hook(f->leases, on_ended, ended);
        }
        return f;
}

static int take(FakePmu *f, const void *owner, Role role, const uint32_t *cpus, size_t n) {
        LeaseHolder holder = { .owner = owner, .role = role, .uid = owner == &owner_a ? 1000 : 1001 };
        Refusal why = {};

        return leases_acquire(f->leases, &holder, cpus, n, NULL, NULL, &why);
}

/* Checks and runs one op as owner (an admin, so only leases decide); returns the check's code
 * or the op's status. */
static int run(FakePmu *f, const void *owner, RegOp op) {
        Rights rights = { .role = ROLE_ADMIN, .may_read = true, .may_write = true, .may_admin = true };
        BatchContext ctx = { .machine = f->machine, .allowlist = f->allowlist, .rights = &rights,
                             .leases = f->leases, .owner = owner, .pmu = f->pmu };
        const AllowEntry *entries[1];
        Refusal refusal;
        int32_t status;
        uint64_t value;
        int r;

        r = batch_check(&ctx, &op, 1, entries, &refusal);
        if (r != 0)
                return r;
        batch_execute(&ctx, f->backend, &op, entries, 1, &status, &value);
        return status;
}

static RegOp msr_write(uint32_t cpu, uint32_t reg, uint64_t value) {
        return (RegOp) { .kind = REG_OP_MSR_WRITE, .target = cpu, .reg = reg, .value = value,
                         .mask = UINT64_MAX };
}

static RegOp pci_write(uint32_t unit, uint32_t offset, uint64_t value) {
        return (RegOp) { .kind = REG_OP_PCI_WRITE, .target = unit, .reg = offset, .value = value,
                         .mask = UINT64_MAX };
}

static void test_acquire_release_restore(void **state) {
        Ended ended;
        FakePmu *f = machine(&ended);
        static const uint32_t cpus[] = { 0, 1 };

        fake_set_msr(f, 0, 0x186, 0x11);
        fake_set_msr(f, 0, 0xC1, 0x22);
        assert_int_equal(take(f, &owner_a, ROLE_USER, cpus, 2), 0);
        assert_int_equal(take(f, &owner_b, ROLE_USER, cpus + 1, 1), PROTO_E_BUSY);
        assert_int_equal(take(f, &owner_a, ROLE_USER, cpus + 1, 1), 0);        /* one's own again: fine */
        assert_int_equal(run(f, &owner_a, msr_write(0, 0x186, 0x43003C)), 0);
        assert_int_equal(run(f, &owner_a, msr_write(0, 0xC1, 0x1000)), 0);
        assert_int_equal(fake_msr(f, 0, 0x186), 0x43003C);
        assert_int_equal(run(f, &owner_b, msr_write(0, 0x186, 1)), PROTO_E_NO_LEASE);

        assert_int_equal(leases_release(f->leases, &owner_a, cpus, 1), 1);
        assert_int_equal(fake_msr(f, 0, 0x186), 0x11);          /* controls restored */
        assert_int_equal(fake_msr(f, 0, 0xC1), 0);              /* counters zeroed */
        assert_int_equal(ended.n, 1);
        assert_ptr_equal(ended.owner[0], &owner_a);
        assert_int_equal(ended.cpu[0], 0);
        assert_true(leases_held_by(f->leases, 1, &owner_a));
        assert_int_equal(leases_release(f->leases, &owner_a, NULL, 0), 1);
        assert_int_equal(leases_count(f->leases), 0);
        assert_int_equal(ended.n, 2);
        fake_pmu_free(f);
}

typedef struct Preempted {
        const void *owner;
        uint32_t cpu;
        unsigned n;
} Preempted;

static void on_preempted(const void *owner, uint32_t cpu, void *userdata) {
        Preempted *p = userdata;

        p->owner = owner;
        p->cpu = cpu;
        p->n++;
}

static void test_preempt(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t cpu2[] = { 2 };
        LeaseHolder user = { .owner = &owner_b, .role = ROLE_USER, .uid = 1001 };
        Preempted p = {};
        Refusal why = {};

        fake_set_msr(f, 2, 0x186, 0x11);
        assert_int_equal(take(f, &owner_a, ROLE_MONITOR, cpu2, 1), 0);
        assert_int_equal(run(f, &owner_a, msr_write(2, 0x186, 0x4300C0)), 0);
        assert_int_equal(leases_acquire(f->leases, &user, cpu2, 1, on_preempted, &p, &why),
                         0);
        assert_int_equal(p.n, 1);
        assert_ptr_equal(p.owner, &owner_a);
        assert_int_equal(p.cpu, 2);
        assert_int_equal(fake_msr(f, 2, 0x186), 0x11);         /* restored before the user got it */
        assert_true(leases_held_by(f->leases, 2, &owner_b));
        /* a user does not preempt another user */
        assert_int_equal(take(f, &owner_a, ROLE_USER, cpu2, 1), PROTO_E_BUSY);
        fake_pmu_free(f);
}

/* The lease that keeps a holder out: another client's, never its own, never a monitor's that a
 * user would preempt; the full reason (for admins and the audit) names it. */
static void test_blocker(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t cpus[] = { 1, 2, 3 }, cpu1[] = { 1 }, cpu3[] = { 3 };
        LeaseHolder user = { .owner = &owner_b, .role = ROLE_USER, .uid = 1001, .pid = 7 };
        static const char owner_c = 'c';
        LeaseHolder monitor = { .owner = &owner_c, .role = ROLE_MONITOR, .uid = 1002, .pid = 8 };
        const Lease *blocker;
        uint32_t cpu = 0;
        Refusal why = {};

        assert_int_equal(take(f, &owner_a, ROLE_MONITOR, cpu1, 1), 0);
        assert_int_equal(take(f, &owner_a, ROLE_USER, cpu3, 1), 0);
        assert_int_equal(leases_acquire(f->leases, &user, cpu1, 1, NULL, NULL, &why), 0);
        assert_null(leases_blocker(f->leases, &user, cpu1, 1, &cpu));
        blocker = leases_blocker(f->leases, &user, cpus, ELEMENTSOF(cpus), &cpu);
        assert_ptr_equal(blocker, &f->leases->cpus[3]);
        assert_int_equal(cpu, 3);
        assert_int_equal(blocker->uid, 1000);
        /* a monitor preempts nobody */
        assert_ptr_equal(leases_blocker(f->leases, &monitor, cpu1, 1, &cpu), &f->leases->cpus[1]);
        assert_int_equal(leases_acquire(f->leases, &user, cpus, ELEMENTSOF(cpus), NULL, NULL, &why), PROTO_E_BUSY);
        assert_non_null(strstr(why.reason, "CPU 3 is leased by uid 1000"));
        fake_pmu_free(f);
}

/* A core register is one register: journaled once, under the core's first CPU, whichever
 * thread names it, and put back as soon as its holder lets go of any thread of the core. */
static void test_core_anchor(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t core0[] = { 0, 4 }, cpu4[] = { 4 };
        const Lease *anchor = &f->leases->cpus[0], *sibling = &f->leases->cpus[4];

        fake_set_msr(f, 4, FAKE_CORE_CTL, 0x5);
        assert_int_equal(take(f, &owner_a, ROLE_USER, core0, 2), 0);
        assert_int_equal(run(f, &owner_a, msr_write(4, FAKE_CORE_CTL, 0x22)), 0);
        assert_int_equal(run(f, &owner_a, msr_write(0, FAKE_CORE_CTL, 0x33)), 0);
        assert_int_equal(anchor->n_journal, 1);
        assert_int_equal(anchor->journal[0].target, 0);
        assert_int_equal(anchor->journal[0].original, 0x5);
        assert_int_equal(sibling->n_journal, 0);

        assert_int_equal(fake_msr(f, 4, FAKE_CORE_CTL), 0x33);
        assert_int_equal(leases_release(f->leases, &owner_a, cpu4, 1), 1);
        assert_int_equal(fake_msr(f, 4, FAKE_CORE_CTL), 0x5);  /* restored at once, through the anchor */
        assert_int_equal(anchor->n_journal, 0);
        assert_true(leases_held_by(f->leases, 0, &owner_a));
        /* holding one thread is not enough any more */
        assert_int_equal(run(f, &owner_a, msr_write(0, FAKE_CORE_CTL, 0x44)), PROTO_E_NO_LEASE);
        fake_pmu_free(f);
}

/* A shared register put back early and written again is journaled again: the journal of one
 * lease cannot grow without bound that way. */
static void test_journal_bound(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t cpu0[] = { 0 }, cpu4[] = { 4 };
        int r = 0;
        unsigned cycles = 0;

        assert_int_equal(take(f, &owner_a, ROLE_USER, cpu0, 1), 0);
        while (cycles < 2 * PMUGATE_LEASE_JOURNAL_MAX) {
                assert_int_equal(take(f, &owner_a, ROLE_USER, cpu4, 1), 0);
                r = run(f, &owner_a, msr_write(0, FAKE_CORE_CTL, cycles));
                if (r != 0)
                        break;
                assert_int_equal(leases_release(f->leases, &owner_a, cpu4, 1), 1);
                cycles++;
        }
        assert_int_equal(r, -ENOSPC);
        assert_int_equal(cycles, PMUGATE_LEASE_JOURNAL_MAX);
        fake_pmu_free(f);
}

/* Two holders of sibling threads: neither may write the core's register, so neither can
 * remember a value the other wrote and restore over it. */
static void test_sibling_leases(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t cpu0[] = { 0 }, cpu4[] = { 4 };

        assert_int_equal(take(f, &owner_a, ROLE_USER, cpu0, 1), 0);
        assert_int_equal(take(f, &owner_b, ROLE_USER, cpu4, 1), 0);
        assert_int_equal(run(f, &owner_a, msr_write(0, FAKE_CORE_CTL, 1)), PROTO_E_NO_LEASE);
        assert_int_equal(run(f, &owner_b, msr_write(4, FAKE_CORE_CTL, 2)), PROTO_E_NO_LEASE);
        /* thread registers stay each holder's own */
        assert_int_equal(run(f, &owner_a, msr_write(0, 0x186, 0x43003C)), 0);
        assert_int_equal(run(f, &owner_b, msr_write(4, 0x186, 0x43003C)), 0);
        fake_pmu_free(f);
}

static void test_package_anchor(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t package0[] = { 0, 1, 4, 5 }, cpu5[] = { 5 }, cpu0[] = { 0 };

        fake_set_msr(f, 0, FAKE_PKG_CTL, 0x7);
        fake_set_pci(f, 0, FAKE_IMC_BOX_CTL, 0x100);
        fake_set_pci(f, 0, 0xA0, 1234);
        assert_int_equal(take(f, &owner_a, ROLE_USER, package0, 4), 0);
        assert_int_equal(run(f, &owner_a, msr_write(5, FAKE_PKG_CTL, 0x70)), 0);
        assert_int_equal(run(f, &owner_a, pci_write(0, FAKE_IMC_BOX_CTL, 0x3)), 0);
        assert_int_equal(f->leases->cpus[5].n_journal, 0);
        /* the package register, the unit's register and its counters, all under CPU 0 */
        assert_true(f->leases->cpus[0].n_journal >= 3);

        assert_int_equal(leases_release(f->leases, &owner_a, cpu5, 1), 1);
        assert_int_equal(fake_msr(f, 0, FAKE_PKG_CTL), 0x7);
        assert_int_equal(fake_pci(f, 0, FAKE_IMC_BOX_CTL), 0x100);
        assert_int_equal(fake_pci(f, 0, 0xA0), 0);              /* the unit's counters zeroed */
        assert_int_equal(f->leases->cpus[0].n_journal, 0);

        /* the anchor itself ending restores everything it kept */
        assert_int_equal(take(f, &owner_a, ROLE_USER, cpu5, 1), 0);
        assert_int_equal(run(f, &owner_a, pci_write(0, FAKE_IMC_BOX_CTL, 0x3)), 0);
        assert_int_equal(leases_release(f->leases, &owner_a, cpu0, 1), 1);
        assert_int_equal(fake_pci(f, 0, FAKE_IMC_BOX_CTL), 0x100);
        fake_pmu_free(f);
}

/* A unit of unknown package is anchored on the machine's first online CPU, and not restored
 * when some other CPU's lease ends. */
static void test_unknown_package_anchor(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t cpus[] = { 0, 1 }, cpu1[] = { 1 }, cpu0[] = { 0 };
        uint32_t anchor;

        assert_int_equal(leases_anchor(f->leases, REG_SCOPE_PACKAGE, 2, true, &anchor), 0);
        assert_int_equal(anchor, 0);
        assert_int_equal(leases_anchor(f->leases, REG_SCOPE_PACKAGE, 1, true, &anchor), 0);
        assert_int_equal(anchor, 2);
        assert_int_equal(leases_anchor(f->leases, REG_SCOPE_CORE, 6, false, &anchor), 0);
        assert_int_equal(anchor, 2);

        fake_set_pci(f, 2, FAKE_IMC_BOX_CTL, 0x100);
        assert_int_equal(take(f, &owner_a, ROLE_ADMIN, cpus, 2), 0);
        assert_int_equal(run(f, &owner_a, pci_write(2, FAKE_IMC_BOX_CTL, 0x3)), 0);
        assert_int_equal(leases_release(f->leases, &owner_a, cpu1, 1), 1);
        assert_int_equal(fake_pci(f, 2, FAKE_IMC_BOX_CTL), 0x3);
        assert_int_equal(leases_release(f->leases, &owner_a, cpu0, 1), 1);
        assert_int_equal(fake_pci(f, 2, FAKE_IMC_BOX_CTL), 0x100);
        fake_pmu_free(f);
}

static bool below_two(const Lease *lease, uint32_t cpu, void *userdata) {
        unsigned *asked = userdata;

        (*asked)++;
        return cpu < 2;
}

static void test_end_unless(void **state) {
        Ended ended;
        FakePmu *f = machine(&ended);
        static const uint32_t mine[] = { 0, 1, 2, 3 }, theirs[] = { 6 };
        unsigned asked = 0;
        char list[32];
        CpuSet gone;

        fake_set_msr(f, 3, 0x186, 0x11);
        assert_int_equal(take(f, &owner_a, ROLE_USER, mine, 4), 0);
        assert_int_equal(take(f, &owner_b, ROLE_USER, theirs, 1), 0);
        assert_int_equal(run(f, &owner_a, msr_write(3, 0x186, 0x43003C)), 0);
        assert_int_equal(leases_end_unless(f->leases, &owner_a, NULL, below_two, &asked, &gone), 2);
        assert_int_equal(asked, 4);                             /* only owner_a's leases are asked about */
        assert_int_equal(cpuset_format(&gone, list, sizeof(list)), 0);
        assert_string_equal(list, "2-3");
        assert_int_equal(fake_msr(f, 3, 0x186), 0x11);
        assert_true(leases_held_by(f->leases, 0, &owner_a));
        assert_true(leases_held_by(f->leases, 6, &owner_b));
        assert_int_equal(ended.n, 2);
        /* only the CPUs asked about: CPU 1 is not */
        asked = 0;
        cpuset_clear(&gone);
        cpuset_add(&gone, 0);
        assert_int_equal(leases_end_unless(f->leases, &owner_a, &gone, below_two, &asked, NULL), 0);
        assert_int_equal(asked, 1);
        /* ending a lease through leases_end_cpu() is told too */
        leases_end_cpu(f->leases, 6);
        assert_int_equal(ended.n, 3);
        assert_ptr_equal(ended.owner[2], &owner_b);
        fake_pmu_free(f);
}

/* Each CPU's lease records the job that gave it; a CPU leased again keeps its first job. */
static void test_jobs_per_cpu(void **state) {
        FakePmu *f = machine(NULL);
        static const uint32_t cpus[] = { 0, 2 };
        const char *jobs[] = { "A", "B" }, *other[] = { "C", "C" };
        LeaseHolder holder = { .owner = &owner_a, .role = ROLE_USER, .uid = 1000, .jobs = jobs };
        Refusal why = {};

        assert_int_equal(leases_acquire(f->leases, &holder, cpus, 2, NULL, NULL, &why), 0);
        assert_string_equal(f->leases->cpus[0].job, "A");
        assert_string_equal(f->leases->cpus[2].job, "B");
        holder.jobs = other;
        assert_int_equal(leases_acquire(f->leases, &holder, cpus, 2, NULL, NULL, &why), 0);
        assert_string_equal(f->leases->cpus[2].job, "B");
        fake_pmu_free(f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_acquire_release_restore),
                cmocka_unit_test(test_preempt),
                cmocka_unit_test(test_blocker),
                cmocka_unit_test(test_core_anchor),
                cmocka_unit_test(test_sibling_leases),
                cmocka_unit_test(test_journal_bound),
                cmocka_unit_test(test_package_anchor),
                cmocka_unit_test(test_unknown_package_anchor),
                cmocka_unit_test(test_end_unless),
                cmocka_unit_test(test_jobs_per_cpu),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the clean state table (every writable register of every shipped allowlist has a
 * clean definition of the right kind, and enables, interrupts and freezes are off in it), the
 * restore and write values built from it, the one restore of a journaled register, and the
 * overflow status a lease end clears, on the simulator
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/sim/backend-sim.h"
#include "macro.h"
#include "pmu/allowlist.h"
#include "pmu/clean.h"
#include "pmu/leases.h"
#include "pmu/pmu.h"

#define BIT(n) (UINT64_C(1) << (n))
#define EVTSEL_INT BIT(20)
#define EVTSEL_EN BIT(22)
#define EVTSEL_USR BIT(16)
#define EVTSEL_OS BIT(17)
#define FIXED_PMI_0 UINT64_C(0x8)
#define IMC_BOX_FRZ BIT(8)

DEFINE_TRIVIAL_CLEANUP_FUNC(Allowlist *, allowlist_free);

static const char *const models[] = { "skx", "clx", "icx", "spr", "zen4", "zen5" };

static const CleanTable *table(const char *key) {
        CpuModel m = { .key = key };

        return clean_table_for(&m);
}

static Allowlist *load(const char *key) {
        Allowlist *a = NULL;

        assert_int_equal(allowlist_load_for_model(getenv("PMUGATE_ALLOWLIST_DIR"), key, &a), 0);
        return a;
}

static void check_register(const CleanTable *t, const AllowEntry *e, uint32_t reg) {
        const CleanReg *c = clean_find(t, reg, e->pci);
        bool writable = e->write_mask != 0;

        if (e->flags & ALLOW_FLAG_COUNTER) {
                assert_non_null(c);
                assert_int_equal(c->kind, CLEAN_COUNTER);
        } else if (e->flags & ALLOW_FLAG_ACTION) {
                assert_non_null(c);
                assert_int_equal(c->kind, CLEAN_ACTION);
        } else if (writable) {
                /* Unknown is never "whatever it holds": every register a client may write has
                 * a clean value. */
                if (!c)
                        fail_msg("%s 0x%x (%s) has no clean state", e->pci ? "offset" : "MSR", reg, e->name);
                assert_int_equal(c->kind, CLEAN_CONTROL);
                /* Clean means nothing enabled, interrupting or frozen. */
                assert_int_equal(c->value & c->off, 0);
        } else if (c)
                /* read-only here: a status register, or a write-1 one the allowlist does not
                 * let clients write (AMD's PerfCntrGlobalStatusSet) */
                assert_true(c->kind == CLEAN_STATUS || c->kind == CLEAN_ACTION);
}

static void test_every_allowlist_register(void **state) {
        (void) state;
        for (size_t m = 0; m < ELEMENTSOF(models); m++) {
                _cleanup_(allowlist_freep) Allowlist *a = load(models[m]);
                const CleanTable *t = table(models[m]);

                assert_non_null(t);
                for (size_t i = 0; i < a->n_msr; i++)
                        for (uint32_t reg = a->msr[i].first; reg <= a->msr[i].last; reg++)
                                check_register(t, &a->msr[i], reg);
                for (size_t i = 0; i < a->n_pci; i++)
                        for (uint32_t off = a->pci[i].first; off <= a->pci[i].last; off += a->pci[i].width)
                                check_register(t, &a->pci[i], off);
                /* A status register is cleared through an action register the allowlist serves
                 * (or, in an uncore box, by writing its own bits). */
                for (size_t i = 0; i < t->n_regs; i++) {
                        const CleanReg *c = &t->regs[i];

                        if (c->kind != CLEAN_STATUS)
                                continue;
                        assert_true(c->off != 0);
                        if (c->pci)
                                assert_int_equal(c->clear_reg, c->first);
                        else {
                                const AllowEntry *clr = allowlist_find_msr(a, c->clear_reg);

                                assert_non_null(clr);
                                assert_true(clr->flags & ALLOW_FLAG_ACTION);
                        }
                }
        }
}

static void test_off_bits(void **state) {
        (void) state;
        /* The enables, interrupt and freeze bits pmu-registers.md names are off when clean. */
        for (size_t m = 0; m < ELEMENTSOF(models); m++) {
                const CleanTable *t = table(models[m]);
                bool amd = strncmp(models[m], "zen", 3) == 0;
                const CleanReg *evtsel = clean_find(t, amd ? 0xC0010204 : 0x188, false);

                assert_non_null(evtsel);
                assert_int_equal(evtsel->off & (EVTSEL_INT | EVTSEL_EN), EVTSEL_INT | EVTSEL_EN);
                if (amd) {
                        assert_int_equal(clean_find(t, 0xC0010232, false)->off & EVTSEL_EN, EVTSEL_EN);
                        assert_int_equal(clean_find(t, 0xC0010246, false)->off & EVTSEL_EN, EVTSEL_EN);
                        assert_int_equal(clean_find(t, 0xC0010203, false)->kind, CLEAN_COUNTER);
                        continue;
                }
                assert_int_equal(clean_find(t, 0x38D, false)->off & FIXED_PMI_0, FIXED_PMI_0);
                assert_int_equal(clean_find(t, 0x38E, false)->clear_reg, 0x390);
        }
        assert_int_equal(clean_find(table("skx"), 0xF4, true)->off & IMC_BOX_FRZ, IMC_BOX_FRZ);
        assert_null(clean_find(table("spr"), 0xF4, true));
        assert_null(table("zen3"));
}

static void test_write_value(void **state) {
        _cleanup_(allowlist_freep) Allowlist *spr = load("spr");
        _cleanup_(allowlist_freep) Allowlist *zen = load("zen4");
        const AllowEntry *evtsel = allowlist_find_msr(spr, 0x186), *fixed = allowlist_find_msr(spr, 0x38D);
        const AllowEntry *amd = allowlist_find_msr(zen, 0xC0010200), *gctl = allowlist_find_msr(spr, 0x38F);
        const CleanTable *t = table("spr");
        uint64_t user = 0x3C | EVTSEL_USR | EVTSEL_OS | EVTSEL_EN;

        (void) state;
        /* INT left by a third party never ends up beside the client's EN ... */
        assert_int_equal(clean_write_value(evtsel, clean_find(t, 0x186, false), EVTSEL_INT | 0x3C, user, UINT64_MAX, 0),
                         user);
        assert_int_equal(clean_write_value(amd, clean_find(table("zen4"), 0xC0010200, false), EVTSEL_INT, EVTSEL_EN,
                                           EVTSEL_EN, 0), EVTSEL_EN);
        /* ... while a masked write keeps the client's own other bits */
        assert_int_equal(clean_write_value(evtsel, clean_find(t, 0x186, false), EVTSEL_INT | 0x3C, EVTSEL_EN,
                                           EVTSEL_EN, 0), 0x3C | EVTSEL_EN);
        /* and a foreign counter's bits (the watchdog's field of FIXED_CTR_CTRL, PMI included) */
        assert_int_equal(clean_write_value(fixed, clean_find(t, 0x38D, false), 0xB0 | FIXED_PMI_0, 0x3, 0xF, 0xF0),
                         0xB3);
        assert_int_equal(clean_write_value(gctl, clean_find(t, 0x38F, false), BIT(33) | 0xF, 0x1, 0x1, BIT(33)),
                         BIT(33) | 0xF);
        assert_true(clean_write_needs_current(evtsel, clean_find(t, 0x186, false), EVTSEL_EN, 0));
        assert_false(clean_write_needs_current(evtsel, clean_find(t, 0x186, false), UINT64_MAX, 0));
        /* Without a clean definition the bits outside the mask keep their current value. */
        assert_int_equal(clean_write_value(evtsel, NULL, EVTSEL_INT, EVTSEL_EN, EVTSEL_EN, 0), EVTSEL_INT | EVTSEL_EN);
}

static void test_restore_value(void **state) {
        _cleanup_(allowlist_freep) Allowlist *spr = load("spr");
        _cleanup_(allowlist_freep) Allowlist *skx = load("skx");
        const AllowEntry *evtsel = allowlist_find_msr(spr, 0x186), *pmc = allowlist_find_msr(spr, 0xC1);
        const AllowEntry *fixed = allowlist_find_msr(spr, 0x38D);
        const AllowEntry *box = allowlist_find_pci(skx, 0x8086, 0x2042, 0xF4);
        const CleanTable *t = table("spr");

        (void) state;
        /* The journal's event and umask come back; EN and a third party's INT do not. */
        assert_int_equal(clean_restore_value(evtsel, clean_find(t, 0x186, false), EVTSEL_EN, EVTSEL_INT | 0x11, 0),
                         0x11);
        assert_int_equal(clean_restore_value(pmc, clean_find(t, 0xC1, false), 77, 0x4141, 0), 0);
        /* The watchdog's field stays as it is now, the holder's fields are stopped. */
        assert_int_equal(clean_restore_value(fixed, clean_find(t, 0x38D, false), 0xB3, 0x3, 0xF0), 0xB0);
        /* An uncore box is not left frozen. */
        assert_non_null(box);
        assert_int_equal(clean_restore_value(box, clean_find(table("skx"), 0xF4, true), IMC_BOX_FRZ,
                                             IMC_BOX_FRZ | 0x3, 0), 0x3);
}

typedef struct Sim {
        Machine *machine;
        Backend *backend;
        Allowlist *allowlist;
        Pmu *pmu;
} Sim;

static void sim_open_config(Sim *s, const char *model, const char *config_text) {
        char path[] = "/tmp/test-clean-XXXXXX";
        int fd = -1;

        if (config_text) {
                fd = mkstemp(path);
                assert_true(fd >= 0);
                assert_int_equal(write(fd, config_text, strlen(config_text)), (ssize_t) strlen(config_text));
        }
        assert_int_equal(backend_sim_new(model, config_text ? path : NULL, &s->machine, &s->backend), 0);
        if (fd >= 0) {
                (void) unlink(path);
                (void) close(fd);
        }
        s->allowlist = load(model);
        assert_int_equal(pmu_new(s->backend, s->machine, s->allowlist, &s->pmu), 0);
}

static void sim_open(Sim *s, const char *model) {
        sim_open_config(s, model, NULL);
}

static void sim_close(Sim *s) {
        pmu_free(s->pmu);
        backend_free(s->backend);
        allowlist_free(s->allowlist);
        machine_free(s->machine);
}

static uint64_t rd(Sim *s, uint32_t cpu, uint32_t reg) {
        uint64_t v;

        assert_int_equal(backend_msr_read(s->backend, cpu, reg, &v), 0);
        return v;
}

static void test_status_amd(void **state) {
        Sim s;

        (void) state;
        sim_open(&s, "zen4");
        /* perf holds PMC2 on CPU 1 */
        assert_int_equal(backend_msr_write(s.backend, 1, 0xC0010204, 0x76 | EVTSEL_EN), 0);
        pmu_detect_all(s.pmu);
        assert_int_equal(backend_msr_write(s.backend, 1, MSR_AMD_GLOBAL_STATUS_CLR + 1, 0x3F), 0);
        assert_int_equal(rd(&s, 1, MSR_AMD_GLOBAL_STATUS), 0x3F);
        assert_int_equal(clean_cpu_status(s.pmu, 1), 0);
        assert_int_equal(rd(&s, 1, MSR_AMD_GLOBAL_STATUS), 0x4);
        sim_close(&s);
}

static void test_status_intel(void **state) {
        uint64_t all = 0xFF | UINT64_C(0xF) << 32 | BIT(48);
        Sim s;

        (void) state;
        sim_open(&s, "spr");
        /* the NMI watchdog's fixed counter 1 on CPU 0 */
        assert_int_equal(backend_msr_write(s.backend, 0, MSR_IA32_FIXED_CTR_CTRL, 0xB0), 0);
        pmu_detect_all(s.pmu);
        assert_int_equal(backend_msr_write(s.backend, 0, MSR_IA32_PERF_GLOBAL_STATUS_SET, all | BIT(59)), 0);
        assert_int_equal(clean_cpu_status(s.pmu, 0), 0);
        /* its overflow bit stays, and so does "counters frozen", which no holder can cause */
        assert_int_equal(rd(&s, 0, MSR_IA32_PERF_GLOBAL_STATUS), BIT(33) | BIT(59));
        assert_int_equal(pmu_own_status_bits(s.pmu, 0), all & ~BIT(33));
        sim_close(&s);
}

/* Lets CTR0 of the first IMC channel overflow: DCLK counted from just below its wrap. */
static uint64_t imc_box_overflow(Sim *s) {
        uint64_t status = 0;

        assert_true(s->machine->n_units > 0);
        assert_int_equal(backend_pci_write(s->backend, 0, 0xA0, 8, (UINT64_C(1) << 48) - 1000), 0);
        assert_int_equal(backend_pci_write(s->backend, 0, 0xD8, 4, EVTSEL_EN), 0);
        for (int i = 0; i < 1000 && !(status & 1); i++) {
                struct timespec ts = { .tv_nsec = 1000 * 1000 };

                (void) nanosleep(&ts, NULL);
                assert_int_equal(backend_pci_read(s->backend, 0, 0xF8, 4, &status), 0);
        }
        return status;
}

static void test_status_imc_box(void **state) {
        uint64_t status;
        Sim s;

        (void) state;
        /* without the kernel's uncore_imc events the box is the daemon's to clean */
        sim_open_config(&s, "skx", "[imc]\nkernel_pmu = no\n");
        assert_false(pmu_unit_foreign(s.pmu, 0));
        assert_int_equal(imc_box_overflow(&s) & 1, 1);
        assert_int_equal(clean_unit_status(s.pmu, 0), 0);
        assert_int_equal(backend_pci_read(s.backend, 0, 0xF8, 4, &status), 0);
        assert_int_equal(status & 1, 0);
        sim_close(&s);
}

static void test_status_kernel_imc_box(void **state) {
        uint64_t status;
        Sim s;

        (void) state;
        /* the daemon's own uncore_imc events make every channel the kernel's: never cleaned */
        sim_open(&s, "skx");
        assert_true(pmu_unit_foreign(s.pmu, 0));
        assert_int_equal(imc_box_overflow(&s) & 1, 1);
        assert_int_equal(clean_unit_status(s.pmu, 0), 0);
        assert_int_equal(backend_pci_read(s.backend, 0, 0xF8, 4, &status), 0);
        assert_int_equal(status & 1, 1);
        sim_close(&s);
}

static void test_restore_entry(void **state) {
        const AllowEntry *e;
        LeaseEntry entry = { .target = 2, .reg = 0x187, .original = 0x11, .width = 8 };
        Sim s;

        (void) state;
        sim_open(&s, "icx");
        e = allowlist_find_msr(s.allowlist, 0x187);
        /* the holder's EN and a third party's INT are in the register at the lease's end */
        assert_int_equal(backend_msr_write(s.backend, 2, 0x187, 0x3C | EVTSEL_INT | EVTSEL_EN), 0);
        assert_int_equal(clean_restore_entry(s.backend, s.pmu, s.pmu->clean, &entry, e), 0);
        assert_int_equal(rd(&s, 2, 0x187), 0x11);
        entry = (LeaseEntry) { .target = 2, .reg = 0xC2, .original = 0x4141, .width = 8, .flags = ALLOW_FLAG_COUNTER };
        assert_int_equal(backend_msr_write(s.backend, 2, 0x4C2, 12345), 0);
        assert_int_equal(clean_restore_entry(s.backend, s.pmu, s.pmu->clean, &entry,
                                             allowlist_find_msr(s.allowlist, 0xC2)), 0);
        assert_int_equal(rd(&s, 2, 0xC2), 0);
        sim_close(&s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_allowlist_register),
                cmocka_unit_test(test_off_bits),
                cmocka_unit_test(test_write_value),
                cmocka_unit_test(test_restore_value),
                cmocka_unit_test(test_status_amd),
                cmocka_unit_test(test_status_intel),
                cmocka_unit_test(test_status_imc_box),
                cmocka_unit_test(test_status_kernel_imc_box),
                cmocka_unit_test(test_restore_entry),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

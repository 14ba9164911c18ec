/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The in-memory machine of the unit tests
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fake_pmu.h"

static const char allowlist_text[] =
        "models spr\n"
        "msr 0x0C1-0x0C8    0xFFFFFFFFFFFF      thread   core-pmu   IA32_PMC  counter\n"
        "msr 0x186-0x18D    0xFFC7FFFF          thread   core-pmu   IA32_PERFEVTSEL\n"
        "msr 0x1A6          0x3FFFFFFFFF        thread   offcore    MSR_OFFCORE_RSP_0\n"
        "msr 0x309-0x30C    0xFFFFFFFFFFFF      thread   core-pmu   IA32_FIXED_CTR  counter\n"
        "msr 0x38D          0x3333              thread   core-pmu   IA32_FIXED_CTR_CTRL\n"
        "msr 0x38F          0x1000F000000FF     thread   core-pmu   IA32_PERF_GLOBAL_CTRL\n"
        "msr 0x611          0x0                 package  rapl       MSR_PKG_ENERGY_STATUS\n"
        "msr 0x6F0          0xFF                core     core-pmu   TEST_CORE_CTL\n"
        "msr 0x6F8          0xFF                package  core-pmu   TEST_PKG_CTL\n"
        /* deliberately thread: the built-in energy list's core scope must win */
        "msr 0xC001029A     0x0                 thread   rapl       AMD_CORE_ENERGY_STAT\n"
        "pci 8086:2042  0x0A0-0x0B8  8  0x0                 package  uncore-imc  IMC_PMON_CTR  counter\n"
        "pci 8086:2042  0x0D8-0x0E4  4  0xFFC6FFFF          package  uncore-imc  IMC_PMON_CTL\n"
        "pci 8086:2042  0x0F4        4  0x103               package  uncore-imc  IMC_PMON_BOX_CTL\n";

typedef struct Register {
        bool pci;
        uint32_t target;
        uint32_t reg;
        uint64_t value;
} Register;

typedef struct MemoryBackend {
        Backend base;
        Register *regs;
        size_t n_regs;
        size_t writes;
} MemoryBackend;

/* Core and package registers are one register for all the CPUs that share them, as on the
 * hardware: kept under the first online CPU of the core or package. */
static uint32_t physical_cpu(const Machine *m, uint32_t cpu, uint32_t reg) {
        uint32_t first = cpu;

        if (reg == FAKE_CORE_CTL)
                (void) machine_scope_anchor(m, REG_SCOPE_CORE, cpu, false, &first);
        else if (reg == FAKE_PKG_CTL || reg == FAKE_PKG_ENERGY)
                (void) machine_scope_anchor(m, REG_SCOPE_PACKAGE, cpu, false, &first);
        return first;
}

static Register *find(MemoryBackend *b, bool pci, uint32_t target, uint32_t reg, bool create) {
        Register *grown;

        if (!pci)
                target = physical_cpu(b->base.machine, target, reg);

        for (size_t i = 0; i < b->n_regs; i++)
                if (b->regs[i].pci == pci && b->regs[i].target == target && b->regs[i].reg == reg)
                        return &b->regs[i];
        if (!create)
                return NULL;
        grown = realloc(b->regs, (b->n_regs + 1) * sizeof(Register));
        assert_non_null(grown);
        b->regs = grown;
        b->regs[b->n_regs] = (Register) { .pci = pci, .target = target, .reg = reg };
        return &b->regs[b->n_regs++];
}

static int msr_read(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret) {
        const Register *r = find((MemoryBackend *) b, false, cpu, reg, false);

        if (cpu >= b->machine->n_cpus || !b->machine->cpus[cpu].online)
                return -ENXIO;
        *ret = r ? r->value : 0;
        return 0;
}

static int msr_write(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        if (cpu >= b->machine->n_cpus || !b->machine->cpus[cpu].online)
                return -ENXIO;
        find((MemoryBackend *) b, false, cpu, reg, true)->value = value;
        ((MemoryBackend *) b)->writes++;
        return 0;
}

static int pci_read(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret) {
        const Register *r = find((MemoryBackend *) b, true, unit, offset, false);

        *ret = r ? r->value : 0;
        return 0;
}

static int pci_write(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        find((MemoryBackend *) b, true, unit, offset, true)->value = value;
        ((MemoryBackend *) b)->writes++;
        return 0;
}

static void memory_free(Backend *b) {
        free(((MemoryBackend *) b)->regs);
        free(b);
}

static const BackendVTable memory_vtable = {
        .name = "memory",
        .msr_read = msr_read,
        .msr_write = msr_write,
        .pci_read = pci_read,
        .pci_write = pci_write,
        .free = memory_free,
};

uint32_t fake_cpu(const FakePmu *f, unsigned socket, unsigned core, unsigned thread) {
        return thread * f->sockets * f->cores + socket * f->cores + core;
}

FakePmu *fake_pmu_new(unsigned sockets, unsigned cores, unsigned threads, const uint32_t *offline,
                      size_t n_offline, const int32_t *unit_packages, size_t n_units) {
        char path[] = "/tmp/test-fake-pmu-XXXXXX", reason[256] = "";
        FakePmu *f = calloc(1, sizeof(*f));
        MemoryBackend *b = calloc(1, sizeof(*b));
        Machine *m = machine_new();
        unsigned line = 0;
        int fd;

        assert_non_null(f);
        assert_non_null(b);
        assert_non_null(m);
        *f = (FakePmu) { .sockets = sockets, .cores = cores, .threads = threads, .machine = m };

        (void) snprintf(m->vendor, sizeof(m->vendor), "GenuineIntel");
        m->family = 6;
        m->model = 0x8F;
        m->cpu_model = cpu_model_by_key("spr");
        m->n_cpus = sockets * cores * threads;
        m->cpus = calloc(m->n_cpus, sizeof(MachineCpu));
        assert_non_null(m->cpus);
        for (unsigned t = 0; t < threads; t++)
                for (unsigned s = 0; s < sockets; s++)
                        for (unsigned c = 0; c < cores; c++)
                                m->cpus[fake_cpu(f, s, c, t)] = (MachineCpu) {
                                        .present = true, .online = true, .package = (int32_t) s,
                                        .core = (int32_t) c, .thread = t,
                                };
        for (size_t i = 0; i < n_offline; i++)
                m->cpus[offline[i]] = (MachineCpu) { .present = true, .package = -1, .die = -1, .core = -1 };
        m->n_units = (uint32_t) n_units;
        m->units = calloc(n_units ?: 1, sizeof(MachineUnit));
        assert_non_null(m->units);
        for (size_t i = 0; i < n_units; i++) {
                m->units[i] = (MachineUnit) { .vendor = 0x8086, .device = FAKE_IMC_DEVICE,
                                              .package = unit_packages[i], .config_size = 4096 };
                (void) snprintf(m->units[i].bdf, sizeof(m->units[i].bdf), "0000:%02x:0a.2",
                                (unsigned) (0x10 + i) & 0xffU);
        }
        machine_update_summary(m);

        b->base = (Backend) { .vtable = &memory_vtable, .machine = m };
        f->backend = &b->base;

        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, allowlist_text, sizeof(allowlist_text) - 1),
                         (ssize_t) sizeof(allowlist_text) - 1);
        assert_int_equal(close(fd), 0);
        if (allowlist_parse_file(path, &f->allowlist, &line, reason, sizeof(reason)) < 0)
                fail_msg("test allowlist, line %u: %s", line, reason);
        (void) unlink(path);

        assert_int_equal(pmu_new(f->backend, m, f->allowlist, &f->pmu), 0);
        assert_int_equal(leases_new(NULL, f->backend, m, &f->leases), 0);
        leases_set_restore(f->leases, f->allowlist, f->pmu, NULL);
        return f;
}

void fake_pmu_free(FakePmu *f) {
        if (!f)
                return;
        leases_free(f->leases);
        pmu_free(f->pmu);
        allowlist_free(f->allowlist);
        backend_free(f->backend);
        machine_free(f->machine);
        free(f);
}

uint64_t fake_msr(FakePmu *f, uint32_t cpu, uint32_t reg) {
        const Register *r = find((MemoryBackend *) f->backend, false, cpu, reg, false);

        return r ? r->value : 0;
}

void fake_set_msr(FakePmu *f, uint32_t cpu, uint32_t reg, uint64_t value) {
        find((MemoryBackend *) f->backend, false, cpu, reg, true)->value = value;
}

uint64_t fake_pci(FakePmu *f, uint32_t unit, uint32_t offset) {
        const Register *r = find((MemoryBackend *) f->backend, true, unit, offset, false);

        return r ? r->value : 0;
}

void fake_set_pci(FakePmu *f, uint32_t unit, uint32_t offset, uint64_t value) {
        find((MemoryBackend *) f->backend, true, unit, offset, true)->value = value;
}

size_t fake_writes(const FakePmu *f) {
        return ((const MemoryBackend *) f->backend)->writes;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the simulator tests
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/sim/sim-regs.h"
#include "macro.h"
#include "sim_test_util.h"

/* Writes text to an anonymous memory file and returns a path that opens it. */
static int text_file(const char *text, char *path, size_t size) {
        int fd;

        fd = memfd_create("sim-config", MFD_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        (void) snprintf(path, size, "/proc/self/fd/%d", fd);
        return fd;
}

int sim_test_try(const char *model, const char *config_text, char **ret_log) {
        char path[64], *log = NULL;
        int config_fd = -1, log_fd, saved_stderr, r;
        Machine *m = NULL;
        Backend *b = NULL;
        off_t n;

        if (config_text)
                config_fd = text_file(config_text, path, sizeof(path));

        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        log_fd = memfd_create("sim-log", MFD_CLOEXEC);
        assert_true(saved_stderr >= 0 && log_fd >= 0);
        assert_true(dup2(log_fd, STDERR_FILENO) >= 0);

        r = backend_sim_new(model, config_text ? path : NULL, &m, &b);

        fflush(stderr);
        assert_true(dup2(saved_stderr, STDERR_FILENO) >= 0);
        close(saved_stderr);
        n = lseek(log_fd, 0, SEEK_END);
        log = calloc(1, (size_t) n + 1);
        assert_non_null(log);
        assert_int_equal(pread(log_fd, log, (size_t) n, 0), n);
        close(log_fd);
        if (config_fd >= 0)
                close(config_fd);

        if (r >= 0) {
                b->vtable->free(b);
                machine_free(m);
        }
        if (ret_log)
                *ret_log = log;
        else
                free(log);
        return r;
}

SimTest sim_test_new(const char *model, const char *config_text) {
        SimTest t = {};
        char path[64];
        int fd = -1, r;

        if (config_text)
                fd = text_file(config_text, path, sizeof(path));
        r = backend_sim_new(model, config_text ? path : NULL, &t.machine, &t.backend);
        if (fd >= 0)
                close(fd);
        assert_int_equal(r, 0);
        assert_non_null(t.backend);
        assert_non_null(t.machine);
        return t;
}

void sim_test_free(SimTest *t) {
        if (t->backend)
                t->backend->vtable->free(t->backend);
        t->machine = machine_free(t->machine);
        t->backend = NULL;
}

void sim_test_bundled_path(const char *name, char *buf, size_t size) {
        const char *dir = getenv("PMUGATE_SIM_CONFIG_DIR");

        (void) snprintf(buf, size, "%s/%s", dir ?: "policy/sim", name);
}

uint64_t sim_rd(SimTest *t, uint32_t cpu, uint32_t reg) {
        uint64_t v = 0;

        assert_int_equal(backend_msr_read(t->backend, cpu, reg, &v), 0);
        return v;
}

void sim_wr(SimTest *t, uint32_t cpu, uint32_t reg, uint64_t value) {
        assert_int_equal(backend_msr_write(t->backend, cpu, reg, value), 0);
}

int sim_rd_err(SimTest *t, uint32_t cpu, uint32_t reg) {
        uint64_t v = 0;

        return backend_msr_read(t->backend, cpu, reg, &v);
}

int sim_wr_err(SimTest *t, uint32_t cpu, uint32_t reg, uint64_t value) {
        return backend_msr_write(t->backend, cpu, reg, value);
}

void sim_advance(SimTest *t, uint64_t cycles) {
        assert_int_equal(backend_sim_advance(t->backend, cycles), 0);
}

double sim_test_hz(SimTest *t) {
        return t->machine->cpu_model->nominal_mhz * 1e6;
}

static unsigned gp_counters(SimTest *t) {
        const CpuModel *m = t->machine->cpu_model;

        /* Skylake-era cores have 8 GP counters per thread with SMT off */
        return m->pmu_version < 5 && !t->machine->smt ? 8 : m->gp_counters;
}

void sim_measure(SimTest *t, const uint32_t *cpus, size_t n_cpus, const uint64_t *evtsels, size_t n_events,
                 uint64_t cycles, SimSample *ret_samples) {
        const CpuModel *model = t->machine->cpu_model;
        unsigned n_gp = gp_counters(t), n_fixed = model->fixed_counters;
        uint64_t global = (SIM_BIT(n_gp) - 1) | ((SIM_BIT(n_fixed) - 1) << GLOBAL_FIXED_SHIFT);
        uint64_t fixed_all_rings = 0;

        assert_true(n_events <= SIM_TEST_EVENTS_MAX);
        if (model->perf_metrics > 0)
                global |= SIM_BIT(GLOBAL_PERF_METRICS_BIT);
        for (unsigned i = 0; i < n_fixed; i++)
                fixed_all_rings |= FIXED_CTRL_ENABLE_MASK << (FIXED_CTRL_FIELD_BITS * i);
        memset(ret_samples, 0, n_cpus * sizeof(SimSample));

        for (size_t first = 0, round = 0; first < n_events || round == 0; first += n_gp, round++) {
                size_t n = n_events - first < n_gp ? n_events - first : n_gp;

                for (size_t c = 0; c < n_cpus; c++) {
                        sim_wr(t, cpus[c], MSR_IA32_PERF_GLOBAL_CTRL, 0);
                        for (unsigned i = 0; i < n_gp; i++) {
                                sim_wr(t, cpus[c], MSR_IA32_PERFEVTSEL0 + i,
                                       i < n ? evtsels[first + i] | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS : 0);
                                sim_wr(t, cpus[c], MSR_IA32_A_PMC0 + i, 0);
                        }
                        sim_wr(t, cpus[c], MSR_IA32_FIXED_CTR_CTRL, fixed_all_rings);
                        /* the kernel's order: SLOTS first, then PERF_METRICS */
                        for (unsigned i = 0; i < n_fixed; i++)
                                sim_wr(t, cpus[c], MSR_IA32_FIXED_CTR0 + i, 0);
                        if (model->perf_metrics > 0)
                                sim_wr(t, cpus[c], MSR_PERF_METRICS, 0);
                        sim_wr(t, cpus[c], MSR_IA32_PERF_GLOBAL_STATUS_RESET,
                               sim_rd(t, cpus[c], MSR_IA32_PERF_GLOBAL_STATUS));
                }
                for (size_t c = 0; c < n_cpus; c++)
                        sim_wr(t, cpus[c], MSR_IA32_PERF_GLOBAL_CTRL, global);
                sim_advance(t, cycles);
                for (size_t c = 0; c < n_cpus; c++)
                        sim_wr(t, cpus[c], MSR_IA32_PERF_GLOBAL_CTRL, 0);

                for (size_t c = 0; c < n_cpus; c++) {
                        SimSample *s = &ret_samples[c];

                        for (size_t i = 0; i < n; i++)
                                s->event[first + i] = (double) sim_rd(t, cpus[c],
                                                                      MSR_IA32_PMC0 + (uint32_t) i);
                        if (round > 0)
                                continue;
                        for (unsigned i = 0; i < n_fixed; i++)
                                s->fixed[i] = (double) sim_rd(t, cpus[c], MSR_IA32_FIXED_CTR0 + i);
                        if (model->perf_metrics > 0)
                                s->perf_metrics = sim_rd(t, cpus[c], MSR_PERF_METRICS);
                }
                if (n_events == 0)
                        break;
        }
}

/* ---- The kernel's software events, opened in this process (the test's `software` driver) */

typedef struct TestKernelDriver {
        PerfDriver driver;
} TestKernelDriver;

static int kernel_open(PerfDriver *d, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                       int group, unsigned long flags) {
        struct perf_event_attr a = *attr;
        long fd;

        (void) d;
        a.size = sizeof(a);
        fd = syscall(SYS_perf_event_open, &a, (flags & PERF_FLAG_PID_CGROUP) ? cgroup_fd : pid, cpu, group,
                     flags | PERF_FLAG_FD_CLOEXEC);
        return fd < 0 ? -errno : (int) fd;
}

static ssize_t kernel_read(PerfDriver *d, int handle, void *buf, size_t size) {
        ssize_t n;

        (void) d;
        n = read(handle, buf, size);
        return n < 0 ? -errno : n;
}

static int kernel_ioctl(int handle, unsigned long request, bool group) {
        return ioctl(handle, request, group ? PERF_IOC_FLAG_GROUP : 0) < 0 ? -errno : 0;
}

static int kernel_enable(PerfDriver *d, int handle, bool group) {
        (void) d;
        return kernel_ioctl(handle, PERF_EVENT_IOC_ENABLE, group);
}

static int kernel_disable(PerfDriver *d, int handle, bool group) {
        (void) d;
        return kernel_ioctl(handle, PERF_EVENT_IOC_DISABLE, group);
}

static int kernel_export_fd(PerfDriver *d, int handle) {
        int fd;

        (void) d;
        fd = fcntl(handle, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

static void kernel_close(PerfDriver *d, int handle) {
        (void) d;
        close(handle);
}

static void kernel_free(PerfDriver *d) {
        free(d);
}

static const PerfDriverVTable kernel_vtable = {
        .name = "test-kernel",
        .open = kernel_open,
        .read = kernel_read,
        .enable = kernel_enable,
        .disable = kernel_disable,
        .export_fd = kernel_export_fd,
        .close = kernel_close,
        .free = kernel_free,
};

PerfDriver *sim_test_kernel_driver(void) {
        TestKernelDriver *k = calloc(1, sizeof(*k));

        assert_non_null(k);
        k->driver.vtable = &kernel_vtable;
        return &k->driver;
}

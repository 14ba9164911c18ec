/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device backend: the kernel's /dev/cpu/N/msr files and PCI sysfs config files, opened once at
 * start-up while the daemon still has CAP_SYS_RAWIO. The msr driver checks that capability only
 * at open, and the PCI config file judges reads beyond 64 bytes by the opener's credentials,
 * so these fds keep working after privileges are dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "log.h"
#include "pmugate-limits.h"

typedef struct DevBackend {
        Backend base;
        int *msr_fds;   /* by CPU number; -EBADF for CPUs not online, -ENODEV without the driver */
        uint32_t n_msr_fds;
        int *pci_fds;   /* by unit index; -ENODEV when its file could not be opened */
        uint32_t n_pci_fds;
} DevBackend;

static DevBackend *dev(Backend *b) {
        return (DevBackend *) b;
}

static int dev_msr_read(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret_value) {
        DevBackend *d = dev(b);
        uint64_t v;
        ssize_t n;

        if (cpu >= d->n_msr_fds || d->msr_fds[cpu] < 0)
                return cpu < d->n_msr_fds && d->msr_fds[cpu] == -ENODEV ? -ENODEV : -ENXIO;
        n = pread(d->msr_fds[cpu], &v, sizeof(v), (off_t) reg);
        if (n < 0)
                return negative_errno();
        if (n != sizeof(v))
                return -EIO;
        *ret_value = v;
        return 0;
}

static int dev_msr_write(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        DevBackend *d = dev(b);
        ssize_t n;

        if (cpu >= d->n_msr_fds || d->msr_fds[cpu] < 0)
                return cpu < d->n_msr_fds && d->msr_fds[cpu] == -ENODEV ? -ENODEV : -ENXIO;
        n = pwrite(d->msr_fds[cpu], &value, sizeof(value), (off_t) reg);
        if (n < 0)
                return negative_errno();
        return n == sizeof(value) ? 0 : -EIO;
}

/* One dword of config space. errno means something only when the call failed: a short
 * transfer (the kernel's config file ends at the device's config size, and a read past it
 * returns fewer bytes, or none, without an error) leaves errno at whatever an earlier call
 * set, and is EIO of its own. */
static int pci_dword_read(int fd, off_t offset, uint32_t *ret_value) {
        ssize_t n = pread(fd, ret_value, sizeof(*ret_value), offset);

        if (n < 0)
                return negative_errno();
        return n == sizeof(*ret_value) ? 0 : -EIO;
}

static int pci_dword_write(int fd, off_t offset, uint32_t value) {
        ssize_t n = pwrite(fd, &value, sizeof(value), offset);

        if (n < 0)
                return negative_errno();
        return n == sizeof(value) ? 0 : -EIO;
}

/* Config space has no 64-bit access: an 8-byte register is two dwords, low first, as the
 * kernel's own uncore driver reads them. */
static int dev_pci_read(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret_value) {
        DevBackend *d = dev(b);
        uint32_t lo = 0, hi = 0;
        int r;

        if (unit >= d->n_pci_fds || d->pci_fds[unit] < 0)
                return unit < d->n_pci_fds && d->pci_fds[unit] == -ENODEV ? -ENODEV : -ENXIO;
        r = pci_dword_read(d->pci_fds[unit], offset, &lo);
        if (r == 0 && width == 8)
                r = pci_dword_read(d->pci_fds[unit], (off_t) offset + 4, &hi);
        if (r < 0)
                return r;
        *ret_value = (uint64_t) hi << 32 | lo;
        return 0;
}

static int dev_pci_write(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        DevBackend *d = dev(b);
        int r;

        if (unit >= d->n_pci_fds || d->pci_fds[unit] < 0)
                return unit < d->n_pci_fds && d->pci_fds[unit] == -ENODEV ? -ENODEV : -ENXIO;
        r = pci_dword_write(d->pci_fds[unit], offset, (uint32_t) value);
        if (r == 0 && width == 8)
                r = pci_dword_write(d->pci_fds[unit], (off_t) offset + 4, (uint32_t) (value >> 32));
        return r;
}

static void dev_free(Backend *b) {
        DevBackend *d = dev(b);

        for (uint32_t i = 0; i < d->n_msr_fds; i++)
                if (d->msr_fds[i] >= 0)
                        (void) close(d->msr_fds[i]);
        for (uint32_t i = 0; i < d->n_pci_fds; i++)
                if (d->pci_fds[i] >= 0)
                        (void) close(d->pci_fds[i]);
        free(d->msr_fds);
        free(d->pci_fds);
        free(d);
}

/* The kernel's perf events count 64 bits and fold in the hardware counter's wraps itself. */
static int dev_counter_read(Backend *b, uint32_t counter, uint64_t *ret_value) {
        const Machine *m = b->machine;
        uint64_t v;
        ssize_t n;

        if (counter >= m->n_counters)
                return -ENXIO;
        if (m->counters[counter].fd < 0)
                return -ENODEV;
        n = read(m->counters[counter].fd, &v, sizeof(v));
        if (n < 0)
                return negative_errno();
        if (n != sizeof(v))
                return -EIO;
        *ret_value = v;
        return 0;
}

static const BackendVTable dev_vtable = {
        .name = "dev",
        .msr_read = dev_msr_read,
        .msr_write = dev_msr_write,
        .pci_read = dev_pci_read,
        .pci_write = dev_pci_write,
        .counter_read = dev_counter_read,
        .free = dev_free,
};

DEFINE_TRIVIAL_CLEANUP_FUNC(Backend *, backend_free);

static const char *msr_open_hint(int error) {
        switch (error) {
        case ENOENT:
        case ENODEV:
        case ENXIO:
                return "load the msr driver with 'modprobe msr' (and add it to /etc/modules-load.d)";
        case EACCES:
        case EPERM:
                return "pmugated must start as root (CAP_SYS_RAWIO) to open the msr devices";
        default:
                return "check the msr driver";
        }
}

/* The msr driver is absent, not refused: the perf path can serve without it. */
static bool msr_driver_absent(int error) {
        return error == ENOENT || error == ENODEV || error == ENXIO;
}

/* The TSC's rate from the kernel's tsc_freq_khz where the kernel exports it (its calibrated
 * tsc_khz, exact to the kHz: below 1e-6 of a GHz rate); 0 (unknown) otherwise or when the file
 * does not hold a plausible rate. */
static uint64_t dev_tsc_hz(const char *root) {
        char text[32], *end;
        unsigned long long khz;

        if (machine_read_text(root, "sys/devices/system/cpu/cpu0/tsc_freq_khz", text, sizeof(text)) < 0)
                return 0;
        errno = 0;
        khz = strtoull(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0' || khz < PMUGATE_TSC_KHZ_MIN || khz > PMUGATE_TSC_KHZ_MAX)
                return 0;
        return (uint64_t) khz * 1000U;
}

int backend_dev_new(const char *root, const Machine *m, bool msr_optional, Backend **ret) {
        _cleanup_(backend_freep) Backend *b = NULL;
        DevBackend *d;
        char path[4096];
        bool opened = false;
        int e;

        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->base = (Backend) { .vtable = &dev_vtable, .machine = m, .simulated = false };
        b = &d->base;

        d->msr_fds = malloc(sizeof(int) * (m->n_cpus ?: 1));
        d->pci_fds = malloc(sizeof(int) * (m->n_units ?: 1));
        if (!d->msr_fds || !d->pci_fds)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                d->msr_fds[cpu] = -EBADF;
        d->n_msr_fds = m->n_cpus;
        for (uint32_t u = 0; u < m->n_units; u++)
                d->pci_fds[u] = -EBADF;
        d->n_pci_fds = m->n_units;

        /* ARM has no MSRs: nothing under dev/cpu is opened, whatever a root holds there */
        if (cpu_model_is_arm(m->cpu_model)) {
                b->msr_absent = true;
                for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                        d->msr_fds[cpu] = -ENODEV;
        }
        for (uint32_t cpu = 0; cpu < m->n_cpus && !cpu_model_is_arm(m->cpu_model); cpu++) {
                if (!m->cpus[cpu].online)
                        continue;
                (void) snprintf(path, sizeof(path), "%s/dev/cpu/%" PRIu32 "/msr", root, cpu);
                d->msr_fds[cpu] = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
                if (d->msr_fds[cpu] >= 0) {
                        /* Some CPUs with an msr node and some without is no missing driver. */
                        if (b->msr_absent)
                                return log_error_errno(ENODEV, "%s opens but the msr nodes of lower CPUs are "
                                                       "missing (check the msr driver)", path);
                        opened = true;
                        continue;
                }
                e = errno;
                if (msr_optional && !opened && msr_driver_absent(e)) {
                        if (!b->msr_absent)
                                log_info("Cannot open %s (%s): no msr driver, MSR reads and writes are off",
                                         path, strerror(e));
                        b->msr_absent = true;
                        d->msr_fds[cpu] = -ENODEV;
                        continue;
                }
                return log_error_errno(e, "Cannot open %s (%s)", path, msr_open_hint(e));
        }
        for (uint32_t u = 0; u < m->n_units; u++) {
                (void) snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s/config", root, m->units[u].bdf);
                d->pci_fds[u] = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
                if (d->pci_fds[u] >= 0)
                        continue;
                e = errno;
                if (msr_optional && msr_driver_absent(e)) {
                        log_info("Cannot open %s (%s): its uncore registers are off", path, strerror(e));
                        d->pci_fds[u] = -ENODEV;
                        continue;
                }
                return log_error_errno(e, "Cannot open %s (pmugated must start as root)", path);
        }

        b->tsc_hz = dev_tsc_hz(root);
        *ret = TAKE_PTR(b);
        return 0;
}

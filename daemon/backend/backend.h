/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backends execute single register accesses that policy has already approved. 'dev' uses the
 * kernel's msr and PCI sysfs files opened at start-up; 'sim' is a simulated PMU. Both report
 * errors the way the kernel does: -EIO for a missing register or a refused write, -ENXIO for
 * an offline CPU, -EPERM when the kernel forbids writes.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/machine.h"

typedef struct Backend Backend;

typedef struct BackendVTable {
        const char *name;
        int (*msr_read)(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret_value);
        int (*msr_write)(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value);
        /* width is 4 or 8 bytes; an 8-byte access is two dwords, low first */
        int (*pci_read)(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret_value);
        int (*pci_write)(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value);
        /* a package counter of the machine (Machine.counters), by index */
        int (*counter_read)(Backend *b, uint32_t counter, uint64_t *ret_value);
        /* A simulated PMU only: the PERFEVTSEL encodings (event, umask, edge, cmask) it counts,
         * up to max into ret; returns how many there are. NULL for hardware, which counts all. */
        size_t (*modelled_events)(Backend *b, uint64_t *ret, size_t max);
        void (*free)(Backend *b);
} BackendVTable;

struct Backend {
        const BackendVTable *vtable;
        const Machine *machine;
        bool simulated;
        /* The msr driver is not there (no /dev/cpu/N/msr): MSR ops fail with -ENODEV. Only a
         * backend opened for the perf path may be so (backend_dev_new(), msr_optional). */
        bool msr_absent;
        /* A simulator's kernel lockdown ("integrity", "confidentiality"); NULL: none, or for the
         * dev backend the kernel's, read from its lockdown file. */
        const char *lockdown;
        /* The TSC's rate in Hz, so that clients can turn TSC ticks read beside their counts into
         * seconds; 0 when unknown (docs/PROTOCOL.md, hello "tsc_hz"). */
        uint64_t tsc_hz;
};

static inline int backend_msr_read(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret_value) {
        return b->vtable->msr_read(b, cpu, reg, ret_value);
}
static inline int backend_msr_write(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        return b->vtable->msr_write(b, cpu, reg, value);
}
static inline int backend_pci_read(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret_value) {
        return b->vtable->pci_read(b, unit, offset, width, ret_value);
}
static inline int backend_pci_write(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        return b->vtable->pci_write(b, unit, offset, width, value);
}

static inline int backend_counter_read(Backend *b, uint32_t counter, uint64_t *ret_value) {
        return b->vtable->counter_read ? b->vtable->counter_read(b, counter, ret_value) : -ENODEV;
}

Backend *backend_free(Backend *b);

/* Opens /dev/cpu/N/msr for every online CPU and the config file of every unit under root.
 * Logs what could not be opened, with what to do about it, and fails; with msr_optional (the
 * counters may go through perf) a missing msr driver (no CPU has its msr node) or a missing PCI
 * file is logged and its ops fail with -ENODEV instead, and msr_absent says the driver is
 * missing. Some CPUs with an msr node and some without still fail. */
int backend_dev_new(const char *root, const Machine *m, bool msr_optional, Backend **ret);

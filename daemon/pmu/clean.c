/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The restore of a journaled register and the clearing of overflow status, through the backend
 */
#include <errno.h>
#include <inttypes.h>

#include "log.h"
#include "pmu/clean.h"
#include "pmu/lease-entry.h"
#include "pmu/pmu-uncore.h"
#include "pmu/pmu.h"

int clean_restore_entry(Backend *b, const Pmu *p, const CleanTable *t, const LeaseEntry *e, const AllowEntry *a) {
        const CleanReg *c = clean_find(t, e->reg, e->pci);
        uint64_t current = 0, keep = 0, value;
        const char *holder = p ? pmu_uncore_owner(p, e->pci, e->target, e->reg) : NULL;
        int r;

        /* A box or counter the kernel holds is never a client's, whatever a journal says. */
        if (holder) {
                log_notice("Not restoring %s 0x%" PRIx32 " of %s %" PRIu32 ": it is held by %s",
                           e->pci ? "offset" : "MSR", e->reg, e->pci ? "PCI unit" : "CPU", e->target, holder);
                return 0;
        }
        /* Counters need no read: their current value is not kept. */
        if (!(a->flags & ALLOW_FLAG_COUNTER) && !(c && c->kind == CLEAN_COUNTER)) {
                r = e->pci ? backend_pci_read(b, e->target, e->reg, a->width, &current)
                           : backend_msr_read(b, e->target, e->reg, &current);
                if (r < 0)
                        return r;
                if (p && !e->pci)
                        keep = pmu_foreign_bits(p, e->target, e->reg);
        }
        value = clean_restore_value(a, c, current, e->original, keep);
        return e->pci ? backend_pci_write(b, e->target, e->reg, a->width, value)
                      : backend_msr_write(b, e->target, e->reg, value);
}

static int clear_status(const Pmu *p, const CleanReg *c, bool pci, uint32_t target, unsigned width, uint64_t own) {
        uint64_t status;
        int r;

        r = pci ? backend_pci_read(p->backend, target, c->first, width, &status)
                : backend_msr_read(p->backend, target, c->first, &status);
        if (r < 0)
                return r;
        status &= own & c->off;
        if (status == 0)
                return 0;
        r = pci ? backend_pci_write(p->backend, target, c->clear_reg, width, status)
                : backend_msr_write(p->backend, target, c->clear_reg, status);
        if (r < 0)
                return log_warning_errno(r, "Cannot clear overflow status 0x%" PRIx64 " of %s %" PRIu32, status,
                                         pci ? "PCI unit" : "CPU", target);
        return 0;
}

int clean_cpu_status(const Pmu *p, uint32_t cpu) {
        const CleanTable *t = p->clean;

        if (!t || cpu >= p->machine->n_cpus || !p->machine->cpus[cpu].online)
                return 0;
        for (size_t i = 0; i < t->n_regs; i++) {
                const CleanReg *c = &t->regs[i];

                /* The clear register must be one the allowlist serves: what it does not list,
                 * the daemon does not write either. */
                if (c->pci || c->kind != CLEAN_STATUS || !allowlist_find_msr(p->allowlist, c->clear_reg))
                        continue;
                return clear_status(p, c, false, cpu, 8, pmu_own_status_bits(p, cpu));
        }
        return 0;
}

int clean_unit_status(const Pmu *p, uint32_t unit) {
        const CleanTable *t = p->clean;
        const MachineUnit *u;
        int first = 0;

        if (!t || unit >= p->machine->n_units || pmu_unit_foreign(p, unit))
                return 0;
        u = &p->machine->units[unit];
        for (size_t i = 0; i < t->n_regs; i++) {
                const CleanReg *c = &t->regs[i];
                const AllowEntry *e;
                int r;

                if (!c->pci || c->kind != CLEAN_STATUS)
                        continue;
                e = allowlist_find_pci(p->allowlist, u->vendor, u->device, c->first);
                if (!e)
                        continue;
                r = clear_status(p, c, true, unit, e->width, UINT64_MAX);
                if (r < 0 && first == 0)
                        first = r;
        }
        return first;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batch check and execution
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "batch.h"
#include "error.h"
#include "macro.h"

_printf_(4, 5) static int refuse(BatchRefusal *ret, int code, size_t index, const char *fmt, ...) {
        va_list ap;

        ret->code = code;
        ret->op_index = index;
        va_start(ap, fmt);
        (void) vsnprintf(ret->reason, sizeof(ret->reason), fmt, ap);
        va_end(ap);
        return code;
}

static int check_msr(const Machine *m, const Allowlist *a, const RegOp *op, size_t i, const AllowEntry **cache,
                     BatchRefusal *ret) {
        const MachineCpu *cpu = machine_cpu(m, op->target);
        const AllowEntry *e = *cache;
        const char *never = never_list_lookup(op->reg);

        if (!cpu)
                return refuse(ret, PROTO_E_NO_SUCH_CPU, i, "op %zu: CPU %" PRIu32 " does not exist (CPUs 0-%" PRIu32 ")",
                              i, op->target, m->n_cpus - 1);
        /* Consecutive ops usually touch the same range; skip the search then. */
        if (!e || op->reg < e->first || op->reg > e->last)
                e = allowlist_find_msr(a, op->reg);
        if (never)
                return refuse(ret, PROTO_E_REG_FORBIDDEN, i,
                              "op %zu: MSR 0x%" PRIx32 " (%s) is on the built-in never-list", i, op->reg, never);
        if (!e)
                return refuse(ret, PROTO_E_REG_NOT_ALLOWED, i,
                              "op %zu: MSR 0x%" PRIx32 " is not on the allowlist for this CPU model", i, op->reg);
        if (op->kind == REG_OP_MSR_WRITE && e->write_mask == 0)
                return refuse(ret, PROTO_E_READ_ONLY, i, "op %zu: MSR 0x%" PRIx32 " (%s) is read-only", i, op->reg,
                              e->name);
        *cache = e;
        return 0;
}

static int check_pci(const Machine *m, const Allowlist *a, const RegOp *op, size_t i, BatchRefusal *ret) {
        const MachineUnit *u;
        const AllowEntry *e;

        if (op->target >= m->n_units)
                return refuse(ret, PROTO_E_NO_SUCH_UNIT, i, "op %zu: PCI unit %" PRIu32 " does not exist (%" PRIu32 " units)",
                              i, op->target, m->n_units);
        u = &m->units[op->target];
        e = allowlist_find_pci(a, u->vendor, u->device, op->reg);
        if (!e || (op->reg - e->first) % e->width != 0)
                return refuse(ret, PROTO_E_REG_NOT_ALLOWED, i,
                              "op %zu: offset 0x%" PRIx32 " of unit %" PRIu32 " (%04x:%04x) is not on the allowlist", i,
                              op->reg, op->target, u->vendor, u->device);
        if (op->kind == REG_OP_PCI_WRITE && e->write_mask == 0)
                return refuse(ret, PROTO_E_READ_ONLY, i, "op %zu: offset 0x%" PRIx32 " (%s) of unit %" PRIu32 " is read-only",
                              i, op->reg, e->name, op->target);
        return 0;
}

int batch_check(const Machine *m, const Allowlist *a, const Rights *rights, const RegOp *ops, size_t n_ops,
                const AllowEntry **entries, BatchRefusal *ret_refusal) {
        const AllowEntry *cache = NULL;
        int r;

        for (size_t i = 0; i < n_ops; i++) {
                const RegOp *op = &ops[i];

                if (reg_op_is_write(op) ? !rights->may_write : !rights->may_read)
                        return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, i, "op %zu: %s", i, rights->reason);

                if (reg_op_is_pci(op)) {
                        r = check_pci(m, a, op, i, ret_refusal);
                        if (r == 0)
                                entries[i] = allowlist_find_pci(a, m->units[op->target].vendor,
                                                                m->units[op->target].device, op->reg);
                } else {
                        r = check_msr(m, a, op, i, &cache, ret_refusal);
                        entries[i] = cache;
                }
                if (r != 0)
                        return r;
        }
        return 0;
}

static uint64_t width_mask(unsigned width) {
        return width >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * width)) - 1;
}

static int op_read(Backend *b, const RegOp *op, const AllowEntry *e, uint64_t *ret) {
        if (reg_op_is_pci(op))
                return backend_pci_read(b, op->target, op->reg, e->width, ret);
        return backend_msr_read(b, op->target, op->reg, ret);
}

static int op_write(Backend *b, const RegOp *op, const AllowEntry *e, uint64_t value) {
        if (reg_op_is_pci(op))
                return backend_pci_write(b, op->target, op->reg, e->width, value);
        return backend_msr_write(b, op->target, op->reg, value);
}

void batch_execute(Backend *b, const RegOp *ops, const AllowEntry *const *entries, size_t n_ops,
                   int32_t *status, uint64_t *values) {
        for (size_t i = 0; i < n_ops; i++) {
                const RegOp *op = &ops[i];
                const AllowEntry *e = entries[i];
                uint64_t old = 0, full = width_mask(e->width), mask = e->write_mask & op->mask, value;
                int r = 0;

                if (!reg_op_is_write(op)) {
                        r = op_read(b, op, e, &value);
                } else {
                        /* Bits outside the mask keep their current value; a mask covering the
                         * whole register needs no read. */
                        if ((mask & full) != full)
                                r = op_read(b, op, e, &old);
                        value = (old & ~mask) | (op->value & mask);
                        if (r == 0)
                                r = op_write(b, op, e, value);
                }
                status[i] = r;
                values[i] = r == 0 ? value : 0;
        }
}

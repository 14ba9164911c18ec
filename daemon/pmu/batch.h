/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batches: the whole batch is checked against rights, machine, allowlist, the caller's scope,
 * leases and foreign counters before any register is touched; then every op runs in order
 * with its own status.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "backend/backend-choice.h"
#include "backend/backend.h"
#include "backend/machine.h"
#include "message.h"
#include "pmu/allowlist.h"
#include "pmu/leases.h"
#include "pmu/pmu.h"
#include "policy/policy.h"
#include "policy/scope.h"
#include "refusal.h"

typedef struct BatchContext {
        const Machine *machine;
        const Allowlist *allowlist;
        const Rights *rights;
        const Scope *scope;             /* NULL: every CPU */
        bool package_read_shared;       /* package registers readable without the whole package */
        bool energy_read_shared;        /* energy registers readable by users without their CPUs */
        Leases *leases;
        const void *owner;              /* the client, as lease holder */
        const Pmu *pmu;
        /* How this node programs counters: under perf (or none) no register is written, and a
         * batch with a write is refused before anything runs. NULL: by MSR. */
        const BackendChoice *choice;
} BatchContext;

/* Returns 0 when every op may run, filling entries[i] with the allowlist entry of op i, or a
 * positive ProtoError with ret_refusal describing the first refused op. */
int batch_check(const BatchContext *ctx, const RegOp *ops, size_t n_ops, const AllowEntry **entries,
                Refusal *ret_refusal);

/* The same for ops first to end - 1 of a batch checked in slices: indexes (in entries, in the
 * refusal and its reason) are those of the whole batch. */
int batch_check_range(const BatchContext *ctx, const RegOp *ops, size_t first, size_t end, const AllowEntry **entries,
                      Refusal *ret_refusal);

/* Runs checked ops in order. Writes are read-modify-write under the entry's mask, narrowed by
 * the op's own mask for "wm" ops: new = (old & ~mask) | (value & mask); registers flagged
 * "action" are written as value & mask without a read. The first write of a register under a
 * lease journals its old value first. values[i] receives the value read, or for a write only
 * the bits written (value & mask): the bits kept from the register are not the caller's to
 * see. status[i] is 0 or the negative errno of that op alone. */
void batch_execute(const BatchContext *ctx, Backend *b, const RegOp *ops, const AllowEntry *const *entries,
                   size_t n_ops, int32_t *status, uint64_t *values);

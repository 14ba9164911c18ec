/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batches: the whole batch is checked against rights, machine and allowlist before any
 * register is touched; then every op runs in order with its own status.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "allowlist.h"
#include "backend.h"
#include "machine.h"
#include "message.h"
#include "policy.h"

typedef struct BatchRefusal {
        int code;         /* ProtoError */
        size_t op_index;  /* index of the first refused op (after expansion) */
        char reason[400];
} BatchRefusal;

/* Returns 0 when every op may run, filling entries[i] with the allowlist entry of op i, or a
 * positive ProtoError with ret_refusal describing the first refused op. */
int batch_check(const Machine *m, const Allowlist *a, const Rights *rights, const RegOp *ops, size_t n_ops,
                const AllowEntry **entries, BatchRefusal *ret_refusal);

/* Runs checked ops in order. Writes are read-modify-write under the entry's mask, narrowed by
 * the op's own mask for "wm" ops:
 * new = (old & ~mask) | (value & mask); values[i] receives the value read, or the value
 * written. status[i] is 0 or the negative errno of that op alone. */
void batch_execute(Backend *b, const RegOp *ops, const AllowEntry *const *entries, size_t n_ops,
                   int32_t *status, uint64_t *values);

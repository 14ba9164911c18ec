/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A monitoring session's repeated writes folded into counts: the first batch of each pattern
 * (its CPUs and registers) is audited, its repeats are counted and reported once at the end
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate-limits.h"

typedef struct AuditFold {
        uint64_t patterns[PMUGATE_AUDIT_FOLD_PATTERNS_MAX];    /* hashes of the audited ones */
        size_t n_patterns;
        uint64_t folded_batches;        /* repeats not audited one by one */
        uint64_t folded_writes;         /* the register writes in them */
} AuditFold;

/* Whether a write batch of this pattern (the audit summary of its CPUs and registers) is to be
 * audited now: true the first time the pattern appears, and for every batch once
 * PMUGATE_AUDIT_FOLD_PATTERNS_MAX patterns are known (an agent that keeps writing new things is
 * audited in full). false: a repeat, counted with its writes. */
bool audit_fold_first(AuditFold *f, const char *cpus, const char *regs, uint64_t writes);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A monitoring session's repeated writes folded into counts: the first batch of each pattern
 * (its CPUs and registers) is audited, its repeats are counted and reported at the session's end
 * (and hourly in a long session)
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
        uint64_t since_usec;            /* the first of them, on CLOCK_MONOTONIC */
} AuditFold;

/* Whether a write batch of this pattern (the audit summary of its CPUs and registers) is to be
 * audited now: true the first time the pattern appears, and for every batch once
 * PMUGATE_AUDIT_FOLD_PATTERNS_MAX patterns are known (an agent that keeps writing new things is
 * audited in full). false: a repeat, counted with its writes. */
bool audit_fold_first(AuditFold *f, const char *cpus, const char *regs, uint64_t writes,
                      uint64_t now_usec);

/* Whether the repeats counted since since_usec are due to be reported (at least one, counted for
 * PMUGATE_AUDIT_FOLD_REPORT_USEC); the caller reports them and calls audit_fold_reported(). */
bool audit_fold_report_due(const AuditFold *f, uint64_t now_usec);
void audit_fold_reported(AuditFold *f);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A monitoring session's repeated writes folded into counts
 */
#include "audit-fold.h"

/* FNV-1a over both summaries, with a separator so that "0-1","2" and "0","-12" differ. */
static uint64_t pattern_hash(const char *cpus, const char *regs) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (const char *p = cpus; *p; p++)
                h = (h ^ (unsigned char) *p) * 0x100000001b3ULL;
        h = (h ^ 0xffU) * 0x100000001b3ULL;
        for (const char *p = regs; *p; p++)
                h = (h ^ (unsigned char) *p) * 0x100000001b3ULL;
        return h;
}

bool audit_fold_first(AuditFold *f, const char *cpus, const char *regs, uint64_t writes,
                      uint64_t now_usec) {
        uint64_t h = pattern_hash(cpus, regs);

        for (size_t i = 0; i < f->n_patterns; i++)
                if (f->patterns[i] == h) {
                        if (f->folded_batches++ == 0)
                                f->since_usec = now_usec;
                        f->folded_writes += writes;
                        return false;
                }
        if (f->n_patterns < PMUGATE_AUDIT_FOLD_PATTERNS_MAX)
                f->patterns[f->n_patterns++] = h;
        return true;
}

bool audit_fold_report_due(const AuditFold *f, uint64_t now_usec) {
        return f->folded_batches > 0 && now_usec - f->since_usec >= PMUGATE_AUDIT_FOLD_REPORT_USEC;
}

void audit_fold_reported(AuditFold *f) {
        f->folded_batches = 0;
        f->folded_writes = 0;
}

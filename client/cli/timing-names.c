/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: naming blocks and IPs. Placeholder until the symbol and disassembly layer
 * lands: every name unknown, said why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/timing-names.h"

struct TimingNamer {
        int unused;
};

int timing_namer_new(TimingNamer **ret) {
        *ret = calloc(1, sizeof(TimingNamer));
        return *ret ? 0 : -ENOMEM;
}

TimingNamer *timing_namer_free(TimingNamer *n) {
        free(n);
        return NULL;
}

void timing_namer_offset(TimingNamer *n, const TimingModule *m, uint64_t offset, TimingName *ret) {
        *ret = (TimingName) { .instructions = -1, .unnamed_reason = "no symbol reader in this build" };
}

void timing_namer_block(TimingNamer *n, const TimingModule *m, const TimingBlock *b, TimingName *ret) {
        timing_namer_offset(n, m, b->end, ret);
}

int timing_namer_symbol(TimingNamer *n, const TimingModule *m, const char *symbol, uint64_t *ret_lo,
                        uint64_t *ret_hi) {
        return -ENOENT;
}

int timing_namer_listing(TimingNamer *n, const TimingModule *m, const TimingBlock *b, char **ret) {
        *ret = strdup("  (no disassembler in this build)\n");
        return *ret ? 0 : -ENOMEM;
}

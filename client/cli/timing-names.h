/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: naming blocks and IPs (function, source line, instructions) and listing a
 * block's instructions, from the files the recorded process mapped
 */
#pragma once

#include <stdint.h>

#include "cli/timing-output.h"
#include "timing/timing-blocks.h"

typedef struct TimingNamer TimingNamer;

int timing_namer_new(TimingNamer **ret);
/* NULL-safe; returns NULL. */
TimingNamer *timing_namer_free(TimingNamer *n);
static inline void timing_namer_freep(TimingNamer **n) {
        *n = timing_namer_free(*n);
}

/* The function, source line and instruction count of block b of module m (NULL: unmapped). */
void timing_namer_block(TimingNamer *n, const TimingModule *m, const TimingBlock *b, TimingName *ret);

/* The function and source line of file offset offset of module m. */
void timing_namer_offset(TimingNamer *n, const TimingModule *m, uint64_t offset, TimingName *ret);

/* The file offsets [*ret_lo, *ret_hi) of symbol (a function, or "function+0x12" for the one
 * address) in module m. Returns 0, or -ENOENT when m has no such symbol. */
int timing_namer_symbol(TimingNamer *n, const TimingModule *m, const char *symbol, uint64_t *ret_lo,
                        uint64_t *ret_hi);

/* Block b's instructions, one a line ("  0x1170  mov eax, dword ptr [rdx + rax*4]"), in a new
 * string; or the reason there is none (the file is gone, not x86-64, stripped of nothing).
 * Returns 0 or -ENOMEM. */
int timing_namer_listing(TimingNamer *n, const TimingModule *m, const TimingBlock *b, char **ret);

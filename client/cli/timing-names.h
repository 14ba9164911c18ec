/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: naming blocks and IPs (function, source line, instruction count) and listing
 * a block's instructions, from the files the recorded processes mapped (client/timing's
 * libdwfl symbols and capstone disassembly)
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

/* The function and source line of file offset offset of module m (NULL: no mapping; offset is
 * then a run-time address). */
void timing_namer_offset(TimingNamer *n, const TimingModule *m, uint64_t offset, TimingName *ret);

/* The same for block b's start, its file addresses and its instruction count. */
void timing_namer_block(TimingNamer *n, const TimingModule *m, const TimingBlock *b, TimingName *ret);

/* Block b's instructions, one a line ("    11fd  mov eax, dword ptr [rax + rdi*4]", file
 * addresses as objdump shows them), or a line saying why there are none (the file is gone,
 * stripped of its code, another architecture), in a new string. Returns 0 or -ENOMEM. */
int timing_namer_listing(TimingNamer *n, const TimingModule *m, const TimingBlock *b, char **ret);

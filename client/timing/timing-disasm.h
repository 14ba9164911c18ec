/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: a block's instructions, read from the ELF file through libelf and decoded
 * by capstone (x86-64 or AArch64, by the file's e_machine; Intel syntax on x86, as perf's
 * brstackinsn shows it through xed). The file is the user's: a range it does not hold, or
 * longer than TIMING_DISASM_BYTES_MAX, is refused with a reason.
 */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate-limits.h"

typedef struct TimingInsn {
        uint64_t address;               /* file address, as the range was given */
        uint8_t size;
        char mnemonic[32];
        char operands[160];
} TimingInsn;

typedef struct TimingDisasm {
        TimingInsn *insns;
        size_t n;
        /* the last instruction begins exactly at the range's end (a block's branch): false
         * when an instruction runs across end, so the range is no block of this code */
        bool ends_at_end;
        char reason[160];               /* why refused; "" on success */
} TimingDisasm;

/* Decodes the instructions of elf that begin in [start, end] (file addresses, end the
 * address of the last one: a block's branch; end - start below TIMING_DISASM_BYTES_MAX) into
 * *ret. The bytes come from the executable section holding start, or where the file has no
 * section headers, its PT_LOAD segment. Returns 0; -ERANGE (range empty or too long),
 * -ENOENT (no code of the file there), -EOPNOTSUPP (another architecture), -EBADMSG (bytes
 * that decode to no instruction before end), -ENOMEM: each with ret->reason. Call
 * timing_disasm_done() after either. */
int timing_disasm(Elf *elf, uint64_t start, uint64_t end, TimingDisasm *ret);

void timing_disasm_done(TimingDisasm *d);

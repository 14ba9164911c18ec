/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: blocks and IPs named per file. The analysis keys them by file offset; each
 * file is placed, for libdwfl, where its first mapping was, so that a file offset becomes the
 * run-time address the symbols and the disassembler take.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/timing-names.h"
#include "macro.h"
#include "timing/timing-disasm.h"
#include "timing/timing-symbols.h"

typedef struct Placed {
        const TimingModule *module;
        TimingSymbols *symbols;         /* NULL: the file could not be placed (reason) */
        const char *reason;
} Placed;

struct TimingNamer {
        Placed *placed;
        size_t n_placed;
};

int timing_namer_new(TimingNamer **ret) {
        *ret = calloc(1, sizeof(TimingNamer));
        return *ret ? 0 : -ENOMEM;
}

TimingNamer *timing_namer_free(TimingNamer *n) {
        if (!n)
                return NULL;
        for (size_t i = 0; i < n->n_placed; i++)
                timing_symbols_free(n->placed[i].symbols);
        free(n->placed);
        free(n);
        return NULL;
}

/* The module's symbols, made at its first use; NULL when there are none (ENOMEM included:
 * names are a nicety, the timing stands without them). */
static TimingSymbols *symbols_of(TimingNamer *n, const TimingModule *m) {
        TimingSymbols *s = NULL;
        Placed *p;

        for (size_t i = 0; i < n->n_placed; i++)
                if (n->placed[i].module == m)
                        return n->placed[i].symbols;
        p = reallocarray(n->placed, n->n_placed + 1, sizeof(*p));
        if (!p)
                return NULL;
        n->placed = p;
        if (timing_symbols_new(&s) < 0)
                return NULL;
        if (timing_symbols_add_mapping(s, &m->first) < 0)
                s = timing_symbols_free(s);
        n->placed[n->n_placed++] = (Placed) { .module = m, .symbols = s };
        return s;
}

static uint64_t run_time(const TimingModule *m, uint64_t offset) {
        return m->first.start + (offset - m->first.pgoff);
}

static void name_at(TimingNamer *n, const TimingModule *m, uint64_t offset, TimingName *ret,
                    TimingSymbol *ret_symbol) {
        TimingSymbols *s = m ? symbols_of(n, m) : NULL;
        TimingSymbol sym = {};

        *ret = (TimingName) { .instructions = -1 };
        if (!m) {
                ret->unnamed_reason = "no mapping the kernel reported covers the address";
                *ret_symbol = sym;
                return;
        }
        if (!s || timing_symbols_lookup(s, run_time(m, offset), &sym) < 0) {
                ret->unnamed_reason = "the file could not be read for its symbols";
                *ret_symbol = (TimingSymbol) {};
                return;
        }
        if (sym.function) {
                (void) snprintf(ret->function, sizeof(ret->function), "%s", sym.function);
                ret->function_offset = run_time(m, offset) - sym.function_start;
        }
        if (sym.source_file) {
                const char *slash = strrchr(sym.source_file, '/');

                (void) snprintf(ret->source, sizeof(ret->source), "%.400s:%d",
                                slash ? slash + 1 : sym.source_file, sym.line);
        }
        if (sym.module) {
                ret->has_file_address = true;
                ret->file_start = ret->file_end = sym.file_address;
        }
        ret->unnamed_reason = sym.reason;
        *ret_symbol = sym;
}

void timing_namer_offset(TimingNamer *n, const TimingModule *m, uint64_t offset, TimingName *ret) {
        TimingSymbol sym;

        name_at(n, m, offset, ret, &sym);
}

/* The block's instructions decoded, or a reason. */
static int disassemble(TimingNamer *n, const TimingModule *m, const TimingBlock *b, TimingDisasm *ret) {
        TimingSymbols *s = m ? symbols_of(n, m) : NULL;
        uint64_t bias;
        Elf *elf;

        *ret = (TimingDisasm) {};
        if (!s || timing_symbols_elf(s, run_time(m, b->start), &elf, &bias) < 0) {
                (void) snprintf(ret->reason, sizeof(ret->reason), "%s",
                                m ? "the file's code could not be read" :
                                    "no file: the code is not on disk");
                return -ENOENT;
        }
        return timing_disasm(elf, run_time(m, b->start) - bias, run_time(m, b->end) - bias, ret);
}

void timing_namer_block(TimingNamer *n, const TimingModule *m, const TimingBlock *b, TimingName *ret) {
        TimingSymbol sym;
        TimingDisasm d;

        name_at(n, m, b->start, ret, &sym);
        if (ret->has_file_address)
                ret->file_end = ret->file_start + (b->end - b->start);
        if (disassemble(n, m, b, &d) >= 0 && d.ends_at_end)
                ret->instructions = (int64_t) d.n;
        timing_disasm_done(&d);
}

int timing_namer_listing(TimingNamer *n, const TimingModule *m, const TimingBlock *b, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;
        TimingDisasm d;

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        if (disassemble(n, m, b, &d) < 0)
                fprintf(f, "    (no instructions: %s)\n", d.reason);
        else {
                for (size_t i = 0; i < d.n; i++)
                        fprintf(f, "    %8" PRIx64 "  %-8s %s\n", d.insns[i].address, d.insns[i].mnemonic,
                                d.insns[i].operands);
                if (!d.ends_at_end)
                        fprintf(f, "    (an instruction runs across the block's end: the file's code is not "
                                "what ran there)\n");
        }
        timing_disasm_done(&d);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}

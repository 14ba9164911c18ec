/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: run-time addresses named through elfutils' libdwfl, offline: the files a
 * process mapped (its MMAP2 records) are opened from disk and placed at the addresses the
 * records give, then each address gets its file, its address in the file's own terms (as
 * objdump and nm show it), its function and its source line. The records and the files are
 * the user's, not the client's: a path that is gone, not a regular file or not ELF leaves its
 * addresses unnamed with the reason; nothing is written.
 *
 * A file without symbols or line tables is looked up in libdwfl's standard debuginfo path (its
 * .gnu_debuglink beside it or under .debug/, and /usr/lib/debug by build id); elfutils built
 * with debuginfod also asks the servers in DEBUGINFOD_URLS when the user set it, as perf and
 * gdb do.
 *
 * One TimingSymbols is one address layout: a process between two execs (its threads and its
 * fork children until they exec share it). After an exec the caller starts a new one.
 */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

#include "timing/timing-record.h"

typedef struct TimingSymbols TimingSymbols;

typedef struct TimingSymbol {
        /* The mapped file's path as the mapping record names it; NULL when no mapping reported
         * covers the address or its file could not be read (reason says which). */
        const char *module;
        uint64_t bias;                  /* run-time address minus file address */
        uint64_t file_address;          /* the address in the file's own terms */
        /* NULL unless the module's symbol table names the address: stripped or not found */
        const char *function;
        uint64_t function_start;        /* run-time address of the function's first byte */
        uint64_t function_size;         /* as its symbol says (0: not given) */
        /* NULL and 0 without line tables (no DWARF in the file nor in a separate debug file) */
        const char *source_file;
        int line;
        bool stripped;                  /* the module has no symbol table: addresses only */
        /* why something above is missing ("stripped: no symbol table", "no mapping covers the
         * address", "cannot open /x: No such file or directory", ...); NULL when all is there */
        const char *reason;
} TimingSymbol;

int timing_symbols_new(TimingSymbols **ret);
/* NULL-safe; returns NULL. */
TimingSymbols *timing_symbols_free(TimingSymbols *s);

/* Reports the file of an executable mapping m (start, len, pgoff, path) at the place the
 * mapping gives it, each file once per bias. Returns 0 when the mapping's addresses are
 * named by its file from now on, 1 when they stay unnamed (the file is gone, not a regular
 * file, not ELF, not the file the mapping describes, a pseudo path such as "[vdso]"): lookups
 * in it then give the reason. Past TIMING_MAPPINGS_MAX mappings (each counts, named or not)
 * nothing more is kept and 1 is returned: a lookup outside the kept ones says that. Negative
 * errno: -ENOMEM, -EINVAL. */
int timing_symbols_add_mapping(TimingSymbols *s, const TimingMapping *m);

/* Names address. The strings live as long as s. Returns 0 (with *ret filled, even when
 * unnamed: reason says why), or -EINVAL. */
int timing_symbols_lookup(TimingSymbols *s, uint64_t address, TimingSymbol *ret);

/* The ELF of the module that address is in, and its bias (run-time address minus file
 * address), for the disassembler. The Elf lives as long as s. Returns 0, -ENOENT when no named
 * module covers address, or -EINVAL. */
int timing_symbols_elf(TimingSymbols *s, uint64_t address, Elf **ret_elf, uint64_t *ret_bias);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing's output: the hottest blocks with their cycle statistics, or the IP samples
 * per function and source line, as a table, CSV (a header line, then rows), JSON (one document)
 * or JSON Lines (the document on one line); --block's disassembly with the timing under it
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/measure-output.h"
#include "cli/timing-threads.h"
#include "timing-attr.h"
#include "timing/timing-blocks.h"

#define TIMING_NAME_MAX 256U
#define TIMING_SOURCE_MAX 512U
#define TIMING_INSN_TEXT_MAX 160U

/* What the symbols and the disassembler said of a block or IP; empty strings and -1 where
 * they could not say (a stripped file, no debug information, a file no longer there). */
typedef struct TimingName {
        char function[TIMING_NAME_MAX];
        uint64_t function_offset;               /* of the block's start, or the offset named */
        char source[TIMING_SOURCE_MAX];         /* "file.c:12" of the same */
        bool has_file_address;                  /* the file's own addresses are known: */
        uint64_t file_start, file_end;          /* the block's (or the offset's) as objdump shows them */
        int64_t instructions;                   /* in the block, -1 unknown */
        const char *unnamed_reason;             /* why function or source is empty, or NULL */
} TimingName;

/* Samples of one function or source line (IP mode). */
typedef struct TimingCount {
        char name[TIMING_SOURCE_MAX];           /* function, or "file.c:12" */
        char function[TIMING_NAME_MAX];         /* for a line: its function */
        const char *module;                     /* file path, or NULL (no mapping) */
        uint64_t samples;
} TimingCount;

typedef struct TimingReport {
        OutputFormat format;
        FILE *file;
        TimingMode mode;
        char *const *command;                   /* or NULL with -p */
        int pid;                                /* -p, else 0 */
        int exit_status;                        /* the command's, -1 unknown */
        uint64_t period;
        const char *cpu_list;
        const char *model;
        const char *model_name;
        bool simulated;
        double elapsed;                         /* seconds recorded */
        const TimingAnalysis *analysis;
        const TimingBlock *const *blocks;       /* shown: the hottest, or --block's */
        const TimingName *names;                /* of each shown block */
        size_t n_blocks;
        size_t n_blocks_total;
        const TimingCount *functions, *lines;   /* IP mode, most first */
        size_t n_functions, n_lines;
        const char *block_query;                /* --block's argument, or NULL */
        char **block_listing;                   /* --block: each shown block's instructions, or NULL */
        const char *interrupted;                /* "SIGINT", or NULL */
        const TimingThreadTally *threads;       /* samples per task, or NULL */
} TimingReport;

/* Writes the report. Returns 0 or a negative errno of the stream. */
int timing_output_write(const TimingReport *r);

/* Why a block without cycle counts has no statistics. */
const char *timing_output_no_cycles_reason(const TimingBlock *b, TimingMode mode);

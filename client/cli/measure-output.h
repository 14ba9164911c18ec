/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement output of the pmugate command line: the TopDown tree as a table (as perf prints
 * it), CSV and JSON with per-CPU and aggregate raw counts, metrics and time
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "pmugate/measure.h"
#include "pmugate/pmugate.h"

typedef enum OutputFormat {
        OUTPUT_TABLE,
        OUTPUT_CSV,
        OUTPUT_JSON,
} OutputFormat;

typedef struct OutputContext {
        FILE *file;
        OutputFormat format;
        bool per_cpu;                   /* table: a column per CPU besides the aggregate */
        bool interval;                  /* one block (table), rows (CSV) or line (JSON) per interval */
        const pmugate_info *info;
        const char *kind;               /* "topdown" or "stat" */
        const char *group;              /* group name, or "" for events alone */
        const char *description;
        unsigned level;                 /* TopDown level, 0 for stat */
        const char *cpu_list;           /* measured CPUs as a list ("0-3") */
        char *const *command;           /* wrapped command, or NULL */
        int exit_status;                /* of the command; -1 while it runs */
        bool header_written;            /* table title, CSV header */
} OutputContext;

/* Parses "table", "csv" or "json". */
int output_format_from_string(const char *s, OutputFormat *ret);

/* Writes one result: the whole run, or one interval when ctx->interval. */
int output_result(OutputContext *ctx, const pmugate_result *r);

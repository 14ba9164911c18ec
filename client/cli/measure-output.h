/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement output of the pmugate command line: the TopDown tree as a table (as perf prints
 * it) or one line per interval, CSV, and JSON (a document, JSON Lines, or one document of
 * intervals) with per-CPU and aggregate raw counts, metrics in their units and time
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "pmugate/measure.h"
#include "pmugate/pmugate.h"

/* Runs -r may repeat a command. */
#define OUTPUT_RUNS_MAX 1000U

typedef enum OutputFormat {
        OUTPUT_TABLE,
        OUTPUT_CSV,
        OUTPUT_JSONL,           /* JSON Lines, one object per result, intervals or not */
        OUTPUT_JSON_DOCUMENT,   /* one document; intervals in its "intervals" array */
} OutputFormat;

typedef struct OutputContext {
        FILE *file;
        OutputFormat format;
        bool per_cpu;                   /* table: a column per CPU besides the aggregate */
        bool aggregate_only;            /* CSV and JSON: no per-CPU rows */
        bool interval;                  /* one block (table), rows (CSV) or line (JSON) per interval */
        bool partial;                   /* -I: the result is the last interval, cut short by the end */
        const pmugate_info *info;
        const char *kind;               /* "topdown" or "stat" */
        const char *group;              /* group name, or "" for events alone */
        const char *description;
        unsigned level;                 /* TopDown level, 0 for stat */
        const char *const *drill_nodes; /* --drilldown: the node drilled into at each level from 2 */
        size_t n_drill_nodes;
        const char *cpu_list;           /* measured CPUs as a list ("0-3") */
        const char *target;             /* what is counted when not the CPUs ("process 42"), or NULL */
        char target_buf[320];
        char *const *command;           /* wrapped command, or NULL */
        int exit_status;                /* of the command; -1 while it runs */
        const char *interrupted;        /* "SIGINT" when a signal ended the run early, or NULL */
        double duration;                /* seconds asked for with -S, or 0 */
        unsigned runs;                  /* -r: results are means over this many runs (0, 1: one run) */
        const pmugate_result *stddev;   /* -r: sample standard deviations, shaped as the result */
        char group_buf[64];             /* group and description, kept past the measurement (-r) */
        char description_buf[512];
        bool header_written;            /* table title, CSV header */
        void *intervals;                /* OUTPUT_JSON_DOCUMENT: the intervals so far */
} OutputContext;

/* Parses "table", "csv", "json" (one document), "jsonl" (JSON Lines) or "json-doc" (the older
 * name of "json"), in any case. */
int output_format_from_string(const char *s, OutputFormat *ret);

/* Writes one result: the whole run, or one interval when ctx->interval. Metric values are
 * written in their unit everywhere: a fraction whose unit is "%" as a percentage. */
int output_result(OutputContext *ctx, const pmugate_result *r);

/* Ends the output: writes what OUTPUT_JSON_DOCUMENT gathered and frees it. */
int output_finish(OutputContext *ctx);

/* The value of metric i of v in the metric's unit (a "%" fraction times 100). */
double output_metric_value(const pmugate_result *r, const pmugate_values *v, size_t i);

/* How the table writes event e's count v: "1,234,567", "12.34 msec", "0.123456 J", "<not
 * counted>" for NaN, "<not modelled>" for an event the simulator has no model of. */
void output_format_event(const pmugate_result *r, size_t e, double v, char *buf, size_t size);

/* How the table writes a metric's value v, already in its unit: "40.0 %", "1.234 GB/s", "n/a". */
void output_format_metric(double v, const char *unit, char *buf, size_t size);

/* Why metric i of v is n/a (not counted long enough, unavailable, undefined), or NULL when it
 * has a value. */
const char *output_metric_na_reason(const pmugate_result *r, const pmugate_values *v, size_t i);

/* For -r: replaces the values of runs[0] by the means over the n runs and, when n > 1, those
 * of runs[1] by their sample standard deviations. The runs must have the same shape. */
int output_combine_runs(pmugate_result *const *runs, size_t n);

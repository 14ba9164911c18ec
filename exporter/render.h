/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's output: /metrics in the Prometheus text format (0.0.4) or OpenMetrics
 * 1.0, chosen by the scraper's Accept header, and the JSON summary of one job
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "model.h"

#define CONTENT_TYPE_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* Whether a scrape has per-CPU series (--per-cpu). */
typedef enum PerCpu {
        PER_CPU_AUTO,   /* on nodes of at most PMUGATE_EXPORTER_PER_CPU_AUTO_MAX CPUs */
        PER_CPU_YES,
        PER_CPU_NO,
} PerCpu;

/* Whether m's scrapes have per-CPU series under mode. */
bool render_per_cpu(const Model *m, PerCpu mode);

typedef struct RenderOptions {
        bool openmetrics;
        const char *job_label;  /* label naming the batch job ("jobid" unless configured) */
        const char *version;
        PerCpu per_cpu;
        uint64_t scrapes_text, scrapes_openmetrics;     /* /metrics answered, by format */
} RenderOptions;

/* Whether an HTTP Accept header asks for OpenMetrics more than for the text format: the
 * entry with the highest q (a missing q is 1) wins, a tie goes to OpenMetrics, and a header
 * naming neither (or missing, NULL) gets the text format. */
bool accept_prefers_openmetrics(const char *accept);

/* Whether name may be a label name of the exposition formats ([a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__"), and not one of the exporter's own labels. */
bool label_name_valid(const char *name);

int render_metrics(const Model *m, const RenderOptions *o, FILE *out);

/* render_metrics() in two parts: the body, everything the model says (the sampler renders it
 * once a period for every scrape of that period, snapshot.h), and the tail, what changes with
 * every scrape (the scrape counters) and the OpenMetrics end. */
int render_metrics_body(const Model *m, const RenderOptions *o, FILE *out);
int render_metrics_tail(const RenderOptions *o, FILE *out);

/* The job's TopDown in percent, IPC, and what it counted over its run on this node, as one JSON
 * object (docs/EXPORTER.md). */
int render_job_summary(const Model *m, const JobTotals *j, time_t now, FILE *out);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Marker runner: what `pmugate stat -m` tells the program it starts, and the per-region
 * results it makes of the file the program writes
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "marker/marker-internal.h"
#include "marker/marker-perf.h"
#include "pmugate/measure.h"

typedef struct MarkerRegionResult {
        char *name;
        size_t n_threads;
        uint32_t *threads;              /* per row: the thread's number (order of first marker use) */
        int64_t *cpus;                  /* per row: its CPU, -1 when its calls ran on several */
        uint64_t *calls;
        double *seconds;                /* inclusive time */
        uint64_t *migrated;             /* calls whose counts were dropped: the thread moved */
        uint64_t total_calls;
        pmugate_result *result;         /* a pmugate_values per row (cpu: UINT32_MAX when several) */
} MarkerRegionResult;

typedef struct MarkerReport {
        char mode[16];                  /* how the program read the counters */
        MarkerRegionResult *regions;
        size_t n_regions;
        MarkerError *errors;            /* misuse the program's markers met */
        size_t n_errors;
        uint64_t errors_dropped;
} MarkerReport;

/* Sets the environment for the program (before it is forked): the registers each start and
 * stop reads, the CPUs, the counter width and where to write the results. With PERF_METRICS,
 * makes shared_path, where every sample publishes what SLOTS and PERF_METRICS counted before
 * it reset them. A measurement whose events take turns on the counters cannot be read by
 * markers: -E2BIG, with a reason. */
int marker_runner_environment(pmugate_measure *m, const char *results_path, const char *shared_path,
                              char *reterr_reason, size_t reason_size);

/* Reads what the program wrote at results_path (-ENOENT when it wrote nothing: it did not
 * call the markers' close and did not exit normally) and computes every region's counts and
 * metrics. */
int marker_runner_report(pmugate_measure *m, const char *results_path, MarkerReport **ret,
                         char *reterr_reason, size_t reason_size);
MarkerReport *marker_report_free(MarkerReport *r);

/* The perf read mode's events: perf's software events as -e names them (one group), or a
 * measurement's perf groups where counters go through perf. */
typedef struct MarkerPerfPlan {
        MarkerPerfEvents events;
        char names[MARKER_REGS_MAX][PMUGATE_PERF_EVENT_NAME_MAX];
        int programmed[MARKER_REGS_MAX];        /* the measurement's event each counts; -1: none
                                                 * (a SLOTS leader nobody asked for) */
} MarkerPerfPlan;

/* Whether the -e list names perf's software events alone: 0 and the plan, -ENOENT when it
 * names none of them (the measurement's path then), -EINVAL with a reason when it mixes them
 * with other events (which only a measurement through perf holds together), -E2BIG with a
 * reason when it names too many. */
int marker_runner_perf_plan(const char *list, MarkerPerfPlan *ret, char *reterr_reason, size_t reason_size);

/* The perf read mode for m, a measurement whose counters go through perf (hello
 * counting.via perf): the perf groups it would open (SLOTS leading the topdown metric
 * events, the fixed events by their pseudo-encodings, a group per event set), for each thread
 * of the program. -E2BIG past MARKER_REGS_MAX events, -EOPNOTSUPP when the plan leaves out an
 * event of m, each with a reason. */
int marker_runner_perf_plan_measure(pmugate_measure *m, MarkerPerfPlan *ret, char *reterr_reason, size_t reason_size);

/* The perf read mode's environment for the program: its events and the results file. */
int marker_runner_perf_environment(const MarkerPerfPlan *plan, const char *results_path, char *reterr_reason,
                                   size_t reason_size);

/* Reads what the program wrote in the perf read mode: a column per event; the counts alone
 * (m NULL), or m's events and formulas from them. Errors as marker_runner_report(). */
int marker_runner_perf_report(const MarkerPerfPlan *plan, pmugate_measure *m, const char *results_path,
                              MarkerReport **ret, char *reterr_reason, size_t reason_size);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate stat -m and topdown -m: the measured program's environment and the region report
 */
#pragma once

#include "cli/measure-output.h"
#include "marker/marker-runner.h"
#include "pmugate/measure.h"

typedef struct MarkerRun {
        char *dir;              /* private directory of the results file */
        char *path;
        char *shared_path;      /* SLOTS/PERF_METRICS bases the runner publishes */
} MarkerRun;

/* Makes the results directory and sets the environment the program inherits (call before it
 * is forked). Prints why on failure. */
int marker_run_prepare(MarkerRun *run, pmugate_measure *m, const char *socket_path, const char *verb);

/* Reads the program's results and writes the per-region report in ctx's format; misuse the
 * markers met goes to stderr. Returns 0, or 1 when there are no results or misuse. */
int marker_run_report(MarkerRun *run, const OutputContext *ctx, pmugate_measure *m, const char *verb);

/* The same in the perf read mode: the program's threads open plan's events themselves; the
 * report has m's formulas where m is not NULL. */
int marker_run_prepare_perf(MarkerRun *run, const MarkerPerfPlan *plan, const char *socket_path,
                            const char *verb);
int marker_run_report_perf(MarkerRun *run, const OutputContext *ctx, const MarkerPerfPlan *plan,
                           pmugate_measure *m, const char *verb);

/* Removes the results file and its directory. */
void marker_run_cleanup(MarkerRun *run);

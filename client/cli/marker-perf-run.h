/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate stat -m with perf's software events: the command's threads open and read their own
 * perf events, so the runner programs nothing; it runs the command and reports its regions
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cli/measure-output.h"
#include "cli/verb-measure-args.h"
#include "marker/marker-runner.h"

/* Runs a->command with plan's events named in its environment (pinned to cpus with -C),
 * waits for it (SIGTERM passed on to it), and writes its regions to out, with the formulas of
 * m (opened, never started: the command's threads count themselves) when not NULL. Returns
 * the exit status pmugate ends with: the command's, or 1 when the report failed. */
int marker_perf_run(const MeasureArgs *a, OutputContext *out, const MarkerPerfPlan *plan, pmugate_measure *m,
                    const uint32_t *cpus, size_t n_cpus, int signal_fd);

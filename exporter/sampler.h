/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's sampler: one connection to pmugated as a monitor, one TopDown
 * measurement on every CPU nobody else programs, read on the exporter's own period
 */
#pragma once

#include <pthread.h>
#include <time.h>

#include "job-counts.h"
#include "log-limit.h"
#include "model.h"
#include "pmugate/pmugate.h"

typedef struct Sampler {
        const char *socket_path;        /* NULL: $PMUGATE_SOCKET or the default */
        unsigned level;                 /* TopDown level wanted: 1 or 2 */
        uint64_t interval_ns;           /* the sampling interval asked for (--interval) */

        pmugate *connection;
        pmugate_info *info;
        pmugate_measure *measure;
        uint32_t *measured;             /* the measurement's CPUs */
        size_t n_measured;
        unsigned measured_level;
        uint64_t poll_interval_ns;
        unsigned pending_samples;       /* samples not yet added to the totals (one turn of the
                                         * event sets is added at once) */
        bool uncounted_logged;          /* the measurement's uncounted quantities were logged */

        JobCounters jobs;               /* jobs counted by their cgroups (a perf node in job mode) */

        LogLimit log;                   /* its interval set by the caller; 0 for the default */
        char problem[512];              /* the last problem, until solved ("" for none) */
} Sampler;

/* One period: samples the measurement, learns the job map, yields CPUs users took and resumes
 * free ones, reconnects after a daemon restart. Updates m under lock. Never fails: problems
 * become CPU reasons in the model and one log line each. */
void sampler_step(Sampler *s, Model *m, pthread_mutex_t *lock);

/* Stops the measurement (the daemon restores every register) and disconnects. */
void sampler_done(Sampler *s);

/* Longest period that keeps the measurement precise (0 while none runs). */
uint64_t sampler_poll_interval(const Sampler *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's per-job counts on a node counting through perf: for each job of the job
 * map, instructions and cycles of the job's own cgroup on its CPUs (perf_open scope "job" with
 * the job's id, which the daemon gives a monitor), so that a job's series hold only its tasks
 * even on CPUs other jobs share. The kernel multiplexes these events with everyone's (they take
 * no lease, and a user's measurement is not preempted by them): each read is scaled by its
 * enabled over running time, and those times are exported, so the scale is never hidden.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "pmugate-limits.h"
#include "pmugate/pmugate.h"

/* One row's counts at the last read: enabled and running ns, cycles, instructions. */
typedef struct JobCountsLast {
        int64_t target;
        uint64_t enabled, running, cycles, instructions;
} JobCountsLast;

typedef struct JobCounter {
        char job[MODEL_JOB_MAX];
        pmugate_perf_handle *handle;
        JobCountsLast *last;    /* one per target (CPU) */
        size_t n_last;
} JobCounter;

typedef struct JobCounters {
        JobCounter items[PMUGATE_EXPORTER_CGROUP_JOBS_MAX];
        size_t n;
} JobCounters;

/* Reads every job's events and adds what each counted since the last read, scaled, to its job
 * in m (under lock). A job whose events the daemon ended (its grant ended) is dropped. Returns
 * 0, or the first error that means the connection is of no use or a notice came (the caller
 * handles it as for its measurement). */
int job_counters_read(JobCounters *jc, pmugate *c, Model *m, pthread_mutex_t *lock);

/* Counts the jobs of jm (NULL: none) by their cgroups: opens events for those not counted yet
 * (up to PMUGATE_EXPORTER_CGROUP_JOBS_MAX), closes those of jobs gone, and tells m which jobs'
 * instructions and cycles now come from their cgroup. reason gets the daemon's reason when it
 * refused a job (the job is then counted by its CPUs). Returns how many it refused. */
int job_counters_update(JobCounters *jc, pmugate *c, const pmugate_jobmap *jm, Model *m, pthread_mutex_t *lock,
                        char *reason, size_t size);

/* Closes every job's events (c NULL: the connection is gone, only frees them). */
void job_counters_close(JobCounters *jc, pmugate *c);

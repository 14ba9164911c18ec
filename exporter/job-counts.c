/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: per-job counts from the jobs' cgroups on a node counting through perf
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job-counts.h"
#include "macro.h"

/* The kernel's generic hardware events (PERF_TYPE_HARDWARE), which every core PMU maps. */
#define HW_CPU_CYCLES 0U
#define HW_INSTRUCTIONS 1U

static void counter_close(JobCounter *j, pmugate *c) {
        (void) pmugate_perf_close(c, j->handle);
        free(j->last);
        *j = (JobCounter) {};
}

static void counter_remove(JobCounters *jc, size_t i, pmugate *c) {
        counter_close(&jc->items[i], c);
        jc->items[i] = jc->items[--jc->n];
        jc->items[jc->n] = (JobCounter) {};
}

void job_counters_close(JobCounters *jc, pmugate *c) {
        while (jc->n > 0)
                counter_remove(jc, jc->n - 1, c);
}

static JobCountsLast *last_of(JobCounter *j, int64_t target) {
        for (size_t i = 0; i < j->n_last; i++)
                if (j->last[i].target == target)
                        return &j->last[i];
        return NULL;
}

/* Adds one job's interval to m: each CPU's counts since the last read, scaled by its enabled
 * over running time there (the kernel's own estimate of a multiplexed count); a CPU where the
 * events never ran in the interval adds its enabled time only, so the scale shows it. */
static void add_rows(JobCounter *j, const pmugate_perf_row *rows, size_t n, Model *m) {
        double instructions = 0, cycles = 0, enabled = 0, running = 0;

        for (size_t i = 0; i < n; i++) {
                const pmugate_perf_row *row = &rows[i];
                JobCountsLast *last = last_of(j, row->target);
                uint64_t de, dr;

                if (!last || row->group != 0 || row->status != 0 || row->n_values < 2 ||
                    row->time_enabled < last->enabled || row->time_running < last->running ||
                    row->values[0] < last->cycles || row->values[1] < last->instructions)
                        continue;
                de = row->time_enabled - last->enabled;
                dr = row->time_running - last->running;
                enabled += (double) de / 1e9;
                running += (double) dr / 1e9;
                if (dr > 0) {
                        double scale = (double) de / (double) dr;

                        cycles += (double) (row->values[0] - last->cycles) * scale;
                        instructions += (double) (row->values[1] - last->instructions) * scale;
                }
                *last = (JobCountsLast) { .target = row->target, .enabled = row->time_enabled,
                                          .running = row->time_running, .cycles = row->values[0],
                                          .instructions = row->values[1] };
        }
        model_add_job_counts(m, j->job, instructions, cycles, enabled, running);
}

int job_counters_read(JobCounters *jc, pmugate *c, Model *m, pthread_mutex_t *lock) {
        for (size_t i = 0; i < jc->n;) {
                JobCounter *j = &jc->items[i];
                const pmugate_perf_row *rows = NULL;
                size_t n = 0;
                int r;

                r = pmugate_perf_read(c, j->handle, &rows, &n);
                if (r == -ECANCELED || r == -EKEYREVOKED)
                        return r;
                if (r < 0) {
                        /* the daemon ended it with the job's grant, or cannot read it: the job's
                         * CPUs count for it again until the next update opens it anew */
                        pthread_mutex_lock(lock);
                        model_set_job_source(m, j->job, false);
                        pthread_mutex_unlock(lock);
                        counter_remove(jc, i, NULL);
                        if (r == -ECONNRESET || r == -EPIPE || r == -ENOTCONN || r == -EBADMSG || r == -EPROTO)
                                return r;
                        continue;
                }
                pthread_mutex_lock(lock);
                add_rows(j, rows, n, m);
                pthread_mutex_unlock(lock);
                i++;
        }
        return 0;
}

static bool in_jobmap(const pmugate_jobmap *jm, const char *job) {
        for (size_t i = 0; jm && i < jm->n_jobs; i++)
                if (strcmp(jm->jobs[i], job) == 0)
                        return true;
        return false;
}

static bool counted(const JobCounters *jc, const char *job) {
        for (size_t i = 0; i < jc->n; i++)
                if (strcmp(jc->items[i].job, job) == 0)
                        return true;
        return false;
}

static int counter_open(JobCounter *j, pmugate *c, const char *job, char *reason, size_t size) {
        const pmugate_perf_event events[] = {
                { .pmu = "hardware", .config = HW_CPU_CYCLES, .name = "cycles" },
                { .pmu = "hardware", .config = HW_INSTRUCTIONS, .name = "instructions" },
        };
        const pmugate_perf_group group = { .events = events, .n_events = ELEMENTSOF(events) };
        const pmugate_perf_request req = {
                .scope = PMUGATE_PERF_SCOPE_JOB, .job = job, .groups = &group, .n_groups = 1,
        };
        const int64_t *targets;
        size_t n;
        int r;

        *j = (JobCounter) {};
        r = pmugate_perf_open(c, &req, &j->handle, reason, size);
        if (r < 0)
                return r;
        n = pmugate_perf_targets(j->handle, &targets);
        j->last = calloc(n ?: 1, sizeof(JobCountsLast));
        if (!j->last) {
                counter_close(j, c);
                return -ENOMEM;
        }
        /* counts run from the open: the first interval is from zero */
        for (size_t i = 0; i < n; i++)
                j->last[i].target = targets[i];
        j->n_last = n;
        (void) snprintf(j->job, sizeof(j->job), "%s", job);
        return 0;
}

int job_counters_update(JobCounters *jc, pmugate *c, const pmugate_jobmap *jm, Model *m, pthread_mutex_t *lock,
                        char *reason, size_t size) {
        int refused = 0;

        for (size_t i = 0; i < jc->n;)
                if (!in_jobmap(jm, jc->items[i].job))
                        counter_remove(jc, i, c);
                else
                        i++;
        for (size_t i = 0; jm && i < jm->n_jobs && jc->n < ELEMENTSOF(jc->items); i++) {
                const char *job = jm->jobs[i];
                char why[400] = "";
                int r;

                if (counted(jc, job))
                        continue;
                r = counter_open(&jc->items[jc->n], c, job, why, sizeof(why));
                if (r < 0) {
                        if (refused++ == 0)
                                (void) snprintf(reason, size, "job %s: %s", job, why[0] ? why : pmugate_strerror(r));
                        if (r == -ECANCELED || r == -EKEYREVOKED)
                                break;
                        continue;
                }
                jc->n++;
                pthread_mutex_lock(lock);
                model_set_job_source(m, job, true);
                pthread_mutex_unlock(lock);
        }
        return refused;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Large batches in progress and the shared scratch space for results
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "server/batch-job.h"

int server_reserve_results(Server *s, size_t n) {
        const AllowEntry **entries;
        int32_t *status;
        uint64_t *values;

        if (n <= s->results_capacity)
                return 0;
        if (n > PMUGATE_OPS_PER_BATCH_MAX)
                return -E2BIG;
        /* Each array is replaced as soon as it grew, so a failure leaves them all usable at
         * the old capacity. */
        entries = realloc(s->entries, n * sizeof(*entries));
        if (!entries)
                return -ENOMEM;
        s->entries = entries;
        status = realloc(s->status, n * sizeof(*status));
        if (!status)
                return -ENOMEM;
        s->status = status;
        values = realloc(s->values, n * sizeof(*values));
        if (!values)
                return -ENOMEM;
        s->values = values;
        s->results_capacity = n;
        return 0;
}

void server_shrink_scratch(Server *s) {
        request_buffer_shrink(s->request_buffer);
        if (s->results_capacity <= PMUGATE_OPS_KEPT)
                return;
        free(s->entries);
        free(s->status);
        free(s->values);
        s->entries = NULL;
        s->status = NULL;
        s->values = NULL;
        s->results_capacity = 0;
        /* Shrinking from a larger block only fails when the allocator cannot get any memory;
         * the next batch then asks again. */
        (void) server_reserve_results(s, PMUGATE_OPS_KEPT);
}

BatchJob *batch_job_free(BatchJob *job) {
        if (!job)
                return NULL;
        free(job->req.ops);
        free(job->entries);
        free(job->status);
        free(job->values);
        msgpack_sbuffer_destroy(&job->reply);
        free(job);
        return NULL;
}

/* Room for n ops in job's arrays; a failure leaves them usable at the old size. */
static int job_reserve(BatchJob *job, size_t n) {
        const AllowEntry **entries;
        int32_t *status;
        uint64_t *values;

        if (n <= job->capacity)
                return 0;
        entries = realloc(job->entries, n * sizeof(*entries));
        if (!entries)
                return -ENOMEM;
        job->entries = entries;
        status = realloc(job->status, n * sizeof(*status));
        if (!status)
                return -ENOMEM;
        job->status = status;
        values = realloc(job->values, n * sizeof(*values));
        if (!values)
                return -ENOMEM;
        job->values = values;
        job->capacity = n;
        return 0;
}

int server_batch_job_new(Server *s, Session *c, const Request *req, BatchStep step) {
        BatchJob *job;
        size_t n = req->n_ops;
        int r;

        if (n > PMUGATE_OPS_PER_BATCH_MAX || req->ops != s->request_buffer->ops)
                return -EINVAL;
        if (!scheduler_slot_take(&s->scheduler, &c->sched))
                return 1;
        job = s->idle_jobs;
        if (job)
                s->idle_jobs = job->next_idle;
        else {
                job = calloc(1, sizeof(*job));
                if (!job) {
                        scheduler_slot_give(&s->scheduler);
                        return -ENOMEM;
                }
                msgpack_sbuffer_init(&job->reply);
        }
        r = job_reserve(job, n);
        /* The decoded ops go to the job, the op array the job had to the request buffer. */
        if (r >= 0)
                r = request_buffer_swap_ops(s->request_buffer, &job->req.ops, &job->ops_capacity);
        if (r < 0) {
                job->next_idle = s->idle_jobs;
                s->idle_jobs = job;
                scheduler_slot_give(&s->scheduler);
                return r;
        }
        job->next_idle = NULL;
        job->req = *req;
        job->req.cpus = NULL;
        job->req.n_cpus = 0;
        job->step = step;
        job->checked = job->done = 0;
        job->finished = false;
        job->generation = s->rights_generation;
        job->stale = false;
        job->n_reply_parts = 0;
        msgpack_sbuffer_clear(&job->reply);
        c->job = job;
        return 0;
}

BatchJob *server_batch_job_done(Server *s, BatchJob *job) {
        if (!job)
                return NULL;
        job->next_idle = s->idle_jobs;
        s->idle_jobs = job;
        scheduler_slot_give(&s->scheduler);
        return NULL;
}

void server_free_idle_jobs(Server *s) {
        while (s->idle_jobs) {
                BatchJob *job = s->idle_jobs;

                s->idle_jobs = job->next_idle;
                batch_job_free(job);
        }
}

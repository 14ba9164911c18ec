/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Large batches in progress (BatchJob) and the shared scratch space their results go to.
 */
#pragma once

#include "server/server-state.h"

/* Room for n results in s->entries, s->status and s->values (n within the batch limit). */
int server_reserve_results(Server *s, size_t n);

/* Gives back what a large batch made the scratch space grow to. */
void server_shrink_scratch(Server *s);

/* Makes req (a batch whose ops are in s->request_buffer) c's batch in progress, run a slice per
 * turn by step. Returns 0 with c->job set, 1 when every slot for large batches is taken (c
 * waits for one and its request is handled again then), or negative errno. */
int server_batch_job_new(Server *s, Session *c, const Request *req, BatchStep step);
/* The batch ended (or its client left): its buffers are kept for the next one, and its slot
 * goes to a waiter. Returns NULL. */
BatchJob *server_batch_job_done(Server *s, BatchJob *job);
/* Frees the buffers kept from ended batches. */
void server_free_idle_jobs(Server *s);
BatchJob *batch_job_free(BatchJob *job);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's snapshots: after every period the sampler publishes a copy of the model
 * and, for each format scraped lately, its /metrics body rendered once. Scrapes serve the
 * latest without the model's lock, so a scrape of thousands of CPUs never holds up sampling,
 * and costs little more than sending the bytes.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "model.h"
#include "render.h"

typedef struct Snapshot Snapshot;
typedef struct SnapshotBody SnapshotBody;

typedef struct SnapshotBox {
        pthread_mutex_t lock;   /* guards latest, the snapshots' bodies and the counts, held for a
                                 * pointer and a count */
        pthread_cond_t modelled;        /* a snapshot's copy of the model is there (or failed) */
        Snapshot *latest;
        const char *job_label, *version;        /* of the bodies rendered */
        PerCpu per_cpu;
        bool wanted[2];         /* atomic; by openmetrics: a scrape asked for it, render it */
        size_t size_hint[2];    /* atomic; by openmetrics: the last body's size */
} SnapshotBox;

#define SNAPSHOT_BOX_INIT { .lock = PTHREAD_MUTEX_INITIALIZER, .modelled = PTHREAD_COND_INITIALIZER }

/* Publishes m as the latest: first with the previous snapshot's bodies (so the previous model
 * is freed before anything is rendered), then with a body of every format wanted rendered from
 * m, each replacing the previous one (freed once no scrape sends it), and last with a copy of m
 * for what scrapes render themselves: at no time are there two models besides m, nor a copy
 * while a body is rendered beside the previous one, nor more than three bodies. The caller
 * holds whatever lock guards m. 0, or -ENOMEM (of the copy: scrapes needing it get an error
 * this period) or -ENOMEM or -EIO of a render (that format keeps the previous period's body). */
int snapshot_publish(SnapshotBox *b, const Model *m);

/* The latest snapshot, referenced for the caller (NULL before the first). */
Snapshot *snapshot_get(SnapshotBox *b);
/* The snapshot's copy of the model, once the sampler made it (it waits for at most one
 * period's render); NULL when the copy failed. */
const Model *snapshot_model(Snapshot *s);

/* The latest body of a format, referenced for the caller, who may hold it after unreferencing
 * the snapshot; NULL when none was rendered (the format was not wanted yet): then
 * snapshot_render_body() renders it. snapshot_want() asks for it from the next period on. */
SnapshotBody *snapshot_body(Snapshot *s, bool openmetrics);
const char *snapshot_body_text(const SnapshotBody *body, size_t *ret_size);
SnapshotBody *snapshot_body_unref(SnapshotBody *body);

/* Renders the snapshot's model in a format it has no body of, without the model's lock, and
 * keeps the body in the snapshot for the scrapes after (unless one came meanwhile); the
 * referenced body in *ret. 0, -ENOMEM or -EIO. */
int snapshot_render_body(Snapshot *s, bool openmetrics, SnapshotBody **ret);

void snapshot_want(SnapshotBox *b, bool openmetrics);
Snapshot *snapshot_unref(Snapshot *s);

/* Drops the latest snapshot (at exit). */
void snapshot_box_done(SnapshotBox *b);

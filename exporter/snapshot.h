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

typedef struct SnapshotBox {
        pthread_mutex_t lock;   /* guards latest only, held for a pointer and a count */
        Snapshot *latest;
        const char *job_label, *version;        /* of the bodies rendered */
        PerCpu per_cpu;
        bool wanted[2];         /* atomic; by openmetrics: a scrape asked for it, render it */
} SnapshotBox;

#define SNAPSHOT_BOX_INIT { .lock = PTHREAD_MUTEX_INITIALIZER }

/* Publishes a copy of m as the latest, with the body of every format wanted; the caller holds
 * whatever lock guards m. 0, or -ENOMEM or -EIO (then the previous snapshot stays). */
int snapshot_publish(SnapshotBox *b, const Model *m);

/* The latest snapshot, referenced for the caller (NULL before the first). */
Snapshot *snapshot_get(SnapshotBox *b);
const Model *snapshot_model(const Snapshot *s);
/* Its rendered body of a format, or NULL when none was rendered (the format was not wanted
 * yet: the caller renders the model itself); snapshot_want() asks for it from the next one on. */
const char *snapshot_body(const Snapshot *s, bool openmetrics, size_t *ret_size);
void snapshot_want(SnapshotBox *b, bool openmetrics);
Snapshot *snapshot_unref(Snapshot *s);

/* Drops the latest snapshot (at exit). */
void snapshot_box_done(SnapshotBox *b);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's snapshots: after every period the sampler publishes a copy of the model,
 * and scrapes render the latest copy without the model's lock, so a scrape of thousands of
 * CPUs never holds up sampling and sampling never holds up a scrape longer than a pointer swap.
 */
#pragma once

#include <pthread.h>

#include "model.h"

typedef struct Snapshot Snapshot;

typedef struct SnapshotBox {
        pthread_mutex_t lock;   /* guards latest only, held for a pointer and a count */
        Snapshot *latest;
} SnapshotBox;

#define SNAPSHOT_BOX_INIT { .lock = PTHREAD_MUTEX_INITIALIZER }

/* Publishes a copy of m as the latest; the caller holds whatever lock guards m. 0 or -ENOMEM
 * (then the previous snapshot stays the latest). */
int snapshot_publish(SnapshotBox *b, const Model *m);

/* The latest snapshot, referenced for the caller (NULL before the first). */
Snapshot *snapshot_get(SnapshotBox *b);
const Model *snapshot_model(const Snapshot *s);
Snapshot *snapshot_unref(Snapshot *s);

/* Drops the latest snapshot (at exit). */
void snapshot_box_done(SnapshotBox *b);

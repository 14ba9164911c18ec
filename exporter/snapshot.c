/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: the model's snapshots for scrapes
 */
#include <errno.h>
#include <stdlib.h>

#include "snapshot.h"

struct Snapshot {
        Model model;
        unsigned refs;  /* changed under the box's lock only */
        SnapshotBox *box;
};

int snapshot_publish(SnapshotBox *b, const Model *m) {
        Snapshot *s = calloc(1, sizeof(Snapshot)), *old;
        int r;

        if (!s)
                return -ENOMEM;
        r = model_copy(m, &s->model);
        if (r < 0) {
                free(s);
                return r;
        }
        s->refs = 1;
        s->box = b;
        pthread_mutex_lock(&b->lock);
        old = b->latest;
        b->latest = s;
        pthread_mutex_unlock(&b->lock);
        (void) snapshot_unref(old);
        return 0;
}

Snapshot *snapshot_get(SnapshotBox *b) {
        Snapshot *s;

        pthread_mutex_lock(&b->lock);
        s = b->latest;
        if (s)
                s->refs++;
        pthread_mutex_unlock(&b->lock);
        return s;
}

const Model *snapshot_model(const Snapshot *s) {
        return &s->model;
}

Snapshot *snapshot_unref(Snapshot *s) {
        bool last;

        if (!s)
                return NULL;
        pthread_mutex_lock(&s->box->lock);
        last = --s->refs == 0;
        pthread_mutex_unlock(&s->box->lock);
        if (last) {
                model_done(&s->model);
                free(s);
        }
        return NULL;
}

void snapshot_box_done(SnapshotBox *b) {
        Snapshot *s;

        pthread_mutex_lock(&b->lock);
        s = b->latest;
        b->latest = NULL;
        pthread_mutex_unlock(&b->lock);
        (void) snapshot_unref(s);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: the model's snapshots for scrapes
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "snapshot.h"

struct Snapshot {
        Model model;
        unsigned refs;  /* changed under the box's lock only */
        SnapshotBox *box;
        char *body[2];          /* by openmetrics: the rendered body, or NULL */
        size_t body_size[2];
};

static int render_body(const SnapshotBox *b, const Model *m, bool openmetrics, char **ret, size_t *ret_size) {
        RenderOptions o = { .openmetrics = openmetrics, .job_label = b->job_label, .version = b->version,
                           .per_cpu = b->per_cpu };
        char *body = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&body, &size);
        int r;

        if (!f)
                return -ENOMEM;
        r = render_metrics_body(m, &o, f);
        if (fclose(f) != 0 && r >= 0)
                r = -EIO;
        if (r < 0) {
                free(body);
                return r;
        }
        *ret = body;
        *ret_size = size;
        return 0;
}

static void snapshot_free(Snapshot *s) {
        model_done(&s->model);
        free(s->body[0]);
        free(s->body[1]);
        free(s);
}

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
        for (unsigned om = 0; om < 2; om++) {
                if (!__atomic_load_n(&b->wanted[om], __ATOMIC_RELAXED))
                        continue;
                r = render_body(b, m, om, &s->body[om], &s->body_size[om]);
                if (r < 0) {
                        snapshot_free(s);
                        return r;
                }
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

const char *snapshot_body(const Snapshot *s, bool openmetrics, size_t *ret_size) {
        *ret_size = s->body_size[openmetrics];
        return s->body[openmetrics];
}

void snapshot_want(SnapshotBox *b, bool openmetrics) {
        __atomic_store_n(&b->wanted[openmetrics], true, __ATOMIC_RELAXED);
}

Snapshot *snapshot_unref(Snapshot *s) {
        bool last;

        if (!s)
                return NULL;
        pthread_mutex_lock(&s->box->lock);
        last = --s->refs == 0;
        pthread_mutex_unlock(&s->box->lock);
        if (last)
                snapshot_free(s);
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: the model's snapshots for scrapes
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "macro.h"
#include "snapshot.h"

struct SnapshotBody {
        unsigned refs;          /* changed under the box's lock only */
        SnapshotBox *box;
        char *text;
        size_t size;
};

struct Snapshot {
        Model model;
        /* Set under the box's lock once model is the copy (or the copy failed): a snapshot is
         * published before its copy is made, so that no copy of the model exists while the
         * period's body is rendered beside the previous one. */
        bool modelled, model_failed;
        unsigned refs;          /* changed under the box's lock only */
        SnapshotBox *box;
        SnapshotBody *body[2];  /* by openmetrics: the latest rendered body, or NULL; replaced
                                 * under the box's lock */
};

/* A body grows into a buffer sized from the previous one. open_memstream doubles by allocating
 * anew and copying, so for a moment a body of 5 MB held 4 MB twice; here the buffer is mostly
 * big enough at once, and where not, realloc extends it (an mmap'd block, main.c's
 * M_MMAP_THRESHOLD: moved by the kernel, not copied). Capacity never touched costs no memory. */
typedef struct Buffer {
        char *data;
        size_t size, capacity;
} Buffer;

static ssize_t buffer_write(void *cookie, const char *p, size_t n) {
        Buffer *b = cookie;

        if (n > b->capacity - b->size) {
                size_t capacity = b->size + n + b->capacity / 4;
                char *d = realloc(b->data, capacity);

                if (!d)
                        return 0;
                b->data = d;
                b->capacity = capacity;
        }
        memcpy(b->data + b->size, p, n);
        b->size += n;
        return (ssize_t) n;
}

/* Headroom over the previous body's size: a few more jobs or CPUs. */
#define BODY_HEADROOM(size) ((size) / 8 + 64 * 1024)

static int render_body(SnapshotBox *b, const Model *m, bool openmetrics, size_t size_hint, SnapshotBody **ret) {
        RenderOptions o = { .openmetrics = openmetrics, .job_label = b->job_label, .version = b->version,
                           .per_cpu = b->per_cpu };
        Buffer buf = { .capacity = size_hint + BODY_HEADROOM(size_hint) };
        SnapshotBody *body;
        FILE *f;
        int r;

        buf.data = malloc(buf.capacity);
        body = calloc(1, sizeof(SnapshotBody));
        if (!buf.data || !body) {
                free(buf.data);
                free(body);
                return -ENOMEM;
        }
        f = fopencookie(&buf, "w", (cookie_io_functions_t) { .write = buffer_write });
        if (!f) {
                free(buf.data);
                free(body);
                return -ENOMEM;
        }
        r = render_metrics_body(m, &o, f);
        if (fclose(f) != 0 && r >= 0)
                r = -EIO;
        if (r < 0) {
                free(buf.data);
                free(body);
                return r;
        }
        *body = (SnapshotBody) { .refs = 1, .box = b, .text = buf.data, .size = buf.size };
        __atomic_store_n(&b->size_hint[openmetrics], buf.size, __ATOMIC_RELAXED);
        *ret = body;
        return 0;
}

static void body_free(SnapshotBody *body) {
        free(body->text);
        free(body);
}

SnapshotBody *snapshot_body_unref(SnapshotBody *body) {
        bool last;

        if (!body)
                return NULL;
        pthread_mutex_lock(&body->box->lock);
        last = --body->refs == 0;
        pthread_mutex_unlock(&body->box->lock);
        if (last)
                body_free(body);
        return NULL;
}

const char *snapshot_body_text(const SnapshotBody *body, size_t *ret_size) {
        *ret_size = body->size;
        return body->text;
}

static void snapshot_free(Snapshot *s) {
        if (s->modelled)
                model_done(&s->model);
        (void) snapshot_body_unref(s->body[0]);
        (void) snapshot_body_unref(s->body[1]);
        free(s);
}

/* Puts body in as s's body of the format; the one it replaces goes once no scrape sends it. */
static void install_body(SnapshotBox *b, Snapshot *s, bool openmetrics, SnapshotBody *body) {
        SnapshotBody *previous;

        pthread_mutex_lock(&b->lock);
        previous = s->body[openmetrics];
        s->body[openmetrics] = body;
        pthread_mutex_unlock(&b->lock);
        (void) snapshot_body_unref(previous);
}

int snapshot_publish(SnapshotBox *b, const Model *m) {
        Snapshot *s = calloc(1, sizeof(Snapshot)), *old;
        Model copy;
        int r, ret = 0;

        if (!s)
                return -ENOMEM;
        s->refs = 1;
        s->box = b;
        /* Published at once with the previous period's bodies and without a model, so the
         * previous model goes now (unless a scrape renders it) and only the bodies ever exist
         * twice, one at a time. */
        pthread_mutex_lock(&b->lock);
        old = b->latest;
        for (unsigned om = 0; om < 2; om++)
                if (old && old->body[om]) {
                        s->body[om] = old->body[om];
                        s->body[om]->refs++;
                }
        b->latest = s;
        pthread_mutex_unlock(&b->lock);
        (void) snapshot_unref(old);
        /* The previous model's per-CPU totals (1.8 MB at 4096 CPUs) often lie in the heap, in
         * the room the period's result left, not in a mapping of their own: freed, they stay
         * resident unless given back now, before a body as large as all else is rendered
         * beside the previous one (the peak). */
        (void) malloc_trim(0);

        /* From m itself: the caller holds its lock, which scrapes never take. */
        for (unsigned om = 0; om < 2; om++) {
                SnapshotBody *body;

                if (!__atomic_load_n(&b->wanted[om], __ATOMIC_RELAXED))
                        continue;
                r = render_body(b, m, om, __atomic_load_n(&b->size_hint[om], __ATOMIC_RELAXED), &body);
                if (r < 0) {
                        ret = r;
                        continue;
                }
                install_body(b, s, om, body);
        }

        /* The copy for what scrapes render themselves (a format not rendered yet, a job's
         * summary) comes last, beside one body of each format. */
        r = model_copy(m, &copy);
        pthread_mutex_lock(&b->lock);
        if (r >= 0) {
                s->model = copy;
                s->modelled = true;
        } else
                s->model_failed = true;
        pthread_cond_broadcast(&b->modelled);
        pthread_mutex_unlock(&b->lock);
        return ret < 0 ? ret : r;
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

const Model *snapshot_model(Snapshot *s) {
        bool modelled;

        pthread_mutex_lock(&s->box->lock);
        while (!s->modelled && !s->model_failed)
                pthread_cond_wait(&s->box->modelled, &s->box->lock);
        modelled = s->modelled;
        pthread_mutex_unlock(&s->box->lock);
        return modelled ? &s->model : NULL;
}

SnapshotBody *snapshot_body(Snapshot *s, bool openmetrics) {
        SnapshotBody *body;

        pthread_mutex_lock(&s->box->lock);
        body = s->body[openmetrics];
        if (body)
                body->refs++;
        pthread_mutex_unlock(&s->box->lock);
        return body;
}

int snapshot_render_body(Snapshot *s, bool openmetrics, SnapshotBody **ret) {
        const Model *m = snapshot_model(s);
        SnapshotBody *body;
        int r;

        if (!m)
                return -ENOMEM;
        /* While the copy was made the sampler may have rendered this format into the snapshot. */
        body = snapshot_body(s, openmetrics);
        if (body) {
                *ret = body;
                return 0;
        }
        r = render_body(s->box, m, openmetrics, __atomic_load_n(&s->box->size_hint[openmetrics],
                                                                        __ATOMIC_RELAXED), &body);
        if (r < 0)
                return r;
        /* The snapshot keeps it, unless the sampler put one in meanwhile: scrapes of this
         * format until the next period share it rather than each rendering its own. */
        pthread_mutex_lock(&s->box->lock);
        if (!s->body[openmetrics]) {
                s->body[openmetrics] = body;
                body->refs++;
        }
        pthread_mutex_unlock(&s->box->lock);
        *ret = body;
        return 0;
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

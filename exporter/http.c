/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: HTTP endpoints on libmicrohttpd
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-guard.h"
#include "http.h"
#include "http-route.h"
#include "macro.h"

struct Http {
        struct MHD_Daemon *daemon;
        HttpGuard *guard;
        HttpOptions options;
        uint64_t scrapes_text, scrapes_openmetrics;     /* atomic: MHD may answer on several threads */
};

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status, const char *type,
                             struct MHD_Response *resp) {
        enum MHD_Result r;

        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        (void) MHD_add_response_header(resp, "Cache-Control", "no-store");
        (void) MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
                (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        r = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body,
                             size_t size) {
        struct MHD_Response *resp;

        resp = MHD_create_response_from_buffer(size, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        return queue(conn, status, type, resp);
}

/* A scrape served from a snapshot's body: it stays until libmicrohttpd has sent it (the
 * snapshot and its model may go before). */
typedef struct Scrape {
        SnapshotBody *body;
        char *tail;
} Scrape;

static void scrape_free(void *userdata) {
        Scrape *sc = userdata;

        (void) snapshot_body_unref(sc->body);
        free(sc->tail);
        free(sc);
}

static enum MHD_Result reply_body(struct MHD_Connection *conn, const char *type, SnapshotBody *body, char *tail,
                                  size_t tail_size) {
        struct MHD_IoVec iov[2] = { { NULL, 0 }, { tail, tail_size } };
        struct MHD_Response *resp;
        Scrape *sc = malloc(sizeof(Scrape));

        if (!sc) {
                (void) snapshot_body_unref(body);
                free(tail);
                return MHD_NO;
        }
        *sc = (Scrape) { .body = body, .tail = tail };
        iov[0].iov_base = snapshot_body_text(body, &iov[0].iov_len);
        resp = MHD_create_response_from_iovec(iov, ELEMENTSOF(iov), scrape_free, sc);
        if (!resp) {
                scrape_free(sc);
                return MHD_NO;
        }
        return queue(conn, MHD_HTTP_OK, type, resp);
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned status, const char *text) {
        char *body = strdup(text);

        return body ? reply(conn, status, "text/plain; charset=utf-8", body, strlen(body)) : MHD_NO;
}

static enum MHD_Result serve_metrics(Http *h, struct MHD_Connection *conn) {
        const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        RenderOptions ro = {
                .openmetrics = accept_prefers_openmetrics(accept),
                .job_label = h->options.job_label,
                .version = h->options.version,
                .per_cpu = h->options.per_cpu,
        };
        Snapshot *snapshot;
        SnapshotBody *body;
        char *tail = NULL;
        size_t tail_size = 0;
        FILE *f;
        int r = 0;

        /* counted before rendering, so a scrape sees itself */
        (void) __atomic_add_fetch(ro.openmetrics ? &h->scrapes_openmetrics : &h->scrapes_text, 1,
                                  __ATOMIC_RELAXED);
        ro.scrapes_text = __atomic_load_n(&h->scrapes_text, __ATOMIC_RELAXED);
        ro.scrapes_openmetrics = __atomic_load_n(&h->scrapes_openmetrics, __ATOMIC_RELAXED);
        snapshot = snapshot_get(h->options.snapshots);
        if (!snapshot)
                return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "starting; no sample yet\n");
        snapshot_want(h->options.snapshots, ro.openmetrics);
        body = snapshot_body(snapshot, ro.openmetrics);
        /* Not rendered yet (the first scrape in this format): render the snapshot's model here,
         * still without the model's lock; the snapshot keeps it for the scrapes after. */
        if (!body)
                r = snapshot_render_body(snapshot, ro.openmetrics, &body);
        (void) snapshot_unref(snapshot);
        if (r < 0)
                return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the metrics\n");
        f = open_memstream(&tail, &tail_size);
        if (!f) {
                (void) snapshot_body_unref(body);
                return MHD_NO;
        }
        r = render_metrics_tail(&ro, f);
        if (fclose(f) != 0 || r < 0) {
                (void) snapshot_body_unref(body);
                free(tail);
                return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the metrics\n");
        }
        return reply_body(conn, ro.openmetrics ? CONTENT_TYPE_OPENMETRICS : CONTENT_TYPE_TEXT, body, tail,
                          tail_size);
}

static enum MHD_Result serve_job(Http *h, struct MHD_Connection *conn, const char *job) {
        const JobTotals *j;
        const Model *m;
        Snapshot *snapshot;
        char *body = NULL;
        size_t size = 0;
        FILE *f;
        int r = -ENOENT;

        f = open_memstream(&body, &size);
        if (!f)
                return MHD_NO;
        snapshot = snapshot_get(h->options.snapshots);
        m = snapshot ? snapshot_model(snapshot) : NULL;
        if (snapshot && !m)
                r = -ENOMEM;
        j = m ? model_find_job(m, job) : NULL;
        if (j)
                r = render_job_summary(m, j, time(NULL), f);
        (void) snapshot_unref(snapshot);
        if (fclose(f) != 0)
                r = -EIO;
        if (r == -ENOENT) {
                free(body);
                return reply_text(
                        conn, MHD_HTTP_NOT_FOUND,
                        "no such job on this node (not seen, or ended longer ago than the summaries are "
                        "kept)\n");
        }
        if (r < 0) {
                free(body);
                return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the summary\n");
        }
        return reply(conn, MHD_HTTP_OK, "application/json", body, size);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **con_cls) {
        Http *h = cls;
        const char *job = NULL;

        switch (http_route(method, url, *upload_data_size, &job)) {
        case HTTP_ROUTE_METHOD_NOT_ALLOWED:
                return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        case HTTP_ROUTE_HAS_BODY:
                return reply_text(conn, MHD_HTTP_BAD_REQUEST, "a GET has no body\n");
        case HTTP_ROUTE_METRICS:
                return serve_metrics(h, conn);
        case HTTP_ROUTE_JOB:
                return serve_job(h, conn, job);
        case HTTP_ROUTE_BAD_JOB:
                return reply_text(conn, MHD_HTTP_BAD_REQUEST,
                                  "a job id is 1-256 characters of A-Z a-z 0-9 . _ - +\n");
        case HTTP_ROUTE_INDEX:
                return reply_text(
                        conn, MHD_HTTP_OK,
                        "pmugate-exporter: /metrics (Prometheus text or OpenMetrics), /jobs/ID (a job's "
                        "summary as JSON)\n");
        case HTTP_ROUTE_NOT_FOUND:
        default:
                return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found; try /metrics\n");
        }
}

/* libmicrohttpd's messages are printf formats of its own; the attribute lets the compiler
 * check that fmt only ever reaches a va_list printer. */
_printf_(2, 0) static void log_mhd(void *cls, const char *fmt, va_list ap) {
        fputs("pmugate-exporter: http: ", stderr);
        vfprintf(stderr, fmt, ap);
}

int http_start(const HttpOptions *o, Http **ret) {
        _cleanup_free_ Http *h = NULL;
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
        int r;

        if (!o || !o->address || !o->snapshots || !ret)
                return -EINVAL;
        h = calloc(1, sizeof(Http));
        if (!h)
                return -ENOMEM;
        h->options = *o;
        if (o->address->sa_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        r = http_guard_new(&h->guard);
        if (r < 0)
                return r;
        /* No per-address limit: local users share 127.0.0.1 with the Epilog and a local
         * scraper; the guard makes room by pushing out the busiest address's oldest connection. */
        errno = 0;
        h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER, log_mhd,
                                     NULL, MHD_OPTION_SOCK_ADDR, o->address, MHD_OPTION_CONNECTION_LIMIT,
                                     (unsigned) HTTP_CONNECTIONS_HARD_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
                                     (unsigned) HTTP_IDLE_SECONDS, MHD_OPTION_NOTIFY_CONNECTION,
                                     http_guard_notify_connection, h->guard, MHD_OPTION_NOTIFY_COMPLETED,
                                     http_guard_request_completed, h->guard, MHD_OPTION_END);
        if (!h->daemon) {
                r = errno > 0 ? -errno : -EADDRNOTAVAIL;
                h->guard = http_guard_free(h->guard);
                return r;
        }
        *ret = TAKE_PTR(h);
        return 0;
}

Http *http_stop(Http *h) {
        if (!h)
                return NULL;
        MHD_stop_daemon(h->daemon);
        h->guard = http_guard_free(h->guard);
        free(h);
        return NULL;
}

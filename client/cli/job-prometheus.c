/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job --prometheus: the job's series per node from Prometheus' HTTP API, read as
 * hostile input like a summary file: bounded in size and depth, every value checked
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/http-get.h"
#include "cli/job-prometheus.h"
#include "macro.h"

#define QUERY_MAX 2048U
#define URL_PATH_MAX (3 * QUERY_MAX + 256)
/* the samples one range query may return per series (Prometheus itself refuses more than 11000) */
#define RANGE_POINTS 10000

/* The exporter's job families (docs/EXPORTER.md), summed per node. */
enum {
        F_INSTRUCTIONS,
        F_CYCLES,
        F_SLOTS,
        F_SECONDS,
        F_READ,
        F_WRITTEN,
        F_ENERGY,
        F_FLOPS,        /* summed over the precision label: all FLOPs */
        F_TOPDOWN,      /* TOPDOWN_CATEGORIES of them, level 1 then level 2 */
};
#define TOPDOWN_CATEGORIES 12
#define FAMILIES (F_TOPDOWN + TOPDOWN_CATEGORIES)

static const char *const topdown_names[TOPDOWN_CATEGORIES] = {
        "frontend_bound", "bad_speculation", "backend_bound", "retiring", "fetch_latency", "fetch_bandwidth",
        "branch_mispredicts", "machine_clears", "memory_bound", "core_bound", "light_operations",
        "heavy_operations",
};

typedef struct PromNode {
        char name[PMUGATE_JOB_HOST_MAX + 1];
        int64_t first, last;
        double max_cpus, up_min;
        char model[32];
        double v[FAMILIES];
} PromNode;

typedef struct Gather {
        const JobPrometheusQuery *q;
        PromNode *nodes;
        size_t n, allocated;
        bool sorted;
        char *reason;
        size_t reason_size;
} Gather;

static void say(Gather *g, const char *fmt, ...) _printf_(2, 3);
static void say(Gather *g, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(g->reason, g->reason_size, fmt, ap);
        va_end(ap);
}

bool job_label_name_valid(const char *s) {
        if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_') ||
            strlen(s) > 64)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      *s == '_'))
                        return false;
        return true;
}

static int compare_names(const void *a, const void *b) {
        return strcmp(((const PromNode *) a)->name, ((const PromNode *) b)->name);
}

/* A node by name: searched in order while find_nodes() adds them, by halves once it sorted
 * them (10,000 nodes times a dozen queries). */
static PromNode *node_of(Gather *g, const char *name, bool create) {
        PromNode *n;

        if (g->sorted) {
                PromNode key;

                (void) snprintf(key.name, sizeof(key.name), "%s", name);
                return bsearch(&key, g->nodes, g->n, sizeof(PromNode), compare_names);
        }
        for (size_t i = 0; i < g->n; i++)
                if (strcmp(g->nodes[i].name, name) == 0)
                        return &g->nodes[i];
        if (!create || g->n >= PMUGATE_JOB_REPORT_NODES_MAX)
                return NULL;
        if (g->n == g->allocated) {
                size_t want = g->allocated ? 2 * g->allocated : 16;

                n = reallocarray(g->nodes, want, sizeof(PromNode));
                if (!n)
                        return NULL;
                g->nodes = n;
                g->allocated = want;
        }
        n = &g->nodes[g->n++];
        *n = (PromNode) { .max_cpus = NAN, .up_min = NAN };
        (void) snprintf(n->name, sizeof(n->name), "%s", name);
        for (unsigned f = 0; f < FAMILIES; f++)
                n->v[f] = NAN;
        return n;
}

/* Prometheus writes a sample's value as a string: "123.5", "NaN", "+Inf". */
static bool sample_value(json_object *pair, double *ret_t, double *ret_v) {
        json_object *t, *v;
        const char *s;
        char *end;

        if (!json_object_is_type(pair, json_type_array) || json_object_array_length(pair) != 2)
                return false;
        t = json_object_array_get_idx(pair, 0);
        v = json_object_array_get_idx(pair, 1);
        if (!(json_object_is_type(t, json_type_double) || json_object_is_type(t, json_type_int)) ||
            !json_object_is_type(v, json_type_string))
                return false;
        s = json_object_get_string(v);
        errno = 0;
        *ret_v = strtod(s, &end);
        *ret_t = json_object_get_double(t);
        return errno == 0 && end != s && !*end && isfinite(*ret_t);
}

/* GETs /api/v1/PATH?query=Q&... and returns the "result" array of a successful answer. */
static int api(Gather *g, const char *path, const char *promql, const char *extra, json_object **ret_root,
               json_object **ret_result) {
        char url[URL_PATH_MAX], why[JOB_REASON_MAX] = "";
        _cleanup_free_ char *body = NULL;
        struct json_tokener *tok;
        json_object *root, *o, *data, *result;
        size_t size;
        int status, r;

        (void) snprintf(url, sizeof(url), "/api/v1/%s?query=", path);
        if (http_query_append(url, sizeof(url), promql) < 0 ||
            strlen(url) + strlen(extra) >= sizeof(url))
                return -ENOBUFS;
        strcat(url, extra);
        r = http_get(g->q->url, url, g->q->timeout_ms, PMUGATE_JOB_PROMETHEUS_REPLY_MAX, &status, &body, &size, why,
                     sizeof(why));
        if (r < 0) {
                say(g, "Prometheus at %s: %s", g->q->url, why[0] ? why : strerror(-r));
                return r;
        }
        tok = json_tokener_new_ex(PMUGATE_JOB_SUMMARY_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        root = json_tokener_parse_ex(tok, body, (int) size);
        json_tokener_free(tok);
        if (!root || !json_object_is_type(root, json_type_object)) {
                json_object_put(root);
                say(g, "Prometheus at %s answered %d with no JSON object (is it Prometheus?)", g->q->url, status);
                return -EBADMSG;
        }
        if (!json_object_object_get_ex(root, "status", &o) || !json_object_is_type(o, json_type_string) ||
            strcmp(json_object_get_string(o), "success") != 0) {
                json_object *e = NULL;

                (void) json_object_object_get_ex(root, "error", &e);
                say(g, "Prometheus at %s refused %s (HTTP %d): %.300s", g->q->url, promql, status,
                    e && json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "no reason given");
                json_object_put(root);
                return -EBADMSG;
        }
        if (!json_object_object_get_ex(root, "data", &data) || !json_object_is_type(data, json_type_object) ||
            !json_object_object_get_ex(data, "result", &result) || !json_object_is_type(result, json_type_array)) {
                say(g, "Prometheus at %s: an answer without data.result", g->q->url);
                json_object_put(root);
                return -EBADMSG;
        }
        *ret_root = root;
        *ret_result = result;
        return 0;
}

/* The node label's value of a series (NULL when it has none, or one longer than a host name). */
static const char *series_node(Gather *g, json_object *item, const char *label) {
        json_object *metric, *v;

        if (!json_object_is_type(item, json_type_object) || !json_object_object_get_ex(item, "metric", &metric) ||
            !json_object_is_type(metric, json_type_object) || !json_object_object_get_ex(metric, label, &v) ||
            !json_object_is_type(v, json_type_string) ||
            (size_t) json_object_get_string_len(v) > PMUGATE_JOB_HOST_MAX ||
            json_object_get_string_len(v) == 0 ||
            strlen(json_object_get_string(v)) != (size_t) json_object_get_string_len(v))
                return NULL;
        return json_object_get_string(v);
}

/* Where the job ran: its pmugate_job_cpus series per node over the window, the first and last
 * sample of each, and the most CPUs it held there. */
static int find_nodes(Gather *g) {
        char promql[QUERY_MAX], extra[128];
        json_object *root, *result;
        int64_t step = (g->q->end - g->q->start) / RANGE_POINTS + 1;
        int r;

        (void) snprintf(promql, sizeof(promql), "max by (%s) (pmugate_job_cpus{jobid=\"%s\"})", g->q->node_label,
                        g->q->job);
        (void) snprintf(extra, sizeof(extra), "&start=%" PRId64 "&end=%" PRId64 "&step=%" PRId64, g->q->start,
                        g->q->end, step);
        r = api(g, "query_range", promql, extra, &root, &result);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(result); i++) {
                json_object *item = json_object_array_get_idx(result, i), *values;
                const char *name = series_node(g, item, g->q->node_label);
                PromNode *n;

                if (!name || !json_object_object_get_ex(item, "values", &values) ||
                    !json_object_is_type(values, json_type_array) || json_object_array_length(values) == 0)
                        continue;
                n = node_of(g, name, true);
                if (!n) {
                        json_object_put(root);
                        say(g, "more than %u nodes", PMUGATE_JOB_REPORT_NODES_MAX);
                        return -E2BIG;
                }
                n->first = INT64_MAX;
                n->last = 0;
                for (size_t k = 0; k < json_object_array_length(values); k++) {
                        double t, v;

                        if (!sample_value(json_object_array_get_idx(values, k), &t, &v) || !isfinite(v) || v < 0)
                                continue;
                        if ((int64_t) t < n->first)
                                n->first = (int64_t) t;
                        if ((int64_t) t > n->last)
                                n->last = (int64_t) t;
                        if (!(v <= n->max_cpus))
                                n->max_cpus = v;
                }
        }
        json_object_put(root);
        if (g->n > 1)
                qsort(g->nodes, g->n, sizeof(PromNode), compare_names);
        g->sorted = true;
        return 0;
}

/* An instant query at the window's end: fills family f (or, by its category label, the TopDown
 * families) of each node found, or the model, or up's minimum. */
static int instant(Gather *g, const char *promql, int f, const char *by_label) {
        char extra[64];
        json_object *root, *result;
        int r;

        (void) snprintf(extra, sizeof(extra), "&time=%" PRId64, g->q->end);
        r = api(g, "query", promql, extra, &root, &result);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(result); i++) {
                json_object *item = json_object_array_get_idx(result, i), *value;
                const char *name = series_node(g, item, g->q->node_label), *sub = NULL;
                PromNode *n = name ? node_of(g, name, false) : NULL;
                double t, v;
                int slot = f;

                if (!n || !json_object_object_get_ex(item, "value", &value) || !sample_value(value, &t, &v))
                        continue;
                if (by_label) {
                        sub = series_node(g, item, by_label);
                        if (!sub)
                                continue;
                }
                if (f == F_TOPDOWN) {
                        slot = -1;
                        for (int k = 0; k < TOPDOWN_CATEGORIES; k++)
                                if (strcmp(sub, topdown_names[k]) == 0)
                                        slot = F_TOPDOWN + k;
                        if (slot < 0)
                                continue;
                } else if (f < 0) {
                        if (f == -1)
                                (void) snprintf(n->model, sizeof(n->model), "%s", sub);
                        else
                                n->up_min = v;
                        continue;
                }
                /* counts are never negative, and never NaN where a sample exists */
                if (!isfinite(v) || v < 0) {
                        json_object_put(root);
                        say(g, "Prometheus gave node %s a value of %g for %s", n->name, v, promql);
                        return -EBADMSG;
                }
                n->v[slot] = v;
        }
        json_object_put(root);
        return 0;
}

static double ratio(double a, double b) {
        return b > 0 ? a / b : NAN;
}

/* The node's quantities as the exporter's summary gives them (exporter/render.c). */
static void to_job_node(const PromNode *p, JobNode *ret) {
        JobNode n = { .start = p->first, .end = p->last };
        double seconds = p->max_cpus > 0 ? p->v[F_SECONDS] / p->max_cpus : NAN;

        (void) snprintf(n.host, sizeof(n.host), "%s", p->name);
        (void) snprintf(n.file, sizeof(n.file), "%s", "");
        /* which CPUs the job map named is in the per-CPU series, not in the job's: left out */
        (void) snprintf(n.covers, sizeof(n.covers), "allocation");
        (void) snprintf(n.cpu_model, sizeof(n.cpu_model), "%s", p->model);
        for (unsigned m = 0; m < JOB_METRICS; m++)
                n.v[m] = NAN;
        n.slots = p->v[F_SLOTS];
        n.v[JOB_INSTRUCTIONS] = p->v[F_INSTRUCTIONS];
        n.v[JOB_CYCLES] = p->v[F_CYCLES];
        n.v[JOB_FLOPS] = p->v[F_FLOPS];
        n.v[JOB_IPC] = ratio(p->v[F_INSTRUCTIONS], p->v[F_CYCLES]);
        for (int k = 0; k < TOPDOWN_CATEGORIES; k++)
                n.v[JOB_TD_FRONTEND_BOUND + k] = 100.0 * ratio(p->v[F_TOPDOWN + k], p->v[F_SLOTS]);
        n.v[JOB_MEMORY_BYTES] = p->v[F_READ] + p->v[F_WRITTEN];
        n.v[JOB_MEMORY_BANDWIDTH] = 1e-6 * ratio(n.v[JOB_MEMORY_BYTES], seconds);
        n.v[JOB_ENERGY] = p->v[F_ENERGY];
        n.v[JOB_POWER] = ratio(p->v[F_ENERGY], seconds);
        *ret = n;
}

int job_prometheus_gather(const JobPrometheusQuery *q, JobSet *set, char *reterr_reason, size_t reason_size) {
        static const struct {
                const char *family;
                int f;
        } families[] = {
                { "instructions", F_INSTRUCTIONS }, { "cycles", F_CYCLES }, { "slots", F_SLOTS },
                { "monitored_seconds", F_SECONDS }, { "memory_read_bytes", F_READ },
                { "memory_written_bytes", F_WRITTEN }, { "energy_joules", F_ENERGY },
                { "flops", F_FLOPS },
        };
        Gather g = { .q = q, .reason = reterr_reason, .reason_size = reason_size };
        const char *l = q->node_label;
        char promql[QUERY_MAX];
        int64_t range = q->end - q->start, first = INT64_MAX, last = 0;
        int r;

        r = find_nodes(&g);
        if (r >= 0 && g.n == 0)
                r = -ENOENT;
        /* A counter's last value in the window is the job's total on the node: the exporter's
         * job series start at 0 with the job and stop when it ends. */
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(families); i++) {
                (void) snprintf(promql, sizeof(promql),
                                "sum by (%s) (last_over_time(pmugate_job_%s_total{jobid=\"%s\"}[%" PRId64 "s]))", l,
                                families[i].family, q->job, range);
                r = instant(&g, promql, families[i].f, NULL);
        }
        for (int level = 1; r >= 0 && level <= 2; level++) {
                (void) snprintf(promql, sizeof(promql),
                                "sum by (%s, category) (last_over_time(pmugate_job_topdown_level%d_slots_total"
                                "{jobid=\"%s\"}[%" PRId64 "s]))", l, level, q->job, range);
                r = instant(&g, promql, F_TOPDOWN, "category");
        }
        if (r >= 0) {
                (void) snprintf(promql, sizeof(promql),
                                "max by (%s, model) (last_over_time(pmugate_exporter_info[%" PRId64 "s]))", l, range);
                r = instant(&g, promql, -1, "model");
        }
        for (size_t i = 0; i < g.n; i++) {
                if (g.nodes[i].first < first)
                        first = g.nodes[i].first;
                if (g.nodes[i].last > last)
                        last = g.nodes[i].last;
        }
        /* Whether each node's exporter answered every scrape while the job ran there: up's
         * minimum over the job's time (one range for all, from the first node's start). */
        if (r >= 0) {
                JobPrometheusQuery at_end = *q;

                at_end.end = last;
                g.q = &at_end;
                (void) snprintf(promql, sizeof(promql), "min by (%s) (min_over_time(up[%" PRId64 "s]))", l,
                                last - first + 1);
                r = instant(&g, promql, -2, NULL);
                g.q = q;
        }
        for (size_t i = 0; r >= 0 && i < g.n; i++) {
                JobNode n;

                if (g.nodes[i].up_min == 0) {
                        r = job_set_add_missing(set, g.nodes[i].name,
                                                "its exporter was down during the job (up = 0): its counts "
                                                "would be short");
                        continue;
                }
                to_job_node(&g.nodes[i], &n);
                r = job_set_add_node(set, &n);
        }
        free(g.nodes);
        return r;
}

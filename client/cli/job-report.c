/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job: a job's per-node summaries checked as hostile input, their total and imbalance
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/job-report.h"
#include "core/reason.h"
#include "macro.h"

const JobMetricInfo job_metrics[JOB_METRICS] = {
        [JOB_IPC] = { "ipc", "IPC", JOB_TOTAL_CYCLE_WEIGHTED, 0 },
        [JOB_INSTRUCTIONS] = { "instructions", "instructions", JOB_TOTAL_SUM, 0 },
        [JOB_CYCLES] = { "cycles", "cycles", JOB_TOTAL_SUM, 0 },
        [JOB_FLOPS] = { "flops", "FLOPs (floating-point operations)", JOB_TOTAL_SUM, 0 },
        [JOB_TD_FRONTEND_BOUND] = { "frontend_bound", "Frontend Bound [%]", JOB_TOTAL_SLOT_WEIGHTED, 1 },
        [JOB_TD_BAD_SPECULATION] = { "bad_speculation", "Bad Speculation [%]", JOB_TOTAL_SLOT_WEIGHTED, 1 },
        [JOB_TD_BACKEND_BOUND] = { "backend_bound", "Backend Bound [%]", JOB_TOTAL_SLOT_WEIGHTED, 1 },
        [JOB_TD_RETIRING] = { "retiring", "Retiring [%]", JOB_TOTAL_SLOT_WEIGHTED, 1 },
        [JOB_TD_FETCH_LATENCY] = { "fetch_latency", "  Fetch Latency [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_TD_FETCH_BANDWIDTH] = { "fetch_bandwidth", "  Fetch Bandwidth [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_TD_BRANCH_MISPREDICTS] = { "branch_mispredicts", "  Branch Mispredicts [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_TD_MACHINE_CLEARS] = { "machine_clears", "  Machine Clears [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_TD_MEMORY_BOUND] = { "memory_bound", "  Memory Bound [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_TD_CORE_BOUND] = { "core_bound", "  Core Bound [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_TD_LIGHT_OPERATIONS] = { "light_operations", "  Light Operations [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_TD_HEAVY_OPERATIONS] = { "heavy_operations", "  Heavy Operations [%]", JOB_TOTAL_SLOT_WEIGHTED, 2 },
        [JOB_MEMORY_BANDWIDTH] = { "memory_bandwidth_mbytes_per_second", "memory bandwidth [MBytes/s]",
                                   JOB_TOTAL_SUM, 0 },
        [JOB_MEMORY_BYTES] = { "memory_bytes", "memory traffic [bytes]", JOB_TOTAL_SUM, 0 },
        [JOB_ENERGY] = { "energy_joules", "energy [J]", JOB_TOTAL_SUM, 0 },
        [JOB_POWER] = { "power_watts", "power [W]", JOB_TOTAL_SUM, 0 },
};

/* A TopDown share may exceed 100 % by the recipe's rounding, never by more. */
#define PERCENT_MAX 101.0

static bool id_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '+' || c == '-';
}

bool job_id_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > PMUGATE_JOB_ID_MAX || s[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!id_char(s[i]))
                        return false;
        return true;
}

bool job_summary_name(const char *name, const char *job, char *host, size_t host_size) {
        size_t n = strlen(name), j = strlen(job), h;

        if (n <= j + 1 + strlen(".json") || strncmp(name, job, j) != 0 || name[j] != '.' ||
            strcmp(name + n - strlen(".json"), ".json") != 0)
                return false;
        h = n - j - 1 - strlen(".json");
        if (h == 0 || h > PMUGATE_JOB_HOST_MAX || h >= host_size || memchr(name + j + 1, '/', h))
                return false;
        memcpy(host, name + j + 1, h);
        host[h] = '\0';
        return true;
}

/* A string member: absent is NULL with 0; present and not a string (or too long) is an error. */
static int get_string(json_object *root, const char *key, bool required, size_t max, const char **ret,
                      char *reterr_reason, size_t reason_size) {
        json_object *o;

        *ret = NULL;
        if (!json_object_object_get_ex(root, key, &o) || json_object_is_type(o, json_type_null)) {
                if (!required)
                        return 0;
                reason_set(reterr_reason, reason_size, "no \"%s\"", key);
                return -EBADMSG;
        }
        if (!json_object_is_type(o, json_type_string) || (size_t) json_object_get_string_len(o) > max ||
            strlen(json_object_get_string(o)) != (size_t) json_object_get_string_len(o)) {
                reason_set(reterr_reason, reason_size, "\"%s\" is not a string of at most %zu characters", key, max);
                return -EBADMSG;
        }
        *ret = json_object_get_string(o);
        return 0;
}

/* A number member: absent or null is NaN (not measured); anything else must be a finite
 * number from 0 to max. */
static int get_number(json_object *parent, const char *key, double max, double *ret, char *reterr_reason,
                      size_t reason_size) {
        json_object *o;
        double v;

        *ret = NAN;
        if (!json_object_object_get_ex(parent, key, &o) || json_object_is_type(o, json_type_null))
                return 0;
        if (!json_object_is_type(o, json_type_double) && !json_object_is_type(o, json_type_int)) {
                reason_set(reterr_reason, reason_size, "\"%s\" is not a number", key);
                return -EBADMSG;
        }
        v = json_object_get_double(o);
        if (!isfinite(v)) {
                reason_set(reterr_reason, reason_size, "\"%s\" is not a finite number", key);
                return -EBADMSG;
        }
        if (v < 0 || v > max) {
                reason_set(reterr_reason, reason_size, "\"%s\" is %g, outside 0 to %g", key, v, max);
                return -EBADMSG;
        }
        *ret = v;
        return 0;
}

static int get_time(json_object *root, const char *key, int64_t *ret, char *reterr_reason, size_t reason_size) {
        json_object *o;
        int64_t v;

        if (!json_object_object_get_ex(root, key, &o) || !json_object_is_type(o, json_type_int)) {
                reason_set(reterr_reason, reason_size, "\"%s\" is not a time in whole seconds", key);
                return -EBADMSG;
        }
        errno = 0;
        v = json_object_get_int64(o);
        /* 1 to the year 10000: a time a clock can be skewed to, not a wrapped or negative one */
        if (errno != 0 || v <= 0 || v > INT64_C(253402300800)) {
                reason_set(reterr_reason, reason_size, "\"%s\" is not a plausible UNIX time", key);
                return -EBADMSG;
        }
        *ret = v;
        return 0;
}

static bool cpus_text_valid(const char *s) {
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || *s == ',' || *s == '-' || *s == '.'))
                        return false;
        return true;
}

/* Whether the summary's host names the file's: the same, or the file's short name of it (the
 * Epilog names files by hostname -s; the exporter may know the node by its full name). */
static bool same_host(const char *content, const char *file) {
        size_t n = strlen(file);

        return strncmp(content, file, n) == 0 && (content[n] == '\0' || content[n] == '.');
}

static int parse_root(json_object *root, const char *job, const char *host, JobNode *node, char *reterr_reason,
                      size_t reason_size) {
        const char *s_job, *s_host, *s_cpus, *s_covers, *s_model;
        json_object *td, *td2;
        double read_bytes, written_bytes, v;
        int r;

        if (!json_object_is_type(root, json_type_object)) {
                reason_set(reterr_reason, reason_size, "not a JSON object");
                return -EBADMSG;
        }
        if ((r = get_string(root, "job", true, PMUGATE_JOB_ID_MAX, &s_job, reterr_reason, reason_size)) < 0)
                return r;
        if (strcmp(s_job, job) != 0)
                return 1;
        if ((r = get_string(root, "host", true, PMUGATE_JOB_HOST_MAX, &s_host, reterr_reason, reason_size)) < 0 ||
            (r = get_string(root, "cpus", true, JOB_CPUS_TEXT_MAX - 1, &s_cpus, reterr_reason, reason_size)) < 0 ||
            (r = get_string(root, "covers", false, JOB_COVERS_MAX - 1, &s_covers, reterr_reason, reason_size)) < 0 ||
            (r = get_string(root, "cpu_model", false, sizeof(node->cpu_model) - 1, &s_model, reterr_reason,
                            reason_size)) < 0)
                return r;
        if (!same_host(s_host, host)) {
                reason_set(reterr_reason, reason_size, "its file names node %s, the summary node %s", host, s_host);
                return -EBADMSG;
        }
        if (!cpus_text_valid(s_cpus)) {
                reason_set(reterr_reason, reason_size, "\"cpus\" is not a CPU list");
                return -EBADMSG;
        }
        if ((r = get_time(root, "start", &node->start, reterr_reason, reason_size)) < 0 ||
            (r = get_time(root, "end", &node->end, reterr_reason, reason_size)) < 0)
                return r;
        if (node->end < node->start) {
                reason_set(reterr_reason, reason_size, "it ends before it starts");
                return -EBADMSG;
        }
        (void) snprintf(node->host, sizeof(node->host), "%s", host);
        (void) snprintf(node->cpus, sizeof(node->cpus), "%s", s_cpus);
        (void) snprintf(node->cpu_model, sizeof(node->cpu_model), "%s", s_model ?: "");
        node->covers_assumed = !s_covers;
        (void) snprintf(node->covers, sizeof(node->covers), "%s", s_covers ?: "allocation");

        if ((r = get_number(root, "ipc", 64, &node->v[JOB_IPC], reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "instructions", 1e30, &node->v[JOB_INSTRUCTIONS], reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "cycles", 1e30, &node->v[JOB_CYCLES], reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "slots", 1e30, &node->slots, reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "flops", 1e30, &node->v[JOB_FLOPS], reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "memory_bandwidth_mbytes_per_second", 1e15, &node->v[JOB_MEMORY_BANDWIDTH],
                            reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "memory_read_bytes", 1e30, &read_bytes, reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "memory_written_bytes", 1e30, &written_bytes, reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "energy_joules", 1e30, &node->v[JOB_ENERGY], reterr_reason, reason_size)) < 0 ||
            (r = get_number(root, "power_watts", 1e9, &node->v[JOB_POWER], reterr_reason, reason_size)) < 0)
                return r;
        /* both directions or not at all: half the traffic is not the traffic */
        node->v[JOB_MEMORY_BYTES] = read_bytes + written_bytes;

        for (int level = 1; level <= 2; level++) {
                const char *key = level == 1 ? "topdown_percent" : "topdown_level2_percent";

                if (!json_object_object_get_ex(root, key, level == 1 ? &td : &td2) ||
                    json_object_is_type(level == 1 ? td : td2, json_type_null)) {
                        if (level == 1)
                                td = NULL;
                        else
                                td2 = NULL;
                        continue;
                }
                if (!json_object_is_type(level == 1 ? td : td2, json_type_object)) {
                        reason_set(reterr_reason, reason_size, "\"%s\" is not an object", key);
                        return -EBADMSG;
                }
        }
        for (unsigned m = 0; m < JOB_METRICS; m++) {
                json_object *parent = job_metrics[m].topdown_level == 1 ? td :
                                      job_metrics[m].topdown_level == 2 ? td2 : NULL;

                if (job_metrics[m].topdown_level == 0)
                        continue;
                node->v[m] = NAN;
                if (parent && (r = get_number(parent, job_metrics[m].name, PERCENT_MAX, &v, reterr_reason,
                                              reason_size)) < 0)
                        return r;
                if (parent)
                        node->v[m] = v;
        }
        return 0;
}

int job_node_parse(const char *data, size_t size, const char *job, const char *host, JobNode *ret,
                   char *reterr_reason, size_t reason_size) {
        struct json_tokener *tok;
        json_object *root;
        JobNode node = {};
        size_t end;
        int r;

        if (size == 0 || size > PMUGATE_JOB_SUMMARY_SIZE_MAX || memchr(data, '\0', size)) {
                reason_set(reterr_reason, reason_size, size == 0 ? "empty" : size > PMUGATE_JOB_SUMMARY_SIZE_MAX ?
                       "larger than the most a summary may be" : "it holds a NUL byte");
                return -EBADMSG;
        }
        tok = json_tokener_new_ex(PMUGATE_JOB_SUMMARY_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        root = json_tokener_parse_ex(tok, data, (int) size);
        if (!root) {
                enum json_tokener_error e = json_tokener_get_error(tok);

                reason_set(reterr_reason, reason_size, "not JSON: %s",
                       e == json_tokener_continue ? "it ends too early" : json_tokener_error_desc(e));
                json_tokener_free(tok);
                return -EBADMSG;
        }
        /* whitespace after the document (the exporter ends it with a newline) is fine */
        end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        while (end < size && strchr(" \t\r\n", data[end]))
                end++;
        if (end < size) {
                reason_set(reterr_reason, reason_size, "not one JSON document: text after it");
                json_object_put(root);
                return -EBADMSG;
        }
        r = parse_root(root, job, host, &node, reterr_reason, reason_size);
        json_object_put(root);
        if (r < 0)
                return r;
        if (r == 0) {
                (void) snprintf(node.file, sizeof(node.file), "%s.%s.json", job, host);
                *ret = node;
        }
        return r;
}

void job_hosts_free(char **hosts, size_t n) {
        for (size_t i = 0; hosts && i < n; i++)
                free(hosts[i]);
        free(hosts);
}

static int hosts_add(char ***hosts, size_t *n, const char *name, size_t len) {
        char **h;

        if (len == 0 || len > PMUGATE_JOB_HOST_MAX || memchr(name, '/', len))
                return -EINVAL;
        if (*n >= PMUGATE_JOB_REPORT_NODES_MAX)
                return -E2BIG;
        h = realloc(*hosts, (*n + 1) * sizeof(char *));
        if (!h)
                return -ENOMEM;
        *hosts = h;
        h[*n] = strndup(name, len);
        if (!h[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* prefix[ranges]suffix: every name the ranges give, each number as wide as its range's lower
 * bound was written (node[01-03] is node01 node02 node03). */
static int expand_group(const char *item, size_t len, char ***hosts, size_t *n) {
        const char *open = memchr(item, '[', len), *close, *p;
        size_t prefix, suffix;

        if (!open)
                return memchr(item, ']', len) ? -EINVAL : hosts_add(hosts, n, item, len);
        close = memchr(open, ']', len - (size_t) (open - item));
        if (!close || memchr(close + 1, '[', len - (size_t) (close + 1 - item)) ||
            memchr(close + 1, ']', len - (size_t) (close + 1 - item)))
                return -EINVAL;
        prefix = (size_t) (open - item);
        suffix = len - (size_t) (close + 1 - item);
        for (p = open + 1; p < close;) {
                char *end, name[PMUGATE_JOB_HOST_MAX + 1];
                unsigned long lo, hi;
                int width = 0, r;

                if (*p < '0' || *p > '9')
                        return -EINVAL;
                for (const char *q = p; q < close && *q >= '0' && *q <= '9'; q++)
                        width++;
                lo = strtoul(p, &end, 10);
                hi = lo;
                if (*end == '-') {
                        if (end[1] < '0' || end[1] > '9')
                                return -EINVAL;
                        hi = strtoul(end + 1, &end, 10);
                }
                if (end > close || (end != close && *end != ',') || hi < lo ||
                    hi - lo >= PMUGATE_JOB_REPORT_NODES_MAX)
                        return -EINVAL;
                for (unsigned long v = lo; v <= hi; v++) {
                        int k = snprintf(name, sizeof(name), "%.*s%0*lu%.*s", (int) prefix, item, width, v,
                                         (int) suffix, close + 1);

                        if (k < 0 || (size_t) k >= sizeof(name))
                                return -EINVAL;
                        r = hosts_add(hosts, n, name, (size_t) k);
                        if (r < 0)
                                return r;
                }
                p = end == close ? close : end + 1;
        }
        return 0;
}

int job_hosts_expand(const char *list, char ***ret) {
        char **hosts = NULL;
        size_t n = 0;
        const char *p = list;
        int r = 0;

        while (*p && r >= 0) {
                const char *q = p;
                int depth = 0;

                /* a comma inside brackets separates ranges, not names */
                for (; *q && (depth > 0 || *q != ','); q++)
                        depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
                r = expand_group(p, (size_t) (q - p), &hosts, &n);
                p = *q ? q + 1 : q;
                if (r >= 0 && *p == '\0' && q[0] == ',')
                        r = -EINVAL;
        }
        if (r >= 0 && n == 0)
                r = -EINVAL;
        if (r < 0) {
                job_hosts_free(hosts, n);
                return r;
        }
        *ret = hosts;
        return (int) n;
}

static int compare_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

        return (x > y) - (x < y);
}

static int64_t median(int64_t *v, size_t n) {
        qsort(v, n, sizeof(*v), compare_i64);
        /* the lower of the two middle values: a time one node saw, never one between */
        return v[(n - 1) / 2];
}

static int64_t abs_i64(int64_t v) {
        return v < 0 ? -v : v;
}

static void window(JobNode *nodes, size_t n, int64_t skew_max, JobReport *rep) {
        _cleanup_free_ int64_t *t = calloc(n ?: 1, sizeof(int64_t));

        rep->window_start = rep->window_end = 0;
        rep->n_skewed = 0;
        if (!t || n == 0)
                return;
        for (size_t i = 0; i < n; i++)
                t[i] = nodes[i].start;
        rep->window_start = median(t, n);
        for (size_t i = 0; i < n; i++)
                t[i] = nodes[i].end;
        rep->window_end = median(t, n);
        for (size_t i = 0; i < n; i++) {
                int64_t ds = nodes[i].start - rep->window_start, de = nodes[i].end - rep->window_end;

                nodes[i].clock_offset = abs_i64(ds) >= abs_i64(de) ? ds : de;
                nodes[i].clock_skewed = abs_i64(nodes[i].clock_offset) > skew_max;
                rep->n_skewed += nodes[i].clock_skewed;
        }
}

/* The weight a node's ratio carries in the total, NaN where the node lacks it. */
static double weight(const JobNode *node, JobMetric m) {
        switch (job_metrics[m].total) {
        case JOB_TOTAL_CYCLE_WEIGHTED:
                return node->v[JOB_CYCLES];
        case JOB_TOTAL_SLOT_WEIGHTED:
                return node->slots;
        case JOB_TOTAL_SUM:
        default:
                return 1.0;
        }
}

void job_report_compute(JobNode *nodes, size_t n, int64_t skew_max, JobReport *ret) {
        JobReport rep = {};

        window(nodes, n, skew_max, &rep);
        for (unsigned m = 0; m < JOB_METRICS; m++) {
                JobStat *s = &rep.stat[m];
                double sum = 0, wsum = 0, wtotal = 0, max = -INFINITY, mean, var = 0;

                s->n = 0;
                for (size_t i = 0; i < n; i++) {
                        double v = nodes[i].v[m], w = weight(&nodes[i], m);

                        if (!isfinite(v))
                                continue;
                        s->n++;
                        sum += v;
                        if (v > max)
                                max = v;
                        if (isfinite(w) && w > 0) {
                                wsum += v * w;
                                wtotal += w;
                        }
                }
                if (s->n == 0) {
                        s->total = s->max_over_mean = s->cv = NAN;
                        continue;
                }
                mean = sum / (double) s->n;
                for (size_t i = 0; i < n; i++)
                        if (isfinite(nodes[i].v[m]))
                                var += (nodes[i].v[m] - mean) * (nodes[i].v[m] - mean);
                var /= (double) s->n;
                s->max_over_mean = mean > 0 ? max / mean : NAN;
                s->cv = mean > 0 ? sqrt(var) / mean : NAN;
                if (job_metrics[m].total == JOB_TOTAL_SUM)
                        s->total = sum;
                else
                        /* a node without its weight (no cycles or slots) has no share of the
                         * total: its ratio alone says nothing about how much it counts */
                        s->total = wtotal > 0 ? wsum / wtotal : NAN;
        }
        *ret = rep;
}

/* Whether node h is host: the same name, or host followed by '.' or ':'. */
static bool host_is(const char *h, const char *host) {
        size_t n = strlen(host);

        return strncmp(h, host, n) == 0 && (h[n] == '\0' || h[n] == '.' || h[n] == ':');
}

/* Room for one more of n elements of size in *array, doubling: a report of thousands of nodes
 * must not copy its nodes once per node. */
static int grow(void **array, size_t n, size_t *allocated, size_t size) {
        size_t want = *allocated ? 2 * *allocated : 16;
        void *p;

        if (n < *allocated)
                return 0;
        p = reallocarray(*array, want, size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = want;
        return 0;
}

int job_set_add_node(JobSet *s, const JobNode *node) {
        if (grow((void **) &s->nodes, s->n_nodes, &s->nodes_allocated, sizeof(JobNode)) < 0)
                return -ENOMEM;
        s->nodes[s->n_nodes++] = *node;
        return 0;
}

int job_set_add_missing(JobSet *s, const char *host, const char *why) {
        JobMissing *m;

        for (size_t i = 0; i < s->n_missing; i++)
                if (host_is(s->missing[i].host, host) || host_is(host, s->missing[i].host))
                        return 0;
        if (grow((void **) &s->missing, s->n_missing, &s->missing_allocated, sizeof(JobMissing)) < 0)
                return -ENOMEM;
        m = &s->missing[s->n_missing++];
        (void) snprintf(m->host, sizeof(m->host), "%s", host);
        (void) snprintf(m->reason, sizeof(m->reason), "%s", why);
        return 0;
}

bool job_set_has(const JobSet *s, const char *host) {
        for (size_t i = 0; i < s->n_nodes; i++)
                if (host_is(s->nodes[i].host, host))
                        return true;
        return false;
}

void job_set_done(JobSet *s) {
        free(s->nodes);
        free(s->missing);
        *s = (JobSet) {};
}

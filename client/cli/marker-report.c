/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate stat -m and topdown -m: the program's environment, and the per-region, per-thread
 * report (table, CSV, JSON) of what its markers measured
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/marker-report.h"
#include "cpulist.h"
#include "macro.h"
#include "marker/marker-runner.h"
#include "pmugate-limits.h"

#define RESULTS_NAME "results"
#define SHARED_NAME "counters"
#define COLUMN_WIDTH 14
#define LABEL_WIDTH 32
#define NUMBER_MAX 48

/* The private directory of the results, and their paths in it. */
static int make_directory(MarkerRun *run, const char *verb) {
        const char *tmp = getenv("TMPDIR");
        int r;

        *run = (MarkerRun) {};
        /* a directory of the runner's own, so that the program's file cannot be planted or
         * swapped by anyone else */
        if (asprintf(&run->dir, "%s/pmugate-markers.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") < 0) {
                run->dir = NULL;
                return -ENOMEM;
        }
        if (!mkdtemp(run->dir)) {
                r = -errno;
                fprintf(stderr, "pmugate %s: cannot make a directory for the marker results: %s\n", verb,
                        strerror(errno));
                free(run->dir);
                run->dir = NULL;
                return r;
        }
        if (asprintf(&run->path, "%s/" RESULTS_NAME, run->dir) < 0) {
                run->path = NULL;
                return -ENOMEM;
        }
        if (asprintf(&run->shared_path, "%s/" SHARED_NAME, run->dir) < 0) {
                run->shared_path = NULL;
                return -ENOMEM;
        }
        return 0;
}

int marker_run_prepare(MarkerRun *run, pmugate_measure *m, const char *socket_path, const char *verb) {
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        r = make_directory(run, verb);
        if (r < 0)
                return r;
        r = marker_runner_environment(m, run->path, run->shared_path, reason, sizeof(reason));
        if (r >= 0 && socket_path && setenv("PMUGATE_SOCKET", socket_path, 1) < 0)
                r = -errno;
        if (r < 0)
                fprintf(stderr, "pmugate %s -m: %s\n", verb, reason[0] ? reason : strerror(-r));
        return r;
}

int marker_run_prepare_perf(MarkerRun *run, const MarkerPerfPlan *plan, const char *socket_path,
                            const char *verb) {
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        r = make_directory(run, verb);
        if (r < 0)
                return r;
        r = marker_runner_perf_environment(plan, run->path, reason, sizeof(reason));
        if (r >= 0 && socket_path && setenv("PMUGATE_SOCKET", socket_path, 1) < 0)
                r = -errno;
        if (r < 0)
                fprintf(stderr, "pmugate %s -m: %s\n", verb, reason[0] ? reason : strerror(-r));
        return r;
}

void marker_run_cleanup(MarkerRun *run) {
        if (run->path)
                (void) unlink(run->path);
        if (run->shared_path)
                (void) unlink(run->shared_path);
        free(run->shared_path);
        if (run->dir)
                (void) rmdir(run->dir);
        free(run->path);
        free(run->dir);
        *run = (MarkerRun) {};
}

static const pmugate_values *values_of(const MarkerRegionResult *g, size_t k) {
        return k == 0 ? &g->result->aggregate : &g->result->cpus[k - 1];
}

static double longest(const MarkerRegionResult *g) {
        double t = 0.0;

        for (size_t i = 0; i < g->n_threads; i++)
                if (g->seconds[i] > t)
                        t = g->seconds[i];
        return t;
}

/* The metrics under parent (-1: the top), each followed by those it refines, as pmugate
 * topdown nests level 2 under its level-1 node; numbers as pmugate topdown writes them. */
static void table_metrics(FILE *f, const MarkerRegionResult *g, int parent) {
        const pmugate_result *r = g->result;
        char value[NUMBER_MAX];

        for (size_t i = 0; i < r->n_metrics; i++) {
                int indent = 2 * (int) r->metrics[i].level;

                if (r->metrics[i].parent != parent)
                        continue;
                fprintf(f, "%*s%-*s", indent, "", LABEL_WIDTH - indent, r->metrics[i].label);
                for (size_t k = 0; k < 1 + g->n_threads; k++) {
                        output_format_metric(output_metric_value(r, values_of(g, k), i), r->metrics[i].unit,
                                             value, sizeof(value));
                        fprintf(f, " %*s", COLUMN_WIDTH, value);
                }
                fprintf(f, "  %s\n", r->metrics[i].name);
                table_metrics(f, g, (int) i);
        }
}

static void table_region(FILE *f, const MarkerRegionResult *g) {
        const pmugate_result *r = g->result;
        size_t n_columns = 1 + g->n_threads;
        char value[NUMBER_MAX];

        fprintf(f, "\nRegion %s: %" PRIu64 " call%s on %zu thread%s, %.6f s inclusive (longest thread)\n",
                g->name, g->total_calls, g->total_calls == 1 ? "" : "s", g->n_threads,
                g->n_threads == 1 ? "" : "s", longest(g));
        fprintf(f, "%-*s %*s", LABEL_WIDTH, "", COLUMN_WIDTH, "all");
        for (size_t i = 0; i < g->n_threads; i++) {
                (void) snprintf(value, sizeof(value), "thread%" PRIu32, g->threads[i]);
                fprintf(f, " %*s", COLUMN_WIDTH, value);
        }
        fprintf(f, "\n%-*s %*s", LABEL_WIDTH, "  CPU", COLUMN_WIDTH, "-");
        for (size_t i = 0; i < g->n_threads; i++) {
                if (g->cpus[i] < 0)
                        (void) snprintf(value, sizeof(value), "several");
                else
                        (void) snprintf(value, sizeof(value), "%" PRId64, g->cpus[i]);
                fprintf(f, " %*s", COLUMN_WIDTH, value);
        }
        fprintf(f, "\n%-*s %*" PRIu64, LABEL_WIDTH, "  calls", COLUMN_WIDTH, g->total_calls);
        for (size_t i = 0; i < g->n_threads; i++)
                fprintf(f, " %*" PRIu64, COLUMN_WIDTH, g->calls[i]);
        fprintf(f, "\n%-*s %*.6f", LABEL_WIDTH, "  inclusive time (s)", COLUMN_WIDTH, longest(g));
        for (size_t i = 0; i < g->n_threads; i++)
                fprintf(f, " %*.6f", COLUMN_WIDTH, g->seconds[i]);
        fputc('\n', f);
        table_metrics(f, g, -1);
        for (size_t e = 0; e < r->n_events; e++) {
                fprintf(f, "%-*s", LABEL_WIDTH, "");
                for (size_t k = 0; k < n_columns; k++) {
                        output_format_event(r, e, values_of(g, k)->counts[e], value, sizeof(value));
                        fprintf(f, " %*s", COLUMN_WIDTH, value);
                }
                fprintf(f, "  %s\n", r->events[e]);
        }
        for (size_t i = 0; i < g->n_threads; i++)
                if (g->migrated[i] > 0)
                        fprintf(f, "  thread %" PRIu32 ": %" PRIu64 " call%s moved to another CPU inside "
                                "the region; their counts are left out (pin the threads)\n", g->threads[i],
                                g->migrated[i], g->migrated[i] == 1 ? "" : "s");
}

static void csv_number(FILE *f, double v) {
        if (isfinite(v))
                fprintf(f, "%.17g", v);
}

static void csv_region(FILE *f, const MarkerRegionResult *g) {
        const pmugate_result *r = g->result;

        for (size_t k = 0; k < 1 + g->n_threads; k++) {
                const pmugate_values *v = values_of(g, k);
                char thread[NUMBER_MAX], cpu[NUMBER_MAX];
                uint64_t calls = k == 0 ? g->total_calls : g->calls[k - 1];
                double seconds = k == 0 ? longest(g) : g->seconds[k - 1];

                if (k == 0) {
                        (void) snprintf(thread, sizeof(thread), "all");
                        cpu[0] = '\0';
                } else {
                        (void) snprintf(thread, sizeof(thread), "%" PRIu32, g->threads[k - 1]);
                        if (g->cpus[k - 1] >= 0)
                                (void) snprintf(cpu, sizeof(cpu), "%" PRId64, g->cpus[k - 1]);
                        else
                                cpu[0] = '\0';
                }
                for (size_t e = 0; e < r->n_events; e++) {
                        fprintf(f, "%s,%s,%s,%" PRIu64 ",%.9f,count,%s,", g->name, thread, cpu, calls,
                                seconds, r->events[e]);
                        if (r->not_modelled && r->not_modelled[e])
                                fputs("<not modelled>", f);
                        else
                                csv_number(f, v->counts[e]);
                        fprintf(f, ",%s\n", r->event_units && r->event_units[e] ? r->event_units[e] : "");
                }
                for (size_t i = 0; i < r->n_metrics; i++) {
                        fprintf(f, "%s,%s,%s,%" PRIu64 ",%.9f,metric,%s,", g->name, thread, cpu, calls,
                                seconds, r->metrics[i].name);
                        csv_number(f, output_metric_value(r, v, i));
                        fprintf(f, ",%s\n", r->metrics[i].unit);
                }
        }
}

static json_object *json_number(double v) {
        return isfinite(v) ? json_object_new_double(v) : NULL;
}

static json_object *json_values(const pmugate_result *r, const pmugate_values *v) {
        json_object *o = json_object_new_object(), *counts = json_object_new_object();
        json_object *metrics = json_object_new_object();

        for (size_t e = 0; e < r->n_events; e++)
                json_object_object_add(counts, r->events[e], json_object_new_uint64(v->raw[e]));
        for (size_t i = 0; i < r->n_metrics; i++)
                json_object_object_add(metrics, r->metrics[i].name, json_number(output_metric_value(r, v, i)));
        json_object_object_add(o, "counts", counts);
        json_object_object_add(o, "metrics", metrics);
        return o;
}

static json_object *json_region(const MarkerRegionResult *g) {
        json_object *o = json_object_new_object(), *threads = json_object_new_array();
        json_object *aggregate = json_values(g->result, &g->result->aggregate);

        json_object_object_add(o, "name", json_object_new_string(g->name));
        json_object_object_add(aggregate, "calls", json_object_new_uint64(g->total_calls));
        json_object_object_add(aggregate, "time", json_object_new_double(longest(g)));
        json_object_object_add(o, "aggregate", aggregate);
        for (size_t i = 0; i < g->n_threads; i++) {
                json_object *t = json_values(g->result, &g->result->cpus[i]);

                json_object_object_add(t, "thread", json_object_new_int64(g->threads[i]));
                json_object_object_add(t, "cpu", g->cpus[i] < 0 ? NULL : json_object_new_int64(g->cpus[i]));
                json_object_object_add(t, "calls", json_object_new_uint64(g->calls[i]));
                json_object_object_add(t, "time", json_object_new_double(g->seconds[i]));
                json_object_object_add(t, "migrated", json_object_new_uint64(g->migrated[i]));
                json_object_array_add(threads, t);
        }
        json_object_object_add(o, "threads", threads);
        return o;
}

/* The measured CPUs as numbers, as stat's JSON has them. */
static json_object *json_cpus(const char *list) {
        json_object *cpus = json_object_new_array();
        _cleanup_free_ uint32_t *numbers = NULL;
        size_t n = 0;

        if (cpulist_parse(list, PMUGATE_CPUS_MAX, &numbers, &n) >= 0)
                for (size_t i = 0; i < n; i++)
                        json_object_array_add(cpus, json_object_new_int64(numbers[i]));
        return cpus;
}

static void write_json(const OutputContext *ctx, const MarkerReport *rep) {
        json_object *root = json_object_new_object(), *regions = json_object_new_array();
        json_object *errors = json_object_new_array(), *metrics = json_object_new_array();
        const pmugate_result *first = rep->n_regions > 0 ? rep->regions[0].result : NULL;

        json_object_object_add(root, "kind", json_object_new_string(ctx->kind));
        json_object_object_add(root, "marker", json_object_new_boolean(true));
        json_object_object_add(root, "model", json_object_new_string(ctx->info->model_key));
        json_object_object_add(root, "simulated", json_object_new_boolean(ctx->info->simulated));
        json_object_object_add(root, "group", json_object_new_string(ctx->group));
        if (ctx->level > 0)
                json_object_object_add(root, "level", json_object_new_int((int) ctx->level));
        json_object_object_add(root, "cpus", json_cpus(ctx->cpu_list));
        json_object_object_add(root, "read_mode", json_object_new_string(rep->mode));
        for (size_t i = 0; first && i < first->n_metrics; i++) {
                json_object *m = json_object_new_object();

                json_object_object_add(m, "name", json_object_new_string(first->metrics[i].name));
                json_object_object_add(m, "label", json_object_new_string(first->metrics[i].label));
                json_object_object_add(m, "unit", json_object_new_string(first->metrics[i].unit));
                json_object_array_add(metrics, m);
        }
        json_object_object_add(root, "metrics", metrics);
        for (size_t i = 0; i < rep->n_regions; i++)
                json_object_array_add(regions, json_region(&rep->regions[i]));
        json_object_object_add(root, "regions", regions);
        for (size_t i = 0; i < rep->n_errors; i++) {
                json_object *e = json_object_new_object();

                json_object_object_add(e, "count", json_object_new_uint64(rep->errors[i].count));
                json_object_object_add(e, "text", json_object_new_string(rep->errors[i].text));
                json_object_array_add(errors, e);
        }
        json_object_object_add(root, "errors", errors);
        if (ctx->command) {
                json_object *cmd = json_object_new_object(), *argv = json_object_new_array();

                for (char *const *a = ctx->command; *a; a++)
                        json_object_array_add(argv, json_object_new_string(*a));
                json_object_object_add(cmd, "argv", argv);
                json_object_object_add(cmd, "exit_status", ctx->exit_status < 0 ? NULL :
                                       json_object_new_int(ctx->exit_status));
                json_object_object_add(root, "command", cmd);
        }
        fprintf(ctx->file, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_NOSLASHESCAPE |
                                                                           JSON_C_TO_STRING_PRETTY));
        json_object_put(root);
}

static void write_report(const OutputContext *ctx, const MarkerReport *rep) {
        const pmugate_info *info = ctx->info;

        switch (ctx->format) {
        case OUTPUT_TABLE:
                fprintf(ctx->file, "\n Marker regions on CPUs %s (%s%s): ", ctx->cpu_list,
                        info->model_label[0] ? info->model_label : info->model_key,
                        info->simulated ? ", simulated PMU" : "");
                if (ctx->level > 0)
                        fprintf(ctx->file, "TopDown level %u", ctx->level);
                else
                        fprintf(ctx->file, "group %s", ctx->group[0] ? ctx->group : "(events)");
                fprintf(ctx->file, "; counters read %s\n", strcmp(rep->mode, "rdpmc") == 0 ? "with RDPMC" :
                        strcmp(rep->mode, "perf") == 0 ? "from each thread's own perf events" :
                        "through pmugated");
                if (rep->n_regions == 0)
                        fprintf(ctx->file, "\nNo region was measured.\n");
                for (size_t i = 0; i < rep->n_regions; i++)
                        table_region(ctx->file, &rep->regions[i]);
                if (ctx->command && ctx->exit_status >= 0)
                        fprintf(ctx->file, "\n command '%s' exited with status %d\n", ctx->command[0],
                                ctx->exit_status);
                fputc('\n', ctx->file);
                break;
        case OUTPUT_CSV:
                fprintf(ctx->file, "region,thread,cpu,calls,time,type,name,value,unit\n");
                for (size_t i = 0; i < rep->n_regions; i++)
                        csv_region(ctx->file, &rep->regions[i]);
                break;
        case OUTPUT_JSONL:
        case OUTPUT_JSON_DOCUMENT:
                write_json(ctx, rep);
                break;
        }
}

static int report_out(const OutputContext *ctx, MarkerReport *rep, int r, const char *reason, const char *verb) {
        if (r == -ENOENT) {
                fprintf(stderr, "pmugate %s -m: the program wrote no marker results: it never called the "
                        "markers' init, or it did not end normally (killed, or _exit())\n", verb);
                return 1;
        }
        if (r < 0) {
                fprintf(stderr, "pmugate %s -m: %s\n", verb, reason[0] ? reason : strerror(-r));
                return 1;
        }
        write_report(ctx, rep);
        for (size_t i = 0; i < rep->n_errors; i++)
                fprintf(stderr, "pmugate %s -m: marker misuse: %s (%" PRIu64 " time%s)\n", verb,
                        rep->errors[i].text, rep->errors[i].count, rep->errors[i].count == 1 ? "" : "s");
        if (rep->errors_dropped > 0)
                fprintf(stderr, "pmugate %s -m: marker misuse: %" PRIu64 " more\n", verb,
                        rep->errors_dropped);
        r = rep->n_errors > 0 || rep->errors_dropped > 0 ? 1 : 0;
        marker_report_free(rep);
        if (fflush(ctx->file) != 0) {
                fprintf(stderr, "pmugate %s: writing the output failed: %s\n", verb, strerror(errno));
                return 1;
        }
        return r;
}

int marker_run_report(MarkerRun *run, const OutputContext *ctx, pmugate_measure *m, const char *verb) {
        MarkerReport *rep = NULL;
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        r = marker_runner_report(m, run->path, &rep, reason, sizeof(reason));
        return report_out(ctx, rep, r, reason, verb);
}

int marker_run_report_perf(MarkerRun *run, const OutputContext *ctx, const MarkerPerfPlan *plan,
                           pmugate_measure *m, const char *verb) {
        MarkerReport *rep = NULL;
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        r = marker_runner_perf_report(plan, m, run->path, &rep, reason, sizeof(reason));
        return report_out(ctx, rep, r, reason, verb);
}

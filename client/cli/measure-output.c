/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement output: table, CSV, JSON
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/measure-output.h"
#include "cli/number-format.h"
#include "macro.h"

#define COLUMN_WIDTH 14
#define LABEL_WIDTH 28
#define NUMBER_MAX 40
#define EVENT_COLUMN_MAX 160
/* a CSV row: two quoted names (each at most doubled by quoting), the CPU and five numbers */
#define CSV_ROW_MAX 4096

/* One rule for JSON: "json" is one document, as a .json file is, "jsonl" is JSON Lines, as a
 * .jsonl file is; -I never changes which. "json-doc" is the older name of "json". */
int output_format_from_string(const char *s, OutputFormat *ret) {
        static const struct {
                const char *name;
                OutputFormat format;
        } names[] = {
                { "table", OUTPUT_TABLE }, { "csv", OUTPUT_CSV }, { "json", OUTPUT_JSON_DOCUMENT },
                { "jsonl", OUTPUT_JSONL }, { "json-doc", OUTPUT_JSON_DOCUMENT },
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp(s, names[i].name) == 0) {
                        *ret = names[i].format;
                        return 0;
                }
        return -EINVAL;
}

/* 1234567 -> "1,234,567", as perf prints counts. */
static void format_count(double v, char *buf, size_t size) {
        char digits[NUMBER_MAX];
        size_t n, out = 0;

        if (!isfinite(v) || v < 0) {
                (void) snprintf(buf, size, "%s", isnan(v) ? "<not counted>" : "-");
                return;
        }
        (void) snprintf(digits, sizeof(digits), "%.0f", v);
        n = strlen(digits);
        for (size_t i = 0; i < n && out + 2 < size; i++) {
                if (i > 0 && (n - i) % 3 == 0)
                        buf[out++] = ',';
                buf[out++] = digits[i];
        }
        buf[out] = '\0';
}

static bool is_percent(const pmugate_metric_info *mi) {
        return strcmp(mi->unit, "%") == 0;
}

double output_metric_value(const pmugate_result *r, const pmugate_values *v, size_t i) {
        return is_percent(&r->metrics[i]) ? 100.0 * v->metrics[i] : v->metrics[i];
}

/* A metric's error bound in the unit its value is printed in; NaN when none holds. */
static double metric_error_bound(const pmugate_result *r, const pmugate_values *v, size_t i) {
        if (!v->error_bound)
                return NAN;
        return is_percent(&r->metrics[i]) ? 100.0 * v->error_bound[i] : v->error_bound[i];
}

/* Whether a node has a bound worth a marker: none holds while it has a value, or it exceeds
 * OUTPUT_BOUND_MARK_PERCENT percentage points (a fraction node) or that share of the value. */
#define OUTPUT_BOUND_MARK_PERCENT 1.0
static bool bound_marked(const pmugate_result *r, const pmugate_values *v, size_t i) {
        double b = metric_error_bound(r, v, i), x = output_metric_value(r, v, i);

        if (!v->error_bound || isnan(v->metrics[i]))
                return false;
        if (isnan(b))
                return true;
        return is_percent(&r->metrics[i]) ? b > OUTPUT_BOUND_MARK_PERCENT :
                                            b > OUTPUT_BOUND_MARK_PERCENT / 100.0 * fabs(x);
}

void output_format_metric(double v, const char *unit, char *buf, size_t size) {
        if (!isfinite(v))
                (void) snprintf(buf, size, "n/a");
        else if (strcmp(unit, "%") == 0)
                (void) snprintf(buf, size, "%.1f %%", v);
        else if (unit[0])
                (void) snprintf(buf, size, "%.3f %s", v, unit);
        else
                (void) snprintf(buf, size, "%.3f", v);
}

/* perf stat -r's "( +- 1.23% )": the standard deviation relative to the mean. */
static void format_spread(double mean, double stddev, char *buf, size_t size) {
        if (!isfinite(mean) || !isfinite(stddev) || mean == 0.0)
                (void) snprintf(buf, size, "( +- n/a )");
        else
                (void) snprintf(buf, size, "( +- %5.2f%% )", 100.0 * stddev / fabs(mean));
}


/* Columns: the aggregate (the node), then each package when the result has package events,
 * then each CPU. */
static const pmugate_values *column(const pmugate_result *r, size_t k) {
        if (k == 0)
                return &r->aggregate;
        if (k <= r->n_packages)
                return &r->packages[k - 1];
        return &r->cpus[k - 1 - r->n_packages];
}

static void column_name(const pmugate_result *r, size_t k, char *buf, size_t size) {
        if (k == 0)
                (void) snprintf(buf, size, "all");
        else if (k <= r->n_packages)
                (void) snprintf(buf, size, "socket%" PRIi32, r->packages[k - 1].package);
        else
                (void) snprintf(buf, size, "%" PRIu32, r->cpus[k - 1 - r->n_packages].cpu);
}

/* The kernel's clocks count nanoseconds: perf prints them in milliseconds. */
static bool is_clock_event(const char *name) {
        return strcmp(name, "task-clock") == 0 || strcmp(name, "cpu-clock") == 0;
}

static bool not_modelled(const pmugate_result *r, size_t e) {
        return r->not_modelled && r->not_modelled[e];
}

/* Energy in joules and other events with a unit are not whole counts. */
void output_format_event(const pmugate_result *r, size_t e, double v, char *buf, size_t size) {
        /* as perf's <not supported>: the simulator has no model behind the event */
        if (not_modelled(r, e))
                (void) snprintf(buf, size, "<not modelled>");
        else if (is_clock_event(r->events[e]) && isfinite(v))
                (void) snprintf(buf, size, "%.2f msec", v / 1e6);
        else if (r->event_units && r->event_units[e][0] && isfinite(v))
                (void) snprintf(buf, size, "%.6f %s", v, r->event_units[e]);
        else
                format_count(v, buf, size);
}

/* Width of the label column: the longest indented label, at least LABEL_WIDTH + 2. */
static int label_width(const pmugate_result *r) {
        int width = LABEL_WIDTH + 2;

        for (size_t i = 0; i < r->n_metrics; i++) {
                int w = 2 * (int) r->metrics[i].level + (int) strlen(r->metrics[i].label) + 1;

                if (w > width)
                        width = w;
        }
        return width;
}

/* Width of a value column: COLUMN_WIDTH, or the widest value with its unit ("0.625 cycles/insn")
 * or count, so that every row's columns line up under the header. */
static int column_width(const pmugate_result *r, size_t n_columns) {
        int width = COLUMN_WIDTH;

        for (size_t k = 0; k < n_columns; k++) {
                char value[NUMBER_MAX];

                for (size_t i = 0; i < r->n_metrics; i++) {
                        output_format_metric(output_metric_value(r, column(r, k), i), r->metrics[i].unit, value,
                                      sizeof(value));
                        if ((int) strlen(value) > width)
                                width = (int) strlen(value);
                }
                for (size_t e = 0; e < r->n_events; e++) {
                        output_format_event(r, e, column(r, k)->counts[e], value, sizeof(value));
                        if ((int) strlen(value) > width)
                                width = (int) strlen(value);
                }
        }
        return width;
}

/* After a metric's name in the table: the share of the time its events were counted when they
 * took turns (as for events), "<==" when the node crossed its threshold (perf's
 * MetricThreshold; toplev's bottleneck marker), "(estimate)" for a value computed with
 * published constants in place of a measurement. */
static void write_metric_flags(FILE *f, const pmugate_result *r, size_t i) {
        const pmugate_metric_info *mi = &r->metrics[i];
        double scale = r->aggregate.metric_scale[i];

        if (scale != 1.0 && !mi->unavailable[0])
                fprintf(f, "  (%.2f%%)", isfinite(scale) ? 100.0 / scale : 0.0);
        if (bound_marked(r, &r->aggregate, i)) {
                double b = metric_error_bound(r, &r->aggregate, i);

                if (isnan(b))
                        fprintf(f, "  (±?)");
                else
                        fprintf(f, is_percent(mi) ? "  (±%.1f)" : "  (±%.3g)", b);
        }
        if (mi->estimate[0])
                fprintf(f, "  (estimate)");
        if (r->aggregate.thresholds[i] == 1.0)
                fprintf(f, "  <==");
}

/* Why metric i of v is n/a, or NULL when it has a value. An unknown input makes a node unknown
 * (the formula engine's NaN goes through every function), so a node is not counted when one
 * of its events never had a counter in the span: the events took turns and the span was
 * shorter than their rotation. */
const char *output_metric_na_reason(const pmugate_result *r, const pmugate_values *v, size_t i) {
        if (!isnan(v->metrics[i]))
                return NULL;
        if (r->metrics[i].unavailable[0])
                return r->metrics[i].unavailable;
        if (isinf(v->metric_scale[i]))
                return "not counted long enough: needs an event that never had a counter "
                       "(the run was shorter than a rotation of the event sets)";
        if (r->withheld && r->withheld[0])
                return "an event it needs was not counted (see 'not counted' above) or a divisor is 0";
        return "undefined: a value it divides by is 0";
}

/* Under the table: why each node pmugate cannot compute is n/a; the nodes n/a for the same
 * reason of the measurement on one line. */
static void write_unavailable(FILE *f, const pmugate_result *r) {
        for (size_t i = 0; i < r->n_metrics; i++)
                if (r->metrics[i].unavailable[0])
                        fprintf(f, " n/a: %s %s\n", r->metrics[i].name, r->metrics[i].unavailable);
        for (size_t i = 0; i < r->n_metrics; i++) {
                const char *why = output_metric_na_reason(r, &r->aggregate, i);
                bool first = true;

                if (!why || r->metrics[i].unavailable[0])
                        continue;
                for (size_t k = 0; k < i && first; k++)
                        first = output_metric_na_reason(r, &r->aggregate, k) != why ||
                                r->metrics[k].unavailable[0];
                if (!first)
                        continue;
                fprintf(f, " n/a: %s", r->metrics[i].name);
                for (size_t k = i + 1; k < r->n_metrics; k++)
                        if (output_metric_na_reason(r, &r->aggregate, k) == why && !r->metrics[k].unavailable[0])
                                fprintf(f, ", %s", r->metrics[k].name);
                fprintf(f, ": %s\n", why);
        }
}

static void table_metric_rows(OutputContext *ctx, const pmugate_result *r, int parent, size_t n_columns,
                              int width) {
        for (size_t i = 0; i < r->n_metrics; i++) {
                const pmugate_metric_info *mi = &r->metrics[i];
                int indent = 2 * (int) mi->level;

                if (mi->parent != parent)
                        continue;
                fprintf(ctx->file, "%*s%-*s", indent, "", label_width(r) - indent, mi->label);
                for (size_t k = 0; k < n_columns; k++) {
                        char value[NUMBER_MAX];

                        output_format_metric(output_metric_value(r, column(r, k), i), mi->unit, value,
                                      sizeof(value));
                        fprintf(ctx->file, " %*s", width, value);
                }
                fprintf(ctx->file, "  %s", mi->name);
                write_metric_flags(ctx->file, r, i);
                if (ctx->stddev) {
                        char spread[NUMBER_MAX];

                        format_spread(r->aggregate.metrics[i], ctx->stddev->aggregate.metrics[i], spread,
                                      sizeof(spread));
                        fprintf(ctx->file, "  %s", spread);
                }
                fputc('\n', ctx->file);
                table_metric_rows(ctx, r, (int) i, n_columns, width);
        }
}

static void write_title(OutputContext *ctx) {
        const pmugate_info *info = ctx->info;

        if (ctx->target)
                fprintf(ctx->file, "\n Performance counter stats for %s", ctx->target);
        else
                fprintf(ctx->file, "\n Performance counter stats for CPUs %s", ctx->cpu_list);
        fprintf(ctx->file, " (%s%s)",
                info->model_label[0] ? info->model_label : info->model_key[0] ? info->model_key : "no PMU model",
                info->simulated ? ", simulated PMU" : "");
        if (ctx->level > 0)
                fprintf(ctx->file, ": TopDown level %u", ctx->level);
        else
                fprintf(ctx->file, "%s%s", ctx->group[0] ? ": group " : "", ctx->group);
        for (size_t i = 0; i < ctx->n_drill_nodes; i++)
                fprintf(ctx->file, "%s%s", i == 0 ? ", drilled into " : " > ", ctx->drill_nodes[i]);
        if (ctx->runs > 1)
                fprintf(ctx->file, " (%u runs)", ctx->runs);
        fputc('\n', ctx->file);
        ctx->header_written = true;
}

/* A column of the one-line-per-interval table: a metric (without perf's "tma_") or, when
 * there are no metrics, an event; at least as wide as a value. */
static int interval_column_width(const char *name) {
        int w = (int) strlen(name);

        return w > COLUMN_WIDTH - 4 ? w : COLUMN_WIDTH - 4;
}

static const char *interval_column_name(const pmugate_result *r, size_t c) {
        if (r->n_metrics == 0)
                return r->events[c];
        return strncmp(r->metrics[c].name, "tma_", 4) == 0 ? r->metrics[c].name + 4 : r->metrics[c].name;
}

/* -I in table mode: a header naming the columns (with units), then one line per interval,
 * or per CPU and interval with -A. */
static void write_interval_line(OutputContext *ctx, const pmugate_result *r) {
        size_t n = r->n_metrics > 0 ? r->n_metrics : r->n_events;
        size_t n_columns = 1 + r->n_packages + (ctx->per_cpu ? r->n_cpus : 0);

        if (!ctx->header_written) {
                write_title(ctx);
                fprintf(ctx->file, "#%10s %5s", "time", "cpu");
                for (size_t c = 0; c < n; c++) {
                        char name[EVENT_COLUMN_MAX];

                        if (r->n_metrics > 0 && r->metrics[c].unit[0])
                                (void) snprintf(name, sizeof(name), "%s[%s]", interval_column_name(r, c),
                                                r->metrics[c].unit);
                        else
                                (void) snprintf(name, sizeof(name), "%s", interval_column_name(r, c));
                        fprintf(ctx->file, " %*s", interval_column_width(name), name);
                }
                fputc('\n', ctx->file);
        }
        for (size_t k = 0; k < n_columns; k++) {
                const pmugate_values *v = column(r, k);
                char cpu[NUMBER_MAX];

                column_name(r, k, cpu, sizeof(cpu));
                fprintf(ctx->file, " %10.3f %7s", r->start + r->elapsed, cpu);
                for (size_t c = 0; c < n; c++) {
                        char name[EVENT_COLUMN_MAX], value[NUMBER_MAX];
                        double x = r->n_metrics > 0 ? output_metric_value(r, v, c) : v->counts[c];

                        if (r->n_metrics > 0 && r->metrics[c].unit[0])
                                (void) snprintf(name, sizeof(name), "%s[%s]", interval_column_name(r, c),
                                                r->metrics[c].unit);
                        else
                                (void) snprintf(name, sizeof(name), "%s", interval_column_name(r, c));
                        if (!isfinite(x))
                                (void) snprintf(value, sizeof(value), "n/a");
                        else if (r->n_metrics > 0)
                                (void) snprintf(value, sizeof(value), "%.*f",
                                                is_percent(&r->metrics[c]) ? 1 : 3, x);
                        else
                                (void) snprintf(value, sizeof(value), "%.0f", x);
                        fprintf(ctx->file, " %*s", interval_column_width(name), value);
                }
                fprintf(ctx->file, "%s\n", ctx->partial ? "  (partial)" : "");
        }
}

static void write_table(OutputContext *ctx, const pmugate_result *r) {
        size_t n_columns = 1 + r->n_packages + (ctx->per_cpu ? r->n_cpus : 0);
        int width;

        if (ctx->interval) {
                write_interval_line(ctx, r);
                return;
        }
        width = column_width(r, n_columns);
        if (!ctx->header_written)
                write_title(ctx);
        fputc('\n', ctx->file);
        if (n_columns > 1) {
                fprintf(ctx->file, "%*s", label_width(r), "");
                for (size_t k = 0; k < n_columns; k++) {
                        char name[NUMBER_MAX], label[NUMBER_MAX + 4];

                        column_name(r, k, name, sizeof(name));
                        (void) snprintf(label, sizeof(label), "%s%s", k > r->n_packages ? "cpu" : "", name);
                        fprintf(ctx->file, " %*s", width, label);
                }
                fputc('\n', ctx->file);
        }
        table_metric_rows(ctx, r, -1, n_columns, width);
        if (r->n_metrics > 0)
                fputc('\n', ctx->file);
        for (size_t e = 0; e < r->n_events; e++) {
                for (size_t k = 0; k < n_columns; k++) {
                        char value[NUMBER_MAX];

                        /* the aggregate count spans the label column, so values line up */
                        output_format_event(r, e, column(r, k)->counts[e], value, sizeof(value));
                        fprintf(ctx->file, " %*s", k == 0 ? label_width(r) + width : width, value);
                }
                fprintf(ctx->file, "  %s", r->events[e]);
                /* as perf: how many CPUs the task's time kept busy over the elapsed time */
                if (strcmp(r->events[e], "task-clock") == 0 && isfinite(r->aggregate.counts[e]) && r->elapsed > 0)
                        fprintf(ctx->file, "  # %.3f CPUs utilized", r->aggregate.counts[e] / 1e9 / r->elapsed);
                /* as perf: the share of the time the event was on a counter; none for one that
                 * never was (<not counted>) */
                if (r->aggregate.scale[e] != 1.0 && isfinite(r->aggregate.scale[e]))
                        fprintf(ctx->file, "  (%.2f%%)", 100.0 / r->aggregate.scale[e]);
                if (ctx->stddev) {
                        char spread[NUMBER_MAX];

                        format_spread(r->aggregate.counts[e], ctx->stddev->aggregate.counts[e], spread,
                                      sizeof(spread));
                        fprintf(ctx->file, "  %s", spread);
                }
                fputc('\n', ctx->file);
        }
        fprintf(ctx->file, "\n %14.6f seconds time elapsed (%" PRIu64 " sample%s", r->elapsed, r->samples,
                r->samples == 1 ? "" : "s");
        if (r->resets > 0)
                fprintf(ctx->file, ", %" PRIu64 " SLOTS/PERF_METRICS resets", r->resets);
        if (r->event_sets > 1)
                fprintf(ctx->file, ", %u event sets multiplexed", r->event_sets);
        fprintf(ctx->file, ")\n");
        if (r->withheld && r->withheld[0])
                fprintf(ctx->file, " not counted: %s\n", r->withheld);
        write_unavailable(ctx->file, r);
        for (size_t i = 0; i < r->n_metrics; i++)
                if (r->metrics[i].estimate[0]) {
                        fprintf(ctx->file, " (estimate): computed with published mean retire latencies in "
                                "place of measured ones, as perf does without --record-tpebs\n");
                        break;
                }
        if (ctx->runs > 1)
                fprintf(ctx->file, " means over %u runs of the command, with the standard deviation\n",
                        ctx->runs);
        if (ctx->command && ctx->exit_status >= 0)
                fprintf(ctx->file, " command '%s' exited with status %d\n", ctx->command[0],
                        ctx->exit_status);
        if (ctx->interrupted)
                fprintf(ctx->file, " INTERRUPTED by %s: the counts cover %.3f s%s\n", ctx->interrupted,
                        r->elapsed, ctx->duration > 0 ? " of the time asked for" : "");
        fputc('\n', ctx->file);
}

/* A CSV row is put together in memory and written with one fwrite(): rows are many (some 40
 * per CPU and interval) and stdio's per-call locking and printf's number formatting cost more
 * than the rest of a sample (docs/PERFORMANCE.md). */
typedef struct CsvRow {
        char text[CSV_ROW_MAX];
        size_t n;
} CsvRow;

static void row_add(CsvRow *row, const char *s, size_t n) {
        if (row->n + n >= sizeof(row->text))
                n = sizeof(row->text) - 1 - row->n;
        memcpy(row->text + row->n, s, n);
        row->n += n;
}

static void row_text(CsvRow *row, const char *s) {
        row_add(row, s, strlen(s));
}

static void row_number(CsvRow *row, double v) {
        char number[NUMBER_TEXT_MAX];

        if (isfinite(v))
                row_add(row, number, number_format_g17(v, number));
}

static void row_u64(CsvRow *row, uint64_t v) {
        char number[NUMBER_TEXT_MAX];

        row_add(row, number, number_format_u64(v, number));
}

/* A name as a CSV field (csv_text()'s quoting), kept once per result. */
static char *csv_field(const char *text) {
        size_t n = strlen(text);
        char *field = malloc(2 * n + 3), *p = field;

        if (!field)
                return NULL;
        if (!strpbrk(text, ",\"\r\n")) {
                memcpy(field, text, n + 1);
                return field;
        }
        *p++ = '"';
        for (const char *t = text; *t; t++) {
                if (*t == '"')
                        *p++ = '"';
                *p++ = *t;
        }
        *p++ = '"';
        *p = '\0';
        return field;
}

static void free_fields(char **fields, size_t n) {
        for (size_t i = 0; fields && i < n; i++)
                free(fields[i]);
        free(fields);
}

static int write_csv(OutputContext *ctx, const pmugate_result *r) {
        size_t n_fields = r->n_events + 2 * r->n_metrics;
        char **fields = calloc(n_fields ?: 1, sizeof(char *));
        const char *partial = ctx->partial ? "1" : "";
        char when[2 * NUMBER_MAX];
        int w;

        if (!fields)
                return -ENOMEM;
        /* what every row of the result repeats, formatted once */
        for (size_t e = 0; e < r->n_events; e++)
                if (!(fields[e] = csv_field(r->events[e]))) {
                        free_fields(fields, n_fields);
                        return -ENOMEM;
                }
        for (size_t i = 0; i < r->n_metrics; i++)
                if (!(fields[r->n_events + 2 * i] = csv_field(r->metrics[i].name)) ||
                    !(fields[r->n_events + 2 * i + 1] = csv_field(r->metrics[i].unit))) {
                        free_fields(fields, n_fields);
                        return -ENOMEM;
                }
        w = snprintf(when, sizeof(when), "%.6f,%.6f,", r->start + r->elapsed, r->elapsed);
        if (w < 0 || (size_t) w >= sizeof(when))
                when[0] = '\0';
        if (!ctx->header_written) {
                fputs("time,elapsed,cpu,type,name,value,unit,raw,scale,stddev,threshold,estimate,error_bound,partial\n", ctx->file);
                ctx->header_written = true;
        }
        for (size_t k = 0; k < 1 + r->n_packages + (ctx->aggregate_only ? 0 : r->n_cpus); k++) {
                const pmugate_values *v = column(r, k);
                char cpu[NUMBER_MAX];
                CsvRow row;
                size_t lead;

                column_name(r, k, cpu, sizeof(cpu));
                row.n = 0;
                row_text(&row, when);
                row_text(&row, cpu);
                lead = row.n;
                for (size_t e = 0; e < r->n_events; e++) {
                        row.n = lead;
                        row_text(&row, ",count,");
                        row_text(&row, fields[e]);
                        row_text(&row, ",");
                        if (not_modelled(r, e))
                                row_text(&row, "<not modelled>");
                        else
                                row_number(&row, v->counts[e]);
                        row_text(&row, ",,");
                        row_u64(&row, v->raw[e]);
                        row_text(&row, ",");
                        row_number(&row, v->scale[e]);
                        row_text(&row, ",");
                        if (ctx->stddev)
                                row_number(&row, column(ctx->stddev, k)->counts[e]);
                        row_text(&row, ",,,,");
                        row_text(&row, partial);
                        row_text(&row, "\n");
                        (void) fwrite_unlocked(row.text, 1, row.n, ctx->file);
                }
                for (size_t i = 0; i < r->n_metrics; i++) {
                        row.n = lead;
                        row_text(&row, ",metric,");
                        row_text(&row, fields[r->n_events + 2 * i]);
                        row_text(&row, ",");
                        /* a node a drilldown left out says so, as an event the simulator lacks does */
                        if (strcmp(r->metrics[i].unavailable, PMUGATE_NOT_DRILLED) == 0)
                                row_text(&row, "<not drilled into>");
                        else
                                row_number(&row, output_metric_value(r, v, i));
                        row_text(&row, ",");
                        row_text(&row, fields[r->n_events + 2 * i + 1]);
                        row_text(&row, ",,");
                        row_number(&row, v->metric_scale[i]);
                        row_text(&row, ",");
                        if (ctx->stddev)
                                row_number(&row, output_metric_value(ctx->stddev, column(ctx->stddev, k), i));
                        row_text(&row, ",");
                        row_number(&row, v->thresholds[i]);
                        row_text(&row, r->metrics[i].estimate[0] ? ",1," : ",,");
                        row_number(&row, metric_error_bound(r, v, i));
                        row_text(&row, ",");
                        row_text(&row, partial);
                        row_text(&row, "\n");
                        (void) fwrite_unlocked(row.text, 1, row.n, ctx->file);
                }
        }
        free_fields(fields, n_fields);
        return 0;
}

static json_object *json_number(double v) {
        return isfinite(v) ? json_object_new_double(v) : NULL;
}

/* Per metric name: its multiplexing scale (null when its events never ran). */
static json_object *json_metric_array(const pmugate_result *r, const double *x) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; i < r->n_metrics; i++)
                json_object_object_add(o, r->metrics[i].name, json_number(x[i]));
        return o;
}

/* Per metric with a threshold: whether it crossed it, null when its value is undefined. */
static json_object *json_thresholds(const pmugate_result *r, const pmugate_values *v) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; i < r->n_metrics; i++)
                if (r->metrics[i].has_threshold)
                        json_object_object_add(o, r->metrics[i].name, isnan(v->thresholds[i]) ? NULL :
                                               json_object_new_boolean(v->thresholds[i] == 1.0));
        return o;
}

/* Per metric that is n/a in v: why (output_metric_na_reason). */
static json_object *json_na_reasons(const pmugate_result *r, const pmugate_values *v) {
        json_object *o = json_object_new_object();

        for (size_t i = 0; i < r->n_metrics; i++) {
                const char *why = output_metric_na_reason(r, v, i);

                if (why)
                        json_object_object_add(o, r->metrics[i].name, json_object_new_string(why));
        }
        return o;
}

static json_object *json_values(const pmugate_result *r, const pmugate_values *v, const pmugate_values *sd) {
        json_object *o = json_object_new_object(), *counts = json_object_new_object();
        json_object *metrics = json_object_new_object();

        if (v->cpu != UINT32_MAX)
                json_object_object_add(o, "cpu", json_object_new_int64(v->cpu));
        else if (v->package >= 0)
                json_object_object_add(o, "package", json_object_new_int64(v->package));
        for (size_t e = 0; e < r->n_events; e++) {
                json_object *c = json_object_new_object();

                json_object_object_add(c, "value", json_number(v->counts[e]));
                json_object_object_add(c, "raw", json_object_new_uint64(v->raw[e]));
                json_object_object_add(c, "scale", json_number(v->scale[e]));
                if (not_modelled(r, e))
                        json_object_object_add(c, "not_modelled", json_object_new_boolean(true));
                if (sd)
                        json_object_object_add(c, "stddev", json_number(sd->counts[e]));
                json_object_object_add(counts, r->events[e], c);
        }
        for (size_t i = 0; i < r->n_metrics; i++)
                json_object_object_add(metrics, r->metrics[i].name, json_number(output_metric_value(r, v,
                                                                                                    i)));
        json_object_object_add(o, "counts", counts);
        json_object_object_add(o, "metrics", metrics);
        json_object_object_add(o, "metrics_scale", json_metric_array(r, v->metric_scale));
        if (v->error_bound) {
                json_object *bound = json_object_new_object(), *why = json_object_new_object();

                for (size_t i = 0; i < r->n_metrics; i++) {
                        json_object_object_add(bound, r->metrics[i].name, json_number(metric_error_bound(r, v, i)));
                        json_object_object_add(why, r->metrics[i].name,
                                               json_object_new_string(v->error_bound_reason[i] ?: ""));
                }
                json_object_object_add(o, "error_bound", bound);
                json_object_object_add(o, "error_bound_reason", why);
        }
        json_object_object_add(o, "thresholds", json_thresholds(r, v));
        json_object_object_add(o, "metrics_na", json_na_reasons(r, v));
        if (sd) {
                json_object *spread = json_object_new_object();

                for (size_t i = 0; i < r->n_metrics; i++)
                        json_object_object_add(spread, r->metrics[i].name,
                                               json_number(is_percent(&r->metrics[i]) ?
                                                           100.0 * sd->metrics[i] : sd->metrics[i]));
                json_object_object_add(o, "metrics_stddev", spread);
        }
        return o;
}

/* The result as JSON; without per_cpu_rows, no "per_cpu" (json_line() writes it). */
static json_object *json_result(OutputContext *ctx, const pmugate_result *r, bool per_cpu_rows) {
        json_object *root = json_object_new_object(), *metrics = json_object_new_array();
        json_object *cpus = json_object_new_array(), *per_cpu = per_cpu_rows ? json_object_new_array() : NULL;

        json_object_object_add(root, "kind", json_object_new_string(ctx->kind));
        json_object_object_add(root, "model", json_object_new_string(ctx->info->model_key));
        json_object_object_add(root, "model_name", json_object_new_string(ctx->info->model_label));
        json_object_object_add(root, "simulated", json_object_new_boolean(ctx->info->simulated));
        json_object_object_add(root, "group", json_object_new_string(ctx->group));
        if (ctx->level > 0) {
                json_object *drill = ctx->n_drill_nodes > 0 ? json_object_new_array() : NULL;

                json_object_object_add(root, "level", json_object_new_int(ctx->level));
                for (size_t i = 0; i < ctx->n_drill_nodes; i++)
                        json_object_array_add(drill, json_object_new_string(ctx->drill_nodes[i]));
                /* null: every node of every level measured */
                json_object_object_add(root, "drilldown", drill);
        }
        for (size_t i = 0; i < r->n_cpus; i++)
                json_object_array_add(cpus, json_object_new_int64(r->cpus[i].cpu));
        json_object_object_add(root, "cpus", cpus);
        json_object_object_add(root, "start", json_object_new_double(r->start));
        json_object_object_add(root, "elapsed", json_object_new_double(r->elapsed));
        json_object_object_add(root, "window", json_object_new_double(r->window));
        json_object_object_add(root, "window_clock", json_object_new_string(r->window_clock ?: "client"));
        json_object_object_add(root, "samples", json_object_new_uint64(r->samples));
        json_object_object_add(root, "resets", json_object_new_uint64(r->resets));
        json_object_object_add(root, "event_sets", json_object_new_int(r->event_sets));
        for (size_t i = 0; i < r->n_metrics; i++) {
                json_object *m = json_object_new_object();

                json_object_object_add(m, "name", json_object_new_string(r->metrics[i].name));
                json_object_object_add(m, "label", json_object_new_string(r->metrics[i].label));
                json_object_object_add(m, "level", json_object_new_int((int) r->metrics[i].level));
                json_object_object_add(m, "parent", r->metrics[i].parent < 0 ? NULL :
                                       json_object_new_string(r->metrics[r->metrics[i].parent].name));
                json_object_object_add(m, "unit", json_object_new_string(r->metrics[i].unit));
                json_object_object_add(m, "estimate", json_object_new_boolean(r->metrics[i].estimate[0] != '\0'));
                if (r->metrics[i].estimate[0])
                        json_object_object_add(m, "estimate_of", json_object_new_string(r->metrics[i].estimate));
                json_object_object_add(m, "unavailable", r->metrics[i].unavailable[0] ?
                                       json_object_new_string(r->metrics[i].unavailable) : NULL);
                json_object_object_add(m, "has_threshold", json_object_new_boolean(r->metrics[i].has_threshold));
                json_object_array_add(metrics, m);
        }
        json_object_object_add(root, "metrics", metrics);
        json_object_object_add(root, "aggregate", json_values(r, &r->aggregate,
                                                              ctx->stddev ? &ctx->stddev->aggregate : NULL));
        for (size_t i = 0; per_cpu && i < (ctx->aggregate_only ? 0 : r->n_cpus); i++)
                json_object_array_add(per_cpu, json_values(r, &r->cpus[i],
                                                           ctx->stddev ? &ctx->stddev->cpus[i] : NULL));
        if (per_cpu)
                json_object_object_add(root, "per_cpu", per_cpu);
        if (ctx->runs > 1)
                json_object_object_add(root, "runs", json_object_new_int((int) ctx->runs));
        if (ctx->interval)
                json_object_object_add(root, "partial", json_object_new_boolean(ctx->partial));
        else
                json_object_object_add(root, "interrupted", ctx->interrupted ?
                                       json_object_new_string(ctx->interrupted) : NULL);
        if (r->n_packages > 0) {
                json_object *per_package = json_object_new_array();

                for (size_t i = 0; i < r->n_packages; i++)
                        json_object_array_add(per_package, json_values(r, &r->packages[i], NULL));
                json_object_object_add(root, "per_package", per_package);
                json_object_object_add(root, "withheld",
                                       json_object_new_string(r->withheld ? r->withheld : ""));
        } else if (r->withheld && r->withheld[0])
                /* events the perf path could not count, and why */
                json_object_object_add(root, "withheld", json_object_new_string(r->withheld));
        if (ctx->command) {
                json_object *cmd = json_object_new_object(), *argv = json_object_new_array();

                for (char *const *a = ctx->command; *a; a++)
                        json_object_array_add(argv, json_object_new_string(*a));
                json_object_object_add(cmd, "argv", argv);
                json_object_object_add(cmd, "exit_status", ctx->exit_status < 0 ? NULL :
                                       json_object_new_int(ctx->exit_status));
                json_object_object_add(root, "command", cmd);
        }
        return root;
}

static json_object *json_document(OutputContext *ctx) {
        json_object *root = json_object_new_object();

        json_object_object_add(root, "kind", json_object_new_string(ctx->kind));
        json_object_object_add(root, "model", json_object_new_string(ctx->info->model_key));
        json_object_object_add(root, "interrupted",
                               ctx->interrupted ? json_object_new_string(ctx->interrupted) : NULL);
        json_object_object_add(root, "intervals", ctx->intervals ? json_object_get(ctx->intervals) :
                               json_object_new_array());
        return root;
}

/* A growing piece of text; failed when memory ran out (the text is then cut short). */
typedef struct Text {
        char *s;
        size_t n, size;
        bool failed;
} Text;

static void text_add(Text *t, const char *s, size_t n) {
        if (t->n + n + 1 > t->size) {
                size_t size = MAX(2 * t->size, t->n + n + 1 + 4096);
                char *grown = t->failed ? NULL : realloc(t->s, size);

                if (!grown) {
                        t->failed = true;
                        return;
                }
                t->s = grown;
                t->size = size;
        }
        memcpy(t->s + t->n, s, n);
        t->n += n;
}

static void text_str(Text *t, const char *s) {
        text_add(t, s, strlen(s));
}

/* A JSON string, escaped as RFC 8259 asks. */
static void text_json_string(Text *t, const char *s) {
        size_t plain = strcspn(s, "\"\\\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
                                  "\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f");

        if (s[plain] == '\0') {
                text_add(t, "\"", 1);
                text_add(t, s, plain);
                text_add(t, "\"", 1);
                return;
        }
        text_add(t, "\"", 1);
        for (const char *p = s; *p; p++) {
                char esc[8];

                if (*p == '"' || *p == '\\') {
                        esc[0] = '\\';
                        esc[1] = *p;
                        text_add(t, esc, 2);
                } else if ((unsigned char) *p < 0x20) {
                        (void) snprintf(esc, sizeof(esc), "\\u%04x", (unsigned) (unsigned char) *p);
                        text_add(t, esc, 6);
                } else
                        text_add(t, p, 1);
        }
        text_add(t, "\"", 1);
}

/* A JSON number as json-c writes a double ("%.17g", ".0" added to an integer), or null. */
static void text_json_number(Text *t, double v) {
        char number[NUMBER_TEXT_MAX + 2];
        size_t n;

        if (!isfinite(v)) {
                text_add(t, "null", 4);
                return;
        }
        n = number_format_g17(v, number);
        if (!memchr(number, '.', n) && !memchr(number, 'e', n)) {
                memcpy(number + n, ".0", 2);
                n += 2;
        }
        text_add(t, number, n);
}

/* One CPU's entry of "per_cpu", as json_values() makes it (without standard deviations);
 * names[] are the events' and then the metrics' names as JSON strings. */
static void text_json_cpu(Text *t, const pmugate_result *r, const pmugate_values *v, char *const *names) {
        char number[NUMBER_TEXT_MAX];

        text_str(t, "{\"cpu\":");
        text_add(t, number, number_format_u64(v->cpu, number));
        text_str(t, ",\"counts\":{");
        for (size_t e = 0; e < r->n_events; e++) {
                if (e > 0)
                        text_add(t, ",", 1);
                text_str(t, names[e]);
                text_str(t, ":{\"value\":");
                text_json_number(t, v->counts[e]);
                text_str(t, ",\"raw\":");
                text_add(t, number, number_format_u64(v->raw[e], number));
                text_str(t, ",\"scale\":");
                text_json_number(t, v->scale[e]);
                if (not_modelled(r, e))
                        text_str(t, ",\"not_modelled\":true");
                text_add(t, "}", 1);
        }
        text_str(t, "},\"metrics\":{");
        for (size_t i = 0; i < r->n_metrics; i++) {
                if (i > 0)
                        text_add(t, ",", 1);
                text_str(t, names[r->n_events + i]);
                text_add(t, ":", 1);
                text_json_number(t, output_metric_value(r, v, i));
        }
        text_str(t, "},\"metrics_scale\":{");
        for (size_t i = 0; i < r->n_metrics; i++) {
                if (i > 0)
                        text_add(t, ",", 1);
                text_str(t, names[r->n_events + i]);
                text_add(t, ":", 1);
                text_json_number(t, v->metric_scale[i]);
        }
        if (v->error_bound) {
                text_str(t, "},\"error_bound\":{");
                for (size_t i = 0; i < r->n_metrics; i++) {
                        if (i > 0)
                                text_add(t, ",", 1);
                        text_str(t, names[r->n_events + i]);
                        text_add(t, ":", 1);
                        text_json_number(t, metric_error_bound(r, v, i));
                }
                text_str(t, "},\"error_bound_reason\":{");
                for (size_t i = 0; i < r->n_metrics; i++) {
                        if (i > 0)
                                text_add(t, ",", 1);
                        text_str(t, names[r->n_events + i]);
                        text_add(t, ":", 1);
                        text_json_string(t, v->error_bound_reason[i] ?: "");
                }
        }
        text_str(t, "},\"thresholds\":{");
        for (size_t i = 0, first = 1; i < r->n_metrics; i++) {
                if (!r->metrics[i].has_threshold)
                        continue;
                if (!first)
                        text_add(t, ",", 1);
                first = 0;
                text_str(t, names[r->n_events + i]);
                text_str(t, isnan(v->thresholds[i]) ? ":null" : v->thresholds[i] == 1.0 ? ":true" : ":false");
        }
        text_str(t, "},\"metrics_na\":{");
        for (size_t i = 0, first = 1; i < r->n_metrics; i++) {
                const char *why = output_metric_na_reason(r, v, i);

                if (!why)
                        continue;
                if (!first)
                        text_add(t, ",", 1);
                first = 0;
                text_str(t, names[r->n_events + i]);
                text_add(t, ":", 1);
                text_json_string(t, why);
        }
        text_str(t, "}}");
}

/* A result as one JSON line. Large nodes have thousands of per-CPU entries a sample, which
 * json-c would build as objects and print number by number (docs/PERFORMANCE.md): they are
 * written here directly, each through one small buffer, after the rest, which json-c writes. */
static int write_json_line(OutputContext *ctx, const pmugate_result *r) {
        json_object *root = json_result(ctx, r, false);
        const char *head = json_object_to_json_string_ext(root, JSON_C_TO_STRING_NOSLASHESCAPE |
                                                                JSON_C_TO_STRING_PLAIN);
        size_t n = strlen(head), n_names = r->n_events + r->n_metrics;
        char **names = calloc(n_names ?: 1, sizeof(char *));
        Text t = {};
        int q = 0;

        for (size_t i = 0; names && i < n_names; i++) {
                Text name = {};

                text_json_string(&name, i < r->n_events ? r->events[i] : r->metrics[i - r->n_events].name);
                text_add(&name, "", 1);
                names[i] = name.failed ? NULL : name.s;
                if (!names[i]) {
                        free(name.s);
                        t.failed = true;
                }
        }
        /* the head is an object: its closing brace goes after "per_cpu" */
        text_add(&t, head, n > 0 ? n - 1 : 0);
        json_object_put(root);
        text_str(&t, n > 2 ? ",\"per_cpu\":[" : "\"per_cpu\":[");
        for (size_t i = 0; names && !t.failed && i < (ctx->aggregate_only ? 0 : r->n_cpus); i++) {
                if (i > 0)
                        text_add(&t, ",", 1);
                text_json_cpu(&t, r, &r->cpus[i], names);
                if (!t.failed && fwrite(t.s, 1, t.n, ctx->file) != t.n)
                        q = -EIO;
                t.n = 0;
        }
        text_str(&t, "]}\n");
        if (!names || t.failed)
                q = -ENOMEM;
        else if (q == 0 && fwrite(t.s, 1, t.n, ctx->file) != t.n)
                q = -EIO;
        free(t.s);
        free_fields(names, n_names);
        return q;
}

static int write_json(OutputContext *ctx, json_object *root, bool line) {
        fprintf(ctx->file, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_NOSLASHESCAPE |
                (line ? JSON_C_TO_STRING_PLAIN : JSON_C_TO_STRING_PRETTY)));
        json_object_put(root);
        return 0;
}

int output_result(OutputContext *ctx, const pmugate_result *r) {
        switch (ctx->format) {
        case OUTPUT_TABLE:
                write_table(ctx, r);
                break;
        case OUTPUT_CSV:
                if (write_csv(ctx, r) < 0)
                        return -ENOMEM;
                break;
        case OUTPUT_JSONL:
                if (!ctx->stddev) {
                        int q = write_json_line(ctx, r);

                        if (q < 0)
                                return q;
                } else
                        (void) write_json(ctx, json_result(ctx, r, true), true);
                break;
        case OUTPUT_JSON_DOCUMENT:
                if (!ctx->interval) {
                        (void) write_json(ctx, json_result(ctx, r, true), false);
                        break;
                }
                if (!ctx->intervals)
                        ctx->intervals = json_object_new_array();
                json_object_array_add(ctx->intervals, json_result(ctx, r, true));
                return 0;
        }
        return fflush(ctx->file) == 0 ? 0 : -errno;
}

int output_finish(OutputContext *ctx) {
        if (ctx->format != OUTPUT_JSON_DOCUMENT || !ctx->interval)
                return 0;
        (void) write_json(ctx, json_document(ctx), false);
        json_object_put(ctx->intervals);
        ctx->intervals = NULL;
        return fflush(ctx->file) == 0 ? 0 : -errno;
}

/* Mean and sample standard deviation of x[0..n) into x[0] and x[1]. */
static void combine(double *const *x, size_t n) {
        double mean = 0.0, sum = 0.0;

        for (size_t i = 0; i < n; i++)
                mean += *x[i] / (double) n;
        for (size_t i = 0; i < n; i++)
                sum += (*x[i] - mean) * (*x[i] - mean);
        *x[0] = mean;
        if (n > 1)
                *x[1] = sqrt(sum / (double) (n - 1));
}

static void combine_values(pmugate_result *const *runs, size_t n, size_t column,
                           double *(*pick)(pmugate_values *, size_t), size_t count) {
        double *x[OUTPUT_RUNS_MAX];

        for (size_t j = 0; j < count; j++) {
                for (size_t i = 0; i < n; i++)
                        x[i] = pick(column == 0 ? &runs[i]->aggregate : &runs[i]->cpus[column - 1], j);
                combine(x, n);
        }
}

static double *pick_count(pmugate_values *v, size_t j) {
        return &v->counts[j];
}

static double *pick_metric(pmugate_values *v, size_t j) {
        return &v->metrics[j];
}

int output_combine_runs(pmugate_result *const *runs, size_t n) {
        double *x[OUTPUT_RUNS_MAX];

        if (n == 0 || n > OUTPUT_RUNS_MAX)
                return -EINVAL;
        for (size_t i = 1; i < n; i++)
                if (runs[i]->n_cpus != runs[0]->n_cpus || runs[i]->n_events != runs[0]->n_events ||
                    runs[i]->n_metrics != runs[0]->n_metrics)
                        return -EINVAL;
        for (size_t k = 0; k < 1 + runs[0]->n_cpus; k++) {
                pmugate_values *first = k == 0 ? &runs[0]->aggregate : &runs[0]->cpus[k - 1];

                /* raw counts: the mean too, so that value / raw stays the mean scale */
                for (size_t e = 0; e < runs[0]->n_events; e++) {
                        double sum = 0.0;

                        for (size_t i = 0; i < n; i++)
                                sum += (double) (k == 0 ? runs[i]->aggregate.raw[e] :
                                                          runs[i]->cpus[k - 1].raw[e]);
                        first->raw[e] = (uint64_t) llround(sum / (double) n);
                }
                combine_values(runs, n, k, pick_count, runs[0]->n_events);
                combine_values(runs, n, k, pick_metric, runs[0]->n_metrics);
        }
        for (size_t i = 0; i < n; i++)
                x[i] = &runs[i]->elapsed;
        combine(x, n);
        return 0;
}

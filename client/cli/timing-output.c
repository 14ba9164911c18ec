/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing's output: table, CSV, JSON and JSON Lines
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-util.h"
#include "cli/timing-output.h"
#include "macro.h"

/* --block's histogram: at most this many lines, bars at most this wide */
#define HISTOGRAM_LINES_MAX 40U
#define BAR_WIDTH 50U

const char *timing_output_no_cycles_reason(const TimingBlock *b, TimingMode mode) {
        if (mode != TIMING_MODE_BRANCHES)
                return "IP mode records no cycles";
        if (b->stats.n > 0)
                return NULL;
        if (b->no_cycles > 0)
                return "seen only in LBR entries without a cycle count (the CPU recorded none for them)";
        return "no cycle count kept (past the client's bound)";
}

static const char *module_path(const TimingReport *r, const TimingBlock *b) {
        const TimingModule *m = timing_analysis_module(r->analysis, b->module);

        return m ? m->path : NULL;
}

static const char *base_name(const char *path) {
        const char *slash = path ? strrchr(path, '/') : NULL;

        return slash ? slash + 1 : path ? path : "";
}

static void describe_target(const TimingReport *r, char *buf, size_t size) {
        if (r->command)
                (void) snprintf(buf, size, "'%s' and its children", r->command[0]);
        else
                (void) snprintf(buf, size, "process %d", r->pid);
}

static void function_text(const TimingName *n, char *buf, size_t size) {
        if (!n->function[0])
                (void) snprintf(buf, size, "?");
        else if (n->function_offset)
                (void) snprintf(buf, size, "%s+0x%" PRIx64, n->function, n->function_offset);
        else
                (void) snprintf(buf, size, "%s", n->function);
}

/* Samples per thread, where more than one task gave samples: "tid 41: 120, tid 42: 98". */
#define THREADS_LISTED_MAX 16U
static void write_threads_line(const TimingReport *r, FILE *f) {
        const TimingThreadTally *t = r->threads;

        if (!t || t->n + (t->uncounted > 0) < 2)
                return;
        fprintf(f, " samples of %zu threads:", t->n);
        for (size_t i = 0; i < t->n && i < THREADS_LISTED_MAX; i++)
                fprintf(f, "%s tid %" PRIu32 ": %" PRIu64, i ? "," : "", t->items[i].tid, t->items[i].samples);
        if (t->n > THREADS_LISTED_MAX)
                fprintf(f, ", ... (%zu more in the JSON)", t->n - THREADS_LISTED_MAX);
        if (t->uncounted > 0)
                fprintf(f, ", %" PRIu64 " of further threads", t->uncounted);
        fprintf(f, "\n");
}

static void write_title(const TimingReport *r, FILE *f) {
        const TimingCounters *k = timing_analysis_counters(r->analysis);
        char target[320];

        describe_target(r, target, sizeof(target));
        fprintf(f, "\n Timing of %s, %s every %" PRIu64 " %s on CPUs %s, %s%s:\n", target,
                r->mode == TIMING_MODE_BRANCHES ? "branch stacks" : "IPs", r->period,
                r->mode == TIMING_MODE_BRANCHES ? "cycles" : "ns", r->cpu_list, r->model_name,
                r->simulated ? " (simulated)" : "");
        if (r->mode == TIMING_MODE_BRANCHES)
                fprintf(f,
                        " %" PRIu64 " samples, %" PRIu64 " blocks from %" PRIu64
                        " LBR entries, %zu distinct\n",
                        k->samples, k->blocks, k->entries, r->n_blocks_total);
        else
                fprintf(f, " %" PRIu64 " samples\n", k->samples);
        write_threads_line(r, f);
        fprintf(f, "\n");
}

static void write_blocks_table(const TimingReport *r, FILE *f) {
        size_t no_cycles = 0;

        fprintf(f, " %-34s %6s %9s %7s %7s %9s %9s %7s %7s  %-28s %s\n", "block (file: addresses)", "insns",
                "count", "timed", "min", "median", "mean", "p90", "max", "function", "source");
        for (size_t i = 0; i < r->n_blocks; i++) {
                const TimingBlock *b = r->blocks[i];
                const TimingName *n = &r->names[i];
                char where[128], insns[24], function[TIMING_NAME_MAX + 24];

                if (b->module == TIMING_MODULE_NONE)
                        (void) snprintf(where, sizeof(where), "0x%" PRIx64 "-0x%" PRIx64 " (no file)",
                                        b->start, b->end);
                else if (n->has_file_address)
                        (void) snprintf(where, sizeof(where), "%.16s: 0x%" PRIx64 "-0x%" PRIx64,
                                        base_name(module_path(r, b)), n->file_start, n->file_end);
                else
                        (void) snprintf(where, sizeof(where), "%.16s: @0x%" PRIx64 "-0x%" PRIx64,
                                        base_name(module_path(r, b)), b->start, b->end);
                if (n->instructions >= 0)
                        (void) snprintf(insns, sizeof(insns), "%" PRId64, n->instructions);
                else
                        (void) snprintf(insns, sizeof(insns), "?");
                function_text(n, function, sizeof(function));
                fprintf(f, " %-34s %6s %9" PRIu64 " %7" PRIu64, where, insns, b->seen, b->stats.n);
                if (b->stats.n == 0) {
                        fprintf(f, " %7s %9s %9s %7s %7s", "n/a", "n/a", "n/a", "n/a", "n/a");
                        no_cycles++;
                } else
                        fprintf(f, " %7" PRIu32 " %9.1f %9.1f %7.0f %7" PRIu32, b->stats.min,
                                b->stats.median, b->stats.mean, b->stats.p90, b->stats.max);
                fprintf(f, "  %-28s %s\n", function, n->source[0] ? n->source : "?");
        }
        fprintf(f, "\n Addresses are the file's, as objdump -d shows them; @ marks file offsets (the file's "
                "symbols could not be read).\n");
        if (no_cycles > 0)
                fprintf(f, " n/a: %zu block%s %s\n", no_cycles, no_cycles > 1 ? "s were" : " was",
                        "seen only in LBR entries without a cycle count (the CPU recorded none for them)");
        for (size_t i = 0; i < r->n_blocks; i++)
                if (r->names[i].unnamed_reason) {
                        fprintf(f, " ?: %s\n", r->names[i].unnamed_reason);
                        break;
                }
}

static void write_histogram(FILE *f, const TimingStats *s) {
        uint64_t rows[HISTOGRAM_LINES_MAX] = {}, most = 0;
        size_t per_row = (s->n_bins + HISTOGRAM_LINES_MAX - 1) / HISTOGRAM_LINES_MAX;
        size_t n_rows = (s->n_bins + per_row - 1) / per_row;

        for (size_t i = 0; i < s->n_bins; i++)
                rows[i / per_row] += s->bins[i];
        for (size_t i = 0; i < n_rows; i++)
                most = MAX(most, rows[i]);
        fprintf(f, " histogram, cycles (%zu cycle%s a line):\n", per_row * s->hist_width,
                per_row * s->hist_width > 1 ? "s" : "");
        for (size_t i = 0; i < n_rows; i++) {
                uint64_t lo = s->hist_lo + (uint64_t) i * per_row * s->hist_width;
                uint64_t hi = lo + (uint64_t) per_row * s->hist_width - 1;
                size_t bar = most ? (size_t) ((rows[i] * BAR_WIDTH + most - 1) / most) : 0;
                char range[48];

                if (lo == hi)
                        (void) snprintf(range, sizeof(range), "%" PRIu64, lo);
                else
                        (void) snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, lo, hi);
                fprintf(f, " %13s |%-*.*s %" PRIu64 "\n", range, (int) BAR_WIDTH, (int) bar,
                        "##################################################", rows[i]);
        }
}

static void write_block_detail(const TimingReport *r, FILE *f) {
        for (size_t i = 0; i < r->n_blocks; i++) {
                const TimingBlock *b = r->blocks[i];
                const TimingName *n = &r->names[i];
                const TimingStats *s = &b->stats;
                char function[TIMING_NAME_MAX + 24];

                function_text(n, function, sizeof(function));
                fprintf(f,
                        " Block %s: 0x%" PRIx64 "-0x%" PRIx64 " (file offsets 0x%" PRIx64 "-0x%" PRIx64
                        ", run-time 0x%" PRIx64 "-0x%" PRIx64 "), %s%s%s",
                        b->module == TIMING_MODULE_NONE ? "(no file)" : module_path(r, b),
                        n->has_file_address ? n->file_start : b->start,
                        n->has_file_address ? n->file_end : b->end, b->start, b->end, b->address_start,
                        b->address_end, function, n->source[0] ? " at " : "", n->source);
                if (n->instructions >= 0)
                        fprintf(f, ", %" PRId64 " instructions", n->instructions);
                fprintf(f, "\n");
                if (r->block_listing && r->block_listing[i])
                        fprintf(f, "%s", r->block_listing[i]);
                fprintf(f, " seen %" PRIu64 " times", b->seen);
                if (b->no_cycles)
                        fprintf(f, ", %" PRIu64 " of them without a cycle count", b->no_cycles);
                if (s->n == 0) {
                        fprintf(f, "; cycles n/a: %s\n\n", timing_output_no_cycles_reason(b, r->mode));
                        continue;
                }
                fprintf(f, "\n cycles: min %" PRIu32 ", median %.1f, mean %.1f, p90 %.0f, max %" PRIu32 "\n",
                        s->min, s->median, s->mean, s->p90, s->max);
                write_histogram(f, s);
                fprintf(f, "\n");
        }
}

static void write_counts_table(FILE *f, const char *what, const TimingCount *c, size_t n, uint64_t total) {
        fprintf(f, " %9s %7s  %s\n", "samples", "share", what);
        for (size_t i = 0; i < n; i++) {
                fprintf(f, " %9" PRIu64 " %6.1f%%  %s", c[i].samples,
                        total ? 100.0 * c[i].samples / total : 0.0, c[i].name);
                if (c[i].function[0])
                        fprintf(f, " (%s)", c[i].function);
                fprintf(f, "  [%s]\n", c[i].module ? base_name(c[i].module) : "no file");
        }
        fprintf(f, "\n");
}

static int write_table(const TimingReport *r) {
        FILE *f = r->file;
        uint64_t total = timing_analysis_counters(r->analysis)->samples;

        write_title(r, f);
        if (r->mode == TIMING_MODE_IPS) {
                write_counts_table(f, "function", r->functions, r->n_functions, total);
                if (r->n_lines > 0)
                        write_counts_table(f, "source line", r->lines, r->n_lines, total);
                else
                        fprintf(f, " no source lines: no debug information in the sampled files\n");
        } else if (r->block_query)
                write_block_detail(r, f);
        else
                write_blocks_table(r, f);
        if (r->command && r->exit_status >= 0)
                fprintf(f, " %s exited with status %d\n", r->command[0], r->exit_status);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

static int write_csv(const TimingReport *r) {
        FILE *f = r->file;
        uint64_t total = timing_analysis_counters(r->analysis)->samples;

        if (r->mode == TIMING_MODE_IPS) {
                fprintf(f, "kind,name,function,module,samples,share\n");
                for (int pass = 0; pass < 2; pass++) {
                        const TimingCount *c = pass == 0 ? r->functions : r->lines;
                        size_t n = pass == 0 ? r->n_functions : r->n_lines;

                        for (size_t i = 0; i < n; i++) {
                                fprintf(f, "%s,", pass == 0 ? "function" : "line");
                                cli_csv_text(f, c[i].name);
                                fputc(',', f);
                                cli_csv_text(f, c[i].function);
                                fputc(',', f);
                                cli_csv_text(f, c[i].module);
                                fprintf(f, ",%" PRIu64 ",%.6f\n", c[i].samples,
                                        total ? (double) c[i].samples / (double) total : 0.0);
                        }
                }
                return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
        }
        /* an unknown value is an empty field, never 0; cycles_na says why */
        fprintf(f,
                "module,start,end,file_start,file_end,address_start,address_end,function,function_offset,"
                "source,instructions,count,no_cycles,timed,min,median,mean,p90,max,cycles_na\n");
        for (size_t i = 0; i < r->n_blocks; i++) {
                const TimingBlock *b = r->blocks[i];
                const TimingName *n = &r->names[i];
                const TimingStats *s = &b->stats;

                cli_csv_text(f, module_path(r, b));
                fprintf(f, ",0x%" PRIx64 ",0x%" PRIx64 ",", b->start, b->end);
                if (n->has_file_address)
                        fprintf(f, "0x%" PRIx64 ",0x%" PRIx64, n->file_start, n->file_end);
                else
                        fputc(',', f);
                fprintf(f, ",0x%" PRIx64 ",0x%" PRIx64 ",", b->address_start, b->address_end);
                cli_csv_text(f, n->function);
                if (n->function[0])
                        fprintf(f, ",0x%" PRIx64, n->function_offset);
                else
                        fputc(',', f);
                fputc(',', f);
                cli_csv_text(f, n->source);
                fputc(',', f);
                if (n->instructions >= 0)
                        fprintf(f, "%" PRId64, n->instructions);
                fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, b->seen, b->no_cycles, s->n);
                if (s->n > 0)
                        fprintf(f, ",%" PRIu32 ",%.1f,%.3f,%.0f,%" PRIu32 ",\n", s->min, s->median, s->mean,
                                s->p90, s->max);
                else {
                        fprintf(f, ",,,,,,");
                        cli_csv_text(f, timing_output_no_cycles_reason(b, r->mode));
                        fputc('\n', f);
                }
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

static json_object *json_string_or_null(const char *s) {
        return s && s[0] ? json_object_new_string(s) : NULL;
}

static json_object *json_stats(const TimingStats *s) {
        json_object *o = json_object_new_object(), *h = json_object_new_object(),
                    *bins = json_object_new_array();

        json_object_object_add(o, "n", json_object_new_uint64(s->n));
        json_object_object_add(o, "min", json_object_new_uint64(s->min));
        json_object_object_add(o, "median", json_object_new_double(s->median));
        json_object_object_add(o, "mean", json_object_new_double(s->mean));
        json_object_object_add(o, "p90", json_object_new_double(s->p90));
        json_object_object_add(o, "max", json_object_new_uint64(s->max));
        for (size_t i = 0; i < s->n_bins; i++)
                json_object_array_add(bins, json_object_new_uint64(s->bins[i]));
        json_object_object_add(h, "lo", json_object_new_uint64(s->hist_lo));
        json_object_object_add(h, "width", json_object_new_uint64(s->hist_width));
        json_object_object_add(h, "counts", bins);
        json_object_object_add(o, "histogram", h);
        return o;
}

static json_object *json_block(const TimingReport *r, size_t i) {
        const TimingBlock *b = r->blocks[i];
        const TimingName *n = &r->names[i];
        json_object *o = json_object_new_object();

        json_object_object_add(o, "module", json_string_or_null(module_path(r, b)));
        json_object_object_add(o, "start", json_object_new_uint64(b->start));
        json_object_object_add(o, "end", json_object_new_uint64(b->end));
        json_object_object_add(o, "address_start", json_object_new_uint64(b->address_start));
        json_object_object_add(o, "address_end", json_object_new_uint64(b->address_end));
        json_object_object_add(o, "file_start",
                               n->has_file_address ? json_object_new_uint64(n->file_start) : NULL);
        json_object_object_add(o, "file_end",
                               n->has_file_address ? json_object_new_uint64(n->file_end) : NULL);
        json_object_object_add(o, "function", json_string_or_null(n->function));
        json_object_object_add(o, "function_offset",
                               n->function[0] ? json_object_new_uint64(n->function_offset) : NULL);
        json_object_object_add(o, "source", json_string_or_null(n->source));
        json_object_object_add(o, "instructions",
                               n->instructions >= 0 ? json_object_new_int64(n->instructions) : NULL);
        json_object_object_add(o, "count", json_object_new_uint64(b->seen));
        json_object_object_add(o, "no_cycles", json_object_new_uint64(b->no_cycles));
        json_object_object_add(o, "cycles", b->stats.n > 0 ? json_stats(&b->stats) : NULL);
        json_object_object_add(o, "cycles_na",
                               json_string_or_null(timing_output_no_cycles_reason(b, r->mode)));
        if (r->block_listing)
                json_object_object_add(o, "listing", json_string_or_null(r->block_listing[i]));
        return o;
}

static json_object *json_counts(const TimingCount *c, size_t n, uint64_t total, bool lines) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object();

                json_object_object_add(o, lines ? "source" : "function", json_object_new_string(c[i].name));
                if (lines)
                        json_object_object_add(o, "function", json_string_or_null(c[i].function));
                json_object_object_add(o, "module", json_string_or_null(c[i].module));
                json_object_object_add(o, "samples", json_object_new_uint64(c[i].samples));
                json_object_object_add(o, "share",
                                       json_object_new_double(total ? (double) c[i].samples / total : 0));
                json_object_array_add(a, o);
        }
        return a;
}

static json_object *json_counters(const TimingCounters *k) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "samples", json_object_new_uint64(k->samples));
        json_object_object_add(o, "entries", json_object_new_uint64(k->entries));
        json_object_object_add(o, "blocks", json_object_new_uint64(k->blocks));
        json_object_object_add(o, "no_cycles", json_object_new_uint64(k->no_cycles));
        json_object_object_add(o, "backwards", json_object_new_uint64(k->backwards));
        json_object_object_add(o, "too_long", json_object_new_uint64(k->too_long));
        json_object_object_add(o, "across_mappings", json_object_new_uint64(k->across_mappings));
        json_object_object_add(o, "unmapped", json_object_new_uint64(k->unmapped));
        json_object_object_add(o, "lost", json_object_new_uint64(k->lost));
        json_object_object_add(o, "throttled", json_object_new_uint64(k->throttled));
        json_object_object_add(o, "cycles_dropped", json_object_new_uint64(k->cycles_dropped));
        json_object_object_add(o, "blocks_dropped", json_object_new_uint64(k->blocks_dropped));
        json_object_object_add(o, "mappings", json_object_new_uint64(k->mappings));
        json_object_object_add(o, "mappings_dropped", json_object_new_uint64(k->mappings_dropped));
        return o;
}

/* [{"pid": P, "tid": T, "samples": N}, ...] ascending by tid; the samples of tasks past the
 * client's bound under tid null. */
static json_object *json_threads(const TimingThreadTally *t) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; i < t->n; i++) {
                json_object *o = json_object_new_object();

                json_object_object_add(o, "pid", json_object_new_int64(t->items[i].pid));
                json_object_object_add(o, "tid", json_object_new_int64(t->items[i].tid));
                json_object_object_add(o, "samples", json_object_new_uint64(t->items[i].samples));
                json_object_array_add(a, o);
        }
        if (t->uncounted > 0) {
                json_object *o = json_object_new_object();

                json_object_object_add(o, "pid", NULL);
                json_object_object_add(o, "tid", NULL);
                json_object_object_add(o, "samples", json_object_new_uint64(t->uncounted));
                json_object_array_add(a, o);
        }
        return a;
}

static int write_json(const TimingReport *r, bool one_line) {
        const TimingCounters *k = timing_analysis_counters(r->analysis);
        json_object *root = json_object_new_object();
        const char *text;
        int q = 0;

        json_object_object_add(root, "kind", json_object_new_string("timing"));
        json_object_object_add(root, "mode", json_object_new_string(timing_mode_to_string(r->mode)));
        json_object_object_add(root, "model", json_object_new_string(r->model));
        json_object_object_add(root, "model_name", json_object_new_string(r->model_name));
        json_object_object_add(root, "simulated", json_object_new_boolean(r->simulated));
        if (r->command) {
                json_object *cmd = json_object_new_array();

                for (size_t i = 0; r->command[i]; i++)
                        json_object_array_add(cmd, json_object_new_string(r->command[i]));
                json_object_object_add(root, "command", cmd);
                json_object_object_add(root, "exit_status",
                                       r->exit_status >= 0 ? json_object_new_int(r->exit_status) : NULL);
        } else
                json_object_object_add(root, "pid", json_object_new_int(r->pid));
        json_object_object_add(root, "period", json_object_new_uint64(r->period));
        json_object_object_add(root, "period_unit", json_object_new_string(r->mode == TIMING_MODE_BRANCHES ?
                                                                                   "cycles" : "ns"));
        json_object_object_add(root, "cpus", json_object_new_string(r->cpu_list));
        json_object_object_add(root, "elapsed", json_object_new_double(r->elapsed));
        json_object_object_add(root, "samples", json_object_new_uint64(k->samples));
        json_object_object_add(root, "counters", json_counters(k));
        if (r->threads)
                json_object_object_add(root, "threads", json_threads(r->threads));
        if (r->interrupted)
                json_object_object_add(root, "interrupted", json_object_new_string(r->interrupted));
        if (r->mode == TIMING_MODE_BRANCHES) {
                json_object *blocks = json_object_new_array();

                for (size_t i = 0; i < r->n_blocks; i++)
                        json_object_array_add(blocks, json_block(r, i));
                json_object_object_add(root, "blocks_total", json_object_new_uint64(r->n_blocks_total));
                if (r->block_query)
                        json_object_object_add(root, "block_query", json_object_new_string(r->block_query));
                json_object_object_add(root, "blocks", blocks);
        } else {
                json_object_object_add(root, "functions",
                                       json_counts(r->functions, r->n_functions, k->samples, false));
                json_object_object_add(root, "lines", json_counts(r->lines, r->n_lines, k->samples, true));
        }
        text = json_object_to_json_string_ext(
                root, one_line ? JSON_C_TO_STRING_PLAIN : JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
        if (!text || fprintf(r->file, "%s\n", text) < 0)
                q = -EIO;
        json_object_put(root);
        if (q >= 0 && (fflush(r->file) != 0 || ferror(r->file)))
                q = -EIO;
        return q;
}

int timing_output_write(const TimingReport *r) {
        switch (r->format) {
        case OUTPUT_CSV:
                return write_csv(r);
        case OUTPUT_JSON_DOCUMENT:
                return write_json(r, /* one_line= */ false);
        case OUTPUT_JSONL:
                return write_json(r, /* one_line= */ true);
        default:
                return write_table(r);
        }
}

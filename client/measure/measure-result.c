/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement results: multiplex scaling, per-CPU and aggregate counts, and the formulas
 * evaluated on them (the aggregate on summed counts, as perf does)
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "measure/measure-internal.h"

#define NSEC_PER_SEC 1e9

static void values_free(pmugate_values *v) {
        free(v->counts);
        free(v->raw);
        free(v->scale);
        free(v->metrics);
        free(v->thresholds);
        free(v->metric_scale);
        free(v->error_bound);
        free(v->error_bound_reason);
}

static int values_alloc(pmugate_values *v, uint32_t cpu, size_t n_events, size_t n_metrics) {
        *v = (pmugate_values) {
                .cpu = cpu,
                .package = -1,
                .counts = calloc(n_events ?: 1, sizeof(double)),
                .raw = calloc(n_events ?: 1, sizeof(uint64_t)),
                .scale = calloc(n_events ?: 1, sizeof(double)),
                .metrics = calloc(n_metrics ?: 1, sizeof(double)),
                .thresholds = calloc(n_metrics ?: 1, sizeof(double)),
                .metric_scale = calloc(n_metrics ?: 1, sizeof(double)),
                .error_bound = calloc(n_metrics ?: 1, sizeof(double)),
                .error_bound_reason = calloc(n_metrics ?: 1, sizeof(char *)),
        };
        return v->counts && v->raw && v->scale && v->metrics && v->thresholds && v->metric_scale &&
               v->error_bound && v->error_bound_reason ? 0 : -ENOMEM;
}

pmugate_result *pmugate_result_free(pmugate_result *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; r->events && i < r->n_events; i++)
                free((char *) r->events[i]);
        free((char **) r->events);
        for (size_t i = 0; r->metrics && i < r->n_metrics; i++) {
                free((char *) r->metrics[i].name);
                free((char *) r->metrics[i].label);
                free((char *) r->metrics[i].unit);
                free((char *) r->metrics[i].estimate);
                free((char *) r->metrics[i].unavailable);
        }
        free((pmugate_metric_info *) r->metrics);
        for (size_t i = 0; r->cpus && i < r->n_cpus; i++)
                values_free(&r->cpus[i]);
        free(r->cpus);
        for (size_t i = 0; r->packages && i < r->n_packages; i++)
                values_free(&r->packages[i]);
        free(r->packages);
        free((char **) r->event_units);
        free((bool *) r->not_modelled);
        values_free(&r->aggregate);
        free(r);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_result *, pmugate_result_free);

static size_t n_package_events(const pmugate_measure *m) {
        return m->package ? m->package->n_events : 0;
}

static int copy_names(const pmugate_measure *m, pmugate_result *r) {
        size_t n = m->n_programmed + n_package_events(m);
        const char **events = calloc(n ?: 1, sizeof(char *));
        const char **units = calloc(n ?: 1, sizeof(char *));
        pmugate_metric_info *metrics = calloc(m->n_metrics ?: 1, sizeof(pmugate_metric_info));
        bool *not_modelled = calloc(n ?: 1, sizeof(bool));

        r->events = events;
        r->event_units = units;
        r->metrics = metrics;
        r->not_modelled = not_modelled;
        if (!events || !units || !metrics || !not_modelled)
                return -ENOMEM;
        for (size_t p = 0; p < m->n_programmed; p++)
                not_modelled[p] = m->events[m->programmed[p]].not_modelled;
        r->n_events = n;
        r->n_metrics = m->n_metrics;
        for (size_t p = 0; p < n; p++) {
                bool pkg = p >= m->n_programmed;

                events[p] = strdup(pkg ? m->package->names[p - m->n_programmed]
                                       : m->programmed_descs[p].name);
                units[p] = pkg ? package_event_unit(m->package->kinds[p - m->n_programmed]) : "";
                if (!events[p])
                        return -ENOMEM;
        }
        for (size_t k = 0; k < m->n_metrics; k++) {
                metrics[k] = m->metrics[k].info;
                metrics[k].name = strdup(m->metrics[k].info.name);
                metrics[k].label = strdup(m->metrics[k].info.label);
                metrics[k].unit = strdup(m->metrics[k].info.unit);
                metrics[k].estimate = strdup(m->metrics[k].info.estimate);
                metrics[k].unavailable = strdup(m->metrics[k].info.unavailable);
                if (!metrics[k].name || !metrics[k].label || !metrics[k].unit || !metrics[k].estimate ||
                    !metrics[k].unavailable)
                        return -ENOMEM;
        }
        return 0;
}

double measure_scaled_count(uint64_t raw, double enabled, double total, bool multiplexed, double *ret_scale) {
        if (!multiplexed) {
                *ret_scale = 1.0;
                return (double) raw;
        }
        if (enabled <= 0.0) {
                *ret_scale = INFINITY;
                return NAN;
        }
        *ret_scale = total / enabled;
        return (double) raw * *ret_scale;
}

static void scale_cpu(const pmugate_measure *m, const CpuAccum *now, const CpuAccum *base, pmugate_values *v) {
        double total = now->total - (base ? base->total : 0.0);

        for (size_t p = 0; p < m->n_programmed; p++) {
                bool multiplexed = measure_multiplexed(m, p);
                double enabled = now->enabled[p] - (base ? base->enabled[p] : 0.0);

                v->raw[p] = now->raw[p] - (base ? base->raw[p] : 0);
                v->counts[p] = measure_scaled_count(v->raw[p], enabled, total, multiplexed, &v->scale[p]);
                /* the simulator's 0 for an event it does not model is no count */
                if (m->events[m->programmed[p]].not_modelled)
                        v->counts[p] = NAN;
        }
}

/* row_cpus: how many CPUs' counts the row sums, so that a per-CPU quantity (a clock) can be
 * averaged over them rather than summed. */
static void set_row_cpus(pmugate_measure *m, size_t n) {
        metric_set_set(m->metric_set, (size_t) m->row_cpus_variable, (double) n);
}

/* The topology constants for a CPU's row (cpu >= 0: SMT_on for its own core) or for the sums
 * (cpu < 0: the machine's SMT_on, as perf; not core-wide when a measured CPU's core lacks its
 * sibling, since the core sums would then be halved). */
static void set_topology(pmugate_measure *m, ssize_t cpu) {
        bool smt_on = cpu >= 0 && m->cpu_smt_on ? m->cpu_smt_on[cpu] : m->smt_on;
        bool core_wide = cpu >= 0 ? m->core_wide : m->aggregate_core_wide;

        metric_set_set(m->metric_set, (size_t) m->smt_on_variable, smt_on);
        metric_set_set(m->metric_set, (size_t) m->core_wide_variable, core_wide);
        set_row_cpus(m, cpu >= 0 ? 1 : m->n_cpus);
}

static void set_duration(pmugate_measure *m, double seconds) {
        metric_set_set(m->metric_set, (size_t) m->duration_variable, seconds);
}

static void set_constants(pmugate_measure *m, double seconds) {
        set_topology(m, -1);
        metric_set_set(m->metric_set, (size_t) m->slots_width_variable, m->info->slots_width);
        metric_set_set(m->metric_set, (size_t) m->duration_variable, seconds);
}

/* Sets every event variable from counts (per programmed event, then per package event) and
 * the core sums from core_counts; events whose condition did not hold are NaN. */
static void set_events(pmugate_measure *m, const double *counts, const double *core_counts) {
        for (size_t e = 0; e < n_package_events(m); e++)
                metric_set_set(m->metric_set, (size_t) m->package->variables[e],
                               counts[m->n_programmed + e]);
        for (size_t i = 0, p = 0; i < m->n_events; i++) {
                const MeasureEvent *e = &m->events[i];
                bool programmed = p < m->n_programmed && m->programmed[p] == i;

                bool counted = programmed && !e->not_modelled;

                metric_set_set(m->metric_set, (size_t) e->variable, counted ? counts[p] : NAN);
                metric_set_set(m->metric_set, (size_t) e->core_variable, counted ? core_counts[p] : NAN);
                if (programmed)
                        p++;
        }
}

/* Relative step by which bound_metrics() moves one multiplexed count to see how a node
 * depends on it, and how far from linear that dependence may be before it counts as a ratio. */
#define BOUND_STEP 1e-3
#define BOUND_LINEAR_TOLERANCE 1e-6
/* One PERF_METRICS byte is within 1/255 of its fraction; a node may use two (a difference). */
#define BOUND_PERF_METRICS (2.0 / 255.0)

static const char bound_exact[] = "no multiplexed event: exact up to integer counts";
static const char bound_quantized[] = "PERF_METRICS fractions: 8-bit quantization, up to 2/255";
static const char bound_fraction[] =
        "fraction over counts every set shares: sum over its multiplexed terms t of (1 - 1/scale) * max(t, 1 - t)";
static const char bound_difference_small[] =
        "difference of multiplexed terms: the bound, the sum of its terms' bounds, exceeds the value, so its "
        "relative error is unbounded";
static const char bound_ratio[] =
        "ratio of multiplexed counts (a divisor takes turns): each stands for the span with its own turns, "
        "no bound holds without knowing the workload's phases";
static const char bound_not_fraction[] =
        "multiplexed, and not a fraction of slots or cycles: no range to bound it by";
static const char bound_na[] = "n/a";
static const char bound_not_per_cpu[] =
        "not computed per CPU on more than 64 CPUs (PMUGATE_BOUND_CPUS_MAX): see the aggregate's";

double measure_term_bound(double t, double scale) {
        t = fmin(fabs(t), 1.0);
        return (1.0 - 1.0 / scale) * fmax(t, 1.0 - t);
}

/* Error bounds per metric (docs/TOPDOWN.md, "Error bounds"). A multiplexed count stands for the
 * whole span with the rate of its own turns, a share 1/scale of it. Where a node is linear in
 * its multiplexed counts over denominators every set counts, each such term t is a fraction
 * in [0, 1] of that denominator, and the part of the span it was not counted in holds any
 * value in [0, 1]: its error is at most (1 - 1/scale) * max(t, 1 - t), and a node's at most
 * the sum over its terms. The terms are found by moving each multiplexed count by a small
 * step, with the event variables as set_events() left them. */
static int bound_metrics(pmugate_measure *m, pmugate_values *v, const double *values) {
        size_t n_formulas = metric_set_n_formulas(m->metric_set);
        _cleanup_free_ double *up = calloc(n_formulas ?: 1, sizeof(double));
        _cleanup_free_ double *down = calloc(n_formulas ?: 1, sizeof(double));
        _cleanup_free_ double *sum = calloc(m->n_metrics ?: 1, sizeof(double));
        _cleanup_free_ bool *ratio = calloc(m->n_metrics ?: 1, sizeof(bool));
        _cleanup_free_ bool *muxed = calloc(m->n_metrics ?: 1, sizeof(bool));
        _cleanup_free_ bool *subtracted = calloc(m->n_metrics ?: 1, sizeof(bool));
        int r;

        if (!up || !down || !sum || !ratio || !muxed || !subtracted)
                return -ENOMEM;
        if (v->cpu != UINT32_MAX && m->n_cpus > PMUGATE_BOUND_CPUS_MAX) {
                for (size_t k = 0; k < m->n_metrics; k++) {
                        v->error_bound[k] = NAN;
                        v->error_bound_reason[k] = bound_not_per_cpu;
                }
                return 0;
        }
        for (size_t i = 0, p = 0; i < m->n_events && p < m->n_programmed; i++) {
                const MeasureEvent *e = &m->events[i];
                double own, core, scale;

                if (!e->programmed)
                        continue;
                scale = v->scale[p];
                if (!measure_multiplexed(m, p) || !(scale > 1.0) || !isfinite(scale) || e->variable < 0) {
                        p++;
                        continue;
                }
                own = metric_set_get(m->metric_set, (size_t) e->variable);
                core = e->core_variable >= 0 ? metric_set_get(m->metric_set, (size_t) e->core_variable) : NAN;
                for (int dir = 0; dir < 2; dir++) {
                        double f = dir == 0 ? 1.0 + BOUND_STEP : 1.0 - BOUND_STEP;

                        metric_set_set(m->metric_set, (size_t) e->variable, own * f);
                        if (e->core_variable >= 0)
                                metric_set_set(m->metric_set, (size_t) e->core_variable, core * f);
                        r = metric_set_evaluate(m->metric_set, dir == 0 ? up : down, n_formulas);
                        if (r < 0)
                                return r;
                }
                metric_set_set(m->metric_set, (size_t) e->variable, own);
                if (e->core_variable >= 0)
                        metric_set_set(m->metric_set, (size_t) e->core_variable, core);
                for (size_t k = 0; k < m->n_metrics; k++) {
                        size_t fi = (size_t) m->metrics[k].formula;
                        double du = up[fi] - values[fi], dd = values[fi] - down[fi];
                        double term = (du + dd) / (2.0 * BOUND_STEP);

                        if (!isfinite(term) || (du == 0.0 && dd == 0.0))
                                continue;
                        muxed[k] = true;
                        if (term < 0.0)
                                subtracted[k] = true;
                        if (fabs(du - dd) > BOUND_LINEAR_TOLERANCE * fmax(fabs(du), fabs(dd)) + 1e-15)
                                ratio[k] = true;
                        sum[k] += measure_term_bound(term, scale);
                }
                p++;
        }
        for (size_t k = 0; k < m->n_metrics; k++) {
                const MeasureMetric *mm = &m->metrics[k];
                bool quantized = false;

                for (size_t q = 0; q < mm->n_programmed; q++)
                        if (m->schedule->placements[mm->programmed[q]].kind == PLACE_PERF_METRICS)
                                quantized = true;
                if (isnan(v->metrics[k])) {
                        v->error_bound[k] = NAN;
                        v->error_bound_reason[k] = bound_na;
                } else if (!muxed[k]) {
                        v->error_bound[k] = quantized ? BOUND_PERF_METRICS : 0.0;
                        v->error_bound_reason[k] = quantized ? bound_quantized : bound_exact;
                } else if (strcmp(mm->info.unit, "%") != 0) {
                        v->error_bound[k] = NAN;
                        v->error_bound_reason[k] = bound_not_fraction;
                } else if (ratio[k]) {
                        v->error_bound[k] = NAN;
                        v->error_bound_reason[k] = bound_ratio;
                } else {
                        v->error_bound[k] = fmin(sum[k] + (quantized ? BOUND_PERF_METRICS : 0.0), 1.0);
                        v->error_bound_reason[k] = subtracted[k] && v->error_bound[k] > fabs(v->metrics[k]) ?
                                                   bound_difference_small : bound_fraction;
                }
        }
        return 0;
}

static int evaluate(pmugate_measure *m, pmugate_values *v) {
        _cleanup_free_ double *values = calloc(metric_set_n_formulas(m->metric_set) ?: 1, sizeof(double));
        int r;

        if (!values)
                return -ENOMEM;
        r = metric_set_evaluate(m->metric_set, values, metric_set_n_formulas(m->metric_set));
        if (r < 0)
                return r;
        for (size_t k = 0; k < m->n_metrics; k++) {
                const MeasureMetric *mm = &m->metrics[k];
                double scale = 1.0, t = mm->threshold >= 0 ? values[mm->threshold] : NAN;

                v->metrics[k] = values[mm->formula];
                v->thresholds[k] = isnan(t) || isnan(v->metrics[k]) ? NAN : t != 0;
                for (size_t p = 0; p < mm->n_programmed; p++)
                        if (!(v->scale[mm->programmed[p]] <= scale))
                                scale = v->scale[mm->programmed[p]];
                v->metric_scale[k] = scale;
                /* An event that never ran is NaN, but max(0, NaN) is 0 in muparser: a node
                 * whose inputs were not all counted, or that pmugate cannot compute, is n/a. */
                if (!isfinite(scale) || mm->info.unavailable[0]) {
                        v->metrics[k] = NAN;
                        v->thresholds[k] = NAN;
                }
        }
        return bound_metrics(m, v, values);
}

/* Time-base units CPU i counted in the span. */
static double span_total(const pmugate_measure *m, const CpuAccum *base, size_t i) {
        return m->accum[i].total - (base ? base[i].total : 0.0);
}

/* Wall-clock length of CPU i's counting windows in the span. */
static double span_wall(const pmugate_measure *m, const CpuAccum *base, size_t i) {
        return m->accum[i].wall - (base ? base[i].wall : 0.0);
}

/* Seconds CPU i's counters counted in the span, from the TSC read in the same batch as its
 * counts, or perf's time_enabled of the same read; NaN where neither times them. */
static double span_seconds(const pmugate_measure *m, const CpuAccum *base, size_t i) {
        double wall = span_wall(m, base, i);

        if (!(wall > 0.0))
                return NAN;
        if (m->via_perf)
                return wall / NSEC_PER_SEC;
        if (m->wall_in_tsc)
                return wall / (double) m->info->tsc_hz;
        return NAN;
}

/* The counted window of the CPUs [0, n) of the span whose package is package (any package
 * when negative): the mean of their windows, or fallback when a CPU's is unknown. */
static double rows_window(const pmugate_measure *m, const CpuAccum *base, const pmugate_result *r,
                          int32_t package, double fallback) {
        double sum = 0.0;
        size_t n = 0;

        for (size_t i = 0; i < m->n_cpus; i++) {
                double s;

                if (package >= 0 && r->cpus[i].package != package)
                        continue;
                s = span_seconds(m, base, i);
                if (isnan(s))
                        return fallback;
                sum += s;
                n++;
        }
        return n > 0 ? sum / (double) n : fallback;
}

static const char WINDOW_TSC[] = "tsc", WINDOW_PERF[] = "perf", WINDOW_CLIENT[] = "client";

static int cpu_package(const pmugate_measure *m, uint32_t cpu) {
        for (size_t i = 0; i < m->info->n_cpus; i++)
                if (m->info->cpus[i].cpu == cpu)
                        return m->info->cpus[i].package;
        return -1;
}

/* Rows per package: its measured CPUs' counts summed (core sums likewise), its package events;
 * and the package events of the node in the aggregate (NaN when a package withholds one). */
/* What brings package p's events from their own window, timed by the TSC read in their batch,
 * to the window of its CPUs' counters (seconds): the two batches are a round trip apart, so
 * that a ratio of a package event to a core event (AMD's L3 accesses per instruction) would
 * be off by the difference, and a rate would divide by the wrong time. 1 where either window
 * is not timed. */
static double package_stretch(const pmugate_measure *m, const pmugate_result *r, size_t p, bool interval,
                              double window) {
        uint64_t ticks = package_events_ticks(m->package, p, interval);

        if (ticks == 0 || r->window_clock == WINDOW_CLIENT || m->info->tsc_hz == 0 || !(window > 0.0))
                return 1.0;
        return window * (double) m->info->tsc_hz / (double) ticks;
}

/* Package rows, and in ret_node (n_programmed + package events) the aggregate's counts as the
 * formulas see them: the package events brought to the core counters' windows. Counts in the
 * result stay what the counters counted. */
static int compute_packages(pmugate_measure *m, const CpuAccum *base, pmugate_result *r, double *ret_node) {
        const PackageEvents *pe = m->package;
        bool interval = base != NULL;
        size_t n = m->n_programmed;
        int q;

        for (size_t i = 0; i < m->n_cpus; i++) {
                r->cpus[i].package = cpu_package(m, m->cpus[i]);
                for (size_t e = 0; pe && e < pe->n_events; e++) {
                        r->cpus[i].counts[n + e] = NAN;
                        r->cpus[i].scale[n + e] = 1.0;
                }
        }
        if (!pe)
                return 0;
        for (size_t e = 0; e < pe->n_events; e++) {
                ret_node[n + e] = 0.0;
                r->aggregate.counts[n + e] = 0.0;
                r->aggregate.scale[n + e] = 1.0;
        }
        for (size_t p = 0; p < pe->n_packages; p++) {
                pmugate_values *v = &r->packages[p];
                _cleanup_free_ double *core = calloc(n ?: 1, sizeof(double));
                _cleanup_free_ double *seen = calloc(n + pe->n_events, sizeof(double));
                size_t package_cpus = 0;
                double window, stretch;

                if (!core || !seen)
                        return -ENOMEM;
                v->package = pe->packages[p];
                for (size_t i = 0; i < m->n_cpus; i++) {
                        if (r->cpus[i].package != v->package)
                                continue;
                        package_cpus++;
                        for (size_t k = 0; k < n; k++) {
                                v->counts[k] += r->cpus[i].counts[k];
                                v->raw[k] += r->cpus[i].raw[k];
                                core[k] += r->cpus[i].counts[k];
                        }
                }
                for (size_t k = 0; k < n; k++)
                        v->scale[k] = r->aggregate.scale[k];
                window = rows_window(m, base, r, v->package, r->window);
                stretch = package_stretch(m, r, p, interval, window);
                for (size_t e = 0; e < pe->n_events; e++) {
                        v->counts[n + e] = package_events_value(pe, p, e, interval);
                        v->raw[n + e] = package_events_raw(pe, p, e, interval);
                        v->scale[n + e] = 1.0;
                        r->aggregate.counts[n + e] += v->counts[n + e];
                        r->aggregate.raw[n + e] += v->raw[n + e];
                        ret_node[n + e] += v->counts[n + e] * stretch;
                }
                memcpy(seen, v->counts, (n + pe->n_events) * sizeof(double));
                for (size_t e = 0; e < pe->n_events; e++)
                        seen[n + e] *= stretch;
                set_events(m, seen, core);
                set_row_cpus(m, package_cpus);
                set_duration(m, window);
                q = evaluate(m, v);
                set_row_cpus(m, m->n_cpus);
                set_duration(m, r->window);
                if (q < 0)
                        return q;
        }
        return 0;
}

static int compute(pmugate_measure *m, const CpuAccum *base, pmugate_result *r) {
        size_t n = m->n_programmed;
        _cleanup_free_ double *core = calloc(n ?: 1, sizeof(double));
        _cleanup_free_ double *core_total = calloc(n ?: 1, sizeof(double));
        _cleanup_free_ double *enabled_total = calloc(n ?: 1, sizeof(double));
        _cleanup_free_ double *node = calloc(n + n_package_events(m) ?: 1, sizeof(double));
        double total = 0.0;
        int q;

        if (!core || !core_total || !enabled_total || !node)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_cpus; i++) {
                scale_cpu(m, &m->accum[i], base ? &base[i] : NULL, &r->cpus[i]);
                total += span_total(m, base, i);
                for (size_t p = 0; p < n; p++) {
                        r->aggregate.counts[p] += r->cpus[i].counts[p];
                        r->aggregate.raw[p] += r->cpus[i].raw[p];
                        enabled_total[p] += m->accum[i].enabled[p] - (base ? base[i].enabled[p] : 0.0);
                }
        }
        set_constants(m, r->window);
        for (size_t i = 0; i < m->n_cpus; i++)
                for (size_t e = 0; e < n_package_events(m); e++)
                        r->cpus[i].counts[n + e] = NAN;
        for (size_t i = 0; i < m->n_cpus; i++) {
                /* What AnyThread counting would give: the sum over the measured threads of the core.
                 * Each CPU's counters stop a little apart from its sibling's within a batch, so a
                 * sibling's count is brought to this CPU's window by their wall-clock lengths;
                 * not by the time base, which counts unhalted cycles only and so would scale by
                 * the siblings' load ratio. */
                for (size_t p = 0; p < n; p++)
                        core[p] = 0.0;
                for (size_t k = 0; k < m->n_siblings[i]; k++) {
                        size_t s = m->siblings[i][k];
                        double mine = span_wall(m, base, i), theirs = span_wall(m, base, s);
                        double ratio = mine > 0.0 && theirs > 0.0 ? mine / theirs : 1.0;

                        for (size_t p = 0; p < n; p++)
                                core[p] += r->cpus[s].counts[p] * ratio;
                }
                for (size_t p = 0; p < n; p++)
                        core_total[p] += core[p];
                set_events(m, r->cpus[i].counts, core);
                set_topology(m, (ssize_t) i);
                if (r->window_clock != WINDOW_CLIENT)
                        set_duration(m, span_seconds(m, base, i));
                q = evaluate(m, &r->cpus[i]);
                set_topology(m, -1);
                set_duration(m, r->window);
                if (q < 0)
                        return q;
        }
        for (size_t p = 0; p < n; p++) {
                bool multiplexed = measure_multiplexed(m, p);

                if (!multiplexed)
                        r->aggregate.scale[p] = 1.0;
                else
                        r->aggregate.scale[p] = enabled_total[p] > 0.0 ? total / enabled_total[p] : INFINITY;
        }
        memcpy(node, r->aggregate.counts, (n + n_package_events(m)) * sizeof(double));
        q = compute_packages(m, base, r, node);
        if (q < 0)
                return q;
        set_events(m, node, core_total);
        return evaluate(m, &r->aggregate);
}

int pmugate_measure_read(pmugate_measure *m, pmugate_span span, pmugate_result **ret) {
        _cleanup_(pmugate_result_freep) pmugate_result *r = NULL;
        bool interval = span == PMUGATE_SPAN_INTERVAL;
        int q;

        if (!m || !ret || !m->started || (span != PMUGATE_SPAN_TOTAL && !interval))
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        q = copy_names(m, r);
        if (q < 0)
                return q;
        r->cpus = calloc(m->n_cpus, sizeof(pmugate_values));
        if (!r->cpus)
                return -ENOMEM;
        r->n_cpus = m->n_cpus;
        for (size_t i = 0; i < m->n_cpus; i++)
                if (values_alloc(&r->cpus[i], m->cpus[i], r->n_events, m->n_metrics) < 0)
                        return -ENOMEM;
        if (values_alloc(&r->aggregate, UINT32_MAX, r->n_events, m->n_metrics) < 0)
                return -ENOMEM;
        if (m->package) {
                r->packages = calloc(m->package->n_packages ?: 1, sizeof(pmugate_values));
                if (!r->packages)
                        return -ENOMEM;
                r->n_packages = m->package->n_packages;
                for (size_t p = 0; p < r->n_packages; p++)
                        if (values_alloc(&r->packages[p], UINT32_MAX, r->n_events, m->n_metrics) < 0)
                                return -ENOMEM;
        }
        r->withheld = measure_withheld_note(m);
        r->event_sets = pmugate_measure_event_sets(m);
        r->start = interval ? (double) (m->mark.ns - m->start_ns) / NSEC_PER_SEC : 0.0;
        r->elapsed = (double) (m->last_sample_ns - (interval ? m->mark.ns : m->start_ns)) / NSEC_PER_SEC;
        r->window = rows_window(m, interval ? m->mark.cpus : NULL, r, -1, NAN);
        r->window_clock = m->via_perf ? WINDOW_PERF : WINDOW_TSC;
        if (isnan(r->window)) {
                r->window = r->elapsed;
                r->window_clock = WINDOW_CLIENT;
        }
        r->samples = m->samples - (interval ? m->mark.samples : 0);
        r->resets = m->resets - (interval ? m->mark.resets : 0);
        q = compute(m, interval ? m->mark.cpus : NULL, r);
        if (q < 0)
                return q;
        if (interval) {
                if (m->package)
                        package_events_mark(m->package);
                measure_accum_copy(m, m->mark.cpus, m->accum);
                m->mark.ns = m->last_sample_ns;
                m->mark.samples = m->samples;
                m->mark.resets = m->resets;
        }
        *ret = TAKE_PTR(r);
        return 0;
}

int pmugate_result_metric_index(const pmugate_result *r, const char *name) {
        for (size_t i = 0; r && name && i < r->n_metrics; i++)
                if (strcmp(r->metrics[i].name, name) == 0)
                        return (int) i;
        return -ENOENT;
}

int pmugate_result_event_index(const pmugate_result *r, const char *name) {
        for (size_t i = 0; r && name && i < r->n_events; i++)
                if (strcmp(r->events[i], name) == 0)
                        return (int) i;
        return -ENOENT;
}

int measure_result_from_counts(pmugate_measure *m, const uint32_t *row_cpus, uint64_t *const *raw,
                               const double *seconds, size_t n_rows, pmugate_result **ret) {
        _cleanup_(pmugate_result_freep) pmugate_result *r = NULL;
        size_t n = m->n_programmed;
        double longest = 0.0;
        int q;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        q = copy_names(m, r);
        if (q < 0)
                return q;
        r->cpus = calloc(n_rows ?: 1, sizeof(pmugate_values));
        if (!r->cpus)
                return -ENOMEM;
        r->n_cpus = n_rows;
        r->event_sets = 1;
        for (size_t i = 0; i < n_rows; i++)
                if (values_alloc(&r->cpus[i], row_cpus[i], n, m->n_metrics) < 0)
                        return -ENOMEM;
        if (values_alloc(&r->aggregate, UINT32_MAX, n, m->n_metrics) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n_rows; i++) {
                pmugate_values *v = &r->cpus[i];

                for (size_t p = 0; p < n; p++) {
                        v->raw[p] = raw[i][p];
                        v->counts[p] = (double) raw[i][p];
                        v->scale[p] = 1.0;
                        r->aggregate.raw[p] += raw[i][p];
                        r->aggregate.counts[p] += (double) raw[i][p];
                }
                /* a thread alone: the sum over its core is what it counted itself */
                set_constants(m, seconds[i]);
                set_row_cpus(m, 1);
                set_events(m, v->counts, v->counts);
                q = evaluate(m, v);
                if (q < 0)
                        return q;
                if (seconds[i] > longest)
                        longest = seconds[i];
        }
        for (size_t p = 0; p < n; p++)
                r->aggregate.scale[p] = 1.0;
        r->elapsed = r->window = longest;
        r->window_clock = WINDOW_CLIENT;
        set_constants(m, longest);
        set_row_cpus(m, n_rows);
        set_events(m, r->aggregate.counts, r->aggregate.counts);
        q = evaluate(m, &r->aggregate);
        if (q < 0)
                return q;
        *ret = TAKE_PTR(r);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement set-up: the machine from hello, the group's events resolved and placed on
 * counters, and its formulas compiled
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reason.h"
#include "events/group-list.h"
#include "events/groups.h"
#include "macro.h"
#include "measure/measure-internal.h"
#include "measure/measure-program.h"
#include "pmugate-limits.h"

#define LEVELS_MAX 16U
#define FRONTEND_REASON_FORMAT                                                                        \
        "%s needs MSR_PEBS_FRONTEND = 0x%x, which pmugated never writes; it counts where the counters " \
        "go through perf (pmugated --counters=perf), whose kernel sets it"

/* Evaluates an [events if CONDITION] condition over the constants alone. */
static int condition_holds(const pmugate_measure *m, const char *condition, bool *ret, char *reterr_reason,
                           size_t reason_size) {
        _cleanup_(metric_set_freep) MetricSet *s = NULL;
        double value;
        int r;

        r = metric_set_new(&s);
        if (r < 0)
                return r;
        if ((r = metric_set_add_variable(s, CONSTANT_SMT_ON)) < 0 ||
            (r = metric_set_add_variable(s, CONSTANT_CORE_WIDE)) < 0 ||
            (r = metric_set_add_variable(s, CONSTANT_SLOTS_WIDTH)) < 0 ||
            (r = metric_set_add_variable(s, CONSTANT_ROW_CPUS)) < 0)
                return r;
        r = metric_set_add_formula(s, "condition", condition, reterr_reason, reason_size);
        if (r < 0)
                return r;
        r = metric_set_compile(s, reterr_reason, reason_size);
        if (r < 0)
                return r;
        metric_set_set(s, 0, m->smt_on);
        metric_set_set(s, 1, m->core_wide);
        metric_set_set(s, 2, m->info->slots_width);
        r = metric_set_evaluate(s, &value, 1);
        if (r < 0)
                return r;
        /* as in perf, only exactly 0 is false */
        *ret = value != 0.0;
        return 0;
}

/* A package event is counted per package of the measured CPUs, not placed on core counters. */
static int measure_add_package_event(pmugate_measure *m, const char *name, const char *condition,
                                     char *reterr_reason, size_t reason_size) {
        char variable[EVENT_NAME_MAX];
        int r, e;

        if (condition)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "%s is a package event and is always counted: list it outside "
                                   "[events if]", name);
        e = package_events_add(&m->package, name);
        if (e == -EEXIST)
                return reason_fail(reterr_reason, reason_size, -EINVAL, "event %s is listed twice", name);
        if (e < 0)
                return reason_fail(reterr_reason, reason_size, e, "%s: %s", name, pmugate_strerror(e));
        r = event_variable_name(name, variable, sizeof(variable));
        if (r < 0)
                return r;
        m->package->variables[e] = metric_set_add_variable(m->metric_set, variable);
        if (m->package->variables[e] < 0)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "event %s: its formula name '%s' is taken", name, variable);
        return 0;
}

static int add_event(pmugate_measure *m, const char *name, const char *condition, bool pinned,
                     char *reterr_reason, size_t reason_size) {
        MeasureEvent *e;
        bool usr = !(m->flags & (PMUGATE_MEASURE_USER | PMUGATE_MEASURE_KERNEL)) || (m->flags & PMUGATE_MEASURE_USER);
        bool os = !(m->flags & (PMUGATE_MEASURE_USER | PMUGATE_MEASURE_KERNEL)) || (m->flags & PMUGATE_MEASURE_KERNEL);
        char variable[EVENT_NAME_MAX], core_variable[EVENT_NAME_MAX + sizeof(CORE_SUM_PREFIX)];
        bool holds = true;
        int r;

        if (m->n_events >= SCHEDULE_EVENTS_MAX)
                return reason_fail(reterr_reason, reason_size, -E2BIG, "more than %u events", SCHEDULE_EVENTS_MAX);
        e = &m->events[m->n_events];
        *e = (MeasureEvent) { .variable = -1, .core_variable = -1 };
        /* the kernel's software events need no PMU: the perf path counts them anywhere */
        if (event_resolve_software(name, &e->desc) >= 0)
                m->via_perf = true;
        else if (m->software_only)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP, "%s: %s", name, m->software_only_reason);
        else if (package_event_lookup(name, NULL))
                return measure_add_package_event(m, name, condition, reterr_reason, reason_size);
        else {
                r = event_resolve(m->model, name, &e->desc, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        /* by the one spelling: "cycles" and "cpu_clk_unhalted.thread" are the same event */
        for (size_t i = 0; i < m->n_events; i++)
                if (strcmp(m->events[i].desc.name, e->desc.name) == 0)
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "event %s is listed twice%s%s%s",
                                           e->desc.name, strcmp(name, e->desc.name) != 0 ? " (as " : "",
                                           strcmp(name, e->desc.name) != 0 ? name : "",
                                           strcmp(name, e->desc.name) != 0 ? ")" : "");
        e->desc.pinned = pinned;
        e->desc.usr = e->desc.usr && usr;
        e->desc.os = e->desc.os && os;
        if (!e->desc.usr && !e->desc.os)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "%s would count in no ring (:u or :k against the flags)",
                                   name);
        if (condition) {
                r = condition_holds(m, condition, &holds, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        e->programmed = holds;

        r = event_variable_name(name, variable, sizeof(variable));
        if (r < 0)
                return r;
        (void) snprintf(core_variable, sizeof(core_variable), "%s%s", CORE_SUM_PREFIX, variable);
        e->variable = metric_set_add_variable(m->metric_set, variable);
        e->core_variable = e->variable >= 0 ? metric_set_add_variable(m->metric_set, core_variable) : e->variable;
        if (e->variable < 0 || e->core_variable < 0)
                return reason_fail(reterr_reason, reason_size, e->variable == -EEXIST ? -EINVAL : e->variable,
                                   "event %s: its formula name '%s' is taken (by another event or a constant)", name,
                                   variable);
        m->n_events++;
        return 0;
}

/* An event that counts what it names only with its MSR_PEBS_FRONTEND facet (UOPS_RETIRED.MS on
 * Sapphire Rapids) is programmed where the counters go through perf, whose kernel sets the
 * facet; through the registers it would count another facet, since pmugated never writes that
 * register: a group's metrics that use it are n/a with the reason (find_metric_events()), and
 * asked for by name (events from n_group_events on) it is refused. Decided once every event is
 * known, as a software event among them moves the measurement to perf. */
static int hold_back_frontend_events(pmugate_measure *m, size_t n_group_events, char *reterr_reason,
                                     size_t reason_size) {
        for (size_t i = 0; i < m->n_events; i++) {
                MeasureEvent *e = &m->events[i];

                if (!e->desc.frontend || m->via_perf)
                        continue;
                if (i >= n_group_events)
                        return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP, FRONTEND_REASON_FORMAT,
                                           e->desc.name, e->desc.frontend);
                e->programmed = false;
                e->needs_perf = true;
        }
        return 0;
}

static int add_events_list(pmugate_measure *m, const char *list, char *reterr_reason, size_t reason_size) {
        _cleanup_free_ char *buf = strdup(list);
        char *saveptr = NULL;
        int r;

        if (!buf)
                return -ENOMEM;
        for (char *w = strtok_r(buf, ", \t", &saveptr); w; w = strtok_r(NULL, ", \t", &saveptr)) {
                r = add_event(m, w, NULL, false, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A metric's threshold (perf's MetricThreshold) is one more formula, NAME.threshold. */
static int add_threshold(pmugate_measure *m, const GroupMetric *gm, char *reterr_reason, size_t reason_size) {
        char name[METRIC_NAME_MAX + sizeof(THRESHOLD_SUFFIX)];

        if (!gm->threshold)
                return 0;
        (void) snprintf(name, sizeof(name), "%s%s", gm->name, THRESHOLD_SUFFIX);
        return metric_set_add_formula(m->metric_set, name, gm->threshold, reterr_reason, reason_size);
}

/* On a simulated PMU that says what it counts: whether an event on a generic counter is among
 * it. Fixed-counter events and PERF_METRICS are always simulated. */
static bool event_not_modelled(const pmugate_measure *m, const EventDesc *d) {
        uint64_t config = d->config & EVENT_CONFIG_MASK_AMD;

        if (!m->info->simulated || !m->info->sim_events || d->kind != EVENT_COUNTER || d->fixed >= 0)
                return false;
        for (size_t i = 0; i < m->info->n_sim_events; i++)
                if (m->info->sim_events[i] == config)
                        return false;
        return true;
}

/* A metric that uses an event the simulator does not model is n/a with that reason, not the
 * value its 0 count would give. */
static int mark_not_modelled(pmugate_measure *m, MeasureMetric *mm) {
        char reason[PMUGATE_REASON_MAX];

        for (size_t p = 0; p < mm->n_programmed; p++) {
                const MeasureEvent *e = &m->events[m->programmed[mm->programmed[p]]];

                if (!e->not_modelled || mm->info.unavailable[0])
                        continue;
                (void) snprintf(reason, sizeof(reason), "not modelled: the simulator does not count %s",
                                e->desc.name);
                free((char *) mm->info.unavailable);
                mm->info.unavailable = strdup(reason);
                if (!mm->info.unavailable)
                        return -ENOMEM;
        }
        return 0;
}

/* A metric that uses an event held back for its MSR_PEBS_FRONTEND facet is n/a with that
 * reason (used: the variables the metric uses). */
static int mark_needs_perf(pmugate_measure *m, MeasureMetric *mm, const bool *used) {
        char reason[PMUGATE_REASON_MAX];

        for (size_t i = 0; i < m->n_events && !mm->info.unavailable[0]; i++) {
                const MeasureEvent *e = &m->events[i];

                if (!e->needs_perf || !((e->variable >= 0 && used[e->variable]) ||
                                        (e->core_variable >= 0 && used[e->core_variable])))
                        continue;
                (void) snprintf(reason, sizeof(reason), FRONTEND_REASON_FORMAT, e->desc.name, e->desc.frontend);
                free((char *) mm->info.unavailable);
                mm->info.unavailable = strdup(reason);
                if (!mm->info.unavailable)
                        return -ENOMEM;
        }
        return 0;
}

/* The programmed events each metric uses, itself or through others: its multiplexing scale is
 * theirs. */
static int find_metric_events(pmugate_measure *m) {
        _cleanup_free_ bool *used = calloc(metric_set_n_variables(m->metric_set) ?: 1, sizeof(bool));
        int r;

        if (!used)
                return -ENOMEM;
        for (size_t k = 0; k < m->n_metrics; k++) {
                MeasureMetric *mm = &m->metrics[k];

                r = metric_set_formula_variables(m->metric_set, (size_t) mm->formula, used);
                if (r < 0)
                        return r;
                mm->programmed = calloc(m->n_programmed ?: 1, sizeof(size_t));
                if (!mm->programmed)
                        return -ENOMEM;
                for (size_t p = 0; p < m->n_programmed; p++) {
                        const MeasureEvent *e = &m->events[m->programmed[p]];

                        if ((e->variable >= 0 && used[e->variable]) ||
                            (e->core_variable >= 0 && used[e->core_variable]))
                                mm->programmed[mm->n_programmed++] = p;
                }
                r = mark_not_modelled(m, mm);
                if (r < 0)
                        return r;
                r = mark_needs_perf(m, mm, used);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_metrics(pmugate_measure *m, const Group *g, char *reterr_reason, size_t reason_size) {
        size_t n_reported = 0;
        int r;

        for (size_t i = 0; i < g->n_metrics; i++) {
                r = metric_set_add_formula(m->metric_set, g->metrics[i].name, g->metrics[i].formula, reterr_reason,
                                           reason_size);
                if (r < 0)
                        return r;
                r = add_threshold(m, &g->metrics[i], reterr_reason, reason_size);
                if (r < 0)
                        return r;
                if (strstr(g->metrics[i].formula, CORE_SUM_PREFIX))
                        m->uses_core_sums = true;
                if (!g->metrics[i].helper)
                        n_reported++;
        }
        m->metrics = calloc(n_reported ?: 1, sizeof(MeasureMetric));
        if (!m->metrics)
                return -ENOMEM;
        for (size_t i = 0; i < g->n_metrics; i++) {
                const GroupMetric *gm = &g->metrics[i];
                char threshold[METRIC_NAME_MAX + sizeof(THRESHOLD_SUFFIX)];
                MeasureMetric *mm;

                if (gm->helper)
                        continue;
                mm = &m->metrics[m->n_metrics++];
                mm->formula = metric_set_formula_index(m->metric_set, gm->name);
                (void) snprintf(threshold, sizeof(threshold), "%s%s", gm->name, THRESHOLD_SUFFIX);
                mm->threshold = gm->threshold ? metric_set_formula_index(m->metric_set, threshold) : -1;
                mm->info.name = strdup(gm->name);
                mm->info.label = strdup(gm->label ?: gm->name);
                mm->info.unit = strdup(gm->unit ?: "");
                mm->info.estimate = strdup(gm->estimate ?: "");
                mm->info.unavailable = strdup(gm->unavailable ?: "");
                mm->info.has_threshold = mm->threshold >= 0;
                mm->info.parent = -1;
                mm->info.level = 1;
                if (!mm->info.name || !mm->info.label || !mm->info.unit || !mm->info.estimate ||
                    !mm->info.unavailable)
                        return -ENOMEM;
        }
        /* parents by name; groups.c checked that each names a reported metric */
        for (size_t i = 0, k = 0; i < g->n_metrics; i++) {
                if (g->metrics[i].helper)
                        continue;
                for (size_t j = 0; g->metrics[i].parent && j < m->n_metrics; j++)
                        if (strcmp(m->metrics[j].info.name, g->metrics[i].parent) == 0)
                                m->metrics[k].info.parent = (int) j;
                k++;
        }
        for (size_t i = 0; i < m->n_metrics; i++) {
                unsigned level = 1;

                for (int p = m->metrics[i].info.parent; p >= 0; p = m->metrics[p].info.parent)
                        if (++level > LEVELS_MAX)
                                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                                   "%s: the parents of '%s' form a loop",
                                                   g->path, m->metrics[i].info.name);
                m->metrics[i].info.level = level;
        }
        return 0;
}

/* How many reported metrics use each programmed event, themselves or through others. */
static int count_metric_needs(pmugate_measure *m) {
        _cleanup_free_ bool *used = calloc(metric_set_n_variables(m->metric_set) ?: 1, sizeof(bool));
        int r;

        if (!used)
                return -ENOMEM;
        for (size_t k = 0; k < m->n_metrics; k++) {
                r = metric_set_formula_variables(m->metric_set, (size_t) m->metrics[k].formula, used);
                if (r < 0)
                        return r;
                for (size_t p = 0; p < m->n_programmed; p++) {
                        const MeasureEvent *e = &m->events[m->programmed[p]];

                        if ((e->variable >= 0 && used[e->variable]) ||
                            (e->core_variable >= 0 && used[e->core_variable]))
                                m->programmed_descs[p].needed_by++;
                }
        }
        return 0;
}

static int schedule_events(pmugate_measure *m, char *reterr_reason, size_t reason_size) {
        ScheduleLimits limits = {
                .gp_counters = m->info->gp_counters,
                .fixed_counters = m->info->fixed_counters,
                .foreign_gp_mask = m->info->foreign_gp_mask,
                .foreign_fixed_mask = m->info->foreign_fixed_mask,
                .perf_metrics = m->info->perf_metrics,
        };
        int r;

        m->programmed = calloc(m->n_events ?: 1, sizeof(size_t));
        m->programmed_descs = calloc(m->n_events ?: 1, sizeof(EventDesc));
        if (!m->programmed || !m->programmed_descs)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_events; i++)
                if (m->events[i].programmed) {
                        m->programmed_descs[m->n_programmed] = m->events[i].desc;
                        m->programmed[m->n_programmed++] = i;
                }
        r = count_metric_needs(m);
        if (r < 0)
                return r;
        if (m->n_programmed == 0 && m->package) {
                /* package events alone: no core counter is programmed, so nothing is leased */
                m->schedule = calloc(1, sizeof(Schedule));
                if (!m->schedule)
                        return -ENOMEM;
                *m->schedule = (Schedule) { .n_sets = 1, .timebase_fixed = -1 };
                return 0;
        }
        return schedule_build(m->programmed_descs, m->n_programmed, &limits, &m->schedule, reterr_reason,
                              reason_size);
}

static int measure_setup(pmugate_measure *m, const char *group, const char *events, const MeasureDrill *drill,
                         char *reterr_reason, size_t reason_size) {
        _cleanup_(group_freep) Group *g = NULL;
        size_t n_group_events;
        int r;

        r = metric_set_new(&m->metric_set);
        if (r < 0)
                return r;
        m->smt_on_variable = metric_set_add_variable(m->metric_set, CONSTANT_SMT_ON);
        m->core_wide_variable = metric_set_add_variable(m->metric_set, CONSTANT_CORE_WIDE);
        m->slots_width_variable = metric_set_add_variable(m->metric_set, CONSTANT_SLOTS_WIDTH);
        m->duration_variable = metric_set_add_variable(m->metric_set, CONSTANT_DURATION);
        m->row_cpus_variable = metric_set_add_variable(m->metric_set, CONSTANT_ROW_CPUS);
        if (m->smt_on_variable < 0 || m->core_wide_variable < 0 || m->slots_width_variable < 0 ||
            m->duration_variable < 0 || m->row_cpus_variable < 0)
                return -ENOMEM;
        m->events = calloc(SCHEDULE_EVENTS_MAX, sizeof(MeasureEvent));
        if (!m->events)
                return -ENOMEM;

        if (group) {
                r = group_load(group, m->model, &g, reterr_reason, reason_size);
                if (r == -ENOENT && reterr_reason) {
                        /* the groups there are, listed by loading each: a layer above the loader */
                        char suggestion[3 * GROUP_NAME_MAX + 128];
                        size_t n = strlen(reterr_reason);

                        group_suggest(m->model, group, suggestion, sizeof(suggestion));
                        (void) snprintf(reterr_reason + n, reason_size - n, "%s", suggestion);
                }
                if (r < 0)
                        return r;
                m->group_name = strdup(g->name);
                m->description = strdup(g->description ?: "");
                if (!m->group_name || !m->description)
                        return -ENOMEM;
                for (size_t i = 0; i < g->n_events; i++) {
                        char reason[PMUGATE_REASON_MAX];

                        /* an included group's events (TopDown level 1 under level 2) stay counted
                         * in every event set, so that the base is exact however the rest rotates */
                        r = add_event(m, g->events[i].name, g->events[i].condition, g->events[i].included,
                                      reason, sizeof(reason));
                        if (r < 0)
                                return reason_fail(reterr_reason, reason_size, r, "%s: %s", g->path, reason);
                }
        }
        n_group_events = m->n_events;
        if (events) {
                r = add_events_list(m, events, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        r = hold_back_frontend_events(m, n_group_events, reterr_reason, reason_size);
        if (r < 0)
                return r;
        if (m->n_events == 0 && !m->package)
                return reason_fail(reterr_reason, reason_size, -EINVAL, "no events to count");
        if (g) {
                char reason[PMUGATE_REASON_MAX];

                r = add_metrics(m, g, reason, sizeof(reason));
                if (r == 0)
                        r = metric_set_compile(m->metric_set, reason, sizeof(reason));
                if (r < 0)
                        return reason_fail(reterr_reason, reason_size, r, "%s: %s", g->path, reason);
        } else {
                r = metric_set_compile(m->metric_set, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        if (drill) {
                if (!g)
                        return reason_fail(reterr_reason, reason_size, -EINVAL, "a drilldown needs a TopDown group");
                r = measure_drill(m, drill, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        r = schedule_events(m, reterr_reason, reason_size);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_programmed; i++)
                m->events[m->programmed[i]].not_modelled =
                        event_not_modelled(m, &m->events[m->programmed[i]].desc);
        r = find_metric_events(m);
        if (r < 0)
                return r;
        return m->package ? package_events_plan(m->package, m->info, m->cpus, m->n_cpus) : 0;
}

static int find_cpu(const pmugate_info *info, uint32_t cpu) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].cpu == cpu)
                        return (int) i;
        return -ENOENT;
}

static bool same_core(const pmugate_cpu *a, const pmugate_cpu *b) {
        return a->package == b->package && a->die == b->die && a->core == b->core;
}

/* SMT_on as perf has it (any core with two online threads), core_wide (SMT off, or every
 * online thread of each measured core measured) and the measured siblings of each CPU. */
static int resolve_topology(pmugate_measure *m, char *reterr_reason, size_t reason_size) {
        const pmugate_info *info = m->info;
        _cleanup_free_ const pmugate_cpu **measured = calloc(m->n_cpus, sizeof(pmugate_cpu *));

        m->siblings = calloc(m->n_cpus, sizeof(size_t *));
        m->n_siblings = calloc(m->n_cpus, sizeof(size_t));
        m->cpu_smt_on = calloc(m->n_cpus ?: 1, sizeof(bool));
        if (!measured || !m->siblings || !m->n_siblings || !m->cpu_smt_on)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_cpus; i++) {
                int k = find_cpu(info, m->cpus[i]);

                if (k < 0 || !info->cpus[k].online)
                        return reason_fail(reterr_reason, reason_size, -ENXIO, "CPU %u is not %s", m->cpus[i],
                                           k < 0 ? "present" : "online");
                for (size_t j = 0; j < i; j++)
                        if (m->cpus[j] == m->cpus[i])
                                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                                   "CPU %u is listed twice", m->cpus[i]);
                measured[i] = &info->cpus[k];
        }
        for (size_t i = 0; i < info->n_cpus && !m->smt_on; i++)
                for (size_t j = i + 1; j < info->n_cpus; j++)
                        if (info->cpus[i].online && info->cpus[j].online && same_core(&info->cpus[i], &info->cpus[j])) {
                                m->smt_on = true;
                                break;
                        }
        m->core_wide = true;
        m->aggregate_core_wide = true;
        for (size_t i = 0; i < m->n_cpus; i++) {
                size_t online_threads = 0, n_same = 0;

                /* Sized to the core's threads, not to every CPU: n_cpus entries for each CPU
                 * were 128 MiB at 4096 CPUs. */
                for (size_t j = 0; j < m->n_cpus; j++)
                        n_same += same_core(measured[i], measured[j]);
                m->siblings[i] = calloc(n_same ?: 1, sizeof(size_t));
                if (!m->siblings[i])
                        return -ENOMEM;
                for (size_t j = 0; j < m->n_cpus; j++)
                        if (same_core(measured[i], measured[j]))
                                m->siblings[i][m->n_siblings[i]++] = j;
                for (size_t k = 0; k < info->n_cpus; k++)
                        if (info->cpus[k].online && same_core(measured[i], &info->cpus[k]))
                                online_threads++;
                if (online_threads != m->n_siblings[i])
                        m->core_wide = false;
                /* perf's SMT_on is the machine's; a thread alone in its core (its sibling
                 * offline) has the whole core, and perf's SMT formulas would halve it */
                m->cpu_smt_on[i] = m->smt_on && online_threads > 1;
                if (m->smt_on && online_threads < 2)
                        m->aggregate_core_wide = false;
        }
        m->aggregate_core_wide = m->aggregate_core_wide && m->core_wide;
        return 0;
}

int measure_open(pmugate *c, pmugate_info *info, const char *group, const char *events, const MeasureDrill *drill,
                 const uint32_t *cpus, size_t n_cpus, unsigned flags, pmugate_measure **ret, char *reterr_reason,
                 size_t reason_size) {
        _cleanup_(pmugate_measure_closep) pmugate_measure *m = NULL;
        int r;

        if (!c || !ret || (n_cpus > 0 && !cpus) || (flags & ~(PMUGATE_MEASURE_USER | PMUGATE_MEASURE_KERNEL))) {
                pmugate_info_free(info);
                return reason_fail(reterr_reason, reason_size, -EINVAL, "invalid arguments");
        }
        m = calloc(1, sizeof(*m));
        if (!m) {
                pmugate_info_free(info);
                return -ENOMEM;
        }
        m->connection = c;
        m->info = info;
        m->flags = flags;
        m->reset_period_ns = MEASURE_RESET_PERIOD_DEFAULT_NS;
        m->rotate_period_ns = MEASURE_ROTATE_PERIOD_DEFAULT_NS;
        if (n_cpus == 0 || n_cpus > PMUGATE_CPUS_MAX)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "a measurement covers 1 to %u CPUs", PMUGATE_CPUS_MAX);
        if (!m->info) {
                r = pmugate_hello(c, &m->info);
                if (r < 0)
                        return reason_fail(reterr_reason, reason_size, r, "hello: %s", pmugate_strerror(r));
        }
        /* without a PMU or a known model only the kernel's software events can be counted */
        if (!m->info->has_pmu) {
                m->software_only = true;
                (void) snprintf(m->software_only_reason, sizeof(m->software_only_reason),
                                "the daemon reports no PMU on this machine");
        } else if (!event_model_known(m->info->model_key)) {
                m->software_only = true;
                (void) snprintf(m->software_only_reason, sizeof(m->software_only_reason),
                                "pmugate has no events for CPU model '%s' (%s); supported: skx, clx, "
                                "icx, spr, emr, gnr, srf, zen4, zen5, grace",
                                m->info->model_key[0] ? m->info->model_key : "unknown",
                                m->info->model_label[0] ? m->info->model_label : m->info->model_name);
        }
        m->via_perf = pmugate_info_counts_via_perf(m->info);
        (void) snprintf(m->model, sizeof(m->model), "%s", m->info->model_key);
        measure_set_layout(m);
        m->counter_mask = (UINT64_C(1) << (m->info->counter_width > 0 && m->info->counter_width < 64 ?
                                           m->info->counter_width : COUNTER_WIDTH_DEFAULT)) - 1;
        m->cpus = calloc(n_cpus, sizeof(uint32_t));
        if (!m->cpus)
                return -ENOMEM;
        memcpy(m->cpus, cpus, n_cpus * sizeof(uint32_t));
        m->n_cpus = n_cpus;
        r = resolve_topology(m, reterr_reason, reason_size);
        if (r < 0)
                return r;
        r = measure_setup(m, group, events, drill, reterr_reason, reason_size);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int pmugate_measure_open_group(pmugate *c, const char *group, const char *events, const uint32_t *cpus,
                               size_t n_cpus, unsigned flags, pmugate_measure **ret, char *reterr_reason,
                               size_t reason_size) {
        if (!group && !events)
                return reason_fail(reterr_reason, reason_size, -EINVAL, "give a group, events or both");
        return measure_open(c, NULL, group, events, NULL, cpus, n_cpus, flags, ret, reterr_reason, reason_size);
}

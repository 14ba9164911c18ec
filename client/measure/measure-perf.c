/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The measurement's perf path: the placed events as perf groups the daemon opens (one
 * perf_open at start, one perf_read per sample, perf_close at stop), accumulated into the same
 * CpuAccum as the register path's, so formulas, intervals and output do not change. The
 * kernel's time_enabled is each CPU's span and time_running each event's share of it, so the
 * multiplexing scale is perf's; an event the kernel never scheduled is n/a, never 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/reason.h"
#include "events/event-table.h"
#include "macro.h"
#include "measure/measure-internal.h"
#include "pmugate-limits.h"

/* The kernel's encodings (arch/x86/events/intel/core.c): the fixed counters' pseudo-events,
 * SLOTS, and the topdown metric events, one per PERF_METRICS byte. */
#define PERF_FIXED_INST_RETIRED UINT64_C(0x00c0)
#define PERF_FIXED_CLK_UNHALTED UINT64_C(0x003c)
#define PERF_FIXED_REF_TSC UINT64_C(0x0300)
#define PERF_SLOTS UINT64_C(0x0400)
#define PERF_TOPDOWN_METRIC(byte) (UINT64_C(0x8000) + UINT64_C(0x100) * (byte))

#define PERF_PMU_CORE_DEFAULT "cpu"
#define PERF_PMU_SOFTWARE "software"
#define PERF_PMU_HARDWARE "hardware"

#define NOT_SCHEDULED_REASON "the kernel never scheduled it"
#define PACKAGE_SCOPE_REASON \
        "a cgroup or a process cannot split package counters; count them with scope cpu holding the package"

PerfPlan *measure_perf_plan_free(PerfPlan *p) {
        if (!p)
                return NULL;
        free(p->events);
        free(p->programmed);
        free(p->groups);
        free(p->group_first);
        free(p);
        return NULL;
}

const char *measure_perf_core_pmu(const pmugate_info *info) {
        for (size_t i = 0; info && i < info->n_pmus; i++)
                if (strcmp(info->pmus[i].kind, "core") == 0 && strcmp(info->pmus[i].name, PERF_PMU_HARDWARE) != 0)
                        return info->pmus[i].name;
        return PERF_PMU_CORE_DEFAULT;
}

typedef struct PlanBuilder {
        PerfPlan *plan;
        const char *core_pmu;
        size_t open_group;      /* first event of the group being filled */
        bool kernel;            /* the caller asked for ring 0 */
} PlanBuilder;

static void plan_add(PlanBuilder *b, const char *pmu, uint64_t config, bool kernel, const char *name,
                     int programmed) {
        PerfPlan *p = b->plan;
        pmugate_perf_event *e = &p->events[p->n_events];

        *e = (pmugate_perf_event) { .config = config, .kernel = kernel };
        (void) snprintf(e->pmu, sizeof(e->pmu), "%s", pmu);
        (void) snprintf(e->name, sizeof(e->name), "%s", name);
        p->programmed[p->n_events++] = programmed;
}

static void plan_close_group(PlanBuilder *b) {
        PerfPlan *p = b->plan;

        if (p->n_events == b->open_group)
                return;
        p->group_first[p->n_groups] = b->open_group;
        p->groups[p->n_groups++] = (pmugate_perf_group) { .n_events = p->n_events - b->open_group };
        b->open_group = p->n_events;
}

static void plan_note(PerfPlan *p, const char *name, const char *why) {
        size_t n = strlen(p->note);

        (void) snprintf(p->note + n, sizeof(p->note) - n, "%s%s: %s", n ? "; " : "", name, why);
}

static void add_gp(PlanBuilder *b, const EventDesc *d, size_t p, uint64_t mask) {
        pmugate_perf_event *e = &b->plan->events[b->plan->n_events];

        plan_add(b, b->core_pmu, d->config & mask, b->kernel && d->os, d->name, (int) p);
        /* perf's frontend field: the kernel writes MSR_PEBS_FRONTEND for the event */
        if (d->frontend) {
                e->config1 = d->frontend;
                e->has_config1 = true;
        }
}

int measure_perf_plan(const char *model, const char *core_pmu, const EventDesc *descs, const Schedule *s,
                      unsigned topdown_level, bool kernel, PerfPlan **ret, char *reterr_reason, size_t reason_size) {
        static const uint64_t fixed_pseudo[] = {
                [FIXED_INST_RETIRED] = PERF_FIXED_INST_RETIRED,
                [FIXED_CLK_UNHALTED] = PERF_FIXED_CLK_UNHALTED,
                [FIXED_REF_TSC] = PERF_FIXED_REF_TSC,
        };
        _cleanup_(measure_perf_plan_freep) PerfPlan *p = NULL;
        bool arm = (event_table_model(model) & EVENT_MODEL_GRACE) != 0;
        uint64_t mask = strncmp(model, "zen", 3) == 0 ? EVENT_CONFIG_MASK_AMD :
                        arm ? EVENT_CONFIG_MASK_ARM : EVENT_CONFIG_MASK;
        size_t n = s->n_events, n_first = 0, n_fixed = 0;
        int slots_event = -1;
        bool metrics = false;
        PlanBuilder b = { .kernel = kernel, .core_pmu = core_pmu ?: PERF_PMU_CORE_DEFAULT };

        for (size_t i = 0; i < n; i++) {
                const Placement *pl = &s->placements[i];

                /* the wire's "kernel" adds ring 0 to ring 3; ring 0 alone is not asked for */
                if (descs[i].kind != EVENT_SOFTWARE && descs[i].os && !descs[i].usr)
                        return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                           "%s counts kernel mode alone, which the perf path cannot ask for: "
                                           "leave out :k or --kernel", descs[i].name);
                if (pl->kind == PLACE_PERF_METRICS)
                        metrics = true;
                else if (pl->kind == PLACE_FIXED && pl->counter == FIXED_SLOTS)
                        slots_event = (int) i;
                else if (pl->kind == PLACE_FIXED) {
                        n_fixed++;
                        n_first++;
                } else if (pl->kind == PLACE_GP && (pl->pinned || pl->set == 0))
                        n_first++;
        }
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->events = calloc(n + 1, sizeof(pmugate_perf_event));
        p->programmed = calloc(n + 1, sizeof(int));
        /* SLOTS, the fixed events apart, the first group, the other sets, software */
        p->groups = calloc(s->n_sets + 4, sizeof(pmugate_perf_group));
        p->group_first = calloc(s->n_sets + 4, sizeof(size_t));
        if (!p->events || !p->programmed || !p->groups || !p->group_first)
                return -ENOMEM;
        b.plan = p;

        if (slots_event >= 0 || metrics) {
                plan_add(&b, b.core_pmu, PERF_SLOTS, kernel && slots_event >= 0 && descs[slots_event].os,
                         slots_event >= 0 ? descs[slots_event].name : "TOPDOWN.SLOTS", slots_event);
                for (size_t i = 0; i < n; i++) {
                        const Placement *pl = &s->placements[i];

                        if (pl->kind != PLACE_PERF_METRICS)
                                continue;
                        if (pl->counter >= PERF_METRICS_L1_FIELDS ? topdown_level < 2 : topdown_level < 1) {
                                plan_note(p, descs[i].name, "the kernel has no such topdown metric event here");
                                continue;
                        }
                        plan_add(&b, b.core_pmu, PERF_TOPDOWN_METRIC(pl->counter), kernel && descs[i].os,
                                 descs[i].name, (int) i);
                }
                plan_close_group(&b);
        }
        /* the fixed events lead the first group unless it would outgrow a group; on ARM the
         * cycle counter's CPU_CYCLES is its own event number, which the kernel puts there */
        for (size_t i = 0; i < n; i++) {
                const Placement *pl = &s->placements[i];

                if (pl->kind == PLACE_FIXED && arm)
                        plan_add(&b, b.core_pmu, descs[i].config & mask, kernel && descs[i].os, descs[i].name,
                                 (int) i);
                else if (pl->kind == PLACE_FIXED && pl->counter < ELEMENTSOF(fixed_pseudo))
                        plan_add(&b, b.core_pmu, fixed_pseudo[pl->counter], kernel && descs[i].os, descs[i].name,
                                 (int) i);
        }
        if (n_first > PERF_GROUP_EVENTS_MAX && n_fixed > 0)
                plan_close_group(&b);
        for (unsigned set = 0; set < MAX(s->n_sets, 1U); set++) {
                for (size_t i = 0; i < n; i++) {
                        const Placement *pl = &s->placements[i];

                        if (pl->kind == PLACE_GP && (pl->pinned ? set == 0 : pl->set == set))
                                add_gp(&b, &descs[i], i, mask);
                }
                plan_close_group(&b);
        }
        for (size_t i = 0; i < n; i++)
                if (s->placements[i].kind == PLACE_SOFTWARE)
                        plan_add(&b, PERF_PMU_SOFTWARE, descs[i].config, false, descs[i].name, (int) i);
        plan_close_group(&b);

        for (size_t g = 0; g < p->n_groups; g++) {
                if (p->groups[g].n_events > PERF_GROUP_EVENTS_MAX)
                        return reason_fail(reterr_reason, reason_size, -E2BIG,
                                           "a perf group of %zu events (more than %u): count fewer events at once",
                                           p->groups[g].n_events, PERF_GROUP_EVENTS_MAX);
                p->groups[g].events = &p->events[p->group_first[g]];
        }
        if (p->n_groups > PERF_GROUPS_PER_OPEN_MAX || p->n_events > PERF_EVENTS_PER_OPEN_MAX)
                return reason_fail(reterr_reason, reason_size, -E2BIG,
                                   "%zu perf events in %zu groups: one perf_open holds %u in %u groups", p->n_events,
                                   p->n_groups, PERF_EVENTS_PER_OPEN_MAX, PERF_GROUPS_PER_OPEN_MAX);
        *ret = TAKE_PTR(p);
        return 0;
}

static void update_note(pmugate_measure *m) {
        const char *package = m->package ? m->package->note : "";
        char not_scheduled[PMUGATE_REASON_MAX] = "";
        size_t n = 0;

        /* an event that never ran on any target since the start (also when the kernel never
         * even enabled it: a process that never ran while the events were open) */
        for (size_t p = 0; m->accum && m->samples > 0 && p < m->n_programmed; p++) {
                bool ran = false;

                for (size_t i = 0; i < m->n_cpus; i++)
                        ran = ran || m->accum[i].enabled[p] > 0.0;
                if (ran)
                        continue;
                (void) snprintf(not_scheduled + n, sizeof(not_scheduled) - n, "%s%s", n ? ", " : "",
                                m->programmed_descs[p].name);
                n = strlen(not_scheduled);
        }
        (void) snprintf(m->withheld_buf, sizeof(m->withheld_buf), "%s%s%s%s%s%s%s", package,
                        package[0] && m->perf_plan && m->perf_plan->note[0] ? "; " : "",
                        m->perf_plan ? m->perf_plan->note : "",
                        (package[0] || (m->perf_plan && m->perf_plan->note[0])) && n ? "; " : "", not_scheduled,
                        n ? ": " : "", n ? NOT_SCHEDULED_REASON : "");
}

const char *measure_withheld_note(const pmugate_measure *m) {
        if (!m)
                return "";
        if (m->via_perf)
                return m->withheld_buf;
        return m->package ? m->package->note : "";
}

static int perf_fail(pmugate_measure *m, int error, const char *format, ...) _printf_(3, 4);
static int perf_fail(pmugate_measure *m, int error, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(m->reason, sizeof(m->reason), format, ap);
        va_end(ap);
        return error;
}

/* Package events cannot be split by a cgroup or a process: outside scope cpu each is
 * withheld on every package, with the reason. */
static int withhold_package_events(pmugate_measure *m) {
        for (size_t p = 0; p < m->package->n_packages; p++)
                for (size_t e = 0; e < m->package->n_events; e++) {
                        int r = package_events_withhold(m->package, p, e, PACKAGE_SCOPE_REASON);

                        if (r < 0)
                                return r;
                }
        return 0;
}

static unsigned topdown_level(const pmugate_info *info) {
        /* a daemon that does not list its perf PMUs: the PMU's own PERF_METRICS */
        return info->n_pmus > 0 ? pmugate_info_perf_topdown(info) : info->perf_metrics;
}

static int map_targets(pmugate_measure *m) {
        const int64_t *targets;
        size_t n = pmugate_perf_targets(m->perf_handle, &targets);

        m->perf_row_cpu = calloc(n ?: 1, sizeof(size_t));
        m->perf_last = calloc((n * m->perf_plan->n_events) ?: 1, sizeof(uint64_t));
        m->perf_last_enabled = calloc((n * m->perf_plan->n_groups) ?: 1, sizeof(uint64_t));
        m->perf_last_running = calloc((n * m->perf_plan->n_groups) ?: 1, sizeof(uint64_t));
        if (!m->perf_row_cpu || !m->perf_last || !m->perf_last_enabled || !m->perf_last_running)
                return -ENOMEM;
        if (m->scope.scope == PMUGATE_PERF_SCOPE_PROCESS)
                return n == 1 ? 0 : perf_fail(m, -EBADMSG, "perf_open: %zu targets for one process", n);
        for (size_t t = 0; t < n; t++) {
                size_t i = 0;

                while (i < m->n_cpus && (int64_t) m->cpus[i] != targets[t])
                        i++;
                if (i == m->n_cpus)
                        return perf_fail(m, -EBADMSG, "perf_open: the daemon opened CPU %lld, which was not asked for",
                                         (long long) targets[t]);
                m->perf_row_cpu[t] = i;
        }
        return 0;
}

/* The span of target t in this read: the longest time_enabled advance of its groups. */
static void read_spans(const pmugate_measure *m, const pmugate_perf_row *rows, size_t n_rows, double *span) {
        const PerfPlan *plan = m->perf_plan;

        for (size_t k = 0; k < n_rows; k++) {
                size_t t = k / plan->n_groups, g = k % plan->n_groups;
                uint64_t last = m->perf_last_enabled[t * plan->n_groups + g];

                if (rows[k].status == 0 && rows[k].time_enabled >= last)
                        span[t] = MAX(span[t], (double) (rows[k].time_enabled - last));
        }
}

/* One perf_read, its deltas added to the accumulators; the first is the baseline only. Each
 * event's enabled time is its group's time_running brought to the target's span, so that
 * total / enabled is exactly the group's time_enabled / time_running: 1 for a group that was
 * on the PMU all the time, however much later than another group it was opened. */
static int perf_read_accumulate(pmugate_measure *m) {
        const PerfPlan *plan = m->perf_plan;
        const pmugate_perf_row *rows;
        _cleanup_free_ double *span = NULL;
        size_t n_rows, n_targets;
        int r, first_error = 0;

        r = pmugate_perf_read(m->connection, m->perf_handle, &rows, &n_rows);
        if (r < 0)
                return r;
        n_targets = n_rows / plan->n_groups;
        span = calloc(n_targets ?: 1, sizeof(double));
        if (!span)
                return -ENOMEM;
        read_spans(m, rows, n_rows, span);
        for (size_t k = 0; k < n_rows; k++) {
                const pmugate_perf_row *row = &rows[k];
                size_t t = k / plan->n_groups, g = k % plan->n_groups;
                CpuAccum *a = &m->accum[m->perf_row_cpu[t]];
                uint64_t *last_enabled = &m->perf_last_enabled[t * plan->n_groups + g];
                uint64_t *last_running = &m->perf_last_running[t * plan->n_groups + g];
                double enabled, running;

                if (row->status < 0) {
                        if (first_error == 0)
                                first_error = perf_fail(m, row->status, "reading perf group %zu on %lld: %s", g,
                                                        (long long) row->target, pmugate_strerror(row->status));
                        continue;
                }
                /* the kernel's times only grow; a smaller one is not the same event */
                if (row->time_enabled < *last_enabled || row->time_running < *last_running) {
                        if (first_error == 0)
                                first_error = perf_fail(m, -EBADMSG, "perf group %zu on %lld went back in time", g,
                                                        (long long) row->target);
                        continue;
                }
                enabled = (double) (row->time_enabled - *last_enabled);
                running = (double) (row->time_running - *last_running);
                if (enabled > 0.0)
                        running *= span[t] / enabled;
                *last_enabled = row->time_enabled;
                *last_running = row->time_running;
                for (size_t j = 0; j < row->n_values; j++) {
                        size_t e = plan->group_first[g] + j;
                        uint64_t *last = &m->perf_last[t * plan->n_events + e];
                        uint64_t delta = row->values[j] - *last;
                        int p = plan->programmed[e];

                        *last = row->values[j];
                        if (p < 0 || !m->perf_read_once)
                                continue;
                        a->raw[p] += delta;
                        a->enabled[p] += running;
                }
        }
        for (size_t t = 0; m->perf_read_once && t < n_targets; t++) {
                m->accum[m->perf_row_cpu[t]].total += span[t];
                m->accum[m->perf_row_cpu[t]].wall += span[t];
        }
        m->perf_read_once = true;
        return first_error;
}

static void free_read_state(pmugate_measure *m) {
        free(m->perf_row_cpu);
        free(m->perf_last);
        free(m->perf_last_enabled);
        free(m->perf_last_running);
        m->perf_row_cpu = NULL;
        m->perf_last = m->perf_last_enabled = m->perf_last_running = NULL;
        m->perf_read_once = false;
}

static bool needs_lease(const pmugate_measure *m) {
        if (m->scope.scope != PMUGATE_PERF_SCOPE_CPU)
                return false;
        for (size_t p = 0; p < m->n_programmed; p++)
                if (m->programmed_descs[p].kind != EVENT_SOFTWARE)
                        return true;
        return false;
}

static int perf_open(pmugate_measure *m) {
        pmugate_perf_request req = {
                .scope = m->scope.scope,
                .pid = m->scope.pid,
                .follow = m->scope.follow,
                .on_exec = m->scope.on_exec,
                .groups = m->perf_plan->groups,
                .n_groups = m->perf_plan->n_groups,
        };
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        if (m->scope.scope != PMUGATE_PERF_SCOPE_PROCESS) {
                req.cpus = m->cpus;
                req.n_cpus = m->n_cpus;
        }
        r = pmugate_perf_open(m->connection, &req, &m->perf_handle, reason, sizeof(reason));
        if (r < 0)
                return perf_fail(m, r, "%s", reason[0] ? reason : pmugate_strerror(r));
        return 0;
}

int measure_perf_start(pmugate_measure *m) {
        int r;

        if (!m->perf_plan) {
                /* as perf for an unprivileged user: ring 0 only when asked for (--kernel), and
                 * then where the daemon's policy allows it */
                r = measure_perf_plan(m->model, measure_perf_core_pmu(m->info), m->programmed_descs, m->schedule,
                                      topdown_level(m->info),
                                      m->flags & PMUGATE_MEASURE_KERNEL, &m->perf_plan, m->reason,
                                      sizeof(m->reason));
                if (r < 0)
                        return r;
        }
        if (m->perf_plan->n_groups == 0)
                return perf_fail(m, -EINVAL, "no event is left to count through perf%s%s",
                                 m->perf_plan->note[0] ? ": " : "", m->perf_plan->note);
        if (!m->accum && (r = measure_accum_new(m, &m->accum)) < 0)
                return r;
        if (!m->mark.cpus && (r = measure_accum_new(m, &m->mark.cpus)) < 0)
                return r;
        if (m->package && m->scope.scope != PMUGATE_PERF_SCOPE_CPU && (r = withhold_package_events(m)) < 0)
                return r;

        /* hardware events on CPUs need their leases, as register writes do; a daemon without
         * leases answers that it does not know the request */
        r = needs_lease(m) ? pmugate_lease(m->connection, m->cpus, m->n_cpus) : -EOPNOTSUPP;
        if (r < 0 && r != -EOPNOTSUPP)
                return r;
        m->leased = r >= 0;
        r = perf_open(m);
        if (r >= 0)
                r = map_targets(m);
        if (r >= 0)
                r = perf_read_accumulate(m);
        if (r >= 0 && m->package && m->scope.scope == PMUGATE_PERF_SCOPE_CPU)
                r = package_events_start(m->package, m->connection, m->info);
        if (r < 0) {
                if (m->package && m->scope.scope == PMUGATE_PERF_SCOPE_CPU)
                        (void) package_events_stop(m->package, m->connection);
                (void) pmugate_perf_close(m->connection, TAKE_PTR(m->perf_handle));
                /* a start tried again opens, maps and reads its baseline anew */
                free_read_state(m);
                if (m->leased)
                        (void) pmugate_release(m->connection, m->cpus, m->n_cpus);
                m->leased = false;
                return r;
        }
        m->started = true;
        m->start_ns = m->last_sample_ns = m->set_started_ns = m->last_batch_ns = m->mark.ns = measure_now_ns();
        update_note(m);
        return 0;
}

static bool package_counted(const pmugate_measure *m) {
        return m->package && m->scope.scope == PMUGATE_PERF_SCOPE_CPU;
}

int measure_perf_sample(pmugate_measure *m) {
        int r, q;

        if (m->sample_hook)
                m->sample_hook(m, true, m->sample_hook_data);
        r = perf_read_accumulate(m);
        /* the daemon closed the events itself (the right behind them is gone, a higher role
         * took the CPUs): nothing is left to read or close */
        if (r == -EKEYREVOKED || r == -ECANCELED)
                m->lease_lost = true;
        q = package_counted(m) ? package_events_sample(m->package, m->connection) : 0;
        if (m->sample_hook)
                m->sample_hook(m, false, m->sample_hook_data);
        m->last_sample_ns = m->last_batch_ns = measure_now_ns();
        m->samples++;
        update_note(m);
        return r < 0 ? r : q;
}

int measure_perf_stop(pmugate_measure *m) {
        int r, q;

        if (m->lease_lost) {
                if (package_counted(m))
                        (void) package_events_stop(m->package, m->connection);
                (void) pmugate_perf_close(NULL, TAKE_PTR(m->perf_handle));
                m->stopped = true;
                m->leased = false;
                return 0;
        }
        r = measure_perf_sample(m);
        m->stopped = true;
        if (package_counted(m)) {
                q = package_events_stop(m->package, m->connection);
                if (q < 0 && r >= 0)
                        r = q;
        }
        q = pmugate_perf_close(m->connection, TAKE_PTR(m->perf_handle));
        if (q < 0 && r >= 0 && q != -EKEYREVOKED && q != -ECANCELED)
                r = q;
        if (m->leased) {
                q = pmugate_release(m->connection, m->cpus, m->n_cpus);
                m->leased = false;
                if (q < 0 && r >= 0)
                        r = q;
        }
        return r;
}

void measure_perf_free(pmugate_measure *m) {
        (void) pmugate_perf_close(NULL, TAKE_PTR(m->perf_handle));
        m->perf_plan = measure_perf_plan_free(m->perf_plan);
        free_read_state(m);
}

bool pmugate_measure_via_perf(const pmugate_measure *m) {
        return m && m->via_perf;
}

int pmugate_measure_set_scope(pmugate_measure *m, const pmugate_measure_scope *scope) {
        uint32_t pid;

        if (!m || !scope || m->started || (unsigned) scope->scope >= _PMUGATE_PERF_SCOPE_MAX || scope->pid < 0 ||
            (scope->scope != PMUGATE_PERF_SCOPE_PROCESS && (scope->pid != 0 || scope->on_exec)))
                return -EINVAL;
        if (m->scope.scope == PMUGATE_PERF_SCOPE_PROCESS && scope->scope != PMUGATE_PERF_SCOPE_PROCESS)
                return -EINVAL; /* the CPUs it had are gone */
        m->scope = *scope;
        if (scope->scope != PMUGATE_PERF_SCOPE_CPU)
                m->via_perf = true;
        if (scope->scope != PMUGATE_PERF_SCOPE_PROCESS)
                return 0;
        /* one row, the process's, wherever it runs */
        pid = (uint32_t) (scope->pid > 0 ? scope->pid : getpid());
        for (size_t i = 1; m->siblings && i < m->n_cpus; i++) {
                free(m->siblings[i]);
                m->siblings[i] = NULL;
        }
        m->n_cpus = 1;
        m->cpus[0] = pid;
        if (m->siblings) {
                m->siblings[0][0] = 0;
                m->n_siblings[0] = 1;
        }
        if (m->cpu_smt_on)
                m->cpu_smt_on[0] = m->smt_on;
        m->core_wide = false;
        m->aggregate_core_wide = false;
        return 0;
}

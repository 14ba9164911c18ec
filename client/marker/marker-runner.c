/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Marker runner: the environment of a program measured by regions, and its results read back
 * and evaluated with the measurement's formulas
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpulist.h"
#include "macro.h"
#include "marker/marker-runner.h"
#include "measure/measure-internal.h"
#include "measure/measure-program.h"
#include "pmugate-limits.h"

#define REGS_TEXT_MAX (MARKER_REGS_MAX * 12U)
#define CPUS_TEXT_MAX (64U * 1024U)

typedef struct MarkerPublisher {
        MarkerShared *map;
        size_t size;
} MarkerPublisher;

static void publisher_free(void *userdata) {
        MarkerPublisher *p = userdata;

        if (p && p->map)
                (void) munmap(p->map, p->size);
        free(p);
}

/* Around every sample, which resets SLOTS and PERF_METRICS: readers wait while it is under
 * way, and then add what the counters had counted before. */
static void publish(pmugate_measure *m, bool before, void *userdata) {
        MarkerPublisher *p = userdata;

        for (size_t i = 0; i < m->n_cpus; i++) {
                MarkerSharedCpu *c;

                if (m->cpus[i] >= p->map->n_cpus)
                        continue;
                c = &p->map->cpus[m->cpus[i]];
                if (!before) {
                        __atomic_store_n(&c->slots, m->state[i].slots_base, __ATOMIC_RELAXED);
                        for (unsigned f = 0; f < MARKER_METRICS_FIELDS; f++)
                                __atomic_store_n(&c->fields[f], m->state[i].fields_base[f],
                                                 __ATOMIC_RELAXED);
                }
                /* odd before the reset batch goes out, even once the bases are in place */
                (void) __atomic_fetch_add(&c->sequence, 1, __ATOMIC_SEQ_CST);
        }
}

static int make_publisher(pmugate_measure *m, const char *shared_path) {
        _cleanup_close_ int fd = -1;
        MarkerPublisher *p;
        uint32_t highest = 0;
        size_t size;

        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i] > highest)
                        highest = m->cpus[i];
        size = sizeof(MarkerShared) + ((size_t) highest + 1) * sizeof(MarkerSharedCpu);
        fd = open(shared_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t) size) < 0)
                return -errno;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p->map == MAP_FAILED) {
                free(p);
                return -errno;
        }
        p->size = size;
        p->map->magic = MARKER_SHARED_MAGIC;
        p->map->n_cpus = (uint64_t) highest + 1;
        m->sample_hook = publish;
        m->sample_hook_free = publisher_free;
        m->sample_hook_data = p;
        return 0;
}

int marker_runner_environment(pmugate_measure *m, const char *results_path, const char *shared_path,
                              char *reterr_reason, size_t reason_size) {
        _cleanup_free_ char *cpus = malloc(CPUS_TEXT_MAX);
        char regs[REGS_TEXT_MAX] = "", width[16];
        size_t at = 0;
        int r;

        if (!cpus)
                return -ENOMEM;
        if (pmugate_measure_event_sets(m) > 1) {
                (void) snprintf(reterr_reason, reason_size, "the events take %u turns on the counters; "
                                "markers read one set of counters, so give fewer events",
                                pmugate_measure_event_sets(m));
                return -E2BIG;
        }
        if (!m->sweep_regs) {
                m->registers_for_markers = true;
                r = measure_plan_registers(m);
                if (r < 0)
                        return r;
        }
        if (m->n_sweep_regs == 0 || m->n_sweep_regs > MARKER_REGS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < m->n_sweep_regs; i++)
                at += (size_t) snprintf(regs + at, sizeof(regs) - at, "%s%" PRIx32, i ? "," : "",
                                        m->sweep_regs[i]);
        r = cpulist_format(m->cpus, m->n_cpus, cpus, CPUS_TEXT_MAX);
        if (r < 0)
                return r;
        (void) snprintf(width, sizeof(width), "%u", m->info->counter_width ?: COUNTER_WIDTH_DEFAULT);
        if (m->schedule->perf_metrics && !m->sample_hook) {
                r = make_publisher(m, shared_path);
                if (r < 0)
                        return r;
                if (setenv(MARKER_ENV_SHARED, shared_path, 1) < 0)
                        return -errno;
        }
        /* a perf read mode's variable from the caller's environment would make the program
         * write columns of its own */
        (void) unsetenv(MARKER_ENV_PERF);
        if (setenv(MARKER_ENV_FILE, results_path, 1) < 0 || setenv(MARKER_ENV_REGS, regs, 1) < 0 ||
            setenv(MARKER_ENV_CPUS, cpus, 1) < 0 || setenv(MARKER_ENV_WIDTH, width, 1) < 0)
                return -errno;
        return 0;
}

static void region_free(MarkerRegionResult *g) {
        free(g->name);
        free(g->threads);
        free(g->cpus);
        free(g->calls);
        free(g->seconds);
        free(g->migrated);
        pmugate_result_free(g->result);
}

MarkerReport *marker_report_free(MarkerReport *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; r->regions && i < r->n_regions; i++)
                region_free(&r->regions[i]);
        free(r->regions);
        free(r->errors);
        free(r);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(MarkerReport *, marker_report_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(MarkerFile *, marker_file_free);

/* The column of the results that holds what programmed event p counted. */
static size_t column_of(const pmugate_measure *m, size_t p) {
        const Placement *pl = &m->schedule->placements[p];

        switch (pl->kind) {
        case PLACE_FIXED:
                return (size_t) m->fixed_slot[pl->counter];
        case PLACE_GP:
                return (size_t) m->gp_slot[pl->counter];
        default:
                return m->n_sweep_regs + pl->counter;
        }
}

/* What the columns of a results file are: the registers of a measurement, or perf events. */
typedef struct MarkerColumns {
        pmugate_measure *m;
        const MarkerPerfPlan *plan;
} MarkerColumns;

static size_t columns_events(const MarkerColumns *cols) {
        return cols->m ? cols->m->n_programmed : cols->plan->events.n_events;
}

/* The results' column holding programmed event p: a register's (m alone), or the perf event
 * that counts it. */
static size_t column_of_event(const MarkerColumns *cols, size_t p) {
        if (!cols->plan)
                return column_of(cols->m, p);
        for (size_t c = 0; c < cols->plan->events.n_events; c++)
                if (cols->plan->programmed[c] == (int) p)
                        return c;
        return 0;       /* never: marker_runner_perf_plan_measure() refuses a plan that leaves one out */
}

static void result_values_free(pmugate_values *v) {
        free(v->counts);
        free(v->raw);
        free(v->scale);
        free(v->metrics);
}

static int result_values_alloc(pmugate_values *v, uint32_t cpu, size_t n_events) {
        *v = (pmugate_values) {
                .cpu = cpu,
                .package = -1,
                .counts = calloc(n_events ?: 1, sizeof(double)),
                .raw = calloc(n_events ?: 1, sizeof(uint64_t)),
                .scale = calloc(n_events ?: 1, sizeof(double)),
                .metrics = calloc(1, sizeof(double)),
        };
        if (v->counts && v->raw && v->scale && v->metrics)
                return 0;
        result_values_free(v);
        *v = (pmugate_values) {};
        return -ENOMEM;
}

/* Perf read mode: the counts of a region per thread and summed, without formulas (perf's
 * software events have none). */
static int perf_result(const MarkerPerfPlan *plan, const uint32_t *row_cpus, uint64_t *const *raw,
                       const double *seconds, size_t n_rows, pmugate_result **ret) {
        pmugate_result *r = calloc(1, sizeof(*r));
        size_t n = plan->events.n_events;
        const char **events, **units;
        double longest = 0.0;

        if (!r)
                return -ENOMEM;
        r->events = events = calloc(n ?: 1, sizeof(char *));
        r->event_units = units = calloc(n ?: 1, sizeof(char *));
        r->cpus = calloc(n_rows ?: 1, sizeof(pmugate_values));
        r->withheld = "";
        r->event_sets = 1;
        if (!events || !units || !r->cpus)
                goto fail;
        for (size_t p = 0; p < n; p++, r->n_events++) {
                units[p] = "";
                if (!(events[p] = strdup(plan->names[p])))
                        goto fail;
        }
        if (result_values_alloc(&r->aggregate, UINT32_MAX, n) < 0)
                goto fail;
        for (size_t i = 0; i < n_rows; i++, r->n_cpus++) {
                pmugate_values *v = &r->cpus[i];

                if (result_values_alloc(v, row_cpus[i], n) < 0)
                        goto fail;
                for (size_t p = 0; p < n; p++) {
                        v->raw[p] = raw[i][p];
                        v->counts[p] = (double) raw[i][p];
                        v->scale[p] = 1.0;
                        r->aggregate.raw[p] += raw[i][p];
                        r->aggregate.counts[p] += (double) raw[i][p];
                }
                if (seconds[i] > longest)
                        longest = seconds[i];
        }
        for (size_t p = 0; p < n; p++)
                r->aggregate.scale[p] = 1.0;
        r->elapsed = longest;
        *ret = r;
        return 0;
fail:
        pmugate_result_free(r);
        return -ENOMEM;
}

static int region_result(const MarkerColumns *cols, const MarkerFile *f, size_t region, MarkerRegionResult *g) {
        pmugate_measure *m = cols->m;
        size_t n = 0, k = 0, n_events = columns_events(cols);
        uint64_t **raw;
        uint32_t *row_cpus;
        int r = -ENOMEM;

        for (size_t i = 0; i < f->n_rows; i++)
                if (f->rows[i].region == region)
                        n++;
        g->name = strdup(f->regions[region]);
        g->threads = calloc(n ?: 1, sizeof(uint32_t));
        g->cpus = calloc(n ?: 1, sizeof(int64_t));
        g->calls = calloc(n ?: 1, sizeof(uint64_t));
        g->seconds = calloc(n ?: 1, sizeof(double));
        g->migrated = calloc(n ?: 1, sizeof(uint64_t));
        raw = calloc(n ?: 1, sizeof(uint64_t *));
        row_cpus = calloc(n ?: 1, sizeof(uint32_t));
        if (!g->name || !g->threads || !g->cpus || !g->calls || !g->seconds || !g->migrated || !raw ||
            !row_cpus)
                goto finish;
        g->n_threads = n;
        for (size_t i = 0; i < f->n_rows; i++) {
                const MarkerRow *row = &f->rows[i];

                if (row->region != region)
                        continue;
                g->threads[k] = row->thread;
                g->cpus[k] = row->cpu;
                g->calls[k] = row->calls;
                g->total_calls += row->calls;
                g->seconds[k] = (double) row->time_ns / 1e9;
                g->migrated[k] = row->migrated;
                row_cpus[k] = row->cpu < 0 ? UINT32_MAX : (uint32_t) row->cpu;
                raw[k] = calloc(n_events ?: 1, sizeof(uint64_t));
                if (!raw[k])
                        goto finish;
                /* PERF_METRICS fields are differences of rounded products and may come out
                 * just below zero */
                for (size_t p = 0; p < n_events; p++) {
                        int64_t v = row->values[column_of_event(cols, p)];

                        raw[k][p] = v > 0 ? (uint64_t) v : 0;
                }
                k++;
        }
        if (m)
                r = measure_result_from_counts(m, row_cpus, raw, g->seconds, n, &g->result);
        else
                r = perf_result(cols->plan, row_cpus, raw, g->seconds, n, &g->result);
finish:
        for (size_t i = 0; raw && i < n; i++)
                free(raw[i]);
        free(raw);
        free(row_cpus);
        return r;
}

static int read_results(const char *path, char **ret_text, size_t *ret_size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t got = 0;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        if ((uint64_t) st.st_size > PMUGATE_MARKER_FILE_SIZE_MAX)
                return -EFBIG;
        text = malloc((size_t) st.st_size + 1);
        if (!text)
                return -ENOMEM;
        while (got < (size_t) st.st_size) {
                ssize_t n = read(fd, text + got, (size_t) st.st_size - got);

                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        *ret_text = TAKE_PTR(text);
        *ret_size = got;
        return 0;
}

static int report_read(const MarkerColumns *cols, const char *results_path, MarkerReport **ret,
                       char *reterr_reason, size_t reason_size) {
        _cleanup_(marker_report_freep) MarkerReport *report = NULL;
        _cleanup_(marker_file_freep) MarkerFile *f = NULL;
        _cleanup_free_ char *text = NULL;
        pmugate_measure *m = cols->m;
        size_t size = 0, columns;
        int r;

        r = read_results(results_path, &text, &size);
        if (r == -EFBIG)
                (void) snprintf(reterr_reason, reason_size, "the marker results are larger than %u bytes",
                                PMUGATE_MARKER_FILE_SIZE_MAX);
        else if (r < 0 && r != -ENOENT)
                (void) snprintf(reterr_reason, reason_size, "cannot read the marker results: %s",
                                strerror(-r));
        if (r < 0)
                return r;
        columns = cols->plan ? cols->plan->events.n_events :
                               m->n_sweep_regs + (m->metrics_slot >= 0 ? MARKER_METRICS_FIELDS : 0);
        r = marker_file_parse(text, size, columns, &f, reterr_reason, reason_size);
        if (r < 0)
                return r;
        report = calloc(1, sizeof(*report));
        if (!report)
                return -ENOMEM;
        (void) snprintf(report->mode, sizeof(report->mode), "%s", f->mode);
        report->regions = calloc(f->n_regions ?: 1, sizeof(MarkerRegionResult));
        if (!report->regions)
                return -ENOMEM;
        for (size_t i = 0; i < f->n_regions; i++) {
                report->n_regions++;
                r = region_result(cols, f, i, &report->regions[i]);
                if (r < 0)
                        return r;
        }
        report->errors = TAKE_PTR(f->errors);
        report->n_errors = f->n_errors;
        report->errors_dropped = f->errors_dropped;
        *ret = TAKE_PTR(report);
        return 0;
}

int marker_runner_report(pmugate_measure *m, const char *results_path, MarkerReport **ret,
                         char *reterr_reason, size_t reason_size) {
        const MarkerColumns cols = { .m = m };

        return report_read(&cols, results_path, ret, reterr_reason, reason_size);
}

int marker_runner_perf_report(const MarkerPerfPlan *plan, pmugate_measure *m, const char *results_path,
                              MarkerReport **ret, char *reterr_reason, size_t reason_size) {
        const MarkerColumns cols = { .m = m, .plan = plan };

        return report_read(&cols, results_path, ret, reterr_reason, reason_size);
}

int marker_runner_perf_plan(const char *list, MarkerPerfPlan *ret, char *reterr_reason, size_t reason_size) {
        _cleanup_free_ char *copy = list ? strdup(list) : NULL;
        MarkerPerfPlan plan = {};
        size_t software = 0, other = 0;
        const char *first_other = NULL;
        char *save = NULL;

        if (!list)
                return -ENOENT;
        if (!copy)
                return -ENOMEM;
        for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
                uint64_t config;
                int r;

                if (marker_perf_software_event(name, &config) < 0) {
                        other++;
                        first_other = first_other ?: list + (name - copy);
                        continue;
                }
                software++;
                r = marker_perf_events_add(&plan.events, "software", config, /* new_group= */ false);
                if (r < 0) {
                        (void) snprintf(reterr_reason, reason_size, "markers read at most %u software events "
                                        "in one group", MIN(MARKER_REGS_MAX, PERF_GROUP_EVENTS_MAX));
                        return r;
                }
                plan.programmed[plan.events.n_events - 1] = (int) plan.events.n_events - 1;
                (void) snprintf(plan.names[plan.events.n_events - 1], sizeof(plan.names[0]), "%s", name);
                (void) snprintf(plan.events.events[plan.events.n_events - 1].name,
                                sizeof(plan.events.events[0].name), "%s", name);
        }
        if (software == 0)
                return -ENOENT;
        if (other > 0) {
                (void) snprintf(reterr_reason, reason_size, "'%.*s' is not one of perf's software events: "
                                "where counters go through MSRs, markers read software events (task-clock, "
                                "page-faults, ...) through the thread's own perf events and others through the "
                                "registers, not both at once", (int) strcspn(first_other, ","), first_other);
                return -EINVAL;
        }
        *ret = plan;
        return 0;
}

int marker_runner_perf_plan_measure(pmugate_measure *m, MarkerPerfPlan *ret, char *reterr_reason, size_t reason_size) {
        _cleanup_(measure_perf_plan_freep) PerfPlan *pp = NULL;
        MarkerPerfPlan plan = {};
        int r;

        /* ring 0 only when asked for, as the measurement itself would open them */
        r = measure_perf_plan(m->model, measure_perf_core_pmu(m->info), m->programmed_descs, m->schedule,
                              pmugate_info_perf_topdown(m->info), m->flags & PMUGATE_MEASURE_KERNEL, &pp,
                              reterr_reason, reason_size);
        if (r < 0)
                return r;
        if (pp->n_events > MARKER_REGS_MAX) {
                (void) snprintf(reterr_reason, reason_size, "%zu perf events: markers read at most %u per thread",
                                pp->n_events, MARKER_REGS_MAX);
                return -E2BIG;
        }
        for (size_t g = 0; g < pp->n_groups; g++)
                for (size_t i = 0; i < pp->groups[g].n_events; i++) {
                        const pmugate_perf_event *ev = &pp->groups[g].events[i];
                        size_t k = plan.events.n_events;

                        r = marker_perf_events_add(&plan.events, ev->pmu, ev->config, /* new_group= */ i == 0);
                        if (r < 0) {
                                (void) snprintf(reterr_reason, reason_size, "the perf event %s of PMU '%s' cannot "
                                                "be passed to the program", ev->name, ev->pmu);
                                return r;
                        }
                        plan.events.events[k] = *ev;
                        plan.programmed[k] = pp->programmed[pp->group_first[g] + i];
                        (void) snprintf(plan.names[k], sizeof(plan.names[k]), "%s", ev->name);
                }
        /* every event of the measurement counted, or its formulas would see a zero */
        for (size_t p = 0; p < m->n_programmed; p++) {
                bool counted = false;

                for (size_t c = 0; c < plan.events.n_events; c++)
                        counted = counted || plan.programmed[c] == (int) p;
                if (!counted) {
                        (void) snprintf(reterr_reason, reason_size, "markers cannot count %s through perf%s%s",
                                        m->programmed_descs[p].name, pp->note[0] ? ": " : "", pp->note);
                        return -EOPNOTSUPP;
                }
        }
        *ret = plan;
        return 0;
}

int marker_runner_perf_environment(const MarkerPerfPlan *plan, const char *results_path, char *reterr_reason,
                                   size_t reason_size) {
        char events[MARKER_REGS_MAX * (PMUGATE_PERF_PMU_NAME_MAX + 3 * 20)];
        int r;

        r = marker_perf_events_format(&plan->events, events, sizeof(events));
        if (r < 0) {
                (void) snprintf(reterr_reason, reason_size, "cannot name the events for the program: %s",
                                strerror(-r));
                return r;
        }
        /* the registers' path's variables would only confuse an older library */
        (void) unsetenv(MARKER_ENV_REGS);
        (void) unsetenv(MARKER_ENV_CPUS);
        (void) unsetenv(MARKER_ENV_WIDTH);
        (void) unsetenv(MARKER_ENV_SHARED);
        if (setenv(MARKER_ENV_FILE, results_path, 1) < 0 || setenv(MARKER_ENV_PERF, events, 1) < 0)
                return -errno;
        return 0;
}

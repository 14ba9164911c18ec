/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Markers' perf read mode: the events the runner names, each thread's own set of them opened
 * through the daemon with handoff, and their reads without a round trip
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "marker/marker-perf.h"
#include "pmugate-limits.h"

struct MarkerPerfThread {
        pmugate_perf_handle *handle;    /* owns the handed-off fds */
        PerfSelf *events[MARKER_REGS_MAX];
        size_t n_events;
        size_t group_sizes[MARKER_REGS_MAX];
        size_t n_groups;
};

static const struct {
        const char *name;
        uint64_t config;
} software_events[] = {
        { "cpu-clock", PERF_COUNT_SW_CPU_CLOCK },
        { "task-clock", PERF_COUNT_SW_TASK_CLOCK },
        { "page-faults", PERF_COUNT_SW_PAGE_FAULTS },
        { "faults", PERF_COUNT_SW_PAGE_FAULTS },
        { "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES },
        { "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
        { "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
        { "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
        { "minor-faults", PERF_COUNT_SW_PAGE_FAULTS_MIN },
        { "major-faults", PERF_COUNT_SW_PAGE_FAULTS_MAJ },
};

int marker_perf_software_event(const char *name, uint64_t *ret_config) {
        for (size_t i = 0; name && i < ELEMENTSOF(software_events); i++)
                if (strcmp(name, software_events[i].name) == 0) {
                        *ret_config = software_events[i].config;
                        return 0;
                }
        return -ENOENT;
}

static bool pmu_name_valid(const char *pmu) {
        size_t n = 0;

        for (; pmu[n]; n++)
                if (n + 1 >= PMUGATE_PERF_PMU_NAME_MAX || !(isalnum((unsigned char) pmu[n]) || pmu[n] == '_'))
                        return false;
        return n > 0;
}

int marker_perf_events_add(MarkerPerfEvents *e, const char *pmu, uint64_t config, bool new_group) {
        pmugate_perf_event *ev;

        if (!pmu || !pmu_name_valid(pmu))
                return -EINVAL;
        if (e->n_events >= MARKER_REGS_MAX)
                return -E2BIG;
        if (new_group || e->n_groups == 0)
                e->group_sizes[e->n_groups++] = 0;
        else if (e->group_sizes[e->n_groups - 1] >= PERF_GROUP_EVENTS_MAX)
                return -E2BIG;
        ev = &e->events[e->n_events++];
        *ev = (pmugate_perf_event) { .config = config };
        (void) snprintf(ev->pmu, sizeof(ev->pmu), "%s", pmu);
        e->group_sizes[e->n_groups - 1]++;
        return 0;
}

int marker_perf_events_format(const MarkerPerfEvents *e, char *text, size_t size) {
        size_t at = 0, k = 0;

        if (size == 0 || e->n_events == 0)
                return -EINVAL;
        text[0] = '\0';
        for (size_t g = 0; g < e->n_groups; g++)
                for (size_t i = 0; i < e->group_sizes[g]; i++, k++) {
                        const pmugate_perf_event *ev = &e->events[k];
                        int n;

                        n = snprintf(text + at, size - at, "%s%s:0x%" PRIx64, k == 0 ? "" : i == 0 ? ";" : ",",
                                     ev->pmu, ev->config);
                        if (n < 0 || (size_t) n >= size - at)
                                return -ENOBUFS;
                        at += (size_t) n;
                        if (ev->has_config1 || ev->has_config2) {
                                n = snprintf(text + at, size - at, ":0x%" PRIx64, ev->config1);
                                if (n < 0 || (size_t) n >= size - at)
                                        return -ENOBUFS;
                                at += (size_t) n;
                        }
                        if (ev->has_config2) {
                                n = snprintf(text + at, size - at, ":0x%" PRIx64, ev->config2);
                                if (n < 0 || (size_t) n >= size - at)
                                        return -ENOBUFS;
                                at += (size_t) n;
                        }
                        if (ev->kernel) {
                                if (size - at < 3)
                                        return -ENOBUFS;
                                at += (size_t) snprintf(text + at, size - at, "/k");
                        }
                }
        return 0;
}

static int parse_hex(const char *p, const char **ret_end, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X') || !isxdigit((unsigned char) p[2]))
                return -EINVAL;
        errno = 0;
        v = strtoull(p + 2, &end, 16);
        if (errno != 0)
                return -EINVAL;
        *ret = v;
        *ret_end = end;
        return 0;
}

/* Everything in the text is checked: the program takes it from its environment. */
int marker_perf_events_parse(const char *text, MarkerPerfEvents *ret) {
        MarkerPerfEvents e = {};
        const char *p = text;
        bool new_group = true;

        if (!text || !text[0])
                return -EINVAL;
        while (*p) {
                char pmu[PMUGATE_PERF_PMU_NAME_MAX];
                uint64_t config[3] = {};
                size_t n = strcspn(p, ":");
                unsigned n_config = 0;
                bool kernel;
                int r;

                if (n == 0 || n >= sizeof(pmu))
                        return -EINVAL;
                memcpy(pmu, p, n);
                pmu[n] = '\0';
                p += n;
                while (*p == ':' && n_config < 3) {
                        r = parse_hex(p + 1, &p, &config[n_config++]);
                        if (r < 0)
                                return r;
                }
                if (n_config == 0)
                        return -EINVAL;
                kernel = p[0] == '/' && p[1] == 'k';
                if (kernel)
                        p += 2;
                if (*p != '\0' && *p != ',' && *p != ';')
                        return -EINVAL;
                r = marker_perf_events_add(&e, pmu, config[0], new_group);
                if (r < 0)
                        return r;
                e.events[e.n_events - 1].kernel = kernel;
                e.events[e.n_events - 1].config1 = config[1];
                e.events[e.n_events - 1].has_config1 = n_config > 1;
                e.events[e.n_events - 1].config2 = config[2];
                e.events[e.n_events - 1].has_config2 = n_config > 2;
                new_group = *p == ';';
                if (*p) {
                        p++;
                        if (!*p)
                                return -EINVAL;
                }
        }
        *ret = e;
        return 0;
}

int marker_perf_thread_open(pmugate *c, const MarkerPerfEvents *e, MarkerPerfThread **ret, char *reason,
                            size_t reason_size) {
        pmugate_perf_group groups[MARKER_REGS_MAX];
        pmugate_perf_request req = {
                .scope = PMUGATE_PERF_SCOPE_PROCESS,
                /* this thread alone (its tid; the main thread's is the pid), no children, no
                 * new threads */
                .pid = gettid(),
                .thread = true,
                .follow = false,
                .handoff = true,
                .groups = groups,
                .n_groups = e->n_groups,
        };
        MarkerPerfThread *t;
        size_t k = 0;
        int r;

        if (e->n_events == 0 || e->n_events > MARKER_REGS_MAX)
                return -EINVAL;
        for (size_t g = 0; g < e->n_groups; g++) {
                groups[g] = (pmugate_perf_group) { .events = &e->events[k], .n_events = e->group_sizes[g] };
                k += e->group_sizes[g];
        }
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        r = pmugate_perf_open(c, &req, &t->handle, reason, reason_size);
        if (r < 0) {
                free(t);
                return r;
        }
        if (pmugate_perf_n_fds(t->handle) != e->n_events) {
                (void) snprintf(reason, reason_size, "the daemon handed over %zu fds for %zu events",
                                pmugate_perf_n_fds(t->handle), e->n_events);
                (void) marker_perf_thread_close(c, t);
                return -EBADMSG;
        }
        for (size_t i = 0; i < e->n_events; i++) {
                r = perf_self_new(pmugate_perf_fd(t->handle, i), MARKER_PERF_READ_FORMAT, &t->events[i]);
                if (r < 0) {
                        (void) snprintf(reason, reason_size, "cannot map the control page of event %zu: %s", i,
                                        strerror(-r));
                        (void) marker_perf_thread_close(c, t);
                        return r;
                }
                t->n_events++;
        }
        memcpy(t->group_sizes, e->group_sizes, sizeof(t->group_sizes));
        t->n_groups = e->n_groups;
        *ret = t;
        return 0;
}

/* A group at a time: what the control pages cannot give comes from one read(2) per group. */
int marker_perf_thread_read(MarkerPerfThread *t, PerfSelfCount *counts) {
        size_t first = 0;

        for (size_t g = 0; g < t->n_groups; g++) {
                int r = perf_self_read_group(&t->events[first], t->group_sizes[g], &counts[first]);

                if (r < 0)
                        return r;
                first += t->group_sizes[g];
        }
        return 0;
}

MarkerPerfThread *marker_perf_thread_close(pmugate *c, MarkerPerfThread *t) {
        if (!t)
                return NULL;
        /* the pages before the fds their reads fall back to */
        for (size_t i = 0; i < t->n_events; i++)
                perf_self_free(t->events[i]);
        (void) pmugate_perf_close(c, t->handle);
        free(t);
        return NULL;
}

bool marker_perf_delta(const PerfSelfCount *start, const PerfSelfCount *stop, uint64_t *ret_delta) {
        uint64_t delta = stop->value - start->value;
        uint64_t enabled = stop->time_enabled - start->time_enabled;
        uint64_t running = stop->time_running - start->time_running;

        if (running >= enabled) {
                *ret_delta = delta;
                return true;
        }
        if (running == 0)
                return false;
        *ret_delta = (uint64_t) (((unsigned __int128) delta * enabled) / running);
        return true;
}

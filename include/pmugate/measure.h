/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate measurements: TopDown and event groups on a set of CPUs
 *
 * A measurement programs counters through the daemon, samples them (one round trip for all
 * CPUs per sample), accumulates counts and evaluates the group's formulas. TopDown uses the
 * recipe of the CPU model the daemon reports (docs/TOPDOWN.md); groups are data files
 * (docs/GROUPS.md). Every sample reads and resets SLOTS and PERF_METRICS as the kernel does,
 * so call pmugate_measure_sample() at least every pmugate_measure_poll_interval() for the
 * 8-bit PERF_METRICS fractions to stay precise and for multiplexed event sets to take turns.
 *
 * Functions return 0 or a negative errno; the open functions also write a one-line reason
 * to reterr_reason (may be NULL) when they fail. Nothing here logs or exits.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf.h"
#include "pmugate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pmugate_measure pmugate_measure;

/* Flags of the open functions. Without either ring flag both rings are counted. */
#define PMUGATE_MEASURE_USER   (1U << 0)        /* count in user mode (ring 3) */
#define PMUGATE_MEASURE_KERNEL (1U << 1)        /* count in kernel mode (ring 0) */

/* Opens TopDown level 1 or 2 (level 2 includes level 1) on cpus. -EOPNOTSUPP when the CPU
 * model has no recipe (the reason names the model). */
int pmugate_measure_open_topdown(pmugate *c, unsigned level, const uint32_t *cpus, size_t n_cpus, unsigned flags,
                                 pmugate_measure **ret, char *reterr_reason, size_t reason_size);

/* Opens TopDown level 3 or 4 drilled down, as pmu-tools' toplev --drilldown: levels 1 and 2
 * whole, and at each level k from 3 only the children of nodes[k - 3] (level - 2 nodes: one
 * of level 2, then a child of it at level 3 for level 4; typically the largest node of that
 * level in an earlier run, pmugate_result_largest_metric()). The nodes left out are n/a with
 * unavailable "not drilled into", and the events only they use are not programmed.
 * -EINVAL with a reason for another level, another number of nodes, or a name that is not
 * such a node. */
#define PMUGATE_NOT_DRILLED "not drilled into"    /* unavailable of a node a drilldown left out */
int pmugate_measure_open_topdown_drilldown(pmugate *c, unsigned level, const char *const *nodes, size_t n_nodes,
                                           const uint32_t *cpus, size_t n_cpus, unsigned flags,
                                           pmugate_measure **ret, char *reterr_reason, size_t reason_size);

/* Opens a group by name (a group file, docs/GROUPS.md) and/or a comma-separated list of
 * events (Intel names such as "UOPS_ISSUED.ANY", with modifiers :c=N :e :i :u :k, or rHEX). At
 * least one of group and events is needed. */
int pmugate_measure_open_group(pmugate *c, const char *group, const char *events, const uint32_t *cpus,
                               size_t n_cpus, unsigned flags, pmugate_measure **ret, char *reterr_reason,
                               size_t reason_size);

/* What a measurement counts (include/pmugate/perf.h): the CPUs given to open (cpu, the
 * default), the caller's job on them (job: job mode, counts only the job's tasks even on CPUs
 * other jobs share), or one process wherever it runs (process: the result then has one row,
 * whose cpu is the pid). Scopes other than cpu, software events (task-clock, ...) and a daemon
 * whose counters go through perf (pmugate_info.counters_via) count through the daemon's perf
 * path; counts and formulas are the same. Package events (memory traffic, energy) are
 * withheld outside scope cpu: a cgroup or a process cannot split a package's counters. */
typedef struct pmugate_measure_scope {
        pmugate_perf_scope scope;
        pid_t pid;              /* process: the process; 0 for the caller */
        bool follow;            /* process: its children and new threads count too */
        bool on_exec;           /* process: count from its next execve (a command held back) */
} pmugate_measure_scope;

/* Sets the scope; before pmugate_measure_start(). */
int pmugate_measure_set_scope(pmugate_measure *m, const pmugate_measure_scope *scope);

/* Whether the measurement counts through the daemon's perf path. */
bool pmugate_measure_via_perf(const pmugate_measure *m);

/* Longest PERF_METRICS window (default 1 s; 1 ms to 60 s), and how long an event set counts
 * before the next takes its turn when events outnumber counters (default 100 ms). Set before
 * pmugate_measure_start(). */
int pmugate_measure_set_reset_period(pmugate_measure *m, uint64_t nsec);
int pmugate_measure_set_rotate_period(pmugate_measure *m, uint64_t nsec);

/* Longest time between samples that keeps the measurement precise, in nanoseconds. */
uint64_t pmugate_measure_poll_interval(const pmugate_measure *m);

/* Event sets that take turns on the GP counters (1: no multiplexing). */
unsigned pmugate_measure_event_sets(const pmugate_measure *m);

/* CPU model key, group name and its one-line description. */
const char *pmugate_measure_model(const pmugate_measure *m);
const char *pmugate_measure_group(const pmugate_measure *m);
const char *pmugate_measure_description(const pmugate_measure *m);

/* One line on why the last start, sample or stop failed when the library itself found the
 * problem (a counter already in use, a failed register op); empty otherwise. When the daemon
 * refused a request, pmugate_last_error() has its reason. */
const char *pmugate_measure_last_reason(const pmugate_measure *m);

/* After start: "" or which package events (memory traffic, energy) the daemon withholds on
 * which package and why, e.g. a job that does not hold a whole package in job mode. The rest
 * of the measurement goes on; metrics that need a withheld event are NaN. */
const char *pmugate_measure_withheld(const pmugate_measure *m);

/* Takes a lease on the CPUs (when the daemon has leases), remembers what the registers held,
 * programs the counters and starts them. */
int pmugate_measure_start(pmugate_measure *m);

/* Reads every counter of every CPU and accumulates (one round trip); resets SLOTS and
 * PERF_METRICS; rotates event sets when multiplexing. -EKEYREVOKED (the right behind the lease
 * is gone: a revoked grant, a job that lost the CPU, a reload) and -ECANCELED (a higher role
 * took the lease) mean the daemon ended the lease and restored the registers itself;
 * pmugate_last_error() says which CPUs and why, and the measurement cannot go on. */
int pmugate_measure_sample(pmugate_measure *m);

/* Takes a last sample, then restores the registers it programmed, zeroes the counters it
 * used and releases the lease. Results stay readable. After the daemon ended the lease (see
 * pmugate_measure_sample()) there is nothing left to restore, and this only marks the end. */
int pmugate_measure_stop(pmugate_measure *m);

/* Stops if needed and frees. Accepts NULL; returns NULL. */
pmugate_measure *pmugate_measure_close(pmugate_measure *m);

/* ------------------------------------------------------------------ results */

typedef enum pmugate_span {
        PMUGATE_SPAN_TOTAL,     /* since pmugate_measure_start() */
        PMUGATE_SPAN_INTERVAL,  /* since the previous interval read (or the start) */
} pmugate_span;

typedef struct pmugate_metric_info {
        const char *name;       /* "tma_frontend_bound" */
        const char *label;      /* "Frontend Bound" */
        int parent;             /* index of the metric this one refines, or -1 */
        unsigned level;         /* 1 at the top of the tree */
        const char *unit;       /* "%": a fraction shown as a percentage; other text follows the
                                 * value as is; "" for none */
        const char *estimate;   /* "" or why the value is an estimate ("retire-latency": a
                                 * published mean latency stands in for a measured one) */
        const char *unavailable;        /* "" or why pmugate cannot compute it (the value is NaN) */
        bool has_threshold;     /* values' thresholds say whether it crossed its threshold */
} pmugate_metric_info;

typedef struct pmugate_values {
        uint32_t cpu;           /* UINT32_MAX for the aggregate */
        double *counts;         /* per event: count scaled to the whole span */
        uint64_t *raw;          /* per event: what the counters counted */
        double *scale;          /* per event: span / time counted (1 when never multiplexed;
                                 * infinite when it never ran) */
        double *metrics;        /* per metric; NaN when undefined (no cycles, ...) */
        double *thresholds;     /* per metric: 1 when it crossed its threshold (perf's
                                 * MetricThreshold), 0 when not, NaN when it has none or it is
                                 * undefined */
        double *metric_scale;   /* per metric: the largest scale of the events it uses, itself or
                                 * through other metrics (1 when none was multiplexed) */
        int32_t package;        /* the package of a per-package row or a CPU's; -1 for the aggregate */
        /* per metric: a bound on its error from 8-bit PERF_METRICS quantization and from
         * multiplexing, in the metric's own unit (a fraction for "%"), from how it is computed
         * (docs/TOPDOWN.md, "Error bounds"); NaN when no bound holds or it is n/a */
        double *error_bound;
        /* per metric: how the bound follows, or why there is none (static text) */
        const char **error_bound_reason;
} pmugate_values;

typedef struct pmugate_result {
        double start;           /* seconds from pmugate_measure_start() to the span's start */
        double elapsed;         /* seconds the span covers */
        uint64_t samples;       /* samples taken in the span */
        uint64_t resets;        /* SLOTS/PERF_METRICS read-and-resets in the span */
        unsigned event_sets;
        size_t n_events;
        const char *const *events;      /* Intel names; topdown-* are PERF_METRICS slot counts */
        size_t n_metrics;
        const pmugate_metric_info *metrics;
        size_t n_cpus;
        pmugate_values *cpus;           /* per CPU, in the order given to open */
        pmugate_values aggregate;       /* counts summed over CPUs, metrics from the sums */
        /* With package events (memory traffic UNC_M_CAS_COUNT.*, energy PWR_*_ENERGY; see
         * docs/GROUPS.md) in the group: one row per package of the measured CPUs, its CPUs'
         * counts summed and its package events, metrics from those; the aggregate then counts
         * the package events of all of them (the node). Per-CPU rows have NaN for package
         * events. Package events come last in events. */
        size_t n_packages;
        pmugate_values *packages;
        const char *const *event_units; /* per event: "" for counts, "J" for energy in joules */
        const char *withheld;           /* "" or which package events the daemon withholds and
                                         * why (job scope, policy); their metrics are NaN */
        const bool *not_modelled;       /* per event: the simulator has no model behind it (it
                                         * would count 0), so its counts are NaN, printed
                                         * <not modelled>; all false on real hardware */
        /* Seconds the counters counted in the span, the time every "/s" metric divides by
         * (duration_time): the mean over the measured CPUs of their windows timed by the TSC
         * read in the same batch as the counts ("tsc"), by perf's time_enabled of the same read
         * ("perf"), or, where neither is known, the client's clock between replies as elapsed
         * ("client"). Each per-CPU row's metrics use that CPU's own window. */
        double window;
        const char *window_clock;
} pmugate_result;

/* Computes counts and metrics for a span. An interval read moves the interval mark. */
int pmugate_measure_read(pmugate_measure *m, pmugate_span span, pmugate_result **ret);

pmugate_result *pmugate_result_free(pmugate_result *r);

/* Index of a metric or event by name, or -ENOENT. */
int pmugate_result_metric_index(const pmugate_result *r, const char *name);
int pmugate_result_event_index(const pmugate_result *r, const char *name);

/* Index of the metric of a level with the largest value in the aggregate (n/a ones skipped),
 * or -ENOENT when none of that level has a value: the node a drilldown goes into next. */
int pmugate_result_largest_metric(const pmugate_result *r, unsigned level);

#ifdef __cplusplus
}
#endif

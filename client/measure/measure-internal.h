/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement internals shared by set-up (measure-setup.c), programming and sampling
 * (measure-engine.c) and results (measure-result.c)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events/events.h"
#include "events/metrics.h"
#include "measure/package-events.h"
#include "measure/schedule.h"
#include "pmugate-limits.h"
#include "pmugate/measure.h"
#include "pmugate/perf.h"
#include "pmugate/pmugate.h"

#define MEASURE_RESET_PERIOD_DEFAULT_NS UINT64_C(1000000000)
#define MEASURE_ROTATE_PERIOD_DEFAULT_NS UINT64_C(100000000)
#define MEASURE_PERIOD_MIN_NS UINT64_C(1000000)
#define MEASURE_PERIOD_MAX_NS UINT64_C(60000000000)

/* Counters are 48 bits wide on every supported model (CPUID leaf 0xA). */
#define COUNTER_WIDTH_DEFAULT 48U

/* Constants a formula may use besides the events. */
#define CONSTANT_SMT_ON "SMT_on"
#define CONSTANT_CORE_WIDE "core_wide"
#define CONSTANT_SLOTS_WIDTH "slots_width"
#define CONSTANT_DURATION "duration_time"
#define CONSTANT_ROW_CPUS "row_cpus"
#define THRESHOLD_SUFFIX ".threshold"
/* A formula names the sum of an event over the measured SMT threads of a core (what
 * AnyThread counting would give) as "core." followed by the event's variable name. */
#define CORE_SUM_PREFIX "core."

/* Accumulated since start: what the results are computed from. */
typedef struct CpuAccum {
        uint64_t *raw;          /* per event */
        double *enabled;        /* per event: time-base units the event counted for */
        double total;           /* time-base units of the whole measurement */
        double wall;            /* wall-clock length of the CPU's counting windows (TSC ticks, or
                                 * nanoseconds where the TSC cannot be read; nanoseconds of
                                 * time_enabled on the perf path) */
} CpuAccum;

typedef struct CpuState {
        uint64_t gp_last[GP_COUNTERS_MAX];
        uint64_t fixed_last[FIXED_COUNTERS_MAX];
        uint64_t tsc_last;              /* the TSC at the previous batch, where it is the time base */
        uint64_t saved_evtsel[GP_COUNTERS_MAX];        /* register values before start */
        uint64_t saved_fixed_ctrl;
        uint64_t saved_global_ctrl;
        uint64_t tsc_started;                           /* TSC when the counters last started */
        /* SLOTS and the slots of each PERF_METRICS field counted before the last reset, for
         * readers that see only the registers (markers) */
        uint64_t slots_base;
        uint64_t fields_base[PERF_METRICS_FIELDS];
        int error;                                      /* first per-op error; the CPU stops counting */
} CpuState;

typedef struct MeasureEvent {
        EventDesc desc;
        bool programmed;        /* false when its condition did not hold */
        bool not_modelled;      /* the simulated PMU does not count it (it would read 0) */
        bool needs_perf;        /* its MSR_PEBS_FRONTEND facet (EventDesc.frontend) only the perf
                                 * path sets: through the registers it is not programmed */
        int variable;           /* index in the metric set, or -1 */
        int core_variable;
} MeasureEvent;

typedef struct MeasureMetric {
        int formula;            /* index in the metric set */
        int threshold;          /* index of its threshold formula, or -1 */
        size_t *programmed;     /* programmed events it uses, for its multiplexing scale */
        size_t n_programmed;
        pmugate_metric_info info;
} MeasureMetric;

/* Snapshot of the accumulators at the start of the current interval. */
typedef struct MeasureMark {
        CpuAccum *cpus;
        uint64_t ns;
        uint64_t samples;
        uint64_t resets;
} MeasureMark;

/* The perf groups a measurement opens (measure-perf.c): every event, group after group, and
 * for each the programmed event it counts (-1: a SLOTS leader no event of the group asked
 * for). */
typedef struct PerfPlan {
        pmugate_perf_event *events;
        int *programmed;
        pmugate_perf_group *groups;
        size_t *group_first;            /* per group: its first event's index in events */
        size_t n_events, n_groups;
        char note[PMUGATE_REASON_MAX];  /* "" or which events are left out and why */
} PerfPlan;

/* Turns placed events into perf groups: SLOTS (0x0400) leading the topdown-* metric events
 * (0x8000 + 0x100 * byte; level-2 bytes only where topdown_level is 2, else left out with a
 * note) as perf opens them; the fixed events by their pseudo-encodings (0x00c0, 0x003c,
 * 0x0300), the pinned GP events and the first GP set in the first group; every further GP set
 * a group, so that what a formula combines counts together; software events a group of their
 * own. GP events by their raw EVTSEL fields (AMD's with event[11:8], ARM's event number) on
 * core_pmu; ring 0 counted where
 * kernel (the caller asked for it) and the event counts ring 0. An event counting ring 0
 * alone cannot be asked for (-EOPNOTSUPP). */
int measure_perf_plan(const char *model, const char *core_pmu, const EventDesc *descs, const Schedule *s,
                      unsigned topdown_level, bool kernel, PerfPlan **ret, char *reterr_reason, size_t reason_size);
/* The core PMU GP and fixed events open on: the daemon's core PMU in hello's pmus ("cpu",
 * "cpu_core", Grace's "armv8_pmuv3_0"), not its generic "hardware"; "cpu" when it lists none. */
const char *measure_perf_core_pmu(const pmugate_info *info);
PerfPlan *measure_perf_plan_free(PerfPlan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(PerfPlan *, measure_perf_plan_free);

/* A TopDown drilldown (drilldown.c): below level 2, only the children of nodes[level - 3] at
 * each level; nodes[0] is of level 2, each further one a child of the one before. */
typedef struct MeasureDrill {
        unsigned level;
        const char *const *nodes;
        size_t n_nodes;
} MeasureDrill;

struct pmugate_measure {
        pmugate *connection;            /* not owned */
        pmugate_info *info;
        char model[16];
        char *group_name;
        char *description;
        unsigned flags;
        uint64_t reset_period_ns;
        uint64_t rotate_period_ns;

        MeasureEvent *events;           /* every event of the group; only programmed ones count */
        size_t n_events;
        size_t *programmed;             /* indexes into events of what the schedule places */
        size_t n_programmed;
        EventDesc *programmed_descs;
        Schedule *schedule;

        MetricSet *metric_set;
        MeasureMetric *metrics;         /* reported metrics, in file order */
        size_t n_metrics;
        int smt_on_variable, core_wide_variable, slots_width_variable, duration_variable, row_cpus_variable;
        bool smt_on, core_wide;

        uint32_t *cpus;
        size_t n_cpus;
        size_t **siblings;              /* per CPU: indexes of the measured CPUs of its core */
        size_t *n_siblings;
        bool *cpu_smt_on;               /* per CPU: its core has another online thread; a CPU
                                         * whose sibling is offline gets the SMT-off formulas */
        bool aggregate_core_wide;       /* core_wide for the sums: not when a measured CPU's
                                         * core lacks its sibling (the core sums are halved) */

        /* The core PMU's registers: Intel's architectural ones, or AMD's PerfEvtSel/PerfCtr
         * pairs and PerfMonV2 global control (measure_set_layout()). */
        uint32_t reg_evtsel0, reg_pmc0, reg_stride, reg_global_ctrl;
        bool has_fixed_ctrl;
        uint64_t owned_global;          /* GLOBAL_CTRL bits this measurement sets */
        uint64_t fixed_ctrl_fields;     /* FIXED_CTR_CTRL value and mask of its fields */
        uint64_t fixed_ctrl_mask;
        uint32_t *sweep_regs;           /* registers every sample reads, per CPU */
        size_t n_sweep_regs;
        int gp_slot[GP_COUNTERS_MAX];   /* position of each counter in sweep_regs, or -1 */
        int fixed_slot[FIXED_COUNTERS_MAX];
        int metrics_slot;
        bool uses_core_sums;            /* a formula names a core sum ("core." variables) */
        bool read_tsc;                  /* every sample reads IA32_TIME_STAMP_COUNTER too */
        int tsc_slot;                   /* the TSC in sweep_regs (time base without fixed counters), or -1 */
        bool registers_for_markers;     /* sweep_regs go to a marked program, which reads counters
                                         * with rdpmc only: no TSC among them */
        bool wall_in_tsc;               /* CpuAccum.wall counts TSC ticks of the counted windows and
                                         * the TSC's rate is known: duration_time comes from them */
        uint64_t counter_mask;

        bool prepared, started, stopped, leased;
        bool lease_lost;        /* the daemon ended the lease (revoked, preempted) and restored
                                 * the registers itself: there is nothing left to stop */
        unsigned current_set;
        uint64_t start_ns, last_sample_ns, set_started_ns;
        uint64_t last_batch_ns;         /* when the previous sample's batch was sent */
        uint64_t wall_delta_ns;         /* time base of this sample without a fixed counter for it */
        uint64_t samples, resets;
        CpuState *state;
        CpuAccum *accum;
        MeasureMark mark;
        size_t cpus_per_batch;          /* start and stop */
        size_t n_chunks;
        size_t sample_cpus_per_batch;   /* samples: fewer operations per CPU, so more CPUs */
        size_t n_sample_chunks;
        pmugate_batch **batches;        /* per sample chunk: [0] stays on the set, [1 + s] rotates from s */
        int *sweep_index;               /* first result of each batch's compact read */
        size_t variants;
        PackageEvents *package;         /* NULL without package events */
        char reason[PMUGATE_REASON_MAX];

        /* The perf path (measure-perf.c): chosen at open when hello's counters go via perf,
         * a software event is asked for, or (pmugate_measure_set_scope) a scope other than
         * cpu. Its reads accumulate into accum like the register path's. */
        bool via_perf;
        pmugate_measure_scope scope;
        bool software_only;             /* no PMU or no model: software events alone */
        char software_only_reason[PMUGATE_REASON_MAX];
        PerfPlan *perf_plan;
        pmugate_perf_handle *perf_handle;
        size_t *perf_row_cpu;           /* per target: its index in cpus */
        uint64_t *perf_last;            /* per target x plan event: the last value read */
        uint64_t *perf_last_enabled;    /* per target x group: the last time_enabled */
        uint64_t *perf_last_running;
        bool perf_read_once;            /* the first read, the baseline, is done */
        char perf_note[PMUGATE_REASON_MAX];
        char withheld_buf[2 * PMUGATE_REASON_MAX + 1024];

        /* Called around each sample (before: true, then false) and freed at close: the marker
         * runner tells the program when SLOTS and PERF_METRICS are reset. */
        void (*sample_hook)(pmugate_measure *m, bool before, void *userdata);
        void (*sample_hook_free)(void *userdata);
        void *sample_hook_data;
};

/* measure-setup.c: asks hello (unless info is given; it is taken either way), checks the CPUs,
 * resolves the group's events, places them on counters and compiles the formulas; with drill
 * (or NULL), only the nodes it drills into are measured. */
int measure_open(pmugate *c, pmugate_info *info, const char *group, const char *events, const MeasureDrill *drill,
                 const uint32_t *cpus, size_t n_cpus, unsigned flags, pmugate_measure **ret, char *reterr_reason,
                 size_t reason_size);

/* drilldown.c: marks the nodes drill leaves out n/a ("not drilled into") and takes the events
 * no drilled node uses off the counters; between compiling the formulas and scheduling. */
int measure_drill(pmugate_measure *m, const MeasureDrill *drill, char *reterr_reason, size_t reason_size);

static inline void measure_batch_freep(pmugate_batch **b) {
        *b = pmugate_batch_free(*b);
}

static inline void pmugate_measure_closep(pmugate_measure **m) {
        *m = pmugate_measure_close(*m);
}

/* measure-perf.c: the perf path of start, sample and stop */
int measure_perf_start(pmugate_measure *m);
int measure_perf_sample(pmugate_measure *m);
int measure_perf_stop(pmugate_measure *m);
void measure_perf_free(pmugate_measure *m);
/* The package events' note and the perf path's, as one line ("" for nothing). */
const char *measure_withheld_note(const pmugate_measure *m);

/* measure-result.c */
/* Accumulators (accumulate.c) */
int measure_accum_new(const pmugate_measure *m, CpuAccum **ret);
void measure_accum_free(CpuAccum *a, size_t n_cpus);
void measure_accum_copy(const pmugate_measure *m, CpuAccum *to, const CpuAccum *from);

/* perf's multiplex scaling: raw * total / enabled, with the scale (total / enabled) in
 * ret_scale. An event that was never multiplexed counted the whole span: raw, scale 1. One
 * that never ran: NaN, infinite scale. */
double measure_scaled_count(uint64_t raw, double enabled, double total, bool multiplexed, double *ret_scale);

/* The time in CLOCK_MONOTONIC nanoseconds. */
uint64_t measure_now_ns(void);

/* Kernel-style PERF_METRICS scaling (icl_get_metrics_event_value): floor(slots * byte / 0xff)
 * with a 128-bit intermediate. */
uint64_t measure_metrics_slots(uint64_t slots, uint64_t perf_metrics, unsigned field);

/* The error bound of one multiplexed term of a node: a fraction t of a divisor every set
 * counts, counted a share 1/scale of the span; the rest of the span may hold any fraction in
 * [0, 1] (docs/TOPDOWN.md, "Error bounds"). */
double measure_term_bound(double t, double scale);

/* Whether programmed event p takes turns with others (its counts are scaled). */
static inline bool measure_multiplexed(const pmugate_measure *m, size_t p) {
        const Placement *pl = &m->schedule->placements[p];

        /* the kernel's time_enabled and time_running say it for every event */
        if (m->via_perf)
                return true;
        return pl->kind == PLACE_GP && !pl->pinned && m->schedule->n_sets > 1;
}

/* Difference of two counter readings modulo 2^width. */
static inline uint64_t counter_delta(uint64_t now, uint64_t before, uint64_t mask) {
        return (now - before) & mask;
}

/* Results of counts taken outside the measurement's samples (marker regions): one row per
 * entry of raw (its counts per programmed event, never multiplexed; row_cpus[i] becomes the
 * row's cpu), each evaluated with its own duration, and the aggregate of all rows. */
int measure_result_from_counts(pmugate_measure *m, const uint32_t *row_cpus, uint64_t *const *raw,
                               const double *seconds, size_t n_rows, pmugate_result **ret);

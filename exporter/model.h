/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's data: monotonic totals per CPU, per job on a CPU, per job, per socket and
 * for the node, and why a CPU is or is not measured
 *
 * The sampler adds each interval's counts; a scrape only reads what is here. Totals never go
 * down: a CPU that a job takes starts a new series (its job label changes) from 0, and the
 * series of a CPU without a job continues where it stopped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* What every series counts. Slots are TopDown issue slots; the TopDown nodes are the slots
 * attributed to each node of the TopDown tree, so that rate(node) / rate(slots) is the node's
 * fraction over any window PromQL chooses. */
typedef enum Quantity {
        QTY_INSTRUCTIONS,
        QTY_CYCLES,
        QTY_SLOTS,
        QTY_MONITORED_SECONDS,
        QTY_TOPDOWN_FIRST,
        /* then one per TopDown node, in the order of the model's tree (model_topdown()) */
} Quantity;

typedef struct TopdownNode {
        const char *name;       /* the category label: "backend_bound" */
        unsigned level;
        const char *parent;     /* NULL at level 1 */
        const char *metrics[2]; /* the TopDown groups' metrics for it, the first found wins */
} TopdownNode;

/* The most nodes a tree has: Intel's 4 + 8, AMD's 5 + 8. */
#define TOPDOWN_NODES 13U

/* A vendor's TopDown tree, as the exporter labels its categories: Intel's level 1 and 2
 * (perf's tma_* metrics), or AMD's pipeline utilization with its fifth level-1 class,
 * smt_contention, and level 2 under Zen 4's names on Zen 4 and Zen 5 alike (the Zen 5 groups
 * spell them frontend_bound_by_latency, ...), so that one query covers both. */
typedef struct TopdownTree {
        const char *vendor;     /* the CPU vendor id it is for */
        unsigned n_nodes;
        TopdownNode nodes[TOPDOWN_NODES];
} TopdownTree;

extern const TopdownTree topdown_tree_intel, topdown_tree_amd;

/* The tree of a CPU vendor id ("GenuineIntel", "AuthenticAMD"); Intel's for any other. */
const TopdownTree *topdown_tree_for_vendor(const char *vendor);

/* Floating-point operations retired, after the TopDown nodes: CPU quantities, each packed
 * instruction weighted by its lanes as the FLOPS_DP and FLOPS_SP groups weigh them. A model whose
 * events split the precisions counts double and single; AMD's fp_ret_sse_avx_ops.all and
 * Grace's FP_*_OPS_SPEC count both together (all), with no split to be had. */
#define QTY_FLOPS_FIRST (QTY_TOPDOWN_FIRST + TOPDOWN_NODES)
#define QTY_FLOPS_DOUBLE (QTY_FLOPS_FIRST + 0)
#define QTY_FLOPS_SINGLE (QTY_FLOPS_FIRST + 1)
#define QTY_FLOPS_ALL (QTY_FLOPS_FIRST + 2)
#define QTY_FLOPS_END (QTY_FLOPS_FIRST + 3)

/* Package-scope quantities, after the FLOPs: a socket's memory traffic (64-byte CAS
 * lines times 64) and RAPL energy. CPUs never count them; a job gets the share of each of its
 * sockets' that its CPUs' unhalted cycles were of the socket's in the interval (an estimate:
 * the memory controller and RAPL do not know whose work they serve). */
#define QTY_PACKAGE_FIRST QTY_FLOPS_END
#define QTY_READ_BYTES (QTY_PACKAGE_FIRST + 0)
#define QTY_WRITTEN_BYTES (QTY_PACKAGE_FIRST + 1)
#define QTY_PACKAGE_JOULES (QTY_PACKAGE_FIRST + 2)
#define QTY_DRAM_JOULES (QTY_PACKAGE_FIRST + 3)
#define QTY_MAX (QTY_PACKAGE_FIRST + 4)

/* Job ids are the protocol's: at most 256 bytes of A-Z a-z 0-9 . _ - + */
#define MODEL_JOB_MAX 257U

typedef enum CpuReason {
        CPU_MONITORED,          /* counted by this exporter */
        CPU_USER_LEASE,         /* a user or admin programs its counters: the exporter yields */
        CPU_OTHER_MONITOR,      /* another monitoring agent holds it */
        CPU_OFFLINE,
        CPU_DAEMON_UNAVAILABLE, /* pmugated is not reachable (restarting, stopped) */
        CPU_REFUSED,            /* the daemon refused to let this exporter measure it */
        CPU_STARTING,           /* not measured yet */
        _CPU_REASON_MAX,
} CpuReason;

const char *cpu_reason_to_string(CpuReason r);

typedef struct CpuTotals {
        uint32_t cpu;
        int32_t socket;         /* -1 when unknown (offline) */
        char labels[40];        /* cpu="N",socket="S": formatted once, not in every scrape */
        CpuReason reason;
        double idle[QTY_MAX];   /* counted while no job held the CPU */
        uint32_t job;           /* the job holding it now: 1 + its place in the model's
                                 * job_names, 0 for none (model_cpu_job()); an index, not the
                                 * 257-byte name, keeps a copy of the model 1 MiB smaller at
                                 * 4096 CPUs */
        double held[QTY_MAX];   /* counted since job got the CPU */
} CpuTotals;

typedef struct JobTotals {
        char job[MODEL_JOB_MAX];
        bool has_uid;
        uint32_t uid;
        double v[QTY_MAX];
        uint32_t n_cpus;        /* CPUs it holds now (0 once ended) */
        uint32_t n_labelled;    /* ... of which the job map names it first: their counts are its */
        bool cpus_counted;      /* it was named first on a CPU at some time: its CPU quantities
                                 * are counts; otherwise they are unknown (not 0) */
        uint32_t max_cpus;      /* the most it held at once */
        char cpus[256];         /* the CPUs it held, as a CPU list (truncated with "...") */
        time_t first_seen, last_seen;
        bool running;
        time_t ended;           /* when it left the job map; kept for summaries a while */
        /* Where its instructions and cycles come from: the job's own cgroup events (a perf
         * node: only the job's tasks count, even on CPUs it shares), or else the counts of the
         * CPUs it holds (all of a CPU's counts go to the first job the job map names on it). */
        bool by_cgroup;
        double cgroup_enabled_seconds;  /* its cgroup events' time enabled, summed over CPUs */
        double cgroup_running_seconds;  /* ... and on the PMU: running / enabled is the scale */
} JobTotals;

/* Socket and node totals are indexed by socket; -1 (unknown) counts only for the node. */
typedef struct Model {
        char model_key[16];     /* CPU model from hello */
        char backend[16];
        unsigned topdown_level; /* 0 until a measurement ran */
        char hostname[256];
        const TopdownTree *topdown;     /* the CPU vendor's; NULL: Intel's (model_topdown()) */

        CpuTotals *cpus;
        size_t n_cpus;
        char (*job_names)[MODEL_JOB_MAX];       /* the jobs holding CPUs now, each once */
        size_t n_job_names;
        int32_t *cpu_index;     /* by CPU number: its place in cpus, or -1 */
        size_t n_cpu_index;
        double (*sockets)[QTY_MAX];
        size_t n_sockets;
        double node[QTY_MAX];

        JobTotals *jobs;
        size_t n_jobs, max_jobs;

        bool daemon_up;
        double last_sample;     /* UNIX time of the last sample, 0 before the first */
        uint64_t samples, sample_errors, restarts;
        bool export_uids;
        /* Whether the quantity was ever counted on this node: what the CPU model has no event
         * for (or the daemon withholds) has no series rather than a total of 0. model_add()
         * and model_add_package() set it for every finite delta. */
        bool counted[QTY_MAX];
} Model;

const TopdownTree *model_topdown(const Model *m);

/* CPU layout from the daemon's hello; totals of CPUs present before are kept. */
int model_set_cpus(Model *m, const uint32_t *cpus, const int32_t *sockets, size_t n);
void model_done(Model *m);

/* A copy of m that owns its arrays, for a scrape to render while the sampler goes on:
 * 0 or -ENOMEM. */
int model_copy(const Model *m, Model *ret);

/* The job holding the CPU now, "" for none. */
const char *model_cpu_job(const Model *m, const CpuTotals *c);

/* The totals of CPU number cpu, or NULL; constant time. */
CpuTotals *model_cpu(Model *m, uint32_t cpu);

/* Who holds each CPU now: job[i] for cpus[i] ("" or NULL for none). Jobs no longer holding
 * any CPU end (stay for summaries until pruned); a CPU whose job changed starts its held
 * series anew. uids may be NULL. */
int model_set_jobs(Model *m, const uint32_t *cpus, const char *const *jobs, const bool *has_uid,
                   const uint32_t *uids, size_t n, time_t now);

/* Adds one interval of a CPU: every quantity it measured (negative values count 0; NaN is
 * a quantity not measured, which counts nothing and leaves it uncounted). */
void model_add(Model *m, uint32_t cpu, const double delta[QTY_MAX]);

/* Adds one interval of a socket's package quantities (the others of delta are ignored) to the
 * socket, the node and, by their share of cycles, to the jobs on it. cycles[i] is what
 * m->cpus[i] counted in the same interval (NaN or 0 for CPUs not measured). */
void model_add_package(Model *m, int32_t socket, const double delta[QTY_MAX], const double *cycles);

/* Whether the job's total of quantity q was counted: CPU quantities where the job map named
 * it first on a CPU, instructions and cycles also from its cgroup. */
bool model_job_counts(const JobTotals *j, unsigned q);

/* The job's instructions and cycles come from its cgroup events from now on (by_cgroup true)
 * or from its CPUs again. A job not running is left alone. */
void model_set_job_source(Model *m, const char *job, bool by_cgroup);

/* Adds what a job's cgroup events counted in one interval, already scaled by enabled over
 * running time, and those times in seconds. */
void model_add_job_counts(Model *m, const char *job, double instructions, double cycles, double enabled_seconds,
                          double running_seconds);

/* Forgets jobs that ended more than retention seconds ago. */
void model_prune_jobs(Model *m, time_t now, time_t retention);

const JobTotals *model_find_job(const Model *m, const char *job);

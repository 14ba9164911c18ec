/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job: a job's per-node summaries (the Slurm Epilog's DIR/JOB.HOST.json) checked as
 * hostile input, and their total and imbalance across nodes
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate-limits.h"

/* Every quantity the report gives per node, in total and as an imbalance. */
typedef enum JobMetric {
        JOB_IPC,
        JOB_INSTRUCTIONS,
        JOB_CYCLES,
        JOB_FLOPS,
        JOB_TD_FRONTEND_BOUND,
        JOB_TD_BAD_SPECULATION,
        JOB_TD_BACKEND_BOUND,
        JOB_TD_RETIRING,
        JOB_TD_FETCH_LATENCY,
        JOB_TD_FETCH_BANDWIDTH,
        JOB_TD_BRANCH_MISPREDICTS,
        JOB_TD_MACHINE_CLEARS,
        JOB_TD_MEMORY_BOUND,
        JOB_TD_CORE_BOUND,
        JOB_TD_LIGHT_OPERATIONS,
        JOB_TD_HEAVY_OPERATIONS,
        JOB_MEMORY_BANDWIDTH,
        JOB_MEMORY_BYTES,
        JOB_ENERGY,
        JOB_POWER,
        JOB_METRICS,
} JobMetric;

/* How a total over nodes is formed. */
typedef enum JobTotalKind {
        JOB_TOTAL_SUM,                  /* extensive: counts, bytes, joules, and rates of nodes running side by side */
        JOB_TOTAL_CYCLE_WEIGHTED,       /* a ratio per cycle: the sum of the numerators over the sum of the cycles */
        JOB_TOTAL_SLOT_WEIGHTED,        /* a TopDown share: the category's slots over all slots */
} JobTotalKind;

typedef struct JobMetricInfo {
        const char *name;       /* the key in the JSON report and the CSV header */
        const char *label;      /* the table's row label */
        JobTotalKind total;
        int topdown_level;      /* 1 or 2 for a TopDown category, else 0 */
} JobMetricInfo;

extern const JobMetricInfo job_metrics[JOB_METRICS];

/* What the summary says it covers: the whole allocation on its node (what pmugate-exporter
 * summarises: every CPU the job map named the job on), or one step. */
#define JOB_COVERS_MAX 64U
#define JOB_CPUS_TEXT_MAX 256U     /* pmugate-exporter's, which ends a longer list with "..." */

typedef struct JobNode {
        char host[PMUGATE_JOB_HOST_MAX + 1];    /* from the file's name, as the Epilog named it */
        char file[PMUGATE_JOB_ID_MAX + PMUGATE_JOB_HOST_MAX + 8];
        char cpus[JOB_CPUS_TEXT_MAX];
        char covers[JOB_COVERS_MAX];
        char cpu_model[32];
        int64_t start, end;
        bool covers_assumed;    /* an older summary without "covers": the whole allocation */
        double slots;           /* the TopDown denominator; NaN when not counted */
        double v[JOB_METRICS];  /* NaN: not measured on this node (never 0 for unknown) */
        /* filled by job_report_compute() */
        int64_t clock_offset;   /* the larger in magnitude of start and end minus the job's window */
        bool clock_skewed;
} JobNode;

/* Parses one summary document (size bytes, not NUL-terminated) that should be job's on host
 * (the names in the file's name). Returns 0 and fills *ret; 1 when it is a well-formed summary
 * of another job (a file whose name only looks like this job's: job ids may hold dots); or
 * -EBADMSG with the reason in reterr_reason. Unknown keys are ignored, so that newer summaries
 * still read; a known key of the wrong type or out of its range refuses the whole file. */
int job_node_parse(const char *data, size_t size, const char *job, const char *host, JobNode *ret,
                   char *reterr_reason, size_t reason_size);

/* Whether name is "JOB.HOST.json" for this job; copies HOST (non-empty, at most
 * PMUGATE_JOB_HOST_MAX characters, no '/') into host. */
bool job_summary_name(const char *name, const char *job, char *host, size_t host_size);

/* Whether s is a job id the Epilog names files after: [A-Za-z0-9._+-], not starting with '.',
 * at most PMUGATE_JOB_ID_MAX characters. */
bool job_id_valid(const char *s);

/* Expands a Slurm host list ("node[01-03,7],login1") into at most PMUGATE_JOB_REPORT_NODES_MAX
 * names (one bracket group per name, ranges keep the lower bound's zero padding). Returns the
 * number of names or -EINVAL, -E2BIG, -ENOMEM; *ret is an array of strings to free with
 * job_hosts_free(). */
int job_hosts_expand(const char *list, char ***ret);
void job_hosts_free(char **hosts, size_t n);

typedef struct JobStat {
        double total;           /* NaN when no node measured it */
        double max_over_mean;   /* NaN with no node, or a mean of 0 */
        double cv;              /* population standard deviation over the mean */
        size_t n;               /* nodes that measured it */
} JobStat;

typedef struct JobReport {
        int64_t window_start, window_end;       /* the median of the nodes' starts and ends */
        size_t n_skewed;
        JobStat stat[JOB_METRICS];
} JobReport;

/* Totals, imbalance and the job's window over the n nodes present; flags each node whose start
 * or end is more than skew_max seconds from the window's. A skewed node's counts stay in the
 * total: they were counted by its own PMU over the job's CPUs, whatever its clock said. */
void job_report_compute(JobNode *nodes, size_t n, int64_t skew_max, JobReport *ret);

/* A node without a usable report: named by --nodes and absent, its file refused, or its
 * exporter down during the job. */
#define JOB_REASON_MAX 512U

typedef struct JobMissing {
        char host[PMUGATE_JOB_HOST_MAX + 1];
        char reason[JOB_REASON_MAX];
} JobMissing;

/* The nodes a report covers and the nodes it is missing, each host once. */
typedef struct JobSet {
        JobNode *nodes;
        size_t n_nodes, nodes_allocated;
        JobMissing *missing;
        size_t n_missing, missing_allocated;
} JobSet;

int job_set_add_node(JobSet *s, const JobNode *node);
/* A host already missing keeps its first reason. */
int job_set_add_missing(JobSet *s, const char *host, const char *reason);
/* Whether a node of the set is host: the same name, or host followed by '.' or ':' (a full
 * name, or Prometheus' HOST:PORT instance). */
bool job_set_has(const JobSet *s, const char *host);
void job_set_done(JobSet *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The arguments of pmugate topdown and pmugate stat, and their --help
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/measure-output.h"

#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define ARGS_DONE 1             /* measure_parse_args(): --help was shown */

enum {
        ARG_RESET_PERIOD = 0x100,
        ARG_ROTATE_PERIOD,
        ARG_USER,
        ARG_KERNEL,
        ARG_SCOPE,
        ARG_AGGREGATE,
        ARG_DRILLDOWN,
};

#define DRILL_NODES_MAX 2U              /* a drilldown to level 4 names a level-2 and a level-3 node */

#define SCOPE_DEFAULT (-1)              /* MeasureArgs.scope: chosen from the other options */

typedef struct MeasureArgs {
        bool topdown;
        const char *verb;
        unsigned level;
        bool drilldown;                 /* --drilldown: one run per level from 2, then the last */
        const char *drill_nodes[DRILL_NODES_MAX];      /* the run's drilled nodes (the largest of each
                                                        * level in the run before), or none */
        size_t n_drill_nodes;
        const char *events;
        const char *group;
        const char *pin_cpus;           /* -C: pin the command and measure */
        const char *measure_cpus;       /* -c: measure only */
        uint64_t interval_ns;
        uint64_t duration_ns;
        uint64_t reset_period_ns;
        uint64_t rotate_period_ns;
        OutputFormat format;
        bool format_given;
        const char *output_path;
        bool per_cpu;
        bool aggregate_only;            /* --aggregate: CSV and JSON without per-CPU rows */
        bool marker;                    /* -m: the command's markers read the counters */
        const char *socket_path;        /* the daemon's, for the marker runner */
        unsigned flags;
        unsigned repeat;
        int scope;                      /* --scope: a pmugate_perf_scope, or SCOPE_DEFAULT */
        pid_t pid;                      /* -p: the process to attach to, or 0 */
        char **command;
} MeasureArgs;

/* Parses the arguments after the verb: 0, ARGS_DONE after --help, or -EINVAL after saying
 * what is wrong on stderr (the caller exits with 2). */
int measure_parse_args(int argc, char *argv[], bool topdown, MeasureArgs *ret);

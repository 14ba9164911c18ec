/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate topdown and stat: options, their checks and the help text
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli-util.h"
#include "cli/verb-measure-args.h"
#include "macro.h"
#include "pmugate/measure.h"

#define NSEC_PER_USEC UINT64_C(1000)
#define TIME_MAX_NS (UINT64_C(366) * 24 * 3600 * NSEC_PER_SEC)

static int parse_time(const char *s, uint64_t plain_unit_ns, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t ns;
        } units[] = {
                { "ns", 1 }, { "us", NSEC_PER_USEC }, { "ms", NSEC_PER_MSEC }, { "s", NSEC_PER_SEC },
                { "m", 60 * NSEC_PER_SEC }, { "h", 3600 * NSEC_PER_SEC },
        };
        uint64_t unit = plain_unit_ns;
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || end == s || !isfinite(v) || v <= 0)
                return -EINVAL;
        if (*end) {
                unit = 0;
                for (size_t i = 0; i < ELEMENTSOF(units); i++)
                        if (strcmp(end, units[i].suffix) == 0)
                                unit = units[i].ns;
                if (unit == 0)
                        return -EINVAL;
        }
        if (v * (double) unit > (double) TIME_MAX_NS || v * (double) unit < 1.0)
                return -ERANGE;
        *ret = (uint64_t) (v * (double) unit);
        return 0;
}

static void help(bool topdown) {
        if (topdown)
                printf("Usage: pmugate topdown [-l 1|2|3|4 [--drilldown]] [-C CPUS | -c CPUS | -p PID]\n"
                       "                       [--scope=SCOPE] [-I INTERVAL] [-S DURATION] [-r N] [-O FORMAT]\n"
                       "                       [-o FILE] [-A] [-- COMMAND ARGS...]\n"
                       "\n"
                       "Intel's TopDown analysis (level 1, or down to level 2, 3 or 4) on CPUs.\n");
        else
                printf("Usage: pmugate stat -e EVENT,... | -g GROUP [-C CPUS | -c CPUS | -p PID]\n"
                       "                    [--scope=SCOPE] [-I INTERVAL] [-S DURATION] [-r N] [-O FORMAT]\n"
                       "                    [-o FILE] [-A]\n"
                       "                    [-- COMMAND ARGS...]\n"
                       "\n"
                       "Count events, or a group of events and the formulas computed from them.\n");
        printf("\n"
               "Counts are per CPU, like likwid-perfctr: everything that runs on the measured CPUs\n"
               "is counted, not one process. With a COMMAND, -C pins it to the CPUs, so that their\n"
               "counts are its own unless others run there; results go to stderr and the command\n"
               "keeps its stdout; pmugate exits with the command's status. Where the daemon counts\n"
               "through the kernel's perf events, or for the kernel's software events, a COMMAND\n"
               "without -C or -c is counted itself with its children wherever they run, like\n"
               "perf stat -- COMMAND; -p counts a running process; in job mode the job is counted.\n"
               "\n");
        if (topdown)
                printf("  -l --level=1|2|3|4    TopDown level (default 1)\n"
                       "     --drilldown        With -l 3 or 4: as toplev, measure below level 2 only\n"
                       "                        the children of the largest node of the level above,\n"
                       "                        found in a run of its own (COMMAND or -S runs once\n"
                       "                        per level from 2)\n");
        else
                printf("  -e --events=LIST      Events: Intel names (any case), perf's instructions,\n"
                       "                        cycles, ref-cycles, branches, branch-misses,\n"
               "                        cache-misses, cache-references (Intel), rHEX;\n"
                       "                        modifiers :u :k :c=N :e :i; the kernel's task-clock,\n"
                       "                        cpu-clock, page-faults, context-switches,\n"
                       "                        cpu-migrations, minor-faults, major-faults\n"
                       "  -g --group=NAME       A group ('pmugate list groups'), any case\n");
        printf("  -C --cpu=CPUS         Pin COMMAND to CPUS and measure them\n"
               "  -c --cpus=CPUS        Measure CPUS (default: the CPUs this process may run on)\n"
               "                        CPUS: 0-3,8 or likwid's S0:0-3, N:0-7, C0:, M0:\n"
               "                        (joined with @ or ,)\n"
               "  -p --pid=PID          Count process PID (yours) and its new threads and children\n"
               "     --scope=SCOPE      cpu (the CPUs), job (your job's tasks on them; job mode) or\n"
               "                        process (COMMAND or -p); default: process for -p and, where\n"
               "                        counters go through perf, for COMMAND without -C or -c;\n"
               "                        job in job mode there; else cpu\n"
               "  -I --interval=TIME    Print every TIME (500ms, 1s; a plain number is ms)\n"
               "  -S --duration=TIME    Measure for TIME without a command (Ctrl-C ends it early)\n"
               "  -r --repeat=N         Run COMMAND N times: means and standard deviations\n"
               "  -O --format=FORMAT    table, csv, json (one document, -I's intervals in it) or\n"
               "                        jsonl (JSON Lines: an object per interval as it ends)\n"
               "  -o --output=FILE      Write to FILE; %%h host, %%p pid, %%j job id, %%r rank;\n"
               "                        .csv, .json, .jsonl, .txt choose the format unless -O does;\n"
               "                        without -O another suffix is refused\n"
               "  -A --per-cpu          A column per CPU in the table\n"
               "     --aggregate        CSV and JSON: the aggregate (and packages) only, no\n"
               "                        per-CPU rows, for large nodes\n"
               "  -m --marker           Per region COMMAND marks (docs/MARKERS.md)\n"
               "     --user, --kernel   Count only user (ring 3) or kernel (ring 0) mode\n"
               "     --reset-period=T   Longest PERF_METRICS window (default 1s)\n"
               "     --rotate-period=T  How long each event set counts in turn (default 100ms)\n"
               "  -h --help             Show this help\n"
               "\n"
               "See pmugate(1) and 'pmugate list'.\n");
}

static int usage_error(const char *verb, const char *message, const char *arg) {
        fprintf(stderr, "pmugate: %s%s%s (see 'pmugate %s --help')\n", message, arg ? ": " : "", arg ?: "",
                verb);
        return -EINVAL;
}

static int parse_option(MeasureArgs *a, int opt, const char *arg, char *const *argv) {
        const char *verb = a->verb;
        uint64_t n;

        switch (opt) {
        case 'l':
                if (!a->topdown || strlen(arg) != 1 || arg[0] < '1' || arg[0] > '4')
                        return usage_error(verb, "-l takes 1, 2, 3 or 4", arg);
                a->level = (unsigned) (arg[0] - '0');
                return 0;
        case 'e':
                a->events = arg;
                return 0;
        case 'g':
                a->group = arg;
                return 0;
        case 'C':
                a->pin_cpus = arg;
                return 0;
        case 'c':
                a->measure_cpus = arg;
                return 0;
        case 'I':
                /* a plain number is milliseconds, as for perf stat -I */
                if (parse_time(arg, NSEC_PER_MSEC, &a->interval_ns) < 0 || a->interval_ns < NSEC_PER_MSEC)
                        return usage_error(verb, "-I takes an interval of at least 1ms such as 500ms", arg);
                return 0;
        case 'S':
                if (parse_time(arg, NSEC_PER_SEC, &a->duration_ns) < 0 || a->duration_ns < NSEC_PER_MSEC)
                        return usage_error(verb, "-S takes a duration of at least 1ms such as 5s", arg);
                return 0;
        case 'r':
                if (cli_parse_u64(arg, &n) < 0 || n < 1 || n > OUTPUT_RUNS_MAX)
                        return usage_error(verb, "-r takes a number of runs from 1 to 1000", arg);
                a->repeat = (unsigned) n;
                return 0;
        case 'O':
                if (output_format_from_string(arg, &a->format) < 0)
                        return usage_error(verb, "-O takes table, csv, json, jsonl or json-doc", arg);
                a->format_given = true;
                return 0;
        case 'o':
                a->output_path = arg;
                return 0;
        case 'A':
                a->per_cpu = true;
                return 0;
        case ARG_AGGREGATE:
                a->aggregate_only = true;
                return 0;
        case ARG_DRILLDOWN:
                if (!a->topdown)
                        return usage_error(verb, "--drilldown drills into the TopDown tree: it is an option of "
                                           "pmugate topdown", NULL);
                a->drilldown = true;
                return 0;
        case 'm':
                a->marker = true;
                return 0;
        case ARG_RESET_PERIOD:
        case ARG_ROTATE_PERIOD:
                if (parse_time(arg, NSEC_PER_SEC,
                               opt == ARG_RESET_PERIOD ? &a->reset_period_ns : &a->rotate_period_ns) < 0)
                        return usage_error(verb, opt == ARG_RESET_PERIOD ?
                                           "--reset-period takes a time such as 1s" :
                                           "--rotate-period takes a time such as 100ms", arg);
                return 0;
        case ARG_USER:
                a->flags |= PMUGATE_MEASURE_USER;
                return 0;
        case ARG_KERNEL:
                a->flags |= PMUGATE_MEASURE_KERNEL;
                return 0;
        case ARG_SCOPE:
                a->scope = pmugate_perf_scope_from_string(arg);
                if (a->scope < 0)
                        return usage_error(verb, "--scope takes cpu, job or process", arg);
                return 0;
        case 'p':
                if (cli_parse_u64(arg, &n) < 0 || n < 1 || n > INT32_MAX)
                        return usage_error(verb, "-p takes a process id", arg);
                a->pid = (pid_t) n;
                return 0;
        default:
                return cli_unknown_option("pmugate", verb, argv, opt);
        }
}

int measure_parse_args(int argc, char *argv[], bool topdown, MeasureArgs *ret) {
        static const struct option options[] = {
                { "level", required_argument, NULL, 'l' },
                { "events", required_argument, NULL, 'e' },
                { "group", required_argument, NULL, 'g' },
                { "cpu", required_argument, NULL, 'C' },
                { "cpus", required_argument, NULL, 'c' },
                { "interval", required_argument, NULL, 'I' },
                { "duration", required_argument, NULL, 'S' },
                { "repeat", required_argument, NULL, 'r' },
                { "format", required_argument, NULL, 'O' },
                { "output", required_argument, NULL, 'o' },
                { "per-cpu", no_argument, NULL, 'A' },
                { "aggregate", no_argument, NULL, ARG_AGGREGATE },
                { "drilldown", no_argument, NULL, ARG_DRILLDOWN },
                { "reset-period", required_argument, NULL, ARG_RESET_PERIOD },
                { "rotate-period", required_argument, NULL, ARG_ROTATE_PERIOD },
                { "user", no_argument, NULL, ARG_USER },
                { "kernel", no_argument, NULL, ARG_KERNEL },
                { "scope", required_argument, NULL, ARG_SCOPE },
                { "pid", required_argument, NULL, 'p' },
                { "marker", no_argument, NULL, 'm' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *verb = topdown ? "topdown" : "stat";
        MeasureArgs a = { .topdown = topdown, .verb = verb, .level = 1, .format = OUTPUT_TABLE, .scope = SCOPE_DEFAULT };
        int opt, r;

        /* '+': options end at the command; ':': missing values reported here, not by getopt */
        opterr = 0;
        while ((opt = getopt_long(argc, argv, topdown ? "+:hl:C:c:p:I:S:r:O:o:Am" : "+:he:g:C:c:p:I:S:r:O:o:Am",
                                  options, NULL)) >= 0) {
                if (opt == 'h') {
                        help(topdown);
                        return ARGS_DONE;
                }
                r = parse_option(&a, opt, optarg, argv);
                if (r < 0)
                        return r;
        }
        if (a.pin_cpus && a.measure_cpus)
                return usage_error(verb, "give -C (pin and measure) or -c (measure), not both", NULL);
        if (!topdown && !a.events && !a.group)
                return usage_error(verb, "give -e EVENT,... or -g GROUP", NULL);
        if (optind < argc)
                a.command = argv + optind;
        if (a.command && a.duration_ns > 0)
                return usage_error(verb,
                                   "-S measures for a time without a command; a command is measured until "
                                   "it exits", NULL);
        if (a.marker && (!a.command || a.interval_ns > 0 || a.repeat > 1))
                return usage_error(verb, "-m measures the regions a command marks: give a command, and no -I or -r",
                                   NULL);
        if (a.pin_cpus && !a.command)
                return usage_error(verb, "-C pins a command to the CPUs; without one, measure them with -c",
                                   NULL);
        if (a.pid > 0 && (a.command || a.pin_cpus || a.measure_cpus))
                return usage_error(verb, "-p counts a running process: no COMMAND, -C or -c with it", NULL);
        if (a.pid > 0 && a.scope != SCOPE_DEFAULT && a.scope != PMUGATE_PERF_SCOPE_PROCESS)
                return usage_error(verb, "-p counts a process: --scope process, or no --scope", NULL);
        if (a.scope == PMUGATE_PERF_SCOPE_PROCESS && !a.pid && !a.command)
                return usage_error(verb, "--scope process counts a COMMAND or -p PID", NULL);
        if (a.scope == PMUGATE_PERF_SCOPE_PROCESS && (a.pin_cpus || a.measure_cpus))
                return usage_error(verb, "--scope process counts wherever the process runs: no -C or -c", NULL);
        if (a.marker && a.scope != SCOPE_DEFAULT && a.scope != PMUGATE_PERF_SCOPE_CPU)
                return usage_error(verb, "-m measures per CPU: no --scope job or process", NULL);
        if (a.aggregate_only && a.per_cpu)
                return usage_error(verb, "-A adds a column per CPU, --aggregate leaves them out: not both", NULL);
        if (a.repeat > 1 && (!a.command || a.interval_ns > 0))
                return usage_error(verb, a.interval_ns > 0 ?
                                   "-r repeats a whole command for means and deviations; -I prints intervals "
                                   "of one run: give one of them" :
                                   "-r repeats a command: give one after --", NULL);
        if (a.drilldown && a.level < 3)
                return usage_error(verb, "--drilldown measures below level 2 only the children of the largest "
                                   "node above: give -l 3 or -l 4 (levels 1 and 2 are always measured whole)",
                                   NULL);
        if (a.drilldown && (a.marker || a.pid > 0 || (!a.command && a.duration_ns == 0)))
                return usage_error(verb, "--drilldown runs a COMMAND, or measures -S DURATION, once per level "
                                   "from 2 to find the largest node: give a COMMAND or -S, and no -m or -p",
                                   NULL);
        *ret = a;
        return 0;
}

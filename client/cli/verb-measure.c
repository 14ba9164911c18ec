/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate topdown and pmugate stat: wrapper (-- CMD), stethoscope (-S) and timeline (-I) modes
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cli-util.h"
#include "cpu-expr.h"
#include "cpulist.h"
#include "macro.h"
#include "measure-output.h"
#include "output-file.h"
#include "pmugate-limits.h"
#include "verb-measure.h"
#include "workload.h"

#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define TIME_MAX_NS (UINT64_C(366) * 24 * 3600 * NSEC_PER_SEC)
#define REASON_MAX 512U
#define CPU_LIST_TEXT_MAX 1024U
/* -S runs at least this long show a progress line on a terminal, refreshed this often */
#define PROGRESS_MIN_NS (2 * NSEC_PER_SEC)
#define PROGRESS_PERIOD_NS NSEC_PER_SEC
#define ARGS_DONE 1             /* parse_args: --help was shown */
/* With -I, each event set counts for at least this long in every interval */
#define ROTATE_TURN_MIN_NS (10 * NSEC_PER_MSEC)

#define MIN(a, b) ((a) < (b) ? (a) : (b))

enum {
        ARG_RESET_PERIOD = 0x100,
        ARG_ROTATE_PERIOD,
        ARG_USER,
        ARG_KERNEL,
};

typedef struct MeasureArgs {
        bool topdown;
        const char *verb;
        unsigned level;
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
        unsigned flags;
        unsigned repeat;
        char **command;
} MeasureArgs;

/* What one measurement ended with. */
static inline void pmugate_measure_closep_cli(pmugate_measure **m) {
        *m = pmugate_measure_close(*m);
}

static inline void pmugate_info_freep_cli(pmugate_info **info) {
        *info = pmugate_info_free(*info);
}

typedef struct RunEnd {
        int status;                     /* exit status so far */
        int signal;                     /* SIGINT or SIGTERM that ended a run without a command, or 0 */
        bool partial_turns;             /* the last interval has not had every event set's turn */
} RunEnd;

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
                printf("Usage: pmugate topdown [-l 1|2] [-C CPUS | -c CPUS] [-I INTERVAL] [-S DURATION] [-r N]\n"
                       "                       [-O FORMAT] [-o FILE] [-A] [-- COMMAND ARGS...]\n"
                       "\n"
                       "Intel's TopDown analysis (level 1, or 2 with its children) on CPUs.\n");
        else
                printf("Usage: pmugate stat -e EVENT,... | -g GROUP [-C CPUS | -c CPUS] [-I INTERVAL] [-S DURATION]\n"
                       "                    [-r N] [-O FORMAT] [-o FILE] [-A] [-- COMMAND ARGS...]\n"
                       "\n"
                       "Count events, or a group of events and the formulas computed from them.\n");
        printf("\n"
               "Counts are per CPU, like likwid-perfctr: everything that runs on the measured CPUs\n"
               "is counted, not one process. With a COMMAND, -C pins it to the CPUs, so that their\n"
               "counts are its own unless others run there; results go to stderr and the command\n"
               "keeps its stdout; pmugate exits with the command's status.\n"
               "\n");
        if (topdown)
                printf("  -l --level=1|2        TopDown level (default 1)\n");
        else
                printf("  -e --events=LIST      Events: Intel names (case-insensitive), perf's instructions,\n"
                       "                        cycles, ref-cycles, branches, branch-misses, rHEX; :u :k :c=N :e :i\n"
                       "  -g --group=NAME       A group ('pmugate list groups'), case-insensitive\n");
        printf("  -C --cpu=CPUS         Pin COMMAND to CPUS and measure them\n"
               "  -c --cpus=CPUS        Measure CPUS (default: the CPUs this process may run on)\n"
               "                        CPUS: 0-3,8 or likwid's S0:0-3, N:0-7, C0:, M0: (and @ or , joined)\n"
               "  -I --interval=TIME    Print every TIME (500ms, 1s; a plain number is ms)\n"
               "  -S --duration=TIME    Measure for TIME without a command (Ctrl-C ends it early)\n"
               "  -r --repeat=N         Run COMMAND N times: means and standard deviations\n"
               "  -O --format=FORMAT    table, csv, json, jsonl (JSON Lines) or json-doc (one document)\n"
               "  -o --output=FILE      Write to FILE; %%h host, %%p pid, %%j job id, %%r rank; .csv, .json,\n"
               "                        .jsonl, .txt choose the format unless -O does\n"
               "  -A --per-cpu          A column per CPU in the table\n"
               "     --user, --kernel   Count only user (ring 3) or kernel (ring 0) mode\n"
               "     --reset-period=T   Longest PERF_METRICS window (default 1s)\n"
               "     --rotate-period=T  How long each event set counts in turn (default 100ms)\n"
               "  -h --help             Show this help\n"
               "\n"
               "See pmugate(1) and 'pmugate list'.\n");
}

static int usage_error(const char *verb, const char *message, const char *arg) {
        fprintf(stderr, "pmugate: %s%s%s (see 'pmugate %s --help')\n", message, arg ? ": " : "", arg ?: "", verb);
        return -EINVAL;
}

static int parse_option(MeasureArgs *a, int opt, const char *arg, char *const *argv) {
        const char *verb = a->verb;
        uint64_t n;

        switch (opt) {
        case 'l':
                if (!a->topdown || (strcmp(arg, "1") != 0 && strcmp(arg, "2") != 0))
                        return usage_error(verb, "-l takes 1 or 2", arg);
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
        case ARG_RESET_PERIOD:
        case ARG_ROTATE_PERIOD:
                if (parse_time(arg, NSEC_PER_SEC, opt == ARG_RESET_PERIOD ? &a->reset_period_ns : &a->rotate_period_ns) < 0)
                        return usage_error(verb, opt == ARG_RESET_PERIOD ? "--reset-period takes a time such as 1s" :
                                           "--rotate-period takes a time such as 100ms", arg);
                return 0;
        case ARG_USER:
                a->flags |= PMUGATE_MEASURE_USER;
                return 0;
        case ARG_KERNEL:
                a->flags |= PMUGATE_MEASURE_KERNEL;
                return 0;
        case ':':
                return usage_error(verb, "an option needs a value", argv[optind - 1]);
        default:
                return usage_error(verb, "unknown option", argv[optind - 1]);
        }
}

static int parse_args(int argc, char *argv[], bool topdown, MeasureArgs *ret) {
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
                { "reset-period", required_argument, NULL, ARG_RESET_PERIOD },
                { "rotate-period", required_argument, NULL, ARG_ROTATE_PERIOD },
                { "user", no_argument, NULL, ARG_USER },
                { "kernel", no_argument, NULL, ARG_KERNEL },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *verb = topdown ? "topdown" : "stat";
        MeasureArgs a = { .topdown = topdown, .verb = verb, .level = 1, .format = OUTPUT_TABLE };
        int opt, r;

        /* '+': options end at the command; ':': missing values reported here, not by getopt */
        opterr = 0;
        while ((opt = getopt_long(argc, argv, topdown ? "+:hl:C:c:I:S:r:O:o:A" : "+:he:g:C:c:I:S:r:O:o:A", options,
                                  NULL)) >= 0) {
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
                return usage_error(verb, "-S measures for a time without a command; a command is measured until "
                                   "it exits", NULL);
        if (a.pin_cpus && !a.command)
                return usage_error(verb, "-C pins a command to the CPUs; without one, measure them with -c", NULL);
        if (a.repeat > 1 && (!a.command || a.interval_ns > 0))
                return usage_error(verb, "-r repeats a command, without -I", NULL);
        *ret = a;
        return 0;
}

static int emit(OutputContext *out, pmugate *c, pmugate_measure *m, pmugate_span span) {
        pmugate_result *r = NULL;
        int q;

        q = pmugate_measure_read(m, span, &r);
        if (q < 0)
                return cli_report("pmugate", c, q, "reading the counts");
        q = output_result(out, r);
        pmugate_result_free(r);
        if (q < 0) {
                fprintf(stderr, "pmugate: writing the output failed: %s\n", strerror(-q));
                return 1;
        }
        return 0;
}

static void report_failure(pmugate *c, pmugate_measure *m, int error, const char *what) {
        const char *reason = pmugate_measure_last_reason(m);

        if (reason[0])
                fprintf(stderr, "pmugate: %s failed: %s\n", what, reason);
        else
                (void) cli_report("pmugate", c, error, what);
}

static uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* A line on stderr, rewritten in place, while a long -S runs on a terminal. */
static void progress(const MeasureArgs *a, uint64_t start, uint64_t now, bool done) {
        if (done) {
                fputs("\r\033[K", stderr);
                return;
        }
        fprintf(stderr, "\rpmugate: measuring, %.0f of %.0f s (Ctrl-C ends it early)\033[K",
                (double) (now - start) / NSEC_PER_SEC, (double) a->duration_ns / NSEC_PER_SEC);
}

/* Samples at the poll interval, writes a result per interval, and returns when the command
 * exits, the duration is over, or SIGINT/SIGTERM arrives (forwarded to the command as
 * SIGTERM; without a command it ends the run, kept in end->signal). Returns 0, or 1 when
 * sampling failed. */
static int measure_loop(const MeasureArgs *a, OutputContext *out, pmugate *c, pmugate_measure *m, Workload *w,
                        int signal_fd, RunEnd *end) {
        uint64_t poll_ns = pmugate_measure_poll_interval(m), now = now_ns(), start = now;
        /* with -I and event sets taking turns, an interval is one sample per set
         * (rotate_within_intervals()), counted rather than timed so that none is missed */
        unsigned turns = a->interval_ns > 0 ? pmugate_measure_event_sets(m) : 1, turn = 0;
        uint64_t next_poll = now + poll_ns;
        uint64_t next_interval = a->interval_ns && turns == 1 ? now + a->interval_ns : UINT64_MAX;
        uint64_t deadline = a->duration_ns ? now + a->duration_ns : UINT64_MAX;
        bool show = a->duration_ns >= PROGRESS_MIN_NS && !a->interval_ns && out->file != stderr && isatty(STDERR_FILENO);
        uint64_t next_progress = show ? now : UINT64_MAX;
        int status = 0;

        for (;;) {
                struct pollfd fds[2] = { { .fd = signal_fd, .events = POLLIN }, { .fd = w->pidfd, .events = POLLIN } };
                uint64_t wake = MIN(MIN(MIN(next_poll, next_interval), deadline), next_progress);
                uint64_t wait = wake > now ? wake - now : 0;
                struct timespec timeout = {
                        .tv_sec = (time_t) (wait / NSEC_PER_SEC),
                        .tv_nsec = (long) (wait % NSEC_PER_SEC),
                };
                int r;

                r = ppoll(fds, w->pidfd >= 0 ? 2 : 1, &timeout, NULL);
                if (r < 0 && errno != EINTR) {
                        status = 1;
                        break;
                }
                if (fds[0].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                if (w->pid <= 0) {
                                        end->signal = (int) si.ssi_signo;
                                        break;
                                }
                                /* the terminal's SIGINT reached the command itself */
                                if (si.ssi_signo == SIGTERM)
                                        (void) kill(w->pid, SIGTERM);
                        }
                }
                if (w->pidfd >= 0 && (fds[1].revents & POLLIN)) {
                        workload_reap(w);
                        break;
                }
                now = now_ns();
                if (now >= deadline)
                        break;
                if (now >= next_progress) {
                        progress(a, start, now, false);
                        next_progress = now + PROGRESS_PERIOD_NS;
                }
                if (now < next_poll && now < next_interval)
                        continue;
                r = pmugate_measure_sample(m);
                if (r < 0) {
                        report_failure(c, m, r, "sampling");
                        status = 1;
                        break;
                }
                next_poll = now + poll_ns;
                if (turns > 1 && ++turn == turns) {
                        turn = 0;
                        if (emit(out, c, m, PMUGATE_SPAN_INTERVAL) != 0) {
                                status = 1;
                                break;
                        }
                }
                if (now >= next_interval) {
                        if (emit(out, c, m, PMUGATE_SPAN_INTERVAL) != 0) {
                                status = 1;
                                break;
                        }
                        while (next_interval <= now)
                                next_interval += a->interval_ns;
                }
        }
        if (show)
                progress(a, start, now, true);
        end->partial_turns = turns > 1;
        return status;
}

/* -I with event sets taking turns: every set counts once in every interval, for an equal
 * share of it, so that no interval lacks a metric; an interval too short for that is refused. */
static int rotate_within_intervals(const MeasureArgs *a, pmugate_measure *m) {
        unsigned sets = pmugate_measure_event_sets(m);
        uint64_t turn = a->interval_ns / sets;
        uint64_t reset = a->reset_period_ns ?: pmugate_measure_poll_interval(m);

        if (sets <= 1)
                return 0;
        if (turn < ROTATE_TURN_MIN_NS) {
                fprintf(stderr, "pmugate: -I %.0fms is too short: %u event sets take turns on the counters and each "
                        "needs %.0fms of every interval; use -I %.0fms or longer\n", (double) a->interval_ns / 1e6,
                        sets, (double) ROTATE_TURN_MIN_NS / 1e6, (double) (sets * ROTATE_TURN_MIN_NS) / 1e6);
                return -EINVAL;
        }
        /* one sample per turn: a longer PERF_METRICS window than a turn is never needed */
        if (pmugate_measure_set_rotate_period(m, turn) < 0 ||
            (turn > reset && pmugate_measure_set_reset_period(m, turn) < 0)) {
                fprintf(stderr, "pmugate: -I %.0fms: each of %u event sets would count for %.0fms, outside 1ms to 60s\n",
                        (double) a->interval_ns / 1e6, sets, (double) turn / 1e6);
                return -EINVAL;
        }
        return 0;
}

static int open_measurement(const MeasureArgs *a, pmugate *c, const pmugate_info *info, const uint32_t *cpus,
                            size_t n_cpus, pmugate_measure **ret) {
        char reason[REASON_MAX] = "";
        int r;

        /* libpfm4 activates the host's PMU; resolve names for the daemon's model instead */
        if (info->model_key[0])
                (void) setenv("LIBPFM_FORCE_PMU", info->model_key, 0);
        if (a->topdown)
                r = pmugate_measure_open_topdown(c, a->level, cpus, n_cpus, a->flags, ret, reason, sizeof(reason));
        else
                r = pmugate_measure_open_group(c, a->group, a->events, cpus, n_cpus, a->flags, ret, reason,
                                               sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugate: %s\n", reason[0] ? reason : pmugate_strerror(r));
                return r;
        }
        if (a->reset_period_ns > 0 && pmugate_measure_set_reset_period(*ret, a->reset_period_ns) < 0) {
                fprintf(stderr, "pmugate: --reset-period must be from 1ms to 60s\n");
                return -EINVAL;
        }
        if (a->rotate_period_ns > 0 && pmugate_measure_set_rotate_period(*ret, a->rotate_period_ns) < 0) {
                fprintf(stderr, "pmugate: --rotate-period must be from 1ms to 60s\n");
                return -EINVAL;
        }
        return a->interval_ns > 0 ? rotate_within_intervals(a, *ret) : 0;
}

/* One measurement: open, start (with the command, if any), sample until it ends, stop. The
 * result of the whole run goes to ret_total when not NULL; otherwise it is written (in -I
 * mode, the last partial interval). */
static int measure_once(const MeasureArgs *a, OutputContext *out, pmugate *c, const pmugate_info *info,
                        const uint32_t *cpus, size_t n_cpus, int signal_fd, pmugate_result **ret_total, RunEnd *end) {
        _cleanup_(pmugate_measure_closep_cli) pmugate_measure *m = NULL;
        Workload w = WORKLOAD_NULL;
        int r, status;

        end->status = 1;
        end->signal = 0;
        if (open_measurement(a, c, info, cpus, n_cpus, &m) < 0)
                return 1;
        out->group = pmugate_measure_group(m);
        out->description = pmugate_measure_description(m);
        if (a->command) {
                /* what it prints comes out after what was printed so far */
                fflush(stdout);
                fflush(stderr);
                r = workload_fork(&w, a->command, cpus, a->pin_cpus ? n_cpus : 0);
                if (r < 0) {
                        fprintf(stderr, "pmugate: cannot start '%s': %s\n", a->command[0], strerror(-r));
                        return 1;
                }
        }
        r = pmugate_measure_start(m);
        if (r < 0) {
                report_failure(c, m, r, "starting the counters");
                workload_abort(&w);
                return 1;
        }
        if (a->command && workload_release(&w, a->command, a->verb) < 0) {
                end->status = w.status >= 0 ? w.status : 1;
                workload_abort(&w);
                return end->status;
        }
        status = measure_loop(a, out, c, m, &w, signal_fd, end);
        r = pmugate_measure_stop(m);
        if (r < 0) {
                report_failure(c, m, r, "stopping the counters");
                status = 1;
        }
        if (a->command) {
                workload_reap(&w);
                out->exit_status = w.status;
        }
        if (end->signal) {
                out->interrupted = end->signal == SIGINT ? "SIGINT" : "SIGTERM";
                fprintf(stderr, "pmugate: interrupted by %s; the result covers the time measured so far\n",
                        out->interrupted);
        }
        if (ret_total) {
                r = pmugate_measure_read(m, PMUGATE_SPAN_TOTAL, ret_total);
                if (r < 0)
                        status = cli_report("pmugate", c, r, "reading the counts");
        } else if (a->interval_ns > 0 && end->partial_turns) {
                /* a last interval where not every event set had its turn would lack metrics */
                fprintf(stderr, "pmugate: the last partial interval is left out: not every event set counted in it\n");
        } else if (emit(out, c, m, a->interval_ns > 0 ? PMUGATE_SPAN_INTERVAL : PMUGATE_SPAN_TOTAL) != 0)
                status = 1;
        if (a->command && w.status >= 0)
                status = w.status;
        else if (end->signal)
                status = EXIT_SIGNAL_BASE + end->signal;
        workload_abort(&w);
        end->status = status;
        return status;
}

/* -r: the command runs a->repeat times; the means and standard deviations are written. */
static int measure_repeated(const MeasureArgs *a, OutputContext *out, pmugate *c, const pmugate_info *info,
                            const uint32_t *cpus, size_t n_cpus, int signal_fd) {
        pmugate_result **runs = calloc(a->repeat, sizeof(pmugate_result *));
        RunEnd end = {};
        size_t done = 0;
        int status = 0, r;

        if (!runs)
                return 1;
        for (; done < a->repeat; done++) {
                (void) measure_once(a, out, c, info, cpus, n_cpus, signal_fd, &runs[done], &end);
                if (!runs[done])
                        break;
                status = end.status;
        }
        if (done == 0)
                status = end.status ?: 1;
        else if ((r = output_combine_runs(runs, done)) < 0)
                status = cli_report("pmugate", c, r, "combining the runs");
        else {
                out->runs = (unsigned) done;
                out->stddev = done > 1 ? runs[1] : NULL;
                if (output_result(out, runs[0]) < 0)
                        status = 1;
        }
        for (size_t i = 0; i < a->repeat; i++)
                pmugate_result_free(runs[i]);
        free(runs);
        return status;
}

static int open_output(const MeasureArgs *a, OutputFormat *format, FILE **ret) {
        char path[OUTPUT_PATH_MAX], reason[REASON_MAX] = "";
        int r;

        *ret = NULL;
        if (!a->output_path)
                return 0;
        r = output_path_expand(a->output_path, path, sizeof(path), reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugate: %s\n", reason);
                return 2;
        }
        if (!a->format_given)
                (void) output_format_from_path(path, format);
        *ret = fopen(path, "we");
        if (!*ret) {
                fprintf(stderr, "pmugate: cannot write %s: %s\n", path, strerror(errno));
                return 1;
        }
        return 0;
}

static int run(const MeasureArgs *a, const char *socket_path) {
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        _cleanup_(pmugate_info_freep_cli) pmugate_info *info = NULL;
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_fclose_ FILE *file = NULL;
        _cleanup_close_ int signal_fd = -1;
        char cpu_list[CPU_LIST_TEXT_MAX], reason[REASON_MAX] = "";
        OutputFormat format = a->format;
        OutputContext out;
        sigset_t mask, old_mask;
        bool blocked;
        size_t n_cpus = 0;
        RunEnd end = {};
        int r, status;

        if (cli_connect(socket_path, &c) < 0)
                return 1;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return cli_report("pmugate", c, r, "hello");
        r = cpu_select(a->pin_cpus ? "-C" : "-c", a->pin_cpus ?: a->measure_cpus, info, &cpus, &n_cpus, reason,
                       sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugate: %s\n", reason[0] ? reason : pmugate_strerror(r));
                /* a list that does not parse is a usage error; CPUs the machine or job lacks are not */
                return r == -EINVAL ? 2 : 1;
        }
        if (cpulist_format(cpus, n_cpus, cpu_list, sizeof(cpu_list)) < 0)
                (void) snprintf(cpu_list, sizeof(cpu_list), "(%zu CPUs)", n_cpus);
        r = open_output(a, &format, &file);
        if (r != 0)
                return r;
        out = (OutputContext) {
                /* as perf: a wrapped command keeps stdout to itself */
                .file = file ?: a->command ? stderr : stdout,
                .format = format,
                .per_cpu = a->per_cpu,
                .interval = a->interval_ns > 0,
                .info = info,
                .kind = a->topdown ? "topdown" : "stat",
                .group = "",
                .description = "",
                .level = a->topdown ? a->level : 0,
                .cpu_list = cpu_list,
                .command = a->command,
                .exit_status = -1,
                .duration = (double) a->duration_ns / NSEC_PER_SEC,
        };

        /* SIGINT and SIGTERM end a measurement without a command, and are read, not fatal */
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        blocked = sigprocmask(SIG_BLOCK, &mask, &old_mask) == 0;
        signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (signal_fd < 0) {
                fprintf(stderr, "pmugate: signalfd: %s\n", strerror(errno));
                status = 1;
        } else if (a->repeat > 1)
                status = measure_repeated(a, &out, c, info, cpus, n_cpus, signal_fd);
        else
                status = measure_once(a, &out, c, info, cpus, n_cpus, signal_fd, NULL, &end);
        if (output_finish(&out) < 0)
                status = status ?: 1;
        if (blocked)
                (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return status;
}

int verb_topdown(int argc, char *argv[], const char *socket_path) {
        MeasureArgs a;
        int r = parse_args(argc, argv, true, &a);

        if (r != 0)
                return r == ARGS_DONE ? 0 : 2;
        return run(&a, socket_path);
}

int verb_stat(int argc, char *argv[], const char *socket_path) {
        MeasureArgs a;
        int r = parse_args(argc, argv, false, &a);

        if (r != 0)
                return r == ARGS_DONE ? 0 : 2;
        return run(&a, socket_path);
}

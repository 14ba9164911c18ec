/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: samples a command (from its exec) or a process of one's own with branch
 * stacks (cycles per basic block from the LBR) or IPs, through the events pmugated opens and
 * hands over, and reports the hottest blocks or functions (docs/TIMING.md)
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli-util.h"
#include "cli/output-file.h"
#include "cli/timing-names.h"
#include "cli/timing-output.h"
#include "cli/timing-recorder.h"
#include "cli/timing-select.h"
#include "cli/verb-timing.h"
#include "cli/workload.h"
#include "cpulist.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "pmugate/timing.h"
#include "timing-attr.h"
#include "timing/timing-blocks.h"

#define ARGS_DONE 1
#define TOP_DEFAULT 20U
#define TOP_MAX 100000U
/* how often the rings are drained: a quarter ring of branch samples fills in tens of ms at the
 * kernel's highest rate, and the simulator's ring is always readable, so it is on a clock; while
 * records keep coming, sooner */
#define DRAIN_PERIOD_MS 10
#define DRAIN_BUSY_PERIOD_MS 2
/* after the process exited, how long its last records may take to reach the rings: none with
 * the kernel, which writes them as they happen (the EXIT record ends the wait at once); the
 * simulator's driver writes them at its next tick */
#define EXIT_GRACE_MS 1000
#define DURATION_MAX_S (7 * 24 * 3600.0)
#define CPU_LIST_TEXT_MAX 1024U

typedef struct TimingArgs {
        TimingMode mode;
        uint64_t period;
        unsigned top;
        const char *block;
        const char *output_path;
        OutputFormat format;
        bool format_given;
        pid_t pid;
        double duration;                /* seconds, with -p; 0: until it exits or Ctrl-C */
        char **command;
} TimingArgs;

static void help(void) {
        printf("Usage: pmugate timing [OPTIONS] -- COMMAND [ARGS...]\n"
               "       pmugate timing [OPTIONS] -p PID [--duration SECONDS]\n"
               "\n"
               "Time the basic blocks of COMMAND (from its exec, with its threads and children) or\n"
               "of your process PID in cycles, from the Last Branch Record (LBR): how often each\n"
               "block ran and its cycles min / median / mean / p90 / max, with a histogram.\n"
               "--mode ips samples instructions instead, on any CPU: samples per function and line.\n"
               "Needs the policy class 'lbr' (docs/TIMING.md). COMMAND's exit status is kept.\n"
               "\n"
               "  -m --mode=branches|ips   What to sample (default: branches)\n"
               "  -P --period=N            Cycles (branches) or ns (ips) between samples (default:\n"
               "                           the daemon's)\n"
               "  -t --top=N               The N hottest blocks or functions (default %u)\n"
               "  -b --block=SYMBOL|ADDR   The block(s) ending at one branch: its instructions with\n"
               "                           the timing and histogram under them; ADDR is a file offset\n"
               "                           or run-time address (0x...), SYMBOL a function or\n"
               "                           function+0xOFF\n"
               "  -p --pid=PID             Sample a running process of yours\n"
               "  -S --duration=SECONDS    With -p: how long (default: until it exits or Ctrl-C)\n"
               "  -O --format=FORMAT       table, csv, json (one document) or jsonl\n"
               "  -o --output=FILE         Write there (%%h host, %%p pid, %%j job, %%r rank); the\n"
               "                           format from the suffix (.csv, .json, .jsonl, .txt)\n"
               "  -h --help                Show this help\n",
               TOP_DEFAULT);
}

static int parse_args(int argc, char *argv[], TimingArgs *ret) {
        static const struct option options[] = {
                { "mode", required_argument, NULL, 'm' },
                { "period", required_argument, NULL, 'P' },
                { "top", required_argument, NULL, 't' },
                { "block", required_argument, NULL, 'b' },
                { "pid", required_argument, NULL, 'p' },
                { "duration", required_argument, NULL, 'S' },
                { "format", required_argument, NULL, 'O' },
                { "output", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        TimingArgs a = { .mode = TIMING_MODE_BRANCHES, .top = TOP_DEFAULT, .format = OUTPUT_TABLE };
        uint64_t v;
        char *end;
        int opt;

        opterr = 0;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--") == 0) {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "pmugate: '--' must be followed by a command\n");
                                return -EINVAL;
                        }
                        a.command = argv + i + 1;
                        argc = i;
                        break;
                }
        while ((opt = getopt_long(argc, argv, "+m:P:t:b:p:S:O:o:h", options, NULL)) >= 0)
                switch (opt) {
                case 'm':
                        a.mode = timing_mode_from_string(optarg, strlen(optarg));
                        if (a.mode == _TIMING_MODE_INVALID) {
                                fprintf(stderr, "pmugate: --mode must be branches or ips, not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'P':
                        if (cli_parse_u64(optarg, &a.period) < 0 || a.period == 0) {
                                fprintf(stderr,
                                        "pmugate: --period must be a positive number, not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 't':
                        if (cli_parse_u64(optarg, &v) < 0 || v == 0 || v > TOP_MAX) {
                                fprintf(stderr, "pmugate: --top must be from 1 to %u, not '%s'\n",
                                        TOP_MAX, optarg);
                                return -EINVAL;
                        }
                        a.top = (unsigned) v;
                        break;
                case 'b':
                        a.block = optarg;
                        break;
                case 'p':
                        if (cli_parse_u64(optarg, &v) < 0 || v == 0 || v > INT32_MAX) {
                                fprintf(stderr, "pmugate: -p needs a process id, not '%s'\n", optarg);
                                return -EINVAL;
                        }
                        a.pid = (pid_t) v;
                        break;
                case 'S':
                        errno = 0;
                        a.duration = strtod(optarg, &end);
                        if (errno != 0 || end == optarg || *end != '\0' || !(a.duration > 0) ||
                            a.duration > DURATION_MAX_S) {
                                fprintf(stderr,
                                        "pmugate: --duration must be seconds (> 0, at most a week), "
                                        "not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'O':
                        if (output_format_from_string(optarg, &a.format) < 0) {
                                fprintf(stderr,
                                        "pmugate: --format must be table, csv, json or jsonl, "
                                        "not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        a.format_given = true;
                        break;
                case 'o':
                        a.output_path = optarg;
                        break;
                case 'h':
                        help();
                        return ARGS_DONE;
                default:
                        return cli_unknown_option("pmugate", "timing", argv, opt);
                }
        if (optind < argc) {
                fprintf(stderr, "pmugate: unexpected '%s' (a command goes after '--')\n",
                        argv[optind]);
                return -EINVAL;
        }
        if (!!a.command == (a.pid > 0)) {
                fprintf(stderr, "pmugate: give either -- COMMAND or -p PID\n");
                return -EINVAL;
        }
        if (a.block && a.mode != TIMING_MODE_BRANCHES) {
                fprintf(stderr, "pmugate: --block needs branch stacks (--mode branches): IP mode has no "
                        "blocks\n");
                return -EINVAL;
        }
        if (a.duration > 0 && a.command) {
                fprintf(stderr,
                        "pmugate: --duration is for -p; a command is sampled until it exits\n");
                return -EINVAL;
        }
        *ret = a;
        return 0;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static bool exited_process(const Workload *w) {
        struct pollfd p = { .fd = w->pidfd, .events = POLLIN };

        return w->pidfd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* The process's credentials as the kernel shows them: the Uid, Gid and CapEff lines of
 * /proc/PID/status (empty when it cannot be read). */
static void read_credentials(pid_t pid, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], line[256];
        size_t n = 0;

        buf[0] = '\0';
        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Uid:", 4) == 0 || strncmp(line, "Gid:", 4) == 0 ||
                    strncmp(line, "CapEff:", 7) == 0) {
                        size_t len = strlen(line);

                        if (n + len >= size)
                                break;
                        memcpy(buf + n, line, len + 1);
                        n += len;
                }
}

/* Whether the process's credentials changed since the recording began (creds, read then): an
 * exec of a set-user-ID or set-group-ID program, or one with file capabilities. The kernel
 * then takes the process's perf events away (perf_event_exit_task() in the exec's change of
 * credentials) without a record in the ring, so this is how the user learns that the report
 * ends there. */
static bool credentials_changed(pid_t pid, const char *creds) {
        char now[sizeof(((TimingRecorder *) NULL)->credentials)];

        read_credentials(pid, now, sizeof(now));
        return creds[0] && now[0] && strcmp(creds, now) != 0;
}

/* Drains the rings every DRAIN_PERIOD_MS (DRAIN_BUSY_PERIOD_MS while records come) until the
 * command or process exits, the duration is over, or (without a command) SIGINT or SIGTERM; a
 * command gets SIGTERM passed on and the terminal's SIGINT itself. Returns 0 or a negative
 * errno. */
static int record_loop(const TimingArgs *a, TimingRecorder *r, Workload *w, int signal_fd,
                       const char **ret_signal) {
        uint64_t deadline = a->duration > 0 ? now_ms() + (uint64_t) (a->duration * 1000) : UINT64_MAX;
        int q;

        for (;;) {
                struct pollfd fds[2] = {
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = w->pidfd, .events = POLLIN },
                };
                bool exited;

                if (poll(fds, w->pidfd >= 0 ? 2 : 1,
                         r->last_round > 0 ? DRAIN_BUSY_PERIOD_MS : DRAIN_PERIOD_MS) < 0 &&
                    errno != EINTR)
                        return negative_errno();
                if (fds[0].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                if (!a->command) {
                                        *ret_signal = si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
                                        break;
                                }
                                if (si.ssi_signo == SIGTERM)
                                        (void) kill(w->pid, SIGTERM);
                        }
                }
                exited = w->pidfd >= 0 && (fds[1].revents & POLLIN);
                q = timing_recorder_drain(r);
                if (q < 0)
                        return q;
                if (!r->detached && !exited && credentials_changed(r->target, r->credentials))
                        r->detached = true;
                if (exited || now_ms() >= deadline)
                        break;
        }
        if (!exited_process(w))
                return timing_recorder_drain(r);
        /* the records written before the exit, up to its EXIT record */
        for (uint64_t end = now_ms() + EXIT_GRACE_MS; !r->exit_seen && now_ms() < end;) {
                (void) poll(NULL, 0, DRAIN_BUSY_PERIOD_MS);
                q = timing_recorder_drain(r);
                if (q < 0)
                        return q;
        }
        return timing_recorder_drain(r);
}

static int open_output(const TimingArgs *a, OutputFormat *format, FILE **ret) {
        char path[OUTPUT_PATH_MAX], reason[PMUGATE_REASON_MAX] = "";
        int q;

        *ret = NULL;
        if (!a->output_path)
                return 0;
        q = output_path_expand(a->output_path, path, sizeof(path), reason, sizeof(reason));
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", reason);
                return 2;
        }
        if (!a->format_given && !output_format_from_path(path, format)) {
                const char *slash = strrchr(a->output_path, '/'), *base = slash ? slash + 1 : a->output_path;
                const char *dot = strrchr(base, '.');

                if (dot && dot != base && dot[1] && !strchr(dot, '%')) {
                        fprintf(stderr,
                                "pmugate: -o %s: unknown suffix '%s': use .csv, .json, .jsonl or "
                                "the table's .txt, or choose the format with -O\n",
                                a->output_path, dot);
                        return 2;
                }
        }
        q = output_file_open(path, ret, reason, sizeof(reason));
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", reason[0] ? reason : strerror(-q));
                return 1;
        }
        return 0;
}

/* After the recording: what the stream said beside the samples, on stderr. */
static void say_counters(const TimingArgs *a, const TimingRecorder *rec, const TimingCounters *k) {
        if (k->samples == 0)
                fprintf(stderr,
                        "pmugate: no samples: the %s ran too briefly for one period, or the kernel "
                        "stopped sampling it (an exec of a setuid program ends the recording of that "
                        "process)\n",
                        a->command ? "command" : "process");
        if (k->lost > 0)
                fprintf(stderr,
                        "pmugate: the kernel dropped %" PRIu64 " records (the rings filled faster "
                        "than they were read): a longer --period loses fewer\n",
                        k->lost);
        if (k->throttled > 0)
                fprintf(stderr,
                        "pmugate: the kernel paused sampling %" PRIu64 " times for its sample-rate "
                        "limit (perf_event_max_sample_rate): a longer --period avoids it\n",
                        k->throttled);
        if (rec->detached)
                fprintf(stderr,
                        "pmugate: the kernel stopped sampling the %s while it still ran: it exec'd a "
                        "set-user-ID or set-group-ID program (or one with file capabilities), which "
                        "the user may not observe; this report ends there\n",
                        a->command ? "command" : "process");
        if (rec->threads_gone > 0)
                fprintf(stderr, "pmugate: %zu threads of the process ended before their events opened\n",
                        rec->threads_gone);
        if (rec->malformed > 0 || rec->unframed)
                fprintf(stderr, "pmugate: %" PRIu64 " malformed records skipped%s\n", rec->malformed,
                        rec->unframed ? "; a ring could not be read past a bad record" : "");
        if (k->cycles_dropped > 0 || k->blocks_dropped > 0 || k->mappings_dropped > 0)
                fprintf(stderr,
                        "pmugate: past the client's bounds, not kept: %" PRIu64
                        " cycle counts, %" PRIu64 " blocks or IPs, %" PRIu64 " mappings\n",
                        k->cycles_dropped, k->blocks_dropped, k->mappings_dropped);
}

static int report(const TimingArgs *a, const pmugate_info *info, const TimingAnalysis *an,
                  const TimingThreadTally *threads, FILE *file, OutputFormat format, uint64_t period,
                  const char *cpu_list, int exit_status, double elapsed, const char *interrupted) {
        _cleanup_(timing_namer_freep) TimingNamer *namer = NULL;
        TimingTally functions = {}, lines = {};
        TimingShown shown = {};
        TimingReport rep;
        int q;

        q = timing_namer_new(&namer);
        if (q >= 0 && a->mode == TIMING_MODE_BRANCHES)
                q = timing_choose_blocks(an, namer, a->block, a->top, &shown);
        if (q >= 0 && a->mode == TIMING_MODE_IPS)
                q = timing_tally_ips(an, namer, &functions, &lines);
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", strerror(-q));
                timing_shown_done(&shown);
                timing_tally_done(&functions);
                timing_tally_done(&lines);
                return 1;
        }
        if (a->block && shown.n == 0)
                fprintf(stderr, "pmugate: --block %s: no recorded block ends there (a function name, "
                        "function+0xOFF, or a file offset or address from the table)\n", a->block);
        rep = (TimingReport) {
                .format = format,
                .file = file,
                .mode = a->mode,
                .command = a->command,
                .pid = (int) a->pid,
                .exit_status = exit_status,
                .period = period,
                .cpu_list = cpu_list,
                .model = info->model_key,
                .model_name = info->model_label,
                .simulated = info->simulated,
                .elapsed = elapsed,
                .analysis = an,
                .blocks = shown.blocks,
                .names = shown.names,
                .n_blocks = shown.n,
                .n_blocks_total = timing_analysis_n_blocks(an),
                .functions = functions.items,
                .n_functions = MIN(functions.n, (size_t) a->top),
                .lines = lines.items,
                .n_lines = MIN(lines.n, (size_t) a->top),
                .block_query = a->block,
                .block_listing = shown.listings,
                .interrupted = interrupted,
                .threads = threads,
        };
        q = timing_output_write(&rep);
        timing_shown_done(&shown);
        timing_tally_done(&functions);
        timing_tally_done(&lines);
        if (q < 0) {
                fprintf(stderr, "pmugate: writing the output failed: %s\n", strerror(-q));
                return 1;
        }
        return a->block && rep.n_blocks == 0 ? 1 : 0;
}

static inline void pmugate_info_freep_timing(pmugate_info **info) {
        *info = pmugate_info_free(*info);
}

static int run(const TimingArgs *a, const char *socket_path) {
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        _cleanup_(pmugate_info_freep_timing) pmugate_info *info = NULL;
        _cleanup_(timing_analysis_freep) TimingAnalysis *analysis = NULL;
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_fclose_ FILE *file = NULL;
        _cleanup_close_ int signal_fd = -EBADF;
        char cpu_list[CPU_LIST_TEXT_MAX];
        OutputFormat format = a->format;
        Workload w = WORKLOAD_NULL;
        TimingRecorder rec = {};
        const char *interrupted = NULL;
        uint64_t period = a->period, start;
        sigset_t mask, old_mask;
        bool blocked;
        size_t n_cpus = 0, n_tids = 0;
        pid_t target;
        int q, status = 0;

        q = open_output(a, &format, &file);
        if (q != 0)
                return q;
        if (cli_connect(socket_path, &c) < 0)
                return 1;
        q = pmugate_hello(c, &info);
        if (q < 0)
                return cli_report("pmugate", c, q, "hello");
        q = timing_analysis_new(&analysis);
        if (q < 0)
                return 1;
        rec.analysis = analysis;

        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        blocked = sigprocmask(SIG_BLOCK, &mask, &old_mask) == 0;
        signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (signal_fd < 0) {
                fprintf(stderr, "pmugate: signalfd: %s\n", strerror(errno));
                status = 1;
                goto out;
        }

        if (a->command) {
                fflush(stdout);
                fflush(stderr);
                /* held before its exec: sampling begins at the exec (enable_on_exec) */
                q = workload_fork(&w, a->command, /* pin= */ NULL, /* n_pin= */ 0);
                if (q < 0) {
                        fprintf(stderr, "pmugate: cannot start '%s': %s\n", a->command[0],
                                strerror(-q));
                        status = 1;
                        goto out;
                }
        } else {
                w.pidfd = (int) syscall(SYS_pidfd_open, a->pid, 0);
                if (w.pidfd < 0) {
                        fprintf(stderr, "pmugate: process %d: %s\n", (int) a->pid, strerror(errno));
                        status = 1;
                        goto out;
                }
        }
        target = a->command ? w.pid : a->pid;
        if (!a->command) {
                /* as perf record -p: each thread running now gets its own events; threads it
                 * starts later follow through inherit */
                q = timing_threads_list(a->pid, &tids, &n_tids);
                if (q < 0) {
                        fprintf(stderr, "pmugate: the threads of process %d: %s\n", (int) a->pid,
                                q == -E2BIG ? "more than pmugate samples in one process" : strerror(-q));
                        status = 1;
                        goto out;
                }
        }
        /* the CPUs it may run on: every thread's affinity (a command's is its own, inherited) */
        q = timing_threads_affinity(tids ?: &target, tids ? n_tids : 1, &cpus, &n_cpus);
        if (q < 0) {
                fprintf(stderr, "pmugate: the CPUs process %d may run on: %s\n", (int) target, strerror(-q));
                status = 1;
                goto out;
        }
        if (cpulist_format(cpus, n_cpus, cpu_list, sizeof(cpu_list)) < 0)
                (void) snprintf(cpu_list, sizeof(cpu_list), "(%zu CPUs)", n_cpus);
        q = timing_recorder_open(&rec, c, a->mode, a->period, target, tids, n_tids, !!a->command, cpus, n_cpus,
                                 &period);
        if (q < 0) {
                status = 1;
                goto out;
        }
        if (!a->command) {
                /* the mappings made before the events opened: the kernel reports only new ones */
                q = timing_mappings_from_proc(analysis, a->pid);
                if (q < 0)
                        fprintf(stderr,
                                "pmugate: the mappings of process %d: %s; its blocks are named by "
                                "address only\n",
                                (int) a->pid, strerror(-q));
        }
        rec.target = (uint32_t) target;
        read_credentials((pid_t) rec.target, rec.credentials, sizeof(rec.credentials));
        start = now_ms();
        if (a->command && workload_release(&w, a->command, "timing") < 0) {
                status = w.status >= 0 ? w.status : 1;
                goto out;
        }
        q = record_loop(a, &rec, &w, signal_fd, &interrupted);
        if (q < 0) {
                fprintf(stderr, "pmugate: reading the samples failed: %s\n", strerror(-q));
                status = 1;
        }
        if (a->command)
                workload_reap(&w);
        timing_recorder_done(&rec, c);
        q = timing_analysis_finish(analysis);
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", strerror(-q));
                status = 1;
                goto out;
        }
        if (interrupted)
                fprintf(stderr,
                        "pmugate: interrupted by %s; the result covers the time recorded so far\n",
                        interrupted);
        say_counters(a, &rec, timing_analysis_counters(analysis));
        /* as perf: a wrapped command keeps stdout to itself */
        q = report(a, info, analysis, &rec.threads, file ?: a->command ? stderr : stdout, format, period, cpu_list,
                   a->command ? w.status : -1, (double) (now_ms() - start) / 1000.0, interrupted);
        if (q != 0)
                status = q;
        if (a->command && w.status >= 0 && status == 0)
                status = w.status;
        else if (interrupted && status == 0)
                status = EXIT_SIGNAL_BASE + (strcmp(interrupted, "SIGINT") == 0 ? SIGINT : SIGTERM);
out:
        timing_recorder_free(&rec, c);
        workload_abort(&w);
        if (blocked)
                (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return status;
}

int verb_timing(int argc, char *argv[], const char *socket_path) {
        TimingArgs a;
        int q = parse_args(argc, argv, &a);

        if (q != 0)
                return q == ARGS_DONE ? 0 : 2;
        return run(&a, socket_path);
}

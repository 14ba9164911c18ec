/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate topdown and pmugate stat: wrapper (-- CMD), stethoscope (-S) and timeline (-I) modes
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli-util.h"
#include "cpulist.h"
#include "macro.h"
#include "marker-report.h"
#include "measure-output.h"
#include "pmugate-limits.h"
#include "verb-measure.h"

#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define TIME_MAX_NS (UINT64_C(366) * 24 * 3600 * NSEC_PER_SEC)
#define REASON_MAX 512U
#define CPU_LIST_TEXT_MAX 1024U
#define EXIT_SIGNAL_BASE 128
#define EXIT_CANNOT_EXECUTE 126
#define EXIT_NOT_FOUND 127

#define MIN(a, b) ((a) < (b) ? (a) : (b))

enum {
        ARG_RESET_PERIOD = 0x100,
        ARG_USER,
        ARG_KERNEL,
};

typedef struct MeasureArgs {
        bool topdown;
        unsigned level;
        const char *events;
        const char *group;
        const char *pin_cpus;           /* -C: pin the command and measure */
        const char *measure_cpus;       /* -c: measure only */
        uint64_t interval_ns;
        uint64_t duration_ns;
        uint64_t reset_period_ns;
        OutputFormat format;
        const char *output_path;
        bool per_cpu;
        bool marker;                    /* -m: the command's markers read the counters */
        unsigned flags;
        char **command;
} MeasureArgs;

/* Why the child could not run the command, sent through a close-on-exec pipe. */
typedef struct ExecFailure {
        int stage;                      /* 0: pinning to the CPUs, 1: exec */
        int error;
} ExecFailure;

typedef struct Workload {
        pid_t pid;
        int pidfd;
        int go_fd;                      /* closing it lets the child exec */
        int failure_fd;
        int status;                     /* exit status to pass on; -1 while it runs */
} Workload;

/* "500ms", "2s", "1.5m"; a plain number is in plain_unit_ns. */
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

static int usage_error(const char *verb, const char *message, const char *arg) {
        fprintf(stderr, "pmugate %s: %s%s%s (see 'pmugate --help')\n", verb, message, arg ? ": " : "", arg ?: "");
        return -EINVAL;
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
                { "format", required_argument, NULL, 'O' },
                { "output", required_argument, NULL, 'o' },
                { "per-cpu", no_argument, NULL, 'A' },
                { "reset-period", required_argument, NULL, ARG_RESET_PERIOD },
                { "user", no_argument, NULL, ARG_USER },
                { "kernel", no_argument, NULL, ARG_KERNEL },
                { "marker", no_argument, NULL, 'm' },
                {}
        };
        const char *verb = topdown ? "topdown" : "stat";
        MeasureArgs a = { .topdown = topdown, .level = 1, .format = OUTPUT_TABLE };
        int opt;

        /* '+': options end at the command */
        while ((opt = getopt_long(argc, argv, topdown ? "+l:C:c:I:S:O:o:Am" : "+e:g:C:c:I:S:O:o:Am", options, NULL)) >= 0)
                switch (opt) {
                case 'l':
                        if (!topdown || (strcmp(optarg, "1") != 0 && strcmp(optarg, "2") != 0))
                                return usage_error(verb, "-l takes 1 or 2", optarg);
                        a.level = (unsigned) (optarg[0] - '0');
                        break;
                case 'e':
                        a.events = optarg;
                        break;
                case 'g':
                        a.group = optarg;
                        break;
                case 'C':
                        a.pin_cpus = optarg;
                        break;
                case 'c':
                        a.measure_cpus = optarg;
                        break;
                case 'I':
                        /* a plain number is milliseconds, as for perf stat -I */
                        if (parse_time(optarg, NSEC_PER_MSEC, &a.interval_ns) < 0 || a.interval_ns < NSEC_PER_MSEC)
                                return usage_error(verb, "-I takes an interval of at least 1ms such as 500ms",
                                                   optarg);
                        break;
                case 'S':
                        if (parse_time(optarg, NSEC_PER_SEC, &a.duration_ns) < 0 || a.duration_ns < NSEC_PER_MSEC)
                                return usage_error(verb, "-S takes a duration of at least 1ms such as 5s",
                                                   optarg);
                        break;
                case 'O':
                        if (output_format_from_string(optarg, &a.format) < 0)
                                return usage_error(verb, "-O takes table, csv or json", optarg);
                        break;
                case 'o':
                        a.output_path = optarg;
                        break;
                case 'A':
                        a.per_cpu = true;
                        break;
                case ARG_RESET_PERIOD:
                        if (parse_time(optarg, NSEC_PER_SEC, &a.reset_period_ns) < 0)
                                return usage_error(verb, "--reset-period takes a time such as 1s or 100ms", optarg);
                        break;
                case ARG_USER:
                        a.flags |= PMUGATE_MEASURE_USER;
                        break;
                case ARG_KERNEL:
                        a.flags |= PMUGATE_MEASURE_KERNEL;
                        break;
                case 'm':
                        a.marker = true;
                        break;
                default:
                        return -EINVAL;
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
        if (a.marker && (!a.command || a.interval_ns > 0))
                return usage_error(verb, "-m measures the regions a command marks: give a command, and no -I",
                                   NULL);
        if (a.pin_cpus && !a.command)
                return usage_error(verb, "-C pins a command to the CPUs; without one, measure them with -c", NULL);
        *ret = a;
        return 0;
}

static int cpus_of(const MeasureArgs *a, const pmugate_info *info, uint32_t **ret, size_t *ret_n) {
        const char *list = a->pin_cpus ?: a->measure_cpus;
        uint32_t *cpus;
        size_t n = 0;

        if (list)
                return cli_parse_cpus(list, ret, ret_n);
        /* all online CPUs, like perf stat -a */
        cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online)
                        cpus[n++] = info->cpus[i].cpu;
        *ret = cpus;
        *ret_n = n;
        return 0;
}

static int workload_fork(Workload *w, char **command, const uint32_t *pin, size_t n_pin) {
        int go[2], failure[2];

        *w = (Workload) { .pid = -1, .pidfd = -1, .go_fd = -1, .failure_fd = -1, .status = -1 };
        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(failure, O_CLOEXEC) < 0) {
                int r = -errno;

                (void) close(go[0]);
                (void) close(go[1]);
                return r;
        }
        w->pid = fork();
        if (w->pid < 0) {
                int r = -errno;

                (void) close(go[0]);
                (void) close(go[1]);
                (void) close(failure[0]);
                (void) close(failure[1]);
                return r;
        }
        if (w->pid == 0) {
                ExecFailure f = { .stage = 0 };
                sigset_t none;
                char byte;

                (void) sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                (void) close(go[1]);
                (void) close(failure[0]);
                /* wait until the counters run, so that the command is measured from its start */
                if (read(go[0], &byte, 1) != 0)
                        _exit(EXIT_CANNOT_EXECUTE);
                if (n_pin > 0) {
                        cpu_set_t set;

                        CPU_ZERO(&set);
                        for (size_t i = 0; i < n_pin; i++)
                                if (pin[i] < CPU_SETSIZE)
                                        CPU_SET(pin[i], &set);
                        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                                f.error = errno;
                                (void) !write(failure[1], &f, sizeof(f));
                                _exit(EXIT_CANNOT_EXECUTE);
                        }
                }
                execvp(command[0], command);
                f = (ExecFailure) { .stage = 1, .error = errno };
                (void) !write(failure[1], &f, sizeof(f));
                _exit(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE);
        }
        (void) close(go[0]);
        (void) close(failure[1]);
        w->go_fd = go[1];
        w->failure_fd = failure[0];
        w->pidfd = pidfd_open(w->pid, 0);
        return w->pidfd < 0 ? -errno : 0;
}

static int exit_status_of(int wstatus) {
        if (WIFEXITED(wstatus))
                return WEXITSTATUS(wstatus);
        if (WIFSIGNALED(wstatus))
                return EXIT_SIGNAL_BASE + WTERMSIG(wstatus);
        return 1;
}

static void workload_reap(Workload *w) {
        int wstatus;

        if (w->pid <= 0 || w->status >= 0)
                return;
        while (waitpid(w->pid, &wstatus, 0) < 0)
                if (errno != EINTR)
                        return;
        w->status = exit_status_of(wstatus);
}

/* Lets the child exec; returns what stopped it, if anything. */
static int workload_release(Workload *w, char **command, const char *verb) {
        ExecFailure f;
        ssize_t n;

        (void) close(w->go_fd);
        w->go_fd = -1;
        n = read(w->failure_fd, &f, sizeof(f));
        (void) close(w->failure_fd);
        w->failure_fd = -1;
        if (n != (ssize_t) sizeof(f))
                return 0;
        fprintf(stderr, "pmugate %s: cannot %s '%s': %s\n", verb, f.stage == 0 ? "pin to the CPUs" : "run",
                command[0], strerror(f.error));
        workload_reap(w);
        return -f.error;
}

static void workload_abort(Workload *w) {
        if (w->pid > 0 && w->status < 0) {
                (void) kill(w->pid, SIGKILL);
                workload_reap(w);
        }
        if (w->go_fd >= 0)
                (void) close(w->go_fd);
        if (w->failure_fd >= 0)
                (void) close(w->failure_fd);
        if (w->pidfd >= 0)
                (void) close(w->pidfd);
}

static int emit(OutputContext *out, pmugate *c, pmugate_measure *m, pmugate_span span, const char *verb) {
        pmugate_result *r = NULL;
        int q;

        q = pmugate_measure_read(m, span, &r);
        if (q < 0)
                return cli_report("pmugate", c, q, verb);
        q = output_result(out, r);
        pmugate_result_free(r);
        if (q < 0) {
                fprintf(stderr, "pmugate %s: writing the output failed: %s\n", verb, strerror(-q));
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

/* Samples at the poll interval, writes a result per interval, and returns when the command
 * exits, the duration is over, or SIGINT/SIGTERM arrives (forwarded to the command as
 * SIGTERM). Returns 0, or 1 when sampling failed. */
static int measure_loop(const MeasureArgs *a, OutputContext *out, pmugate *c, pmugate_measure *m, Workload *w,
                        int signal_fd, const char *verb) {
        uint64_t poll_ns = pmugate_measure_poll_interval(m), now = now_ns();
        uint64_t next_poll = now + poll_ns, next_interval = a->interval_ns ? now + a->interval_ns : UINT64_MAX;
        uint64_t deadline = a->duration_ns ? now + a->duration_ns : UINT64_MAX;

        for (;;) {
                struct pollfd fds[2] = { { .fd = signal_fd, .events = POLLIN }, { .fd = w->pidfd, .events = POLLIN } };
                uint64_t wake = MIN(MIN(next_poll, next_interval), deadline), wait = wake > now ? wake - now : 0;
                struct timespec timeout = {
                        .tv_sec = (time_t) (wait / NSEC_PER_SEC),
                        .tv_nsec = (long) (wait % NSEC_PER_SEC),
                };
                int r;

                r = ppoll(fds, w->pidfd >= 0 ? 2 : 1, &timeout, NULL);
                if (r < 0 && errno != EINTR)
                        return 1;
                if (fds[0].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                if (w->pid <= 0)
                                        return 0;
                                /* the terminal's SIGINT reached the command itself */
                                if (si.ssi_signo == SIGTERM)
                                        (void) kill(w->pid, SIGTERM);
                        }
                }
                if (w->pidfd >= 0 && (fds[1].revents & POLLIN)) {
                        workload_reap(w);
                        return 0;
                }
                now = now_ns();
                if (now >= deadline)
                        return 0;
                if (now < next_poll && now < next_interval)
                        continue;
                r = pmugate_measure_sample(m);
                if (r < 0) {
                        report_failure(c, m, r, "sampling");
                        return 1;
                }
                next_poll = now + poll_ns;
                if (now >= next_interval) {
                        if (emit(out, c, m, PMUGATE_SPAN_INTERVAL, verb) != 0)
                                return 1;
                        while (next_interval <= now)
                                next_interval += a->interval_ns;
                }
        }
}

static int open_measurement(const MeasureArgs *a, pmugate *c, const pmugate_info *info, const uint32_t *cpus,
                            size_t n_cpus, pmugate_measure **ret, const char *verb) {
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
                fprintf(stderr, "pmugate %s: %s\n", verb, reason[0] ? reason : pmugate_strerror(r));
                return r;
        }
        if (a->reset_period_ns > 0) {
                r = pmugate_measure_set_reset_period(*ret, a->reset_period_ns);
                if (r < 0) {
                        fprintf(stderr, "pmugate %s: --reset-period must be from 1ms to 60s\n", verb);
                        return r;
                }
        }
        return 0;
}

static int run(const MeasureArgs *a, const char *socket_path, const char *verb) {
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_fclose_ FILE *file = NULL;
        _cleanup_close_ int signal_fd = -1;
        pmugate_measure *m = NULL;
        pmugate_info *info = NULL;
        Workload w = { .pid = -1, .pidfd = -1, .go_fd = -1, .failure_fd = -1, .status = -1 };
        MarkerRun marker = {};
        char cpu_list[CPU_LIST_TEXT_MAX];
        OutputContext out;
        sigset_t mask, old_mask;
        bool blocked = false;
        size_t n_cpus = 0;
        int r, status = 1;

        if (cli_connect(socket_path, &c) < 0)
                return 1;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return cli_report("pmugate", c, r, "hello");
        r = cpus_of(a, info, &cpus, &n_cpus);
        if (r < 0 || n_cpus == 0) {
                fprintf(stderr, "pmugate %s: bad CPU list '%s': %s\n", verb, a->pin_cpus ?: a->measure_cpus ?: "",
                        pmugate_strerror(r < 0 ? r : -EINVAL));
                pmugate_info_free(info);
                return 2;
        }
        if (cpulist_format(cpus, n_cpus, cpu_list, sizeof(cpu_list)) < 0)
                (void) snprintf(cpu_list, sizeof(cpu_list), "(%zu CPUs)", n_cpus);
        if (a->output_path) {
                file = fopen(a->output_path, "we");
                if (!file) {
                        fprintf(stderr, "pmugate %s: cannot write %s: %s\n", verb, a->output_path, strerror(errno));
                        pmugate_info_free(info);
                        return 1;
                }
        }
        if (open_measurement(a, c, info, cpus, n_cpus, &m, verb) < 0)
                goto finish;
        out = (OutputContext) {
                .file = file ?: stdout,
                .format = a->format,
                .per_cpu = a->per_cpu,
                .interval = a->interval_ns > 0,
                .info = info,
                .kind = a->topdown ? "topdown" : "stat",
                .group = pmugate_measure_group(m),
                .description = pmugate_measure_description(m),
                .level = a->topdown ? a->level : 0,
                .cpu_list = cpu_list,
                .command = a->command,
                .exit_status = -1,
        };

        /* SIGINT and SIGTERM end a measurement without a command, and are read, not fatal */
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        blocked = sigprocmask(SIG_BLOCK, &mask, &old_mask) == 0;
        signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (signal_fd < 0) {
                fprintf(stderr, "pmugate %s: signalfd: %s\n", verb, strerror(errno));
                goto finish;
        }
        if (a->marker && marker_run_prepare(&marker, m, socket_path, verb) < 0)
                goto finish;
        if (a->command) {
                r = workload_fork(&w, a->command, cpus, a->pin_cpus ? n_cpus : 0);
                if (r < 0) {
                        fprintf(stderr, "pmugate %s: cannot start '%s': %s\n", verb, a->command[0], strerror(-r));
                        goto finish;
                }
        }
        r = pmugate_measure_start(m);
        if (r < 0) {
                report_failure(c, m, r, "starting the counters");
                goto finish;
        }
        if (a->command) {
                r = workload_release(&w, a->command, verb);
                if (r < 0) {
                        status = w.status >= 0 ? w.status : 1;
                        goto finish;
                }
        }
        status = measure_loop(a, &out, c, m, &w, signal_fd, verb);
        r = pmugate_measure_stop(m);
        if (r < 0) {
                report_failure(c, m, r, "stopping the counters");
                status = 1;
        }
        if (a->command) {
                workload_reap(&w);
                out.exit_status = w.status;
        }
        if (a->marker) {
                if (marker_run_report(&marker, &out, m, verb) != 0)
                        status = 1;
        } else if (emit(&out, c, m, a->interval_ns > 0 ? PMUGATE_SPAN_INTERVAL : PMUGATE_SPAN_TOTAL, verb) != 0)
                status = 1;
        if (a->command && w.status >= 0 && !(a->marker && status != 0 && w.status == 0))
                status = w.status;
finish:
        workload_abort(&w);
        marker_run_cleanup(&marker);
        if (blocked)
                (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
        pmugate_measure_close(m);
        pmugate_info_free(info);
        return status;
}

int verb_topdown(int argc, char *argv[], const char *socket_path) {
        MeasureArgs a;

        if (parse_args(argc, argv, true, &a) < 0)
                return 2;
        return run(&a, socket_path, "topdown");
}

int verb_stat(int argc, char *argv[], const char *socket_path) {
        MeasureArgs a;

        if (parse_args(argc, argv, false, &a) < 0)
                return 2;
        return run(&a, socket_path, "stat");
}

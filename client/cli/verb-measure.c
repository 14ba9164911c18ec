/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate topdown and pmugate stat: wrapper (-- CMD), stethoscope (-S) and timeline (-I) modes
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli-util.h"
#include "cli/cpu-expr.h"
#include "cli/marker-perf-run.h"
#include "cli/marker-report.h"
#include "cli/measure-output.h"
#include "cli/output-file.h"
#include "cli/verb-measure-args.h"
#include "cli/verb-measure.h"
#include "cli/workload.h"
#include "cpulist.h"
#include "events/event-models.h"
#include "macro.h"
#include "pmugate-limits.h"

#define CPU_LIST_TEXT_MAX 1024U
/* -S runs at least this long show a progress line on a terminal, refreshed this often */
#define PROGRESS_MIN_NS (2 * NSEC_PER_SEC)
#define PROGRESS_PERIOD_NS NSEC_PER_SEC
/* With -I, each event set counts for at least this long in every interval */
#define ROTATE_TURN_MIN_NS (10 * NSEC_PER_MSEC)

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
        bool partial_left;              /* -I: a partial interval is left to write at the end */
} RunEnd;

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
        fprintf(stderr, "\rpmugate: measuring, %.0f of %.1f s (Ctrl-C ends it early)\033[K",
                (double) (now - start) / NSEC_PER_SEC, (double) a->duration_ns / NSEC_PER_SEC);
}

/* The next of a series of deadlines start + k * period, k whole, after deadline; the series
 * stays on the clock however late a wake-up was, rather than drifting by each one's delay. */
static uint64_t next_on_clock(uint64_t start, uint64_t period, uint64_t deadline, uint64_t now) {
        uint64_t next = deadline + period;

        if (next <= now)
                next = start + ((now - start) / period + 1) * period;
        return next;
}

/* Arms timer_fd to expire at the absolute CLOCK_MONOTONIC time at. */
static int arm_timer(int timer_fd, uint64_t at) {
        struct itimerspec its = {
                .it_value = { .tv_sec = (time_t) (at / NSEC_PER_SEC), .tv_nsec = (long) (at % NSEC_PER_SEC) },
        };

        return timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}

/* Samples at the poll interval, writes a result per interval, and returns when the command
 * exits, the duration is over, or SIGINT/SIGTERM arrives (forwarded to the command as
 * SIGTERM; without a command it ends the run, kept in end->signal). Every deadline (a sample,
 * an interval's end, the end of -S) is a point on CLOCK_MONOTONIC counted from the start and
 * waited for with an absolute timerfd, so that N intervals take N times -I however long each
 * sample takes. Returns 0, or 1 when sampling failed. */
static int measure_loop(const MeasureArgs *a, OutputContext *out, pmugate *c, pmugate_measure *m,
                        Workload *w, int signal_fd, RunEnd *end) {
        _cleanup_close_ int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        uint64_t poll_ns = pmugate_measure_poll_interval(m), now = now_ns(), start = now;
        /* with -I and event sets taking turns, an interval is one sample per set
         * (rotate_within_intervals()), counted rather than timed so that none is missed */
        unsigned turns = a->interval_ns > 0 ? pmugate_measure_event_sets(m) : 1, turn = 0;
        uint64_t next_poll = now + poll_ns;
        uint64_t next_interval = a->interval_ns && turns == 1 ? now + a->interval_ns : UINT64_MAX;
        uint64_t deadline = a->duration_ns ? now + a->duration_ns : UINT64_MAX;
        bool show = a->duration_ns >= PROGRESS_MIN_NS && !a->interval_ns && out->file != stderr &&
                    isatty(STDERR_FILENO);
        uint64_t next_progress = show ? now : UINT64_MAX;
        int status = 0;

        end->partial_left = a->interval_ns > 0;
        if (timer_fd < 0) {
                fprintf(stderr, "pmugate: timerfd: %s\n", strerror(errno));
                return 1;
        }
        for (;;) {
                struct pollfd fds[3] = {
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = timer_fd, .events = POLLIN },
                        { .fd = w->pidfd, .events = POLLIN },
                };
                uint64_t wake = MIN(MIN(MIN(next_poll, next_interval), deadline), next_progress);
                bool last, boundary = false;
                int r;

                r = arm_timer(timer_fd, wake);
                if (r < 0) {
                        fprintf(stderr, "pmugate: timerfd: %s\n", strerror(-r));
                        status = 1;
                        break;
                }
                r = ppoll(fds, w->pidfd >= 0 ? 3 : 2, NULL, NULL);
                if (r < 0 && errno != EINTR) {
                        status = 1;
                        break;
                }
                if (fds[1].revents & POLLIN) {
                        uint64_t expirations;

                        (void) read(timer_fd, &expirations, sizeof(expirations));
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
                if (w->pidfd >= 0 && (fds[2].revents & POLLIN)) {
                        workload_reap(w);
                        break;
                }
                now = now_ns();
                /* at the end of -S, a sample due at it still ends its interval whole */
                last = now >= deadline;
                if (last && next_poll > deadline && next_interval > deadline)
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
                /* the turns of event sets are on the clock too: each is as long as the others */
                next_poll = turns > 1 ? next_on_clock(start, poll_ns, next_poll, now) : now + poll_ns;
                if (turns > 1 && ++turn == turns) {
                        turn = 0;
                        boundary = true;
                }
                if (now >= next_interval) {
                        next_interval = next_on_clock(start, a->interval_ns, next_interval, now);
                        boundary = true;
                }
                if (boundary && emit(out, c, m, PMUGATE_SPAN_INTERVAL) != 0) {
                        status = 1;
                        break;
                }
                if (last) {
                        /* nothing counted after the last whole interval when it ended at the deadline */
                        end->partial_left = !boundary;
                        break;
                }
        }
        if (show)
                progress(a, start, now, true);
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
                fprintf(stderr,
                        "pmugate: -I %.0fms is too short: %u event sets take turns on the counters and each "
                        "needs %.0fms of every interval; use -I %.0fms or longer\n",
                        (double) a->interval_ns / 1e6, sets, (double) ROTATE_TURN_MIN_NS / 1e6,
                        (double) (sets * ROTATE_TURN_MIN_NS) / 1e6);
                return -EINVAL;
        }
        /* one sample per turn: a longer PERF_METRICS window than a turn is never needed */
        if (pmugate_measure_set_rotate_period(m, turn) < 0 ||
            (turn > reset && pmugate_measure_set_reset_period(m, turn) < 0)) {
                fprintf(stderr,
                        "pmugate: -I %.0fms: each of %u event sets would count for %.0fms, outside 1ms to "
                        "60s\n", (double) a->interval_ns / 1e6, sets, (double) turn / 1e6);
                return -EINVAL;
        }
        return 0;
}

static int open_measurement(const MeasureArgs *a, pmugate *c, const pmugate_info *info, const uint32_t *cpus,
                            size_t n_cpus, pmugate_measure **ret) {
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        /* libpfm4 activates the host's PMU; resolve names for the daemon's model instead, with
         * the table libpfm4 has for it (Emerald Rapids': Sapphire Rapids') */
        if (info->model_key[0])
                (void) setenv("LIBPFM_FORCE_PMU", event_libpfm_pmu(info->model_key) ?: info->model_key, 0);
        if (a->topdown && a->n_drill_nodes > 0)
                r = pmugate_measure_open_topdown_drilldown(c, a->level, a->drill_nodes, a->n_drill_nodes, cpus,
                                                           n_cpus, a->flags, ret, reason, sizeof(reason));
        else if (a->topdown)
                r = pmugate_measure_open_topdown(c, a->level, cpus, n_cpus, a->flags, ret, reason,
                                                 sizeof(reason));
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

/* The scope a run counts: --scope, else process for -p and (where the counters go through
 * perf, or for software events) for a command without -C or -c, job in job mode where the
 * counters go through perf, else the CPUs. */
static pmugate_perf_scope choose_scope(const MeasureArgs *a, const pmugate_info *info, const pmugate_measure *m) {
        bool perf = pmugate_info_counts_via_perf(info) || pmugate_measure_via_perf(m);

        if (a->scope != SCOPE_DEFAULT)
                return (pmugate_perf_scope) a->scope;
        if (a->pid > 0)
                return PMUGATE_PERF_SCOPE_PROCESS;
        if (a->pin_cpus || a->measure_cpus || a->marker)
                return PMUGATE_PERF_SCOPE_CPU;
        if (a->command && perf)
                return PMUGATE_PERF_SCOPE_PROCESS;
        if (info->scoped && pmugate_info_counts_via_perf(info))
                return PMUGATE_PERF_SCOPE_JOB;
        return PMUGATE_PERF_SCOPE_CPU;
}

static int set_scope(pmugate_measure *m, pmugate_perf_scope scope, pid_t pid, bool on_exec) {
        pmugate_measure_scope s = {
                .scope = scope,
                .pid = scope == PMUGATE_PERF_SCOPE_PROCESS ? pid : 0,
                .follow = scope == PMUGATE_PERF_SCOPE_PROCESS,
                .on_exec = scope == PMUGATE_PERF_SCOPE_PROCESS && on_exec,
        };
        int r = pmugate_measure_set_scope(m, &s);

        if (r < 0)
                fprintf(stderr, "pmugate: cannot count scope %s: %s\n", pmugate_perf_scope_to_string(scope),
                        strerror(-r));
        return r;
}

/* What the title says is counted, for scopes other than the CPUs. */
static void describe_target(OutputContext *out, pmugate_perf_scope scope, const MeasureArgs *a,
                            const pmugate_info *info) {
        if (scope == PMUGATE_PERF_SCOPE_PROCESS && a->pid > 0)
                (void) snprintf(out->target_buf, sizeof(out->target_buf), "process %d", (int) a->pid);
        else if (scope == PMUGATE_PERF_SCOPE_PROCESS)
                (void) snprintf(out->target_buf, sizeof(out->target_buf), "'%s' and its children",
                                a->command ? a->command[0] : "?");
        else if (scope == PMUGATE_PERF_SCOPE_JOB)
                (void) snprintf(out->target_buf, sizeof(out->target_buf), "job %s on CPUs %s",
                                info->scope_job[0] ? info->scope_job : "(yours)", out->cpu_list);
        else {
                out->target = NULL;
                return;
        }
        out->target = out->target_buf;
}

/* One measurement: open, start (with the command, if any), sample until it ends, stop. The
 * result of the whole run goes to ret_total when not NULL; otherwise it is written (in -I
 * mode, the last partial interval). */
static int measure_once(const MeasureArgs *a, OutputContext *out, pmugate *c, const pmugate_info *info,
                        const uint32_t *cpus, size_t n_cpus, int signal_fd, pmugate_result **ret_total,
                        RunEnd *end) {
        _cleanup_(pmugate_measure_closep_cli) pmugate_measure *m = NULL;
        Workload w = WORKLOAD_NULL;
        MarkerRun marker = {};
        pmugate_perf_scope scope;
        int r, status;

        end->status = 1;
        end->signal = 0;
        if (a->marker && !a->topdown && !a->group) {
                /* perf's software events: the command's threads open their own, nothing to program */
                MarkerPerfPlan plan;
                char reason[PMUGATE_REASON_MAX] = "";

                r = marker_runner_perf_plan(a->events, &plan, reason, sizeof(reason));
                if (r >= 0)
                        return end->status = marker_perf_run(a, out, &plan, /* m= */ NULL, cpus, n_cpus,
                                                             signal_fd);
                /* with counter events too: where counters go through perf, the measurement's perf
                 * groups hold both (below); through MSRs they cannot be read together */
                if (r != -ENOENT && !(r == -EINVAL && pmugate_info_counts_via_perf(info))) {
                        fprintf(stderr, "pmugate %s -m: %s\n", a->verb, reason[0] ? reason : strerror(-r));
                        return 1;
                }
        }
        if (open_measurement(a, c, info, cpus, n_cpus, &m) < 0)
                return 1;
        scope = choose_scope(a, info, m);
        describe_target(out, scope, a, info);
        if (scope == PMUGATE_PERF_SCOPE_JOB && set_scope(m, scope, 0, false) < 0)
                return 1;
        if (a->pid > 0) {
                /* the run ends when the process does, or at -S or Ctrl-C */
                if (set_scope(m, scope, a->pid, false) < 0)
                        return 1;
                w.pidfd = (int) syscall(SYS_pidfd_open, a->pid, 0);
                if (w.pidfd < 0) {
                        fprintf(stderr, "pmugate: process %d: %s\n", (int) a->pid, strerror(errno));
                        return 1;
                }
        }
        /* copies: with -r the result is written after the measurement is closed */
        (void) snprintf(out->group_buf, sizeof(out->group_buf), "%s", pmugate_measure_group(m));
        (void) snprintf(out->description_buf, sizeof(out->description_buf), "%s", pmugate_measure_description(m));
        out->group = out->group_buf;
        out->description = out->description_buf;
        if (a->marker && pmugate_measure_via_perf(m)) {
                /* counters through perf: the command's threads open the measurement's perf
                 * groups for themselves; the runner starts nothing and keeps the formulas */
                MarkerPerfPlan plan;
                char reason[PMUGATE_REASON_MAX] = "";

                r = marker_runner_perf_plan_measure(m, &plan, reason, sizeof(reason));
                if (r < 0) {
                        fprintf(stderr, "pmugate %s -m: %s\n", a->verb, reason[0] ? reason : strerror(-r));
                        return 1;
                }
                return end->status = marker_perf_run(a, out, &plan, m, cpus, n_cpus, signal_fd);
        }
        if (a->marker && marker_run_prepare(&marker, m, a->socket_path, a->verb) < 0) {
                marker_run_cleanup(&marker);
                return 1;
        }
        if (a->command) {
                /* what it prints comes out after what was printed so far */
                fflush(stdout);
                fflush(stderr);
                r = workload_fork(&w, a->command, cpus, a->pin_cpus ? n_cpus : 0);
                if (r < 0) {
                        fprintf(stderr, "pmugate: cannot start '%s': %s\n", a->command[0], strerror(-r));
                        marker_run_cleanup(&marker);
                        return 1;
                }
                /* the command and its descendants from its exec, as perf stat -- COMMAND */
                if (scope == PMUGATE_PERF_SCOPE_PROCESS && set_scope(m, scope, w.pid, true) < 0) {
                        workload_abort(&w);
                        marker_run_cleanup(&marker);
                        return 1;
                }
        }
        r = pmugate_measure_start(m);
        if (r < 0) {
                report_failure(c, m, r, "starting the counters");
                workload_abort(&w);
                marker_run_cleanup(&marker);
                return 1;
        }
        if (a->command && workload_release(&w, a->command, a->verb) < 0) {
                end->status = w.status >= 0 ? w.status : 1;
                workload_abort(&w);
                marker_run_cleanup(&marker);
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
        if (a->marker) {
                if (marker_run_report(&marker, out, m, a->verb) != 0)
                        status = 1;
        } else if (ret_total) {
                r = pmugate_measure_read(m, PMUGATE_SPAN_TOTAL, ret_total);
                if (r < 0)
                        status = cli_report("pmugate", c, r, "reading the counts");
        } else if (a->interval_ns > 0) {
                /* the time since the last whole interval, marked: a command shorter than -I
                 * still gets its result; a metric whose event set had no turn in it is n/a */
                out->partial = true;
                if (end->partial_left && emit(out, c, m, PMUGATE_SPAN_INTERVAL) != 0)
                        status = 1;
                out->partial = false;
        } else if (emit(out, c, m, PMUGATE_SPAN_TOTAL) != 0)
                status = 1;
        /* a marker report that failed is not hidden by the command's success */
        if (a->command && w.status >= 0 && !(a->marker && status != 0 && w.status == 0))
                status = w.status;
        else if (end->signal)
                status = EXIT_SIGNAL_BASE + end->signal;
        workload_abort(&w);
        marker_run_cleanup(&marker);
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

/* --drilldown: as toplev reruns the workload, one run per level from 2 up to the one before
 * the last (the COMMAND again, or -S again), each drilled into the largest node of the run
 * before; the largest node of each goes into final->drill_nodes, whose run is the result.
 * The names point into the results, kept in ret_results until the end. Returns 0, or the
 * status to exit with when a run failed or was interrupted. */
static int drill_down(const MeasureArgs *a, OutputContext *out, pmugate *c, const pmugate_info *info,
                      const uint32_t *cpus, size_t n_cpus, int signal_fd, MeasureArgs *final,
                      pmugate_result *ret_results[DRILL_NODES_MAX]) {
        MeasureArgs phase = *a;

        phase.interval_ns = 0;
        phase.repeat = 1;
        phase.n_drill_nodes = 0;
        for (unsigned level = 2; level < a->level; level++) {
                pmugate_result *result = NULL;
                RunEnd end = {};
                int k, status;

                phase.level = level;
                status = measure_once(&phase, out, c, info, cpus, n_cpus, signal_fd, &result, &end);
                ret_results[level - 2] = result;
                if (!result || end.signal || status != 0) {
                        if (end.signal)
                                fprintf(stderr, "pmugate: --drilldown: the run measuring level %u was interrupted; "
                                        "no deeper run\n", level);
                        else if (a->command && out->exit_status > 0)
                                fprintf(stderr, "pmugate: --drilldown: '%s' exited with status %d in the run "
                                        "measuring level %u; no deeper run\n", a->command[0], out->exit_status,
                                        level);
                        else
                                fprintf(stderr, "pmugate: --drilldown: the run measuring level %u failed; no deeper "
                                        "run\n", level);
                        return end.signal ? EXIT_SIGNAL_BASE + end.signal : status ?: 1;
                }
                k = pmugate_result_largest_metric(result, level);
                if (k < 0) {
                        fprintf(stderr, "pmugate: --drilldown: no level-%u node%s%s has a value (all n/a) to drill "
                                "into; measure level %u without --drilldown\n", level,
                                phase.n_drill_nodes ? " under " : "",
                                phase.n_drill_nodes ? phase.drill_nodes[phase.n_drill_nodes - 1] : "", level);
                        return 1;
                }
                fprintf(stderr, "pmugate: --drilldown: level %u's largest node is %s (%.2f%s); level %u measures "
                        "its children only\n", level, result->metrics[k].name,
                        output_metric_value(result, &result->aggregate, (size_t) k), result->metrics[k].unit,
                        level + 1);
                phase.drill_nodes[phase.n_drill_nodes++] = result->metrics[k].name;
        }
        memcpy(final->drill_nodes, phase.drill_nodes, sizeof(phase.drill_nodes));
        final->n_drill_nodes = phase.n_drill_nodes;
        out->drill_nodes = final->drill_nodes;
        out->n_drill_nodes = final->n_drill_nodes;
        return 0;
}

/* Whether the file name in an -o template ends in a suffix that names no format. One from a
 * %h expansion (a host name's domain) is not the user's choice and is left alone. */
static bool unknown_suffix(const char *template) {
        const char *slash = strrchr(template, '/'), *base = slash ? slash + 1 : template;
        const char *dot = strrchr(base, '.');

        return dot && dot != base && dot[1] && !strchr(dot, '%');
}

static int open_output(const MeasureArgs *a, OutputFormat *format, FILE **ret) {
        char path[OUTPUT_PATH_MAX], reason[PMUGATE_REASON_MAX] = "";
        int r;

        *ret = NULL;
        if (!a->output_path)
                return 0;
        r = output_path_expand(a->output_path, path, sizeof(path), reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugate: %s\n", reason);
                return 2;
        }
        if (!a->format_given && !output_format_from_path(path, format) && unknown_suffix(a->output_path)) {
                fprintf(stderr,
                        "pmugate: -o %s: unknown suffix '%s': use .csv, .json, .jsonl or .txt, or choose "
                        "the format with -O\n", a->output_path, strrchr(a->output_path, '.'));
                return 2;
        }
        r = output_file_open(path, ret, reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugate: %s\n", reason[0] ? reason : strerror(-r));
                return 1;
        }
        return 0;
}

/* -C: the command must be allowed on some of the CPUs it is pinned to (the kernel pins it to
 * those, as it does where the measured machine has CPUs this one lacks); where it was allowed
 * on more, one notice says it no longer is, since perf stat's -C measures without pinning.
 * Returns 0, or 1 after saying why the command cannot be pinned. */
static int check_pinning(const MeasureArgs *a, const uint32_t *cpus, size_t n_cpus, const char *cpu_list) {
        _cleanup_free_ uint32_t *allowed = NULL, *outside = NULL;
        char allowed_text[CPU_LIST_TEXT_MAX], outside_text[CPU_LIST_TEXT_MAX];
        size_t n_allowed = 0, n_outside = 0;
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return 0;
        allowed = calloc(CPU_SETSIZE, sizeof(uint32_t));
        outside = calloc(n_cpus ?: 1, sizeof(uint32_t));
        if (!allowed || !outside)
                return 0;
        for (uint32_t cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &set))
                        allowed[n_allowed++] = cpu;
        for (size_t i = 0; i < n_cpus; i++)
                if (cpus[i] >= CPU_SETSIZE || !CPU_ISSET(cpus[i], &set))
                        outside[n_outside++] = cpus[i];
        if (cpulist_format(allowed, n_allowed, allowed_text, sizeof(allowed_text)) < 0)
                (void) snprintf(allowed_text, sizeof(allowed_text), "%zu CPUs", n_allowed);
        if (n_outside == n_cpus) {
                if (cpulist_format(outside, n_outside, outside_text, sizeof(outside_text)) < 0)
                        (void) snprintf(outside_text, sizeof(outside_text), "%zu CPUs", n_outside);
                fprintf(stderr,
                        "pmugate: cannot pin %s to CPU%s %s: not in this process's allowed CPUs (%s); measure "
                        "them without pinning with -c\n", a->command[0], n_outside > 1 ? "s" : "", outside_text,
                        allowed_text);
                return 1;
        }
        /* not into CSV or JSON on stderr, which a wrapped command's results are */
        if (n_allowed > n_cpus && (a->format == OUTPUT_TABLE || a->output_path))
                fprintf(stderr,
                        "pmugate: -C pins %s to CPU%s %s (it could run on %s); perf stat -C does not pin, "
                        "-c measures without pinning\n", a->command[0], n_cpus > 1 ? "s" : "", cpu_list,
                        allowed_text);
        return 0;
}

static int run(const MeasureArgs *a, const char *socket_path) {
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        _cleanup_(pmugate_info_freep_cli) pmugate_info *info = NULL;
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_fclose_ FILE *file = NULL;
        _cleanup_close_ int signal_fd = -1;
        char cpu_list[CPU_LIST_TEXT_MAX], reason[PMUGATE_REASON_MAX] = "";
        OutputFormat format = a->format;
        OutputContext out;
        sigset_t mask, old_mask;
        bool blocked;
        size_t n_cpus = 0;
        RunEnd end = {};
        MeasureArgs final = *a;
        pmugate_result *drill_results[DRILL_NODES_MAX] = {};
        int r, status;

        if (cli_connect(socket_path, &c) < 0)
                return 1;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return cli_report("pmugate", c, r, "hello");
        r = cpu_select(a->pin_cpus ? "-C" : "-c", a->pin_cpus ?: a->measure_cpus, info, &cpus, &n_cpus,
                       reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugate: %s\n", reason[0] ? reason : pmugate_strerror(r));
                /* a list that does not parse is a usage error; CPUs the machine or job lacks are not */
                return r == -EINVAL ? 2 : 1;
        }
        if (cpulist_format(cpus, n_cpus, cpu_list, sizeof(cpu_list)) < 0)
                (void) snprintf(cpu_list, sizeof(cpu_list), "(%zu CPUs)", n_cpus);
        if (a->pin_cpus && a->command && check_pinning(a, cpus, n_cpus, cpu_list) != 0)
                return 1;
        r = open_output(a, &format, &file);
        if (r != 0)
                return r;
        out = (OutputContext) {
                /* as perf: a wrapped command keeps stdout to itself */
                .file = file ?: a->command ? stderr : stdout,
                .format = format,
                .per_cpu = a->per_cpu,
                .aggregate_only = a->aggregate_only,
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
        } else {
                status = a->drilldown ?
                         drill_down(a, &out, c, info, cpus, n_cpus, signal_fd, &final, drill_results) : 0;
                if (status == 0 && a->repeat > 1)
                        status = measure_repeated(&final, &out, c, info, cpus, n_cpus, signal_fd);
                else if (status == 0)
                        status = measure_once(&final, &out, c, info, cpus, n_cpus, signal_fd, NULL, &end);
        }
        if (output_finish(&out) < 0)
                status = status ?: 1;
        /* the drilled nodes' names (out.drill_nodes) live in these results */
        for (size_t i = 0; i < DRILL_NODES_MAX; i++)
                pmugate_result_free(drill_results[i]);
        if (blocked)
                (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return status;
}

int verb_topdown(int argc, char *argv[], const char *socket_path) {
        MeasureArgs a;
        int r = measure_parse_args(argc, argv, true, &a);

        if (r != 0)
                return r == ARGS_DONE ? 0 : 2;
        a.socket_path = socket_path;
        return run(&a, socket_path);
}

int verb_stat(int argc, char *argv[], const char *socket_path) {
        MeasureArgs a;
        int r = measure_parse_args(argc, argv, false, &a);

        if (r != 0)
                return r == ARGS_DONE ? 0 : 2;
        a.socket_path = socket_path;
        return run(&a, socket_path);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate stat -m with perf's software events: the command runs, its markers read their
 * threads' own events, and the runner reports the regions
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/marker-perf-run.h"
#include "cli/marker-report.h"
#include "cli/workload.h"

/* Until the command exits; a SIGTERM to pmugate is passed on (the terminal's SIGINT reaches
 * the command by itself). */
static void wait_for(Workload *w, int signal_fd) {
        for (;;) {
                struct pollfd fds[2] = {
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = w->pidfd, .events = POLLIN },
                };

                if (poll(fds, 2, -1) < 0 && errno != EINTR)
                        break;
                if (fds[0].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si) && si.ssi_signo == SIGTERM)
                                (void) kill(w->pid, SIGTERM);
                }
                if (fds[1].revents & POLLIN)
                        break;
        }
        workload_reap(w);
}

int marker_perf_run(const MeasureArgs *a, OutputContext *out, const MarkerPerfPlan *plan, pmugate_measure *m,
                    const uint32_t *cpus, size_t n_cpus, int signal_fd) {
        Workload w = WORKLOAD_NULL;
        MarkerRun run = {};
        int r, status;

        if (!m) {
                out->group = "";
                out->description = "";
        }
        if (marker_run_prepare_perf(&run, plan, a->socket_path, a->verb) < 0) {
                marker_run_cleanup(&run);
                return 1;
        }
        fflush(stdout);
        fflush(stderr);
        r = workload_fork(&w, a->command, cpus, a->pin_cpus ? n_cpus : 0);
        if (r < 0) {
                fprintf(stderr, "pmugate: cannot start '%s': %s\n", a->command[0], strerror(-r));
                marker_run_cleanup(&run);
                return 1;
        }
        if (workload_release(&w, a->command, a->verb) < 0) {
                status = w.status >= 0 ? w.status : 1;
                workload_abort(&w);
                marker_run_cleanup(&run);
                return status;
        }
        wait_for(&w, signal_fd);
        out->exit_status = w.status;
        status = marker_run_report_perf(&run, out, plan, m, a->verb);
        /* a marker report that failed is not hidden by the command's success */
        if (w.status >= 0 && !(status != 0 && w.status == 0))
                status = w.status;
        workload_abort(&w);
        marker_run_cleanup(&run);
        return status;
}

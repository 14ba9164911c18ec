/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf opener's cost per fd, one event a request against PERF_OPENER_BATCH_MAX a request:
 * what a whole-node perf_open costs the daemon's turn through the kernel's driver. Run as root
 * (the opener keeps CAP_PERFMON and opens cpu-clock on this machine's CPUs, as a node's
 * perf_open opens its events on every CPU). Not a test: it prints numbers.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/perf-opener.h"
#include "macro.h"
#include "perf/perf-attr.h"
#include "pmugate-limits.h"

#define FDS_DEFAULT 4096U
#define NOBODY 65534

static double clock_s(clockid_t id) {
        struct timespec ts;

        (void) clock_gettime(id, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The CPU time of process pid, from /proc/PID/stat (user and system, in clock ticks). */
static double process_cpu_s(pid_t pid) {
        char path[64], buf[1024], *p;
        unsigned long utime = 0, stime = 0;
        FILE *f;

        (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        p = fgets(buf, sizeof(buf), f);
        (void) fclose(f);
        if (!p || !(p = strrchr(buf, ')')))
                return 0;
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
                return 0;
        return (double) (utime + stime) / (double) sysconf(_SC_CLK_TCK);
}

static int open_all(PerfOpener *o, const struct perf_event_attr *attr, unsigned fds, long n_cpus, size_t per_request,
                    int *out) {
        PerfOpenerEvent events[PERF_OPENER_BATCH_MAX];

        for (unsigned i = 0; i < fds;) {
                size_t n = MIN(per_request, (size_t) (fds - i));
                int r;

                if (per_request == 1) {
                        out[i] = perf_opener_open(o, attr, -1, -1, (int) (i % n_cpus), -1, 0);
                        if (out[i] < 0)
                                return out[i];
                        i++;
                        continue;
                }
                for (size_t j = 0; j < n; j++)
                        events[j] = (PerfOpenerEvent) { .attr = attr, .pid = -1, .cgroup_fd = -1,
                                                        .cpu = (int) ((i + j) % n_cpus), .group_fd = -1 };
                r = perf_opener_open_batch(o, events, n, out + i);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < n; j++)
                        if (out[i + j] < 0)
                                return out[i + j];
                i += (unsigned) n;
        }
        return 0;
}

int main(int argc, char **argv) {
        static const uint32_t types[] = { PERF_TYPE_SOFTWARE };
        static const struct option options[] = {
                { "fds", required_argument, NULL, 'f' },
                {}
        };
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE, .size = sizeof(attr), .config = PERF_COUNT_SW_CPU_CLOCK,
                .disabled = 1, .exclude_kernel = 1, .exclude_hv = 1,
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        };
        long n_cpus = sysconf(_SC_NPROCESSORS_ONLN);
        unsigned fds = FDS_DEFAULT;
        PerfOpener *o = NULL;
        int *out, c, r;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                if (c != 'f') {
                        fprintf(stderr, "Usage: bench-opener [--fds=N]  (as root)\n");
                        return EXIT_FAILURE;
                }
                fds = (unsigned) atoi(optarg);
        }
        if (fds == 0 || n_cpus < 1)
                return EXIT_FAILURE;
        out = calloc(fds, sizeof(int));
        if (!out)
                return EXIT_FAILURE;
        r = perf_opener_start(perf_attr_verify, types, ELEMENTSOF(types), NOBODY, NOBODY, &o);
        if (r < 0) {
                fprintf(stderr, "bench-opener: cannot start the opener: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        for (size_t per = 1;; per = PERF_OPENER_BATCH_MAX) {
                double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
                double o0 = process_cpu_s(perf_opener_pid(o)), wall, self, opener;

                r = open_all(o, &attr, fds, n_cpus, per, out);
                wall = clock_s(CLOCK_MONOTONIC) - t0;
                self = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
                opener = process_cpu_s(perf_opener_pid(o)) - o0;
                for (unsigned i = 0; i < fds; i++)
                        if (out[i] >= 0)
                                (void) close(out[i]);
                if (r < 0) {
                        fprintf(stderr, "bench-opener: open: %s\n", strerror(-r));
                        break;
                }
                printf("open_%s_fds %u\nopen_%s_wall_ms %.2f\nopen_%s_wall_us_per_fd %.2f\n"
                       "open_%s_server_cpu_us_per_fd %.2f\nopen_%s_opener_cpu_us_per_fd %.2f\n",
                       per == 1 ? "single" : "batch", fds, per == 1 ? "single" : "batch", wall * 1e3,
                       per == 1 ? "single" : "batch", wall * 1e6 / fds, per == 1 ? "single" : "batch",
                       self * 1e6 / fds, per == 1 ? "single" : "batch", opener * 1e6 / fds);
                if (per != 1)
                        break;
        }
        perf_opener_stop(o);
        free(out);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

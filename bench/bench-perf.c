/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Perf path benchmark, client side: a TopDown sample through the daemon's perf_read on every
 * CPU (round trips, the daemon's CPU time, the client's), what one perf_open of the same
 * groups costs, and the groups written out for bench-perf-floor, which reads the same events
 * in one process without the protocol
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "measure/measure-internal.h"
#include "pmugate/measure.h"
#include "pmugate/perf.h"
#include "pmugate/pmugate.h"

#define NSEC_PER_SEC 1e9

#define SAMPLES_DEFAULT 200U
#define OPENS_DEFAULT 5U
#define IDLE_MSEC_DEFAULT 1000U
#define READS_DEFAULT 2000U
/* a perf_open holds 32 events (hello limits) */
#define PMUGATE_BENCH_EVENTS_MAX 64U

static double clock_s(clockid_t id) {
        struct timespec ts;

        (void) clock_gettime(id, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / NSEC_PER_SEC;
}

/* The CPU time of every thread of pid, in ns, from the scheduler's own account
 * (/proc/PID/task/TID/schedstat: nanoseconds, where /proc/PID/stat counts clock ticks), or -1. */
static long long process_cpu_ns(long pid) {
        char path[64];
        long long total = 0;
        struct dirent *de;
        DIR *d;

        if (pid <= 0)
                return -1;
        (void) snprintf(path, sizeof(path), "/proc/%ld/task", pid);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d))) {
                char file[384];
                unsigned long long ns;
                FILE *f;

                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(file, sizeof(file), "/proc/%ld/task/%s/schedstat", pid, de->d_name);
                f = fopen(file, "re");
                if (!f)
                        continue;
                if (fscanf(f, "%llu", &ns) == 1)
                        total += (long long) ns;
                (void) fclose(f);
        }
        (void) closedir(d);
        return total;
}

/* Requests the daemon served so far; a status is itself one. */
static long long daemon_requests(pmugate *c) {
        pmugate_status *s = NULL;
        long long n;

        if (pmugate_status_get(c, &s) < 0)
                return -1;
        n = (long long) s->requests;
        pmugate_status_free(s);
        return n;
}

static void usage(void) {
        printf("Usage: bench-perf --socket=PATH --daemon-pid=PID [--samples=N] [--opens=N] [--idle-ms=MS]\n"
               "                  [--plan=FILE]\n"
               "       bench-perf --socket=PATH --daemon-pid=PID --read-scope=cpu|job [--reads=N]\n"
               "       bench-perf --socket=PATH --daemon-pid=PID --open-cost=N\n"
               "\n"
               "Opens TopDown level 2 on every online CPU the daemon reports (the daemon must count\n"
               "via perf), takes N samples back to back and prints 'key value' lines: round trips\n"
               "and the daemon's CPU time per sample (and per CPU), the client's, the daemon's CPU\n"
               "while the events stay open and nothing is read (the simulator's tick), and the cost\n"
               "of a perf_open and perf_close of the same groups. --plan writes the groups for\n"
               "bench-perf-floor. --read-scope opens cpu-clock on the first two CPUs in that scope\n"
               "and times N perf_reads of it: median, 90th percentile, the daemon's CPU per read.\n"
               "--open-cost opens cpu-clock N times as 1 fd and as 64 (4 groups of 8 on two CPUs)\n"
               "through the daemon and its opener, and the same fds in this process (needs root).\n");
}

static int write_plan(const char *path, const PerfPlan *p) {
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        for (size_t g = 0; g < p->n_groups; g++)
                for (size_t e = 0; e < p->groups[g].n_events; e++) {
                        const pmugate_perf_event *ev = &p->groups[g].events[e];

                        fprintf(f, "%zu %s 0x%" PRIx64 " 0x%" PRIx64 " %d\n", g, ev->pmu, ev->config,
                                ev->has_config1 ? ev->config1 : 0, ev->kernel);
                }
        return fclose(f) == 0 ? 0 : -errno;
}

/* The plan's groups, kept past the measurement's close. */
typedef struct Groups {
        pmugate_perf_event events[PMUGATE_BENCH_EVENTS_MAX];
        pmugate_perf_group groups[PMUGATE_BENCH_EVENTS_MAX];
        size_t n_groups;
} Groups;

static int copy_groups(const PerfPlan *p, Groups *ret) {
        size_t n = 0;

        if (p->n_events > PMUGATE_BENCH_EVENTS_MAX || p->n_groups > PMUGATE_BENCH_EVENTS_MAX)
                return -E2BIG;
        for (size_t g = 0; g < p->n_groups; g++) {
                ret->groups[g] = (pmugate_perf_group) { .events = &ret->events[n], .n_events = p->groups[g].n_events };
                for (size_t e = 0; e < p->groups[g].n_events; e++)
                        ret->events[n++] = p->groups[g].events[e];
        }
        ret->n_groups = p->n_groups;
        return 0;
}

/* The daemon's children (the forked perf opener), from /proc/PID/task/PID/children; 0 if none. */
static long daemon_child(long pid) {
        char path[96];
        long child = 0;
        FILE *f;

        (void) snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", pid, pid);
        f = fopen(path, "re");
        if (!f)
                return 0;
        if (fscanf(f, "%ld", &child) != 1)
                child = 0;
        (void) fclose(f);
        return child;
}

static long long sys_perf_event_open(struct perf_event_attr *attr, int cpu, int group) {
        return syscall(SYS_perf_event_open, attr, -1, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

/* --open-cost: perf_open and perf_close of cpu-clock on the first two CPUs, as one event and as
 * 4 groups of 8 (64 fds), each through the daemon and its opener, and the same fds opened and
 * closed in this process: what one fd costs through the opener against perf_event_open(). */
static int open_cost(pmugate *c, long pid, const uint32_t *cpus, size_t n_cpus, unsigned opens) {
        static const size_t shapes[][2] = { { 1, 1 }, { 4, 8 } };     /* groups, events per group */
        pmugate_perf_event events[32];
        pmugate_perf_group groups[4];
        long opener = daemon_child(pid);
        char reason[512] = "";

        for (size_t i = 0; i < ELEMENTSOF(events); i++)
                events[i] = (pmugate_perf_event) { .pmu = "software", .config = PERF_COUNT_SW_CPU_CLOCK };
        for (size_t s = 0; s < ELEMENTSOF(shapes); s++) {
                size_t n_groups = shapes[s][0], per = shapes[s][1], fds = n_groups * per * n_cpus;
                pmugate_perf_request req = { .scope = PMUGATE_PERF_SCOPE_CPU, .cpus = cpus, .n_cpus = n_cpus,
                                             .groups = groups, .n_groups = n_groups };
                double wall = 0, direct = 0;
                long long daemon_ns = 0, opener_ns = 0;

                if (s == 0)
                        req.n_cpus = 1;
                if (s == 0)
                        fds = 1;
                for (size_t g = 0; g < n_groups; g++)
                        groups[g] = (pmugate_perf_group) { .events = &events[g * per], .n_events = per };
                for (unsigned k = 0; k < opens; k++) {
                        pmugate_perf_handle *h = NULL;
                        long long d0 = process_cpu_ns(pid), o0 = opener > 0 ? process_cpu_ns(opener) : 0;
                        double t0 = clock_s(CLOCK_MONOTONIC);
                        int fd[64], r;

                        r = pmugate_perf_open(c, &req, &h, reason, sizeof(reason));
                        wall += clock_s(CLOCK_MONOTONIC) - t0;
                        daemon_ns += process_cpu_ns(pid) - d0;
                        opener_ns += opener > 0 ? process_cpu_ns(opener) - o0 : 0;
                        if (r < 0) {
                                fprintf(stderr, "bench-perf: perf_open: %s\n", reason[0] ? reason : pmugate_strerror(r));
                                return r;
                        }
                        (void) pmugate_perf_close(c, h);

                        /* the same fds in this process: leaders disabled, then members */
                        t0 = clock_s(CLOCK_MONOTONIC);
                        for (size_t cpu = 0, i = 0; cpu < req.n_cpus; cpu++)
                                for (size_t g = 0; g < n_groups; g++)
                                        for (size_t e = 0; e < per; e++, i++) {
                                                struct perf_event_attr attr = {
                                                        .type = PERF_TYPE_SOFTWARE,
                                                        .size = sizeof(attr),
                                                        .config = PERF_COUNT_SW_CPU_CLOCK,
                                                        .disabled = e == 0,
                                                        .exclude_kernel = 1,
                                                        .exclude_hv = 1,
                                                        .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
                                                                       PERF_FORMAT_TOTAL_TIME_RUNNING |
                                                                       PERF_FORMAT_ID | PERF_FORMAT_GROUP,
                                                };

                                                fd[i] = (int) sys_perf_event_open(&attr, (int) cpus[cpu],
                                                                                  e == 0 ? -1 : fd[i - e]);
                                                if (fd[i] < 0) {
                                                        fprintf(stderr, "bench-perf: perf_event_open: %m\n");
                                                        return -errno;
                                                }
                                        }
                        for (size_t i = 0; i < fds; i++)
                                (void) close(fd[i]);
                        direct += clock_s(CLOCK_MONOTONIC) - t0;
                }
                printf("open_fds_%zu %zu\n", s, fds);
                printf("open_wall_us_%zu %.1f\n", s, wall * 1e6 / opens);
                printf("open_daemon_us_%zu %.1f\n", s, (double) daemon_ns / 1e3 / opens);
                printf("open_opener_us_%zu %.1f\n", s, (double) opener_ns / 1e3 / opens);
                printf("open_direct_us_%zu %.1f\n", s, direct * 1e6 / opens);
        }
        printf("opener_pid %ld\n", opener);
        return 0;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

/* --read-scope: cpu-clock on the given CPUs in scope cpu or job, read reads times, each round
 * trip timed: the cost of a perf_read and the daemon's CPU per read, for each scope. */
static int read_scope(pmugate *c, long pid, const char *scope, const uint32_t *cpus, size_t n_cpus, unsigned reads) {
        const pmugate_perf_event cpu_clock = { .pmu = "software", .config = PERF_COUNT_SW_CPU_CLOCK };
        const pmugate_perf_group group = { .events = &cpu_clock, .n_events = 1 };
        pmugate_perf_request req = {
                .cpus = cpus,
                .n_cpus = n_cpus,
                .groups = &group,
                .n_groups = 1,
        };
        char reason[512] = "";
        pmugate_perf_handle *h = NULL;
        const pmugate_perf_row *rows;
        double *t;
        size_t n_rows;
        long long d0, d1;
        int r;

        r = pmugate_perf_scope_from_string(scope);
        if (r < 0 || r == PMUGATE_PERF_SCOPE_PROCESS) {
                fprintf(stderr, "bench-perf: --read-scope is cpu or job\n");
                return -EINVAL;
        }
        req.scope = (pmugate_perf_scope) r;
        t = calloc(reads ?: 1, sizeof(double));
        if (!t)
                return -ENOMEM;
        r = pmugate_perf_open(c, &req, &h, reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "bench-perf: perf_open (%s): %s\n", scope, reason[0] ? reason : pmugate_strerror(r));
                free(t);
                return r;
        }
        /* warm-up, not counted */
        for (unsigned k = 0; k < reads / 10 && r >= 0; k++)
                r = pmugate_perf_read(c, h, &rows, &n_rows);
        d0 = process_cpu_ns(pid);
        for (unsigned k = 0; k < reads && r >= 0; k++) {
                double t0 = clock_s(CLOCK_MONOTONIC);

                r = pmugate_perf_read(c, h, &rows, &n_rows);
                t[k] = clock_s(CLOCK_MONOTONIC) - t0;
        }
        d1 = process_cpu_ns(pid);
        if (r >= 0) {
                qsort(t, reads, sizeof(double), cmp_double);
                printf("scope %s\n", scope);
                printf("rows %zu\n", n_rows);
                printf("reads %u\n", reads);
                printf("read_median_us %.2f\n", t[reads / 2] * 1e6);
                printf("read_p90_us %.2f\n", t[reads * 9 / 10] * 1e6);
                printf("read_daemon_cpu_us %.2f\n", (double) (d1 - d0) / 1e3 / reads);
        } else
                fprintf(stderr, "bench-perf: perf_read (%s): %s\n", scope, pmugate_strerror(r));
        (void) pmugate_perf_close(c, h);
        free(t);
        return r;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "daemon-pid", required_argument, NULL, 'p' },
                { "samples", required_argument, NULL, 'n' },
                { "opens", required_argument, NULL, 'o' },
                { "idle-ms", required_argument, NULL, 'i' },
                { "plan", required_argument, NULL, 'P' },
                { "read-scope", required_argument, NULL, 'S' },
                { "reads", required_argument, NULL, 'R' },
                { "open-cost", required_argument, NULL, 'O' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *socket_path = NULL, *plan_path = NULL, *scope = NULL;
        unsigned reads = READS_DEFAULT, open_cost_n = 0;
        unsigned samples = SAMPLES_DEFAULT, opens = OPENS_DEFAULT, idle_ms = IDLE_MSEC_DEFAULT;
        long pid = 0;
        char reason[512] = "";
        pmugate *c = NULL;
        pmugate_info *info = NULL;
        pmugate_measure *m = NULL;
        uint32_t *cpus;
        size_t n = 0, n_events;
        Groups groups;
        long long req0, req1, req_status, d0, d1, idle0, idle1, open_ns = 0, open_daemon_ns = 0;
        double wall0, wall1, cpu0, cpu1, start0, start_wall, idle_wall;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (opt) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'p':
                        pid = atol(optarg);
                        break;
                case 'n':
                        samples = (unsigned) atoi(optarg);
                        break;
                case 'o':
                        opens = (unsigned) atoi(optarg);
                        break;
                case 'i':
                        idle_ms = (unsigned) atoi(optarg);
                        break;
                case 'P':
                        plan_path = optarg;
                        break;
                case 'S':
                        scope = optarg;
                        break;
                case 'R':
                        reads = (unsigned) atoi(optarg);
                        break;
                case 'O':
                        open_cost_n = (unsigned) atoi(optarg);
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        return 2;
                }
        if (samples == 0 || pid <= 0 || !socket_path || process_cpu_ns(pid) < 0) {
                usage();
                return 2;
        }
        r = pmugate_connect(socket_path, &c);
        if (r >= 0)
                r = pmugate_hello(c, &info);
        if (r < 0) {
                fprintf(stderr, "bench-perf: cannot reach the daemon: %s\n", pmugate_strerror(r));
                return 1;
        }
        if (scope || open_cost_n > 0) {
                uint32_t own[2];
                size_t n_own = 0;

                /* the CPUs of this machine the daemon serves, at most two: cpu-clock is real */
                for (size_t i = 0; i < info->n_cpus && n_own < ELEMENTSOF(own); i++)
                        if (info->cpus[i].online)
                                own[n_own++] = info->cpus[i].cpu;
                r = open_cost_n > 0 ? open_cost(c, pid, own, n_own, open_cost_n) :
                                      read_scope(c, pid, scope, own, n_own, reads ?: 1);
                pmugate_info_free(info);
                c = pmugate_disconnect(c);
                return r < 0 ? 1 : 0;
        }
        if (strcmp(info->counters_via, "perf") != 0) {
                fprintf(stderr, "bench-perf: the daemon counts via %s, not perf (start it with --counters=perf)\n",
                        info->counters_via);
                return 1;
        }
        cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
        if (!cpus)
                return 1;
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online)
                        cpus[n++] = info->cpus[i].cpu;

        r = pmugate_measure_open_topdown(c, 2, cpus, n, 0, &m, reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "bench-perf: %s\n", reason[0] ? reason : pmugate_strerror(r));
                return 1;
        }
        start0 = clock_s(CLOCK_MONOTONIC);
        r = pmugate_measure_start(m);
        start_wall = clock_s(CLOCK_MONOTONIC) - start0;
        if (r < 0 || !m->via_perf || !m->perf_plan) {
                fprintf(stderr, "bench-perf: start: %s\n",
                        m->reason[0] ? m->reason : r < 0 ? pmugate_strerror(r) : "not on the perf path");
                return 1;
        }
        n_events = m->perf_plan->n_events;
        if (plan_path && (r = write_plan(plan_path, m->perf_plan)) < 0) {
                fprintf(stderr, "bench-perf: %s: %s\n", plan_path, strerror(-r));
                return 1;
        }

        /* A status costs one request: two in a row give the status's own share. */
        req0 = daemon_requests(c);
        req_status = daemon_requests(c) - req0;
        /* Open but not read: the simulator's driver ticks every 4 ms, as the kernel rotates groups. */
        idle0 = process_cpu_ns(pid);
        wall0 = clock_s(CLOCK_MONOTONIC);
        (void) nanosleep(&(struct timespec) { .tv_sec = idle_ms / 1000, .tv_nsec = (idle_ms % 1000) * 1000000L },
                         NULL);
        idle1 = process_cpu_ns(pid);
        idle_wall = clock_s(CLOCK_MONOTONIC) - wall0;

        req0 = daemon_requests(c);
        d0 = process_cpu_ns(pid);
        cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        wall0 = clock_s(CLOCK_MONOTONIC);
        for (unsigned k = 0; k < samples; k++) {
                r = pmugate_measure_sample(m);
                if (r < 0) {
                        fprintf(stderr, "bench-perf: sample: %s\n", m->reason[0] ? m->reason : pmugate_strerror(r));
                        return 1;
                }
        }
        wall1 = clock_s(CLOCK_MONOTONIC);
        cpu1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        d1 = process_cpu_ns(pid);
        req1 = daemon_requests(c);

        /* perf_open and perf_close of the same groups on the same CPUs, the measurement
         * stopped and its leases taken again, so that each open does what it would in a
         * measurement: it holds the simulator's events once, not twice. */
        r = copy_groups(m->perf_plan, &groups);
        if (r >= 0)
                r = pmugate_measure_stop(m);
        m = pmugate_measure_close(m);
        if (r >= 0)
                r = pmugate_lease(c, cpus, n);
        for (unsigned k = 0; k < opens && r >= 0; k++) {
                pmugate_perf_request req = {
                        .scope = PMUGATE_PERF_SCOPE_CPU,
                        .cpus = cpus,
                        .n_cpus = n,
                        .groups = groups.groups,
                        .n_groups = groups.n_groups,
                };
                pmugate_perf_handle *h = NULL;
                double t0 = clock_s(CLOCK_MONOTONIC);
                long long c0 = process_cpu_ns(pid);

                r = pmugate_perf_open(c, &req, &h, reason, sizeof(reason));
                open_ns += (long long) ((clock_s(CLOCK_MONOTONIC) - t0) * NSEC_PER_SEC);
                open_daemon_ns += process_cpu_ns(pid) - c0;
                if (r >= 0)
                        r = pmugate_perf_close(c, h);
        }
        if (r < 0) {
                fprintf(stderr, "bench-perf: perf_open: %s\n", reason[0] ? reason : pmugate_strerror(r));
                return 1;
        }
        (void) pmugate_release(c, cpus, n);

        printf("model %s\n", info->model_key);
        printf("cpus %zu\n", n);
        printf("groups %zu\n", groups.n_groups);
        printf("events_per_cpu %zu\n", n_events);
        printf("samples %u\n", samples);
        printf("start_wall_us %.1f\n", start_wall * 1e6);
        printf("sample_wall_us %.2f\n", (wall1 - wall0) * 1e6 / samples);
        printf("client_cpu_us %.2f\n", (cpu1 - cpu0) * 1e6 / samples);
        printf("client_cpu_ns_per_cpu %.1f\n", (cpu1 - cpu0) * 1e9 / samples / (double) n);
        printf("round_trips_per_sample %.2f\n", (double) (req1 - req0 - req_status) / samples);
        printf("daemon_cpu_us %.2f\n", (double) (d1 - d0) / 1e3 / samples);
        printf("daemon_cpu_ns_per_cpu %.1f\n", (double) (d1 - d0) / samples / (double) n);
        printf("tick_cpu_us_per_s %.1f\n", (double) (idle1 - idle0) / 1e3 / idle_wall);
        printf("opens %u\n", opens);
        printf("open_wall_us %.1f\n", opens ? (double) open_ns / 1e3 / opens : 0.0);
        printf("open_daemon_cpu_us %.1f\n", opens ? (double) open_daemon_ns / 1e3 / opens : 0.0);
        printf("open_daemon_ns_per_event %.1f\n",
               opens ? (double) open_daemon_ns / opens / (double) (n * n_events) : 0.0);

        c = pmugate_disconnect(c);
        pmugate_info_free(info);
        free(cpus);
        return r < 0 ? 1 : 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement benchmark: what one sample of a large TopDown measurement costs the client,
 * how many daemon round trips it takes, and the daemon's memory before and after
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "measure/measure-internal.h"
#include "pmugate/measure.h"
#include "pmugate/pmugate.h"

#define NSEC_PER_SEC 1e9
#define SAMPLES_DEFAULT 50U

static double clock_s(clockid_t id) {
        struct timespec ts;

        (void) clock_gettime(id, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / NSEC_PER_SEC;
}

/* The daemon's resident memory in KiB, or -1. */
static long daemon_rss_kib(long pid) {
        char path[64], line[256];
        long kib = -1;
        FILE *f;

        if (pid <= 0)
                return -1;
        (void) snprintf(path, sizeof(path), "/proc/%ld/status", pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
                        break;
        (void) fclose(f);
        return kib;
}

static void usage(void) {
        printf("Usage: bench-measure --socket=PATH [--level=1|2] [--samples=N] [--daemon-pid=PID]\n"
               "\n"
               "Opens TopDown on every online CPU the daemon reports, takes N samples back to back and\n"
               "prints per sample: wall time, the client's own CPU time (total and per CPU) and the\n"
               "daemon round trips; then the daemon's resident memory before, during and after.\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "level", required_argument, NULL, 'l' },
                { "samples", required_argument, NULL, 'n' },
                { "daemon-pid", required_argument, NULL, 'p' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *socket_path = NULL;
        unsigned level = 2, samples = SAMPLES_DEFAULT;
        long pid = 0, rss_idle, rss_running, rss_stopped, rss_after;
        char reason[512] = "";
        pmugate *c = NULL;
        pmugate_info *info = NULL;
        pmugate_measure *m = NULL;
        uint32_t *cpus;
        size_t n = 0;
        double wall0, cpu0, wall, cpu;
        size_t chunks;
        unsigned sets;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (opt) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'l':
                        level = (unsigned) atoi(optarg);
                        break;
                case 'n':
                        samples = (unsigned) atoi(optarg);
                        break;
                case 'p':
                        pid = atol(optarg);
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        return 2;
                }
        if (samples == 0 || (level != 1 && level != 2)) {
                usage();
                return 2;
        }
        r = pmugate_connect(socket_path, &c);
        if (r >= 0)
                r = pmugate_hello(c, &info);
        if (r < 0) {
                fprintf(stderr, "bench-measure: cannot reach the daemon: %s\n", pmugate_strerror(r));
                return 1;
        }
        cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
        if (!cpus)
                return 1;
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online)
                        cpus[n++] = info->cpus[i].cpu;
        rss_idle = daemon_rss_kib(pid);
        r = pmugate_measure_open_topdown(c, level, cpus, n, 0, &m, reason, sizeof(reason));
        if (r >= 0)
                r = pmugate_measure_start(m);
        if (r < 0) {
                fprintf(stderr, "bench-measure: %s\n", reason[0] ? reason : pmugate_strerror(r));
                return 1;
        }
        wall0 = clock_s(CLOCK_MONOTONIC);
        cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (unsigned k = 0; k < samples; k++) {
                r = pmugate_measure_sample(m);
                if (r < 0) {
                        fprintf(stderr, "bench-measure: sample: %s\n", pmugate_strerror(r));
                        return 1;
                }
        }
        wall = (clock_s(CLOCK_MONOTONIC) - wall0) / samples;
        /* one batch per chunk of CPUs: the round trips of a sample (the library's own record) */
        chunks = m->n_sample_chunks;
        sets = pmugate_measure_event_sets(m);
        cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / samples;
        rss_running = daemon_rss_kib(pid);
        r = pmugate_measure_stop(m);
        m = pmugate_measure_close(m);
        rss_stopped = daemon_rss_kib(pid);
        /* the client leaves, as the CLI does; give the daemon a moment to see it */
        c = pmugate_disconnect(c);
        (void) nanosleep(&(struct timespec) { .tv_nsec = 300 * 1000 * 1000 }, NULL);
        rss_after = daemon_rss_kib(pid);
        printf("model %s, TopDown level %u, %zu CPUs, %u samples, %u event set%s\n", info->model_key, level,
               n, samples, sets, sets == 1 ? "" : "s");
        printf("per sample:   wall %.3f ms, client CPU %.3f ms (%.2f us per CPU)\n", wall * 1e3, cpu * 1e3,
               cpu * 1e6 / (double) n);
        printf("round trips:  %zu per sample\n", chunks);
        printf("daemon RSS:   idle %ld KiB, measuring %ld KiB, stopped %ld KiB, client gone %ld KiB\n",
               rss_idle, rss_running, rss_stopped, rss_after);
        pmugate_info_free(info);
        free(cpus);
        return r < 0 ? 1 : 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * marker-omp: an OpenMP program with three marked regions per thread
 *
 * Run it under `pmugate stat -m -g ipc -C 0-1 -- ./marker-omp` to see each region's counts,
 * metrics, calls and time per thread. Usage: marker-omp [ITERATIONS [MILLISECONDS]]: every
 * thread runs ITERATIONS rounds of "setup" (MILLISECONDS / 4), "solve" (MILLISECONDS) and
 * "exchange" (MILLISECONDS / 2, nested in "solve" when PMUGATE_EXAMPLE_NEST is set).
 */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <pmugate/marker.h>

static void work(double milliseconds) {
        long long ns = (long long) (milliseconds * 1e6);
        struct timespec ts = { .tv_sec = (time_t) (ns / 1000000000), .tv_nsec = (long) (ns % 1000000000) };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static void check(int r, const char *what) {
        if (r < 0)
                fprintf(stderr, "marker-omp: %s: %s\n", what, pmugate_marker_last_reason());
}

int main(int argc, char *argv[]) {
        int iterations = argc > 1 ? atoi(argv[1]) : 10;
        double ms = argc > 2 ? atof(argv[2]) : 20.0;
        int nest = getenv("PMUGATE_EXAMPLE_NEST") != NULL;

        if (iterations < 1 || ms <= 0.0) {
                fprintf(stderr, "usage: marker-omp [ITERATIONS [MILLISECONDS]]\n");
                return 2;
        }
        check(pmugate_marker_init(0), "init");
        check(pmugate_marker_register("setup", 0), "register");
        check(pmugate_marker_register("solve", 0), "register");
        check(pmugate_marker_register("exchange", nest ? PMUGATE_REGION_NESTED : 0), "register");
        printf("markers: %s\n", pmugate_marker_read_mode());

#pragma omp parallel
        {
                check(pmugate_marker_thread_init(), "thread init");
                for (int i = 0; i < iterations; i++) {
                        check(pmugate_marker_start("setup"), "start setup");
                        work(ms / 4);
                        check(pmugate_marker_stop("setup"), "stop setup");

                        check(pmugate_marker_start("solve"), "start solve");
                        work(ms);
                        if (nest) {
                                check(pmugate_marker_start("exchange"), "start exchange");
                                work(ms / 2);
                                check(pmugate_marker_stop("exchange"), "stop exchange");
                        }
                        check(pmugate_marker_stop("solve"), "stop solve");

                        if (!nest) {
                                check(pmugate_marker_start("exchange"), "start exchange");
                                work(ms / 2);
                                check(pmugate_marker_stop("exchange"), "stop exchange");
                        }
                }
        }
        check(pmugate_marker_close(), "close");
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A marker program of known cost for the perf read mode: the main thread and THREADS more
 * each burn a known CPU time in region "burn" (by their own thread CPU clock) CALLS times,
 * and touch a known number of fresh pages in region "touch"; the main thread also burns in
 * "main" alone. Prints what it did, and the markers' read mode.
 *
 *   marker_perf_burn THREADS CALLS MS PAGES
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pmugate/marker.h"

#define THREADS_MAX 16

static unsigned calls, pages;
static double burn_ms;

static double thread_cpu_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static void burn(double ms) {
        double until = thread_cpu_ms() + ms;
        volatile unsigned long sink = 0;

        while (thread_cpu_ms() < until)
                for (unsigned i = 0; i < 1000; i++)
                        sink += i;
        (void) sink;    /* clang: the sum is only there to burn time */
}

/* Fresh anonymous pages: the first write to each is a page fault. */
static int touch(unsigned n) {
        long size = sysconf(_SC_PAGESIZE);
        unsigned char *p = mmap(NULL, (size_t) n * (size_t) size, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED)
                return -errno;
        for (unsigned i = 0; i < n; i++)
                p[(size_t) i * (size_t) size] = 1;
        (void) munmap(p, (size_t) n * (size_t) size);
        return 0;
}

static int work(void) {
        int r = 0;

        for (unsigned i = 0; i < calls; i++) {
                r = r ?: pmugate_marker_start("burn");
                burn(burn_ms);
                r = r ?: pmugate_marker_stop("burn");
                r = r ?: pmugate_marker_start("touch");
                r = r ?: touch(pages);
                r = r ?: pmugate_marker_stop("touch");
        }
        if (r < 0)
                fprintf(stderr, "marker_perf_burn: %s (%s)\n", strerror(-r), pmugate_marker_last_reason());
        return r;
}

static void *thread_main(void *arg) {
        (void) arg;
        return (void *) (long) work();
}

int main(int argc, char *argv[]) {
        pthread_t threads[THREADS_MAX];
        unsigned n;
        int r, status = 0;

        if (argc != 5 || (n = (unsigned) atoi(argv[1])) > THREADS_MAX) {
                fprintf(stderr, "usage: marker_perf_burn THREADS CALLS MS PAGES\n");
                return 2;
        }
        calls = (unsigned) atoi(argv[2]);
        burn_ms = atof(argv[3]);
        pages = (unsigned) atoi(argv[4]);
        r = pmugate_marker_init(0);
        if (r < 0) {
                fprintf(stderr, "marker_perf_burn: init: %s (%s)\n", strerror(-r), pmugate_marker_last_reason());
                return 1;
        }
        printf("markers: %s\n", pmugate_marker_read_mode());
        r = pmugate_marker_start("main");
        burn(burn_ms);
        r = r ?: pmugate_marker_stop("main");
        if (r < 0) {
                fprintf(stderr, "marker_perf_burn: main: %s (%s)\n", strerror(-r), pmugate_marker_last_reason());
                status = 1;
        }
        for (unsigned i = 0; i < n; i++)
                if (pthread_create(&threads[i], NULL, thread_main, NULL) != 0)
                        return 1;
        if (work() < 0)
                status = 1;
        for (unsigned i = 0; i < n; i++) {
                void *ret;

                (void) pthread_join(threads[i], &ret);
                if (ret)
                        status = 1;
        }
        printf("burned %u x %.1f ms per thread on %u threads, touched %u x %u pages\n", calls, burn_ms, n + 1,
               calls, pages);
        r = pmugate_marker_close();
        return r < 0 ? 1 : status;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The threaded target of pmugate timing -p's tests (docs/TIMING.md): THREADS threads spin in
 * thread_hot from the start, then, argv[2] seconds later (when given), the main thread starts
 * one thread more, which spins too: the events of a thread listed before the recording
 * began follow what that thread starts (inherit). Everything ends argv[1] seconds after the
 * start; the main thread itself only waits. argv[3] sets how many threads spin (THREADS
 * unless given, at most THREADS_MAX), and argv[4] "pin" binds spinning thread i to the i-th CPU
 * of the process's affinity (modulo their number), as OMP_PROC_BIND does.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 3
#define THREADS_MAX 256

static atomic_bool stop;

/* global, so that every symbol table names it */
uint64_t thread_hot(uint64_t x);

__attribute__((noinline)) uint64_t thread_hot(uint64_t x) {
        for (unsigned k = 0; k < 100000U; k++)
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return x;
}

static void *spin(void *arg) {
        uint64_t x = (uint64_t) (uintptr_t) arg;

        while (!atomic_load_explicit(&stop, memory_order_relaxed))
                x = thread_hot(x);
        return (void *) (uintptr_t) (x & 1);
}

static void sleep_seconds(double s) {
        struct timespec ts = { .tv_sec = (time_t) s, .tv_nsec = (long) ((s - (double) (time_t) s) * 1e9) };

        while (nanosleep(&ts, &ts) != 0)
                ;
}

/* Attributes binding a thread to the k-th CPU of set (modulo their number). */
static int pinned_to(pthread_attr_t *attr, const cpu_set_t *set, size_t k) {
        size_t n = (size_t) CPU_COUNT(set), seen = 0;
        cpu_set_t one;

        CPU_ZERO(&one);
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, set) && seen++ == k % n) {
                        CPU_SET(cpu, &one);
                        break;
                }
        return pthread_attr_setaffinity_np(attr, sizeof(one), &one);
}

int main(int argc, char *argv[]) {
        double seconds = argc > 1 ? atof(argv[1]) : 2.0, late = argc > 2 ? atof(argv[2]) : -1.0;
        long threads = argc > 3 ? atol(argv[3]) : THREADS;
        bool pin = argc > 4 && strcmp(argv[4], "pin") == 0;
        pthread_t th[THREADS_MAX + 1];
        cpu_set_t all;
        size_t n = 0;

        if (threads < 1 || threads > THREADS_MAX || sched_getaffinity(0, sizeof(all), &all) < 0)
                return 2;
        for (; n < (size_t) threads; n++) {
                pthread_attr_t attr;

                if (pthread_attr_init(&attr) != 0 || (pin && pinned_to(&attr, &all, n) != 0) ||
                    pthread_create(&th[n], &attr, spin, (void *) (uintptr_t) (n + 1)) != 0)
                        return 1;
                (void) pthread_attr_destroy(&attr);
        }
        /* the threads run: whoever waits for them reads this line */
        printf("ready\n");
        fflush(stdout);
        if (late >= 0 && late < seconds) {
                sleep_seconds(late);
                if (pthread_create(&th[n++], NULL, spin, (void *) (uintptr_t) 99) != 0)
                        return 1;
                sleep_seconds(seconds - late);
        } else
                sleep_seconds(seconds);
        atomic_store(&stop, true);
        for (size_t i = 0; i < n; i++)
                (void) pthread_join(th[i], NULL);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The program pmugate timing's kernel test samples: one hot function that spins for the time
 * given (milliseconds, default 400) and one cold function that runs once
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int timing_hot_spin(uint64_t deadline_ns);
int timing_cold_once(int x);

static uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000U + (uint64_t) ts.tv_nsec;
}

/* The clock is read once per million steps, so that nearly every sample lands here. */
__attribute__((noinline)) int timing_hot_spin(uint64_t deadline_ns) {
        volatile uint64_t x = 1;

        do {
                for (unsigned i = 0; i < 1000000U; i++)
                        x = x * 6364136223846793005U + 1442695040888963407U;
        } while (now_ns() < deadline_ns);
        return (int) (x & 1);
}

__attribute__((noinline)) int timing_cold_once(int x) {
        return x * 3 + 1;
}

int main(int argc, char *argv[]) {
        long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 400;

        if (ms <= 0 || ms > 60000)
                return EXIT_FAILURE;
        printf("%d\n", timing_cold_once(timing_hot_spin(now_ns() + (uint64_t) ms * 1000000U)));
        return EXIT_SUCCESS;
}

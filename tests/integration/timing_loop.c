/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loop of pmugate timing's tests (docs/TIMING.md): random loads from an array larger than
 * the caches, each in a function of its own (load_one, whose ret ends the timed block), as in
 * the LBR timing document's example; built a second time with -DPREFETCH, which prefetches the
 * next iteration's element first. Runs until it has used argv[1] seconds of CPU, or with a
 * second argument that many rounds of ROUND loads (a fixed amount of work, for the overhead
 * benchmark, bench/run-bench-timing.py).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ELEMENTS (32U * 1024U * 1024U / sizeof(uint32_t))
#define ROUND 100000U

static uint32_t *array;

/* global, so that every symbol table names them */
uint32_t load_one(uint32_t i, uint32_t next);
uint64_t hot_loop(double seconds, unsigned long rounds);

static uint32_t next_index(uint32_t x) {
        return x * 1664525U + 1013904223U;
}

/* The block from its entry to its ret: one load that misses the caches, unless prefetched. */
__attribute__((noinline)) uint32_t load_one(uint32_t i, uint32_t next) {
#ifdef PREFETCH
        __builtin_prefetch(&array[next % ELEMENTS]);
#else
        (void) next;
#endif
        return array[i % ELEMENTS];
}

__attribute__((noinline)) uint64_t hot_loop(double seconds, unsigned long rounds) {
        uint64_t sum = 0;
        uint32_t i = 1;

        for (unsigned long done = 0; rounds > 0 ? done < rounds : (double) clock() / CLOCKS_PER_SEC < seconds;
             done++)
                for (unsigned k = 0; k < ROUND; k++) {
                        uint32_t next = next_index(i);

                        sum += load_one(i, next);
                        i = next;
                }
        return sum;
}

int main(int argc, char *argv[]) {
        double seconds = argc > 1 ? atof(argv[1]) : 0.5;
        unsigned long rounds = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;

        array = malloc(ELEMENTS * sizeof(uint32_t));
        if (!array)
                return 1;
        /* every page its own: untouched pages would all be the one zero page, always cached */
        for (size_t k = 0; k < ELEMENTS; k++)
                array[k] = (uint32_t) k;
        uint64_t sum = hot_loop(seconds, rounds);

        /* the sum, so that the loads are not optimized away, and the CPU time the work took */
        printf("%llu %.6f\n", (unsigned long long) sum, (double) clock() / CLOCKS_PER_SEC);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loop of pmugate timing's tests (docs/TIMING.md): random loads from an array larger than
 * the caches, each in a function of its own (load_one, whose ret ends the timed block), as in
 * the LBR timing document's example; built a second time with -DPREFETCH, which prefetches the
 * next iteration's element first. Runs until it has used argv[1] seconds of CPU.
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
uint64_t hot_loop(double seconds);

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

__attribute__((noinline)) uint64_t hot_loop(double seconds) {
        uint64_t sum = 0;
        uint32_t i = 1;

        while ((double) clock() / CLOCKS_PER_SEC < seconds)
                for (unsigned k = 0; k < ROUND; k++) {
                        uint32_t next = next_index(i);

                        sum += load_one(i, next);
                        i = next;
                }
        return sum;
}

int main(int argc, char *argv[]) {
        double seconds = argc > 1 ? atof(argv[1]) : 0.5;

        array = calloc(ELEMENTS, sizeof(uint32_t));
        if (!array)
                return 1;
        for (size_t k = 0; k < ELEMENTS; k += 1024)
                array[k] = (uint32_t) k;
        printf("%llu\n", (unsigned long long) hot_loop(seconds));
        return 0;
}

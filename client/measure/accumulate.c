/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurement accumulators: one per CPU, the raw counts and enabled times summed over the
 * samples, allocated by programming (measure-engine.c, measure-perf.c) and read by results
 * (measure-result.c); and the clock the samples are timed by
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "measure/measure-internal.h"

int measure_accum_new(const pmugate_measure *m, CpuAccum **ret) {
        CpuAccum *a = calloc(m->n_cpus, sizeof(CpuAccum));

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_cpus; i++) {
                a[i].raw = calloc(m->n_programmed ?: 1, sizeof(uint64_t));
                a[i].enabled = calloc(m->n_programmed ?: 1, sizeof(double));
                if (!a[i].raw || !a[i].enabled) {
                        measure_accum_free(a, m->n_cpus);
                        return -ENOMEM;
                }
        }
        *ret = a;
        return 0;
}

void measure_accum_free(CpuAccum *a, size_t n_cpus) {
        for (size_t i = 0; a && i < n_cpus; i++) {
                free(a[i].raw);
                free(a[i].enabled);
        }
        free(a);
}

void measure_accum_copy(const pmugate_measure *m, CpuAccum *to, const CpuAccum *from) {
        for (size_t i = 0; i < m->n_cpus; i++) {
                memcpy(to[i].raw, from[i].raw, m->n_programmed * sizeof(uint64_t));
                memcpy(to[i].enabled, from[i].enabled, m->n_programmed * sizeof(double));
                to[i].total = from[i].total;
                to[i].wall = from[i].wall;
        }
}

uint64_t measure_now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

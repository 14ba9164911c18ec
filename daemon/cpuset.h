/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fixed-size CPU bitmaps: a caller's scope, a lease's CPUs
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pmugate-limits.h"

typedef struct CpuSet {
        uint64_t bits[PMUGATE_CPUS_MAX / 64];
} CpuSet;

static inline void cpuset_clear(CpuSet *s) {
        memset(s, 0, sizeof(*s));
}

static inline void cpuset_add(CpuSet *s, uint32_t cpu) {
        if (cpu < PMUGATE_CPUS_MAX)
                s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

static inline bool cpuset_has(const CpuSet *s, uint32_t cpu) {
        return cpu < PMUGATE_CPUS_MAX && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

static inline bool cpuset_is_empty(const CpuSet *s) {
        for (unsigned i = 0; i < PMUGATE_CPUS_MAX / 64; i++)
                if (s->bits[i])
                        return false;
        return true;
}

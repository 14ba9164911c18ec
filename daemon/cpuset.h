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

static inline void cpuset_remove(CpuSet *s, uint32_t cpu) {
        if (cpu < PMUGATE_CPUS_MAX)
                s->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

static inline bool cpuset_has(const CpuSet *s, uint32_t cpu) {
        return cpu < PMUGATE_CPUS_MAX && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

/* The first CPU in s at or after from, or PMUGATE_CPUS_MAX when there is none. Walks words,
 * so iterating a mostly empty set costs its size in words, not in bits. */
static inline uint32_t cpuset_next(const CpuSet *s, uint32_t from) {
        for (uint32_t w = from / 64; w < PMUGATE_CPUS_MAX / 64; w++) {
                uint64_t bits = s->bits[w];

                if (w == from / 64)
                        bits &= ~UINT64_C(0) << (from % 64);
                if (bits)
                        return w * 64 + (uint32_t) __builtin_ctzll(bits);
        }
        return PMUGATE_CPUS_MAX;
}

#define CPUSET_FOREACH(cpu, set) \
        for (uint32_t cpu = cpuset_next((set), 0); cpu < PMUGATE_CPUS_MAX; cpu = cpuset_next((set), cpu + 1))

/* Formats s as a CPU list ("0-3,8"), empty for an empty set. Returns 0 or -ENOBUFS. */
int cpuset_format(const CpuSet *s, char *buf, size_t size);

/* The longest text cpuset_format() can produce: every other CPU, up to 5 digits and a comma. */
#define CPUSET_FORMAT_MAX (PMUGATE_CPUS_MAX / 2 * 6 + 1)

static inline bool cpuset_is_empty(const CpuSet *s) {
        for (unsigned i = 0; i < PMUGATE_CPUS_MAX / 64; i++)
                if (s->bits[i])
                        return false;
        return true;
}

/* Whether every CPU of a is in b. */
static inline bool cpuset_is_subset(const CpuSet *a, const CpuSet *b) {
        for (unsigned i = 0; i < PMUGATE_CPUS_MAX / 64; i++)
                if (a->bits[i] & ~b->bits[i])
                        return false;
        return true;
}

static inline unsigned cpuset_count(const CpuSet *s) {
        unsigned n = 0;

        for (unsigned i = 0; i < PMUGATE_CPUS_MAX / 64; i++)
                n += (unsigned) __builtin_popcountll(s->bits[i]);
        return n;
}

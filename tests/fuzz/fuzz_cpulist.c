/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: CPU lists, as the daemon reads them from sysfs, cgroup cpuset files, grants and
 * the simulator configuration, and as the CLIs take them from their arguments
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cpulist.h"
#include "cpuset.h"
#include "fuzz_util.h"
#include "macro.h"
#include "pmugate-limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A second, smaller bound: a list that parses under the real one parses the same under this
 * one when all its CPUs fit, and is refused as out of range when one does not. */
#define SMALL_MAX_CPU 64U

static void assert_sorted_unique(const uint32_t *cpus, size_t n, uint32_t max_cpu) {
        fuzz_assert(n >= 1 && n <= max_cpu);
        for (size_t i = 0; i < n; i++) {
                fuzz_assert(cpus[i] < max_cpu);
                if (i > 0)
                        fuzz_assert(cpus[i - 1] < cpus[i]);
        }
}

static void assert_small_bound_agrees(const char *text, const uint32_t *cpus, size_t n) {
        _cleanup_free_ uint32_t *small = NULL;
        size_t n_small = 0;
        int r;

        r = cpulist_parse(text, SMALL_MAX_CPU, &small, &n_small);
        if (cpus[n - 1] >= SMALL_MAX_CPU) {
                fuzz_assert(r == -ERANGE && !small);
                return;
        }
        fuzz_assert(r == 0);
        fuzz_assert(n_small == n && memcmp(small, cpus, n * sizeof(*cpus)) == 0);
}

/* cpulist_format() and the daemon's cpuset_format() print the same set the same way, and the
 * text parses back to the same CPUs. */
static void assert_round_trip(const uint32_t *cpus, size_t n) {
        _cleanup_free_ char *text = malloc(CPUSET_FORMAT_MAX), *set_text = malloc(CPUSET_FORMAT_MAX);
        _cleanup_free_ char *exact = NULL;
        _cleanup_free_ uint32_t *again = NULL;
        size_t n_again = 0, len;
        CpuSet set;

        fuzz_assert(text && set_text);
        fuzz_assert(cpulist_format(cpus, n, text, CPUSET_FORMAT_MAX) == 0);
        len = strlen(text);
        fuzz_assert(len > 0 && strspn(text, "0123456789,-") == len);

        cpuset_clear(&set);
        for (size_t i = 0; i < n; i++)
                cpuset_add(&set, cpus[i]);
        fuzz_assert(cpuset_format(&set, set_text, CPUSET_FORMAT_MAX) == 0);
        fuzz_assert(strcmp(text, set_text) == 0);

        fuzz_assert(cpulist_parse(text, PMUGATE_CPUS_MAX, &again, &n_again) == 0);
        fuzz_assert(n_again == n && memcmp(again, cpus, n * sizeof(*cpus)) == 0);

        /* A buffer one byte short is refused, not overrun; one that fits exactly is enough. */
        exact = malloc(len + 1);
        fuzz_assert(exact);
        fuzz_assert(cpulist_format(cpus, n, exact, len) == -ENOBUFS);
        fuzz_assert(cpulist_format(cpus, n, exact, len + 1) == 0 && strcmp(exact, text) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_copy(data, size);
        _cleanup_free_ uint32_t *cpus = NULL;
        uint32_t *sentinel = (uint32_t *) (uintptr_t) 0x1;
        size_t n = SIZE_MAX;
        int r;

        cpus = sentinel;
        r = cpulist_parse(text, PMUGATE_CPUS_MAX, &cpus, &n);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ERANGE || r == -ENOMEM);
        if (r < 0) {
                /* Outputs untouched on failure. */
                fuzz_assert(cpus == sentinel && n == SIZE_MAX);
                cpus = NULL;
                if (r == -EINVAL) {
                        uint32_t *small = NULL;
                        size_t n_small;

                        r = cpulist_parse(text, SMALL_MAX_CPU, &small, &n_small);
                        fuzz_assert(r == -EINVAL || r == -ERANGE);
                }
                return 0;
        }
        assert_sorted_unique(cpus, n, PMUGATE_CPUS_MAX);
        assert_small_bound_agrees(text, cpus, n);
        assert_round_trip(cpus, n);
        return 0;
}

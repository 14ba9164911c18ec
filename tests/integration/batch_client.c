/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate's batches against a real pmugated, for test_protocol.py: "each" ops against the
 * same ops one by one, a reply in parts read back whole, and the limits the library enforces
 * before anything is sent. Prints "ok DESCRIPTION" or "not ok DESCRIPTION" per check.
 *
 * Usage: batch-client SOCKET CPU0 CPU1 (two CPUs it takes a lease on; on the simulated PMU, whose
 * TSC advances, so that the order of the results shows)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "pmugate/pmugate.h"
#include "pmugate-limits.h"

#define MSR_TSC 0x10U
#define MSR_PMC0 0xC1U
#define MSR_PERFEVTSEL0 0x186U

static int failures;

static void check(bool ok, const char *what) {
        printf("%s %s\n", ok ? "ok" : "not ok", what);
        failures += !ok;
}

static inline void batch_freep(pmugate_batch **b) {
        *b = pmugate_batch_free(*b);
}

static void check_each(pmugate *c, const uint32_t cpus[2]) {
        __attribute__((cleanup(batch_freep))) pmugate_batch *each = NULL, *single = NULL;
        const pmugate_step steps[] = {
                { .kind = PMUGATE_STEP_WRITE_BITS, .reg = MSR_PERFEVTSEL0, .value = 0x43, .mask = 0xFF },
                { .kind = PMUGATE_STEP_READ, .reg = MSR_PERFEVTSEL0 },
                { .kind = PMUGATE_STEP_WRITE, .reg = MSR_PMC0, .value = 0x1234 },
                { .kind = PMUGATE_STEP_READ, .reg = MSR_PMC0 },
        };
        bool same = true;
        int first;

        if (pmugate_batch_new(&each) < 0 || pmugate_batch_new(&single) < 0)
                exit(1);
        first = pmugate_batch_each_cpu(each, cpus, 2, steps, 4);
        check(first == 0 && pmugate_batch_size(each) == 8, "an each op of 4 steps on 2 CPUs has 8 results");
        for (size_t i = 0; i < 2; i++) {
                (void) pmugate_batch_write_msr_bits(single, cpus[i], MSR_PERFEVTSEL0, 0x43, 0xFF);
                (void) pmugate_batch_read_msr(single, cpus[i], MSR_PERFEVTSEL0);
                (void) pmugate_batch_write_msr(single, cpus[i], MSR_PMC0, 0x1234);
                (void) pmugate_batch_read_msr(single, cpus[i], MSR_PMC0);
        }
        check(pmugate_batch_run(c, each) == 0 && pmugate_batch_run(c, single) == 0, "both batches run");
        for (size_t i = 0; i < 8; i++) {
                uint64_t a = 0, b = 0;

                same = same && pmugate_batch_result(each, i, &a) == 0 && pmugate_batch_result(single, i, &b) == 0 &&
                       a == b;
        }
        check(same, "each op results equal the same ops one by one, CPU by CPU");
        check(pmugate_batch_each_cpu(each, cpus, 2, steps, PMUGATE_EACH_OPS_MAX + 1) == -E2BIG,
              "more steps than the daemon takes are refused before sending");
}

static void check_parts(pmugate *c, const uint32_t cpus[2]) {
        __attribute__((cleanup(batch_freep))) pmugate_batch *b = NULL;
        uint32_t list[PMUGATE_LIST_MAX], regs[PMUGATE_OPS_PER_BATCH_MAX / PMUGATE_LIST_MAX];
        uint64_t previous = 0;
        bool rising = true;
        int r;

        if (pmugate_batch_new(&b) < 0)
                exit(1);
        for (size_t i = 0; i < PMUGATE_LIST_MAX; i++)
                list[i] = cpus[i % 2];
        for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
                regs[i] = MSR_TSC;
        r = pmugate_batch_read_msrs(b, list, PMUGATE_LIST_MAX, regs, sizeof(regs) / sizeof(regs[0]));
        check(r == 0 && pmugate_batch_size(b) == PMUGATE_OPS_PER_BATCH_MAX, "a read of 131072 results is built");
        check(pmugate_batch_read_msr(b, cpus[0], MSR_TSC) == -E2BIG, "one more op is refused before sending");
        r = pmugate_batch_run(c, b);
        check(r == 0, "the batch runs and its 32 parts are read");
        /* the same CPU's TSC only goes up, through every part */
        for (size_t i = 0; r == 0 && i < PMUGATE_OPS_PER_BATCH_MAX; i += 2 * (sizeof(regs) / sizeof(regs[0]))) {
                uint64_t v = 0;

                rising = rising && pmugate_batch_result(b, i, &v) == 0 && v >= previous;
                previous = v;
        }
        check(r == 0 && rising && pmugate_batch_result(b, PMUGATE_OPS_PER_BATCH_MAX - 1, NULL) == 0 &&
              pmugate_batch_result(b, PMUGATE_OPS_PER_BATCH_MAX, NULL) == -EINVAL,
              "every result arrived, in order, and none past the last");
        check(pmugate_batch_run(c, b) == 0, "the same batch runs again on the same connection");
}

static void check_request_size(void) {
        __attribute__((cleanup(batch_freep))) pmugate_batch *b = NULL;
        size_t added = 0;
        int r;

        if (pmugate_batch_new(&b) < 0)
                exit(1);
        /* single writes of 64-bit values to 32-bit registers: 21 bytes each */
        while ((r = pmugate_batch_write_msr(b, 4000000000U, 4000000000U, UINT64_MAX)) >= 0)
                added++;
        check(r == -E2BIG && added > 2000 && added < 4096 && pmugate_batch_size(b) == added,
              "single ops past the request size are refused before sending, the batch kept as it was");
}

int main(int argc, char **argv) {
        pmugate *c = NULL;
        uint32_t cpus[2];

        if (argc != 4) {
                fprintf(stderr, "usage: batch-client SOCKET CPU0 CPU1\n");
                return 2;
        }
        cpus[0] = (uint32_t) strtoul(argv[2], NULL, 10);
        cpus[1] = (uint32_t) strtoul(argv[3], NULL, 10);
        if (pmugate_connect(argv[1], &c) < 0) {
                fprintf(stderr, "batch-client: cannot connect to %s\n", argv[1]);
                return 1;
        }
        check(pmugate_lease(c, cpus, 2) == 0, "a lease on both CPUs");
        check_each(c, cpus);
        check_parts(c, cpus);
        check_request_size();
        pmugate_disconnect(c);
        return failures > 0;
}

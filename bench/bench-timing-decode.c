/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Benchmark: pmugate timing's decode cost per LBR entry. A ring in the perf mmap layout (a
 * memfd, as the simulator's) is filled with 32-entry branch samples as the kernel writes them,
 * some wrapping the ring's end, and drained through timing_ring_drain() (framing, every check,
 * the decode into a TimingRecord, a callback summing the entries' cycles); against two floors
 * measured in the same run on the same bytes: a memcpy of them, and summing the entries'
 * cycles straight from the buffer with no checks at all. Not a test: it prints, never fails
 * on numbers.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "timing/timing-ring.h"

#define ENTRIES 32U
/* one sample: header, ip, pid/tid, time, cpu/res, period, nr, 32 entries */
#define SAMPLE_BYTES (8U + 40U + 8U + ENTRIES * 24U)
/* samples per lap: most of the ring, so that each lap starts at a new offset and some
 * sample straddles the end */
#define SAMPLES_PER_LAP ((TIMING_RING_DATA_BYTES * 7U / 8U) / SAMPLE_BYTES)

static uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static int compare_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* ns per entry: median and p90 of the laps */
static void report(const char *row, uint64_t *ns, size_t n, double *ret_median) {
        double per = (double) (SAMPLES_PER_LAP * ENTRIES);

        qsort(ns, n, sizeof(*ns), compare_u64);
        *ret_median = (double) ns[n / 2] / per;
        printf("| %-58s | %9.3f | %9.3f |\n", row, *ret_median, (double) ns[n * 9 / 10] / per);
}

/* One sample as the kernel writes it (TIMING_SAMPLE_TYPE_BRANCHES). */
static void write_sample(uint8_t *p, uint64_t i) {
        struct perf_event_header h = {
                .type = PERF_RECORD_SAMPLE,
                .misc = PERF_RECORD_MISC_USER,
                .size = SAMPLE_BYTES,
        };
        /* ip, pid and tid, time, cpu and res, period, nr */
        uint64_t words[6] = {
                0x555555555189 + (i & 15), (uint64_t) 4242 << 32 | 4242, i, (uint64_t) (i & 1), 20000,
                ENTRIES,
        };

        memcpy(p, &h, sizeof(h));
        memcpy(p + 8, words, sizeof(words));
        for (unsigned e = 0; e < ENTRIES; e++) {
                struct perf_branch_entry b = {
                        .from = 0x555555555189 - 16 * e,
                        .to = 0x555555555170 - 16 * e,
                        .cycles = (uint16_t) (30 + (i * 7 + e * 13) % 300),
                        .predicted = 1,
                };

                memcpy(p + 56 + 24 * e, &b, sizeof(b));
        }
}

static int sum_cycles(const TimingRecord *rec, void *userdata) {
        uint64_t *sum = userdata;

        if (rec->kind == TIMING_RECORD_SAMPLE)
                for (size_t e = 0; e < rec->sample.n_branches; e++)
                        *sum += rec->sample.branches[e].cycles;
        return 0;
}

/* The floor: the entries' cycles summed from a lap's bytes laid out flat, trusting every
 * size and count. */
static uint64_t sum_straight(const uint8_t *flat, size_t n) {
        uint64_t sum = 0;

        for (size_t off = 0; off < n;) {
                struct perf_event_header h;
                uint64_t nr;

                memcpy(&h, flat + off, sizeof(h));
                memcpy(&nr, flat + off + 48, sizeof(nr));
                for (uint64_t e = 0; e < nr; e++) {
                        struct perf_branch_entry b;

                        memcpy(&b, flat + off + 56 + 24 * e, sizeof(b));
                        sum += b.cycles;
                }
                off += h.size;
        }
        return sum;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "laps", required_argument, NULL, 'l' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        size_t laps = 400, page = (size_t) sysconf(_SC_PAGESIZE), lap_bytes = SAMPLES_PER_LAP * SAMPLE_BYTES;
        _cleanup_free_ uint64_t *t_decode = NULL, *t_copy = NULL, *t_straight = NULL;
        _cleanup_free_ uint8_t *flat = NULL, *copy = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct perf_event_mmap_page *meta;
        TimingRing *ring = NULL;
        uint8_t *map, *data;
        uint64_t head = 0, sum_decode = 0, sum_floor = 0, sample_index = 0, malformed = 0;
        double decode, floor_copy, floor_straight;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'l':
                        laps = strtoul(optarg, NULL, 10);
                        break;
                default:
                        fprintf(stderr, "usage: bench-timing-decode [--laps=N]\n");
                        return c == 'h' ? EXIT_SUCCESS : EXIT_FAILURE;
                }
        if (laps < 10 || laps > 1000000) {
                fprintf(stderr, "bench-timing-decode: --laps must be 10 to 1000000\n");
                return EXIT_FAILURE;
        }
        t_decode = calloc(laps, sizeof(uint64_t));
        t_copy = calloc(laps, sizeof(uint64_t));
        t_straight = calloc(laps, sizeof(uint64_t));
        flat = malloc(lap_bytes);
        copy = malloc(lap_bytes);
        fd = memfd_create("bench-timing-ring", MFD_CLOEXEC);
        if (!t_decode || !t_copy || !t_straight || !flat || !copy || fd < 0 ||
            ftruncate(fd, (off_t) (page + TIMING_RING_DATA_BYTES)) < 0) {
                fprintf(stderr, "bench-timing-decode: cannot set up: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }
        map = mmap(NULL, page + TIMING_RING_DATA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return EXIT_FAILURE;
        meta = (struct perf_event_mmap_page *) map;
        meta->data_offset = page;
        meta->data_size = TIMING_RING_DATA_BYTES;
        data = map + page;
        if (timing_ring_map(fd, TIMING_SAMPLE_TYPE_BRANCHES, &ring) < 0) {
                fprintf(stderr, "bench-timing-decode: cannot map the ring\n");
                return EXIT_FAILURE;
        }

        for (size_t lap = 0; lap < laps; lap++) {
                uint64_t t0, sum_lap = 0;
                int k;

                /* the producer's part, not timed: a lap of samples at the head, wrapping */
                for (size_t s = 0; s < SAMPLES_PER_LAP; s++)
                        write_sample(flat + s * SAMPLE_BYTES, sample_index++);
                for (size_t i = 0; i < lap_bytes;) {
                        size_t off = (size_t) ((head + i) % TIMING_RING_DATA_BYTES),
                               n = MIN(lap_bytes - i, TIMING_RING_DATA_BYTES - off);

                        memcpy(data + off, flat + i, n);
                        i += n;
                }
                head += lap_bytes;
                __atomic_store_n(&meta->data_head, head, __ATOMIC_RELEASE);

                t0 = now_ns();
                k = timing_ring_drain(ring, sum_cycles, &sum_lap, &malformed);
                t_decode[lap] = now_ns() - t0;
                if (k != (int) SAMPLES_PER_LAP || malformed != 0) {
                        fprintf(stderr, "bench-timing-decode: drained %d records, %llu malformed\n", k,
                                (unsigned long long) malformed);
                        return EXIT_FAILURE;
                }
                sum_decode += sum_lap;

                t0 = now_ns();
                memcpy(copy, flat, lap_bytes);
                __asm__ volatile("" : : "r"(copy) : "memory");
                t_copy[lap] = now_ns() - t0;

                t0 = now_ns();
                sum_floor += sum_straight(flat, lap_bytes);
                t_straight[lap] = now_ns() - t0;
        }
        if (sum_decode != sum_floor) {
                fprintf(stderr, "bench-timing-decode: the decoded cycles differ from the bytes' "
                        "(%llu, %llu)\n", (unsigned long long) sum_decode, (unsigned long long) sum_floor);
                return EXIT_FAILURE;
        }
        ring = timing_ring_unmap(ring);

        printf("%zu laps of %u samples of %u entries (%zu bytes a lap, %u-byte ring)\n\n", laps,
               (unsigned) SAMPLES_PER_LAP, ENTRIES, lap_bytes, TIMING_RING_DATA_BYTES);
        printf("| %-58s | %9s | %9s |\n|---|---:|---:|\n", "row (per LBR entry)", "median ns", "p90 ns");
        report("timing_ring_drain: frame, check, decode, sum the cycles", t_decode, laps, &decode);
        report("floor: memcpy of the same bytes", t_copy, laps, &floor_copy);
        report("floor: sum the cycles straight from the bytes, no checks", t_straight, laps,
               &floor_straight);
        printf("\ndecode / memcpy: %.2f; decode / straight sum: %.2f; %.1f M entries/s decoded\n",
               decode / floor_copy, decode / floor_straight, 1000.0 / decode);
        return EXIT_SUCCESS;
}

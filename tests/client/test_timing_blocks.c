/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing's block analysis on synthetic branch stacks: blocks from consecutive entries,
 * file-relative keys merging processes and runs, exact medians and nearest-rank p90 of known
 * distributions, histograms with integer bins widened past the bound, entries without cycles,
 * backwards and overlong pairs counted apart, forks inheriting mappings, IPs per file offset.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "pmugate-limits.h"
#include "timing/timing-blocks.h"

/* A PIE's text as the kernel maps it: run-time 0x555555555000, file offset 0x1000. */
#define TEXT 0x555555555000ULL
#define TEXT_LEN 0x2000ULL
#define PGOFF 0x1000ULL

static TimingAnalysis *analysis(void) {
        TimingAnalysis *a = NULL;

        assert_int_equal(timing_analysis_new(&a), 0);
        return a;
}

static void map(TimingAnalysis *a, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                const char *path, uint64_t ino) {
        TimingMapping m = {
                .pid = pid, .tid = pid, .start = start, .len = len, .pgoff = pgoff, .maj = 8, .ino = ino,
        };

        (void) snprintf(m.path, sizeof(m.path), "%s", path);
        assert_int_equal(timing_analysis_add_mapping(a, &m), 0);
}

/* A sample of pid whose stack is the loop's two branches, newest first: the back edge at
 * 0x189 (to 0x170) ending the block 0x170-0x189 with c0 cycles, then the call at 0x1a0 ...
 * Offsets are run-time base + offset. */
static void sample(TimingAnalysis *a, uint32_t pid, uint64_t base, const uint64_t (*entries)[3], size_t n) {
        TimingSample s = { .pid = pid, .tid = pid, .ip = base + entries[0][0], .n_branches = n };

        for (size_t i = 0; i < n; i++)
                s.branches[i] = (TimingBranch) { .from = base + entries[i][0], .to = base + entries[i][1],
                                                 .cycles = (uint16_t) entries[i][2] };
        assert_int_equal(timing_analysis_add_sample(a, &s), 0);
}

static const TimingBlock *find(const TimingAnalysis *a, uint64_t start, uint64_t end) {
        for (size_t i = 0; i < timing_analysis_n_blocks(a); i++) {
                const TimingBlock *b = timing_analysis_block(a, i);

                if (b->start == start && b->end == end)
                        return b;
        }
        return NULL;
}

static void test_blocks_from_consecutive_entries(void **state) {
        TimingAnalysis *a = analysis();
        /* newest first: e0 ends [e1.to, e0.from], e1 ends [e2.to, e1.from]; e2 ends nothing */
        static const uint64_t stack[][3] = {
                { 0x1189, 0x1170, 40 }, { 0x1160, 0x1150, 7 }, { 0x1140, 0x1120, 99 },
        };
        const TimingBlock *b;

        map(a, 100, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 1);
        sample(a, 100, TEXT - 0x1000, stack, 3);
        assert_int_equal(timing_analysis_finish(a), 0);
        assert_int_equal(timing_analysis_n_blocks(a), 2);
        b = find(a, 0x1150, 0x1189);
        assert_non_null(b);
        assert_int_equal(b->module, 0);
        assert_int_equal(b->stats.n, 1);
        assert_int_equal(b->stats.min, 40);
        assert_int_equal(b->address_start, TEXT + 0x150);
        b = find(a, 0x1120, 0x1160);
        assert_non_null(b);
        assert_int_equal(b->stats.min, 7);
        assert_string_equal(timing_analysis_module(a, 0)->path, "/bin/prog");
        assert_null(timing_analysis_module(a, TIMING_MODULE_NONE));
        assert_int_equal(timing_analysis_counters(a)->entries, 3);
        assert_int_equal(timing_analysis_counters(a)->blocks, 2);
        assert_int_equal(timing_analysis_n_ips(a), 1);
        assert_int_equal(timing_analysis_ip(a, 0)->offset, 0x1189);
        timing_analysis_free(a);
}

/* Two processes of the same file at different bases (ASLR) and a second run: one block. */
static void test_file_relative_keys_merge(void **state) {
        TimingAnalysis *a = analysis();
        static const uint64_t stack[][3] = { { 0x1189, 0x1170, 30 }, { 0x11a0, 0x1170, 5 } };
        const TimingBlock *b;

        map(a, 100, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 1);
        map(a, 200, 0x7f0000001000ULL, TEXT_LEN, PGOFF, "/bin/prog", 1);
        /* the same name, another file (rebuilt): another module */
        map(a, 300, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 2);
        sample(a, 100, TEXT - 0x1000, stack, 2);
        sample(a, 200, 0x7f0000000000ULL, stack, 2);
        sample(a, 300, TEXT - 0x1000, stack, 2);
        assert_int_equal(timing_analysis_finish(a), 0);
        assert_int_equal(timing_analysis_n_blocks(a), 2);
        b = timing_analysis_block(a, 0);
        assert_int_equal(b->seen, 2);
        assert_int_equal(b->module, 0);
        assert_int_equal(b->start, 0x1170);
        assert_int_equal(b->end, 0x1189);
        b = timing_analysis_block(a, 1);
        assert_int_equal(b->seen, 1);
        assert_int_equal(b->module, 1);
        timing_analysis_free(a);
}

/* A uniform distribution 1..999 (odd n), then 1..1000 (even n): medians and p90 exact. */
static void test_known_distributions(void **state) {
        uint16_t c[1000];
        TimingStats s;

        for (int i = 0; i < 999; i++)
                c[i] = (uint16_t) (999 - i);
        assert_int_equal(timing_stats_compute(c, 999, &s), 0);
        assert_int_equal(s.min, 1);
        assert_int_equal(s.max, 999);
        assert_true(s.median == 500.0);
        assert_true(s.mean == 500.0);
        /* nearest rank: ceil(899.1) = 900th smallest */
        assert_true(s.p90 == 900.0);
        timing_stats_done(&s);

        for (int i = 0; i < 1000; i++)
                c[i] = (uint16_t) ((i * 7919) % 1000 + 1);
        assert_int_equal(timing_stats_compute(c, 1000, &s), 0);
        assert_true(s.median == 500.5);
        assert_true(s.p90 == 900.0);
        assert_true(fabs(s.mean - 500.5) < 1e-12);
        timing_stats_done(&s);

        /* two spikes, 70 % at 32 and 30 % at 300: the median is the lower spike's */
        for (int i = 0; i < 1000; i++)
                c[i] = i % 10 < 7 ? 32 : 300;
        assert_int_equal(timing_stats_compute(c, 1000, &s), 0);
        assert_true(s.median == 32.0);
        assert_true(s.p90 == 300.0);
        assert_int_equal(s.hist_width, 1);
        assert_int_equal(s.hist_lo, 32);
        assert_int_equal(s.n_bins, 300 - 32 + 1);
        assert_int_equal(s.bins[0], 700);
        assert_int_equal(s.bins[300 - 32], 300);
        timing_stats_done(&s);

        /* one count: everything is it */
        c[0] = 17;
        assert_int_equal(timing_stats_compute(c, 1, &s), 0);
        assert_true(s.median == 17.0 && s.p90 == 17.0 && s.mean == 17.0);
        assert_int_equal(s.n_bins, 1);
        timing_stats_done(&s);

        assert_int_equal(timing_stats_compute(c, 0, &s), 0);
        assert_int_equal(s.n, 0);
        assert_null(s.bins);
}

/* A range wider than the bound gets bins of the smallest width that fits, starting at a
 * multiple of it, and every count lands in one. */
static void test_histogram_widened(void **state) {
        uint16_t c[] = { 10, 11, 600, 2000, 65535, 1 };
        TimingStats s;
        uint64_t total = 0;

        assert_int_equal(timing_stats_compute(c, ELEMENTSOF(c), &s), 0);
        assert_true(s.n_bins <= TIMING_HISTOGRAM_BINS_MAX);
        assert_true(s.hist_width > 1);
        assert_int_equal(s.hist_lo % s.hist_width, 0);
        assert_true(s.hist_lo <= 1);
        assert_true(s.hist_lo + (uint64_t) s.n_bins * s.hist_width > 65535);
        /* one less would not fit */
        assert_true((65535 - (1 / (s.hist_width - 1)) * (s.hist_width - 1)) / (s.hist_width - 1) + 1 >
                    TIMING_HISTOGRAM_BINS_MAX);
        for (size_t i = 0; i < s.n_bins; i++)
                total += s.bins[i];
        assert_int_equal(total, ELEMENTSOF(c));
        assert_int_equal(s.bins[0], 3);
        timing_stats_done(&s);

        /* exactly the bound of values: width 1 */
        c[0] = 100;
        c[1] = 100 + TIMING_HISTOGRAM_BINS_MAX - 1;
        assert_int_equal(timing_stats_compute(c, 2, &s), 0);
        assert_int_equal(s.hist_width, 1);
        assert_int_equal(s.n_bins, TIMING_HISTOGRAM_BINS_MAX);
        timing_stats_done(&s);
}

/* Cycles 0: seen, not timed, counted; a block seen only so has no statistics. */
static void test_no_cycles(void **state) {
        TimingAnalysis *a = analysis();
        static const uint64_t zero[][3] = { { 0x1189, 0x1170, 0 }, { 0x11a0, 0x1170, 0 } };
        static const uint64_t timed[][3] = { { 0x1189, 0x1170, 12 }, { 0x11a0, 0x1170, 0 } };
        const TimingBlock *b;

        map(a, 1, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 1);
        sample(a, 1, TEXT - 0x1000, zero, 2);
        assert_int_equal(timing_analysis_finish(a), 0);
        b = timing_analysis_block(a, 0);
        assert_int_equal(b->seen, 1);
        assert_int_equal(b->no_cycles, 1);
        assert_int_equal(b->stats.n, 0);
        assert_int_equal(timing_analysis_counters(a)->no_cycles, 1);
        timing_analysis_free(a);

        a = analysis();
        map(a, 1, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 1);
        sample(a, 1, TEXT - 0x1000, zero, 2);
        sample(a, 1, TEXT - 0x1000, timed, 2);
        assert_int_equal(timing_analysis_finish(a), 0);
        b = timing_analysis_block(a, 0);
        assert_int_equal(b->seen, 2);
        assert_int_equal(b->no_cycles, 1);
        assert_int_equal(b->stats.n, 1);
        assert_int_equal(b->stats.max, 12);
        timing_analysis_free(a);
}

/* Pairs that make no block: start after end, longer than the bound, across mappings; the
 * unmapped one is a block keyed by its address. */
static void test_not_blocks(void **state) {
        TimingAnalysis *a = analysis();
        static const uint64_t backwards[][3] = { { 0x1100, 0x1170, 5 }, { 0x1200, 0x1180, 5 } };
        static const uint64_t too_long[][3] = {
                { 0x1000 + TIMING_BLOCK_BYTES_MAX + 0x10, 0x1170, 5 }, { 0x1200, 0x1010, 5 },
        };
        static const uint64_t across[][3] = { { 0x1100, 0x1170, 5 }, { 0x1200, 0x0ff0, 5 } };
        static const uint64_t unmapped[][3] = { { 0x9100, 0x9170, 5 }, { 0x9000, 0x9050, 5 } };
        const TimingCounters *k;

        map(a, 1, TEXT, 0x8000, PGOFF, "/bin/prog", 1);
        map(a, 1, TEXT - 0x1000, 0x1000, 0, "/bin/prog", 1);
        sample(a, 1, TEXT - 0x1000, backwards, 2);
        sample(a, 1, TEXT - 0x1000, too_long, 2);
        sample(a, 1, TEXT - 0x1000, across, 2);
        sample(a, 1, TEXT, unmapped, 2);
        assert_int_equal(timing_analysis_finish(a), 0);
        k = timing_analysis_counters(a);
        assert_int_equal(k->backwards, 1);
        assert_int_equal(k->too_long, 1);
        assert_int_equal(k->across_mappings, 1);
        assert_int_equal(k->blocks, 1);
        assert_int_equal(timing_analysis_n_blocks(a), 1);
        assert_int_equal(timing_analysis_block(a, 0)->module, TIMING_MODULE_NONE);
        assert_int_equal(timing_analysis_block(a, 0)->start, TEXT + 0x9050);
        timing_analysis_free(a);
}

/* A forked child's samples are named through its parent's mappings; an exec's new mapping
 * replaces the old at the same address. */
static void test_fork_and_exec(void **state) {
        TimingAnalysis *a = analysis();
        static const uint64_t stack[][3] = { { 0x1189, 0x1170, 9 }, { 0x11a0, 0x1170, 1 } };
        TimingRecord fork = { .kind = TIMING_RECORD_FORK, .pid = 2, .tid = 2, .task = { .ppid = 1, .ptid = 1 } };

        map(a, 1, TEXT, TEXT_LEN, PGOFF, "/bin/sh", 1);
        assert_int_equal(timing_analysis_add_record(a, &fork), 0);
        sample(a, 2, TEXT - 0x1000, stack, 2);
        map(a, 2, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 7);
        sample(a, 2, TEXT - 0x1000, stack, 2);
        sample(a, 2, TEXT - 0x1000, stack, 2);
        assert_int_equal(timing_analysis_finish(a), 0);
        assert_int_equal(timing_analysis_n_blocks(a), 2);
        assert_string_equal(timing_analysis_module(a, timing_analysis_block(a, 0)->module)->path,
                            "/bin/prog");
        assert_int_equal(timing_analysis_block(a, 0)->seen, 2);
        assert_string_equal(timing_analysis_module(a, timing_analysis_block(a, 1)->module)->path, "/bin/sh");
        assert_int_equal(timing_analysis_counters(a)->unmapped, 0);
        timing_analysis_free(a);
}

/* A mapping read after samples in it (another CPU's ring, a round later): the samples'
 * blocks and IPs are placed in its file at the end and merged with the later ones; another
 * process's same addresses stay its own. */
static void test_late_mapping(void **state) {
        TimingAnalysis *a = analysis();
        static const uint64_t stack[][3] = { { 0x1189, 0x1170, 9 }, { 0x11a0, 0x1170, 1 } };
        static const uint64_t later[][3] = { { 0x1189, 0x1170, 11 }, { 0x11a0, 0x1170, 1 } };
        const TimingBlock *b;

        sample(a, 1, TEXT - 0x1000, stack, 2);
        sample(a, 2, TEXT - 0x1000, stack, 2);
        map(a, 1, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 1);
        sample(a, 1, TEXT - 0x1000, later, 2);
        assert_int_equal(timing_analysis_finish(a), 0);
        assert_int_equal(timing_analysis_n_blocks(a), 2);
        b = timing_analysis_block(a, 0);
        assert_int_equal(b->module, 0);
        assert_int_equal(b->start, 0x1170);
        assert_int_equal(b->seen, 2);
        assert_int_equal(b->stats.n, 2);
        assert_int_equal(b->stats.min, 9);
        assert_int_equal(b->stats.max, 11);
        b = timing_analysis_block(a, 1);
        assert_int_equal(b->module, TIMING_MODULE_NONE);
        assert_int_equal(b->pid, 2);
        assert_int_equal(b->seen, 1);
        assert_int_equal(timing_analysis_counters(a)->unmapped, 2);
        assert_int_equal(timing_analysis_n_ips(a), 2);
        assert_int_equal(timing_analysis_ip(a, 0)->samples, 2);
        assert_int_equal(timing_analysis_ip(a, 0)->module, 0);
        timing_analysis_free(a);
}

/* IP mode: samples per file offset, most first; LOST and THROTTLE counted. */
static void test_ips(void **state) {
        TimingAnalysis *a = analysis();
        TimingRecord lost = { .kind = TIMING_RECORD_LOST, .lost = 5 };
        TimingRecord throttle = { .kind = TIMING_RECORD_THROTTLE };

        map(a, 1, TEXT, TEXT_LEN, PGOFF, "/bin/prog", 1);
        for (int i = 0; i < 10; i++) {
                TimingRecord r = { .kind = TIMING_RECORD_SAMPLE,
                                   .sample = { .pid = 1, .tid = 1, .ip = TEXT + (i < 7 ? 0x10 : 0x20) } };

                assert_int_equal(timing_analysis_add_record(a, &r), 0);
        }
        assert_int_equal(timing_analysis_add_record(a, &lost), 0);
        assert_int_equal(timing_analysis_add_record(a, &throttle), 0);
        assert_int_equal(timing_analysis_finish(a), 0);
        assert_int_equal(timing_analysis_n_ips(a), 2);
        assert_int_equal(timing_analysis_ip(a, 0)->offset, PGOFF + 0x10);
        assert_int_equal(timing_analysis_ip(a, 0)->samples, 7);
        assert_int_equal(timing_analysis_ip(a, 1)->samples, 3);
        assert_int_equal(timing_analysis_counters(a)->samples_without_branches, 10);
        assert_int_equal(timing_analysis_counters(a)->lost, 5);
        assert_int_equal(timing_analysis_counters(a)->throttled, 1);
        assert_int_equal(timing_analysis_n_blocks(a), 0);
        timing_analysis_free(a);
}

/* Many blocks: the hash table grows and every key keeps its own counts. */
static void test_many_blocks(void **state) {
        TimingAnalysis *a = analysis();
        size_t n = 5000;

        map(a, 1, TEXT, 0x100000, PGOFF, "/bin/prog", 1);
        for (size_t k = 0; k < 3; k++)
                for (size_t i = 0; i < n; i++) {
                        uint64_t stack[2][3] = { { 0x1000 + 16 * i + 8, 0x1000, i % 100 + 1 },
                                                 { 0x5, 0x1000 + 16 * i, 1 } };

                        sample(a, 1, TEXT - 0x1000, (const uint64_t (*)[3]) stack, 2);
                }
        assert_int_equal(timing_analysis_finish(a), 0);
        assert_int_equal(timing_analysis_n_blocks(a), n);
        for (size_t i = 0; i < n; i++) {
                const TimingBlock *b = timing_analysis_block(a, i);

                assert_int_equal(b->seen, 3);
                assert_int_equal(b->end - b->start, 8);
                assert_int_equal(b->stats.min, (b->start - 0x1000) / 16 % 100 + 1);
        }
        timing_analysis_free(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_blocks_from_consecutive_entries),
                cmocka_unit_test(test_file_relative_keys_merge),
                cmocka_unit_test(test_known_distributions),
                cmocka_unit_test(test_histogram_widened),
                cmocka_unit_test(test_no_cycles),
                cmocka_unit_test(test_not_blocks),
                cmocka_unit_test(test_fork_and_exec),
                cmocka_unit_test(test_late_mapping),
                cmocka_unit_test(test_ips),
                cmocka_unit_test(test_many_blocks),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing's analysis: basic blocks and their cycles from LBR branch stacks, and sampled
 * IPs, keyed by the file they were mapped from so that runs, processes and threads merge
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timing/timing-record.h"

/* A block or IP in no mapping the records named (JIT code, a mapping the recording missed): it
 * is keyed by its run-time address instead of a file offset. */
#define TIMING_MODULE_NONE UINT32_MAX

/* A file mappings came from, by its name and identity (the kernel's device and inode), and
 * the first mapping of it seen (where its file offsets were at run time, for naming them). */
typedef struct TimingModule {
        char path[TIMING_PATH_MAX];
        uint32_t maj, min;
        uint64_t ino;
        TimingMapping first;
} TimingModule;

/* The statistics of one block's cycle counts. The median is the mean of the two middle counts
 * for an even number, so exact; p90 is the nearest rank (the ceil(0.9 n)-th smallest). The
 * histogram counts cycles in n_bins bins of width cycles each, bin k holding lo + k * width
 * to lo + (k + 1) * width - 1: width 1 when the counts span at most TIMING_HISTOGRAM_BINS_MAX
 * values, else the smallest width that fits them in that many bins (lo a multiple of it). */
typedef struct TimingStats {
        uint64_t n;                     /* counts with cycles; 0: every field below is unknown */
        uint32_t min, max;
        double median, mean, p90;
        uint32_t hist_lo, hist_width;
        size_t n_bins;
        uint64_t *bins;
} TimingStats;

/* A basic block: the instructions from start to end (the address of the branch that ended it,
 * which it includes), as offsets in module's file, or run-time addresses for TIMING_MODULE_NONE.
 * address_start and address_end are those of one sighting, pid's, for naming it in that run. */
typedef struct TimingBlock {
        uint32_t module;
        uint64_t start, end;
        uint64_t address_start, address_end;
        uint32_t pid;
        uint64_t seen;                  /* LBR entries that ended this block */
        uint64_t no_cycles;             /* of them, with no cycle count (0: not recorded) */
        TimingStats stats;              /* of the others, after timing_analysis_finish() */
        uint16_t *cycles;               /* the counts, until timing_analysis_finish() */
        size_t n_cycles, n_cycles_allocated;
} TimingBlock;

/* A sampled IP (IP mode; in branch mode the sample's IP too). */
typedef struct TimingIp {
        uint32_t module;
        uint64_t offset;                /* in module's file, or the run-time address */
        uint64_t address;               /* one run-time address of it, pid's */
        uint32_t pid;
        uint64_t samples;
} TimingIp;

/* What the stream held besides blocks, and what was not a block. */
typedef struct TimingCounters {
        uint64_t samples;
        uint64_t samples_without_branches;      /* branch mode: an empty stack */
        uint64_t entries;                       /* LBR entries read, each sample's oldest too */
        uint64_t blocks;                        /* entries that made a block */
        uint64_t no_cycles;                     /* of those, without cycles */
        uint64_t backwards;                     /* start after end: no block */
        uint64_t too_long;                      /* longer than TIMING_BLOCK_BYTES_MAX: no block */
        uint64_t across_mappings;               /* start and end in different mappings */
        uint64_t unmapped;                      /* blocks and IPs in no known mapping */
        uint64_t cycles_dropped;                /* counts past TIMING_CYCLES_KEPT_MAX, not kept */
        uint64_t blocks_dropped;                /* new blocks past TIMING_BLOCKS_MAX */
        uint64_t mappings_dropped;              /* past TIMING_ANALYSIS_MAPPINGS_MAX */
        uint64_t lost;                          /* records the kernel dropped (LOST) */
        uint64_t throttled;                     /* THROTTLE records: sampling paused */
        uint64_t mappings;
} TimingCounters;

typedef struct TimingAnalysis TimingAnalysis;

int timing_analysis_new(TimingAnalysis **ret);
/* NULL-safe; returns NULL. */
TimingAnalysis *timing_analysis_free(TimingAnalysis *a);
static inline void timing_analysis_freep(TimingAnalysis **a) {
        *a = timing_analysis_free(*a);
}

/* Feeds one decoded record: a sample, a mapping, a fork (the child inherits its parent's
 * mappings: the kernel reports none for it), LOST and THROTTLE (counted); others are skipped.
 * Records are to come in time order. Returns 0 or -ENOMEM. */
int timing_analysis_add_record(TimingAnalysis *a, const TimingRecord *rec);
int timing_analysis_add_mapping(TimingAnalysis *a, const TimingMapping *m);
int timing_analysis_add_fork(TimingAnalysis *a, uint32_t parent_pid, uint32_t child_pid);
/* A sample: its IP, and in branch mode each entry i (newest first) but the oldest ends the
 * block that began at entry i + 1's target, with entry i's cycles. */
int timing_analysis_add_sample(TimingAnalysis *a, const TimingSample *s);

/* Computes every block's statistics and frees the kept counts; orders blocks by how often
 * they were seen and IPs by samples, most first (ties by module and offset). Nothing may be
 * added afterwards. Returns 0 or -ENOMEM. */
int timing_analysis_finish(TimingAnalysis *a);

size_t timing_analysis_n_blocks(const TimingAnalysis *a);
const TimingBlock *timing_analysis_block(const TimingAnalysis *a, size_t i);
size_t timing_analysis_n_ips(const TimingAnalysis *a);
const TimingIp *timing_analysis_ip(const TimingAnalysis *a, size_t i);
/* The module of index i, or NULL (TIMING_MODULE_NONE, or past them). */
const TimingModule *timing_analysis_module(const TimingAnalysis *a, uint32_t i);
const TimingCounters *timing_analysis_counters(const TimingAnalysis *a);

/* The statistics of n counts (sorted in place), bins allocated; n 0 gives n 0 and no bins.
 * Returns 0 or -ENOMEM. Exposed for the tests. */
int timing_stats_compute(uint16_t *cycles, size_t n, TimingStats *ret);
void timing_stats_done(TimingStats *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The records of a `pmugate timing` ring buffer, decoded. The bytes come from the kernel (or
 * the simulator) through a buffer the client maps: input the client did not write, so every
 * length and count is checked against the record and the limits (a fuzz target feeds it).
 * Layouts are those of proto/timing-attr.h's attr.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate-limits.h"
#include "timing-attr.h"

/* One LBR entry as the kernel's perf_branch_entry gives it. cycles: core clocks since the
 * previous entry (0: not recorded, e.g. AMD or an entry without a valid count). */
typedef struct TimingBranch {
        uint64_t from, to;
        uint16_t cycles;
        bool mispredicted;
        bool predicted;
} TimingBranch;

typedef enum TimingRecordKind {
        TIMING_RECORD_SAMPLE,
        TIMING_RECORD_MAPPING,          /* PERF_RECORD_MMAP2 (or MMAP) of an executable mapping */
        TIMING_RECORD_COMM,
        TIMING_RECORD_FORK,
        TIMING_RECORD_EXIT,
        TIMING_RECORD_LOST,             /* the kernel dropped records: lost says how many */
        TIMING_RECORD_THROTTLE,         /* the kernel's sample-rate limit stopped sampling */
        TIMING_RECORD_UNTHROTTLE,
        TIMING_RECORD_OTHER,            /* a record of a kind this reader skips */
} TimingRecordKind;

typedef struct TimingSample {
        uint64_t ip;
        uint32_t pid, tid;
        uint64_t time;
        uint32_t cpu;
        uint64_t period;
        size_t n_branches;              /* branch mode: entries, newest first */
        TimingBranch branches[TIMING_BRANCHES_MAX];
} TimingSample;

#define TIMING_PATH_MAX 4096U

typedef struct TimingMapping {
        uint32_t pid, tid;
        uint64_t start, len, pgoff;
        uint32_t maj, min;
        uint64_t ino;
        bool has_file_id;               /* maj, min, ino are the kernel's (MMAP2 without a build
                                         * id); an MMAP record or a build-id MMAP2 has none */
        uint32_t prot, flags;           /* MMAP: PROT_EXEC, 0 (the kernel reports only
                                         * executable mappings there; flags unknown) */
        char path[TIMING_PATH_MAX];     /* NUL-terminated; the kernel's "//anon", "[vdso]" too */
} TimingMapping;

typedef struct TimingRecord {
        TimingRecordKind kind;
        bool has_id;                    /* time, pid, tid, cpu hold the sample's or its
                                         * sample_id's words (an OTHER record has none) */
        uint64_t time;                  /* from the sample or its sample_id */
        uint32_t pid, tid;              /* FORK, EXIT: the task's own (the record's body) */
        uint32_t cpu;
        /* the header's misc bits: PERF_RECORD_MISC_COMM_EXEC on the COMM of an exec (the task's
         * address layout starts anew: the mappings that follow are its new ones), the
         * PERF_RECORD_MISC_CPUMODE_MASK of a sample */
        uint16_t misc;
        union {
                TimingSample sample;
                TimingMapping mapping;
                struct {
                        uint32_t ppid, ptid;    /* FORK, EXIT */
                } task;
                char comm[16];                  /* COMM */
                uint64_t lost;                  /* LOST */
        };
} TimingRecord;

/* Decodes the one record at buf (its perf_event_header first, size bytes in all as the
 * header says) of a ring whose events sample sample_type (timing_sample_type()). Every word
 * of buf is read once, so a producer rewriting the bytes meanwhile gets a wrong record, never
 * a read outside them. Returns 0, -EINVAL for a sample_type with bits other than
 * TIMING_SAMPLE_TYPE_BRANCHES' (a layout this reader does not know), or -EBADMSG for a record
 * whose sizes, counts or strings do not fit (nothing in *ret is then to be used). */
int timing_record_decode(const void *buf, size_t size, uint64_t sample_type, TimingRecord *ret);

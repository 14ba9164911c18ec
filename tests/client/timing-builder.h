/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tests' writer of pmugate timing records in the kernel's layout (proto/timing-attr.h): what a
 * producer puts in the ring, built byte by byte so that the decoder is checked against the
 * layout, not against itself. Each function returns the record's size (0: no room in buf).
 */
#pragma once

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "timing/timing-record.h"

typedef struct TbWriter {
        uint8_t *buf;
        size_t cap, n;
        int overflow;
} TbWriter;

static inline void tb_put(TbWriter *w, const void *p, size_t n) {
        if (w->n + n > w->cap) {
                w->overflow = 1;
                return;
        }
        memcpy(w->buf + w->n, p, n);
        w->n += n;
}

static inline void tb_u64(TbWriter *w, uint64_t v) {
        tb_put(w, &v, sizeof(v));
}

static inline void tb_u32(TbWriter *w, uint32_t v) {
        tb_put(w, &v, sizeof(v));
}

static inline TbWriter tb_begin(void *buf, size_t cap, uint32_t type, uint16_t misc) {
        TbWriter w = { .buf = buf, .cap = cap };
        struct perf_event_header h = { .type = type, .misc = misc };

        tb_put(&w, &h, sizeof(h));
        return w;
}

static inline size_t tb_end(TbWriter *w) {
        uint16_t size = (uint16_t) w->n;

        if (w->overflow || w->n > UINT16_MAX)
                return 0;
        memcpy(w->buf + offsetof(struct perf_event_header, size), &size, sizeof(size));
        return w->n;
}

/* sample_id_all's trailer for TIMING_SAMPLE_TYPE_*: pid, tid, time, cpu, res */
static inline void tb_sample_id(TbWriter *w, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu) {
        tb_u32(w, pid);
        tb_u32(w, tid);
        tb_u64(w, time);
        tb_u32(w, cpu);
        tb_u32(w, 0);
}

/* A string padded with NULs to 8 bytes, at least one NUL, as the kernel writes it. */
static inline void tb_string(TbWriter *w, const char *s) {
        size_t n = strlen(s) + 1, padded = (n + 7) & ~(size_t) 7;
        static const uint8_t zeros[8];

        tb_put(w, s, n);
        tb_put(w, zeros, padded - n);
}

static inline size_t tb_sample(void *buf, size_t cap, uint64_t ip, uint32_t pid, uint32_t tid, uint64_t time,
                               uint32_t cpu, uint64_t period, const TimingBranch *branches, size_t nr,
                               int with_stack) {
        TbWriter w = tb_begin(buf, cap, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);

        tb_u64(&w, ip);
        tb_u32(&w, pid);
        tb_u32(&w, tid);
        tb_u64(&w, time);
        tb_u32(&w, cpu);
        tb_u32(&w, 0);
        tb_u64(&w, period);
        if (with_stack) {
                tb_u64(&w, nr);
                for (size_t i = 0; i < nr; i++) {
                        struct perf_branch_entry e = {
                                .from = branches[i].from,
                                .to = branches[i].to,
                                .mispred = branches[i].mispredicted,
                                .predicted = branches[i].predicted,
                                .cycles = branches[i].cycles,
                        };

                        tb_put(&w, &e, sizeof(e));
                }
        }
        return tb_end(&w);
}

static inline size_t tb_mmap2(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t start,
                              uint64_t len, uint64_t pgoff, uint64_t ino, const char *path, uint64_t time) {
        TbWriter w = tb_begin(buf, cap, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);

        tb_u32(&w, pid);
        tb_u32(&w, tid);
        tb_u64(&w, start);
        tb_u64(&w, len);
        tb_u64(&w, pgoff);
        tb_u32(&w, 8);          /* maj */
        tb_u32(&w, 1);          /* min */
        tb_u64(&w, ino);
        tb_u64(&w, 0);          /* ino_generation */
        tb_u32(&w, 5);          /* PROT_READ | PROT_EXEC */
        tb_u32(&w, 2);          /* MAP_PRIVATE */
        tb_string(&w, path);
        tb_sample_id(&w, pid, tid, time, 0);
        return tb_end(&w);
}

static inline size_t tb_mmap(void *buf, size_t cap, uint32_t pid, uint32_t tid, uint64_t start, uint64_t len,
                             uint64_t pgoff, const char *path, uint64_t time) {
        TbWriter w = tb_begin(buf, cap, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER);

        tb_u32(&w, pid);
        tb_u32(&w, tid);
        tb_u64(&w, start);
        tb_u64(&w, len);
        tb_u64(&w, pgoff);
        tb_string(&w, path);
        tb_sample_id(&w, pid, tid, time, 0);
        return tb_end(&w);
}

static inline size_t tb_comm(void *buf, size_t cap, uint32_t pid, uint32_t tid, const char *comm,
                             uint64_t time) {
        TbWriter w = tb_begin(buf, cap, PERF_RECORD_COMM, 0);

        tb_u32(&w, pid);
        tb_u32(&w, tid);
        tb_string(&w, comm);
        tb_sample_id(&w, pid, tid, time, 1);
        return tb_end(&w);
}

/* FORK or EXIT */
static inline size_t tb_task(void *buf, size_t cap, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid,
                             uint32_t ptid, uint64_t time) {
        TbWriter w = tb_begin(buf, cap, type, 0);

        tb_u32(&w, pid);
        tb_u32(&w, ppid);
        tb_u32(&w, tid);
        tb_u32(&w, ptid);
        tb_u64(&w, time);
        tb_sample_id(&w, pid, tid, time, 2);
        return tb_end(&w);
}

static inline size_t tb_lost(void *buf, size_t cap, uint64_t lost, uint64_t time) {
        TbWriter w = tb_begin(buf, cap, PERF_RECORD_LOST, 0);

        tb_u64(&w, 77);         /* the event's id */
        tb_u64(&w, lost);
        tb_sample_id(&w, 0, 0, time, 3);
        return tb_end(&w);
}

/* THROTTLE or UNTHROTTLE */
static inline size_t tb_throttle(void *buf, size_t cap, uint32_t type, uint64_t time) {
        TbWriter w = tb_begin(buf, cap, type, 0);

        tb_u64(&w, time);
        tb_u64(&w, 77);
        tb_u64(&w, 77);
        tb_sample_id(&w, 10, 11, time, 4);
        return tb_end(&w);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: one ring-buffer record decoded, every length and count checked
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "timing/timing-record.h"

/* A record's bytes and how far the decoder has read them. Each read copies the bytes out
 * once: buf may be shared memory a producer still writes. */
typedef struct Cursor {
        const uint8_t *p;
        size_t left;
} Cursor;

static int take(Cursor *c, void *ret, size_t n) {
        if (n > c->left)
                return -EBADMSG;
        memcpy(ret, c->p, n);
        c->p += n;
        c->left -= n;
        return 0;
}

static int take_u64(Cursor *c, uint64_t *ret) {
        return take(c, ret, sizeof(*ret));
}

static int take_u32(Cursor *c, uint32_t *ret) {
        return take(c, ret, sizeof(*ret));
}

/* The sample_id that sample_id_all appends to every non-sample record: the fields of
 * sample_type's TID, TIME and CPU, in that order (the rest of TIMING_SAMPLE_TYPE_* adds none
 * there). */
static size_t sample_id_size(uint64_t sample_type) {
        size_t n = 0;

        if (sample_type & PERF_SAMPLE_TID)
                n += 8;
        if (sample_type & PERF_SAMPLE_TIME)
                n += 8;
        if (sample_type & PERF_SAMPLE_CPU)
                n += 8;
        return n;
}

/* Splits the trailing sample_id off c and decodes it into rec. */
static int take_sample_id(Cursor *c, uint64_t sample_type, TimingRecord *rec) {
        size_t n = sample_id_size(sample_type);
        Cursor id;
        uint32_t res;
        int r;

        if (n > c->left)
                return -EBADMSG;
        id = (Cursor) { .p = c->p + (c->left - n), .left = n };
        c->left -= n;
        if (sample_type & PERF_SAMPLE_TID) {
                r = take_u32(&id, &rec->pid);
                if (r < 0)
                        return r;
                r = take_u32(&id, &rec->tid);
                if (r < 0)
                        return r;
        }
        if (sample_type & PERF_SAMPLE_TIME) {
                r = take_u64(&id, &rec->time);
                if (r < 0)
                        return r;
        }
        if (sample_type & PERF_SAMPLE_CPU) {
                r = take_u32(&id, &rec->cpu);
                if (r < 0)
                        return r;
                r = take_u32(&id, &res);
                if (r < 0)
                        return r;
        }
        rec->has_id = true;
        return 0;
}

/* A NUL-terminated string filling the rest of c (the kernel pads it to 8 bytes with NULs),
 * copied into ret of size bytes. A string with no NUL in the record, or longer than ret
 * holds, does not fit. */
static int take_string(Cursor *c, char *ret, size_t size) {
        const uint8_t *nul;
        size_t n;

        if (c->left == 0)
                return -EBADMSG;
        nul = memchr(c->p, '\0', c->left);
        if (!nul)
                return -EBADMSG;
        n = (size_t) (nul - c->p);
        if (n >= size)
                return -EBADMSG;
        memcpy(ret, c->p, n);
        /* terminated here, not by the copied NUL: the producer may have moved it since */
        ret[n] = '\0';
        if (strlen(ret) != n)
                return -EBADMSG;
        c->p += c->left;
        c->left = 0;
        return 0;
}

static int decode_sample(Cursor *c, uint64_t sample_type, TimingRecord *rec) {
        TimingSample *s = &rec->sample;
        uint32_t res;
        uint64_t nr;
        int r;

        s->n_branches = 0;
        if (sample_type & PERF_SAMPLE_IP) {
                r = take_u64(c, &s->ip);
                if (r < 0)
                        return r;
        }
        if (sample_type & PERF_SAMPLE_TID) {
                r = take_u32(c, &s->pid);
                if (r < 0)
                        return r;
                r = take_u32(c, &s->tid);
                if (r < 0)
                        return r;
        }
        if (sample_type & PERF_SAMPLE_TIME) {
                r = take_u64(c, &s->time);
                if (r < 0)
                        return r;
        }
        if (sample_type & PERF_SAMPLE_CPU) {
                r = take_u32(c, &s->cpu);
                if (r < 0)
                        return r;
                r = take_u32(c, &res);
                if (r < 0)
                        return r;
        }
        if (sample_type & PERF_SAMPLE_PERIOD) {
                r = take_u64(c, &s->period);
                if (r < 0)
                        return r;
        }
        if (sample_type & PERF_SAMPLE_BRANCH_STACK) {
                /* no hw_idx word: TIMING_BRANCH_SAMPLE_TYPE has no PERF_SAMPLE_BRANCH_HW_INDEX */
                r = take_u64(c, &nr);
                if (r < 0)
                        return r;
                if (nr > TIMING_BRANCHES_MAX || nr * sizeof(struct perf_branch_entry) > c->left)
                        return -EBADMSG;
                /* all nr entries are inside the record (checked once above) */
                for (size_t i = 0; i < nr; i++) {
                        struct perf_branch_entry e;

                        memcpy(&e, c->p + i * sizeof(e), sizeof(e));
                        s->branches[i] = (TimingBranch) {
                                .from = e.from,
                                .to = e.to,
                                .cycles = (uint16_t) e.cycles,
                                .mispredicted = e.mispred,
                                .predicted = e.predicted,
                        };
                }
                c->p += nr * sizeof(struct perf_branch_entry);
                c->left -= nr * sizeof(struct perf_branch_entry);
                s->n_branches = (size_t) nr;
        }
        /* the kernel pads nothing after these fields: more bytes are not this layout */
        if (c->left != 0)
                return -EBADMSG;
        rec->has_id = (sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)) != 0;
        rec->time = s->time;
        rec->pid = s->pid;
        rec->tid = s->tid;
        rec->cpu = s->cpu;
        return 0;
}

static int decode_mapping(Cursor *c, uint32_t type, uint16_t misc, TimingRecord *rec) {
        TimingMapping *m = &rec->mapping;
        int r;

        r = take_u32(c, &m->pid);
        if (r < 0)
                return r;
        r = take_u32(c, &m->tid);
        if (r < 0)
                return r;
        r = take_u64(c, &m->start);
        if (r < 0)
                return r;
        r = take_u64(c, &m->len);
        if (r < 0)
                return r;
        r = take_u64(c, &m->pgoff);
        if (r < 0)
                return r;
        if (type == PERF_RECORD_MMAP2) {
                uint64_t ino_generation;

                /* maj, min, ino, ino_generation; or with MISC_MMAP_BUILD_ID the same 24 bytes
                 * hold the build id */
                r = take_u32(c, &m->maj);
                if (r < 0)
                        return r;
                r = take_u32(c, &m->min);
                if (r < 0)
                        return r;
                r = take_u64(c, &m->ino);
                if (r < 0)
                        return r;
                r = take_u64(c, &ino_generation);
                if (r < 0)
                        return r;
                m->has_file_id = !(misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
                if (!m->has_file_id) {
                        m->maj = m->min = 0;
                        m->ino = 0;
                }
                r = take_u32(c, &m->prot);
                if (r < 0)
                        return r;
                r = take_u32(c, &m->flags);
                if (r < 0)
                        return r;
        } else {
                m->maj = m->min = 0;
                m->ino = 0;
                m->has_file_id = false;
                m->prot = PROT_EXEC;
                m->flags = 0;
        }
        /* a mapping's end must be an address: a length wrapping it names nothing */
        if (m->len == 0 || m->start + m->len < m->start)
                return -EBADMSG;
        r = take_string(c, m->path, sizeof(m->path));
        if (r < 0)
                return r;
        /* the sample_id's pid, tid are the mapping's own; the body's win where they differ */
        rec->pid = m->pid;
        rec->tid = m->tid;
        return 0;
}

static int decode_task(Cursor *c, TimingRecord *rec) {
        uint32_t pid, ppid, tid, ptid;
        uint64_t time;
        int r;

        r = take_u32(c, &pid);
        if (r < 0)
                return r;
        r = take_u32(c, &ppid);
        if (r < 0)
                return r;
        r = take_u32(c, &tid);
        if (r < 0)
                return r;
        r = take_u32(c, &ptid);
        if (r < 0)
                return r;
        r = take_u64(c, &time);
        if (r < 0)
                return r;
        if (c->left != 0)
                return -EBADMSG;
        rec->pid = pid;
        rec->tid = tid;
        rec->task.ppid = ppid;
        rec->task.ptid = ptid;
        rec->time = time;
        return 0;
}

int timing_record_decode(const void *buf, size_t size, uint64_t sample_type, TimingRecord *ret) {
        struct perf_event_header h;
        Cursor c = { .p = buf, .left = size };
        TimingRecord *rec = ret;
        uint64_t u;
        int r;

        if (sample_type & ~(uint64_t) TIMING_SAMPLE_TYPE_BRANCHES)
                return -EINVAL;
        if (!buf || !ret)
                return -EINVAL;
        r = take(&c, &h, sizeof(h));
        if (r < 0)
                return r;
        if (h.size != size)
                return -EBADMSG;
        /* decoded in place, not through a zeroed copy: a record is some 6 KiB (a mapping's
         * path, a sample's branches) and the per-entry cost is what the bench measures */
        rec->has_id = false;
        rec->time = 0;
        rec->pid = rec->tid = rec->cpu = 0;
        rec->misc = h.misc;

        if (h.type == PERF_RECORD_SAMPLE) {
                rec->kind = TIMING_RECORD_SAMPLE;
                return decode_sample(&c, sample_type, rec);
        }

        if (h.type != PERF_RECORD_MMAP && h.type != PERF_RECORD_MMAP2 && h.type != PERF_RECORD_COMM &&
            h.type != PERF_RECORD_FORK && h.type != PERF_RECORD_EXIT && h.type != PERF_RECORD_LOST &&
            h.type != PERF_RECORD_THROTTLE && h.type != PERF_RECORD_UNTHROTTLE) {
                /* skipped whole: its layout, and whether it has a sample_id, is not ours to guess */
                rec->kind = TIMING_RECORD_OTHER;
                return 0;
        }

        r = take_sample_id(&c, sample_type, rec);
        if (r < 0)
                return r;
        switch (h.type) {
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
                rec->kind = TIMING_RECORD_MAPPING;
                r = decode_mapping(&c, h.type, h.misc, rec);
                break;
        case PERF_RECORD_COMM:
                rec->kind = TIMING_RECORD_COMM;
                r = take_u32(&c, &rec->pid);
                if (r >= 0)
                        r = take_u32(&c, &rec->tid);
                if (r >= 0)
                        r = take_string(&c, rec->comm, sizeof(rec->comm));
                break;
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                rec->kind = h.type == PERF_RECORD_FORK ? TIMING_RECORD_FORK : TIMING_RECORD_EXIT;
                r = decode_task(&c, rec);
                break;
        case PERF_RECORD_LOST:
                rec->kind = TIMING_RECORD_LOST;
                r = take_u64(&c, &u);
                if (r >= 0)
                        r = take_u64(&c, &rec->lost);
                if (r >= 0 && c.left != 0)
                        r = -EBADMSG;
                break;
        default:
                rec->kind = h.type == PERF_RECORD_THROTTLE ? TIMING_RECORD_THROTTLE :
                                                             TIMING_RECORD_UNTHROTTLE;
                r = take_u64(&c, &rec->time);
                if (r >= 0)
                        r = take_u64(&c, &u);
                if (r >= 0)
                        r = take_u64(&c, &u);
                if (r >= 0 && c.left != 0)
                        r = -EBADMSG;
                break;
        }
        return r < 0 ? r : 0;
}

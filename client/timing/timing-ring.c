/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: the reader of one sampling event's ring buffer
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "timing/timing-ring.h"

/* A perf_event_header's size is 16 bits: no record is longer. */
#define TIMING_RECORD_BYTES_MAX 65535U

struct TimingRing {
        void *map;
        size_t map_size;
        struct perf_event_mmap_page *meta;
        const uint8_t *data;
        uint64_t data_size;
        uint64_t sample_type;
        /* the reader's own tail: the page's copy is only published, never trusted back */
        uint64_t tail;
        TimingRecord record;
        uint8_t bounce[TIMING_RECORD_BYTES_MAX];
};

int timing_ring_map(int fd, uint64_t sample_type, TimingRing **ret) {
        _cleanup_free_ TimingRing *r = NULL;
        long page = sysconf(_SC_PAGESIZE);
        uint64_t offset, size;
        struct stat st;
        void *map;

        if (fd < 0 || !ret || page <= 0)
                return -EINVAL;
        if (sample_type & ~(uint64_t) TIMING_SAMPLE_TYPE_BRANCHES)
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->map_size = (size_t) page + TIMING_RING_DATA_BYTES;
        /* a perf event's fd has no size; a file (the simulator's memfd) shorter than the ring
         * would fault at the first read past its end */
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISREG(st.st_mode) && (uint64_t) st.st_size < r->map_size)
                return -EBADMSG;
        /* writable for data_tail only: the reader's word to the producer */
        map = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return negative_errno();
        r->map = map;
        r->meta = map;
        offset = __atomic_load_n(&r->meta->data_offset, __ATOMIC_RELAXED);
        size = __atomic_load_n(&r->meta->data_size, __ATOMIC_RELAXED);
        /* a kernel before 4.1 leaves both 0 and puts the data right after the page */
        if (size == 0 && offset == 0) {
                offset = (uint64_t) page;
                size = TIMING_RING_DATA_BYTES;
        }
        if (offset != (uint64_t) page || size != TIMING_RING_DATA_BYTES) {
                (void) munmap(map, r->map_size);
                return -EBADMSG;
        }
        r->data = (const uint8_t *) map + offset;
        r->data_size = size;
        r->sample_type = sample_type;
        r->tail = __atomic_load_n(&r->meta->data_tail, __ATOMIC_RELAXED);
        *ret = TAKE_PTR(r);
        return 0;
}

/* Copies n bytes from the ring at position pos (a free-running counter) to buf, across the
 * ring's end where they wrap. */
static void ring_copy(const TimingRing *r, uint64_t pos, void *buf, size_t n) {
        size_t off = (size_t) (pos & (r->data_size - 1)), first = MIN(n, (size_t) r->data_size - off);

        memcpy(buf, r->data + off, first);
        if (first < n)
                memcpy((uint8_t *) buf + first, r->data, n - first);
}

static void publish_tail(TimingRing *r) {
        /* the records' bytes are read before the producer may reuse them */
        __atomic_store_n(&r->meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

int timing_ring_drain(TimingRing *r, int (*on_record)(const TimingRecord *rec, void *userdata),
                      void *userdata, uint64_t *ret_malformed) {
        uint64_t head, malformed = 0;
        int delivered = 0, ret = 0;

        if (!r || !on_record)
                return -EINVAL;
        head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
        /* the kernel never runs more than a ring ahead of the tail, nor back: a head that does
         * lies, and what lies between is not records. Skip to it so that the ring flows again. */
        if (head - r->tail > r->data_size) {
                r->tail = head;
                publish_tail(r);
                return -EBADMSG;
        }
        while (r->tail != head) {
                struct perf_event_header h;
                uint64_t avail = head - r->tail;
                size_t off = (size_t) (r->tail & (r->data_size - 1));
                const void *rec;
                int k;

                if (avail < sizeof(h)) {
                        ret = -EBADMSG;
                        break;
                }
                ring_copy(r, r->tail, &h, sizeof(h));
                if (h.size < sizeof(h) || h.size > avail) {
                        ret = -EBADMSG;
                        break;
                }
                if (off + h.size <= r->data_size)
                        rec = r->data + off;
                else {
                        ring_copy(r, r->tail, r->bounce, h.size);
                        rec = r->bounce;
                }
                k = timing_record_decode(rec, h.size, r->sample_type, &r->record);
                r->tail += h.size;
                if (k < 0) {
                        malformed++;
                        continue;
                }
                k = on_record(&r->record, userdata);
                if (k < 0) {
                        ret = k;
                        break;
                }
                if (delivered < INT32_MAX)
                        delivered++;
        }
        /* a frame that cannot be read ends the drain; the rest up to the head is skipped */
        if (ret == -EBADMSG)
                r->tail = head;
        publish_tail(r);
        if (ret_malformed)
                *ret_malformed = malformed;
        return ret < 0 ? ret : delivered;
}

TimingRing *timing_ring_unmap(TimingRing *r) {
        if (!r)
                return NULL;
        (void) munmap(r->map, r->map_size);
        free(r);
        return NULL;
}

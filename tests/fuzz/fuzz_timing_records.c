/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: pmugate timing's ring reader and record decoder (client/timing/timing-ring.c,
 * timing-record.c): a sample stream is input the client did not write
 *
 * Input: one control byte, then the bytes. Control bit 0 picks the sample type (branches or
 * IPs); bits 1-3 where in the ring the bytes start (so that records wrap its end at many
 * offsets); bit 4 a lying head (a ring and some beyond the tail). The bytes go into a ring in
 * the perf mmap layout (a memfd) that timing_ring_drain() reads, and are framed by their
 * headers' sizes as single records for timing_record_decode() in both sample types.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "timing/timing-ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Counts {
        size_t records;
        uint64_t max_bytes;
} Counts;

static void check_record(const TimingRecord *rec) {
        fuzz_assert(rec->kind >= TIMING_RECORD_SAMPLE && rec->kind <= TIMING_RECORD_OTHER);
        switch (rec->kind) {
        case TIMING_RECORD_SAMPLE:
                fuzz_assert(rec->sample.n_branches <= TIMING_BRANCHES_MAX);
                fuzz_assert(rec->has_id && rec->pid == rec->sample.pid && rec->time == rec->sample.time);
                break;
        case TIMING_RECORD_MAPPING:
                fuzz_assert(FUZZ_TERMINATED(rec->mapping.path));
                fuzz_assert(rec->mapping.len > 0 &&
                            rec->mapping.start + rec->mapping.len > rec->mapping.start);
                if (!rec->mapping.has_file_id)
                        fuzz_assert(rec->mapping.ino == 0 && rec->mapping.maj == 0);
                break;
        case TIMING_RECORD_COMM:
                fuzz_assert(FUZZ_TERMINATED(rec->comm));
                break;
        case TIMING_RECORD_OTHER:
                fuzz_assert(!rec->has_id);
                break;
        default:
                fuzz_assert(rec->has_id);
                break;
        }
}

static int on_record(const TimingRecord *rec, void *userdata) {
        Counts *c = userdata;

        check_record(rec);
        c->records++;
        return 0;
}

/* The ring, made once: a memfd of one page and the data, mapped here as the producer. */
static int ring_fd = -1;
static uint8_t *ring_map;
static size_t ring_page;

static void ring_setup(void) {
        if (ring_fd >= 0)
                return;
        ring_page = (size_t) sysconf(_SC_PAGESIZE);
        ring_fd = memfd_create("fuzz-timing-ring", MFD_CLOEXEC);
        if (ring_fd < 0 || ftruncate(ring_fd, (off_t) (ring_page + TIMING_RING_DATA_BYTES)) < 0)
                abort();
        ring_map = mmap(NULL, ring_page + TIMING_RING_DATA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                        ring_fd, 0);
        if (ring_map == MAP_FAILED)
                abort();
}

static void feed_ring(const uint8_t *bytes, size_t n, uint64_t sample_type, uint8_t control) {
        struct perf_event_mmap_page *meta;
        uint8_t *ring;
        TimingRing *r = NULL;
        Counts counts = {};
        uint64_t start, head, malformed = 0;
        int k;

        ring_setup();
        meta = (struct perf_event_mmap_page *) ring_map;
        ring = ring_map + ring_page;
        n = n > TIMING_RING_DATA_BYTES ? TIMING_RING_DATA_BYTES : n;
        /* a free-running tail far from 0, so that the arithmetic wraps too */
        start = UINT64_C(0xfffffffffff00000) +
                (uint64_t) ((control >> 1) & 7) * (TIMING_RING_DATA_BYTES / 8 + 3);
        for (size_t i = 0; i < n; i++)
                ring[(start + i) % TIMING_RING_DATA_BYTES] = bytes[i];
        head = start + n;
        if (control & 0x10)
                head += TIMING_RING_DATA_BYTES + 8;
        memset(meta, 0, ring_page);
        meta->data_offset = ring_page;
        meta->data_size = TIMING_RING_DATA_BYTES;
        meta->data_tail = start;
        meta->data_head = head;

        fuzz_assert(timing_ring_map(ring_fd, sample_type, &r) == 0);
        k = timing_ring_drain(r, on_record, &counts, &malformed);
        fuzz_assert(k == -EBADMSG || (k >= 0 && (size_t) k == counts.records));
        /* each record is at least a header long */
        fuzz_assert(counts.records + malformed <= n / sizeof(struct perf_event_header));
        /* whatever happened, the reader consumed up to the head the producer gave */
        fuzz_assert(meta->data_tail == head);
        /* and a second drain finds nothing */
        fuzz_assert(timing_ring_drain(r, on_record, &counts, &malformed) == 0);
        r = timing_ring_unmap(r);
}

static void feed_records(const uint8_t *bytes, size_t n) {
        static TimingRecord rec;
        size_t off = 0;

        while (n - off >= sizeof(struct perf_event_header)) {
                struct perf_event_header h;

                memcpy(&h, bytes + off, sizeof(h));
                if (h.size < sizeof(h) || h.size > n - off)
                        break;
                /* a private copy of exactly the record: reading past it is an ASan report */
                {
                        char *copy = fuzz_copy(bytes + off, h.size);
                        int r = timing_record_decode(copy, h.size, TIMING_SAMPLE_TYPE_BRANCHES, &rec);

                        fuzz_assert(r == 0 || r == -EBADMSG);
                        if (r == 0)
                                check_record(&rec);
                        r = timing_record_decode(copy, h.size, TIMING_SAMPLE_TYPE_IPS, &rec);
                        fuzz_assert(r == 0 || r == -EBADMSG);
                        if (r == 0) {
                                check_record(&rec);
                                if (rec.kind == TIMING_RECORD_SAMPLE)
                                        fuzz_assert(rec.sample.n_branches == 0);
                        }
                        /* a size other than the header's is never a record */
                        fuzz_assert(timing_record_decode(copy, h.size - 1, TIMING_SAMPLE_TYPE_IPS, &rec) ==
                                    -EBADMSG);
                        free(copy);
                }
                off += h.size;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *copy;
        uint8_t control;

        if (size < 1)
                return 0;
        control = data[0];
        copy = fuzz_copy(data + 1, size - 1);
        feed_ring((const uint8_t *) copy, size - 1,
                  control & 1 ? TIMING_SAMPLE_TYPE_IPS : TIMING_SAMPLE_TYPE_BRANCHES, control);
        feed_records((const uint8_t *) copy, size - 1);
        free(copy);
        return 0;
}

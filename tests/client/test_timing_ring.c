/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: pmugate timing's ring reader on a ring in the perf mmap layout that the test
 * writes itself (a memfd, as the simulator's): records in order, a record wrapping the ring's
 * end, the metadata page's checks, malformed records skipped, and a producer whose data_head
 * lies
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "timing-builder.h"
#include "timing/timing-ring.h"

#define BRANCH_TYPE TIMING_SAMPLE_TYPE_BRANCHES

typedef struct Producer {
        int fd;
        size_t page, size;
        uint8_t *map;
        struct perf_event_mmap_page *meta;
        uint8_t *data;
        uint64_t head;
} Producer;

static void producer_open(Producer *p, uint64_t data_offset, uint64_t data_size) {
        p->page = (size_t) sysconf(_SC_PAGESIZE);
        p->size = p->page + TIMING_RING_DATA_BYTES;
        p->fd = memfd_create("timing-ring", MFD_CLOEXEC);
        assert_true(p->fd >= 0);
        assert_int_equal(ftruncate(p->fd, (off_t) p->size), 0);
        p->map = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
        assert_true(p->map != MAP_FAILED);
        p->meta = (struct perf_event_mmap_page *) p->map;
        p->meta->data_offset = data_offset;
        p->meta->data_size = data_size;
        p->data = p->map + p->page;
        p->head = 0;
}

static void producer_close(Producer *p) {
        assert_int_equal(munmap(p->map, p->size), 0);
        assert_int_equal(close(p->fd), 0);
}

/* Writes n bytes at the head, wrapping at the ring's end, without publishing them. */
static void producer_write(Producer *p, const void *rec, size_t n) {
        for (size_t i = 0; i < n; i++)
                p->data[(p->head + i) % TIMING_RING_DATA_BYTES] = ((const uint8_t *) rec)[i];
        p->head += n;
}

static void producer_publish(Producer *p) {
        __atomic_store_n(&p->meta->data_head, p->head, __ATOMIC_RELEASE);
}

typedef struct Seen {
        size_t n;
        TimingRecordKind kinds[64];
        uint64_t ips[64];
        size_t n_branches[64];
        uint16_t last_cycles[64];
        int stop_after;
} Seen;

static int on_record(const TimingRecord *rec, void *userdata) {
        Seen *s = userdata;

        if (s->n < ELEMENTSOF(s->kinds)) {
                s->kinds[s->n] = rec->kind;
                if (rec->kind == TIMING_RECORD_SAMPLE) {
                        s->ips[s->n] = rec->sample.ip;
                        s->n_branches[s->n] = rec->sample.n_branches;
                        size_t nb = rec->sample.n_branches;

                        if (nb > 0)
                                s->last_cycles[s->n] = rec->sample.branches[nb - 1].cycles;
                }
        }
        s->n++;
        if (s->stop_after > 0 && s->n == (size_t) s->stop_after)
                return -ECANCELED;
        return 0;
}

static size_t branch_sample(uint8_t *buf, size_t cap, uint64_t ip, size_t nr) {
        TimingBranch b[TIMING_BRANCHES_MAX];

        for (size_t i = 0; i < nr; i++)
                b[i] = (TimingBranch) { .from = ip + i, .to = ip - i, .cycles = (uint16_t) (100 + i) };
        return tb_sample(buf, cap, ip, 1, 1, ip, 0, 1000, b, nr, 1);
}

/* A record of a kind the reader skips, n bytes long (n >= 8), in buf. */
static size_t other_record(uint8_t *buf, size_t n) {
        TbWriter w = tb_begin(buf, n, 0xfff0, 0);

        memset(buf + 8, 0, n - 8);
        w.n = n;
        return tb_end(&w);
}

static void test_in_order(void **state) {
        Producer p;
        TimingRing *r = NULL;
        Seen seen = {};
        uint8_t buf[4096];
        uint64_t malformed = 99;
        size_t n;

        (void) state;
        producer_open(&p, sysconf(_SC_PAGESIZE), TIMING_RING_DATA_BYTES);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), 0);

        /* an empty ring delivers nothing */
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), 0);
        assert_int_equal(malformed, 0);

        n = tb_mmap2(buf, sizeof(buf), 1, 1, 0x400000, 0x1000, 0, 9, "/bin/true", 1);
        producer_write(&p, buf, n);
        n = tb_comm(buf, sizeof(buf), 1, 1, "true", 2);
        producer_write(&p, buf, n);
        n = branch_sample(buf, sizeof(buf), 0x400100, 32);
        producer_write(&p, buf, n);
        /* written but not published: the reader must not see it yet */
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), 0);
        producer_publish(&p);
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), 3);
        assert_int_equal(seen.kinds[0], TIMING_RECORD_MAPPING);
        assert_int_equal(seen.kinds[1], TIMING_RECORD_COMM);
        assert_int_equal(seen.kinds[2], TIMING_RECORD_SAMPLE);
        assert_int_equal(seen.ips[2], 0x400100);
        assert_int_equal(seen.n_branches[2], 32);
        assert_int_equal(seen.last_cycles[2], 131);
        /* the tail published is the head consumed */
        assert_int_equal(__atomic_load_n(&p.meta->data_tail, __ATOMIC_ACQUIRE), p.head);
        assert_int_equal(timing_ring_drain(r, on_record, &seen, NULL), 0);

        r = timing_ring_unmap(r);
        assert_null(r);
        producer_close(&p);
}

static void test_wrap(void **state) {
        Producer p;
        TimingRing *r = NULL;
        Seen seen = {};
        uint8_t buf[4096];
        size_t n = 0, total = 0, delivered = 0;
        int k;

        (void) state;
        /* an old kernel's page: data_offset and data_size 0 */
        producer_open(&p, 0, 0);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), 0);
        /* fill the ring with 32-entry samples several times over, draining as a reader does
         * when woken: some sample straddles the end each lap, at a different offset */
        for (uint64_t i = 0; i < 2000; i++) {
                n = branch_sample(buf, sizeof(buf), 0x500000 + i, 1 + i % 32);
                uint64_t tail = __atomic_load_n(&p.meta->data_tail, __ATOMIC_ACQUIRE);

                if (p.head + n - tail > TIMING_RING_DATA_BYTES) {
                        producer_publish(&p);
                        seen.n = 0;
                        k = timing_ring_drain(r, on_record, &seen, NULL);
                        assert_true(k > 0);
                        delivered += (size_t) k;
                }
                producer_write(&p, buf, n);
                total++;
        }
        producer_publish(&p);
        k = timing_ring_drain(r, on_record, &seen, NULL);
        assert_true(k > 0);
        delivered += (size_t) k;
        assert_int_equal(delivered, total);
        assert_true(p.head > 3 * TIMING_RING_DATA_BYTES);

        /* a header itself split by the ring's end (the kernel's 8-byte alignment never does
         * that; a producer may): records of a kind the reader skips fill the ring up to 4
         * bytes before its end, then a sample's header straddles it */
        if (TIMING_RING_DATA_BYTES - p.head % TIMING_RING_DATA_BYTES == 8)
                producer_write(&p, buf, other_record(buf, 8));
        while (TIMING_RING_DATA_BYTES - p.head % TIMING_RING_DATA_BYTES > 16)
                producer_write(&p, buf, other_record(buf, 8));
        producer_write(&p, buf, other_record(buf, 12));
        assert_int_equal(TIMING_RING_DATA_BYTES - p.head % TIMING_RING_DATA_BYTES, 4);
        producer_publish(&p);
        seen.n = 0;
        assert_true(timing_ring_drain(r, on_record, &seen, NULL) > 0);
        assert_int_equal(seen.kinds[0], TIMING_RECORD_OTHER);
        n = branch_sample(buf, sizeof(buf), 0x600000, 7);
        producer_write(&p, buf, n);
        producer_publish(&p);
        seen.n = 0;
        assert_int_equal(timing_ring_drain(r, on_record, &seen, NULL), 1);
        assert_int_equal(seen.ips[0], 0x600000);
        assert_int_equal(seen.n_branches[0], 7);

        r = timing_ring_unmap(r);
        producer_close(&p);
}

static void test_metadata(void **state) {
        Producer p;
        TimingRing *r = NULL;

        (void) state;
        producer_open(&p, sysconf(_SC_PAGESIZE), TIMING_RING_DATA_BYTES / 2);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), -EBADMSG);
        assert_null(r);
        p.meta->data_size = TIMING_RING_DATA_BYTES;
        p.meta->data_offset = 2 * sysconf(_SC_PAGESIZE);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), -EBADMSG);
        p.meta->data_offset = 0;
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), -EBADMSG);
        p.meta->data_offset = sysconf(_SC_PAGESIZE);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE | PERF_SAMPLE_ADDR, &r), -EINVAL);
        assert_int_equal(timing_ring_map(-1, BRANCH_TYPE, &r), -EINVAL);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), 0);
        r = timing_ring_unmap(r);

        /* a file shorter than the ring would fault at the first read past its end: refused */
        assert_int_equal(ftruncate(p.fd, (off_t) p.page), 0);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), -EBADMSG);
        assert_null(r);
        assert_null(timing_ring_unmap(NULL));
        producer_close(&p);
}

static void test_malformed_and_lies(void **state) {
        Producer p;
        TimingRing *r = NULL;
        Seen seen = {};
        uint8_t buf[4096];
        uint64_t malformed = 0, nr = 1000;
        size_t n;

        (void) state;
        producer_open(&p, sysconf(_SC_PAGESIZE), TIMING_RING_DATA_BYTES);
        assert_int_equal(timing_ring_map(p.fd, BRANCH_TYPE, &r), 0);

        /* a sample whose count is absurd is skipped by its size; the next one is read */
        n = branch_sample(buf, sizeof(buf), 0x700000, 4);
        memcpy(buf + 48, &nr, sizeof(nr));
        producer_write(&p, buf, n);
        n = branch_sample(buf, sizeof(buf), 0x700010, 4);
        producer_write(&p, buf, n);
        producer_publish(&p);
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), 1);
        assert_int_equal(malformed, 1);
        assert_int_equal(seen.ips[0], 0x700010);

        /* a header of size 0 cannot be framed: the drain ends, the tail moves to the head */
        memset(buf, 0, 8);
        producer_write(&p, buf, 8);
        n = branch_sample(buf, sizeof(buf), 0x700020, 4);
        producer_write(&p, buf, n);
        producer_publish(&p);
        seen.n = 0;
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), -EBADMSG);
        assert_int_equal(seen.n, 0);
        assert_int_equal(__atomic_load_n(&p.meta->data_tail, __ATOMIC_ACQUIRE), p.head);

        /* a record whose size runs past the head */
        n = branch_sample(buf, sizeof(buf), 0x700030, 4);
        producer_write(&p, buf, n - 8);
        producer_publish(&p);
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), -EBADMSG);

        /* a head more than a ring ahead of the tail, and one behind it */
        p.head += TIMING_RING_DATA_BYTES + 8;
        producer_publish(&p);
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), -EBADMSG);
        assert_int_equal(__atomic_load_n(&p.meta->data_tail, __ATOMIC_ACQUIRE), p.head);
        p.head -= 64;
        producer_publish(&p);
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), -EBADMSG);
        /* after either, the ring flows again from the head the producer gave */
        n = branch_sample(buf, sizeof(buf), 0x700040, 2);
        producer_write(&p, buf, n);
        producer_publish(&p);
        seen.n = 0;
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), 1);
        assert_int_equal(seen.ips[0], 0x700040);

        /* a callback's error stops the drain; the records after it stay for the next */
        for (int i = 0; i < 3; i++) {
                n = branch_sample(buf, sizeof(buf), 0x700100 + i, 1);
                producer_write(&p, buf, n);
        }
        producer_publish(&p);
        seen = (Seen) { .stop_after = 1 };
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), -ECANCELED);
        seen.stop_after = 0;
        assert_int_equal(timing_ring_drain(r, on_record, &seen, &malformed), 2);
        assert_int_equal(seen.ips[1], 0x700101);
        assert_int_equal(seen.ips[2], 0x700102);

        assert_int_equal(timing_ring_drain(r, NULL, &seen, &malformed), -EINVAL);
        r = timing_ring_unmap(r);
        producer_close(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_in_order),
                cmocka_unit_test(test_wrap),
                cmocka_unit_test(test_metadata),
                cmocka_unit_test(test_malformed_and_lies),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: pmugate timing's record decoder on records of each kind written in the kernel's
 * layout, and on records whose sizes, counts and strings do not fit
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "timing-builder.h"
#include "timing/timing-record.h"

#define BRANCH_TYPE TIMING_SAMPLE_TYPE_BRANCHES
#define IPS_TYPE TIMING_SAMPLE_TYPE_IPS

static uint8_t buf[65536];
static TimingRecord rec;

static void fill_branches(TimingBranch *b, size_t n) {
        for (size_t i = 0; i < n; i++)
                b[i] = (TimingBranch) {
                        .from = 0x401000 + 16 * i,
                        .to = 0x402000 + 8 * i,
                        .cycles = (uint16_t) (i == 0 ? 65535 : 3 * i + 1),
                        .mispredicted = i % 3 == 0,
                        .predicted = i % 3 != 0,
                };
}

static void test_sample_branches(void **state) {
        TimingBranch b[32];
        size_t n;

        (void) state;
        fill_branches(b, 32);
        n = tb_sample(buf, sizeof(buf), 0x401234, 100, 101, 5555, 3, 20000, b, 32, 1);
        assert_int_equal(n, 8 + 40 + 8 + 32 * 24);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_SAMPLE);
        assert_true(rec.has_id);
        assert_int_equal(rec.sample.ip, 0x401234);
        assert_int_equal(rec.pid, 100);
        assert_int_equal(rec.sample.tid, 101);
        assert_int_equal(rec.time, 5555);
        assert_int_equal(rec.cpu, 3);
        assert_int_equal(rec.sample.period, 20000);
        assert_int_equal(rec.sample.n_branches, 32);
        assert_int_equal(rec.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
        for (size_t i = 0; i < 32; i++) {
                assert_int_equal(rec.sample.branches[i].from, b[i].from);
                assert_int_equal(rec.sample.branches[i].to, b[i].to);
                assert_int_equal(rec.sample.branches[i].cycles, b[i].cycles);
                assert_int_equal(rec.sample.branches[i].mispredicted, b[i].mispredicted);
                assert_int_equal(rec.sample.branches[i].predicted, b[i].predicted);
        }

        /* an empty stack (nothing retired yet in user space) is a sample with no branches */
        n = tb_sample(buf, sizeof(buf), 0x401234, 100, 101, 5555, 3, 20000, b, 0, 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.sample.n_branches, 0);
}

static void test_sample_ips(void **state) {
        size_t n;

        (void) state;
        n = tb_sample(buf, sizeof(buf), 0x7f0000001000, 7, 8, 99, 1, 100000, NULL, 0, 0);
        assert_int_equal(n, 48);
        assert_int_equal(timing_record_decode(buf, n, IPS_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_SAMPLE);
        assert_int_equal(rec.sample.ip, 0x7f0000001000);
        assert_int_equal(rec.sample.n_branches, 0);
        assert_int_equal(rec.sample.period, 100000);
        /* the same bytes read as a branch sample lack the stack's count */
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);
        /* and a branch sample read as an IP sample has bytes left over */
        n = tb_sample(buf, sizeof(buf), 1, 7, 8, 99, 1, 100000, NULL, 0, 1);
        assert_int_equal(timing_record_decode(buf, n, IPS_TYPE, &rec), -EBADMSG);
}

static void test_mappings(void **state) {
        size_t n;

        (void) state;
        n = tb_mmap2(buf, sizeof(buf), 42, 43, 0x555555555000, 0x2000, 0x1000, 1234, "/usr/bin/prog", 77);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_MAPPING);
        assert_int_equal(rec.mapping.pid, 42);
        assert_int_equal(rec.mapping.tid, 43);
        assert_int_equal(rec.mapping.start, 0x555555555000);
        assert_int_equal(rec.mapping.len, 0x2000);
        assert_int_equal(rec.mapping.pgoff, 0x1000);
        assert_int_equal(rec.mapping.maj, 8);
        assert_int_equal(rec.mapping.min, 1);
        assert_int_equal(rec.mapping.ino, 1234);
        assert_true(rec.mapping.has_file_id);
        assert_int_equal(rec.mapping.prot, PROT_READ | PROT_EXEC);
        assert_string_equal(rec.mapping.path, "/usr/bin/prog");
        assert_int_equal(rec.time, 77);
        assert_int_equal(rec.pid, 42);

        n = tb_mmap(buf, sizeof(buf), 42, 43, 0x7f0000000000, 0x1000, 0, "[vdso]", 78);
        assert_int_equal(timing_record_decode(buf, n, IPS_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_MAPPING);
        assert_false(rec.mapping.has_file_id);
        assert_int_equal(rec.mapping.prot, PROT_EXEC);
        assert_string_equal(rec.mapping.path, "[vdso]");
        assert_int_equal(rec.time, 78);

        /* a path of exactly 8 bytes with its NUL: padded to 16 */
        n = tb_mmap2(buf, sizeof(buf), 1, 1, 0x1000, 0x1000, 0, 1, "/bin/sh", 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_string_equal(rec.mapping.path, "/bin/sh");
}

static void test_task_records(void **state) {
        size_t n;

        (void) state;
        n = tb_comm(buf, sizeof(buf), 5, 6, "hot-loop", 9);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_COMM);
        assert_string_equal(rec.comm, "hot-loop");
        assert_int_equal(rec.pid, 5);
        assert_int_equal(rec.tid, 6);
        assert_int_equal(rec.cpu, 1);
        assert_int_equal(rec.misc, 0);
        /* an exec's COMM says so in misc */
        {
                uint16_t misc = PERF_RECORD_MISC_COMM_EXEC;

                memcpy(buf + offsetof(struct perf_event_header, misc), &misc, sizeof(misc));
        }
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.misc, PERF_RECORD_MISC_COMM_EXEC);
        /* the longest comm the kernel has: 15 bytes and the NUL */
        n = tb_comm(buf, sizeof(buf), 5, 6, "fifteen-chars-x", 9);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_string_equal(rec.comm, "fifteen-chars-x");
        n = tb_comm(buf, sizeof(buf), 5, 6, "sixteen-chars-xy", 9);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);

        n = tb_task(buf, sizeof(buf), PERF_RECORD_FORK, 20, 10, 21, 11, 1000);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_FORK);
        assert_int_equal(rec.pid, 20);
        assert_int_equal(rec.tid, 21);
        assert_int_equal(rec.task.ppid, 10);
        assert_int_equal(rec.task.ptid, 11);
        assert_int_equal(rec.time, 1000);
        n = tb_task(buf, sizeof(buf), PERF_RECORD_EXIT, 20, 10, 21, 11, 2000);
        assert_int_equal(timing_record_decode(buf, n, IPS_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_EXIT);
        assert_int_equal(rec.time, 2000);

        n = tb_lost(buf, sizeof(buf), 12345, 3000);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_LOST);
        assert_int_equal(rec.lost, 12345);
        assert_int_equal(rec.cpu, 3);

        n = tb_throttle(buf, sizeof(buf), PERF_RECORD_THROTTLE, 4000);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_THROTTLE);
        assert_int_equal(rec.time, 4000);
        n = tb_throttle(buf, sizeof(buf), PERF_RECORD_UNTHROTTLE, 4001);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_UNTHROTTLE);
        assert_int_equal(rec.tid, 11);
}

static void test_other(void **state) {
        TbWriter w;
        size_t n;

        (void) state;
        w = tb_begin(buf, sizeof(buf), PERF_RECORD_SWITCH, 0);
        n = tb_end(&w);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_OTHER);
        assert_false(rec.has_id);
        w = tb_begin(buf, sizeof(buf), 0xfff0, 0);
        tb_u64(&w, 1);
        n = tb_end(&w);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.kind, TIMING_RECORD_OTHER);
}

static void test_malformed(void **state) {
        TimingBranch b[TIMING_BRANCHES_MAX + 1];
        uint64_t nr;
        size_t n;

        (void) state;
        fill_branches(b, TIMING_BRANCHES_MAX + 1);
        /* the most entries a sample may carry, and one more */
        n = tb_sample(buf, sizeof(buf), 1, 1, 1, 1, 1, 1, b, TIMING_BRANCHES_MAX, 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_int_equal(rec.sample.n_branches, TIMING_BRANCHES_MAX);
        n = tb_sample(buf, sizeof(buf), 1, 1, 1, 1, 1, 1, b, TIMING_BRANCHES_MAX + 1, 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);

        /* a count running past the record, a huge one, one short of the record */
        n = tb_sample(buf, sizeof(buf), 1, 1, 1, 1, 1, 1, b, 4, 1);
        nr = 5;
        memcpy(buf + 48, &nr, sizeof(nr));
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);
        nr = UINT64_MAX / 24 + 2;
        memcpy(buf + 48, &nr, sizeof(nr));
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);
        nr = 3;
        memcpy(buf + 48, &nr, sizeof(nr));
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);

        /* the header's size against the bytes given, and records cut short */
        n = tb_sample(buf, sizeof(buf), 1, 1, 1, 1, 1, 1, b, 2, 1);
        assert_int_equal(timing_record_decode(buf, n - 8, BRANCH_TYPE, &rec), -EBADMSG);
        assert_int_equal(timing_record_decode(buf, n + 8, BRANCH_TYPE, &rec), -EBADMSG);
        assert_int_equal(timing_record_decode(buf, 4, BRANCH_TYPE, &rec), -EBADMSG);
        assert_int_equal(timing_record_decode(buf, 0, BRANCH_TYPE, &rec), -EBADMSG);
        for (size_t cut = 8; cut < n; cut += 8) {
                uint16_t size = (uint16_t) cut;

                memcpy(buf + 6, &size, sizeof(size));
                assert_int_equal(timing_record_decode(buf, cut, BRANCH_TYPE, &rec), -EBADMSG);
        }

        /* a path with no NUL inside the record, and an empty one */
        n = tb_mmap2(buf, sizeof(buf), 1, 1, 0x1000, 0x1000, 0, 1, "/bin/abcdefghijklmn", 1);
        memset(buf + 72, 'x', n - 72 - 24);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);
        n = tb_mmap2(buf, sizeof(buf), 1, 1, 0x1000, 0x1000, 0, 1, "", 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), 0);
        assert_string_equal(rec.mapping.path, "");
        /* a mapping record too short for its fixed fields, or for its sample_id */
        n = tb_mmap2(buf, sizeof(buf), 1, 1, 0x1000, 0x1000, 0, 1, "/a", 1);
        for (size_t cut = 8; cut < n; cut += 8) {
                uint16_t size = (uint16_t) cut;

                memcpy(buf + 6, &size, sizeof(size));
                assert_int_equal(timing_record_decode(buf, cut, BRANCH_TYPE, &rec), -EBADMSG);
        }
        /* a mapping whose end wraps, or is empty */
        n = tb_mmap2(buf, sizeof(buf), 1, 1, UINT64_MAX - 0xfff, 0x2000, 0, 1, "/a", 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);
        n = tb_mmap2(buf, sizeof(buf), 1, 1, 0x1000, 0, 0, 1, "/a", 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE, &rec), -EBADMSG);

        /* fixed-size records with bytes left over */
        n = tb_lost(buf, sizeof(buf), 1, 1);
        memmove(buf + 24, buf + 16, n - 16);
        {
                uint16_t size = (uint16_t) (n + 8);

                memcpy(buf + 6, &size, sizeof(size));
        }
        assert_int_equal(timing_record_decode(buf, n + 8, BRANCH_TYPE, &rec), -EBADMSG);

        /* layouts this reader does not know */
        n = tb_lost(buf, sizeof(buf), 1, 1);
        assert_int_equal(timing_record_decode(buf, n, BRANCH_TYPE | PERF_SAMPLE_ADDR, &rec), -EINVAL);
        assert_int_equal(timing_record_decode(NULL, n, BRANCH_TYPE, &rec), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sample_branches),
                cmocka_unit_test(test_sample_ips),
                cmocka_unit_test(test_mappings),
                cmocka_unit_test(test_task_records),
                cmocka_unit_test(test_other),
                cmocka_unit_test(test_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

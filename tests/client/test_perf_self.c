/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: a thread's own perf events read through their control page, against read(2) on
 * the kernel's software events, and the RDPMC branch's arithmetic on fake pages
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/perf-self.h"

#define GROUP_FORMAT                                                                                      \
        (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID | PERF_FORMAT_GROUP)
#define BURN_NS UINT64_C(30000000)
#define PAGES_TOUCHED 64U

static int open_software(uint64_t config, int group_fd) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(attr),
                .config = config,
                .read_format = GROUP_FORMAT,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };

        return (int) syscall(SYS_perf_event_open, &attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

static uint64_t thread_cpu_ns(void) {
        struct timespec ts;

        assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static void burn(uint64_t ns) {
        uint64_t until = thread_cpu_ns() + ns;
        volatile uint64_t sink = 0;

        while (thread_cpu_ns() < until)
                for (unsigned i = 0; i < 1000; i++)
                        sink += i;
        (void) sink;    /* clang: the sum is only there to burn time */
}

/* read(2) of the group, for comparison, decoded by hand rather than by the code under test. */
static uint64_t read_direct(int fd, uint64_t id) {
        uint64_t buffer[3 + 2 * 8];
        ssize_t n = read(fd, buffer, sizeof(buffer));

        assert_true(n >= 24);
        for (uint64_t i = 0; i < buffer[0]; i++)
                if (buffer[3 + 2 * i + 1] == id)
                        return buffer[3 + 2 * i];
        fail_msg("no event of id %llu in the group", (unsigned long long) id);
        return 0;
}

static void test_software_events(void **state) {
        PerfSelf *clock = NULL, *faults = NULL;
        PerfSelfCount c0, c1, f0, f1;
        uint64_t clock_id, faults_id, direct;
        int clock_fd, faults_fd;
        unsigned char *pages;
        long page_size = sysconf(_SC_PAGESIZE);

        (void) state;
        clock_fd = open_software(PERF_COUNT_SW_TASK_CLOCK, -1);
        if (clock_fd < 0)
                skip();         /* perf_event_paranoid 3 or a kernel without perf events */
        faults_fd = open_software(PERF_COUNT_SW_PAGE_FAULTS, clock_fd);
        assert_true(faults_fd >= 0);
        assert_int_equal(ioctl(clock_fd, PERF_EVENT_IOC_ID, &clock_id), 0);
        assert_int_equal(ioctl(faults_fd, PERF_EVENT_IOC_ID, &faults_id), 0);

        assert_int_equal(perf_self_new(clock_fd, GROUP_FORMAT, &clock), 0);
        assert_int_equal(perf_self_new(faults_fd, GROUP_FORMAT, &faults), 0);
        assert_int_equal(perf_self_fd(clock), clock_fd);

        /* the control page as the kernel fills it for a software event: no counter index */
        assert_int_equal(perf_self_page(clock)->cap_bit0_is_deprecated, 1);
        assert_int_equal(perf_self_page(clock)->index, 0);
        assert_true(perf_self_page(clock)->size >= offsetof(struct perf_event_mmap_page, time_zero));

        assert_int_equal(perf_self_read(clock, &c0), 0);
        assert_false(perf_self_last_in_user_space(clock));     /* index 0: read(2) */
        assert_int_equal(perf_self_read(faults, &f0), 0);
        burn(BURN_NS);
        pages = mmap(NULL, PAGES_TOUCHED * (size_t) page_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(pages != MAP_FAILED);
        for (unsigned i = 0; i < PAGES_TOUCHED; i++)
                pages[(size_t) i * (size_t) page_size] = 1;
        assert_int_equal(perf_self_read(clock, &c1), 0);
        assert_int_equal(perf_self_read(faults, &f1), 0);
        direct = read_direct(clock_fd, clock_id);
        (void) munmap(pages, PAGES_TOUCHED * (size_t) page_size);

        /* counts and times move forward, and the burn is in the task clock */
        assert_true(c1.value >= c0.value + BURN_NS * 9 / 10);
        assert_true(c1.value <= c0.value + BURN_NS * 3);
        assert_true(c1.time_enabled >= c0.time_enabled);
        assert_true(c1.time_running >= c0.time_running);
        assert_true(c1.time_running <= c1.time_enabled);
        assert_true(f1.value >= f0.value + PAGES_TOUCHED);
        /* read(2) right after agrees, a little later */
        assert_true(direct >= c1.value);
        assert_true(direct - c1.value < UINT64_C(5000000));
        assert_true(read_direct(faults_fd, faults_id) >= f1.value);

        /* the group in one read(2): each event's own row, found by its id, in either order */
        {
                PerfSelf *group[] = { faults, clock };
                PerfSelfCount g[2];

                burn(BURN_NS / 3);
                assert_int_equal(perf_self_read_group(group, 2, g), 0);
                assert_true(g[1].value >= c1.value + BURN_NS / 3 * 9 / 10);
                assert_true(g[0].value >= f1.value && g[0].value < f1.value + 1000);
                assert_int_equal(g[0].time_enabled, g[1].time_enabled);
                assert_false(perf_self_last_in_user_space(clock));
                assert_int_equal(perf_self_read_group(group, 0, g), -EINVAL);
        }

        perf_self_free(clock);
        perf_self_free(faults);
        /* borrowed, not closed */
        assert_int_equal(fcntl(clock_fd, F_GETFD), FD_CLOEXEC);
        (void) close(faults_fd);
        (void) close(clock_fd);
}

static void test_bad_fds(void **state) {
        PerfSelf *s = NULL, *untouched = (PerfSelf *) &untouched;
        PerfSelfCount count;
        int pipe_fds[2], fd;

        (void) state;
        /* a closed fd, a fd that is no perf event, and a read_format without the times */
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(close(fd), 0);
        s = untouched;
        assert_int_equal(perf_self_new(fd, GROUP_FORMAT, &s), -EBADF);
        assert_ptr_equal(s, untouched);
        assert_int_equal(pipe2(pipe_fds, O_CLOEXEC), 0);
        assert_true(perf_self_new(pipe_fds[0], PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                                  &s) < 0);
        assert_int_equal(fcntl(pipe_fds[0], F_GETFD), FD_CLOEXEC);
        (void) close(pipe_fds[0]);
        (void) close(pipe_fds[1]);

        fd = open_software(PERF_COUNT_SW_TASK_CLOCK, -1);
        if (fd < 0)
                skip();
        assert_int_equal(perf_self_new(fd, PERF_FORMAT_TOTAL_TIME_ENABLED, &s), -EINVAL);
        assert_int_equal(perf_self_new(fd, PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                                       PERF_FORMAT_GROUP, &s), -EINVAL);
        assert_int_equal(perf_self_new(fd, GROUP_FORMAT, &s), 0);
        /* its fd closed behind its back: the read(2) the software event needs fails cleanly */
        assert_int_equal(close(fd), 0);
        assert_int_equal(perf_self_read(s, &count), -EBADF);
        /* the mapping holds the event: its page is still there to read */
        assert_int_equal(perf_self_page(s)->cap_bit0_is_deprecated, 1);
        assert_int_equal(perf_self_read(NULL, &count), -EINVAL);
        perf_self_free(s);
        assert_null(perf_self_free(NULL));
}

/* A fake CPU: the counter and the timestamp the test sets, and a page the "kernel" rewrites
 * a given number of times while the reader is in its loop. */
static struct {
        uint64_t counter;
        uint64_t timestamp;
        uint32_t last_index;
        unsigned rewrites;
        struct perf_event_mmap_page *page;
} fake;

static uint64_t fake_counter(uint32_t index) {
        fake.last_index = index;
        if (fake.rewrites > 0) {
                fake.rewrites--;
                fake.page->lock += 2;
        }
        return fake.counter;
}

static uint64_t fake_timestamp(void) {
        return fake.timestamp;
}

static const PerfSelfHardware fake_hardware = {
        .read_counter = fake_counter,
        .read_timestamp = fake_timestamp,
};

static void fake_page(struct perf_event_mmap_page *page, uint32_t index, int64_t offset, uint16_t width) {
        memset(page, 0, sizeof(*page));
        page->cap_bit0_is_deprecated = 1;
        page->cap_user_rdpmc = 1;
        page->index = index;
        page->offset = offset;
        page->pmc_width = width;
        page->time_enabled = 1000;
        page->time_running = 600;
        fake = (__typeof__(fake)) { .page = page };
}

static void test_rdpmc_arithmetic(void **state) {
        static struct perf_event_mmap_page page;
        PerfSelfCount count;

        (void) state;
        /* offset plus the counter; RDPMC of index - 1 (the kernel's index is one more) */
        fake_page(&page, 3, 1000, 48);
        fake.counter = 234;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(fake.last_index, 2);
        assert_int_equal(count.value, 1234);
        assert_int_equal(count.time_enabled, 1000);
        assert_int_equal(count.time_running, 600);

        /* a 48-bit counter with its top bit set is negative: the kernel's offset makes up */
        fake_page(&page, (UINT32_C(1) << 30) + 1, 1000000, 48);
        fake.counter = UINT64_C(0xFFFFFFFFFFF0);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(fake.last_index, UINT32_C(1) << 30);
        assert_int_equal(count.value, 1000000 - 16);

        /* bits above the width are not the counter's */
        fake_page(&page, 1, 0, 48);
        fake.counter = UINT64_C(0xABCD000000000010);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.value, 16);
        fake.counter = UINT64_C(0x00007FFFFFFFFFFF);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.value, UINT64_C(0x00007FFFFFFFFFFF));

        /* a 64-bit counter as it is, the offset wrapping as two's complement */
        fake_page(&page, 1, -5, 64);
        fake.counter = UINT64_C(0x8000000000000000);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.value, UINT64_C(0x7FFFFFFFFFFFFFFB));

        /* 40-bit (AMD-like, small) width */
        fake_page(&page, 1, 100, 40);
        fake.counter = UINT64_C(0xFFFFFFFFFF);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.value, 99);
}

static void test_time_scaling(void **state) {
        static struct perf_event_mmap_page page;
        PerfSelfCount count;

        (void) state;
        /* 2 ns per cycle (mult 2048 >> 10), the kernel's offset taking off its "now" */
        fake_page(&page, 1, 0, 48);
        page.cap_user_time = 1;
        page.time_mult = 2048;
        page.time_shift = 10;
        page.time_offset = (uint64_t) -INT64_C(1500);
        fake.timestamp = 1000;
        fake.counter = 7;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.value, 7);
        assert_int_equal(count.time_enabled, 1000 + 2000 - 1500);
        assert_int_equal(count.time_running, 600 + 2000 - 1500);

        /* large timestamps: the product needs more than 64 bits */
        page.time_mult = UINT32_C(0x80000000);
        page.time_shift = 31;
        page.time_offset = 0;
        fake.timestamp = UINT64_C(1) << 62;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.time_enabled, 1000 + (UINT64_C(1) << 62));

        /* cap_user_time_short: the timestamp counted from time_cycles within time_mask */
        page.cap_user_time_short = 1;
        page.time_mult = 1;
        page.time_shift = 0;
        page.time_offset = 0;
        page.time_cycles = 0x1000;
        page.time_mask = 0xFFF;
        fake.timestamp = 0x12345;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.time_enabled, 1000 + 0x1000 + 0x345);
        assert_int_equal(count.time_running, 600 + 0x1000 + 0x345);

        /* without cap_user_time the times stay as the kernel wrote them */
        page.cap_user_time = 0;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.time_enabled, 1000);
        assert_int_equal(count.time_running, 600);
}

static void test_fallback_and_seqlock(void **state) {
        static struct perf_event_mmap_page page;
        PerfSelfCount count = { .value = 42 };

        (void) state;
        /* not on a counter, no user RDPMC, widths the arithmetic cannot take, no page, no CPU */
        fake_page(&page, 0, 0, 48);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), PERF_SELF_E_SYSCALL);
        fake_page(&page, 1, 0, 48);
        page.cap_user_rdpmc = 0;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), PERF_SELF_E_SYSCALL);
        fake_page(&page, 1, 0, 0);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), PERF_SELF_E_SYSCALL);
        fake_page(&page, 1, 0, 65);
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), PERF_SELF_E_SYSCALL);
        fake_page(&page, 1, 0, 48);
        page.cap_user_time = 1;
        page.time_shift = 64;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), PERF_SELF_E_SYSCALL);
        assert_int_equal(perf_self_read_page(NULL, &fake_hardware, &count), PERF_SELF_E_SYSCALL);
        assert_int_equal(perf_self_read_page(&page, NULL, &count), PERF_SELF_E_SYSCALL);
        assert_int_equal(count.value, 42);      /* untouched */

        /* the kernel rewrote the page during the read: read again, and give the new count */
        fake_page(&page, 1, 10, 48);
        fake.counter = 5;
        fake.rewrites = 3;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), 0);
        assert_int_equal(count.value, 15);
        assert_int_equal(fake.rewrites, 0);
        /* and rewrote it at every read: give up, do not spin */
        fake.rewrites = 100000;
        count.value = 42;
        assert_int_equal(perf_self_read_page(&page, &fake_hardware, &count), -EAGAIN);
        assert_int_equal(count.value, 42);
}

static void test_decode(void **state) {
        const uint64_t times = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        uint64_t group[] = { 2, 100, 90, 11, 501, 22, 502 };
        uint64_t single[] = { 33, 100, 90, 503 };
        uint64_t lost[] = { 2, 100, 90, 11, 501, 0, 22, 502, 0 };
        PerfSelfCount count;

        (void) state;
        assert_int_equal(perf_self_decode(group, sizeof(group), GROUP_FORMAT, 502, &count), 0);
        assert_int_equal(count.value, 22);
        assert_int_equal(count.time_enabled, 100);
        assert_int_equal(count.time_running, 90);
        assert_int_equal(perf_self_decode(group, sizeof(group), GROUP_FORMAT, 501, &count), 0);
        assert_int_equal(count.value, 11);
        assert_int_equal(perf_self_decode(group, sizeof(group), GROUP_FORMAT, 999, &count), -ENOENT);
        assert_int_equal(perf_self_decode(lost, sizeof(lost), GROUP_FORMAT | PERF_FORMAT_LOST, 502, &count), 0);
        assert_int_equal(count.value, 22);
        assert_int_equal(perf_self_decode(single, sizeof(single), times | PERF_FORMAT_ID, 0, &count), 0);
        assert_int_equal(count.value, 33);
        assert_int_equal(perf_self_decode(single, 3 * sizeof(uint64_t), times, 0, &count), 0);
        /* what read(2) gave does not match the format */
        assert_int_equal(perf_self_decode(group, sizeof(group) - 8, GROUP_FORMAT, 502, &count), -EBADMSG);
        assert_int_equal(perf_self_decode(group, sizeof(group) - 1, GROUP_FORMAT, 502, &count), -EBADMSG);
        assert_int_equal(perf_self_decode(group, 16, GROUP_FORMAT, 502, &count), -EBADMSG);
        assert_int_equal(perf_self_decode(single, sizeof(single), times, 0, &count), -EBADMSG);
        group[0] = UINT64_MAX;
        assert_int_equal(perf_self_decode(group, sizeof(group), GROUP_FORMAT, 502, &count), -EBADMSG);
        assert_int_equal(perf_self_decode(single, sizeof(single), PERF_FORMAT_ID, 0, &count), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_software_events),
                cmocka_unit_test(test_bad_fds),
                cmocka_unit_test(test_rdpmc_arithmetic),
                cmocka_unit_test(test_time_scaling),
                cmocka_unit_test(test_fallback_and_seqlock),
                cmocka_unit_test(test_decode),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

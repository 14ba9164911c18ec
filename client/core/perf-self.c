/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: a thread's own perf event read through the event's control page (RDPMC, no
 * system call) where the kernel allows it, with read(2) everywhere else
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/perf-self.h"
#include "macro.h"

/* The kernel rewrites the page when the event is scheduled in or out; a reader that kept
 * meeting a rewrite gives up rather than spin. */
#define PERF_SELF_PAGE_ATTEMPTS 64U
/* read(2) of a group: room for this many events first, doubled on -ENOSPC up to the most. */
#define PERF_SELF_GROUP_EVENTS_FIRST 16U
#define PERF_SELF_GROUP_EVENTS_MAX 1024U

struct PerfSelf {
        int fd;                         /* borrowed */
        uint64_t read_format;
        uint64_t id;                    /* the kernel's id of the event: its row in a group read */
        const volatile struct perf_event_mmap_page *page;
        size_t page_size;
        uint64_t *buffer;               /* read(2) of a group */
        size_t buffer_words;
        bool last_in_user_space;
};

/* The page is read through a volatile pointer; the compiler must not move those reads across
 * the lock's. The kernel writes the page on this thread's CPU while the thread is switched
 * out, so no CPU barrier is needed (as in the kernel's own reader). */
#define COMPILER_BARRIER() __atomic_signal_fence(__ATOMIC_SEQ_CST)

static uint64_t sign_extend(uint64_t raw, unsigned width) {
        uint64_t mask = width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;

        raw &= mask;
        if (width < 64 && (raw >> (width - 1)) & 1)
                raw |= ~mask;
        return raw;
}

/* The kernel's mul_u64_u32_shr(): the timestamp converted to ns. */
static uint64_t scale_cycles(uint64_t cycles, uint32_t mult, unsigned shift) {
        return (uint64_t) (((unsigned __int128) cycles * mult) >> shift);
}

int perf_self_read_page(const volatile struct perf_event_mmap_page *page, const PerfSelfHardware *hw,
                        PerfSelfCount *ret) {
        if (!page || !hw)
                return PERF_SELF_E_SYSCALL;
        for (unsigned attempt = 0; attempt < PERF_SELF_PAGE_ATTEMPTS; attempt++) {
                uint64_t enabled, running, count, cycles = 0, time_offset = 0, time_cycles = 0;
                uint64_t time_mask = UINT64_MAX;
                uint32_t sequence, index, time_mult = 0;
                uint16_t width, time_shift = 0;
                bool user_time;

                sequence = page->lock;
                COMPILER_BARRIER();
                index = page->index;
                width = page->pmc_width;
                /* index 0: not on a counter now (a software event, or one switched out) */
                if (!page->cap_user_rdpmc || index == 0 || width == 0 || width > 64)
                        return PERF_SELF_E_SYSCALL;
                enabled = page->time_enabled;
                running = page->time_running;
                user_time = page->cap_user_time;
                if (user_time) {
                        cycles = hw->read_timestamp();
                        time_mult = page->time_mult;
                        time_shift = page->time_shift;
                        time_offset = page->time_offset;
                        if (page->cap_user_time_short) {
                                time_cycles = page->time_cycles;
                                time_mask = page->time_mask;
                        }
                }
                if (time_shift >= 64)
                        return PERF_SELF_E_SYSCALL;
                count = (uint64_t) page->offset;
                count += sign_extend(hw->read_counter(index - 1), width);
                COMPILER_BARRIER();
                if (page->lock != sequence)
                        continue;
                if (user_time) {
                        /* the time since the kernel wrote the times: the event is on a
                         * counter, so it ran and was enabled all of it. perf_mmap__read_self()
                         * adds it only when the two differ, as it wants their ratio alone;
                         * added always, both are current. */
                        uint64_t delta;

                        cycles = time_cycles + ((cycles - time_cycles) & time_mask);
                        delta = time_offset + scale_cycles(cycles, time_mult, time_shift);
                        enabled += delta;
                        running += delta;
                }
                *ret = (PerfSelfCount) { .value = count, .time_enabled = enabled, .time_running = running };
                return 0;
        }
        return -EAGAIN;
}

#if defined(__x86_64__)
static uint64_t x86_rdpmc(uint32_t index) {
        uint32_t lo, hi;

        __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index));
        return (uint64_t) hi << 32 | lo;
}

static uint64_t x86_rdtsc(void) {
        uint32_t lo, hi;

        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return (uint64_t) hi << 32 | lo;
}

static const PerfSelfHardware x86_hardware = {
        .read_counter = x86_rdpmc,
        .read_timestamp = x86_rdtsc,
};

const PerfSelfHardware *perf_self_hardware(void) {
        return &x86_hardware;
}
#else
const PerfSelfHardware *perf_self_hardware(void) {
        return NULL;
}
#endif

int perf_self_decode(const void *buffer, size_t size, uint64_t read_format, uint64_t id, PerfSelfCount *ret) {
        const uint64_t times = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        size_t words = size / sizeof(uint64_t), row_words, at;
        const uint64_t *w = buffer;
        uint64_t n;

        if ((read_format & times) != times || ((read_format & PERF_FORMAT_GROUP) && !(read_format & PERF_FORMAT_ID)))
                return -EINVAL;
        if (size % sizeof(uint64_t) != 0)
                return -EBADMSG;
        row_words = 1 + !!(read_format & PERF_FORMAT_ID) + !!(read_format & PERF_FORMAT_LOST);
        if (!(read_format & PERF_FORMAT_GROUP)) {
                /* value, enabled, running, [id], [lost] */
                if (words != 3 + row_words - 1)
                        return -EBADMSG;
                *ret = (PerfSelfCount) { .value = w[0], .time_enabled = w[1], .time_running = w[2] };
                return 0;
        }
        /* nr, enabled, running, then nr rows of value, id, [lost] */
        if (words < 3)
                return -EBADMSG;
        n = w[0];
        if (n > PERF_SELF_GROUP_EVENTS_MAX || words != 3 + n * row_words)
                return -EBADMSG;
        for (at = 3; at < words; at += row_words)
                if (w[at + 1] == id) {
                        *ret = (PerfSelfCount) { .value = w[at], .time_enabled = w[1], .time_running = w[2] };
                        return 0;
                }
        return -ENOENT;
}

int perf_self_new(int fd, uint64_t read_format, PerfSelf **ret) {
        _cleanup_free_ PerfSelf *s = NULL;
        const uint64_t times = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        long page_size = sysconf(_SC_PAGESIZE);
        void *page;

        if (fd < 0 || fcntl(fd, F_GETFD) < 0)
                return -EBADF;
        if ((read_format & times) != times || ((read_format & PERF_FORMAT_GROUP) && !(read_format & PERF_FORMAT_ID)))
                return -EINVAL;
        if (page_size <= 0)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->fd = fd;
        s->read_format = read_format;
        if ((read_format & PERF_FORMAT_ID) && ioctl(fd, PERF_EVENT_IOC_ID, &s->id) < 0)
                return negative_errno();
        /* the control page alone: no data pages, so no ring buffer, and read only */
        page = mmap(NULL, (size_t) page_size, PROT_READ, MAP_SHARED, fd, 0);
        if (page == MAP_FAILED)
                return negative_errno();
        s->page = page;
        s->page_size = (size_t) page_size;
        *ret = TAKE_PTR(s);
        return 0;
}

PerfSelf *perf_self_free(PerfSelf *s) {
        if (!s)
                return NULL;
        if (s->page)
                (void) munmap((void *) s->page, s->page_size);
        free(s->buffer);
        free(s);
        return NULL;
}

/* read(2) of the event into s->buffer; returns the bytes read or a negative errno. */
static ssize_t read_buffer(PerfSelf *s) {
        size_t first = (s->read_format & PERF_FORMAT_GROUP) ? 3 + PERF_SELF_GROUP_EVENTS_FIRST * 3 : 5;
        ssize_t n;

        if (!s->buffer) {
                s->buffer = calloc(first, sizeof(uint64_t));
                if (!s->buffer)
                        return -ENOMEM;
                s->buffer_words = first;
        }
        for (;;) {
                uint64_t *bigger;

                n = read(s->fd, s->buffer, s->buffer_words * sizeof(uint64_t));
                if (n >= 0)
                        break;
                if (errno == EINTR)
                        continue;
                /* a group larger than the buffer */
                if (errno != ENOSPC || s->buffer_words >= 3 + PERF_SELF_GROUP_EVENTS_MAX * 3)
                        return negative_errno();
                bigger = realloc(s->buffer, 2 * s->buffer_words * sizeof(uint64_t));
                if (!bigger)
                        return -ENOMEM;
                s->buffer = bigger;
                s->buffer_words *= 2;
        }
        return n;
}

static int read_syscall(PerfSelf *s, PerfSelfCount *ret) {
        ssize_t n = read_buffer(s);

        if (n < 0)
                return (int) n;
        return perf_self_decode(s->buffer, (size_t) n, s->read_format, s->id, ret);
}

int perf_self_read(PerfSelf *s, PerfSelfCount *ret) {
        int r;

        if (!s)
                return -EINVAL;
        r = perf_self_read_page(s->page, perf_self_hardware(), ret);
        if (r < 0 && r != -EAGAIN)
                return r;
        s->last_in_user_space = r == 0;
        if (r == 0)
                return 0;
        return read_syscall(s, ret);
}

int perf_self_read_group(PerfSelf *const *events, size_t n, PerfSelfCount *ret) {
        const PerfSelfHardware *hw = perf_self_hardware();
        bool syscall_needed = false;
        ssize_t size;
        int r;

        if (n == 0 || !events[0])
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!events[i] || events[i]->read_format != events[0]->read_format)
                        return -EINVAL;
                r = perf_self_read_page(events[i]->page, hw, &ret[i]);
                if (r < 0 && r != -EAGAIN)
                        return r;
                events[i]->last_in_user_space = r == 0;
                syscall_needed = syscall_needed || r != 0;
        }
        if (!syscall_needed)
                return 0;
        if (!(events[0]->read_format & PERF_FORMAT_GROUP)) {
                for (size_t i = 0; i < n; i++)
                        if (!events[i]->last_in_user_space && (r = read_syscall(events[i], &ret[i])) < 0)
                                return r;
                return 0;
        }
        size = read_buffer(events[0]);
        if (size < 0)
                return (int) size;
        for (size_t i = 0; i < n; i++)
                if (!events[i]->last_in_user_space &&
                    (r = perf_self_decode(events[0]->buffer, (size_t) size, events[0]->read_format, events[i]->id,
                                          &ret[i])) < 0)
                        return r;
        return 0;
}

bool perf_self_last_in_user_space(const PerfSelf *s) {
        return s && s->last_in_user_space;
}

const volatile struct perf_event_mmap_page *perf_self_page(const PerfSelf *s) {
        return s ? s->page : NULL;
}

int perf_self_fd(const PerfSelf *s) {
        return s ? s->fd : -EBADF;
}

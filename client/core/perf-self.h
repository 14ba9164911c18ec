/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: reading a counting perf event of the calling thread without a system call
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One event's count and its times (ns) at the moment of the read, as read(2) of the event
 * would give them. */
typedef struct PerfSelfCount {
        uint64_t value;
        uint64_t time_enabled;
        uint64_t time_running;
} PerfSelfCount;

/* What the fast path needs of the CPU; tests feed fake ones. */
typedef struct PerfSelfHardware {
        uint64_t (*read_counter)(uint32_t index);       /* RDPMC of the page's index - 1 */
        uint64_t (*read_timestamp)(void);               /* RDTSC */
} PerfSelfHardware;

/* perf_self_read_page() found the event not readable in user space: a software event (index
 * 0), an event not on a counter now, a kernel without cap_user_rdpmc, a counter width the
 * arithmetic cannot take, or no RDPMC on this architecture. Read it with read(2). */
#define PERF_SELF_E_SYSCALL 1

/* The seqlock loop of perf_event_open(2) on the control page, as the kernel's
 * perf_mmap__read_self() does it: when cap_user_rdpmc and index != 0, the count is offset plus
 * the counter read by hw->read_counter(index - 1), sign-extended from pmc_width bits; with
 * cap_user_time, time_enabled and time_running are advanced by the time since the kernel
 * wrote them (time_offset + timestamp * time_mult >> time_shift, with time_cycles/time_mask
 * under cap_user_time_short). Returns 0, PERF_SELF_E_SYSCALL, or -EAGAIN when the kernel kept
 * rewriting the page. */
int perf_self_read_page(const volatile struct perf_event_mmap_page *page, const PerfSelfHardware *hw,
                        PerfSelfCount *ret);

/* The x86-64 RDPMC and RDTSC; NULL elsewhere (every read then takes read(2)). */
const PerfSelfHardware *perf_self_hardware(void);

/* Decodes what read(2) gave for an event of read_format (PERF_FORMAT_TOTAL_TIME_ENABLED and
 * _RUNNING required; with PERF_FORMAT_GROUP the row whose id is id, which needs
 * PERF_FORMAT_ID). -EBADMSG when the buffer does not hold what read_format says, -ENOENT when
 * the group has no event of that id. */
int perf_self_decode(const void *buffer, size_t size, uint64_t read_format, uint64_t id, PerfSelfCount *ret);

typedef struct PerfSelf PerfSelf;

/* Maps the control page (one page, read only, no data pages) of fd, a counting event that
 * counts the calling thread (pid 0 or its tid, cpu -1) opened with read_format. Borrows fd:
 * its owner (a pmugate_perf_handle of a handoff) keeps it open until perf_self_free(), since
 * read(2) needs it; the page stays valid without it. -EBADF for a closed fd, -EINVAL for a
 * read_format without the times, the mmap(2) error (-ENODEV) for a fd that is no perf event. */
int perf_self_new(int fd, uint64_t read_format, PerfSelf **ret);
PerfSelf *perf_self_free(PerfSelf *s);

/* Reads the event: through the control page with RDPMC when the kernel allows it, else with
 * read(2). Returns 0 or a negative errno (the read(2) error). */
int perf_self_read(PerfSelf *s, PerfSelfCount *ret);

/* Reads n events of one group (opened with PERF_FORMAT_GROUP) into ret[n]: each through its
 * control page where the kernel allows, the others from a single read(2) of the group (any
 * member's read gives every member's count), so that a group of software events costs one
 * system call, not one per event. Returns 0 or a negative errno. */
int perf_self_read_group(PerfSelf *const *events, size_t n, PerfSelfCount *ret);

/* How the last perf_self_read() of s went: true through the control page alone. */
bool perf_self_last_in_user_space(const PerfSelf *s);

/* The control page, for tests and diagnostics. */
const volatile struct perf_event_mmap_page *perf_self_page(const PerfSelf *s);
int perf_self_fd(const PerfSelf *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Drivers of the perf_event path: what opens, reads and closes an event that perf/perf-attr.c
 * has already validated. The kernel's driver (perf-kernel.c) opens through the privileged
 * opener (perf-opener.h) and reads the fds; the simulator's (sim/sim-perf.c) counts on the
 * simulated PMU as the kernel would program it. Errors are the kernel's negative errnos.
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct PerfDriver PerfDriver;

/* One event of a batch open: as the arguments of open below. */
typedef struct PerfDriverEvent {
        const struct perf_event_attr *attr;
        pid_t pid;
        int cgroup_fd;
        int cpu;
        int group;
        unsigned long flags;
} PerfDriverEvent;

/* A handle is >= 0 and names one open event of the driver. */
typedef struct PerfDriverVTable {
        const char *name;
        /* Opens one event as perf_event_open(attr, pid, cpu, group_fd, flags) would. cgroup_fd
         * >= 0 with PERF_FLAG_PID_CGROUP in flags counts that cgroup (pid is then ignored);
         * group is the handle of the group's leader or -1. Returns a handle or a negative errno. */
        int (*open)(PerfDriver *d, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                    int group, unsigned long flags);
        /* Optional: opens n events (1 to PERF_OPENER_BATCH_MAX) at once, as open would each:
         * ret_handles[i] is a handle or a negative errno. Returns 0, or a negative errno with
         * nothing opened. NULL: perf_driver_open_batch() opens them one at a time. */
        int (*open_batch)(PerfDriver *d, const PerfDriverEvent *events, size_t n, int *ret_handles);
        /* Like read(2) on the event's fd (the layout its read_format gives). Returns the bytes
         * read or a negative errno. */
        ssize_t (*read)(PerfDriver *d, int handle, void *buf, size_t size);
        /* PERF_EVENT_IOC_ENABLE / _DISABLE, with PERF_IOC_FLAG_GROUP when group. */
        int (*enable)(PerfDriver *d, int handle, bool group);
        int (*disable)(PerfDriver *d, int handle, bool group);
        /* A new fd of the event for passing to a client, or -EOPNOTSUPP (simulated events). */
        int (*export_fd)(PerfDriver *d, int handle);
        void (*close)(PerfDriver *d, int handle);
        void (*free)(PerfDriver *d);
} PerfDriverVTable;

struct PerfDriver {
        const PerfDriverVTable *vtable;
};

static inline int perf_driver_open(PerfDriver *d, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd,
                                   int cpu, int group, unsigned long flags) {
        return d->vtable->open(d, attr, pid, cgroup_fd, cpu, group, flags);
}
/* Opens n events, in one request when the driver can (the kernel's, through its opener: one
 * socket round trip for up to PERF_OPENER_BATCH_MAX fds), else one at a time. As open_batch. */
int perf_driver_open_batch(PerfDriver *d, const PerfDriverEvent *events, size_t n, int *ret_handles);
static inline ssize_t perf_driver_read(PerfDriver *d, int handle, void *buf, size_t size) {
        return d->vtable->read(d, handle, buf, size);
}
static inline int perf_driver_enable(PerfDriver *d, int handle, bool group) {
        return d->vtable->enable(d, handle, group);
}
static inline int perf_driver_disable(PerfDriver *d, int handle, bool group) {
        return d->vtable->disable(d, handle, group);
}
static inline int perf_driver_export_fd(PerfDriver *d, int handle) {
        return d->vtable->export_fd(d, handle);
}
static inline void perf_driver_close(PerfDriver *d, int handle) {
        if (handle >= 0)
                d->vtable->close(d, handle);
}

/* NULL-safe; returns NULL. */
PerfDriver *perf_driver_free(PerfDriver *d);

/* The kernel's driver. Every open goes through opener, which holds CAP_PERFMON; opener NULL
 * opens in this process (unit tests, and a daemon that runs unprivileged where
 * perf_event_paranoid allows what it opens). Handles are the fds. */
typedef struct PerfOpener PerfOpener;
int perf_driver_kernel_new(PerfOpener *opener /* may be NULL, not owned */, PerfDriver **ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's perf driver: events opened through the perf opener, read and switched on fds
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/perf-driver.h"
#include "backend/perf-opener.h"
#include "macro.h"
#include "pmugate-limits.h"

typedef struct PerfKernel {
        PerfDriver driver;
        PerfOpener *opener;     /* not owned; NULL: perf_event_open() in this process */
} PerfKernel;

static int kernel_open(PerfDriver *d, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                       int group, unsigned long flags) {
        PerfKernel *k = (PerfKernel *) d;
        struct perf_event_attr copy;
        int fd;

        if (!!(flags & PERF_FLAG_PID_CGROUP) != (cgroup_fd >= 0))
                return -EINVAL;
        if (k->opener)
                return perf_opener_open(k->opener, attr, pid, cgroup_fd, cpu, group,
                                        flags | PERF_FLAG_FD_CLOEXEC);
        copy = *attr;
        fd = (int) syscall(SYS_perf_event_open, &copy, cgroup_fd >= 0 ? cgroup_fd : pid, cpu, group,
                           flags | PERF_FLAG_FD_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int kernel_open_batch(PerfDriver *d, const PerfDriverEvent *events, size_t n, int *ret_handles) {
        PerfKernel *k = (PerfKernel *) d;
        PerfOpenerEvent batch[PERF_OPENER_BATCH_MAX];

        if (n == 0 || n > PERF_OPENER_BATCH_MAX)
                return -EINVAL;
        if (!k->opener) {
                for (size_t i = 0; i < n; i++)
                        ret_handles[i] = kernel_open(d, events[i].attr, events[i].pid, events[i].cgroup_fd,
                                                     events[i].cpu, events[i].group, events[i].flags);
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                batch[i] = (PerfOpenerEvent) { .attr = events[i].attr, .pid = events[i].pid,
                                               .cgroup_fd = events[i].cgroup_fd, .cpu = events[i].cpu,
                                               .group_fd = events[i].group,
                                               .flags = events[i].flags | PERF_FLAG_FD_CLOEXEC };
        return perf_opener_open_batch(k->opener, batch, n, ret_handles);
}

int perf_driver_open_batch(PerfDriver *d, const PerfDriverEvent *events, size_t n, int *ret_handles) {
        if (d->vtable->open_batch)
                return d->vtable->open_batch(d, events, n, ret_handles);
        for (size_t i = 0; i < n; i++)
                ret_handles[i] = perf_driver_open(d, events[i].attr, events[i].pid, events[i].cgroup_fd,
                                                  events[i].cpu, events[i].group, events[i].flags);
        return 0;
}

static ssize_t kernel_read(PerfDriver *d, int handle, void *buf, size_t size) {
        ssize_t n;

        (void) d;
        do
                n = read(handle, buf, size);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -errno : n;
}

static int kernel_ioctl(int handle, unsigned long request, bool group) {
        return ioctl(handle, request, group ? PERF_IOC_FLAG_GROUP : 0) < 0 ? -errno : 0;
}

static int kernel_enable(PerfDriver *d, int handle, bool group) {
        (void) d;
        return kernel_ioctl(handle, PERF_EVENT_IOC_ENABLE, group);
}

static int kernel_disable(PerfDriver *d, int handle, bool group) {
        (void) d;
        return kernel_ioctl(handle, PERF_EVENT_IOC_DISABLE, group);
}

static int kernel_export_fd(PerfDriver *d, int handle) {
        int fd;

        (void) d;
        /* Above stdin, stdout and stderr, whatever the daemon has closed. */
        fd = fcntl(handle, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

static void kernel_close(PerfDriver *d, int handle) {
        (void) d;
        (void) close(handle);
}

static void kernel_free(PerfDriver *d) {
        free(d);
}

static const PerfDriverVTable kernel_vtable = {
        .name = "kernel",
        .open = kernel_open,
        .open_batch = kernel_open_batch,
        .read = kernel_read,
        .enable = kernel_enable,
        .disable = kernel_disable,
        .export_fd = kernel_export_fd,
        .close = kernel_close,
        .free = kernel_free,
};

int perf_driver_kernel_new(PerfOpener *opener, PerfDriver **ret) {
        PerfKernel *k = calloc(1, sizeof(*k));

        if (!k)
                return -ENOMEM;
        k->driver.vtable = &kernel_vtable;
        k->opener = opener;
        *ret = &k->driver;
        return 0;
}

PerfDriver *perf_driver_free(PerfDriver *d) {
        if (d)
                d->vtable->free(d);
        return NULL;
}

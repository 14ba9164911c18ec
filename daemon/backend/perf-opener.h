/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf opener: a small process that keeps CAP_PERFMON and opens perf events for the
 * unprivileged server
 */
#pragma once

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct PerfOpener PerfOpener;

/* The messages between the daemon and its opener, over a socketpair of one binary (here for
 * the tests that send them raw). A request is exactly one PerfOpenerRequest with the fds its
 * fds field names in one SCM_RIGHTS, in this order; the answer one PerfOpenerReply, with the
 * new fd in SCM_RIGHTS when error is 0. The opener's first message, when it is ready, is a
 * reply without fd: 0, or the errno of perf_event_open() in it (a system-call filter). */
enum {
        PERF_OPENER_FD_GROUP = 1U << 0,
        PERF_OPENER_FD_CGROUP = 1U << 1,
};

typedef struct PerfOpenerRequest {
        uint8_t attr[sizeof(struct perf_event_attr)];
        int32_t pid;
        int32_t cpu;
        uint64_t flags;
        uint32_t fds;           /* PERF_OPENER_FD_* */
        uint32_t reserved;      /* 0 */
} PerfOpenerRequest;

typedef struct PerfOpenerReply {
        int32_t error;          /* 0: the fd follows; else a negative errno */
} PerfOpenerReply;

/* The opener's own check of a finished attr (perf/perf-attr.c's perf_attr_verify(), passed in
 * so that backend/ includes nothing of perf/): 0, or -EPERM with reason filled. */
typedef int (*PerfAttrVerify)(const struct perf_event_attr *attr, const uint32_t *types, size_t n,
                              char *reason, size_t size);

/* Forks the opener and waits until it is ready; call it before privileges are dropped. Returns
 * 0, or a negative errno when it could not start (the opener logs why it stopped). The child closes every fd but its
 * end of a SOCK_SEQPACKET socketpair, becomes uid:gid (when started as root; else it stays who
 * it is) keeping CAP_PERFMON alone (permitted, effective and bounding set; nothing inheritable
 * or ambient; no_new_privs; not dumpable), checks that this took, and then answers one request
 * at a time: the attr, pid, cpu, flags, with the group leader's fd and a cgroup directory fd
 * (when used) in SCM_RIGHTS. It checks the attr with verify against allowed_types (copied),
 * calls perf_event_open() and sends the fd back in SCM_RIGHTS, or the errno. It exits when the
 * server's end closes, and with SIGKILL when the server dies. */
int perf_opener_start(PerfAttrVerify verify, const uint32_t *allowed_types, size_t n_types, uid_t uid,
                      gid_t gid, PerfOpener **ret);

/* Opens one event as perf_event_open(attr, pid, cpu, group_fd, flags) would; cgroup_fd >= 0
 * with PERF_FLAG_PID_CGROUP in flags counts that cgroup directory (pid is then ignored). The
 * fd is close-on-exec. Returns the fd or a negative errno: the kernel's, -EPERM when the
 * opener's check refused the attr, -EINVAL for flags it does not pass, -EPIPE once the opener
 * is gone (killed, or it did not answer in PERF_OPENER_TIMEOUT_MSEC). */
int perf_opener_open(PerfOpener *o, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                     int group_fd, unsigned long flags);

/* 0 when perf_event_open() was allowed in the opener when it started, else the negative errno
 * it got (-EPERM: a system-call filter, such as the shipped unit's, leaves the call out). */
int perf_opener_probe_error(const PerfOpener *o);

pid_t perf_opener_pid(const PerfOpener *o);

/* Closes the server's end, which ends the opener, and reaps it. NULL-safe; returns NULL. */
PerfOpener *perf_opener_stop(PerfOpener *o);

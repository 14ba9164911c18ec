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

/* The messages between the daemon and its opener, over a socketpair of one binary or the
 * opener service's socket (here for the tests that send them raw). A request is exactly one PerfOpenerRequest with the fds its
 * fds field names in one SCM_RIGHTS, in this order; the answer one PerfOpenerReply, with the
 * new fd in SCM_RIGHTS when error is 0. The opener's first message on a connection, when it is
 * ready, is a reply without fd: 0, or the errno of perf_event_open() in it (a system-call
 * filter). */
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

/* A batch request: one PerfOpenerBatchHeader with magic PERF_OPENER_BATCH_MAGIC and n (1 to
 * PERF_OPENER_BATCH_MAX), followed by exactly n PerfOpenerRequest, the fds each names in one
 * SCM_RIGHTS, entry by entry in order (at most PERF_OPENER_BATCH_FDS_MAX). The answer is one
 * PerfOpenerBatchHeader (the same magic and n) followed by n int32_t errors, 0 or a negative
 * errno for each entry, with one fd in SCM_RIGHTS for each 0, in order. Each entry is checked
 * as a single request is (perf_attr_verify() on its attr); a message that is not a well-formed
 * request of either kind is answered with one PerfOpenerReply of -EINVAL and no fd. */
#define PERF_OPENER_BATCH_MAGIC UINT32_C(0x50474231)

typedef struct PerfOpenerBatchHeader {
        uint32_t magic;
        uint32_t n;
} PerfOpenerBatchHeader;

/* One event of perf_opener_open_batch(), as perf_opener_open() takes it. */
typedef struct PerfOpenerEvent {
        const struct perf_event_attr *attr;
        pid_t pid;
        int cgroup_fd;
        int cpu;
        int group_fd;
        unsigned long flags;
} PerfOpenerEvent;

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

/* The opener as a service of its own (pmugate-perf-opener, with its own system-call filter):
 * an opener that connects to the service's socket at path. Nothing is connected yet; returns 0
 * or -EINVAL (a relative path), -ENOMEM. perf_opener_stop() closes the connection only. */
int perf_opener_new_remote(const char *path, PerfOpener **ret);

/* Connects a remote opener and waits for the service's ready message; the service serves only
 * its own user, so call it once the daemon is that user. On failure (the socket is missing,
 * refused, the service did not answer in PERF_OPENER_TIMEOUT_MSEC) the negative errno is
 * returned and kept as perf_opener_probe_error(), and every open fails with -EPIPE: the daemon
 * serves without the perf path. A service that goes away later is connected to again at the
 * next open, once, and that open is asked again; when that fails too, the opener is reported
 * gone as a forked one is. */
int perf_opener_connect(PerfOpener *o);

/* Opens one event as perf_event_open(attr, pid, cpu, group_fd, flags) would; cgroup_fd >= 0
 * with PERF_FLAG_PID_CGROUP in flags counts that cgroup directory (pid is then ignored). The
 * fd is close-on-exec. Returns the fd or a negative errno: the kernel's, -EPERM when the
 * opener's check refused the attr, -EINVAL for flags it does not pass, -EPIPE once the opener
 * is gone (killed, or it did not answer in PERF_OPENER_TIMEOUT_MSEC). */
int perf_opener_open(PerfOpener *o, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                     int group_fd, unsigned long flags);

/* Opens n events (1 to PERF_OPENER_BATCH_MAX, carrying at most PERF_OPENER_BATCH_FDS_MAX group
 * and cgroup fds) in one request and one answer: ret_fds[i] is the fd or the negative errno of
 * events[i], as perf_opener_open() would return it. Returns 0 when the opener answered (each
 * entry then says how it went), or a negative errno with nothing opened: -EINVAL (a bad
 * count, flags), -EPIPE (the opener is gone), -ENOTCONN. A remote opener is connected to
 * again once as perf_opener_open() does. */
int perf_opener_open_batch(PerfOpener *o, const PerfOpenerEvent *events, size_t n, int *ret_fds);

/* 0 when perf_event_open() was allowed in the opener when it started, else the negative errno
 * it got (-EPERM: a system-call filter leaves the call out), or, for a remote opener, why it
 * could not be connected. */
int perf_opener_probe_error(const PerfOpener *o);

/* The forked opener's pid; 0 for a remote one (the peer credentials of a socket-activated
 * socket are whoever listens on it, systemd, not the service). */
pid_t perf_opener_pid(const PerfOpener *o);

/* The opener's side, for the forked opener and the pmugate-perf-opener program. */

/* Becomes uid:gid when root (root itself is refused), or keeps the identity it was started
 * with; keeps CAP_PERFMON alone in the permitted and effective sets when it had it, nothing
 * inheritable or ambient, the bounding set emptied but CAP_PERFMON when it may (root or
 * CAP_SETPCAP), no_new_privs, not dumpable; then checks /proc/self/status that all this took.
 * *ret_keep is the capability mask kept (0 or 1 << CAP_PERFMON). 0 or a negative errno,
 * logged. */
int perf_opener_drop_privileges(uid_t uid, gid_t gid, uint64_t *ret_keep);

/* Serves one connection sock until its peer closes it: the ready message, then one request at
 * a time, single or batch, each attr checked with verify against types. 0 at end of file, or a negative errno. */
int perf_opener_serve(int sock, PerfAttrVerify verify, const uint32_t *types, size_t n_types);

/* Closes the server's end, which ends the opener, and reaps it. NULL-safe; returns NULL. */
PerfOpener *perf_opener_stop(PerfOpener *o);

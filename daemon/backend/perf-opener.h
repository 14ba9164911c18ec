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

/* The opener's own check of a finished attr (perf/perf-attr.c's perf_attr_verify(), passed in
 * so that backend/ includes nothing of perf/): 0, or -EPERM with reason filled. */
typedef int (*PerfAttrVerify)(const struct perf_event_attr *attr, const uint32_t *types, size_t n, char *reason,
                              size_t size);

/* Forks the opener; call it before privileges are dropped. The child closes every fd but its
 * end of a SOCK_SEQPACKET socketpair, becomes uid:gid (when started as root; else it stays who
 * it is) keeping CAP_PERFMON alone (permitted, effective and bounding set; nothing inheritable
 * or ambient; no_new_privs; not dumpable), checks that this took, and then answers one request
 * at a time: the attr, pid, cpu, flags, with the group leader's fd and a cgroup directory fd
 * (when used) in SCM_RIGHTS. It checks the attr with verify against allowed_types (copied),
 * calls perf_event_open() and sends the fd back in SCM_RIGHTS, or the errno. It exits when the
 * server's end closes, and with SIGKILL when the server dies. */
int perf_opener_start(PerfAttrVerify verify, const uint32_t *allowed_types, size_t n_types, uid_t uid, gid_t gid,
                      PerfOpener **ret);

/* Opens one event as perf_event_open(attr, pid, cpu, group_fd, flags) would; cgroup_fd >= 0
 * with PERF_FLAG_PID_CGROUP in flags counts that cgroup directory (pid is then ignored). The
 * fd is close-on-exec. Returns the fd or a negative errno: the kernel's, -EPERM when the
 * opener's check refused the attr, -EINVAL for flags it does not pass, -EPIPE once the opener
 * is gone (killed, or it did not answer in PERF_OPENER_TIMEOUT_MSEC). */
int perf_opener_open(PerfOpener *o, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                     int group_fd, unsigned long flags);

pid_t perf_opener_pid(const PerfOpener *o);

/* Closes the server's end, which ends the opener, and reaps it. NULL-safe; returns NULL. */
PerfOpener *perf_opener_stop(PerfOpener *o);

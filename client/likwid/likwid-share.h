/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One measurement, several LIKWID access daemons: how they share the first one's session
 *
 * In marker mode (likwid-perfctr -m) likwid-perfctr starts an access daemon, then the measured
 * program's own liblikwid starts another. Both program the same counters, but pmugated gives
 * a CPU's lease to one session only. 'pmugate likwid' creates a run directory (mode 0700, the
 * user's own, named in PMUGATE_LIKWID_RUN); the first forwarder of the run listens on
 * "share" in it and every later forwarder of the run relays its LIKWID's records there, so
 * all of them run in the first one's session and leases. A joining process must be of the
 * same uid and a descendant of the LIKWID process that started the first forwarder.
 *
 * The forwarders also leave "void" in the run directory, a line saying why, when LIKWID's
 * counts cannot be trusted (a lease refused, pmugated lost): 'pmugate likwid' then fails
 * instead of passing on LIKWID's zeros with exit 0.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define LIKWID_RUN_ENV "PMUGATE_LIKWID_RUN"
#define LIKWID_SHARE_NAME "share"
#define LIKWID_VOID_NAME "void"

/* Opens the run directory path: -EPERM unless it is a directory (not a link) owned by the
 * caller's uid with no access for group or others. */
int likwid_run_dir_open(const char *path, int *ret_dirfd);

/* Binds and listens on the run's share socket: -EADDRINUSE when another forwarder of the run
 * did first. */
int likwid_share_listen(const char *run_dir, int *ret_fd);

/* Connects to the run's share socket and checks that its listener is of the caller's uid:
 * -ENOENT when nobody shares yet, -ECONNREFUSED when its forwarder is gone. */
int likwid_share_connect(const char *run_dir, int *ret_fd);

/* True when the peer of fd is of the caller's uid and pid ancestor (the LIKWID process that
 * started the first forwarder) is among its ancestors. */
bool likwid_peer_joins(int fd, pid_t ancestor);

/* True when pid is ancestor or descends from it, following /proc/PID/stat's parent at most
 * PMUGATE_LIKWID_ANCESTRY_MAX steps; proc_fd is an open /proc (a test's fake one). */
bool likwid_pid_descends(int proc_fd, pid_t pid, pid_t ancestor);

/* Leaves the reason in the run directory's void file (the first reason stays). */
int likwid_run_void(int dirfd, const char *reason);

/* Reads the void file into buf: 1 when LIKWID's counts are void, 0 when not. */
int likwid_run_void_reason(int dirfd, char *buf, size_t size);

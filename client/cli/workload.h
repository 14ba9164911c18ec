/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command pmugate topdown and stat wrap: started held back until the counters run,
 * optionally pinned to the measured CPUs, and reaped for its exit status
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define EXIT_SIGNAL_BASE 128
#define EXIT_CANNOT_EXECUTE 126
#define EXIT_NOT_FOUND 127

typedef struct Workload {
        pid_t pid;
        int pidfd;
        int go_fd;                      /* closing it lets the child exec */
        int failure_fd;
        int status;                     /* exit status to pass on; -1 while it runs */
} Workload;

#define WORKLOAD_NULL ((Workload) { .pid = -1, .pidfd = -1, .go_fd = -1, .failure_fd = -1, .status = -1 })

/* Forks the child, which waits for workload_release() and pins itself to pin[] (n_pin > 0). */
int workload_fork(Workload *w, char **command, const uint32_t *pin, size_t n_pin);

/* Lets the child exec; returns what stopped it (said on stderr), if anything. */
int workload_release(Workload *w, char **command, const char *verb);

/* Waits for the child and keeps its exit status (128 + signal when killed). */
void workload_reap(Workload *w);

/* Kills a child still running, reaps it and closes everything. */
void workload_abort(Workload *w);

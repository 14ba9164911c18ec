/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing -p: the threads of a running process (each gets its own events, as perf
 * record -p opens them) and the samples each task gave
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The threads of process pid now, from /proc/PID/task, ascending, at most
 * PERF_PROCESS_THREADS_MAX (the daemon checks no more in one process). Threads started later
 * are followed through inherit from the thread that starts them. Returns 0 with *ret (the
 * caller frees it) and *ret_n >= 1, -ESRCH when the process is gone, -E2BIG past the bound, or
 * a negative errno. */
int timing_threads_list(pid_t pid, pid_t **ret, size_t *ret_n);

/* The CPUs any of tasks may run on: the union of their affinities (an OpenMP runtime binds
 * each thread to its own). A task that ended meanwhile is left out. Returns 0 with *ret (the
 * caller frees it), -ESRCH when none could be asked, or a negative errno. */
int timing_threads_affinity(const pid_t *tasks, size_t n_tasks, uint32_t **ret, size_t *ret_n);

/* The threads of one affinity: an OpenMP or MPI runtime pins each to its own CPU(s), and a
 * thread that runs on a CPU only needs its events there. */
typedef struct TimingThreadGroup {
        uint32_t *cpus;         /* ascending */
        size_t n_cpus;
        pid_t *tids;            /* in the order of the tasks given */
        size_t n_tids;
} TimingThreadGroup;

/* Groups tasks by their affinity now (sched_getaffinity of each). A task that ended meanwhile
 * is left out and counted in *ret_gone. Returns 0 with *ret (free it with
 * timing_thread_groups_free()) and *ret_n >= 1, -ESRCH when every task ended, or a negative
 * errno. */
int timing_threads_group(const pid_t *tasks, size_t n_tasks, TimingThreadGroup **ret, size_t *ret_n,
                         size_t *ret_gone);
void timing_thread_groups_free(TimingThreadGroup *groups, size_t n);

/* The timing_open requests a group takes: its CPUs in chunks of TIMING_CPUS_PER_OPEN, and for
 * each chunk its threads in chunks of timing_thread_group_tids_per_open(), so that one
 * request's events (threads times CPUs) fit the fds of one reply. */
size_t timing_thread_group_tids_per_open(size_t n_cpus);
size_t timing_thread_group_requests(const TimingThreadGroup *g);

typedef struct TimingThreadCount {
        uint32_t pid, tid;
        uint64_t samples;
} TimingThreadCount;

/* Samples per task, ascending by tid; TIMING_THREADS_COUNTED_MAX tasks at most, the samples of
 * more in uncounted. */
typedef struct TimingThreadTally {
        TimingThreadCount *items;
        size_t n, allocated;
        uint64_t uncounted;
} TimingThreadTally;

/* Adds one sample of task tid of process pid. Returns 0 or -ENOMEM. */
int timing_threads_count(TimingThreadTally *t, uint32_t pid, uint32_t tid);
void timing_threads_done(TimingThreadTally *t);

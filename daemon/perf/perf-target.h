/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a perf_open of scope job or process counts, and whether the caller may count it.
 *
 * Job scope counts the tasks of the caller's job through the job's cgroup in the v2 hierarchy
 * (the kernel's perf_event cgroup events: PERF_FLAG_PID_CGROUP with a directory fd). The
 * directory is the one the caller's own /proc/PID/cgroup names, believed only while the
 * caller's pidfd shows it is the same process, cut at its job_<ID> component; it is opened
 * component by component without following symlinks, and must belong to root, so that a cgroup
 * a user made (v2 delegation) cannot stand for a job.
 *
 * Process scope counts one process of the caller's: every thread's uids are the caller's, it
 * is dumpable (the kernel's ptrace rule, which the opener's CAP_PERFMON would skip), it is alive, and in job mode it runs inside the job's cgroup. The process is
 * pinned by a pidfd; its /proc entry is opened once and believed only while that pidfd lives.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "refusal.h"

/* Job scope: the cgroup v2 directory of the caller's job (the caller's own v2 cgroup from
 * /proc/PID/cgroup, checked against its pidfd, cut at its job_<ID> component, which must name
 * job; the directory must belong to root), opened O_DIRECTORY|O_RDONLY|O_CLOEXEC component by
 * component with O_NOFOLLOW from the v2 mount under cgroup_root ("<cgroup_root>" when it is
 * cgroup2 itself, else "<cgroup_root>/unified"). Returns 0 with the fd in ret_fd, or refuses
 * (PROTO_E_NO_GRANT) with the reason saying what to do. */
int perf_target_job_cgroup(const char *cgroup_root, Peer *peer, const char *job, int *ret_fd, Refusal *ret_refusal);

/* Job scope for a monitor or an admin naming a job ("job": ID): the job's cgroup v2 directory
 * found from the job id alone, where the job map looks for it (jobmap_candidate_paths():
 * system.slice/[NODE_]slurmstepd.scope/job_ID, also under unified/), not from the caller's own
 * cgroup. Each candidate is opened from an fd of cgroup_root component by component with
 * O_NOFOLLOW, and counts only when it is in the cgroup2 hierarchy and root's (a user's
 * delegated cgroup named job_ID must not stand for a job). Returns 0 with the fd in ret_fd,
 * or refuses (PROTO_E_NO_GRANT) saying where it looked. */
int perf_target_job_cgroup_of_id(const char *cgroup_root, const char *job, int *ret_fd, Refusal *ret_refusal);

/* The v2 path of the caller's job (relative to the v2 mount, e.g.
 * "/system.slice/slurmstepd.scope/job_42"), as perf_target_job_cgroup() finds it, for the
 * job_cgroup argument of perf_target_process(). Returns 0 or refuses (PROTO_E_NO_GRANT). */
int perf_target_job_path(Peer *peer, const char *job, char *ret_path, size_t path_size, Refusal *ret_refusal);

/* Process scope: target pid (0: the caller) must be the caller's uid's process (real,
 * effective, saved and filesystem uid of every thread, and dumpable: its /proc entries the
 * caller's; root may name any), alive, and in job mode (job_cgroup, a v2
 * path as perf_target_job_path() gives it) inside the job's cgroup. Fills the pidfd and the
 * thread ids to open events on (every thread now; children and new threads follow through
 * attr.inherit). After the events are open, perf_target_process_alive() with the pidfd
 * confirms the pid was not recycled in between. proc_root is where procfs is mounted ("/proc").
 * Returns 0 with ret filled (release it with perf_process_done()), or refuses
 * (PROTO_E_BAD_FIELD: no such process or exited; PROTO_E_NOT_AUTHORIZED: another uid's;
 * PROTO_E_OUT_OF_SCOPE: outside the job; PROTO_E_LIMIT: too many threads), or a negative
 * errno. */
typedef struct PerfProcess { int pidfd; pid_t pid; pid_t *tids; size_t n_tids; } PerfProcess;
int perf_target_process(const char *proc_root, Peer *peer, pid_t pid, const char *job_cgroup /* NULL outside job mode */,
                        PerfProcess *ret, Refusal *ret_refusal);
bool perf_target_process_alive(const PerfProcess *p);

/* Process scope with "thread": one thread of the caller's own process, counted alone (a
 * program's markers open each thread's events for itself). tid 0 is the caller's main thread.
 * The process is the caller's, pinned by the connection's pidfd (pidfd_open() of a thread that
 * does not lead its process fails before Linux 6.9), and tid must be listed under its
 * /proc/PID/task, which holds exactly the threads whose Tgid is PID; the process passes the
 * same uid, dumpable and job checks as for perf_target_process(). Fills ret with the caller's
 * pid, a duplicate of its pidfd and tids = { tid }. After the events are open,
 * perf_target_thread_alive() confirms the tid is still that process's thread: a tid that
 * ended and was reused by another process's thread in between fails it. */
int perf_target_thread(const char *proc_root, Peer *peer, pid_t tid, const char *job_cgroup /* NULL outside job mode */,
                       PerfProcess *ret, Refusal *ret_refusal);
bool perf_target_thread_alive(const char *proc_root, const PerfProcess *p);

/* timing_open with "tid": one thread of process pid, which passes every check of
 * perf_target_process() (each thread's uids the caller's, dumpable, alive, inside the job),
 * held by the pidfd of pid while tid is looked for under its /proc/PID/task. Fills ret with pid,
 * its pidfd and tids = { tid }; after the events are open perf_target_thread_alive() confirms
 * tid is still that process's thread (a tid that ended and was reused in between is not).
 * Refuses a tid that is no thread of pid (PROTO_E_BAD_FIELD), else as perf_target_process(). */
int perf_target_process_thread(const char *proc_root, Peer *peer, pid_t pid, pid_t tid,
                               const char *job_cgroup /* NULL outside job mode */, PerfProcess *ret,
                               Refusal *ret_refusal);
/* timing_open with "tids": as perf_target_process_thread() for each of n_tids (1 to
 * TIMING_TIDS_PER_OPEN) threads of pid, all found in one listing of its /proc/PID/task; fills
 * ret->tids with them in their order. perf_target_thread_alive() then checks every one. */
int perf_target_process_threads(const char *proc_root, Peer *peer, pid_t pid, const pid_t *tids, size_t n_tids,
                                const char *job_cgroup /* NULL outside job mode */, PerfProcess *ret,
                                Refusal *ret_refusal);
void perf_process_done(PerfProcess *p);

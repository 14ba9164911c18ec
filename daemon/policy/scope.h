/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A job-mode caller's scope: the CPUs of its job, from the grant's explicit CPU list or from
 * the cpuset cgroup the caller runs in (Slurm creates it after the prolog), read at request
 * time. The caller's cgroup is read from /proc/PID/cgroup and then checked against the
 * caller's pidfd, so a pid recycled by another process is never believed; and the job's cgroup
 * must belong to root, so a cgroup a user made (v2 delegation) cannot pose as a job.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuset.h"
#include "policy/grants.h"
#include "policy/policy.h"
#include "refusal.h"

typedef struct Scope {
        CpuSet cpus;                    /* every CPU the caller may use */
        char job[PMUGATE_STRING_MAX + 1]; /* the job of the caller's cgroup; outside one, the first of
                                         * its grants, for messages only */
        bool from_cgroup;               /* the caller runs in job's cgroup: every CPU is job's */
} Scope;

/* Returns 0 with ret filled, or refuses with PROTO_E_NO_GRANT, the reason saying what to do.
 * cgroup_root is where the cgroup file systems are mounted ("/sys/fs/cgroup", under --root for
 * tests). */
int scope_resolve(const char *cgroup_root, Peer *peer, const Grants *grants, Scope *ret, Refusal *ret_refusal);

/* The job whose grant gives uid the CPU: the job of the caller's cgroup, or outside one the
 * first of uid's grants, in grant table order, that names the CPU. NULL when none does. A
 * lease records it, and ends when that job's grant no longer gives the CPU, even if another
 * grant of the same uid would. */
const char *scope_job_of_cpu(const Scope *s, const Grants *grants, uid_t uid, uint32_t cpu);

/* Whether job still gives uid the CPU, for a caller whose scope was just resolved to s. */
bool scope_job_covers(const Scope *s, const Grants *grants, uid_t uid, const char *job, uint32_t cpu);

/* Parses the text of /proc/PID/cgroup (size bytes, not necessarily NUL-terminated) into the
 * cgroup v2 path (the "0::" line) and the v1 cpuset hierarchy's path; each is "" when absent.
 * Returns 0, -ENAMETOOLONG when a path does not fit path_size, or -EINVAL when a path is not
 * absolute, has an empty, "." or ".." component, or the same hierarchy appears twice. */
int scope_parse_proc_cgroup(const char *text, size_t size, char *ret_v2, char *ret_v1_cpuset,
                            size_t path_size);

/* Reads a /proc/PID/cgroup open at fd (from its start) as scope_parse_proc_cgroup() parses it.
 * Returns 0, -EFBIG when the file exceeds what any real one holds, or another negative errno. */
int scope_read_proc_cgroup(int fd, char *ret_v2, char *ret_v1_cpuset, size_t path_size);

/* The peer's cgroup paths as scope_read_proc_cgroup() gives them, from its /proc/PID/cgroup,
 * which is opened once per connection and believed only while the peer's pidfd shows the
 * process still exists (the kept file then stays the peer's even if the pid is reused). Returns
 * 0, -ESRCH when the peer has no pidfd or had exited, or another negative errno. */
int scope_peer_cgroup(Peer *peer, char *ret_v2, char *ret_v1_cpuset, size_t path_size);

/* Whether the process behind pidfd still exists (a zombie counts: its pid is not free yet). */
bool scope_pidfd_alive(int pidfd);

/* The length of path up to the end of its "job_<ID>" component (0 when it has none), with the
 * ID in ret_job. The cpuset walk stops there: a job's CPUs are never an ancestor's. */
size_t scope_find_job(const char *path, char *ret_job, size_t job_size);

/* The CPUs of the cgroup at path (under dir_root) from the first of files present in it or,
 * when none is, in its nearest ancestor, never climbing above the first stop characters of
 * path. Returns 0, -ENOENT when no directory up to there has them, -ENAMETOOLONG when a file
 * name does not fit, or another negative errno. */
int scope_read_cpuset(const char *dir_root, const char *path, size_t stop, const char *const *files,
                      CpuSet *ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which job holds which CPU, for monitoring agents that label what they measure by job
 *
 * A grant with explicit CPUs names them. A grant without (the batch system's cgroup decides)
 * is looked up where Slurm puts a job's cgroup: cgroup v1 cpuset/slurm[_NODE]/uid_UID/job_ID
 * and cgroup v2 system.slice/[NODE_]slurmstepd.scope/job_ID (also under unified/). Only
 * directories of root's count, as for a caller's own scope (scope.h): a user's delegated cgroup
 * named job_ID must not claim CPUs for a job.
 */
#pragma once

#include <stddef.h>

#include "cpuset.h"
#include "policy/grants.h"

/* The CPUs of the job granted by g on this node. Returns 0 with ret filled, -ENOENT when the
 * grant names no CPUs and no trusted cgroup of the job exists (yet: Slurm creates it after the
 * Prolog), or another negative errno. */
int jobmap_grant_cpus(const char *cgroup_root, const Grant *g, CpuSet *ret);

/* The candidate cgroup directories of job (relative to cgroup_root, each beginning with "/")
 * in search order, written to buf as NUL-separated paths. Exposed for unit tests. Returns how
 * many fit, or a negative errno. */
int jobmap_candidate_paths(const char *cgroup_root, const char *job, uid_t uid, char *buf, size_t size);

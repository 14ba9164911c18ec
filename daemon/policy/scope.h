/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A job-mode caller's scope: the CPUs of its job, from the grant's explicit CPU list or from
 * the cpuset cgroup the caller runs in (Slurm creates it after the prolog), read at request
 * time. The caller's cgroup is read from /proc/PID/cgroup and then checked against the
 * caller's pidfd, so a pid recycled by another process is never believed; and the job's cgroup
 * must belong to root, so a cgroup a user made (v2 delegation) cannot pose as a job.
 */
#pragma once

#include <stddef.h>

#include "cpuset.h"
#include "grants.h"
#include "policy.h"

typedef struct Scope {
        CpuSet cpus;
        char job[PMUGATE_STRING_MAX + 1];
} Scope;

/* Returns 0 with ret filled, or a positive ProtoError (PROTO_E_NO_GRANT) with reason saying
 * what to do. cgroup_root is where the cgroup file systems are mounted ("/sys/fs/cgroup",
 * under --root for tests). */
int scope_resolve(const char *cgroup_root, Peer *peer, const Grants *grants, Scope *ret, char *reason,
                  size_t reason_size);


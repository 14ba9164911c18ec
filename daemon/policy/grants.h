/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Job grants: which uid may use pmugate on this node for which job, from the batch system's
 * prolog until its epilog. Kept in a file under the runtime directory so a restarted daemon
 * still knows the jobs that are running.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cpuset.h"
#include "pmugate-limits.h"

typedef struct Grant {
        char job[PMUGATE_STRING_MAX + 1];
        uid_t uid;
        bool has_cpus;          /* explicit CPUs; otherwise the job's cpuset cgroup decides */
        CpuSet cpus;
} Grant;

typedef struct Grants {
        Grant *items;
        size_t n;
        size_t max;
        char path[512];         /* state file; empty: not persisted */
} Grants;

void grants_init(Grants *g, const char *path, size_t max);
void grants_done(Grants *g);

/* Loads the state file, if any. Lines that do not parse are logged and skipped. */
int grants_load(Grants *g);

/* Adds or replaces the grant for job. Returns 1 when it replaced one, 0 when it added one,
 * -ENOSPC past the limit. */
int grants_put(Grants *g, const char *job, uid_t uid, const uint32_t *cpus, size_t n_cpus);

/* Removes the grant for job into ret_removed. Returns 0, or -ENOENT when there is none. */
int grants_remove(Grants *g, const char *job, Grant *ret_removed);

const Grant *grants_find(const Grants *g, const char *job);
bool grants_has_uid(const Grants *g, uid_t uid);

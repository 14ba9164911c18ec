/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Job grants: which uid may use pmugate on this node for which job, from the batch system's
 * prolog until its epilog. Kept in the state directory (state/grants) so a restarted daemon
 * still knows the jobs that are running; read back as hostile input, every line checked.
 *
 * Format, one sealed record per line (state-dir.h):
 *   pmugate-grants 1 boot=BOOT_ID
 *   grant JOB UID CPUS|- [lbr]
 * where a trailing "lbr" gives the job's user the class lbr (pmugate timing) for the job.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend/machine.h"
#include "cpuset.h"
#include "pmugate-limits.h"
#include "state-dir.h"

#define GRANTS_VERSION 1U

typedef struct Grant {
        char job[PMUGATE_STRING_MAX + 1];
        uid_t uid;
        bool has_cpus;          /* explicit CPUs; otherwise the job's cpuset cgroup decides */
        CpuSet cpus;
        bool lbr;               /* gives the class lbr (sampling one's own processes) for the job */
} Grant;

typedef struct Grants {
        Grant *items;
        size_t n;
        size_t max;
        const StateDir *state;  /* NULL: not persisted */
        bool unsaved;           /* the file still holds a grant revoked since: save at the next chance */
} Grants;

void grants_init(Grants *g, const StateDir *state, size_t max);
void grants_done(Grants *g);

/* Loads the state file, if any, keeping the grants whose lines pass grants_parse(). A file
 * that cannot be used at all (a symlink, another owner, too big, another boot) is logged
 * and no grant is loaded from it. Returns 0, or -ENOMEM. */
int grants_load(Grants *g, const Machine *m);

/* Parses a grants file's text into g, which must be empty. boot_id is this boot's: a file of
 * another boot yields nothing. Each line must carry its checksum, a valid job id (the
 * protocol's characters, at most PMUGATE_STRING_MAX), a uid and a CPU list of CPUs m has, and
 * a job not seen before; at most g->max are kept. Refused lines are logged. Returns how many
 * lines were refused, -EBADMSG with ret_reason when the header is missing or broken or names
 * another boot (nothing is kept), or -ENOMEM. */
int grants_parse(Grants *g, const char *data, size_t size, const char *boot_id, const Machine *m,
                 char *ret_reason, size_t reason_size);

/* The file's text for g. Returns -EFBIG past PMUGATE_GRANTS_FILE_SIZE_MAX, or -ENOMEM. */
int grants_format(const Grants *g, const char *boot_id, char **ret_data, size_t *ret_size);

/* Whether uid can be granted: (uid_t) -1 is no uid. */
bool grants_uid_valid(uint64_t uid);

/* Adds or replaces the grant for job and saves the file. Returns 1 when it replaced one, 0
 * when it added one; -ENOSPC past the limit, -EINVAL for a job id or uid that is not valid,
 * or the error of the save (-EFBIG: the file would be too large). On any error memory is left
 * as the file has it: the grant was not made. */
int grants_put(Grants *g, const char *job, uid_t uid, const uint32_t *cpus, size_t n_cpus);
/* The same, the grant giving the class lbr for the job when lbr. */
int grants_put_with_lbr(Grants *g, const char *job, uid_t uid, const uint32_t *cpus, size_t n_cpus, bool lbr);

/* Removes the grant for job and saves the file. Returns 0; -ENOENT when there is none (and
 * nothing earlier is left unsaved); or the error of the save (never -ENOENT). Failing closed, the grant is
 * gone from memory even when the save failed (its access ends now, though the file still
 * holds it): ret_removed, when given, receives it whenever it was removed, so the caller
 * must clear it first to tell. A later grants_put() or grants_remove() saves again. */
int grants_remove(Grants *g, const char *job, Grant *ret_removed);

const Grant *grants_find(const Grants *g, const char *job);
bool grants_has_uid(const Grants *g, uid_t uid);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leases checked again against the rights and scope that allowed them.
 */
#pragma once

#include <sys/types.h>

#include "server/server-state.h"

/* A lease never outlives the right that allowed it. Recomputes, for every session holding
 * leases, its rights under the current configuration and, for job-mode users, its scope, and
 * ends (restoring their registers) the leases it may no longer hold: a role that may not
 * write or is lower than the one the lease was taken with, a register class the role may no
 * longer write, a job whose grant no longer gives that CPU. The session hears of it at its
 * next request (`revoked`). Run after every reload. Returns the number of leases ended. */
size_t server_revalidate_leases(Server *s, const char *why);

/* The same for the sessions of one uid: what a grant or revoke for that uid can change. */
size_t server_revalidate_uid(Server *s, uid_t uid, const char *why);

/* The same for one session, with its rights and scope resolved afresh. */
size_t server_revalidate_session(Server *s, Session *c, const char *why);

/* The same for one session whose scope was just resolved: scope is NULL when the resolution
 * found no grant. */
size_t session_revalidate_leases(Server *s, Session *c, const Scope *scope, const char *why);

/* The distinct jobs of the leases on cpus, comma-separated ("" when none has a job). */
void server_lease_jobs(const Server *s, const CpuSet *cpus, char *buf, size_t size);

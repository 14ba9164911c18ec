/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session: one client connection, with the identity the kernel gave for it, the rights the
 * policy gives that identity, the job scope it was last resolved to, and the leases it holds.
 * The lease table (pmu/leases) is the truth of who holds a CPU; the session's set of leased
 * CPUs follows it (the table tells the server of every lease that ends), so whatever ends a
 * session's leases finds them without a walk over every CPU.
 */
#pragma once

#include <stdint.h>

#include "server/server-state.h"

/* Takes ownership of fd and peer. */
int session_new(Server *s, int fd, Peer *peer, Session **ret);
/* Ends every lease of c, restoring what it wrote, and audits it with why. */
void session_end_leases(Session *c, const char *why);
/* Ends the session's leases with a restore, closes it and unlinks it from the server. */
Session *session_free(Session *c);

/* Adds the source that serves the scheduler's turns to s->event. */
int server_turns_setup(Server *s);

/* The lease table's hook (LeaseEndedFn, userdata the Server): the session that held cpu no
 * longer does. */
void session_lease_ended(const void *owner, uint32_t cpu, void *userdata);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session: one client connection, with the identity the kernel gave for it, the rights the
 * policy gives that identity, the job scope it was last resolved to, and the leases it holds.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "cpuset.h"
#include "policy.h"
#include "scope.h"

typedef struct Server Server;
typedef struct Session Session;

struct Session {
        Server *server;
        Session *prev, *next;
        int fd;
        sd_event_source *io;
        Peer peer;
        Rights rights;
        uint64_t requests;
        Scope scope;            /* job-mode users: resolved again at every request */
        bool preempted;         /* a user took over one of this client's leases */
        CpuSet preempted_cpus;
        /* A reply the socket would not take yet; reading pauses until it is sent. */
        char *pending;
        size_t pending_size;
};

/* Takes ownership of fd and peer. */
int session_new(Server *s, int fd, Peer *peer, Session **ret);
/* Ends the session's leases with a restore, closes it and unlinks it from the server. */
Session *session_free(Session *c);

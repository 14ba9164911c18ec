/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session: one client connection, with the identity the kernel gave for it, the rights the
 * policy gives that identity, the job scope it was last resolved to, and the leases it holds.
 * The lease table (pmu/leases) is the truth of who holds a CPU; the session's set of leased
 * CPUs follows it (the table tells the server of every lease that ends), so whatever ends a
 * session's leases finds them without a walk over every CPU.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "audit-fold.h"
#include "cpuset.h"
#include "pmugate-limits.h"
#include "policy/policy.h"
#include "policy/scope.h"
#include "server/scheduler.h"

typedef struct Server Server;
typedef struct Session Session;
typedef struct BatchJob BatchJob;

struct Session {
        Server *server;
        Session *prev, *next;
        int fd;
        sd_event_source *io;
        Peer peer;
        Rights rights;
        uint64_t requests;
        Scope scope;            /* job-mode users: resolved again at every request, never kept
                                 * as the job of a lease (each lease records its own) */
        CpuSet leased;          /* the CPUs this session holds leases on */
        bool preempted;         /* a user took over one of this client's leases */
        CpuSet preempted_cpus;
        bool revoked;           /* leases ended because the right that allowed them is gone */
        CpuSet revoked_cpus;
        char revoked_why[PMUGATE_REASON_MAX];
        AuditFold audit_fold;   /* monitors: write batches repeated at every sample */
        /* The messages of a reply the socket would not take yet, back to back; reading
         * pauses until the last is sent. */
        char *pending;
        size_t pending_size;    /* what it holds, as counted against its uid's budget */
        size_t pending_offset;  /* where its first message starts */
        size_t pending_ends[PMUGATE_REPLY_PARTS_MAX];
        size_t n_pending, pending_next;
        SchedEntry sched;       /* its place in the scheduler's queues */
        BatchJob *job;          /* a large batch in progress */
        /* A request waiting for a slot for large batches, as it came (at most
         * PMUGATE_REQUEST_SIZE_MAX bytes): decoded again when the slot is there. */
        char *held;
        size_t held_size;
        bool last_large;        /* its last request was a batch larger than a slice */
};

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

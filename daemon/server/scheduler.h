/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scheduler: who the daemon serves next. Clients with work waiting (a request to read, or
 * the next slice of a large batch) are queued by uid, and the uids take turns: the next turn
 * goes to the uid that was given the least work so far (counted in register operations), so
 * uids that send equal work alternate, and a uid that asks for little is served after at most
 * the one slice in progress, however many connections other uids keep busy: a new request
 * ("light" work, not the next slice of a batch) of a uid within one quantum (a slice) of the
 * least served goes first. A uid that comes back from idle starts level with the uid served
 * last, so being idle earns no credit. Admins have a lane of their own, served before any
 * user. The scheduler also keeps, per uid, the count of its connections and the bytes of
 * replies its clients have not read, and the slots for large batches in progress.
 *
 * It knows nothing of sockets or requests: the server embeds a SchedEntry in every session
 * and runs whatever scheduler_next() returns.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct SchedUid SchedUid;
typedef struct SchedEntry SchedEntry;

struct SchedEntry {
        SchedEntry *next;       /* in its lane's queue, or among those waiting for a slot */
        SchedUid *owner;
        bool queued;
        bool waits_for_slot;
        bool slot_granted;      /* a slot given back was handed to this waiter */
        bool admin;             /* queued in the admin lane */
        bool light;             /* its work is a new request, not the next slice of a batch */
};

struct SchedUid {
        SchedUid *prev, *next;
        uid_t uid;
        unsigned clients;
        uint64_t served;        /* operations run for this uid, from where it last joined */
        size_t pending_bytes;   /* replies its clients have not read */
        SchedEntry *head, *tail;
};

typedef struct Scheduler {
        SchedUid *uids;                 /* every uid with a connection, the last served last */
        unsigned n_uids;
        SchedEntry *admin_head, *admin_tail;
        SchedEntry *slot_waiters;
        unsigned slots_used;
        unsigned slots_max;
        size_t pending_per_uid_max;
        uint64_t quantum;               /* a slice: how far ahead light work may go first */
        uint64_t clock;                 /* the service of the uid whose turn came last */
} Scheduler;

void scheduler_init(Scheduler *sch, unsigned slots_max, size_t pending_per_uid_max, uint64_t quantum);
/* Frees what is left; every entry must be detached first. */
void scheduler_done(Scheduler *sch);

/* A new connection of uid. Returns 0 or -ENOMEM. */
int scheduler_attach(Scheduler *sch, SchedEntry *e, uid_t uid);
/* The connection is gone: out of every queue, and its uid forgotten with its last connection. */
void scheduler_detach(Scheduler *sch, SchedEntry *e);

unsigned scheduler_clients_of(const Scheduler *sch, uid_t uid);

/* e has work (light: a new request): queued at the end of its uid's queue, or of the admin
 * lane. No-op when queued. */
void scheduler_queue(Scheduler *sch, SchedEntry *e, bool admin, bool light);
/* Takes e out of its queue (or the slot waiters) without serving it. */
void scheduler_unqueue(Scheduler *sch, SchedEntry *e);
/* The entry to serve next, taken out of its queue: the admin lane first; then the first entry
 * of the least served uid whose first entry is light and who is served less than the least
 * served uid plus a quantum; else the first entry of the uid with the least service. NULL when
 * nothing is queued. */
SchedEntry *scheduler_next(Scheduler *sch);
bool scheduler_idle(const Scheduler *sch);
/* Counts ops operations of work run for e's uid. */
void scheduler_charge(Scheduler *sch, SchedEntry *e, uint64_t ops);

/* A slot for a large batch: returns true and takes it (or the one handed to e), or false and
 * keeps e among the waiters. A slot given back goes to one waiter, an admin's first, else the
 * one whose uid was served least, which is queued again with the slot kept for it; with no
 * waiter it is free. A waiter that did not use the slot handed to it gives it back (detaching
 * does so too). */
bool scheduler_slot_take(Scheduler *sch, SchedEntry *e);
void scheduler_slot_give(Scheduler *sch);
/* Whether a slot is free now (scheduler_slot_take() would not make a waiter). */
bool scheduler_slot_free(const Scheduler *sch);
void scheduler_slot_unused(Scheduler *sch, SchedEntry *e);

/* Replies held for e's uid: returns 0 and counts size, or -ENOBUFS when the uid's budget
 * would be exceeded (nothing counted). */
int scheduler_pending_take(Scheduler *sch, SchedEntry *e, size_t size);
void scheduler_pending_give(Scheduler *sch, SchedEntry *e, size_t size);

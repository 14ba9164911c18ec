/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scheduler: uids in turn by least service, an admin lane, slots for large batches, and
 * each uid's budget for unread replies
 */
#include <errno.h>
#include <stdlib.h>

#include "server/scheduler.h"

void scheduler_init(Scheduler *sch, unsigned slots_max, size_t pending_per_uid_max, uint64_t quantum) {
        *sch = (Scheduler) {
                .slots_max = slots_max,
                .pending_per_uid_max = pending_per_uid_max,
                .quantum = quantum,
        };
}

void scheduler_done(Scheduler *sch) {
        while (sch->uids) {
                SchedUid *u = sch->uids;

                sch->uids = u->next;
                free(u);
        }
        sch->n_uids = 0;
}

static SchedUid *find_uid(const Scheduler *sch, uid_t uid) {
        for (SchedUid *u = sch->uids; u; u = u->next)
                if (u->uid == uid)
                        return u;
        return NULL;
}

static void unlink_uid(Scheduler *sch, SchedUid *u) {
        if (u->prev)
                u->prev->next = u->next;
        else
                sch->uids = u->next;
        if (u->next)
                u->next->prev = u->prev;
        u->prev = u->next = NULL;
}

/* Among uids of equal service the one served longest ago comes first: the list is kept in
 * the order of their last turns. */
static void append_uid(Scheduler *sch, SchedUid *u) {
        SchedUid *last = sch->uids;

        u->next = NULL;
        if (!last) {
                u->prev = NULL;
                sch->uids = u;
                return;
        }
        while (last->next)
                last = last->next;
        last->next = u;
        u->prev = last;
}

int scheduler_attach(Scheduler *sch, SchedEntry *e, uid_t uid) {
        SchedUid *u = find_uid(sch, uid);

        if (!u) {
                u = calloc(1, sizeof(*u));
                if (!u)
                        return -ENOMEM;
                u->uid = uid;
                u->served = sch->clock;
                append_uid(sch, u);
                sch->n_uids++;
        }
        u->clients++;
        *e = (SchedEntry) { .owner = u };
        return 0;
}

static void remove_from(SchedEntry **head, SchedEntry **tail, SchedEntry *e) {
        SchedEntry *prev = NULL;

        for (SchedEntry *i = *head; i; prev = i, i = i->next) {
                if (i != e)
                        continue;
                if (prev)
                        prev->next = e->next;
                else
                        *head = e->next;
                if (tail && *tail == e)
                        *tail = prev;
                e->next = NULL;
                return;
        }
}

void scheduler_unqueue(Scheduler *sch, SchedEntry *e) {
        if (e->queued) {
                if (e->admin)
                        remove_from(&sch->admin_head, &sch->admin_tail, e);
                else
                        remove_from(&e->owner->head, &e->owner->tail, e);
                e->queued = false;
        }
        if (e->waits_for_slot) {
                remove_from(&sch->slot_waiters, NULL, e);
                e->waits_for_slot = false;
        }
}

void scheduler_detach(Scheduler *sch, SchedEntry *e) {
        SchedUid *u = e->owner;

        if (!u)
                return;
        scheduler_unqueue(sch, e);
        scheduler_slot_unused(sch, e);
        e->owner = NULL;
        if (--u->clients > 0)
                return;
        unlink_uid(sch, u);
        sch->n_uids--;
        free(u);
}

unsigned scheduler_clients_of(const Scheduler *sch, uid_t uid) {
        const SchedUid *u = find_uid(sch, uid);

        return u ? u->clients : 0;
}

void scheduler_queue(Scheduler *sch, SchedEntry *e, bool admin, bool light) {
        SchedEntry **head, **tail;

        if (e->queued || e->waits_for_slot || !e->owner)
                return;
        e->admin = admin;
        e->light = light;
        if (admin) {
                head = &sch->admin_head;
                tail = &sch->admin_tail;
        } else {
                SchedUid *u = e->owner;

                /* Back from idle (every uid with work has been served more since): level with
                 * the uid served last, so that idling earns no credit, and first among those
                 * level with it, so that a small request is next after the turn in progress.
                 * A uid requeued after its own turn was charged for it and stays behind. */
                if (!u->head && u->served <= sch->clock) {
                        u->served = sch->clock;
                        unlink_uid(sch, u);
                        u->next = sch->uids;
                        if (sch->uids)
                                sch->uids->prev = u;
                        sch->uids = u;
                }
                head = &u->head;
                tail = &u->tail;
        }
        e->next = NULL;
        if (*tail)
                (*tail)->next = e;
        else
                *head = e;
        *tail = e;
        e->queued = true;
}

static SchedEntry *pop(SchedEntry **head, SchedEntry **tail) {
        SchedEntry *e = *head;

        *head = e->next;
        if (!*head)
                *tail = NULL;
        e->next = NULL;
        e->queued = false;
        return e;
}

SchedEntry *scheduler_next(Scheduler *sch) {
        SchedUid *least = NULL, *light = NULL, *chosen;

        if (sch->admin_head)
                return pop(&sch->admin_head, &sch->admin_tail);
        for (SchedUid *u = sch->uids; u; u = u->next) {
                if (!u->head)
                        continue;
                if (!least || u->served < least->served)
                        least = u;
                if (u->head->light && (!light || u->served < light->served))
                        light = u;
        }
        if (!least)
                return NULL;
        /* A request does not wait for the slices of uids it is level with (within a slice):
         * their batches go on after it. */
        chosen = light && light->served - least->served < sch->quantum ? light : least;
        sch->clock = least->served;
        unlink_uid(sch, chosen);
        append_uid(sch, chosen);
        return pop(&chosen->head, &chosen->tail);
}

bool scheduler_idle(const Scheduler *sch) {
        if (sch->admin_head)
                return false;
        for (const SchedUid *u = sch->uids; u; u = u->next)
                if (u->head)
                        return false;
        return true;
}

void scheduler_charge(Scheduler *sch, SchedEntry *e, uint64_t ops) {
        if (e->owner && !e->admin)
                e->owner->served += ops;
}

bool scheduler_slot_take(Scheduler *sch, SchedEntry *e) {
        SchedEntry **last;

        if (e->slot_granted) {
                e->slot_granted = false;
                return true;
        }
        if (sch->slots_used < sch->slots_max) {
                sch->slots_used++;
                return true;
        }
        if (e->waits_for_slot)
                return false;
        scheduler_unqueue(sch, e);
        /* in the order they came, the earliest first among equals */
        for (last = &sch->slot_waiters; *last; last = &(*last)->next)
                ;
        e->next = NULL;
        *last = e;
        e->waits_for_slot = true;
        return false;
}

bool scheduler_slot_free(const Scheduler *sch) {
        return sch->slots_used < sch->slots_max;
}

static bool waiter_before(const SchedEntry *a, const SchedEntry *b) {
        if (a->admin != b->admin)
                return a->admin;
        return a->owner->served < b->owner->served;
}

void scheduler_slot_give(Scheduler *sch) {
        SchedEntry *best = NULL;

        for (SchedEntry *e = sch->slot_waiters; e; e = e->next)
                if (!best || waiter_before(e, best))
                        best = e;
        if (!best) {
                if (sch->slots_used > 0)
                        sch->slots_used--;
                return;
        }
        /* The slot stays taken, kept for this waiter until its turn comes. */
        remove_from(&sch->slot_waiters, NULL, best);
        best->waits_for_slot = false;
        best->slot_granted = true;
        scheduler_queue(sch, best, best->admin, false);
}

void scheduler_slot_unused(Scheduler *sch, SchedEntry *e) {
        if (!e->slot_granted)
                return;
        e->slot_granted = false;
        scheduler_slot_give(sch);
}

int scheduler_pending_take(Scheduler *sch, SchedEntry *e, size_t size) {
        SchedUid *u = e->owner;

        if (!u || size > sch->pending_per_uid_max - u->pending_bytes)
                return -ENOBUFS;
        u->pending_bytes += size;
        return 0;
}

void scheduler_pending_give(Scheduler *sch, SchedEntry *e, size_t size) {
        SchedUid *u = e->owner;

        if (u)
                u->pending_bytes -= size <= u->pending_bytes ? size : u->pending_bytes;
}

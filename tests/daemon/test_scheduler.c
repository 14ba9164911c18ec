/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the scheduler's turns (uids in turn by least service, the admin lane, a light
 * uid ahead of flooders, no credit for idling), the slots for large batches and each uid's
 * budget for unread replies
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "pmugate-limits.h"
#include "server/scheduler.h"

/* Serves the next entry as a slice of ops operations that leaves it with more work. */
static SchedEntry *serve(Scheduler *sch, uint64_t ops, bool more) {
        SchedEntry *e = scheduler_next(sch);

        assert_non_null(e);
        scheduler_charge(sch, e, ops);
        if (more)
                scheduler_queue(sch, e, e->admin, false);
        return e;
}

/* Detaches n entries; the last of all checks that every uid is forgotten. */
static void detach_all(Scheduler *sch, SchedEntry *entries, size_t n) {
        for (size_t i = 0; i < n; i++)
                scheduler_detach(sch, &entries[i]);
}

static void done(Scheduler *sch) {
        assert_null(sch->uids);
        assert_int_equal(sch->n_uids, 0);
        scheduler_done(sch);
}

static void test_uids_in_turn_not_connections(void **state) {
        Scheduler sch;
        SchedEntry e[5];
        unsigned served_a = 0, served_b = 0;

        (void) state;
        scheduler_init(&sch, 4, PMUGATE_PENDING_BYTES_PER_UID_MAX, PMUGATE_BATCH_SLICE_OPS);
        /* uid 100 has four connections with work, uid 200 one */
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(scheduler_attach(&sch, &e[i], 100), 0);
        assert_int_equal(scheduler_attach(&sch, &e[4], 200), 0);
        assert_int_equal(scheduler_clients_of(&sch, 100), 4);
        assert_int_equal(scheduler_clients_of(&sch, 200), 1);
        assert_int_equal(scheduler_clients_of(&sch, 300), 0);
        assert_true(scheduler_idle(&sch));
        for (size_t i = 0; i < 5; i++)
                scheduler_queue(&sch, &e[i], false, false);
        assert_false(scheduler_idle(&sch));

        /* equal slices: the two uids alternate, whatever their connection counts */
        for (unsigned turn = 0; turn < 40; turn++) {
                SchedEntry *x = serve(&sch, PMUGATE_BATCH_SLICE_OPS, true);

                if (x == &e[4])
                        served_b++;
                else
                        served_a++;
                assert_true(served_a >= served_b ? served_a - served_b <= 1 : served_b - served_a <= 1);
        }
        assert_int_equal(served_a, 20);
        assert_int_equal(served_b, 20);
        detach_all(&sch, e, 5);
        done(&sch);
}

static void test_connections_of_a_uid_in_turn(void **state) {
        Scheduler sch;
        SchedEntry e[3];

        (void) state;
        scheduler_init(&sch, 4, PMUGATE_PENDING_BYTES_PER_UID_MAX, PMUGATE_BATCH_SLICE_OPS);
        for (size_t i = 0; i < 3; i++) {
                assert_int_equal(scheduler_attach(&sch, &e[i], 100), 0);
                scheduler_queue(&sch, &e[i], false, false);
        }
        for (unsigned round = 0; round < 3; round++)
                for (size_t i = 0; i < 3; i++)
                        assert_ptr_equal(serve(&sch, 10, true), &e[i]);
        /* queueing twice does not make two places */
        scheduler_queue(&sch, &e[0], false, false);
        assert_ptr_equal(scheduler_next(&sch), &e[0]);
        assert_ptr_equal(scheduler_next(&sch), &e[1]);
        assert_ptr_equal(scheduler_next(&sch), &e[2]);
        assert_null(scheduler_next(&sch));
        assert_true(scheduler_idle(&sch));
        detach_all(&sch, e, 3);
        done(&sch);
}

static void test_light_uid_waits_one_slice(void **state) {
        Scheduler sch;
        SchedEntry flood[31], honest;

        (void) state;
        scheduler_init(&sch, 4, PMUGATE_PENDING_BYTES_PER_UID_MAX, PMUGATE_BATCH_SLICE_OPS);
        for (size_t i = 0; i < 31; i++) {
                assert_int_equal(scheduler_attach(&sch, &flood[i], 1000 + (uid_t) i), 0);
                scheduler_queue(&sch, &flood[i], false, false);
        }
        assert_int_equal(scheduler_attach(&sch, &honest, 5000), 0);
        /* the flood has run for a while when the honest uid asks for one read */
        for (unsigned turn = 0; turn < 31 * 50 + 7; turn++)
                serve(&sch, PMUGATE_BATCH_SLICE_OPS, true);
        scheduler_queue(&sch, &honest, false, true);
        assert_ptr_equal(scheduler_next(&sch), &honest);
        scheduler_charge(&sch, &honest, 1);
        /* and again after more of the flood: never behind more than the slice in progress */
        for (unsigned k = 0; k < 20; k++) {
                for (unsigned turn = 0; turn < 13; turn++)
                        serve(&sch, PMUGATE_BATCH_SLICE_OPS, true);
                scheduler_queue(&sch, &honest, false, true);
                assert_ptr_equal(scheduler_next(&sch), &honest);
                scheduler_charge(&sch, &honest, 1);
        }
        /* but a uid of small requests goes ahead of the batches by one slice's worth only */
        for (unsigned turn = 0, ahead = 0; turn < 100; turn++) {
                SchedEntry *x;

                scheduler_queue(&sch, &honest, false, true);
                x = scheduler_next(&sch);
                scheduler_charge(&sch, x, x == &honest ? 100 : PMUGATE_BATCH_SLICE_OPS);
                if (x != &honest) {
                        scheduler_queue(&sch, x, false, false);
                        ahead = 0;
                } else
                        assert_in_range(++ahead, 1, PMUGATE_BATCH_SLICE_OPS / 100 + 1);
        }
        detach_all(&sch, flood, 31);
        scheduler_detach(&sch, &honest);
        done(&sch);
}

static void test_idle_earns_no_credit(void **state) {
        Scheduler sch;
        SchedEntry a, b;
        unsigned b_turns = 0;

        (void) state;
        scheduler_init(&sch, 4, PMUGATE_PENDING_BYTES_PER_UID_MAX, PMUGATE_BATCH_SLICE_OPS);
        assert_int_equal(scheduler_attach(&sch, &a, 1), 0);
        assert_int_equal(scheduler_attach(&sch, &b, 2), 0);
        /* uid 1 alone for a long time */
        scheduler_queue(&sch, &a, false, false);
        for (unsigned turn = 0; turn < 1000; turn++)
                assert_ptr_equal(serve(&sch, 100, true), &a);
        /* uid 2 arrives with a long job: it does not get 1000 turns in a row */
        scheduler_queue(&sch, &b, false, false);
        for (unsigned turn = 0; turn < 20; turn++)
                b_turns += serve(&sch, 100, true) == &b;
        assert_in_range(b_turns, 9, 11);
        scheduler_detach(&sch, &a);
        scheduler_detach(&sch, &b);
        done(&sch);
}

static void test_admin_lane_first(void **state) {
        Scheduler sch;
        SchedEntry users[4], admin;

        (void) state;
        scheduler_init(&sch, 4, PMUGATE_PENDING_BYTES_PER_UID_MAX, PMUGATE_BATCH_SLICE_OPS);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(scheduler_attach(&sch, &users[i], 10 + (uid_t) i), 0);
                scheduler_queue(&sch, &users[i], false, false);
        }
        assert_int_equal(scheduler_attach(&sch, &admin, 0), 0);
        serve(&sch, PMUGATE_BATCH_SLICE_OPS, true);
        scheduler_queue(&sch, &admin, true, false);
        assert_ptr_equal(scheduler_next(&sch), &admin);
        /* an admin's work is not counted against anyone */
        scheduler_charge(&sch, &admin, 1000000);
        assert_int_equal(admin.owner->served, 0);
        /* an admin with a large job keeps the lane, a slice at a time, ahead of users */
        scheduler_queue(&sch, &admin, true, false);
        for (unsigned turn = 0; turn < 5; turn++)
                assert_ptr_equal(serve(&sch, PMUGATE_BATCH_SLICE_OPS, true), &admin);
        scheduler_unqueue(&sch, &admin);
        assert_ptr_not_equal(scheduler_next(&sch), &admin);
        detach_all(&sch, users, 4);
        scheduler_detach(&sch, &admin);
        done(&sch);
}

static void test_slots(void **state) {
        Scheduler sch;
        SchedEntry run[2], wait[3], late;

        (void) state;
        scheduler_init(&sch, 2, PMUGATE_PENDING_BYTES_PER_UID_MAX, PMUGATE_BATCH_SLICE_OPS);
        assert_int_equal(scheduler_attach(&sch, &run[0], 1), 0);
        assert_int_equal(scheduler_attach(&sch, &run[1], 1), 0);
        for (size_t i = 0; i < 3; i++)
                assert_int_equal(scheduler_attach(&sch, &wait[i], 2 + (uid_t) i), 0);
        assert_true(scheduler_slot_take(&sch, &run[0]));
        assert_true(scheduler_slot_take(&sch, &run[1]));
        /* uid 1 has been served a lot, the waiters' uids differently */
        scheduler_charge(&sch, &run[0], 100000);
        scheduler_charge(&sch, &wait[0], 300);
        scheduler_charge(&sch, &wait[1], 100);
        scheduler_charge(&sch, &wait[2], 200);
        for (size_t i = 0; i < 3; i++) {
                scheduler_queue(&sch, &wait[i], false, false);
                assert_false(scheduler_slot_take(&sch, &wait[i]));
                assert_true(wait[i].waits_for_slot);
                assert_false(wait[i].queued);
        }
        assert_true(scheduler_idle(&sch));
        /* queueing a waiter does nothing: it waits for the slot */
        scheduler_queue(&sch, &wait[0], false, false);
        assert_false(wait[0].queued);

        /* a slot given back goes to the waiter served least, and only to it */
        scheduler_slot_give(&sch);
        assert_true(wait[1].slot_granted);
        assert_ptr_equal(scheduler_next(&sch), &wait[1]);
        assert_null(scheduler_next(&sch));
        /* a new large batch cannot take the slot kept for wait[1] */
        assert_int_equal(scheduler_attach(&sch, &late, 9), 0);
        assert_false(scheduler_slot_take(&sch, &late));
        assert_true(late.waits_for_slot);
        scheduler_detach(&sch, &late);
        assert_int_equal(sch.slots_used, 2);
        assert_true(scheduler_slot_take(&sch, &wait[1]));
        assert_false(wait[1].slot_granted);

        /* wait[1]'s batch ends: its slot goes to wait[2], served less than wait[0] */
        scheduler_slot_give(&sch);
        assert_true(wait[2].slot_granted);
        assert_ptr_equal(scheduler_next(&sch), &wait[2]);
        /* a waiter handed a slot that it does not use passes it on */
        scheduler_slot_unused(&sch, &wait[2]);
        assert_true(wait[0].slot_granted);
        assert_true(wait[0].queued);
        /* one that leaves with it frees it when nobody else waits */
        scheduler_detach(&sch, &wait[0]);
        assert_int_equal(sch.slots_used, 1);
        /* the batch still running ends */
        scheduler_slot_give(&sch);
        assert_int_equal(sch.slots_used, 0);
        scheduler_detach(&sch, &run[0]);
        scheduler_detach(&sch, &run[1]);
        scheduler_detach(&sch, &wait[1]);
        scheduler_detach(&sch, &wait[2]);
        assert_null(sch.uids);
        done(&sch);
}

static void test_admin_waiter_first(void **state) {
        Scheduler sch;
        SchedEntry user, admin, holder;

        (void) state;
        scheduler_init(&sch, 1, PMUGATE_PENDING_BYTES_PER_UID_MAX, PMUGATE_BATCH_SLICE_OPS);
        assert_int_equal(scheduler_attach(&sch, &holder, 1), 0);
        assert_int_equal(scheduler_attach(&sch, &user, 2), 0);
        assert_int_equal(scheduler_attach(&sch, &admin, 0), 0);
        assert_true(scheduler_slot_take(&sch, &holder));
        user.admin = false;
        admin.admin = true;
        assert_false(scheduler_slot_take(&sch, &user));
        assert_false(scheduler_slot_take(&sch, &admin));
        scheduler_slot_give(&sch);
        assert_true(admin.slot_granted);
        assert_ptr_equal(scheduler_next(&sch), &admin);
        scheduler_detach(&sch, &admin);
        assert_true(user.slot_granted);
        scheduler_detach(&sch, &user);
        scheduler_detach(&sch, &holder);
        done(&sch);
}

static void test_reply_budget_per_uid(void **state) {
        Scheduler sch;
        SchedEntry hoard[4], reader;
        size_t reply = 1200000;

        (void) state;
        scheduler_init(&sch, 4, 4 * reply, PMUGATE_BATCH_SLICE_OPS);
        assert_int_equal(scheduler_attach(&sch, &hoard[0], 7), 0);
        assert_int_equal(scheduler_attach(&sch, &hoard[1], 7), 0);
        assert_int_equal(scheduler_attach(&sch, &hoard[2], 8), 0);
        assert_int_equal(scheduler_attach(&sch, &hoard[3], 8), 0);
        assert_int_equal(scheduler_attach(&sch, &reader, 9), 0);
        /* two uids fill their budgets */
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(scheduler_pending_take(&sch, &hoard[i], 2 * reply), 0);
                if (i % 2 == 1)
                        assert_int_equal(scheduler_pending_take(&sch, &hoard[i], 1), -ENOBUFS);
        }
        /* the reader's budget is its own */
        assert_int_equal(scheduler_pending_take(&sch, &reader, 4 * reply), 0);
        assert_int_equal(scheduler_pending_take(&sch, &reader, 1), -ENOBUFS);
        scheduler_pending_give(&sch, &reader, 4 * reply);
        assert_int_equal(scheduler_pending_take(&sch, &reader, reply), 0);
        scheduler_pending_give(&sch, &reader, reply);
        /* what one client of a uid gives back, another may use */
        scheduler_pending_give(&sch, &hoard[0], 2 * reply);
        assert_int_equal(scheduler_pending_take(&sch, &hoard[1], 2 * reply), 0);
        assert_int_equal(scheduler_pending_take(&sch, &hoard[0], 1), -ENOBUFS);
        /* giving back more than held never wraps */
        scheduler_pending_give(&sch, &hoard[2], 100 * reply);
        assert_int_equal(hoard[2].owner->pending_bytes, 0);
        for (size_t i = 0; i < 4; i++)
                scheduler_detach(&sch, &hoard[i]);
        scheduler_detach(&sch, &reader);
        /* a uid that comes back starts afresh */
        assert_int_equal(scheduler_attach(&sch, &reader, 7), 0);
        assert_int_equal(scheduler_pending_take(&sch, &reader, 4 * reply), 0);
        scheduler_detach(&sch, &reader);
        done(&sch);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_uids_in_turn_not_connections),
                cmocka_unit_test(test_connections_of_a_uid_in_turn),
                cmocka_unit_test(test_light_uid_waits_one_slice),
                cmocka_unit_test(test_idle_earns_no_credit),
                cmocka_unit_test(test_admin_lane_first),
                cmocka_unit_test(test_slots),
                cmocka_unit_test(test_admin_waiter_first),
                cmocka_unit_test(test_reply_budget_per_uid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

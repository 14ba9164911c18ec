/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate's batches (client/core/register-batch.c) against a fake daemon: a batch takes room
 * for its results when it runs, and a user inside the library may let a run's results go
 * (batch_results_release(), as a measurement does with its sample batches between samples)
 * and run the same batch again.
 */
#include "fake-daemon.h"

#include <errno.h>

#include "core/register-batch.h"

static uint64_t reply_base;

/* status 0, 0, -EIO; values base, base + 1, 0 */
static void results_body(msgpack_packer *pk) {
        assert_int_equal(pack_string(pk, "status"), 0);
        assert_int_equal(msgpack_pack_array(pk, 3), 0);
        assert_int_equal(msgpack_pack_int32(pk, 0), 0);
        assert_int_equal(msgpack_pack_int32(pk, 0), 0);
        assert_int_equal(msgpack_pack_int32(pk, -EIO), 0);
        assert_int_equal(pack_string(pk, "values"), 0);
        assert_int_equal(msgpack_pack_array(pk, 3), 0);
        assert_int_equal(msgpack_pack_uint64(pk, reply_base), 0);
        assert_int_equal(msgpack_pack_uint64(pk, reply_base + 1), 0);
        assert_int_equal(msgpack_pack_uint64(pk, 0), 0);
}

static void check_results(pmugate_batch *b, uint64_t base) {
        uint64_t v = 0;

        assert_int_equal(pmugate_batch_result(b, 0, &v), 0);
        assert_int_equal(v, base);
        assert_int_equal(pmugate_batch_result(b, 1, &v), 0);
        assert_int_equal(v, base + 1);
        assert_int_equal(pmugate_batch_result(b, 2, NULL), -EIO);
        assert_int_equal(pmugate_batch_result(b, 3, NULL), -EINVAL);
}

static void test_release_and_run_again(void **state) {
        FakeDaemon f = {};
        pmugate *c = fake_connect(&f);
        pmugate_batch *b = NULL;
        const uint32_t cpus[] = { 0, 1 };
        const uint32_t regs[] = { 0x309 };

        assert_int_equal(pmugate_batch_new(&b), 0);
        /* before any run there are no results */
        assert_int_equal(pmugate_batch_read_msrs(b, cpus, 2, regs, 1), 0);
        assert_int_equal(pmugate_batch_read_msr(b, 2, 0x30a), 2);
        assert_int_equal(pmugate_batch_size(b), 3);
        assert_int_equal(pmugate_batch_result(b, 0, NULL), -EINVAL);

        reply_base = 100;
        fake_reply(&f, 1, 2, results_body, 0);
        assert_int_equal(pmugate_batch_run(c, b), 0);
        check_results(b, 100);

        /* let go: the results are gone, the ops stay */
        batch_results_release(b);
        assert_int_equal(pmugate_batch_result(b, 0, NULL), -EINVAL);
        assert_int_equal(pmugate_batch_size(b), 3);
        batch_results_release(b);

        reply_base = 200;
        fake_reply(&f, 2, 2, results_body, 0);
        assert_int_equal(pmugate_batch_run(c, b), 0);
        check_results(b, 200);

        /* and run again without letting go: the room is reused */
        reply_base = 300;
        fake_reply(&f, 3, 2, results_body, 0);
        assert_int_equal(pmugate_batch_run(c, b), 0);
        check_results(b, 300);

        b = pmugate_batch_free(b);
        batch_results_release(NULL);
        c = pmugate_disconnect(c);
        fake_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_release_and_run_again),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: fds passed with replies (client/core/connection.c, perf.c). A fake daemon on a
 * socket of the test's own queues replies with SCM_RIGHTS: a perf_open handoff keeps them
 * (close-on-exec) until pmugate_perf_close(); fds nobody asked for are closed on arrival; a
 * timing_open of several threads ("tids") gets its fds thread by thread, CPU by CPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake-daemon.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "pmugate/timing.h"

static void lease_body(msgpack_packer *pk) {
        pack_string(pk, "cpus");
        msgpack_pack_array(pk, 1);
        msgpack_pack_uint32(pk, 0);
}

static void empty_body(msgpack_packer *pk) {
}

static void open_body(msgpack_packer *pk) {
        pack_key_uint(pk, "handle", 7);
        pack_string(pk, "targets");
        msgpack_pack_array(pk, 1);
        msgpack_pack_uint32(pk, (uint32_t) getpid());
        pack_key_uint(pk, "fds", 2);
}

static void test_unasked_fds_closed(void **state) {
        FakeDaemon f;
        pmugate *c = fake_connect(&f);
        uint32_t cpu = 0;
        size_t before = open_fds();

        /* a lease reply carrying three fds nobody asked for */
        fake_reply(&f, 1, 1, lease_body, 3);
        assert_int_equal(pmugate_lease(c, &cpu, 1), 0);
        assert_int_equal(open_fds(), before);
        pmugate_disconnect(c);
        fake_done(&f);
}

static void test_handoff_kept(void **state) {
        pmugate_perf_event ev = { .pmu = "software", .config = 1 };
        pmugate_perf_event evs[] = { ev, ev };
        pmugate_perf_group group = { evs, 2 };
        pmugate_perf_request req = { .scope = PMUGATE_PERF_SCOPE_PROCESS, .follow = true, .handoff = true,
                                     .groups = &group, .n_groups = 1 };
        pmugate_perf_handle *h = NULL;
        const int64_t *targets;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);
        size_t before = open_fds();

        fake_reply(&f, 1, 3, open_body, 2);
        assert_int_equal(pmugate_perf_open(c, &req, &h, reason, sizeof(reason)), 0);
        assert_int_equal(pmugate_perf_n_fds(h), 2);
        assert_int_equal(pmugate_perf_targets(h, &targets), 1);
        assert_int_equal(targets[0], getpid());
        for (size_t i = 0; i < 2; i++) {
                int fd = pmugate_perf_fd(h, i);

                assert_true(fd >= 0);
                assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        }
        assert_int_equal(pmugate_perf_fd(h, 2), -EBADF);
        assert_int_equal(open_fds(), before + 2);
        /* the close's reply, then the fds are gone */
        fake_reply(&f, 2, 0, empty_body, 0);
        assert_int_equal(pmugate_perf_close(c, h), 0);
        assert_int_equal(open_fds(), before);
        pmugate_disconnect(c);
        fake_done(&f);
}

static void test_handoff_short(void **state) {
        pmugate_perf_event ev = { .pmu = "software", .config = 1 };
        pmugate_perf_event evs[] = { ev, ev, ev };
        pmugate_perf_group group = { evs, 3 };
        pmugate_perf_request req = { .scope = PMUGATE_PERF_SCOPE_PROCESS, .handoff = true, .groups = &group,
                                     .n_groups = 1 };
        pmugate_perf_handle *h = NULL;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);
        size_t before = open_fds();

        /* "fds": 2 for three events: the reply does not match the request; the two that came are
         * closed and the handle the daemon opened is closed there */
        fake_reply(&f, 1, 3, open_body, 2);
        fake_reply(&f, 2, 0, empty_body, 0);
        assert_int_equal(pmugate_perf_open(c, &req, &h, reason, sizeof(reason)), -EBADMSG);
        assert_null(h);
        assert_non_null(strstr(reason, "does not match"));
        assert_int_equal(open_fds(), before);
        pmugate_disconnect(c);
        fake_done(&f);
}

static void timing_body(msgpack_packer *pk, uint32_t second_tid) {
        pack_key_uint(pk, "handle", 9);
        pack_key_uint(pk, "period", 100003);
        pack_string(pk, "cpus");
        msgpack_pack_array(pk, 2);
        msgpack_pack_uint32(pk, 0);
        msgpack_pack_uint32(pk, 1);
        pack_string(pk, "tids");
        msgpack_pack_array(pk, 2);
        msgpack_pack_uint32(pk, 4250);
        msgpack_pack_uint32(pk, second_tid);
        pack_key_uint(pk, "fds", 4);
}

static void timing_tids_body(msgpack_packer *pk) {
        timing_body(pk, 4251);
}

static void timing_other_tids_body(msgpack_packer *pk) {
        timing_body(pk, 4999);
}

static void test_timing_tids(void **state) {
        static const uint32_t cpus[] = { 0, 1 };
        static const pid_t tids[] = { 4250, 4251 };
        pmugate_timing_request req = { .mode = PMUGATE_TIMING_IPS, .pid = 4242, .cpus = cpus, .n_cpus = 2,
                                       .tids = tids, .n_tids = 2 };
        pmugate_timing_handle *h = NULL;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);
        size_t before = open_fds();

        fake_reply(&f, 1, 5, timing_tids_body, 4);
        assert_int_equal(pmugate_timing_open(c, &req, &h, reason, sizeof(reason)), 0);
        assert_int_equal(pmugate_timing_n_fds(h), 4);
        /* thread by thread, CPU by CPU */
        for (size_t i = 0; i < 4; i++) {
                assert_true(pmugate_timing_fd(h, i) >= 0);
                assert_int_equal(pmugate_timing_tid(h, i), tids[i / 2]);
                assert_int_equal(pmugate_timing_cpu(h, i), (int) cpus[i % 2]);
        }
        assert_int_equal(pmugate_timing_tid(h, 4), -EINVAL);
        assert_int_equal(open_fds(), before + 4);
        fake_reply(&f, 2, 0, empty_body, 0);
        assert_int_equal(pmugate_timing_close(c, h), 0);
        assert_int_equal(open_fds(), before);

        /* a reply naming other threads than asked: closed at the daemon, its fds here */
        fake_reply(&f, 3, 5, timing_other_tids_body, 4);
        fake_reply(&f, 4, 0, empty_body, 0);
        h = NULL;
        assert_int_equal(pmugate_timing_open(c, &req, &h, reason, sizeof(reason)), -EBADMSG);
        assert_null(h);
        assert_int_equal(open_fds(), before);
        pmugate_disconnect(c);
        fake_done(&f);
}

static void test_timing_tids_bounds(void **state) {
        static const uint32_t cpus[] = { 0, 1, 2, 3 };
        pid_t tids[TIMING_TIDS_PER_OPEN + 1];
        pmugate_timing_request req = { .mode = PMUGATE_TIMING_IPS, .pid = 4242, .cpus = cpus, .n_cpus = 1,
                                       .tids = tids, .n_tids = TIMING_TIDS_PER_OPEN + 1 };
        pmugate_timing_handle *h = NULL;
        char reason[400] = "";
        FakeDaemon f;
        pmugate *c = fake_connect(&f);

        for (size_t i = 0; i < ELEMENTSOF(tids); i++)
                tids[i] = (pid_t) (5000 + i);
        /* refused before anything is sent: no reply is queued */
        assert_int_equal(pmugate_timing_open(c, &req, &h, reason, sizeof(reason)), -E2BIG);
        req.n_tids = TIMING_TIDS_PER_OPEN;
        req.n_cpus = 4;
        assert_int_equal(pmugate_timing_open(c, &req, &h, reason, sizeof(reason)), -E2BIG);
        assert_non_null(strstr(reason, "253"));
        req.n_cpus = 1;
        req.tid = 5000;
        assert_int_equal(pmugate_timing_open(c, &req, &h, reason, sizeof(reason)), -EINVAL);
        req.tid = 0;
        tids[3] = 0;
        assert_int_equal(pmugate_timing_open(c, &req, &h, reason, sizeof(reason)), -EINVAL);
        assert_null(h);
        pmugate_disconnect(c);
        fake_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unasked_fds_closed),
                cmocka_unit_test(test_handoff_kept),
                cmocka_unit_test(test_handoff_short),
                cmocka_unit_test(test_timing_tids),
                cmocka_unit_test(test_timing_tids_bounds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

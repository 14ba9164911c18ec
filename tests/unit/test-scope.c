/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: job scope needs the peer's own pidfd, and the peer's pidfd comes only from the
 * socket
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "grants.h"
#include "policy.h"
#include "scope.h"

#define TEST_UID 4242

/* Without the socket's pidfd, /proc/PID/cgroup may belong to whoever got the pid after the
 * client: scope is refused, saying why, even when a grant names its CPUs. */
static void test_no_pidfd_no_scope(void **state) {
        static const uint32_t cpus[] = { 0, 1 };
        Peer peer = {
                .uid = TEST_UID, .gid = TEST_UID, .pid = getpid(), .pidfd = -EBADF, .cgroup_fd = -EBADF,
        };
        Grants grants;
        Scope scope = {};
        char reason[320] = "";

        (void) state;
        grants_init(&grants, NULL, 16);
        assert_int_equal(grants_put(&grants, "77", TEST_UID, cpus, 2), 0);

        assert_int_equal(scope_resolve("/sys/fs/cgroup", &peer, &grants, &scope, reason, sizeof(reason)),
                         PROTO_E_NO_GRANT);
        assert_non_null(strstr(reason, "no pidfd"));
        assert_true(cpuset_is_empty(&scope.cpus));
        /* Nothing was opened on the strength of the pid alone. */
        assert_int_equal(peer.cgroup_fd, -EBADF);
        grants_done(&grants);
}

/* With the socket's pidfd the same grant applies (outside a job's cgroup, through its CPUs). */
static void test_pidfd_from_the_socket(void **state) {
        static const uint32_t cpus[] = { 0, 1 };
        int sv[2];
        Peer peer;
        Grants grants;
        Scope scope = {};
        char reason[320] = "", cgroup[4096] = "", fdinfo[64], line[256];
        FILE *f;
        pid_t pinned = 0;
        size_t n;

        (void) state;
        f = fopen("/proc/self/cgroup", "re");
        assert_non_null(f);
        n = fread(cgroup, 1, sizeof(cgroup) - 1, f);
        cgroup[n] = '\0';
        fclose(f);
        if (strstr(cgroup, "job_"))
                skip();   /* running inside a batch job's cgroup: scope would follow that job */

        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(peer_from_socket(sv[0], &peer), 0);
        assert_int_equal(peer.pid, getpid());
        assert_true(peer.pidfd >= 0);
        /* The pidfd is the kernel's handle on the connecting process itself. */
        (void) snprintf(fdinfo, sizeof(fdinfo), "/proc/self/fdinfo/%d", peer.pidfd);
        f = fopen(fdinfo, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "Pid: %d", &pinned) == 1)
                        break;
        fclose(f);
        assert_int_equal(pinned, getpid());

        grants_init(&grants, NULL, 16);
        assert_int_equal(grants_put(&grants, "77", peer.uid, cpus, 2), 0);
        assert_int_equal(scope_resolve("/sys/fs/cgroup", &peer, &grants, &scope, reason, sizeof(reason)), 0);
        assert_true(cpuset_has(&scope.cpus, 0) && cpuset_has(&scope.cpus, 1) && !cpuset_has(&scope.cpus, 2));
        assert_string_equal(scope.job, "77");
        grants_done(&grants);
        peer_done(&peer);
        close(sv[0]);
        close(sv[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_pidfd_no_scope),
                cmocka_unit_test(test_pidfd_from_the_socket),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

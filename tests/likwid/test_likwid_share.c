/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The run directory of 'pmugate likwid' (likwid-share.h): who may join a measurement's session
 * (the descendant walk over a fake /proc), which run directories are accepted, the share socket
 * and the void file.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "likwid/likwid-share.h"
#include "macro.h"
#include "pmugate-limits.h"

static char root[] = "/tmp/test-likwid-share-XXXXXX";

static void put_stat(int proc_fd, int pid, const char *comm, int ppid) {
        char dir[32], path[64], line[256];
        int fd;

        (void) snprintf(dir, sizeof(dir), "%d", pid);
        assert_int_equal(mkdirat(proc_fd, dir, 0755), 0);
        (void) snprintf(path, sizeof(path), "%d/stat", pid);
        fd = openat(proc_fd, path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        assert_true(fd >= 0);
        (void) snprintf(line, sizeof(line), "%d (%s) S %d 1 1 0 -1 4194560 0 0 0\n", pid, comm, ppid);
        assert_int_equal(write(fd, line, strlen(line)), (ssize_t) strlen(line));
        close(fd);
}

static void test_descends(void **state) {
        char proc[sizeof(root) + 8];
        int proc_fd;

        (void) snprintf(proc, sizeof(proc), "%s/proc", root);
        assert_int_equal(mkdir(proc, 0755), 0);
        proc_fd = open(proc, O_RDONLY | O_DIRECTORY);
        assert_true(proc_fd >= 0);
        /* init 1 <- shell 100 <- likwid-lua 200 <- {forwarder 300, app 400 <- forwarder 500};
         * 600 is the user's other process, its name made to look like a stat line */
        put_stat(proc_fd, 100, "bash", 1);
        put_stat(proc_fd, 200, "likwid-lua", 100);
        put_stat(proc_fd, 300, "likwid-accessD", 200);
        put_stat(proc_fd, 400, "a) S 200 (x", 200);
        put_stat(proc_fd, 500, "likwid-accessD", 400);
        put_stat(proc_fd, 600, "x) S 200 1 (y", 100);

        assert_true(likwid_pid_descends(proc_fd, 500, 200));
        assert_true(likwid_pid_descends(proc_fd, 400, 200));
        assert_true(likwid_pid_descends(proc_fd, 200, 200));
        /* a command name holding ") S 200" does not make a process a child of 200 */
        assert_false(likwid_pid_descends(proc_fd, 600, 200));
        assert_false(likwid_pid_descends(proc_fd, 100, 200));
        /* a process that is gone has no ancestors */
        assert_false(likwid_pid_descends(proc_fd, 700, 200));
        close(proc_fd);
}

static void test_descends_bounded(void **state) {
        char proc[sizeof(root) + 8];
        int proc_fd;

        (void) snprintf(proc, sizeof(proc), "%s/loop", root);
        assert_int_equal(mkdir(proc, 0755), 0);
        proc_fd = open(proc, O_RDONLY | O_DIRECTORY);
        assert_true(proc_fd >= 0);
        /* a parent chain that loops (a fake /proc; PIDs reused mid-walk) ends */
        put_stat(proc_fd, 10, "a", 11);
        put_stat(proc_fd, 11, "b", 10);
        assert_false(likwid_pid_descends(proc_fd, 10, 200));
        /* a chain longer than the walk's limit is not followed to its end */
        for (int pid = 1000; pid < 1000 + (int) PMUGATE_LIKWID_ANCESTRY_MAX + 2; pid++)
                put_stat(proc_fd, pid, "c", pid + 1);
        assert_true(likwid_pid_descends(proc_fd, 1000, 1000 + PMUGATE_LIKWID_ANCESTRY_MAX - 1));
        assert_false(likwid_pid_descends(proc_fd, 1000, 1000 + PMUGATE_LIKWID_ANCESTRY_MAX + 1));
        close(proc_fd);
}

static void test_run_dir(void **state) {
        char run[sizeof(root) + 8], open_dir[sizeof(root) + 8], link[sizeof(root) + 8], reason[64];
        int fd = -1, listen_fd = -1, conn_fd = -1, again = -1;

        (void) snprintf(run, sizeof(run), "%s/run", root);
        (void) snprintf(open_dir, sizeof(open_dir), "%s/open", root);
        (void) snprintf(link, sizeof(link), "%s/link", root);
        assert_int_equal(mkdir(run, 0700), 0);
        assert_int_equal(mkdir(open_dir, 0700), 0);
        assert_int_equal(chmod(open_dir, 0755), 0);
        assert_int_equal(symlink(run, link), 0);

        assert_int_equal(likwid_run_dir_open(open_dir, &fd), -EPERM);
        assert_true(likwid_run_dir_open(link, &fd) < 0);
        assert_int_equal(likwid_run_dir_open("relative", &fd), -EINVAL);
        assert_int_equal(likwid_run_dir_open(run, &fd), 0);

        assert_int_equal(likwid_share_connect(run, &conn_fd), -ENOENT);
        assert_int_equal(likwid_share_listen(run, &listen_fd), 0);
        assert_int_equal(likwid_share_listen(run, &again), -EADDRINUSE);
        assert_int_equal(likwid_share_connect(run, &conn_fd), 0);
        /* this process is not a descendant of PID 1's child 2 (kthreadd) */
        {
                int peer = accept(listen_fd, NULL, NULL);

                assert_true(peer >= 0);
                assert_true(likwid_peer_joins(peer, getppid()));
                assert_false(likwid_peer_joins(peer, 2));
                close(peer);
        }

        assert_int_equal(likwid_run_void_reason(fd, reason, sizeof(reason)), 0);
        assert_int_equal(likwid_run_void(fd, "first\nreason\x01"), 0);
        assert_int_equal(likwid_run_void(fd, "second"), 0);
        assert_int_equal(likwid_run_void_reason(fd, reason, sizeof(reason)), 1);
        assert_string_equal(reason, "first");
        close(conn_fd);
        close(listen_fd);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_descends),
                cmocka_unit_test(test_descends_bounded),
                cmocka_unit_test(test_run_dir),
        };
        int r;

        if (!mkdtemp(root))
                return 1;
        r = cmocka_run_group_tests(tests, NULL, NULL);
        {
                char cmd[sizeof(root) + 16];

                (void) snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
                (void) !system(cmd);
        }
        return r;
}

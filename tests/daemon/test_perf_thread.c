/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: perf_open's "thread" target on the real kernel: a thread of the caller's own
 * process (its main thread too) is found under /proc/PID/task, another process's is refused,
 * and a thread that ended no longer counts as the process's after the open; timing_open's
 * "tid" (a thread of a named process) the same way, and "tids" (several, each checked, all
 * alive after the open or none)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf/perf-target.h"
#include "error.h"
#include "pmugate-limits.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static pid_t worker_tid;
static bool worker_may_end;

static void *worker(void *arg) {
        (void) arg;
        (void) pthread_mutex_lock(&lock);
        worker_tid = gettid();
        (void) pthread_cond_broadcast(&changed);
        while (!worker_may_end)
                (void) pthread_cond_wait(&changed, &lock);
        (void) pthread_mutex_unlock(&lock);
        return NULL;
}

/* The caller as the daemon sees it: this process, pinned by its pidfd. */
static Peer self_peer(uid_t uid) {
        Peer p = { .uid = uid, .gid = getgid(), .pid = getpid(), .cgroup_fd = -1 };

        p.pidfd = pidfd_open(getpid(), 0);
        assert_true(p.pidfd >= 0);
        return p;
}

static void test_own_threads(void **state) {
        Peer peer = self_peer(getuid());
        PerfProcess p = { .pidfd = -1 }, named = { .pidfd = -1 };
        Refusal refusal = {};
        pthread_t th;
        pid_t child;

        (void) state;
        assert_int_equal(pthread_create(&th, NULL, worker, NULL), 0);
        (void) pthread_mutex_lock(&lock);
        while (worker_tid == 0)
                (void) pthread_cond_wait(&changed, &lock);
        (void) pthread_mutex_unlock(&lock);

        /* a thread that does not lead the process: pidfd_open() refuses it, "thread" takes it */
        assert_true(pidfd_open(worker_tid, 0) < 0);
        assert_int_equal(perf_target_thread("/proc", &peer, worker_tid, NULL, &p, &refusal), 0);
        assert_int_equal(p.pid, getpid());
        assert_int_equal(p.n_tids, 1);
        assert_int_equal(p.tids[0], worker_tid);
        assert_true(p.pidfd >= 0 && p.pidfd != peer.pidfd);
        assert_true(perf_target_thread_alive("/proc", &p));
        perf_process_done(&p);

        /* 0 and the pid: the main thread alone */
        assert_int_equal(perf_target_thread("/proc", &peer, 0, NULL, &p, &refusal), 0);
        assert_int_equal(p.n_tids, 1);
        assert_int_equal(p.tids[0], getpid());
        perf_process_done(&p);
        assert_int_equal(perf_target_thread("/proc", &peer, getpid(), NULL, &p, &refusal), 0);
        assert_int_equal(p.tids[0], getpid());

        /* timing_open's "tid": the worker as a thread of this process named by its pid */
        assert_int_equal(perf_target_process_thread("/proc", &peer, getpid(), worker_tid, NULL, &named, &refusal), 0);
        assert_int_equal(named.pid, getpid());
        assert_int_equal(named.n_tids, 1);
        assert_int_equal(named.tids[0], worker_tid);
        assert_true(named.pidfd >= 0);
        assert_true(perf_target_thread_alive("/proc", &named));
        perf_process_done(&named);
        assert_int_equal(perf_target_process_thread("/proc", &peer, getpid(), 0, NULL, &named, &refusal),
                         PROTO_E_BAD_FIELD);
        assert_int_equal(named.pidfd, -EBADF);

        /* timing_open's "tids": both threads, in the order named; one that is not the process's
         * refuses the whole */
        {
                pid_t both[] = { worker_tid, getpid() }, with_init[] = { getpid(), 1 };

                assert_int_equal(perf_target_process_threads("/proc", &peer, getpid(), both, 2, NULL, &named,
                                                             &refusal), 0);
                assert_int_equal(named.n_tids, 2);
                assert_int_equal(named.tids[0], worker_tid);
                assert_int_equal(named.tids[1], getpid());
                assert_true(perf_target_thread_alive("/proc", &named));
                perf_process_done(&named);
                refusal = (Refusal) {};
                assert_int_equal(perf_target_process_threads("/proc", &peer, getpid(), with_init, 2, NULL, &named,
                                                             &refusal), PROTO_E_BAD_FIELD);
                assert_non_null(strstr(refusal.reason, "1 is not a thread of process"));
                assert_int_equal(named.pidfd, -EBADF);
                assert_int_equal(perf_target_process_threads("/proc", &peer, getpid(), both, 0, NULL, &named,
                                                             &refusal), PROTO_E_BAD_FIELD);
                assert_int_equal(perf_target_process_threads("/proc", &peer, getpid(), both,
                                                             TIMING_TIDS_PER_OPEN + 1, NULL, &named, &refusal),
                                 PROTO_E_BAD_FIELD);
        }

        /* once the thread ended, its tid is not the process's any more */
        (void) pthread_mutex_lock(&lock);
        worker_may_end = true;
        (void) pthread_cond_broadcast(&changed);
        (void) pthread_mutex_unlock(&lock);
        assert_int_equal(pthread_join(th, NULL), 0);
        p.tids[0] = worker_tid;
        assert_false(perf_target_thread_alive("/proc", &p));
        perf_process_done(&p);
        /* of several threads, one that ended fails them all */
        {
                pid_t both[] = { getpid(), worker_tid };

                assert_false(perf_target_thread_alive("/proc", &(PerfProcess) { .pidfd = peer.pidfd, .pid = getpid(),
                                                                                .tids = both, .n_tids = 2 }));
                assert_true(perf_target_thread_alive("/proc", &(PerfProcess) { .pidfd = peer.pidfd, .pid = getpid(),
                                                                               .tids = both, .n_tids = 1 }));
        }
        p = (PerfProcess) { .pidfd = -1 };
        assert_int_equal(perf_target_thread("/proc", &peer, worker_tid, NULL, &p, &refusal), PROTO_E_NOT_AUTHORIZED);
        assert_non_null(strstr(refusal.reason, "not a thread of your process"));
        assert_int_equal(p.pidfd, -1);          /* untouched */
        refusal = (Refusal) {};
        assert_int_equal(perf_target_process_thread("/proc", &peer, getpid(), worker_tid, NULL, &p, &refusal),
                         PROTO_E_BAD_FIELD);
        assert_non_null(strstr(refusal.reason, "is not a thread of process"));
        assert_int_equal(p.pidfd, -1);

        /* another process's thread, even the caller's own child's */
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                pause();
                _exit(0);
        }
        refusal = (Refusal) {};
        assert_int_equal(perf_target_thread("/proc", &peer, child, NULL, &p, &refusal), PROTO_E_NOT_AUTHORIZED);
        assert_non_null(strstr(refusal.reason, "not a thread of your process"));
        /* a process of its own is no thread of this one, nor this one's thread of the child */
        refusal = (Refusal) {};
        assert_int_equal(perf_target_process_thread("/proc", &peer, getpid(), child, NULL, &p, &refusal),
                         PROTO_E_BAD_FIELD);
        assert_non_null(strstr(refusal.reason, "is not a thread of process"));
        assert_int_equal(perf_target_process_thread("/proc", &peer, child, getpid(), NULL, &p, &refusal),
                         PROTO_E_BAD_FIELD);
        (void) kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
        assert_int_equal(perf_target_thread("/proc", &peer, -5, NULL, &p, &refusal), PROTO_E_BAD_FIELD);
        (void) close(peer.pidfd);
}

static void test_unpinned_caller(void **state) {
        Peer peer = { .uid = getuid(), .pid = getpid(), .pidfd = -EBADF, .cgroup_fd = -1 };
        PerfProcess p = { .pidfd = -1 };
        Refusal refusal = {};

        (void) state;
        /* without the connection's pidfd, nothing pins the process the tid is checked against */
        assert_int_equal(perf_target_thread("/proc", &peer, 0, NULL, &p, &refusal), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(refusal.reason, "pidfd"));
        assert_false(perf_target_thread_alive("/proc", &p));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_own_threads),
                cmocka_unit_test(test_unpinned_caller),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: pmugate timing -p's threads grouped by their affinity on the real kernel
 * (client/cli/timing-threads.c): threads pinned to one CPU each group per CPU, a thread that
 * ended is counted apart, and the requests a group takes keep every one within the fds of a
 * reply and the threads of a timing_open
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/timing-threads.h"
#include "pmugate-limits.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static bool may_end;

typedef struct Worker {
        pthread_t th;
        pid_t tid;
} Worker;

static void *work(void *arg) {
        Worker *w = arg;

        (void) pthread_mutex_lock(&lock);
        w->tid = gettid();
        (void) pthread_cond_broadcast(&changed);
        while (!may_end)
                (void) pthread_cond_wait(&changed, &lock);
        (void) pthread_mutex_unlock(&lock);
        return NULL;
}

static void start(Worker *w, int cpu) {
        pthread_attr_t attr;
        cpu_set_t one;

        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        assert_int_equal(pthread_attr_init(&attr), 0);
        assert_int_equal(pthread_attr_setaffinity_np(&attr, sizeof(one), &one), 0);
        assert_int_equal(pthread_create(&w->th, &attr, work, w), 0);
        (void) pthread_attr_destroy(&attr);
        (void) pthread_mutex_lock(&lock);
        while (w->tid == 0)
                (void) pthread_cond_wait(&changed, &lock);
        (void) pthread_mutex_unlock(&lock);
}

static const TimingThreadGroup *group_of(const TimingThreadGroup *g, size_t n, pid_t tid) {
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < g[i].n_tids; k++)
                        if (g[i].tids[k] == tid)
                                return &g[i];
        return NULL;
}

static void test_group_by_affinity(void **state) {
        Worker w[4] = {};
        cpu_set_t all;
        int cpus[2], n = 0;
        pid_t tasks[6], ended;
        TimingThreadGroup *groups = NULL;
        size_t n_groups = 0, gone = 0;
        const TimingThreadGroup *g0, *g1;

        (void) state;
        assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
        for (int cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++)
                if (CPU_ISSET(cpu, &all))
                        cpus[n++] = cpu;
        if (n < 2)
                skip();
        /* a thread that ended: its tid is asked no more */
        {
                Worker done = {};

                start(&done, cpus[0]);
                (void) pthread_mutex_lock(&lock);
                may_end = true;
                (void) pthread_cond_broadcast(&changed);
                (void) pthread_mutex_unlock(&lock);
                assert_int_equal(pthread_join(done.th, NULL), 0);
                ended = done.tid;
                may_end = false;
        }
        for (size_t i = 0; i < 4; i++)
                start(&w[i], cpus[i % 2]);
        tasks[0] = getpid();
        for (size_t i = 0; i < 4; i++)
                tasks[i + 1] = w[i].tid;
        tasks[5] = ended;
        assert_int_equal(timing_threads_group(tasks, 6, &groups, &n_groups, &gone), 0);
        assert_int_equal(gone, 1);
        /* the main thread's affinity (all CPUs), and one group per CPU pinned to */
        assert_int_equal(n_groups, 3);
        g0 = group_of(groups, n_groups, w[0].tid);
        g1 = group_of(groups, n_groups, w[1].tid);
        assert_non_null(g0);
        assert_non_null(g1);
        assert_true(g0 == group_of(groups, n_groups, w[2].tid));
        assert_true(g1 == group_of(groups, n_groups, w[3].tid));
        assert_int_equal(g0->n_tids, 2);
        assert_int_equal(g0->n_cpus, 1);
        assert_int_equal(g0->cpus[0], cpus[0]);
        assert_int_equal(g1->n_cpus, 1);
        assert_int_equal(g1->cpus[0], cpus[1]);
        assert_int_equal(group_of(groups, n_groups, getpid())->n_cpus, CPU_COUNT(&all));
        assert_null(group_of(groups, n_groups, ended));
        timing_thread_groups_free(groups, n_groups);

        /* every task ended: nothing to group */
        assert_int_equal(timing_threads_group(&ended, 1, &groups, &n_groups, &gone), -ESRCH);
        (void) pthread_mutex_lock(&lock);
        may_end = true;
        (void) pthread_cond_broadcast(&changed);
        (void) pthread_mutex_unlock(&lock);
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(pthread_join(w[i].th, NULL), 0);
}

static void test_requests(void **state) {
        uint32_t cpus[100];
        TimingThreadGroup g = { .cpus = cpus };

        (void) state;
        for (uint32_t i = 0; i < 100; i++)
                cpus[i] = i;
        /* the threads of one request, within TIMING_TIDS_PER_OPEN and the fds of a reply */
        assert_int_equal(timing_thread_group_tids_per_open(1), TIMING_TIDS_PER_OPEN);
        assert_int_equal(timing_thread_group_tids_per_open(2), TIMING_TIDS_PER_OPEN);
        assert_int_equal(timing_thread_group_tids_per_open(4), PERF_HANDOFF_FDS_PER_MESSAGE / 4);
        assert_int_equal(timing_thread_group_tids_per_open(TIMING_CPUS_PER_OPEN),
                         PERF_HANDOFF_FDS_PER_MESSAGE / TIMING_CPUS_PER_OPEN);
        for (size_t n = 1; n <= TIMING_CPUS_PER_OPEN; n++)
                assert_true(timing_thread_group_tids_per_open(n) * n <= PERF_HANDOFF_FDS_PER_MESSAGE);
        /* 12 threads pinned to one CPU: one request; 130 on 2 CPUs: 64 + 64 + 2 */
        g.n_cpus = 1;
        g.n_tids = 12;
        assert_int_equal(timing_thread_group_requests(&g), 1);
        g.n_cpus = 2;
        g.n_tids = 130;
        assert_int_equal(timing_thread_group_requests(&g), 3);
        /* 10 threads on 100 CPUs: 64 CPUs take 3 threads a request (4), the other 36 7 (2) */
        g.n_cpus = 100;
        g.n_tids = 10;
        assert_int_equal(timing_thread_group_requests(&g), 6);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_group_by_affinity),
                cmocka_unit_test(test_requests),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

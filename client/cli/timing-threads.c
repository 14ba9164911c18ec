/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing -p's threads (timing-threads.h)
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/timing-threads.h"
#include "macro.h"
#include "pmugate-limits.h"

static int compare_pid(const void *x, const void *y) {
        pid_t a = *(const pid_t *) x, b = *(const pid_t *) y;

        return (a > b) - (a < b);
}

/* A directory name that is a whole positive decimal task id, nothing else. */
static bool parse_task(const char *name, pid_t *ret) {
        unsigned long v = 0;

        if (!name[0] || strlen(name) > 10)
                return false;
        for (const char *p = name; *p; p++) {
                if (*p < '0' || *p > '9')
                        return false;
                v = v * 10 + (unsigned long) (*p - '0');
        }
        if (v == 0 || v > INT32_MAX)
                return false;
        *ret = (pid_t) v;
        return true;
}

int timing_threads_list(pid_t pid, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *tids = NULL;
        char path[64];
        struct dirent *de;
        size_t n = 0;
        DIR *d;

        (void) snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? -ESRCH : negative_errno();
        tids = calloc(PERF_PROCESS_THREADS_MAX, sizeof(pid_t));
        if (!tids) {
                (void) closedir(d);
                return -ENOMEM;
        }
        while ((de = readdir(d))) {
                pid_t tid;

                if (!parse_task(de->d_name, &tid))
                        continue;
                if (n >= PERF_PROCESS_THREADS_MAX) {
                        (void) closedir(d);
                        return -E2BIG;
                }
                tids[n++] = tid;
        }
        (void) closedir(d);
        if (n == 0)
                return -ESRCH;
        qsort(tids, n, sizeof(*tids), compare_pid);
        *ret = TAKE_PTR(tids);
        *ret_n = n;
        return 0;
}

int timing_threads_affinity(const pid_t *tasks, size_t n_tasks, uint32_t **ret, size_t *ret_n) {
        _cleanup_free_ uint32_t *cpus = NULL;
        cpu_set_t all, one;
        bool asked = false;
        size_t n = 0;

        CPU_ZERO(&all);
        for (size_t i = 0; i < n_tasks; i++) {
                if (sched_getaffinity(tasks[i], sizeof(one), &one) < 0) {
                        if (errno == ESRCH)
                                continue;
                        return negative_errno();
                }
                CPU_OR(&all, &all, &one);
                asked = true;
        }
        if (!asked)
                return -ESRCH;
        cpus = calloc(CPU_SETSIZE, sizeof(uint32_t));
        if (!cpus)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &all))
                        cpus[n++] = cpu;
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

int timing_threads_count(TimingThreadTally *t, uint32_t pid, uint32_t tid) {
        size_t lo = 0, hi = t->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->items[mid].tid == tid) {
                        t->items[mid].samples++;
                        return 0;
                }
                if (t->items[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (t->n >= TIMING_THREADS_COUNTED_MAX) {
                t->uncounted++;
                return 0;
        }
        if (t->n >= t->allocated) {
                size_t k = t->allocated ? 2 * t->allocated : 16;
                TimingThreadCount *p = reallocarray(t->items, k, sizeof(*p));

                if (!p)
                        return -ENOMEM;
                t->items = p;
                t->allocated = k;
        }
        memmove(t->items + lo + 1, t->items + lo, (t->n - lo) * sizeof(*t->items));
        t->items[lo] = (TimingThreadCount) { .pid = pid, .tid = tid, .samples = 1 };
        t->n++;
        return 0;
}

void timing_threads_done(TimingThreadTally *t) {
        free(t->items);
        *t = (TimingThreadTally) {};
}

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

void timing_thread_groups_free(TimingThreadGroup *groups, size_t n) {
        for (size_t i = 0; groups && i < n; i++) {
                free(groups[i].cpus);
                free(groups[i].tids);
        }
        free(groups);
}

static int group_new(TimingThreadGroup *g, const cpu_set_t *set, size_t n_tasks) {
        size_t n = (size_t) CPU_COUNT(set);

        if (n == 0)
                return -ENOENT;
        *g = (TimingThreadGroup) { .cpus = calloc(n, sizeof(uint32_t)), .tids = calloc(n_tasks, sizeof(pid_t)) };
        if (!g->cpus || !g->tids)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, set))
                        g->cpus[g->n_cpus++] = cpu;
        return 0;
}

int timing_threads_group(const pid_t *tasks, size_t n_tasks, TimingThreadGroup **ret, size_t *ret_n,
                         size_t *ret_gone) {
        _cleanup_free_ cpu_set_t *sets = NULL;
        TimingThreadGroup *groups = NULL;
        size_t n = 0, gone = 0;
        int q = 0;

        /* a group per distinct affinity: sets[k] is group k's */
        sets = calloc(n_tasks, sizeof(*sets));
        groups = calloc(n_tasks, sizeof(*groups));
        if (!sets || !groups) {
                free(groups);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_tasks && q >= 0; i++) {
                cpu_set_t set;
                size_t k = 0;

                if (sched_getaffinity(tasks[i], sizeof(set), &set) < 0) {
                        if (errno == ESRCH) {
                                gone++;
                                continue;
                        }
                        q = negative_errno();
                        break;
                }
                while (k < n && !CPU_EQUAL(&sets[k], &set))
                        k++;
                if (k == n) {
                        q = group_new(&groups[n], &set, n_tasks);
                        if (q < 0) {
                                n++;
                                break;
                        }
                        sets[n++] = set;
                }
                groups[k].tids[groups[k].n_tids++] = tasks[i];
        }
        if (q >= 0 && n == 0)
                q = -ESRCH;
        if (q < 0) {
                timing_thread_groups_free(groups, n);
                return q;
        }
        *ret = groups;
        *ret_n = n;
        *ret_gone = gone;
        return 0;
}

size_t timing_thread_group_tids_per_open(size_t n_cpus) {
        return MIN((size_t) TIMING_TIDS_PER_OPEN, PERF_HANDOFF_FDS_PER_MESSAGE / MAX(n_cpus, (size_t) 1));
}

size_t timing_thread_group_requests(const TimingThreadGroup *g) {
        size_t n = 0;

        for (size_t at = 0; at < g->n_cpus; at += TIMING_CPUS_PER_OPEN) {
                size_t per = timing_thread_group_tids_per_open(MIN((size_t) TIMING_CPUS_PER_OPEN, g->n_cpus - at));

                n += (g->n_tids + per - 1) / per;
        }
        return n;
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

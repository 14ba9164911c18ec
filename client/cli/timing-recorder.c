/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing's recording: open, map, drain, order by time
 */
#include <errno.h>
#include <sched.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/timing-recorder.h"
#include "macro.h"
#include "pmugate-limits.h"

#define PROC_MAPS_LINE_MAX (TIMING_PATH_MAX + 256U)

/* The part of a record the analysis reads: a sample without its unused entries, a mapping
 * whole, the rest as they are. */
static size_t record_size(const TimingRecord *rec) {
        if (rec->kind == TIMING_RECORD_SAMPLE)
                return offsetof(TimingRecord, sample.branches) +
                       MIN(rec->sample.n_branches, (size_t) TIMING_BRANCHES_MAX) * sizeof(TimingBranch);
        return sizeof(TimingRecord);
}

static int on_record(const TimingRecord *rec, void *userdata) {
        TimingRecorder *r = userdata;
        TimingRecord *copy;

        /* the process's end, not one of its threads' */
        if (rec->kind == TIMING_RECORD_EXIT && rec->pid == r->target && rec->tid == r->target)
                r->exit_seen = true;
        if (rec->kind == TIMING_RECORD_SAMPLE && timing_threads_count(&r->threads, rec->sample.pid, rec->sample.tid) < 0)
                return -ENOMEM;
        if (r->n_pending >= r->n_pending_allocated) {
                size_t n = r->n_pending_allocated ? 2 * r->n_pending_allocated : 1024;
                TimingPending *p = reallocarray(r->pending, n, sizeof(*p));

                if (!p)
                        return -ENOMEM;
                r->pending = p;
                r->n_pending_allocated = n;
        }
        /* a full TimingRecord is as large as its largest member (a mapping's path): samples, by
         * far the most, are kept at their own size, the entries they have */
        copy = malloc(record_size(rec));
        if (!copy)
                return -ENOMEM;
        memcpy(copy, rec, record_size(rec));
        r->pending[r->n_pending++] = (TimingPending) { .time = rec->time, .seq = r->seq++, .rec = copy };
        return 0;
}

static int compare_pending(const void *x, const void *y) {
        const TimingPending *a = x, *b = y;

        if (a->time != b->time)
                return a->time < b->time ? -1 : 1;
        return (a->seq > b->seq) - (a->seq < b->seq);
}

int timing_recorder_drain(TimingRecorder *r) {
        int q = 0;

        r->last_round = 0;
        for (size_t i = 0; i < r->n_rings; i++) {
                uint64_t malformed = 0;
                int n;

                if (!r->rings[i])
                        continue;
                n = timing_ring_drain(r->rings[i], on_record, r, &malformed);
                r->malformed += malformed;
                if (n == -EBADMSG) {
                        /* the rest of this ring cannot be framed: what was read stays */
                        r->unframed = true;
                        r->rings[i] = timing_ring_unmap(r->rings[i]);
                } else if (n < 0) {
                        q = n;
                        break;
                }
        }
        r->last_round = r->n_pending;
        if (r->n_pending > 1)
                qsort(r->pending, r->n_pending, sizeof(*r->pending), compare_pending);
        for (size_t i = 0; i < r->n_pending; i++) {
                if (q >= 0)
                        q = timing_analysis_add_record(r->analysis, r->pending[i].rec);
                free(r->pending[i].rec);
        }
        r->n_pending = 0;
        return q;
}

void timing_recorder_done(TimingRecorder *r, pmugate *c) {
        for (size_t i = 0; i < r->n_rings; i++)
                r->rings[i] = timing_ring_unmap(r->rings[i]);
        free(r->rings);
        for (size_t i = 0; i < r->n_handles; i++)
                (void) pmugate_timing_close(c, r->handles[i]);
        free(r->handles);
        for (size_t i = 0; i < r->n_pending; i++)
                free(r->pending[i].rec);
        free(r->pending);
        /* what the recording learnt stays for the report */
        *r = (TimingRecorder) { .analysis = r->analysis, .target = r->target, .malformed = r->malformed,
                                .unframed = r->unframed, .exit_seen = r->exit_seen, .detached = r->detached,
                                .threads = r->threads, .threads_gone = r->threads_gone };
}

void timing_recorder_free(TimingRecorder *r, pmugate *c) {
        timing_recorder_done(r, c);
        timing_threads_done(&r->threads);
}

/* A refusal of branch mode for the lack of an LBR (or its cycles) gets what does work. */
static void say_refused(TimingMode mode, const char *reason) {
        fprintf(stderr, "pmugate: %s\n", reason);
        if (mode == TIMING_MODE_BRANCHES && !strstr(reason, "ips") &&
            (strstr(reason, "branch stack") || strstr(reason, "LBR") || strstr(reason, "records no cycles")))
                fprintf(stderr,
                        "pmugate: --mode ips samples instructions on this machine (no cycles per "
                        "block, but where the time goes per function and line)\n");
}

/* Whether a thread listed before its open refused is there no more: it ended (with its
 * process, perhaps), which is no failure of the recording. */
static bool thread_gone(pid_t pid, pid_t tid) {
        char path[64];

        (void) snprintf(path, sizeof(path), "/proc/%d/task/%d", (int) pid, (int) tid);
        return access(path, F_OK) < 0 && errno == ENOENT;
}

/* Maps fd's ring, or points it at the ring of its CPU's first event (*cpu_ring_fd, which the
 * first mapped becomes): the kernel lets events of one CPU share a ring, the simulator's memfds
 * do not (ENOTTY), and then each has its own. */
static int ring_for(TimingRecorder *r, TimingMode mode, int fd, int cpu, int *cpu_ring_fd) {
        int q;

        if (*cpu_ring_fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, *cpu_ring_fd) == 0)
                return 0;
        if (r->n_rings >= r->n_rings_allocated)
                return -ENOBUFS;
        q = timing_ring_map(fd, timing_sample_type(mode), &r->rings[r->n_rings]);
        if (q < 0) {
                fprintf(stderr, "pmugate: cannot map the ring of CPU %d: %s\n", cpu, strerror(-q));
                return q;
        }
        r->n_rings++;
        if (*cpu_ring_fd < 0)
                *cpu_ring_fd = fd;
        return 0;
}

/* Leaves out of tids (*n_tids of them) the threads that ended; returns how many. */
static size_t drop_gone(pid_t pid, pid_t *tids, size_t *n_tids) {
        size_t kept = 0, n = *n_tids;

        for (size_t i = 0; i < n; i++)
                if (!thread_gone(pid, tids[i]))
                        tids[kept++] = tids[i];
        *n_tids = kept;
        return n - kept;
}

/* One timing_open: of pid's own events, or of tids' (n_tids, which a refusal for a thread that
 * ended shrinks before the request is asked again), on cpus; each fd's ring mapped or pointed
 * at its CPU's (cpu_ring_fd by CPU number). Returns 1 when opened, 0 when every thread named
 * had ended, or a negative errno. */
static int open_one(TimingRecorder *r, pmugate *c, TimingMode mode, uint64_t period, pid_t pid, pid_t *tids,
                    size_t n_tids, bool on_exec, const uint32_t *cpus, size_t n_cpus, int *cpu_ring_fd,
                    uint64_t *ret_period) {
        pmugate_timing_handle *h = NULL;
        int q;

        for (;;) {
                pmugate_timing_request req = {
                        .mode = (pmugate_timing_mode) mode,
                        .pid = pid,
                        .on_exec = on_exec,
                        .period = period,
                        .cpus = cpus,
                        .n_cpus = n_cpus,
                        .tids = tids,
                        .n_tids = n_tids,
                };
                char reason[PMUGATE_REASON_MAX] = "";
                size_t gone;

                if (tids && n_tids == 0)
                        return 0;
                q = pmugate_timing_open(c, &req, &h, reason, sizeof(reason));
                if (q >= 0)
                        break;
                /* a thread that ended is no failure of the recording: the others are asked again */
                gone = tids ? drop_gone(pid, tids, &n_tids) : 0;
                if (gone == 0) {
                        say_refused(mode, reason[0] ? reason : pmugate_strerror(q));
                        return q;
                }
                r->threads_gone += gone;
        }
        if (r->n_handles >= r->n_handles_allocated) {
                (void) pmugate_timing_close(c, h);
                return -ENOBUFS;
        }
        r->handles[r->n_handles++] = h;
        *ret_period = pmugate_timing_period(h);
        for (size_t i = 0; i < pmugate_timing_n_fds(h); i++) {
                int cpu = pmugate_timing_cpu(h, i);

                if (cpu < 0 || cpu >= CPU_SETSIZE)
                        return -EBADMSG;
                q = ring_for(r, mode, pmugate_timing_fd(h, i), cpu, &cpu_ring_fd[cpu]);
                if (q < 0)
                        return q;
        }
        return 1;
}

/* A running process's threads, group by group of one affinity: each group's CPUs in chunks of
 * TIMING_CPUS_PER_OPEN, its threads in chunks whose events fit one reply. */
static int open_threads(TimingRecorder *r, pmugate *c, TimingMode mode, uint64_t period, pid_t pid,
                        const pid_t *tids, size_t n_tids, int *cpu_ring_fd, uint64_t *ret_period) {
        TimingThreadGroup *groups = NULL;
        size_t n_groups = 0, gone = 0, n_requests = 0, n_events = 0, opened = 0;
        int q;

        q = timing_threads_group(tids, n_tids, &groups, &n_groups, &gone);
        if (q == -ESRCH) {
                fprintf(stderr, "pmugate: process %d ended before its events were open\n", (int) pid);
                return q;
        }
        if (q < 0) {
                fprintf(stderr, "pmugate: the CPUs the threads of process %d may run on: %s\n", (int) pid,
                        strerror(-q));
                return q;
        }
        r->threads_gone += gone;
        for (size_t g = 0; g < n_groups; g++) {
                n_requests += timing_thread_group_requests(&groups[g]);
                n_events += groups[g].n_tids * groups[g].n_cpus;
        }
        /* said before the first open, rather than as the daemon's refusal halfway */
        if (n_requests > MIN(TIMING_HANDLES_PER_UID_MAX, PERF_HANDLES_PER_SESSION_MAX)) {
                fprintf(stderr,
                        "pmugate: process %d runs %zu threads in %zu groups of one CPU affinity: -p needs %zu "
                        "timing handles (one holds up to %u threads of one affinity on up to %u CPUs, and at "
                        "most %u events), and a user holds at most %u; start the program under pmugate timing "
                        "-- COMMAND instead (one event per CPU, whatever its threads)\n",
                        (int) pid, n_tids - gone, n_groups, n_requests, TIMING_TIDS_PER_OPEN, TIMING_CPUS_PER_OPEN,
                        PERF_HANDOFF_FDS_PER_MESSAGE, MIN(TIMING_HANDLES_PER_UID_MAX, PERF_HANDLES_PER_SESSION_MAX));
                timing_thread_groups_free(groups, n_groups);
                return -E2BIG;
        }
        r->handles = calloc(n_requests, sizeof(*r->handles));
        r->rings = calloc(n_events, sizeof(*r->rings));
        if (!r->handles || !r->rings) {
                timing_thread_groups_free(groups, n_groups);
                return -ENOMEM;
        }
        r->n_handles_allocated = n_requests;
        r->n_rings_allocated = n_events;
        for (size_t g = 0; g < n_groups && q >= 0; g++) {
                TimingThreadGroup *group = &groups[g];

                for (size_t at = 0; at < group->n_cpus && q >= 0; at += TIMING_CPUS_PER_OPEN) {
                        size_t n_cpus = MIN((size_t) TIMING_CPUS_PER_OPEN, group->n_cpus - at);
                        size_t per = timing_thread_group_tids_per_open(n_cpus);

                        for (size_t t = 0; t < group->n_tids && q >= 0; t += per) {
                                q = open_one(r, c, mode, period, pid, group->tids + t, MIN(per, group->n_tids - t),
                                             false, group->cpus + at, n_cpus, cpu_ring_fd, ret_period);
                                opened += q > 0;
                        }
                }
        }
        timing_thread_groups_free(groups, n_groups);
        if (q < 0)
                return q;
        if (opened == 0) {
                fprintf(stderr, "pmugate: process %d ended before its events were open\n", (int) pid);
                return -ESRCH;
        }
        return 0;
}

int timing_recorder_open(TimingRecorder *r, pmugate *c, TimingMode mode, uint64_t period, pid_t pid,
                         const pid_t *tids, size_t n_tids, bool on_exec, const uint32_t *cpus, size_t n_cpus,
                         uint64_t *ret_period) {
        size_t n_requests = (n_cpus + TIMING_CPUS_PER_OPEN - 1) / TIMING_CPUS_PER_OPEN;
        _cleanup_free_ int *cpu_ring_fd = NULL;
        int q = 0;

        /* the first ring of each CPU, by CPU number */
        cpu_ring_fd = calloc(CPU_SETSIZE, sizeof(*cpu_ring_fd));
        if (!cpu_ring_fd)
                return -ENOMEM;
        for (size_t i = 0; i < CPU_SETSIZE; i++)
                cpu_ring_fd[i] = -EBADF;
        if (tids)
                return open_threads(r, c, mode, period, pid, tids, n_tids, cpu_ring_fd, ret_period);

        r->handles = calloc(n_requests, sizeof(*r->handles));
        r->rings = calloc(n_cpus, sizeof(*r->rings));
        if (!r->handles || !r->rings)
                return -ENOMEM;
        r->n_handles_allocated = n_requests;
        r->n_rings_allocated = n_cpus;
        for (size_t k = 0; k < n_requests && q >= 0; k++)
                q = open_one(r, c, mode, period, pid, NULL, 0, on_exec, cpus + k * TIMING_CPUS_PER_OPEN,
                             MIN((size_t) TIMING_CPUS_PER_OPEN, n_cpus - k * TIMING_CPUS_PER_OPEN), cpu_ring_fd,
                             ret_period);
        return q < 0 ? q : 0;
}

int timing_mappings_from_proc(TimingAnalysis *analysis, pid_t pid) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ TimingMapping *m = calloc(1, sizeof(TimingMapping));
        char path[64];
        size_t size = 0;
        ssize_t n;

        if (!m)
                return -ENOMEM;
        (void) snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        while ((n = getline(&line, &size, f)) > 0) {
                unsigned long long start, end, pgoff, ino;
                unsigned maj, min;
                char perms[8];
                int at = 0, q;

                if ((size_t) n > PROC_MAPS_LINE_MAX)
                        continue;
                if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min,
                           &ino, &at) < 7 ||
                    at <= 0 || end <= start || strlen(perms) < 3 || perms[2] != 'x')
                        continue;
                line[strcspn(line, "\n")] = '\0';
                *m = (TimingMapping) {
                        .pid = (uint32_t) pid, .tid = (uint32_t) pid, .start = start, .len = end - start,
                        .pgoff = pgoff, .maj = maj, .min = min, .ino = ino,
                };
                (void) snprintf(m->path, sizeof(m->path), "%s", line + at);
                q = timing_analysis_add_mapping(analysis, m);
                if (q < 0)
                        return q;
        }
        return 0;
}

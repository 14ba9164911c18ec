/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: counting through the kernel's perf events, opened by the daemon
 *
 * Where the daemon programs the PMU through the kernel (hello "counters" via "perf"), or for
 * a job's cgroup or a process rather than CPUs, a client asks the daemon to open perf events
 * in groups (perf_open), reads every group of every target in one round trip (perf_read) and
 * closes them (perf_close). The daemon applies the same policy as to register writes:
 * docs/PROTOCOL.md lists what an event may ask for. Software events (task-clock, page-faults,
 * ...) need no PMU and no write right.
 *
 * Counts run from the open: a measurement subtracts its first read. A group the kernel could
 * not keep on the PMU the whole time reports time_running below time_enabled; one it never
 * scheduled has time_running 0 and its values mean nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The connection (pmugate.h, which includes this header). */
typedef struct pmugate pmugate;

typedef enum pmugate_perf_scope {
        PMUGATE_PERF_SCOPE_CPU,         /* every task on the CPUs (job mode: the job's CPUs) */
        PMUGATE_PERF_SCOPE_JOB,         /* job mode: the tasks of the caller's job's cgroup */
        PMUGATE_PERF_SCOPE_PROCESS,     /* one of the caller's processes (and its children) */
        _PMUGATE_PERF_SCOPE_MAX,
} pmugate_perf_scope;

/* "cpu", "job", "process"; NULL outside the enum. */
const char *pmugate_perf_scope_to_string(pmugate_perf_scope s);
/* The scope named s, or -EINVAL. */
int pmugate_perf_scope_from_string(const char *s);

/* Fits PERF_PMU_NAME_MAX and PERF_EVENT_NAME_MAX (proto/pmugate-limits.h) with their NULs. */
#define PMUGATE_PERF_PMU_NAME_MAX 40U
#define PMUGATE_PERF_EVENT_NAME_MAX 64U

typedef struct pmugate_perf_event {
        char pmu[PMUGATE_PERF_PMU_NAME_MAX];    /* "cpu" (the core PMU's raw encoding),
                                                 * "hardware", "software", or an uncore PMU */
        uint64_t config, config1, config2;
        bool has_config1, has_config2;
        bool kernel;                            /* count in the kernel too (policy decides) */
        char name[PMUGATE_PERF_EVENT_NAME_MAX]; /* "" or a name for the daemon's audit */
} pmugate_perf_event;

/* Events that count together; the first leads the group. */
typedef struct pmugate_perf_group {
        const pmugate_perf_event *events;
        size_t n_events;
} pmugate_perf_group;

typedef struct pmugate_perf_request {
        pmugate_perf_scope scope;
        const uint32_t *cpus;   /* cpu: required; job: a subset of the job's CPUs, or none for all */
        size_t n_cpus;
        pid_t pid;              /* process: the process, 0 for the caller */
        bool follow;            /* process: children and new threads count too */
        bool on_exec;           /* process: count from the process's next execve */
        bool handoff;           /* process, the caller's own: the fds come back to the caller */
        const pmugate_perf_group *groups;
        size_t n_groups;
        bool thread;            /* process: pid is one thread of the caller's own process (0: its
                                 * main thread), counted alone; no follow, no on_exec */
        const char *job;        /* job, monitors and admins only: the job ID to count (its
                                 * cgroup on its CPUs of this node); NULL: the caller's own job */
} pmugate_perf_request;

typedef struct pmugate_perf_handle pmugate_perf_handle;

/* Opens the events. reason gets the daemon's reason for a refusal (or the library's for a
 * request it cannot send), as pmugate_last_error() has it. On success *ret holds the daemon's
 * handle, the targets and, with handoff, the fds (close-on-exec). */
int pmugate_perf_open(pmugate *c, const pmugate_perf_request *req, pmugate_perf_handle **ret, char *reason,
                      size_t size);

/* The targets the events count on: CPUs (cpu, job scope) or the pid (process scope). */
size_t pmugate_perf_targets(const pmugate_perf_handle *h, const int64_t **ret_targets);

/* Handoff: the number of fds, and fd i, in order target-major, group, event (-EBADF past
 * them). The handle owns them; pmugate_perf_close() closes them. */
size_t pmugate_perf_n_fds(const pmugate_perf_handle *h);
int pmugate_perf_fd(const pmugate_perf_handle *h, size_t i);

typedef struct pmugate_perf_row {
        int64_t target;
        uint32_t group;
        int status;                     /* 0, or the -errno the daemon's read of the group got */
        uint64_t time_enabled;          /* nanoseconds the events were enabled since the open */
        uint64_t time_running;          /* ... and on the PMU: time_enabled / time_running is
                                         * the multiplexing scale; 0: never counted */
        const uint64_t *values;         /* one per event of the group */
        size_t n_values;
} pmugate_perf_row;

/* Reads every group on every target in one round trip. The rows (one per target and group,
 * target-major) stay valid until the next read or close of h. */
int pmugate_perf_read(pmugate *c, pmugate_perf_handle *h, const pmugate_perf_row **ret_rows, size_t *ret_n);

/* Closes the events at the daemon (when c is not NULL) and the handed-off fds, and frees h.
 * Accepts NULL. */
int pmugate_perf_close(pmugate *c, pmugate_perf_handle *h);

#ifdef __cplusplus
}
#endif

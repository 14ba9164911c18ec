/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A PerfHandle: the events one perf_open opened, on each of its targets (CPUs, a job's cgroup
 * on its CPUs, or a process), group by group. Opened all or nothing, read into rows, closed
 * together; docs/PERF.md describes what each scope counts.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/perf-driver.h"
#include "cpuset.h"
#include "perf-spec.h"
#include "pmugate-limits.h"

/* Where one set of the handle's events counts: a CPU (cpu >= 0, pid -1), a cgroup on a CPU
 * (cgroup_fd >= 0), or a thread anywhere (cpu -1). target is the row's target on the wire. */
typedef struct PerfUnit {
        int64_t target;
        pid_t pid;
        int cpu;
        int cgroup_fd;          /* not owned */
} PerfUnit;

typedef struct PerfHandle {
        uint32_t id;
        PerfScope scope;
        uid_t uid;
        int pidfd;              /* process scope: pins the process; -1 otherwise; owned */
        int cgroup_fd;          /* job scope: the job's cgroup directory; -1 otherwise; owned */
        PerfDriver *driver;     /* not owned */
        struct perf_event_attr attrs[PERF_EVENTS_PER_OPEN_MAX];
        uint8_t group_sizes[PERF_GROUPS_PER_OPEN_MAX];
        int group_cpu[PERF_GROUPS_PER_OPEN_MAX];        /* an uncore group opens on its PMU's CPU
                                                         * alone; -1 (the default): on every unit */
        size_t n_groups, n_events;
        PerfUnit *units;
        size_t n_units;
        int *events;            /* driver handles, unit-major then event; -1 when not open */
        int64_t *targets;       /* the distinct targets in order */
        size_t n_targets;
        size_t *target_units;   /* target t's units are target_units[t] to target_units[t + 1] - 1
                                 * (the units of a target are consecutive): a read finds them
                                 * without a scan of every unit per row */
        bool handed_off;        /* fds went to the client: at close they are disabled first */
        bool timing;            /* a timing_open's sampling events (one per CPU, units' targets
                                 * are the CPUs): read through their rings, never perf_read;
                                 * lives only while the class lbr does */
        bool leased;            /* cpu scope with hardware events: lives only with its leases */
        CpuSet needs_leases;    /* the CPUs whose leases it lives with: its CPUs for hardware
                                 * events, and every CPU of an uncore PMU's package */
        CpuSet acquired;        /* the leases its perf_open took (not those the session held):
                                 * given back when it closes, unless another handle needs them */
        bool needs_write;       /* hardware or uncore events: the role must still may_write */
        char job[PMUGATE_STRING_MAX + 1];       /* job mode: the job whose grant allowed it */
        size_t open_event, open_unit;   /* an open in turns: the next event to open, on which unit */
} PerfHandle;

/* Why an open failed: the event, its target and the errno, with what to do. */
typedef struct PerfOpenFailure {
        int error;              /* negative errno */
        size_t event;
        int64_t target;
} PerfOpenFailure;

/* A handle over the given attrs (the leaders with disabled set) and units; opens nothing yet. */
int perf_handle_new(PerfDriver *driver, PerfScope scope, uid_t uid, const struct perf_event_attr *attrs,
                    const uint8_t *group_sizes, size_t n_groups, const PerfUnit *units, size_t n_units,
                    PerfHandle **ret);
/* Opens every event on every unit, leaders first, then enables each group. On a failure
 * closes what opened, fills *ret_failure and returns its negative errno. */
int perf_handle_open(PerfHandle *h, PerfOpenFailure *ret_failure);
/* The same in turns: opens at most max_fds more events where the last call stopped, then
 * (once all are open) enables the groups. Returns 1 when all is open and enabled, 0 when more
 * is left for the next call, or, on a failure, closes what opened, fills *ret_failure and
 * returns its negative errno. */
int perf_handle_open_some(PerfHandle *h, size_t max_fds, PerfOpenFailure *ret_failure);
/* The open events of the handle (kernel fds it holds). */
size_t perf_handle_n_open(const PerfHandle *h);
/* Reads every group of every unit and packs the rows (wire.h PerfRowField), one per target
 * and group, target-major; a target's units (a process's threads) are summed, and a group
 * that opens on one CPU alone (group_cpu) reads -ENODEV with no value on the others. */
int perf_handle_pack_rows(PerfHandle *h, void *packer /* msgpack_packer */);
/* The rows a read gives, and rows first to first + n - 1 of them packed as one array (a part
 * of a reply in parts). */
size_t perf_handle_n_rows(const PerfHandle *h);
int perf_handle_pack_row_range(PerfHandle *h, void *packer /* msgpack_packer */, size_t first, size_t n);
/* Disables (handed off) and closes every event; frees h. NULL-safe; returns NULL. */
PerfHandle *perf_handle_free(PerfHandle *h);
/* The text of one failure for a refusal: "the kernel refused ...", "the kernel does not know ...". */
void perf_open_failure_format(const PerfHandle *h, const PerfOpenFailure *f, const char *const *pmu_names,
                              char *buf, size_t size);

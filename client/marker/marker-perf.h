/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Markers' perf read mode: each thread's own perf events, opened by the daemon and handed
 * to the program, read in user space at every start and stop
 */
#pragma once

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/perf-self.h"
#include "marker/marker-internal.h"
#include "pmugate/perf.h"

/* The events the runner passes the program (MARKER_ENV_PERF): groups separated by ';',
 * events by ',', each PMU:CONFIG[:CONFIG1[:CONFIG2]][/k] with the numbers in hex, /k for an
 * event that counts the kernel too; the first event of a group leads it.
 * "software:0x1,software:0x2" is task-clock and page-faults in one group. */
typedef struct MarkerPerfEvents {
        pmugate_perf_event events[MARKER_REGS_MAX];
        size_t n_events;
        size_t group_sizes[MARKER_REGS_MAX];
        size_t n_groups;
} MarkerPerfEvents;

/* The read_format the daemon opens every event with (docs/PROTOCOL.md, perf_open: counting,
 * both times, the id, groups). */
#define MARKER_PERF_READ_FORMAT                                                                  \
        (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID |     \
         PERF_FORMAT_GROUP)

/* perf's name of a software event (task-clock, cpu-clock, page-faults, faults,
 * context-switches, cs, cpu-migrations, migrations, minor-faults, major-faults) and its
 * config, or -ENOENT. */
int marker_perf_software_event(const char *name, uint64_t *ret_config);

/* Adds one event to e; a new group when new_group (or e has none). -E2BIG past
 * MARKER_REGS_MAX or PERF_GROUP_EVENTS_MAX events in a group, -EINVAL for a PMU name that
 * is not 1 to 39 letters, digits or '_'. */
int marker_perf_events_add(MarkerPerfEvents *e, const char *pmu, uint64_t config, bool new_group);

/* The text form, for the environment, and back (-EINVAL when the text is not one). */
int marker_perf_events_format(const MarkerPerfEvents *e, char *text, size_t size);
int marker_perf_events_parse(const char *text, MarkerPerfEvents *ret);

/* One thread's events: opened on the calling thread (scope process, pid its tid, no
 * following, handed off), their control pages mapped. c is the connection to open them on;
 * the daemon keeps them open as long as it is connected. reason gets why they were refused. */
typedef struct MarkerPerfThread MarkerPerfThread;

int marker_perf_thread_open(pmugate *c, const MarkerPerfEvents *e, MarkerPerfThread **ret, char *reason,
                            size_t reason_size);

/* Reads every event (count, times) into counts[n_events]: through the control pages, with
 * read(2) where the kernel does not let user space read the counter. No daemon round trip. */
int marker_perf_thread_read(MarkerPerfThread *t, PerfSelfCount *counts);

/* Closes the events at the daemon (on c, when not NULL) and here. Accepts NULL. */
MarkerPerfThread *marker_perf_thread_close(pmugate *c, MarkerPerfThread *t);

/* A region's difference of one event: its count scaled by enabled/running, as perf scales a
 * multiplexed count. false when it never ran in between (unknown, not zero). */
bool marker_perf_delta(const PerfSelfCount *start, const PerfSelfCount *stop, uint64_t *ret_delta);

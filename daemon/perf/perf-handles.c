/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PerfHandle (perf-handles.h): open all or nothing, read all, close all.
 */
#include <errno.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "perf/perf-handles.h"
#include "wire.h"

int perf_handle_new(PerfDriver *driver, PerfScope scope, uid_t uid, const struct perf_event_attr *attrs,
                    const uint8_t *group_sizes, size_t n_groups, const PerfUnit *units, size_t n_units,
                    PerfHandle **ret) {
        PerfHandle *h;
        size_t n_events = 0;

        if (n_groups == 0 || n_groups > PERF_GROUPS_PER_OPEN_MAX || n_units == 0)
                return -EINVAL;
        for (size_t g = 0; g < n_groups; g++)
                n_events += group_sizes[g];
        if (n_events == 0 || n_events > PERF_EVENTS_PER_OPEN_MAX)
                return -EINVAL;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        *h = (PerfHandle) { .scope = scope, .uid = uid, .pidfd = -1, .cgroup_fd = -1, .driver = driver,
                            .n_groups = n_groups, .n_events = n_events, .n_units = n_units };
        memcpy(h->attrs, attrs, n_events * sizeof(*attrs));
        memcpy(h->group_sizes, group_sizes, n_groups);
        for (size_t g = 0; g < ELEMENTSOF(h->group_cpu); g++)
                h->group_cpu[g] = -1;
        h->units = calloc(n_units, sizeof(*h->units));
        h->events = calloc(n_units * n_events, sizeof(*h->events));
        h->targets = calloc(n_units, sizeof(*h->targets));
        h->target_units = calloc(n_units + 1, sizeof(*h->target_units));
        if (!h->units || !h->events || !h->targets || !h->target_units) {
                perf_handle_free(h);
                return -ENOMEM;
        }
        memcpy(h->units, units, n_units * sizeof(*units));
        for (size_t i = 0; i < n_units * n_events; i++)
                h->events[i] = -1;
        for (size_t u = 0; u < n_units; u++)
                if (h->n_targets == 0 || h->targets[h->n_targets - 1] != units[u].target) {
                        h->target_units[h->n_targets] = u;
                        h->targets[h->n_targets++] = units[u].target;
                }
        h->target_units[h->n_targets] = n_units;
        *ret = h;
        return 0;
}

static void close_events(PerfHandle *h) {
        for (size_t i = 0; i < h->n_units * h->n_events; i++) {
                if (h->events[i] < 0)
                        continue;
                /* A client holding a copy of this fd keeps the event: stop it counting. */
                if (h->handed_off)
                        (void) perf_driver_disable(h->driver, h->events[i], false);
                perf_driver_close(h->driver, h->events[i]);
                h->events[i] = -1;
        }
        /* nothing is open: an open starts again from the first event */
        h->open_event = h->open_unit = 0;
}

static bool group_on_unit(const PerfHandle *h, size_t g, const PerfUnit *unit) {
        return h->group_cpu[g] < 0 || h->group_cpu[g] == unit->cpu;
}

/* Opens event e, of the group whose leader is event leader (e itself for the leader), on
 * every unit the group opens on: as many units per driver request as one batch holds
 * (PERF_OPENER_BATCH_MAX events, PERF_OPENER_BATCH_FDS_MAX group and cgroup fds), so that a
 * whole-node open is not a round trip to the opener per fd. Units first to end - 1 only (an
 * open in turns). What opened is in h->events. */
static int open_on_units(PerfHandle *h, size_t g, size_t leader, size_t e, size_t first, size_t end,
                         PerfOpenFailure *ret_failure) {
        PerfDriverEvent batch[PERF_OPENER_BATCH_MAX];
        size_t units[PERF_OPENER_BATCH_MAX], n = 0, n_fds = 0;
        int handles[PERF_OPENER_BATCH_MAX];

        for (size_t u = first; u <= end; u++) {
                const PerfUnit *unit = u < end ? &h->units[u] : NULL;
                int group = unit && e != leader ? h->events[u * h->n_events + leader] : -1;
                size_t fds = unit ? (group >= 0) + (unit->cgroup_fd >= 0) : 0;
                int r, failed = 0;

                if (unit && !group_on_unit(h, g, unit))
                        continue;
                if (unit && n < PERF_OPENER_BATCH_MAX && n_fds + fds <= PERF_OPENER_BATCH_FDS_MAX) {
                        batch[n] = (PerfDriverEvent) { .attr = &h->attrs[e], .pid = unit->pid,
                                                       .cgroup_fd = unit->cgroup_fd, .cpu = unit->cpu,
                                                       .group = group,
                                                       .flags = unit->cgroup_fd >= 0 ? PERF_FLAG_PID_CGROUP : 0 };
                        units[n++] = u;
                        n_fds += fds;
                        continue;
                }
                if (n == 0)
                        continue;
                r = perf_driver_open_batch(h->driver, batch, n, handles);
                if (r < 0) {
                        *ret_failure = (PerfOpenFailure) { .error = r, .event = e, .target = h->units[units[0]].target };
                        return r;
                }
                for (size_t j = 0; j < n; j++) {
                        if (handles[j] >= 0)
                                h->events[units[j] * h->n_events + e] = handles[j];
                        else if (failed == 0) {
                                failed = handles[j];
                                *ret_failure = (PerfOpenFailure) { .error = failed, .event = e,
                                                                   .target = h->units[units[j]].target };
                        }
                }
                if (failed < 0)
                        return failed;
                n = n_fds = 0;
                /* The unit that did not fit starts the next batch. */
                if (unit)
                        u--;
        }
        return 0;
}

int perf_handle_open(PerfHandle *h, PerfOpenFailure *ret_failure) {
        return perf_handle_open_some(h, SIZE_MAX, ret_failure) < 0 ? ret_failure->error : 0;
}

int perf_handle_open_some(PerfHandle *h, size_t max_fds, PerfOpenFailure *ret_failure) {
        size_t budget = max_fds;

        if (budget == 0)
                return -EINVAL;
        /* Event by event, each on every unit (as many as the budget allows per call): a
         * group's leader is open on every unit before its members are asked for, with its fd. */
        while (h->open_event < h->n_events && budget > 0) {
                size_t e = h->open_event, g = 0, leader = 0, end;
                int r;

                while (leader + h->group_sizes[g] <= e)
                        leader += h->group_sizes[g++];
                end = h->open_unit + MIN(budget, h->n_units - h->open_unit);
                r = open_on_units(h, g, leader, e, h->open_unit, end, ret_failure);
                if (r < 0) {
                        close_events(h);
                        return r;
                }
                budget -= end - h->open_unit;
                h->open_unit = end;
                if (h->open_unit == h->n_units) {
                        h->open_event++;
                        h->open_unit = 0;
                }
        }
        if (h->open_event < h->n_events)
                return 0;
        /* Every group is open before any counts: a partial open never counted anything. A
         * leader waiting for exec stays disabled until the kernel enables it. */
        for (size_t u = 0; u < h->n_units; u++) {
                size_t e = 0;

                for (size_t g = 0; g < h->n_groups; e += h->group_sizes[g], g++) {
                        int r;

                        if (h->attrs[e].enable_on_exec || !group_on_unit(h, g, &h->units[u]))
                                continue;
                        r = perf_driver_enable(h->driver, h->events[u * h->n_events + e], true);
                        if (r < 0) {
                                *ret_failure = (PerfOpenFailure) { .error = r, .event = e,
                                                                   .target = h->units[u].target };
                                close_events(h);
                                return r;
                        }
                }
        }
        return 1;
}

size_t perf_handle_n_open(const PerfHandle *h) {
        size_t n = 0;

        for (size_t i = 0; i < h->n_units * h->n_events; i++)
                n += h->events[i] >= 0;
        return n;
}

/* A group read with PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID:
 * nr, time_enabled, time_running, then nr pairs of value and id. */
static int read_group(PerfHandle *h, int leader, size_t n, uint64_t *enabled, uint64_t *running, uint64_t *values) {
        uint64_t buf[3 + 2 * PERF_GROUP_EVENTS_MAX];
        size_t want = (3 + 2 * n) * sizeof(uint64_t);
        ssize_t got = perf_driver_read(h->driver, leader, buf, want);

        if (got < 0)
                return (int) got;
        if ((size_t) got != want || buf[0] != n)
                return -EIO;
        *enabled += buf[1];
        *running += buf[2];
        for (size_t i = 0; i < n; i++)
                values[i] += buf[3 + 2 * i];
        return 0;
}

/* Whether group g opens on some unit of target t. */
static bool target_has_group(const PerfHandle *h, size_t t, size_t g) {
        for (size_t u = h->target_units[t]; u < h->target_units[t + 1]; u++)
                if (group_on_unit(h, g, &h->units[u]))
                        return true;
        return false;
}

size_t perf_handle_n_rows(const PerfHandle *h) {
        return h->n_targets * h->n_groups;
}

int perf_handle_pack_rows(PerfHandle *h, void *packer) {
        return perf_handle_pack_row_range(h, packer, 0, perf_handle_n_rows(h));
}

int perf_handle_pack_row_range(PerfHandle *h, void *packer, size_t first, size_t n) {
        msgpack_packer *pk = packer;

        if (first > SIZE_MAX - n || first + n > perf_handle_n_rows(h))
                return -EINVAL;
        if (msgpack_pack_array(pk, n) < 0)
                return -ENOMEM;
        /* row t * n_groups + g is group g of target t */
        for (size_t row = first; row < first + n; row++) {
                size_t t = row / h->n_groups, g = row % h->n_groups, e = 0;
                uint64_t enabled = 0, running = 0, values[PERF_GROUP_EVENTS_MAX] = {};
                int status = 0;
                /* Every target has a row for every group, so that a reader finds each at its
                 * place: a group that counts elsewhere (an uncore PMU's, on its CPU) reads
                 * -ENODEV here, with no value. */
                bool here = target_has_group(h, t, g);

                for (size_t i = 0; i < g; i++)
                        e += h->group_sizes[i];
                if (!here)
                        status = -ENODEV;
                for (size_t u = h->target_units[t]; here && u < h->target_units[t + 1]; u++) {
                        int r;

                        if (!group_on_unit(h, g, &h->units[u]))
                                continue;
                        r = read_group(h, h->events[u * h->n_events + e], h->group_sizes[g], &enabled, &running,
                                       values);
                        /* A thread that exited since the open reads 0 events: its counts went to
                         * the parent's inherited event. */
                        if (r < 0 && status == 0)
                                status = r;
                }
                if (msgpack_pack_array(pk, _PERF_ROW_FIELDS) < 0 ||
                    msgpack_pack_int64(pk, h->targets[t]) < 0 || msgpack_pack_uint64(pk, g) < 0 ||
                    msgpack_pack_int32(pk, status) < 0 || msgpack_pack_uint64(pk, enabled) < 0 ||
                    msgpack_pack_uint64(pk, running) < 0 || msgpack_pack_array(pk, here ? h->group_sizes[g] : 0) < 0)
                        return -ENOMEM;
                for (size_t i = 0; here && i < h->group_sizes[g]; i++)
                        if (msgpack_pack_uint64(pk, values[i]) < 0)
                                return -ENOMEM;
        }
        return 0;
}

PerfHandle *perf_handle_free(PerfHandle *h) {
        if (!h)
                return NULL;
        if (h->events)
                close_events(h);
        if (h->pidfd >= 0)
                (void) close(h->pidfd);
        if (h->cgroup_fd >= 0)
                (void) close(h->cgroup_fd);
        free(h->units);
        free(h->events);
        free(h->targets);
        free(h->target_units);
        free(h);
        return NULL;
}

void perf_open_failure_format(const PerfHandle *h, const PerfOpenFailure *f, const char *const *pmu_names,
                              char *buf, size_t size) {
        const char *pmu = pmu_names ? pmu_names[f->event] : "?";
        unsigned long long config = (unsigned long long) h->attrs[f->event].config;
        const char *what = h->scope == PERF_SCOPE_PROCESS ? "process" : "CPU";
        int e = -f->error;

        if (e == EACCES || e == EPERM)
                (void) snprintf(buf, size,
                                "the kernel refused event %zu (PMU '%s', config 0x%llx) on %s %lld: %s; "
                                "check perf_event_paranoid and the daemon's CAP_PERFMON",
                                f->event, pmu, config, what, (long long) f->target, strerror(e));
        else if (e == ENOENT || e == EINVAL || e == EOPNOTSUPP)
                (void) snprintf(buf, size, "the kernel does not know event %zu config 0x%llx on PMU '%s' (%s %lld): %s",
                                f->event, config, pmu, what, (long long) f->target, strerror(e));
        else if (e == EMFILE || e == ENFILE)
                (void) snprintf(buf, size, "the daemon's open file limit is reached at event %zu on %s %lld; "
                                "close handles or open fewer events", f->event, what, (long long) f->target);
        else if (e == ESRCH)
                (void) snprintf(buf, size, "process %lld exited before its events were open", (long long) f->target);
        else
                (void) snprintf(buf, size, "opening event %zu (PMU '%s', config 0x%llx) on %s %lld failed: %s",
                                f->event, pmu, config, what, (long long) f->target, strerror(e));
}

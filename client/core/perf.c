/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: perf events the daemon opens (perf_open, perf_read, perf_close), with the fds
 * a handoff passes
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/connection.h"
#include "core/perf-wire.h"
#include "core/reason.h"
#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"
#include "wire.h"

_Static_assert(PMUGATE_PERF_PMU_NAME_MAX == PERF_PMU_NAME_MAX, "pmugate_perf_event.pmu");
_Static_assert(PMUGATE_PERF_EVENT_NAME_MAX == PERF_EVENT_NAME_MAX + 1, "pmugate_perf_event.name");

struct pmugate_perf_handle {
        uint64_t handle;
        int64_t *targets;
        size_t n_targets;
        int *fds;
        size_t n_fds;
        size_t *group_sizes;
        size_t n_groups;
        pmugate_perf_row *rows;
        size_t n_rows;
        uint64_t *values;
};

static const char *const scope_names[_PMUGATE_PERF_SCOPE_MAX] = {
        [PMUGATE_PERF_SCOPE_CPU] = WIRE_PERF_SCOPE_CPU,
        [PMUGATE_PERF_SCOPE_JOB] = WIRE_PERF_SCOPE_JOB,
        [PMUGATE_PERF_SCOPE_PROCESS] = WIRE_PERF_SCOPE_PROCESS,
};

const char *pmugate_perf_scope_to_string(pmugate_perf_scope s) {
        return (unsigned) s < _PMUGATE_PERF_SCOPE_MAX ? scope_names[s] : NULL;
}

int pmugate_perf_scope_from_string(const char *s) {
        for (unsigned i = 0; s && i < _PMUGATE_PERF_SCOPE_MAX; i++)
                if (strcmp(s, scope_names[i]) == 0)
                        return (int) i;
        return -EINVAL;
}

int perf_request_check(const pmugate_perf_request *req, char *reason, size_t size) {
        if (!req || (unsigned) req->scope >= _PMUGATE_PERF_SCOPE_MAX)
                return reason_fail(reason, size, -EINVAL, "no scope");
        if (req->scope == PMUGATE_PERF_SCOPE_CPU && req->n_cpus == 0)
                return reason_fail(reason, size, -EINVAL, "scope cpu needs CPUs");
        if (req->scope == PMUGATE_PERF_SCOPE_PROCESS && req->n_cpus > 0)
                return reason_fail(reason, size, -EINVAL, "scope process counts wherever the process runs: no CPUs");
        if (req->scope != PMUGATE_PERF_SCOPE_PROCESS && (req->pid != 0 || req->on_exec || req->handoff || req->thread))
                return reason_fail(reason, size, -EINVAL, "pid, on_exec, handoff and thread belong to scope process");
        if (req->job && (req->scope != PMUGATE_PERF_SCOPE_JOB || req->job[0] == '\0'))
                return reason_fail(reason, size, -EINVAL, "a job ID belongs to scope job and is not empty");
        if (req->thread && (req->follow || req->on_exec))
                return reason_fail(reason, size, -EINVAL, "a thread is counted alone: no follow, no on_exec");
        if (req->pid < 0)
                return reason_fail(reason, size, -EINVAL, "pid %d is not a process", (int) req->pid);
        if (req->n_cpus > 0 && !req->cpus)
                return reason_fail(reason, size, -EINVAL, "invalid arguments");
        if (req->n_cpus > PMUGATE_LIST_MAX)
                return reason_fail(reason, size, -E2BIG, "more than %u CPUs in one request", PMUGATE_LIST_MAX);
        if (req->n_groups == 0 || !req->groups)
                return reason_fail(reason, size, -EINVAL, "no events to open");
        if (req->n_groups > PERF_GROUPS_PER_OPEN_MAX)
                return reason_fail(reason, size, -E2BIG, "more than %u groups in one perf_open", PERF_GROUPS_PER_OPEN_MAX);
        for (size_t g = 0, total = 0; g < req->n_groups; g++) {
                const pmugate_perf_group *grp = &req->groups[g];

                if (grp->n_events == 0 || !grp->events)
                        return reason_fail(reason, size, -EINVAL, "group %zu is empty", g);
                if (grp->n_events > PERF_GROUP_EVENTS_MAX)
                        return reason_fail(reason, size, -E2BIG, "group %zu has more than %u events", g,
                                           PERF_GROUP_EVENTS_MAX);
                total += grp->n_events;
                if (total > PERF_EVENTS_PER_OPEN_MAX)
                        return reason_fail(reason, size, -E2BIG, "more than %u events in one perf_open",
                                           PERF_EVENTS_PER_OPEN_MAX);
                for (size_t e = 0; e < grp->n_events; e++) {
                        const pmugate_perf_event *ev = &grp->events[e];

                        if (!memchr(ev->pmu, '\0', sizeof(ev->pmu)) || ev->pmu[0] == '\0' ||
                            !memchr(ev->name, '\0', sizeof(ev->name)))
                                return reason_fail(reason, size, -EINVAL, "group %zu event %zu: no PMU name", g, e);
                }
        }
        return 0;
}

size_t perf_request_keys(const pmugate_perf_request *req) {
        size_t n = 2;   /* scope, groups */

        if (req->n_cpus > 0)
                n++;
        if (req->scope == PMUGATE_PERF_SCOPE_PROCESS)
                n += 4; /* pid, follow, on_exec, handoff */
        if (req->thread)
                n++;
        if (req->job)
                n++;
        return n;
}

static int pack_event(msgpack_packer *pk, const pmugate_perf_event *ev) {
        size_t keys = 3 + (ev->has_config1 ? 1 : 0) + (ev->has_config2 ? 1 : 0) + (ev->name[0] ? 1 : 0);

        if (msgpack_pack_map(pk, keys) < 0 || pack_key_string(pk, "pmu", ev->pmu) < 0 ||
            pack_key_uint(pk, "config", ev->config) < 0 ||
            (ev->has_config1 && pack_key_uint(pk, "config1", ev->config1) < 0) ||
            (ev->has_config2 && pack_key_uint(pk, "config2", ev->config2) < 0) ||
            pack_key_bool(pk, "kernel", ev->kernel) < 0 ||
            (ev->name[0] && pack_key_string(pk, "name", ev->name) < 0))
                return -ENOMEM;
        return 0;
}

int perf_request_pack(msgpack_packer *pk, const pmugate_perf_request *req) {
        if (pack_key_string(pk, "scope", scope_names[req->scope]) < 0)
                return -ENOMEM;
        if (req->n_cpus > 0 && connection_pack_cpus(pk, req->cpus, req->n_cpus) < 0)
                return -ENOMEM;
        if (req->scope == PMUGATE_PERF_SCOPE_PROCESS &&
            (pack_key_uint(pk, "pid", (uint64_t) req->pid) < 0 || pack_key_bool(pk, "follow", req->follow) < 0 ||
             pack_key_bool(pk, "on_exec", req->on_exec) < 0 || pack_key_bool(pk, "handoff", req->handoff) < 0))
                return -ENOMEM;
        /* only when asked: a daemon without it refuses the key by name rather than count more */
        if (req->thread && pack_key_bool(pk, "thread", true) < 0)
                return -ENOMEM;
        if (req->job && pack_key_string(pk, "job", req->job) < 0)
                return -ENOMEM;
        if (pack_string(pk, "groups") < 0 || msgpack_pack_array(pk, req->n_groups) < 0)
                return -ENOMEM;
        for (size_t g = 0; g < req->n_groups; g++) {
                if (msgpack_pack_array(pk, req->groups[g].n_events) < 0)
                        return -ENOMEM;
                for (size_t e = 0; e < req->groups[g].n_events; e++)
                        if (pack_event(pk, &req->groups[g].events[e]) < 0)
                                return -ENOMEM;
        }
        return 0;
}

size_t perf_layout_value_offset(const PerfRowLayout *layout, size_t row) {
        size_t per_target = 0, off;

        for (size_t g = 0; g < layout->n_groups; g++)
                per_target += layout->group_sizes[g];
        off = (row / layout->n_groups) * per_target;
        for (size_t g = 0; g < row % layout->n_groups; g++)
                off += layout->group_sizes[g];
        return off;
}

size_t perf_layout_values(const PerfRowLayout *layout) {
        return perf_layout_value_offset(layout, layout->n_targets * layout->n_groups);
}

int perf_rows_decode(const msgpack_object *reply, const PerfRowLayout *layout, pmugate_perf_row *rows,
                     uint64_t *values, size_t *at) {
        const msgpack_object *a = msgpack_map_get(reply, "rows");
        size_t n_rows = layout->n_targets * layout->n_groups;

        if (!a || a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size > n_rows - *at)
                return -EBADMSG;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                const msgpack_object *t = &a->via.array.ptr[i];
                size_t k = (*at)++, g = k % layout->n_groups;
                pmugate_perf_row *row = &rows[k];
                const msgpack_object *v;
                int64_t target, group, status;
                uint64_t *slots = values + perf_layout_value_offset(layout, k);

                if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < _PERF_ROW_FIELDS)
                        return -EBADMSG;
                v = &t->via.array.ptr[PERF_ROW_VALUES];
                if (!object_get_int(&t->via.array.ptr[PERF_ROW_TARGET], &target) ||
                    target != layout->targets[k / layout->n_groups] ||
                    !object_get_int(&t->via.array.ptr[PERF_ROW_GROUP], &group) || group != (int64_t) g ||
                    !object_get_int(&t->via.array.ptr[PERF_ROW_STATUS], &status) || status > 0 || status < -4095 ||
                    t->via.array.ptr[PERF_ROW_ENABLED].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
                    t->via.array.ptr[PERF_ROW_RUNNING].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
                    v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > layout->group_sizes[g] ||
                    (status == 0 && v->via.array.size != layout->group_sizes[g]))
                        return -EBADMSG;
                *row = (pmugate_perf_row) {
                        .target = target,
                        .group = (uint32_t) g,
                        .status = (int) status,
                        .time_enabled = t->via.array.ptr[PERF_ROW_ENABLED].via.u64,
                        .time_running = t->via.array.ptr[PERF_ROW_RUNNING].via.u64,
                        .values = slots,
                        .n_values = layout->group_sizes[g],
                };
                /* the kernel never runs an event longer than it is enabled; a driver that reads
                 * the two times at different instants can: the event ran all the time */
                if (row->time_running > row->time_enabled)
                        row->time_running = row->time_enabled;
                memset(slots, 0, layout->group_sizes[g] * sizeof(uint64_t));
                for (uint32_t j = 0; j < v->via.array.size; j++) {
                        if (v->via.array.ptr[j].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                                return -EBADMSG;
                        slots[j] = v->via.array.ptr[j].via.u64;
                }
        }
        return 0;
}

static void close_fds(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        (void) close(fds[i]);
}

static pmugate_perf_handle *handle_free(pmugate_perf_handle *h) {
        if (!h)
                return NULL;
        if (h->fds)
                close_fds(h->fds, h->n_fds);
        free(h->fds);
        free(h->targets);
        free(h->group_sizes);
        free(h->rows);
        free(h->values);
        free(h);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_perf_handle *, handle_free);

static int copy_last_reason(pmugate *c, int r, char *reason, size_t size) {
        if (c->last_error.reason[0])
                return reason_fail(reason, size, r, "%s", c->last_error.reason);
        return reason_fail(reason, size, r, "perf_open: %s", pmugate_strerror(r));
}

static int read_targets(pmugate_perf_handle *h, const msgpack_object *reply) {
        const msgpack_object *a = msgpack_map_get(reply, "targets");

        if (!a || a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size == 0 || a->via.array.size > PMUGATE_CPUS_MAX)
                return -EBADMSG;
        h->targets = calloc(a->via.array.size, sizeof(int64_t));
        if (!h->targets)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++)
                if (!object_get_int(&a->via.array.ptr[i], &h->targets[i]) || h->targets[i] < 0)
                        return -EBADMSG;
        h->n_targets = a->via.array.size;
        return 0;
}

static int layout_allocate(pmugate_perf_handle *h) {
        PerfRowLayout layout = { h->targets, h->n_targets, h->group_sizes, h->n_groups };

        h->n_rows = h->n_targets * h->n_groups;
        h->rows = calloc(h->n_rows, sizeof(pmugate_perf_row));
        h->values = calloc(perf_layout_values(&layout) ?: 1, sizeof(uint64_t));
        return h->rows && h->values ? 0 : -ENOMEM;
}

int pmugate_perf_open(pmugate *c, const pmugate_perf_request *req, pmugate_perf_handle **ret, char *reason,
                      size_t size) {
        _cleanup_(handle_freep) pmugate_perf_handle *h = NULL;
        const msgpack_object *reply;
        size_t expected_fds = 0;
        uint64_t fds = 0;
        msgpack_packer pk;
        int r;

        if (!c || !ret)
                return reason_fail(reason, size, -EINVAL, "invalid arguments");
        r = perf_request_check(req, reason, size);
        if (r < 0)
                return r;
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->n_groups = req->n_groups;
        h->group_sizes = calloc(req->n_groups, sizeof(size_t));
        if (!h->group_sizes)
                return -ENOMEM;
        for (size_t g = 0; g < req->n_groups; g++) {
                h->group_sizes[g] = req->groups[g].n_events;
                expected_fds += req->groups[g].n_events;
        }
        r = connection_begin(c, REQUEST_PERF_OPEN, perf_request_keys(req), &pk);
        if (r >= 0)
                r = perf_request_pack(&pk, req);
        if (r < 0)
                return reason_fail(reason, size, r, "perf_open: %s", pmugate_strerror(r));
        /* A process's fds are one per thread and event (thread-major), and only the daemon knows
         * its threads: take what one message can carry and check the count against the reply. */
        r = connection_want_fds(c, req->handoff ? PERF_HANDOFF_FDS_PER_MESSAGE : 0);
        if (r < 0)
                return r;
        r = connection_call(c, &reply);
        if (r < 0) {
                connection_drop_fds(c);
                return copy_last_reason(c, r, reason, size);
        }
        h->n_fds = connection_take_fds(c, &h->fds);
        if (!reply_get_uint(reply, "handle", &h->handle) || read_targets(h, reply) < 0 ||
            (msgpack_map_get(reply, "fds") && !reply_get_uint(reply, "fds", &fds)) || fds != h->n_fds ||
            (req->handoff && (fds == 0 || expected_fds == 0 || fds % expected_fds != 0))) {
                /* the events are open at the daemon: close them before giving up */
                uint64_t handle = h->handle;

                if (reply_get_uint(reply, "handle", &handle)) {
                        h->handle = handle;
                        (void) pmugate_perf_close(c, TAKE_PTR(h));
                }
                return reason_fail(reason, size, -EBADMSG, "perf_open: the daemon's reply does not match the request");
        }
        r = layout_allocate(h);
        if (r < 0) {
                (void) pmugate_perf_close(c, TAKE_PTR(h));
                return r;
        }
        *ret = TAKE_PTR(h);
        return 0;
}

size_t pmugate_perf_targets(const pmugate_perf_handle *h, const int64_t **ret_targets) {
        if (!h) {
                *ret_targets = NULL;
                return 0;
        }
        *ret_targets = h->targets;
        return h->n_targets;
}

size_t pmugate_perf_n_fds(const pmugate_perf_handle *h) {
        return h ? h->n_fds : 0;
}

int pmugate_perf_fd(const pmugate_perf_handle *h, size_t i) {
        return h && i < h->n_fds ? h->fds[i] : -EBADF;
}

static int handle_call(pmugate *c, RequestType type, uint64_t handle, const msgpack_object **ret_reply) {
        msgpack_packer pk;
        int r;

        r = connection_begin(c, type, 1, &pk);
        if (r < 0)
                return r;
        if (pack_key_uint(&pk, "handle", handle) < 0)
                return -ENOMEM;
        return connection_call(c, ret_reply);
}

int pmugate_perf_read(pmugate *c, pmugate_perf_handle *h, const pmugate_perf_row **ret_rows, size_t *ret_n) {
        PerfRowLayout layout;
        const msgpack_object *reply;
        uint64_t parts = 1;
        size_t at = 0;
        int r;

        if (!c || !h || !ret_rows || !ret_n)
                return -EINVAL;
        layout = (PerfRowLayout) { h->targets, h->n_targets, h->group_sizes, h->n_groups };
        r = handle_call(c, REQUEST_PERF_READ, h->handle, &reply);
        if (r < 0)
                return r;
        /* many rows come in parts, each its own message; the first says how many */
        if (msgpack_map_get(reply, "parts")) {
                uint64_t part = UINT64_MAX;

                if (!reply_get_uint(reply, "parts", &parts) || parts < 2 || parts > PMUGATE_REPLY_PARTS_MAX ||
                    !reply_get_uint(reply, "part", &part) || part != 0)
                        return -EBADMSG;
        }
        r = perf_rows_decode(reply, &layout, h->rows, h->values, &at);
        for (uint64_t part = 1; r >= 0 && part < parts; part++) {
                r = connection_receive_part(c, part, parts, &reply);
                if (r >= 0)
                        r = perf_rows_decode(reply, &layout, h->rows, h->values, &at);
        }
        if (r < 0)
                return r;
        if (at != h->n_rows)
                return -EBADMSG;
        *ret_rows = h->rows;
        *ret_n = h->n_rows;
        return 0;
}

int pmugate_perf_close(pmugate *c, pmugate_perf_handle *h) {
        const msgpack_object *reply;
        int r = 0;

        if (!h)
                return 0;
        if (c)
                r = handle_call(c, REQUEST_PERF_CLOSE, h->handle, &reply);
        handle_free(h);
        return r;
}

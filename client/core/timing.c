/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: timing_open, the sampling events of `pmugate timing` (include/pmugate/timing.h),
 * whose fds the daemon passes with the reply, one per CPU in the request's order (with "tids",
 * thread by thread)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/connection.h"
#include "core/reason.h"
#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"
#include "pmugate/timing.h"
#include "timing-attr.h"
#include "wire.h"

_Static_assert((int) PMUGATE_TIMING_BRANCHES == (int) TIMING_MODE_BRANCHES, "pmugate_timing_mode");
_Static_assert((int) PMUGATE_TIMING_IPS == (int) TIMING_MODE_IPS, "pmugate_timing_mode");
_Static_assert(TIMING_CPUS_PER_OPEN <= PERF_HANDOFF_FDS_PER_MESSAGE, "one message carries a timing_open's fds");
_Static_assert(TIMING_TIDS_PER_OPEN <= PERF_HANDOFF_FDS_PER_MESSAGE, "one message carries a timing_open's fds");

struct pmugate_timing_handle {
        uint64_t handle;
        uint64_t period;
        int *fds;
        uint32_t *cpus;         /* of fd i */
        pid_t *tids;            /* of fd i */
        size_t n_fds;
};

static pmugate_timing_handle *handle_free(pmugate_timing_handle *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; h->fds && i < h->n_fds; i++)
                if (h->fds[i] >= 0)
                        (void) close(h->fds[i]);
        free(h->fds);
        free(h->cpus);
        free(h->tids);
        free(h);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_timing_handle *, handle_free);

static int request_check(const pmugate_timing_request *req, char *reason, size_t size) {
        if (!req || (unsigned) req->mode >= _PMUGATE_TIMING_MODE_MAX)
                return reason_fail(reason, size, -EINVAL, "timing_open: no mode");
        if (req->pid < 0)
                return reason_fail(reason, size, -EINVAL, "pid %d is not a process", (int) req->pid);
        if (req->tid < 0)
                return reason_fail(reason, size, -EINVAL, "tid %d is not a thread", (int) req->tid);
        if (req->tid > 0 && req->on_exec)
                return reason_fail(reason, size, -EINVAL, "a thread (tid) is sampled from now, not from an exec");
        if (req->n_tids > 0 && (!req->tids || req->tid != 0 || req->on_exec))
                return reason_fail(reason, size, -EINVAL, "tids: not with tid nor on_exec");
        if (req->n_tids > TIMING_TIDS_PER_OPEN)
                return reason_fail(reason, size, -E2BIG, "more than %u threads in one timing_open",
                                   TIMING_TIDS_PER_OPEN);
        for (size_t i = 0; i < req->n_tids; i++)
                if (req->tids[i] <= 0)
                        return reason_fail(reason, size, -EINVAL, "tid %d is not a thread", (int) req->tids[i]);
        if (req->n_cpus == 0 || !req->cpus)
                return reason_fail(reason, size, -EINVAL, "timing_open needs CPUs");
        if (req->n_cpus > TIMING_CPUS_PER_OPEN)
                return reason_fail(reason, size, -E2BIG, "more than %u CPUs in one timing_open",
                                   TIMING_CPUS_PER_OPEN);
        if (req->n_tids > 0 && req->n_tids * req->n_cpus > PERF_HANDOFF_FDS_PER_MESSAGE)
                return reason_fail(reason, size, -E2BIG,
                                   "%zu threads on %zu CPUs: more than %u events (the fds one reply passes) in one "
                                   "timing_open", req->n_tids, req->n_cpus, PERF_HANDOFF_FDS_PER_MESSAGE);
        return 0;
}

/* The fds a reply to req passes: one per CPU, of each thread named. */
static size_t request_n_fds(const pmugate_timing_request *req) {
        return req->n_cpus * MAX(req->n_tids, (size_t) 1);
}

static int pack_tids(msgpack_packer *pk, const pid_t *tids, size_t n) {
        if (pack_string(pk, "tids") < 0 || msgpack_pack_array(pk, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (msgpack_pack_uint32(pk, (uint32_t) tids[i]) < 0)
                        return -ENOMEM;
        return 0;
}

static int request_pack(pmugate *c, const pmugate_timing_request *req) {
        /* the caller's own process by its pid: the daemon checks a pid, never guesses one */
        pid_t pid = req->pid == 0 ? getpid() : req->pid;
        msgpack_packer pk;
        int r;

        r = connection_begin(c, REQUEST_TIMING_OPEN,
                             4 + (req->period > 0 ? 1 : 0) + (req->tid > 0 ? 1 : 0) + (req->n_tids > 0 ? 1 : 0), &pk);
        if (r < 0)
                return r;
        if (pack_key_string(&pk, "mode", timing_mode_to_string((TimingMode) req->mode)) < 0 ||
            pack_key_uint(&pk, "pid", (uint64_t) pid) < 0 || pack_key_bool(&pk, "on_exec", req->on_exec) < 0 ||
            (req->period > 0 && pack_key_uint(&pk, "period", req->period) < 0) ||
            (req->tid > 0 && pack_key_uint(&pk, "tid", (uint64_t) req->tid) < 0) ||
            (req->n_tids > 0 && pack_tids(&pk, req->tids, req->n_tids) < 0) ||
            connection_pack_cpus(&pk, req->cpus, req->n_cpus) < 0)
                return -ENOMEM;
        return 0;
}

/* The reply's CPUs (and threads) must be the request's, in its order: fd t * n_cpus + i
 * samples thread tids[t] on cpus[i]. */
static int read_reply(pmugate_timing_handle *h, const pmugate_timing_request *req, const msgpack_object *reply) {
        const msgpack_object *a = msgpack_map_get(reply, "cpus"), *t = msgpack_map_get(reply, "tids");
        size_t n_threads = MAX(req->n_tids, (size_t) 1);
        pid_t own = req->tid > 0 ? req->tid : req->pid == 0 ? getpid() : req->pid;
        uint64_t fds;

        if (!reply_get_uint(reply, "period", &h->period) || h->period == 0 || !reply_get_uint(reply, "fds", &fds) ||
            fds != h->n_fds || fds != request_n_fds(req) || !a || a->type != MSGPACK_OBJECT_ARRAY ||
            a->via.array.size != req->n_cpus)
                return -EBADMSG;
        if (req->n_tids > 0 && (!t || t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size != req->n_tids))
                return -EBADMSG;
        h->cpus = calloc(fds, sizeof(uint32_t));
        h->tids = calloc(fds, sizeof(pid_t));
        if (!h->cpus || !h->tids)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                int64_t cpu;

                if (!object_get_int(&a->via.array.ptr[i], &cpu) || cpu != (int64_t) req->cpus[i])
                        return -EBADMSG;
        }
        for (size_t k = 0; k < req->n_tids; k++) {
                int64_t tid;

                if (!object_get_int(&t->via.array.ptr[k], &tid) || tid != (int64_t) req->tids[k])
                        return -EBADMSG;
        }
        for (size_t k = 0; k < n_threads; k++)
                for (size_t i = 0; i < req->n_cpus; i++) {
                        h->cpus[k * req->n_cpus + i] = req->cpus[i];
                        h->tids[k * req->n_cpus + i] = req->n_tids > 0 ? req->tids[k] : own;
                }
        if (req->period > 0 && h->period != req->period)
                return -EBADMSG;
        return 0;
}

int pmugate_timing_open(pmugate *c, const pmugate_timing_request *req, pmugate_timing_handle **ret, char *reason,
                        size_t size) {
        _cleanup_(handle_freep) pmugate_timing_handle *h = NULL;
        const msgpack_object *reply;
        int r;

        if (!c || !ret)
                return reason_fail(reason, size, -EINVAL, "invalid arguments");
        r = request_check(req, reason, size);
        if (r < 0)
                return r;
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        r = request_pack(c, req);
        if (r < 0)
                return reason_fail(reason, size, r, "timing_open: %s", pmugate_strerror(r));
        r = connection_want_fds(c, request_n_fds(req));
        if (r < 0)
                return reason_fail(reason, size, r, "timing_open: %s", pmugate_strerror(r));
        r = connection_call(c, &reply);
        if (r < 0) {
                connection_drop_fds(c);
                if (c->last_error.reason[0])
                        return reason_fail(reason, size, r, "%s", c->last_error.reason);
                return reason_fail(reason, size, r, "timing_open: %s", pmugate_strerror(r));
        }
        h->n_fds = connection_take_fds(c, &h->fds);
        if (!reply_get_uint(reply, "handle", &h->handle)) {
                /* no handle to close: the daemon's side closes with the connection */
                return reason_fail(reason, size, -EBADMSG, "timing_open: the daemon's reply has no handle");
        }
        r = read_reply(h, req, reply);
        if (r < 0) {
                /* the events are open at the daemon: close them before giving up */
                (void) pmugate_timing_close(c, TAKE_PTR(h));
                return reason_fail(reason, size, r, "timing_open: the daemon's reply does not match the request");
        }
        *ret = TAKE_PTR(h);
        return 0;
}

size_t pmugate_timing_n_fds(const pmugate_timing_handle *h) {
        return h ? h->n_fds : 0;
}

int pmugate_timing_fd(const pmugate_timing_handle *h, size_t i) {
        return h && i < h->n_fds ? h->fds[i] : -EBADF;
}

int pmugate_timing_cpu(const pmugate_timing_handle *h, size_t i) {
        return h && i < h->n_fds ? (int) h->cpus[i] : -EINVAL;
}

pid_t pmugate_timing_tid(const pmugate_timing_handle *h, size_t i) {
        return h && i < h->n_fds ? h->tids[i] : -EINVAL;
}

uint64_t pmugate_timing_period(const pmugate_timing_handle *h) {
        return h ? h->period : 0;
}

int pmugate_timing_close(pmugate *c, pmugate_timing_handle *h) {
        const msgpack_object *reply;
        msgpack_packer pk;
        int r = 0;

        if (!h)
                return 0;
        if (c) {
                r = connection_begin(c, REQUEST_PERF_CLOSE, 1, &pk);
                if (r >= 0)
                        r = pack_key_uint(&pk, "handle", h->handle) < 0 ? -ENOMEM : 0;
                if (r >= 0)
                        r = connection_call(c, &reply);
        }
        handle_free(h);
        return r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * timing_open: sampling events on one of the caller's processes for `pmugate timing`
 * (docs/PERF.md, "Timing"). With the class lbr, for a process of the caller's uid (dumpable,
 * not init, inside the job in job mode) or threads of it ("tids", or "tid" for one), on each
 * CPU asked one event (per thread) with the single attr of proto/timing-attr.h: its period
 * bounded by pmugate-limits.h and by the kernel's perf_event_max_sample_rate, branch mode only
 * where the LBR records cycles. The fds go to the caller thread by thread in the CPUs' order;
 * the handle lives in the session's perf table, so perf_close, the connection's end, a reload
 * or a revoke that takes the class away close it (disabling the caller's copies).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "error.h"
#include "handlers/handlers.h"
#include "log.h"
#include "perf/perf-handles.h"
#include "perf/perf-target.h"
#include "perf/perf-timing.h"
#include "server/perf-sessions.h"

/* The caller holds the class lbr, from its role or its job's grant. */
static int check_lbr(Server *s, Session *c, Refusal *ret_refusal) {
        if (session_may_lbr(s, c, c->rights.scoped ? &c->scope : NULL))
                return 0;
        return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                      "the class lbr (sampling your own processes, pmugate timing) is not granted to uid %u: an "
                      "admin gives it to groups (lbr_groups in pmugate.conf) or with a job's grant "
                      "(pmugatectl grant --lbr)", (unsigned) c->peer.uid);
}

static int check_rate(Server *s, const Request *req, uint64_t *ret_period, Refusal *ret_refusal) {
        uint64_t kernel_max = 0;
        int r;

        r = timing_kernel_max_sample_rate(s->root, &kernel_max);
        if (r < 0)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "the kernel's perf_event_max_sample_rate cannot be read (%s): without its bound "
                              "no sampling event is opened",
                              r == -EBADMSG ? "not a rate of samples per second the daemon accepts" : strerror(-r));
        return timing_check_period(req->timing_mode, req->has_period ? req->period : 0,
                                   timing_events_per_second(req->timing_mode, s->backend->tsc_hz,
                                                            s->machine->cpu_model),
                                   kernel_max, ret_period, ret_refusal);
}

/* The target: one process of the caller's (perf_target_process()), never init. An event
 * follows the thread it is opened on and what that thread starts (inherit), so a process
 * already running more threads is sampled whole only with events per thread ("tids",
 * perf_target_process_threads()), or from an exec (on_exec), which leaves one thread. */
static int plan_target(Session *c, const Request *req, PerfProcess *ret, char *job, size_t job_size,
                       Refusal *ret_refusal) {
        char job_path[PMUGATE_CGROUP_PATH_MAX];
        const char *in_job = NULL;
        int r;

        if (req->pid == 1)
                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1, "process 1 (init) is never sampled");
        if (c->rights.scoped) {
                r = perf_target_job_path(&c->peer, c->scope.job, job_path, sizeof(job_path), ret_refusal);
                if (r != 0)
                        return r;
                (void) snprintf(job, job_size, "%s", c->scope.job);
                in_job = job_path;
        }
        if (req->n_tids > 0) {
                pid_t tids[TIMING_TIDS_PER_OPEN];

                for (size_t i = 0; i < req->n_tids; i++)
                        tids[i] = (pid_t) req->tids[i];
                return perf_target_process_threads("/proc", &c->peer, (pid_t) req->pid, tids, req->n_tids, in_job,
                                                   ret, ret_refusal);
        }
        r = perf_target_process("/proc", &c->peer, (pid_t) req->pid, in_job, ret, ret_refusal);
        if (r != 0)
                return r;
        if (!req->on_exec && ret->n_tids > 1) {
                size_t n = ret->n_tids;

                perf_process_done(ret);
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "process %" PRIu32 " runs %zu threads; a timing event follows one thread and what "
                              "it starts, so only its first would be sampled: name its threads with 'tids' (up to "
                              "%u per timing_open, as pmugate timing -p does; %zu threads hold %zu events per "
                              "CPU against your per-user limit of perf events), or start the program under "
                              "pmugate timing (on_exec)", req->pid, n, TIMING_TIDS_PER_OPEN, n, n);
        }
        return 0;
}

/* After the open: every tid is still a thread of the process the handle's pidfd pins. */
static bool threads_still_listed(const PerfHandle *h, const Request *req) {
        pid_t tids[TIMING_TIDS_PER_OPEN];

        for (size_t i = 0; i < req->n_tids; i++)
                tids[i] = (pid_t) req->tids[i];
        return perf_target_thread_alive("/proc", &(PerfProcess) { .pidfd = h->pidfd, .pid = (pid_t) req->pid,
                                                                  .tids = tids, .n_tids = req->n_tids });
}

/* The events one request opens: one per CPU of each thread named (of the process without). */
static size_t request_n_events(const Request *req) {
        return req->n_cpus * MAX(req->n_tids, (size_t) 1);
}

static int check_limits(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        size_t held = server_perf_events_of_uid(s, c->peer.uid), handles, n = request_n_events(req);

        if (held + n > server_perf_events_per_uid_max(s))
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "uid %u holds %zu open perf events; %zu more would pass the limit of %zu per user "
                              "(a timing of a process's threads holds one per thread and CPU)",
                              (unsigned) c->peer.uid, held, n, server_perf_events_per_uid_max(s));
        handles = server_timing_handles_of_uid(s, c->peer.uid);
        if (handles >= TIMING_HANDLES_PER_UID_MAX)
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "uid %u holds %zu timing handles, the most allowed per user (one holds up to %u "
                              "threads on up to %u CPUs); close one first",
                              (unsigned) c->peer.uid, handles, TIMING_TIDS_PER_OPEN, TIMING_CPUS_PER_OPEN);
        return 0;
}

static int open_refusal(const PerfHandle *h, const PerfOpenFailure *f, const Request *req, Refusal *ret_refusal) {
        pid_t pid = (pid_t) req->pid;
        const char *mode = h->attrs[0].type == PERF_TYPE_HARDWARE ? "branches" : "ips";
        int e = -f->error;

        if (e == EACCES || e == EPERM)
                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                              "the kernel refused the %s sampling event of process %d on CPU %" PRId64 ": %s; "
                              "check perf_event_paranoid and the daemon's CAP_PERFMON", mode, (int) pid, f->target,
                              strerror(e));
        if (e == ESRCH && req->n_tids == 1)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "thread %" PRIu32 " of process %d exited before its events were open", req->tids[0],
                              (int) pid);
        if (e == ESRCH && req->n_tids > 1)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "a thread of process %d (of the %zu named) exited before its events were open",
                              (int) pid, req->n_tids);
        if (e == ESRCH)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d exited before its events were open",
                              (int) pid);
        if (e == EMFILE || e == ENFILE)
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "the daemon's open file limit is reached at CPU %" PRId64 "; close handles first",
                              f->target);
        return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                      "the perf driver cannot open the %s sampling event of process %d on CPU %" PRId64 ": %s", mode,
                      (int) pid, f->target, strerror(e));
}

/* A new fd of each event for the reply, in the request's order: thread by thread, CPU by CPU. */
static int export_fds(Server *s, PerfHandle *h, Refusal *ret_refusal) {
        if (h->n_units > ELEMENTSOF(s->reply_fds))
                return refuse(ret_refusal, PROTO_E_LIMIT, -1, "%zu fds: at most %zu in one reply", h->n_units,
                              ELEMENTSOF(s->reply_fds));
        for (size_t i = 0; i < h->n_units; i++) {
                int fd = perf_driver_export_fd(h->driver, h->events[i]);

                if (fd < 0) {
                        server_reply_fds_drop(s);
                        if (fd == -EOPNOTSUPP)
                                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                                              "the perf driver has no ring to hand off for this sampling event "
                                              "(EOPNOTSUPP: a simulator without sampling rings)");
                        return fd;
                }
                s->reply_fds[s->n_reply_fds++] = fd;
        }
        return 0;
}

/* "cpus" as asked, "tids" as asked when named ("tid" is answered as a list of one). */
static int reply_open(Server *s, const Request *req, const PerfHandle *h, uint64_t period) {
        msgpack_packer pk;

        TRY(server_reply_begin(s, req, 4 + (req->n_tids > 0 ? 1 : 0), &pk));
        TRY(pack_key_uint(&pk, "handle", h->id));
        TRY(pack_key_uint(&pk, "period", period));
        TRY(pack_string(&pk, "cpus"));
        TRY_PACK(msgpack_pack_array(&pk, req->n_cpus));
        for (size_t i = 0; i < req->n_cpus; i++)
                TRY_PACK(msgpack_pack_uint32(&pk, req->cpus[i]));
        if (req->n_tids > 0) {
                TRY(pack_string(&pk, "tids"));
                TRY_PACK(msgpack_pack_array(&pk, req->n_tids));
                for (size_t i = 0; i < req->n_tids; i++)
                        TRY_PACK(msgpack_pack_uint32(&pk, req->tids[i]));
        }
        return pack_key_uint(&pk, "fds", s->n_reply_fds);
}

/* The audit's words: the threads as a list of ranges (a program's threads are mostly
 * consecutive ids), or their number when the list does not fit. */
static void format_open(const Request *req, uint64_t period, char *buf, size_t size) {
        char tids[PMUGATE_REASON_MAX / 2] = "", list[PMUGATE_REASON_MAX / 2 - 16];

        if (req->n_tids > 0) {
                if (cpulist_format(req->tids, req->n_tids, list, sizeof(list)) < 0)
                        (void) snprintf(list, sizeof(list), "(%zu threads)", req->n_tids);
                (void) snprintf(tids, sizeof(tids), " %s %s", req->n_tids == 1 ? "tid" : "tids", list);
        }
        (void) snprintf(buf, size, "mode %s pid %" PRIu32 "%s period %" PRIu64 "%s",
                        timing_mode_to_string(req->timing_mode), req->pid, tids, period, req->on_exec ? " on_exec" : "");
}

int handle_timing_open(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        _cleanup_free_ PerfUnit *units = NULL;
        PerfProcess process = { .pidfd = -1 };
        struct perf_event_attr attr;
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        char job[PMUGATE_STRING_MAX + 1] = "", what[PMUGATE_REASON_MAX], cpus[256];
        size_t n_threads = MAX(req->n_tids, (size_t) 1);
        static const uint8_t one_event = 1;
        uint64_t period = 0;
        int slot, r;

        r = handler_perf_slot(s, c, &slot, ret_refusal);
        if (r != 0)
                return r;
        r = handler_resolve_scope(s, c, ret_refusal);
        if (r == 0)
                r = check_lbr(s, c, ret_refusal);
        if (r == 0)
                r = timing_check_model(req->timing_mode, s->machine->cpu_model, s->perf_catalog, ret_refusal);
        if (r == 0)
                r = check_rate(s, req, &period, ret_refusal);
        if (r == 0)
                r = handler_check_cpus(s, req, ret_refusal);
        if (r == 0)
                r = check_limits(s, c, req, ret_refusal);
        if (r != 0)
                return r;
        r = plan_target(c, req, &process, job, sizeof(job), ret_refusal);
        if (r != 0)
                return r;

        units = calloc(request_n_events(req), sizeof(*units));
        if (!units) {
                perf_process_done(&process);
                return -ENOMEM;
        }
        /* with tids, the events are those threads' (the kernel's pid argument names a task), thread by thread */
        for (size_t t = 0; t < n_threads; t++)
                for (size_t i = 0; i < req->n_cpus; i++)
                        units[t * req->n_cpus + i] = (PerfUnit) {
                                .target = req->cpus[i], .pid = req->n_tids > 0 ? (pid_t) req->tids[t] : process.pid,
                                .cpu = (int) req->cpus[i], .cgroup_fd = -1 };
        timing_attr_fill(&attr, req->timing_mode, period, req->on_exec);
        r = perf_handle_new(s->perf_driver, PERF_SCOPE_PROCESS, c->peer.uid, &attr, &one_event, 1, units,
                            request_n_events(req), &h);
        if (r < 0) {
                perf_process_done(&process);
                return r;
        }
        h->timing = true;
        memcpy(h->job, job, sizeof(h->job));
        /* the handle keeps the pin of its process */
        h->pidfd = TAKE_FD(process.pidfd);
        perf_process_done(&process);

        r = perf_handle_open(h, &failure);
        if (r < 0) {
                r = open_refusal(h, &failure, req, ret_refusal);
                perf_handle_free(h);
                return r;
        }
        /* the pid checked is the process sampled only if its pidfd still lives, and a tid is
         * its thread only if still listed under it (a tid reused between check and open is not) */
        if (!perf_target_process_alive(&(PerfProcess) { .pidfd = h->pidfd })) {
                perf_handle_free(h);
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %" PRIu32 " exited while its events opened",
                              req->pid);
        }
        if (req->n_tids > 0 && !threads_still_listed(h, req)) {
                perf_handle_free(h);
                if (req->n_tids == 1)
                        return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                                      "thread %" PRIu32 " of process %" PRIu32 " exited while its events opened",
                                      req->tids[0], req->pid);
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "a thread of process %" PRIu32 " (of the %zu named) exited while its events opened",
                              req->pid, req->n_tids);
        }
        r = export_fds(s, h, ret_refusal);
        if (r != 0) {
                perf_handle_free(h);
                return r;
        }
        h->handed_off = true;
        h->id = ++c->perf_next_id;
        c->perf[slot] = h;
        r = server_perf_tick_update(s);
        if (r < 0)
                log_warning_errno(r, "Cannot tick the simulator's perf driver: its counts advance at reads only");

        format_open(req, period, what, sizeof(what));
        handler_format_cpus(req->cpus, req->n_cpus, cpus, sizeof(cpus));
        server_audit(s, c, "timing-open", "allowed", h->job[0] ? h->job : NULL, cpus, what, perf_handle_n_open(h));
        r = reply_open(s, req, h, period);
        if (r < 0)
                server_reply_fds_drop(s);
        return r;
}

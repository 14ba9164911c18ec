/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The server's state and the types its files share: the Server, a Session (one connection), a
 * BatchJob (a large batch in progress). Beneath every file of server/, so that the server, its
 * sessions, replies, revalidation and reload each include what they call and none needs the
 * header of a file that calls it.
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "audit-fold.h"
#include "audit.h"
#include "backend/backend-choice.h"
#include "backend/backend.h"
#include "backend/machine.h"
#include "backend/perf-catalog.h"
#include "backend/perf-driver.h"
#include "backend/perf-opener.h"
#include "cpuset.h"
#include "message.h"
#include "perf/perf-handles.h"
#include "pmu/allowlist.h"
#include "pmu/leases.h"
#include "pmu/pmu.h"
#include "pmugate-limits.h"
#include "policy/config.h"
#include "policy/grants.h"
#include "policy/policy.h"
#include "policy/scope.h"
#include "refusal.h"
#include "server/scheduler.h"
#include "state-dir.h"

typedef struct Server Server;
typedef struct Session Session;

/* Answers one decoded request by packing a complete reply into s->reply; returns 0, or a
 * negative errno when even that failed. The server layer knows no request semantics: main()
 * hands it the dispatcher of the handler layer. */
typedef int (*RequestDispatcher)(Server *s, Session *c, const Request *req);

/* A batch larger than one slice, in progress: checked whole a slice at a time, then run a
 * slice at a time, with buffers of its own so that other clients are served in between. */
typedef struct BatchJob BatchJob;

/* Runs the next slice of job, under the refusal rule (refusal.h): returns 0 (with job->finished
 * set when its results are packed into s->reply), a positive ProtoError with ret_refusal filled
 * when the batch is refused, or negative errno. *ret_ops is the operations it handled. */
typedef int (*BatchStep)(Server *s, Session *c, BatchJob *job, size_t *ret_ops, Refusal *ret_refusal);

struct BatchJob {
        BatchJob *next_idle;            /* kept for the next large batch: the server's idle jobs */
        size_t capacity;                /* ops its arrays have room for */
        size_t ops_capacity;
        Request req;                    /* its ops are the job's own */
        BatchStep step;
        const AllowEntry **entries;
        int32_t *status;
        uint64_t *values;
        size_t checked;                 /* ops checked: all of them before the first runs */
        size_t done;                    /* ops run */
        uint64_t generation;            /* s->rights_generation when the check began */
        bool stale;                     /* rights may have changed since: check each op again */
        bool finished;                  /* its results are packed into s->reply */
        /* The reply, packed a part at a time as the slices finish it; handed to s->reply by
         * server_reply_adopt() at the end. */
        msgpack_sbuffer reply;
        size_t reply_part_ends[PMUGATE_REPLY_PARTS_MAX];
        size_t n_reply_parts;
};

/* A perf_open larger than one turn (PERF_OPEN_FDS_PER_TURN fds), in progress: the handler
 * layer's (handlers/perf.c), which the server runs a turn at a time with other clients served
 * between, and frees when the client leaves. */
typedef struct PerfOpenJob PerfOpenJob;
struct PerfOpenJob {
        /* Opens the next turn's fds: returns 0 with finished set when the reply (the handle, or
         * the refusal) is packed into s->reply, or negative errno. *ret_fds: what it opened. */
        int (*step)(Server *s, Session *c, PerfOpenJob *job, size_t *ret_fds);
        /* Closes what opened and gives back what the open took (leases); frees job. */
        void (*free)(Server *s, Session *c, PerfOpenJob *job);
        size_t n_fds;           /* what it opens: counted against its uid's limit meanwhile */
        bool finished;
};

typedef struct ServerCounters {
        uint64_t connections;
        uint64_t refused_connections;
        uint64_t requests;
        uint64_t ops;
        uint64_t denials;
        uint64_t protocol_errors;
} ServerCounters;

struct Server {
        sd_event *event;
        RequestDispatcher dispatch;
        sd_event_source *listen_source;
        sd_event_source *audit_timer;
        int listen_fd;
        char *socket_path;      /* set when we bound the socket and must unlink it */

        Machine *machine;
        Backend *backend;
        /* How counters are programmed, decided at start-up (main.c) and kept across reloads.
         * Under perf or none, batch writes of registers are refused; reads stay. */
        BackendChoice choice;
        bool counters_from_option;      /* --counters decided it, not pmugate.conf */
        /* The perf_event path (docs/PERF.md): the PMUs perf_open may name, the driver that opens
         * them is perf_driver below. Owned. */
        PerfCatalog *perf_catalog;
        /* The simulator's driver counts and rotates multiplexed groups when ticked, as the kernel
         * does from its hrtimer: main() sets the tick for it, and perf_tick runs it every
         * PERF_SIM_TICK_USEC while a perf handle is open. NULL: the kernel's driver. */
        void (*perf_tick_fn)(PerfDriver *d);
        sd_event_source *perf_tick;
        Allowlist *allowlist;
        Config config;
        Audit *audit;
        char config_path[512];
        uid_t config_owner;     /* who besides root may own it: the uid that started the daemon */
        char root[512];         /* where /etc (group membership at reload) is: --root */
        char cgroup_root[512];
        Grants grants;
        Leases *leases;
        Pmu *pmu;
        /* The perf_event path: the process that opens events with CAP_PERFMON, and the kernel's
         * driver that opens through it (NULL when the daemon does not serve perf events). */
        PerfOpener *perf_opener;
        PerfDriver *perf_driver;

        Session *sessions;
        unsigned n_sessions;
        size_t pending_bytes;   /* replies held for clients that have not read them */
        ServerCounters counters;

        Scheduler scheduler;
        sd_event_source *turns;         /* serves the scheduler's next entry, one per iteration */
        uint64_t direct_iteration;      /* the loop iteration that last served a request at once */
        /* Bumped whenever a right a batch in progress relies on may have changed (a lease
         * ended, a request other than a batch ran, leases were revalidated): the batch checks
         * its next slices again. */
        uint64_t rights_generation;
        BatchJob *idle_jobs;            /* buffers of ended batches, freed when a client leaves */

        /* Scratch space shared by all clients: requests are handled one at a time. The
         * per-op arrays grow to a slice and shrink back when a client leaves. */
        RequestBuffer *request_buffer;
        char *receive_buffer;
        msgpack_sbuffer reply;
        size_t reply_part_ends[PMUGATE_REPLY_PARTS_MAX];  /* a reply in parts: where each ends */
        /* fds that go with the reply (a perf_open's handoff) in SCM_RIGHTS, owned until sent */
        int reply_fds[PMUGATE_REPLY_FDS_MAX];
        size_t n_reply_fds;
        size_t n_reply_parts;                             /* 0: the reply is one message */
        const AllowEntry **entries;
        int32_t *status;
        uint64_t *values;
        size_t results_capacity;
};

struct Session {
        Server *server;
        Session *prev, *next;
        int fd;
        sd_event_source *io;
        Peer peer;
        Rights rights;
        uint64_t requests;
        Scope scope;            /* job-mode users: resolved again at every request, never kept
                                 * as the job of a lease (each lease records its own) */
        CpuSet leased;          /* the CPUs this session holds leases on */
        bool preempted;         /* a user took over one of this client's leases */
        CpuSet preempted_cpus;
        bool revoked;           /* leases ended because the right that allowed them is gone */
        CpuSet revoked_cpus;
        char revoked_why[PMUGATE_REASON_MAX];
        AuditFold audit_fold;   /* monitors: write batches repeated at every sample */
        /* perf_open's handles, by slot; a handle's id is what the client names (never reused
         * in a session, so a stale id never reaches a newer handle) */
        PerfHandle *perf[PERF_HANDLES_PER_SESSION_MAX];
        uint32_t perf_next_id;
        size_t perf_revoked;    /* handles closed because a right ended, told with `revoked` */
        /* The messages of a reply the socket would not take yet, back to back; reading
         * pauses until the last is sent. */
        char *pending;
        size_t pending_size;    /* what it holds, as counted against its uid's budget */
        size_t pending_offset;  /* where its first message starts */
        size_t pending_ends[PMUGATE_REPLY_PARTS_MAX];
        size_t n_pending, pending_next;
        SchedEntry sched;       /* its place in the scheduler's queues */
        BatchJob *job;          /* a large batch in progress */
        PerfOpenJob *perf_job;  /* a large perf_open in progress */
        /* A request waiting for a slot for large batches, as it came (at most
         * PMUGATE_REQUEST_SIZE_MAX bytes): decoded again when the slot is there. */
        char *held;
        size_t held_size;
        bool last_large;        /* its last request was a batch larger than a slice */
};

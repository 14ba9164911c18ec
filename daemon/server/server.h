/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The server: one sd-event loop, one listening SOCK_SEQPACKET socket (socket-activated or
 * bound by us), one Session per connection, one request per message (handlers/ answers it).
 * Who is served next is the scheduler's choice (scheduler.h): uids in turn, admins first, and
 * a batch larger than PMUGATE_BATCH_SLICE_OPS operations runs a slice per turn.
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "audit.h"
#include "backend/backend.h"
#include "backend/machine.h"
#include "cpuset.h"
#include "message.h"
#include "pmu/allowlist.h"
#include "pmu/leases.h"
#include "pmu/pmu.h"
#include "policy/config.h"
#include "policy/grants.h"
#include "policy/policy.h"
#include "policy/scope.h"
#include "server/scheduler.h"
#include "server/session.h"
#include "refusal.h"
#include "state-dir.h"

typedef struct Server Server;

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
        size_t n_reply_parts;                             /* 0: the reply is one message */
        const AllowEntry **entries;
        int32_t *status;
        uint64_t *values;
        size_t results_capacity;
};

typedef struct ServerOptions {
        const char *socket_path;
        const char *config_path;
        const StateDir *state;    /* grants and lease journals; NULL: kept in memory only */
        const char *cgroup_root;  /* where cgroup file systems are mounted */
        const char *root;         /* --root: the group database at reload ("/" or NULL: NSS) */
        RequestDispatcher dispatch;
        uid_t config_owner;       /* the uid that started the daemon */
} ServerOptions;

/* Takes ownership of machine, backend, allowlist and audit on success. */
int server_new(const ServerOptions *o, Machine *machine, Backend *backend, Allowlist *allowlist, const Config *config,
               Audit *audit, Server **ret);
Server *server_free(Server *s);

/* Binds the socket when none was passed by systemd; needs to run before privileges drop. */
int server_listen(Server *s);

int server_run(Server *s);

/* Who asked for a reload, for the audit record. */
typedef struct ReloadCaller {
        uid_t uid;
        gid_t gid;              /* (gid_t) -1: not known (a signal's sender) */
        pid_t pid;
        const char *via;        /* "reload request", "SIGHUP" */
} ReloadCaller;

/* Reads pmugate.conf anew and applies it: every open connection's groups are narrowed to what
 * the group database says now (never widened), its rights recomputed, and the leases they no
 * longer allow ended with a restore (server_revalidate_leases()). Audited either way. A file
 * that does not load changes nothing: returns its negative errno with reason filled. */
int server_reload(Server *s, const ReloadCaller *caller, char *reason, size_t size);

/* SIGHUP (systemctl reload): server_reload(), framed by RELOADING=1 and READY=1. */
int server_on_sighup(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata);

/* Packs an empty success reply with extra_keys left to fill. */
int server_reply_begin(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret);

/* A reply in several messages: after each part is packed, server_reply_end_part() marks
 * where its message ends; server_reply_next_part() starts the next one after it. */
int server_reply_end_part(Server *s);
int server_reply_next_part(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret);

/* Makes the reply that job packed s->reply, in its parts. */
void server_reply_adopt(Server *s, BatchJob *job);

/* Room for n results in s->entries, s->status and s->values (n within the batch limit). */
int server_reserve_results(Server *s, size_t n);

/* Gives back what a large batch made the scratch space grow to. */
void server_shrink_scratch(Server *s);

/* Makes req (a batch whose ops are in s->request_buffer) c's batch in progress, run a slice per
 * turn by step. Returns 0 with c->job set, 1 when every slot for large batches is taken (c
 * waits for one and its request is handled again then), or negative errno. */
int server_batch_job_new(Server *s, Session *c, const Request *req, BatchStep step);
/* The batch ended (or its client left): its buffers are kept for the next one, and its slot
 * goes to a waiter. Returns NULL. */
BatchJob *server_batch_job_done(Server *s, BatchJob *job);
/* Frees the buffers kept from ended batches. */
void server_free_idle_jobs(Server *s);
BatchJob *batch_job_free(BatchJob *job);

/* Packs the error reply of a refused request into s->reply and audits it when it is a denial
 * or a notice (preempted, revoked). The one way a refusal becomes a reply: called by the
 * dispatcher, and by the session for a batch refused in a later slice. */
int server_reply_refusal(Server *s, Session *c, const Request *req, const Refusal *refusal);

/* Packs the error reply to a message that never became a request (too large, not decodable),
 * or PROTO_E_INTERNAL when answering one failed; id is the request's when it could be read. */
int server_reply_unhandled(Server *s, Session *c, uint64_t id, int code, const char *reason);

void server_audit_denial(Server *s, const Session *c, const char *op, int code, const char *reason, const char *cpus,
                         const char *regs);

/* A lease never outlives the right that allowed it. Recomputes, for every session holding
 * leases, its rights under the current configuration and, for job-mode users, its scope, and
 * ends (restoring their registers) the leases it may no longer hold: a role that may not
 * write or is lower than the one the lease was taken with, a register class the role may no
 * longer write, a job whose grant no longer gives that CPU. The session hears of it at its
 * next request (`revoked`). Run after every reload. Returns the number of leases ended. */
size_t server_revalidate_leases(Server *s, const char *why);

/* The same for the sessions of one uid: what a grant or revoke for that uid can change. */
size_t server_revalidate_uid(Server *s, uid_t uid, const char *why);

/* The same for one session, with its rights and scope resolved afresh. */
size_t server_revalidate_session(Server *s, Session *c, const char *why);

/* The same for one session whose scope was just resolved: scope is NULL when the resolution
 * found no grant. */
size_t session_revalidate_leases(Server *s, Session *c, const Scope *scope, const char *why);

/* The distinct jobs of the leases on cpus, comma-separated ("" when none has a job). */
void server_lease_jobs(const Server *s, const CpuSet *cpus, char *buf, size_t size);
void server_audit(Server *s, const Session *c, const char *event, const char *verdict, const char *job, const char *cpus,
                  const char *reason, uint64_t count);
/* The write batches of a monitoring session that were counted instead of audited one by one
 * (AuditFold) since the last such record, as one record; nothing when there were none. */
void server_audit_folded_writes(Server *s, Session *c);

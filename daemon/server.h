/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The server: one sd-event loop, one listening SOCK_SEQPACKET socket (socket-activated or
 * bound by us), one Client per connection, one request per message.
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "allowlist.h"
#include "audit.h"
#include "backend.h"
#include "config.h"
#include "cpuset.h"
#include "grants.h"
#include "leases.h"
#include "machine.h"
#include "message.h"
#include "pmu.h"
#include "policy.h"
#include "scope.h"

typedef struct Server Server;
typedef struct Client Client;

struct Client {
        Server *server;
        Client *prev, *next;
        int fd;
        sd_event_source *io;
        Peer peer;
        Rights rights;
        uint64_t requests;
        Scope scope;            /* job-mode users: resolved again at every request */
        bool preempted;         /* a user took over one of this client's leases */
        CpuSet preempted_cpus;
        /* A reply the socket would not take yet; reading pauses until it is sent. */
        char *pending;
        size_t pending_size;
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
        char cgroup_root[512];
        Grants grants;
        Leases *leases;
        Pmu *pmu;

        Client *clients;
        unsigned n_clients;
        ServerCounters counters;

        /* Scratch space shared by all clients: requests are handled one at a time. */
        RequestBuffer *request_buffer;
        char *receive_buffer;
        msgpack_sbuffer reply;
        const AllowEntry **entries;
        int32_t *status;
        uint64_t *values;
};

typedef struct ServerOptions {
        const char *socket_path;
        const char *config_path;
        const char *state_dir;    /* grants and lease journals; NULL: kept in memory only */
        const char *cgroup_root;  /* where cgroup file systems are mounted */
} ServerOptions;

/* Takes ownership of machine, backend, allowlist and audit on success. */
int server_new(const ServerOptions *o, Machine *machine, Backend *backend, Allowlist *allowlist, const Config *config,
               Audit *audit, Server **ret);
Server *server_free(Server *s);

/* Binds the socket when none was passed by systemd; needs to run before privileges drop. */
int server_listen(Server *s);

int server_run(Server *s);

/* Request handlers (requests.c). Each packs a complete reply into s->reply. */
int server_handle_hello(Server *s, Client *c, const Request *req);
int server_handle_batch(Server *s, Client *c, const Request *req);
int server_handle_status(Server *s, Client *c, const Request *req);
int server_handle_lease(Server *s, Client *c, const Request *req);
int server_handle_release(Server *s, Client *c, const Request *req);
int server_handle_grant(Server *s, Client *c, const Request *req);
int server_handle_revoke(Server *s, Client *c, const Request *req);
int server_handle_reset(Server *s, Client *c, const Request *req);
int server_handle_reload(Server *s, Client *c, const Request *req);

/* Ends every lease of c, restoring what it wrote, and audits it. */
void server_end_leases(Server *s, Client *c, const char *why);

/* Resolves c's scope for this request when its role is scoped. Returns 0, or packs a refusal
 * and returns the positive ProtoError. */
int server_resolve_scope(Server *s, Client *c, const Request *req);

/* Packs an empty success reply with extra_keys left to fill. */
int server_reply_begin(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret);

/* Packs an error reply into s->reply and audits it when it is a denial. */
int server_reply_error(Server *s, Client *c, const Request *req, uint64_t id, int code, const char *reason,
                       int64_t op_index);

void server_audit_denial(Server *s, const Client *c, const char *op, int code, const char *reason, const char *cpus,
                         const char *regs);
void server_audit(Server *s, const Client *c, const char *event, const char *verdict, const char *job, const char *cpus,
                  const char *reason, uint64_t count);

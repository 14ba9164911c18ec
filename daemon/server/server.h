/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The server: one sd-event loop, one listening SOCK_SEQPACKET socket (socket-activated or
 * bound by us), one Session per connection, one request per message (handlers/ answers it).
 * Who is served next is the scheduler's choice (scheduler.h): uids in turn, admins first, and
 * a batch larger than PMUGATE_BATCH_SLICE_OPS operations runs a slice per turn.
 */
#pragma once

#include "server/batch-job.h"
#include "server/reload.h"
#include "server/reply.h"
#include "server/revalidate.h"
#include "server/server-state.h"
#include "server/session.h"

typedef struct ServerOptions {
        const char *socket_path;
        const char *config_path;
        const StateDir *state;    /* grants and lease journals; NULL: kept in memory only */
        const char *cgroup_root;  /* where cgroup file systems are mounted */
        const char *root;         /* --root: the group database at reload ("/" or NULL: NSS) */
        RequestDispatcher dispatch;
        uid_t config_owner;       /* the uid that started the daemon */
        PerfOpener *perf_opener;  /* the perf opener and the kernel's driver over it, or NULL */
        PerfDriver *perf_driver;
        PerfCatalog *perf_catalog;      /* the PMUs perf_open may name */
} ServerOptions;

/* Takes ownership of machine, backend, allowlist and audit, and of o's perf opener, driver and catalogue,
 * on success. */
int server_new(const ServerOptions *o, Machine *machine, Backend *backend, Allowlist *allowlist, const Config *config,
               Audit *audit, Server **ret);
Server *server_free(Server *s);

/* Binds the socket when none was passed by systemd; needs to run before privileges drop. */
int server_listen(Server *s);

int server_run(Server *s);

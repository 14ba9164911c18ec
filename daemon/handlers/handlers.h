/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Request handlers. Each request type has one handler and one row in the dispatch table that
 * names the right it needs; the table is checked before the handler runs, so a handler never
 * sees a caller without that right. A handler follows the refusal rule (refusal.h): it packs
 * its reply into s->reply and returns 0, or fills *ret_refusal and returns its positive
 * ProtoError (the dispatcher packs and audits it), or returns a negative errno.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "refusal.h"
#include "server/server.h"

/* For calls that return a negative errno: passes it up unchanged. */
#define TRY(expr)                               \
        do {                                    \
                int _try_r = (expr);            \
                if (_try_r < 0)                 \
                        return _try_r;          \
        } while (0)

/* For msgpack-c's own msgpack_pack_*(), which return -1 on failure: into s->reply, a
 * msgpack_sbuffer, the only way to fail is its allocation. */
#define TRY_PACK(expr)                          \
        do {                                    \
                if ((expr) < 0)                 \
                        return -ENOMEM;         \
        } while (0)

/* What a request needs before its handler runs. */
typedef enum HandlerRight {
        HANDLER_RIGHT_NONE,     /* anyone connected: the handler answers from what the caller holds */
        HANDLER_RIGHT_READ,     /* a role that may read registers (write ops are checked per op) */
        HANDLER_RIGHT_WRITE,    /* a role that may program counters */
        HANDLER_RIGHT_MONITOR,  /* a monitoring agent (monitor_users, monitor_groups) or an admin */
        HANDLER_RIGHT_ADMIN,    /* root or a member of admin_groups */
} HandlerRight;

/* Runs the handler of req after checking the right its table row names. */
int handlers_dispatch(Server *s, Session *c, const Request *req);

int handle_hello(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_batch(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_status(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_lease(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_release(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_grant(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_revoke(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_reset(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_reload(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_jobmap(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_perf_open(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_perf_read(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_perf_close(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
int handle_timing_open(Server *s, Session *c, const Request *req, Refusal *ret_refusal);

/* Takes leases on req's CPUs for c as 'lease' does (scope, limits, preempting a monitor),
 * without a reply: 'lease' itself and perf_open of hardware events on scope cpu. */
int handler_lease_cpus(Server *s, Session *c, const Request *req, Refusal *ret_refusal);

/* Packs "foreign": what other PMU users hold (the kernel's NMI watchdog and perf on core
 * counters; the kernel's uncore drivers on L3, data-fabric counters and PCI units). */
int handler_pack_foreign(msgpack_packer *pk, const Server *s);

/* Packs a reply whose one key is "cpus". */
int handler_reply_cpus(Server *s, const Request *req, const uint32_t *cpus, size_t n);
void handler_format_cpus(const uint32_t *cpus, size_t n, char *buf, size_t size);
/* Returns 0 when every CPU of the request exists and is online, or refuses it. */
int handler_check_cpus(Server *s, const Request *req, Refusal *ret_refusal);
/* Resolves c's scope for this request when its role is scoped, and ends the leases it no
 * longer covers. Returns 0, or refuses it (`revoked` when leases just ended). */
int handler_resolve_scope(Server *s, Session *c, Refusal *ret_refusal);
/* A free perf handle slot of c for a perf_open or timing_open in *ret_slot: 0, or a refusal
 * code when the daemon serves no perf events or c holds its most handles. */
int handler_perf_slot(const Server *s, const Session *c, int *ret_slot, Refusal *ret_refusal);
/* The `revoked` notice of c's ended leases, once: clears it and returns PROTO_E_REVOKED. */
int handler_report_revocation(Session *c, Refusal *ret_refusal);

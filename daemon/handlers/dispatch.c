/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dispatch table: every request type, its handler, and the right it needs
 *
 * The refusal rule (docs/HACKING.md, "Refusals"): a check or handler that refuses a request
 * fills a Refusal (code, op index, reason, and what its audit record names) and returns the
 * positive ProtoError; a negative return is an internal failure with the errno it failed
 * with. Nothing below this file packs an error reply or audits a denial: handlers_dispatch()
 * hands every refusal to server_reply_refusal(), which does both, once. A negative errno
 * becomes PROTO_E_INTERNAL in the session, which logs it.
 */
#include <errno.h>
#include <stdio.h>

#include "error.h"
#include "handlers/handlers.h"

typedef struct HandlerRow {
        int (*handle)(Server *s, Session *c, const Request *req, Refusal *ret_refusal);
        HandlerRight needs;
        /* Answered even while a preemption or revocation is still to be reported: these
         * change nothing the client programmed, so the news can wait for a request that does. */
        bool ignores_notices;
} HandlerRow;

static const HandlerRow handler_table[_REQUEST_TYPE_MAX] = {
        [REQUEST_HELLO] = { handle_hello, HANDLER_RIGHT_NONE, true },
        [REQUEST_BATCH] = { handle_batch, HANDLER_RIGHT_READ, false },
        [REQUEST_STATUS] = { handle_status, HANDLER_RIGHT_ADMIN, true },
        [REQUEST_LEASE] = { handle_lease, HANDLER_RIGHT_WRITE, false },
        [REQUEST_RELEASE] = { handle_release, HANDLER_RIGHT_NONE, false },
        [REQUEST_GRANT] = { handle_grant, HANDLER_RIGHT_ADMIN, false },
        [REQUEST_REVOKE] = { handle_revoke, HANDLER_RIGHT_ADMIN, false },
        [REQUEST_RESET] = { handle_reset, HANDLER_RIGHT_ADMIN, false },
        [REQUEST_RELOAD] = { handle_reload, HANDLER_RIGHT_ADMIN, false },
        [REQUEST_JOBMAP] = { handle_jobmap, HANDLER_RIGHT_MONITOR, true },
        /* Software events need only the right to read; perf_open checks the write right and
         * the class of every hardware event itself. read and close find only the session's own
         * handles. */
        [REQUEST_PERF_OPEN] = { handle_perf_open, HANDLER_RIGHT_READ, false },
        [REQUEST_PERF_READ] = { handle_perf_read, HANDLER_RIGHT_NONE, false },
        [REQUEST_PERF_CLOSE] = { handle_perf_close, HANDLER_RIGHT_NONE, true },
        /* the class lbr is checked by the handler: from the role or from the job's grant */
        [REQUEST_TIMING_OPEN] = { handle_timing_open, HANDLER_RIGHT_READ, false },
};

static bool has_right(const Rights *r, HandlerRight needs) {
        switch (needs) {
        case HANDLER_RIGHT_NONE:
                return true;
        case HANDLER_RIGHT_READ:
                return r->may_read;
        case HANDLER_RIGHT_WRITE:
                return r->may_write;
        case HANDLER_RIGHT_MONITOR:
                return r->role == ROLE_MONITOR || r->may_admin;
        case HANDLER_RIGHT_ADMIN:
                return r->may_admin;
        }
        return false;
}

static int refuse_right(const Session *c, const Request *req, HandlerRight needs, Refusal *ret_refusal) {
        if (needs == HANDLER_RIGHT_ADMIN)
                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                              "'%s' needs root or a group in admin_groups; uid %u is neither",
                              request_type_to_string(req->type), (unsigned) c->peer.uid);
        if (needs == HANDLER_RIGHT_MONITOR)
                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                              "'%s' needs the monitor role (monitor_users, monitor_groups) or an admin; uid %u is %s",
                              request_type_to_string(req->type), (unsigned) c->peer.uid,
                              role_to_string(c->rights.role));
        return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1, "%s",
                      c->rights.reason[0] ? c->rights.reason : "this role may not program counters");
}

/* Said once, on the next request that acts on the PMU: the client's registers were restored
 * and whatever it measures now is not what it programmed. */
static int report_preemption(Session *c, Refusal *ret_refusal) {
        bool one = cpuset_count(&c->preempted_cpus) == 1;
        char cpus[128];

        if (cpuset_format(&c->preempted_cpus, cpus, sizeof(cpus)) < 0)
                (void) snprintf(cpus, sizeof(cpus), "several");
        c->preempted = false;
        cpuset_clear(&c->preempted_cpus);
        return refuse(ret_refusal, PROTO_E_PREEMPTED, -1,
                      "preempted: a user's lease took %s %s from this monitor; its registers were restored",
                      one ? "CPU" : "CPUs", cpus);
}

static int handle(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        const HandlerRow *row = (unsigned) req->type < _REQUEST_TYPE_MAX ? &handler_table[req->type] : NULL;

        if (!row || !row->handle)
                return refuse(ret_refusal, PROTO_E_UNKNOWN_OP, -1, "%s", proto_error_reason(PROTO_E_UNKNOWN_OP));
        if (c->preempted && !row->ignores_notices)
                return report_preemption(c, ret_refusal);
        if (c->revoked && !row->ignores_notices)
                return handler_report_revocation(c, ret_refusal);
        if (!has_right(&c->rights, row->needs))
                return refuse_right(c, req, row->needs, ret_refusal);
        return row->handle(s, c, req, ret_refusal);
}

int handlers_dispatch(Server *s, Session *c, const Request *req) {
        Refusal refusal;
        int r;

        refusal_clear(&refusal);
        r = handle(s, c, req, &refusal);
        if (r > 0)
                return server_reply_refusal(s, c, req, &refusal);
        return r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dispatch table: every request type, its handler, and the right it needs
 */
#include <errno.h>
#include <stdio.h>

#include "error.h"
#include "handlers/handlers.h"

typedef struct HandlerRow {
        int (*handle)(Server *s, Session *c, const Request *req);
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

static int refuse_right(Server *s, Session *c, const Request *req, HandlerRight needs) {
        char reason[400];

        if (needs == HANDLER_RIGHT_ADMIN)
                (void) snprintf(reason, sizeof(reason), "'%s' needs root or a group in admin_groups; uid %u is neither",
                                request_type_to_string(req->type), (unsigned) c->peer.uid);
        else if (needs == HANDLER_RIGHT_MONITOR)
                (void) snprintf(reason, sizeof(reason),
                                "'%s' needs the monitor role (monitor_users, monitor_groups) or an admin; uid %u is "
                                "%s", request_type_to_string(req->type), (unsigned) c->peer.uid,
                                role_to_string(c->rights.role));
        else
                (void) snprintf(reason, sizeof(reason), "%s",
                                c->rights.reason[0] ? c->rights.reason : "this role may not program counters");
        /* server_reply_error() leaves batch denials to the batch handler, which has not run. */
        if (req->type == REQUEST_BATCH)
                server_audit_denial(s, c, "batch", PROTO_E_NOT_AUTHORIZED, reason, NULL, NULL);
        return server_reply_error(s, c, req, req->id, PROTO_E_NOT_AUTHORIZED, reason, -1);
}

/* Said once, on the next request that acts on the PMU: the client's registers were restored
 * and whatever it measures now is not what it programmed. */
static int report_preemption(Server *s, Session *c, const Request *req) {
        char reason[300], cpus[128];

        if (cpuset_format(&c->preempted_cpus, cpus, sizeof(cpus)) < 0)
                (void) snprintf(cpus, sizeof(cpus), "several");
        (void) snprintf(reason, sizeof(reason),
                        "preempted: a user's lease took CPUs %s from this monitor; its registers were restored", cpus);
        c->preempted = false;
        cpuset_clear(&c->preempted_cpus);
        return server_reply_error(s, c, req, req->id, PROTO_E_PREEMPTED, reason, -1);
}

/* Said once, like a preemption: the right that allowed these leases is gone (a revoked or
 * replaced grant, a job that lost CPUs, a reload that changed the role), so they ended and
 * their registers were restored. */
int handler_report_revocation(Server *s, Session *c, const Request *req) {
        char reason[600], cpus[128];

        if (cpuset_format(&c->revoked_cpus, cpus, sizeof(cpus)) < 0)
                (void) snprintf(cpus, sizeof(cpus), "several");
        (void) snprintf(reason, sizeof(reason),
                        "revoked: the leases on CPUs %s ended (%s); their registers were restored", cpus,
                        c->revoked_why);
        c->revoked = false;
        cpuset_clear(&c->revoked_cpus);
        c->revoked_why[0] = '\0';
        return server_reply_error(s, c, req, req->id, PROTO_E_REVOKED, reason, -1);
}

int handlers_dispatch(Server *s, Session *c, const Request *req) {
        const HandlerRow *row = (unsigned) req->type < _REQUEST_TYPE_MAX ? &handler_table[req->type] : NULL;

        if (!row || !row->handle)
                return server_reply_error(s, c, req, req->id, PROTO_E_UNKNOWN_OP, NULL, -1);
        if (c->preempted && !row->ignores_notices)
                return report_preemption(s, c, req);
        if (c->revoked && !row->ignores_notices)
                return handler_report_revocation(s, c, req);
        if (!has_right(&c->rights, row->needs))
                return refuse_right(s, c, req, row->needs);
        return row->handle(s, c, req);
}

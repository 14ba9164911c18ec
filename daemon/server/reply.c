/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replies and the audit records that go with them
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "macro.h"
#include "server/reply.h"
#include "server/server-state.h"

int server_reply_begin(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret) {
        msgpack_sbuffer_clear(&s->reply);
        s->n_reply_parts = 0;
        msgpack_packer_init(ret, &s->reply, msgpack_sbuffer_write);
        return reply_pack_begin(ret, req->id, extra_keys);
}

int server_reply_end_part(Server *s) {
        if (s->n_reply_parts >= ELEMENTSOF(s->reply_part_ends))
                return -E2BIG;
        s->reply_part_ends[s->n_reply_parts++] = s->reply.size;
        return 0;
}

int server_reply_next_part(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret) {
        msgpack_packer_init(ret, &s->reply, msgpack_sbuffer_write);
        return reply_pack_begin(ret, req->id, extra_keys);
}

void server_reply_adopt(Server *s, BatchJob *job) {
        msgpack_sbuffer mine = s->reply;

        /* a swap: the job frees the old reply buffer with itself */
        s->reply = job->reply;
        job->reply = mine;
        memcpy(s->reply_part_ends, job->reply_part_ends, job->n_reply_parts * sizeof(job->reply_part_ends[0]));
        s->n_reply_parts = job->n_reply_parts;
        job->n_reply_parts = 0;
}

void server_audit(Server *s, const Session *c, const char *event, const char *verdict, const char *job, const char *cpus,
                  const char *reason, uint64_t count) {
        AuditRecord rec = {
                .event = event,
                .verdict = verdict,
                .uid = c->peer.uid,
                .gid = c->peer.gid,
                .pid = c->peer.pid,
                .job = job,
                .cpus = cpus,
                .reason = reason,
                .count = count,
        };

        audit_emit(s->audit, &rec);
}

void server_audit_folded_writes(Server *s, Session *c) {
        char reason[160];
        AuditRecord rec = {
                .event = "write",
                .verdict = "allowed",
                .uid = c->peer.uid,
                .gid = c->peer.gid,
                .pid = c->peer.pid,
                .op = "batch",
                .reason = reason,
                .count = c->audit_fold.folded_writes,
        };

        if (c->audit_fold.folded_batches == 0)
                return;
        (void) snprintf(reason, sizeof(reason),
                        "repeats of the monitoring session's audited write patterns: %" PRIu64 " batches",
                        c->audit_fold.folded_batches);
        audit_emit(s->audit, &rec);
        audit_fold_reported(&c->audit_fold);
}

static bool code_is_denial(int code) {
        switch (code) {
        case PROTO_E_NOT_AUTHORIZED:
        case PROTO_E_REG_NOT_ALLOWED:
        case PROTO_E_REG_FORBIDDEN:
        case PROTO_E_READ_ONLY:
        case PROTO_E_NO_SUCH_CPU:
        case PROTO_E_NO_SUCH_UNIT:
        case PROTO_E_TOO_MANY_CLIENTS:
        case PROTO_E_BUSY:
        case PROTO_E_NO_GRANT:
        case PROTO_E_NO_LEASE:
        case PROTO_E_OUT_OF_SCOPE:
        case PROTO_E_LIMIT:
                return true;
        default:
                return false;
        }
}

/* News about leases that ended without the client asking: audited like denials, with the
 * request that received them. */
static bool code_is_notice(int code) {
        return code == PROTO_E_PREEMPTED || code == PROTO_E_REVOKED;
}

void server_audit_denial(Server *s, const Session *c, const char *op, int code, const char *reason, const char *cpus,
                         const char *regs) {
        AuditRecord rec = {
                .event = "deny",
                .verdict = "denied",
                .uid = c->peer.uid,
                .gid = c->peer.gid,
                .pid = c->peer.pid,
                .op = op,
                .code = proto_error_name(code),
                .reason = reason,
                .cpus = cpus,
                .regs = regs,
        };

        s->counters.denials++;
        audit_emit(s->audit, &rec);
}

static int pack_error(Server *s, uint64_t id, int code, const char *reason, int64_t op_index) {
        msgpack_packer pk;

        msgpack_sbuffer_clear(&s->reply);
        s->n_reply_parts = 0;
        msgpack_packer_init(&pk, &s->reply, msgpack_sbuffer_write);
        return reply_pack_error(&pk, id, code, reason, op_index);
}

int server_reply_refusal(Server *s, Session *c, const Request *req, const Refusal *refusal) {
        const char *audited = refusal->audit_reason[0] ? refusal->audit_reason : refusal->reason;

        assert(refusal->code > 0);
        if (code_is_denial(refusal->code) || code_is_notice(refusal->code))
                server_audit_denial(s, c, request_type_to_string(req->type), refusal->code, audited,
                                    refusal->cpus[0] ? refusal->cpus : NULL, refusal->regs[0] ? refusal->regs : NULL);
        else
                s->counters.protocol_errors++;
        return pack_error(s, req->id, refusal->code, refusal->reason, refusal->op_index);
}

int server_reply_unhandled(Server *s, Session *c, uint64_t id, int code, const char *reason) {
        if (code_is_denial(code))
                server_audit_denial(s, c, NULL, code, reason, NULL, NULL);
        else
                s->counters.protocol_errors++;
        return pack_error(s, id, code, reason, -1);
}

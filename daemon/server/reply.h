/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replies and their audit records: packed into the server's reply buffer, one part or several.
 */
#pragma once

#include <msgpack.h>

#include "server/server-state.h"

/* Packs an empty success reply with extra_keys left to fill. */
int server_reply_begin(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret);

/* A reply in several messages: after each part is packed, server_reply_end_part() marks
 * where its message ends; server_reply_next_part() starts the next one after it. */
int server_reply_end_part(Server *s);
int server_reply_next_part(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret);

/* Makes the reply that job packed s->reply, in its parts. */
void server_reply_adopt(Server *s, BatchJob *job);

/* Packs the error reply of a refused request into s->reply and audits it when it is a denial
 * or a notice (preempted, revoked). The one way a refusal becomes a reply: called by the
 * dispatcher, and by the session for a batch refused in a later slice. */
int server_reply_refusal(Server *s, Session *c, const Request *req, const Refusal *refusal);

/* Packs the error reply to a message that never became a request (too large, not decodable),
 * or PROTO_E_INTERNAL when answering one failed; id is the request's when it could be read. */
int server_reply_unhandled(Server *s, Session *c, uint64_t id, int code, const char *reason);

void server_audit_denial(Server *s, const Session *c, const char *op, int code, const char *reason, const char *cpus,
                         const char *regs);

void server_audit(Server *s, const Session *c, const char *event, const char *verdict, const char *job, const char *cpus,
                  const char *reason, uint64_t count);
/* The write batches of a monitoring session that were counted instead of audited one by one
 * (AuditFold) since the last such record, as one record; nothing when there were none. */
void server_audit_folded_writes(Server *s, Session *c);

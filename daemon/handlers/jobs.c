/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * grant and revoke: the batch system's prolog and epilog
 */
#include <errno.h>
#include <stdio.h>

#include "error.h"
#include "handlers/handlers.h"


int handle_grant(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        char list[512] = "", reason[PMUGATE_REASON_MAX];
        const Grant *old;
        uid_t old_uid;
        msgpack_packer pk;
        int r;

        if (req->has_cpus) {
                r = handler_check_cpus(s, req, ret_refusal);
                if (r != 0)
                        return r;
                handler_format_cpus(req->cpus, req->n_cpus, list, sizeof(list));
        }
        old = grants_find(&s->grants, req->job);
        old_uid = old ? old->uid : req->uid;
        r = grants_put_with_lbr(&s->grants, req->job, req->uid, req->has_cpus ? req->cpus : NULL,
                                req->has_cpus ? req->n_cpus : 0, req->lbr);
        if (r == -ENOSPC) {
                return refuse(ret_refusal, PROTO_E_LIMIT, -1, "already %zu grants, the most allowed", s->grants.n);
        }
        if (r == -EINVAL)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "uid %u cannot be granted", (unsigned) req->uid);
        if (r == -EFBIG)
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "job %s was not granted: the grants file would pass its %u bytes", req->job,
                              PMUGATE_GRANTS_FILE_SIZE_MAX);
        if (r < 0) {
                /* A grant the state file does not hold would vanish at a restart while the
                 * batch system believes it made: it is not made at all. */
                (void) snprintf(reason, sizeof(reason),
                                "job %s was not granted: the state file could not be saved (%s); see the "
                                "daemon's log", req->job, strerror(-r));
                server_audit(s, c, "grant", "failed", req->job, list[0] ? list : "cgroup", reason, 0);
                return refuse(ret_refusal, PROTO_E_INTERNAL, -1, "%s", reason);
        }
        {
                char why[PMUGATE_STRING_MAX + 64];
                AuditRecord rec = {
                        .event = "grant", .verdict = r == 1 ? "replaced" : "allowed",
                        .uid = c->peer.uid, .gid = c->peer.gid, .pid = c->peer.pid,
                        .job = req->job, .cpus = list[0] ? list : "cgroup",
                };
                char target[64];

                (void) snprintf(target, sizeof(target), "granted to uid %u%s", (unsigned) req->uid,
                                req->lbr ? " with class lbr" : "");
                rec.reason = target;
                audit_emit(s->audit, &rec);
                /* A replaced grant may name other CPUs, or another uid: only the leases of the
                 * uids it named can be touched. */
                (void) snprintf(why, sizeof(why), "job %s's grant was %s", req->job,
                                r == 1 ? "replaced" : "added");
                (void) server_revalidate_uid(s, req->uid, why);
                if (old_uid != req->uid)
                        (void) server_revalidate_uid(s, old_uid, why);
        }
        TRY(server_reply_begin(s, req, 2, &pk));
        TRY(pack_key_string(&pk, "job", req->job));
        TRY(pack_key_bool(&pk, "replaced", r == 1));
        return 0;
}

int handle_revoke(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        msgpack_packer pk;
        Grant removed = {};
        size_t ended = 0;
        int r;

        /* Fails closed: when the state file cannot be updated, the grant still ends now. */
        r = grants_remove(&s->grants, req->job, &removed);
        if (removed.job[0]) {
                char why[PMUGATE_STRING_MAX + 64];

                /* The job's leases end now, with a restore, not at their holders' next request:
                 * the epilog must leave a clean PMU. Each lease names the job whose grant gave
                 * it, so another job of the same uid keeps its own. */
                (void) snprintf(why, sizeof(why), "job %s's grant was revoked", req->job);
                ended = server_revalidate_uid(s, removed.uid, why);
                if (r == 0)
                        server_audit(s, c, "revoke", "allowed", req->job, NULL, NULL, ended);
        }
        if (r < 0 && r != -ENOENT) {
                /* A job id of PMUGATE_STRING_MAX bytes may cut this reason at PMUGATE_REASON_MAX. */
                (void) refuse(ret_refusal, PROTO_E_INTERNAL, -1,
                              "%s the state file could not be updated (%s), so the grant would come back "
                              "when the daemon restarts; revoke job %s again once the state directory is "
                              "writable",
                              removed.job[0] ? "the grant is revoked and its leases ended, but"
                                             : "an earlier revoke is not saved:",
                              strerror(-r), req->job);
                server_audit(s, c, "revoke", "unsaved", req->job, NULL, ret_refusal->reason, ended);
                return PROTO_E_INTERNAL;
        }
        TRY(server_reply_begin(s, req, 3, &pk));
        TRY(pack_key_string(&pk, "job", req->job));
        TRY(pack_key_bool(&pk, "revoked", r == 0));
        TRY(pack_key_uint(&pk, "leases_ended", ended));
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * status: clients, grants, leases, foreign counters and audit counters, for admins
 */
#include <errno.h>
#include <stdio.h>

#include "build-config.h"
#include "error.h"
#include "handlers.h"


static int pack_grants_and_leases(msgpack_packer *pk, Server *s) {
        _cleanup_free_ char *list = malloc(CPUSET_FORMAT_MAX);
        const Leases *l = s->leases;

        if (!list)
                return -ENOMEM;
        TRY(pack_string(pk, "grants"));
        TRY(msgpack_pack_array(pk, s->grants.n));
        for (size_t i = 0; i < s->grants.n; i++) {
                const Grant *g = &s->grants.items[i];

                if (!g->has_cpus || cpuset_format(&g->cpus, list, CPUSET_FORMAT_MAX) < 0)
                        list[0] = '\0';
                /* [job, uid, cpus ("" when the job's cgroup decides)] */
                TRY(msgpack_pack_array(pk, 3));
                TRY(pack_string(pk, g->job));
                TRY(msgpack_pack_uint32(pk, g->uid));
                TRY(pack_string(pk, list));
        }
        TRY(pack_string(pk, "leases"));
        TRY(msgpack_pack_array(pk, leases_count(l)));
        for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++) {
                const Lease *lease = &l->cpus[cpu];

                if (!lease->owner)
                        continue;
                /* [cpu, uid, pid, role, job, registers journaled] */
                TRY(msgpack_pack_array(pk, 6));
                TRY(msgpack_pack_uint32(pk, cpu));
                TRY(msgpack_pack_uint32(pk, lease->uid));
                TRY(msgpack_pack_int32(pk, lease->pid));
                TRY(pack_string(pk, role_to_string(lease->role)));
                TRY(pack_string(pk, lease->job));
                TRY(msgpack_pack_uint64(pk, lease->n_journal));
        }
        return 0;
}

int handle_status(Server *s, Session *c, const Request *req) {
        msgpack_packer pk;
        AuditStats as;
        int r;
        static const char *const sinks[] = { "journal", "stderr", "file" };

        audit_stats(s->audit, &as);

        TRY(server_reply_begin(s, req, 9, &pk));
        TRY(pack_key_string(&pk, "server", "pmugated " PMUGATE_VERSION));
        TRY(pack_key_string(&pk, "backend", s->backend->vtable->name));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(s->config.mode)));
        r = pack_grants_and_leases(&pk, s);
        if (r < 0)
                return r;
        TRY(handler_pack_foreign(&pk, s));
        TRY(pack_string(&pk, "clients"));
        TRY(msgpack_pack_array(&pk, s->n_sessions));
        for (const Session *o = s->sessions; o; o = o->next) {
                /* [uid, pid, role, requests] */
                TRY(msgpack_pack_array(&pk, 4));
                TRY(msgpack_pack_uint32(&pk, o->peer.uid));
                TRY(msgpack_pack_int32(&pk, o->peer.pid));
                TRY(pack_string(&pk, role_to_string(o->rights.role)));
                TRY(msgpack_pack_uint64(&pk, o->requests));
        }
        TRY(pack_string(&pk, "counters"));
        TRY(msgpack_pack_map(&pk, 6));
        TRY(pack_key_uint(&pk, "connections", s->counters.connections));
        TRY(pack_key_uint(&pk, "refused_connections", s->counters.refused_connections));
        TRY(pack_key_uint(&pk, "requests", s->counters.requests));
        TRY(pack_key_uint(&pk, "ops", s->counters.ops));
        TRY(pack_key_uint(&pk, "denials", s->counters.denials));
        TRY(pack_key_uint(&pk, "protocol_errors", s->counters.protocol_errors));
        TRY(pack_string(&pk, "audit"));
        TRY(msgpack_pack_map(&pk, 3));
        TRY(pack_key_string(&pk, "sink", sinks[as.sink]));
        TRY(pack_key_uint(&pk, "emitted", as.emitted));
        TRY(pack_key_uint(&pk, "suppressed", as.suppressed));
        return 0;
}

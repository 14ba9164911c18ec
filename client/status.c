/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: the admin status request
 */
#include <errno.h>
#include <stdlib.h>

#include "connection.h"
#include "macro.h"
#include "message.h"

pmugate_status *pmugate_status_free(pmugate_status *s) {
        if (!s)
                return NULL;
        free(s->clients);
        free(s->grants);
        free(s->leases);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_status *, pmugate_status_free);

static int decode_grants_and_leases(const msgpack_object *reply, pmugate_status *s) {
        const msgpack_object *grants = msgpack_map_get(reply, "grants"), *leases = msgpack_map_get(reply, "leases");

        if (!grants || grants->type != MSGPACK_OBJECT_ARRAY || !leases || leases->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        s->grants = calloc(grants->via.array.size ?: 1, sizeof(pmugate_grant_info));
        s->leases = calloc(leases->via.array.size ?: 1, sizeof(pmugate_lease_info));
        if (!s->grants || !s->leases)
                return -ENOMEM;
        for (uint32_t i = 0; i < grants->via.array.size; i++) {
                const msgpack_object *t = &grants->via.array.ptr[i];
                int64_t v = 0;

                if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < 3)
                        return -EBADMSG;
                object_copy_string(&t->via.array.ptr[0], s->grants[i].job, sizeof(s->grants[i].job));
                (void) object_get_int(&t->via.array.ptr[1], &v);
                s->grants[i].uid = (uint32_t) v;
                object_copy_string(&t->via.array.ptr[2], s->grants[i].cpus, sizeof(s->grants[i].cpus));
        }
        s->n_grants = grants->via.array.size;
        for (uint32_t i = 0; i < leases->via.array.size; i++) {
                const msgpack_object *t = &leases->via.array.ptr[i];
                pmugate_lease_info *l = &s->leases[i];
                int64_t v = 0;

                if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < 6)
                        return -EBADMSG;
                (void) object_get_int(&t->via.array.ptr[0], &v);
                l->cpu = (uint32_t) v;
                (void) object_get_int(&t->via.array.ptr[1], &v);
                l->uid = (uint32_t) v;
                (void) object_get_int(&t->via.array.ptr[2], &v);
                l->pid = (int32_t) v;
                object_copy_string(&t->via.array.ptr[3], l->role, sizeof(l->role));
                object_copy_string(&t->via.array.ptr[4], l->job, sizeof(l->job));
                (void) object_get_int(&t->via.array.ptr[5], &v);
                l->registers = (uint64_t) v;
        }
        s->n_leases = leases->via.array.size;
        return 0;
}

int pmugate_status_get(pmugate *c, pmugate_status **ret) {
        _cleanup_(pmugate_status_freep) pmugate_status *s = NULL;
        const msgpack_object *reply, *clients, *counters, *audit, *foreign, *units;
        msgpack_packer pk;
        int r;

        if (!c || !ret)
                return -EINVAL;
        r = connection_begin(c, "status", 0, &pk);
        if (r < 0)
                return r;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        (void) reply_get_string(reply, "server", s->server, sizeof(s->server));
        (void) reply_get_string(reply, "backend", s->backend, sizeof(s->backend));
        clients = msgpack_map_get(reply, "clients");
        if (!clients || clients->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        s->clients = calloc(clients->via.array.size ?: 1, sizeof(pmugate_client_info));
        if (!s->clients)
                return -ENOMEM;
        for (uint32_t i = 0; i < clients->via.array.size; i++) {
                const msgpack_object *t = &clients->via.array.ptr[i];
                int64_t v = 0;

                if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < 4)
                        return -EBADMSG;
                (void) object_get_int(&t->via.array.ptr[0], &v);
                s->clients[i].uid = (uint32_t) v;
                (void) object_get_int(&t->via.array.ptr[1], &v);
                s->clients[i].pid = (int32_t) v;
                object_copy_string(&t->via.array.ptr[2], s->clients[i].role, sizeof(s->clients[i].role));
                (void) object_get_int(&t->via.array.ptr[3], &v);
                s->clients[i].requests = (uint64_t) v;
        }
        s->n_clients = clients->via.array.size;

        r = decode_grants_and_leases(reply, s);
        if (r < 0)
                return r;
        (void) reply_get_string(reply, "mode", s->mode, sizeof(s->mode));
        foreign = msgpack_map_get(reply, "foreign");
        (void) reply_get_bool(foreign, "nmi_watchdog", &s->nmi_watchdog);
        (void) reply_get_uint(foreign, "fixed_mask", &s->foreign_fixed_mask);
        (void) reply_get_uint(foreign, "gp_mask", &s->foreign_gp_mask);
        (void) reply_get_uint(foreign, "l3_mask", &s->foreign_l3_mask);
        (void) reply_get_uint(foreign, "df_mask", &s->foreign_df_mask);
        units = foreign ? msgpack_map_get(foreign, "units") : NULL;
        if (units && units->type == MSGPACK_OBJECT_ARRAY)
                s->n_foreign_units = units->via.array.size;

        counters = msgpack_map_get(reply, "counters");
        (void) reply_get_uint(counters, "connections", &s->connections);
        (void) reply_get_uint(counters, "refused_connections", &s->refused_connections);
        (void) reply_get_uint(counters, "requests", &s->requests);
        (void) reply_get_uint(counters, "ops", &s->ops);
        (void) reply_get_uint(counters, "denials", &s->denials);
        (void) reply_get_uint(counters, "protocol_errors", &s->protocol_errors);
        audit = msgpack_map_get(reply, "audit");
        (void) reply_get_string(audit, "sink", s->audit_sink, sizeof(s->audit_sink));
        (void) reply_get_uint(audit, "emitted", &s->audit_emitted);
        (void) reply_get_uint(audit, "suppressed", &s->audit_suppressed);

        *ret = TAKE_PTR(s);
        return 0;
}

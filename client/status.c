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
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_status *, pmugate_status_free);

int pmugate_status_get(pmugate *c, pmugate_status **ret) {
        _cleanup_(pmugate_status_freep) pmugate_status *s = NULL;
        const msgpack_object *reply, *clients, *counters, *audit;
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: the admin status request
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/connection.h"
#include "macro.h"
#include "message.h"
#include "wire.h"

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

/* Appends one part's slice of a list to *items: element size bytes, decoded by decode. */
static int append_list(const msgpack_object *reply, const char *key, void **items, size_t *n, size_t size,
                       int (*decode)(const msgpack_object *t, void *item)) {
        const msgpack_object *list = msgpack_map_get(reply, key);
        uint8_t *grown;

        if (!list || list->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        if (list->via.array.size > SIZE_MAX / size - *n - 1)
                return -EBADMSG;
        grown = realloc(*items, (*n + list->via.array.size + 1) * size);
        if (!grown)
                return -ENOMEM;
        *items = grown;
        for (uint32_t i = 0; i < list->via.array.size; i++) {
                void *item = grown + (*n + i) * size;
                int r;

                memset(item, 0, size);
                r = decode(&list->via.array.ptr[i], item);
                if (r < 0)
                        return r;
        }
        *n += list->via.array.size;
        return 0;
}

static int decode_grant(const msgpack_object *t, void *item) {
        pmugate_grant_info *g = item;
        int64_t v = 0;

        if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < _STATUS_GRANT_FIELDS)
                return -EBADMSG;
        object_copy_string(&t->via.array.ptr[STATUS_GRANT_JOB], g->job, sizeof(g->job));
        (void) object_get_int(&t->via.array.ptr[STATUS_GRANT_UID], &v);
        g->uid = (uint32_t) v;
        object_copy_string(&t->via.array.ptr[STATUS_GRANT_CPUS], g->cpus, sizeof(g->cpus));
        return 0;
}

static int decode_lease(const msgpack_object *t, void *item) {
        pmugate_lease_info *l = item;
        int64_t v = 0;

        if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < _STATUS_LEASE_FIELDS)
                return -EBADMSG;
        (void) object_get_int(&t->via.array.ptr[STATUS_LEASE_CPU], &v);
        l->cpu = (uint32_t) v;
        (void) object_get_int(&t->via.array.ptr[STATUS_LEASE_UID], &v);
        l->uid = (uint32_t) v;
        (void) object_get_int(&t->via.array.ptr[STATUS_LEASE_PID], &v);
        l->pid = (int32_t) v;
        object_copy_string(&t->via.array.ptr[STATUS_LEASE_ROLE], l->role, sizeof(l->role));
        object_copy_string(&t->via.array.ptr[STATUS_LEASE_JOB], l->job, sizeof(l->job));
        (void) object_get_int(&t->via.array.ptr[STATUS_LEASE_REGISTERS], &v);
        l->registers = (uint64_t) v;
        return 0;
}

static int decode_client(const msgpack_object *t, void *item) {
        pmugate_client_info *ci = item;
        int64_t v = 0;

        if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < _STATUS_CLIENT_FIELDS)
                return -EBADMSG;
        (void) object_get_int(&t->via.array.ptr[STATUS_CLIENT_UID], &v);
        ci->uid = (uint32_t) v;
        (void) object_get_int(&t->via.array.ptr[STATUS_CLIENT_PID], &v);
        ci->pid = (int32_t) v;
        object_copy_string(&t->via.array.ptr[STATUS_CLIENT_ROLE], ci->role, sizeof(ci->role));
        (void) object_get_int(&t->via.array.ptr[STATUS_CLIENT_REQUESTS], &v);
        ci->requests = (uint64_t) v;
        return 0;
}

/* One message's slices of the clients, grants and leases. */
static int append_lists(const msgpack_object *reply, pmugate_status *s) {
        int r;

        r = append_list(reply, "clients", (void **) &s->clients, &s->n_clients, sizeof(*s->clients), decode_client);
        if (r >= 0)
                r = append_list(reply, "grants", (void **) &s->grants, &s->n_grants, sizeof(*s->grants),
                                decode_grant);
        if (r >= 0)
                r = append_list(reply, "leases", (void **) &s->leases, &s->n_leases, sizeof(*s->leases),
                                decode_lease);
        return r;
}

static void decode_server_fields(const msgpack_object *reply, pmugate_status *s) {
        const msgpack_object *counters, *audit, *foreign, *units;

        (void) reply_get_string(reply, "server", s->server, sizeof(s->server));
        (void) reply_get_string(reply, "backend", s->backend, sizeof(s->backend));
        (void) reply_get_string(reply, "mode", s->mode, sizeof(s->mode));
        (void) reply_get_string(reply, "config", s->config, sizeof(s->config));
        (void) reply_get_uint(reply, "omitted", &s->omitted);
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
}

int pmugate_status_get(pmugate *c, pmugate_status **ret) {
        _cleanup_(pmugate_status_freep) pmugate_status *s = NULL;
        const msgpack_object *reply;
        msgpack_packer pk;
        uint64_t parts = 1;
        int r;

        if (!c || !ret)
                return -EINVAL;
        r = connection_begin(c, REQUEST_STATUS, 0, &pk);
        if (r < 0)
                return r;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        /* A long status comes in parts, each its own message; the first says how many, and
         * every part's lists continue the last one's. All are read, whatever happens, so the
         * connection stays in step. */
        if (msgpack_map_get(reply, "parts")) {
                uint64_t part = UINT64_MAX;

                if (!reply_get_uint(reply, "parts", &parts) || parts < 2 || parts > PMUGATE_REPLY_PARTS_MAX ||
                    !reply_get_uint(reply, "part", &part) || part != 0)
                        return -EBADMSG;
        }
        decode_server_fields(reply, s);
        r = append_lists(reply, s);
        for (uint64_t part = 1; part < parts; part++) {
                int k = connection_receive_part(c, part, parts, &reply);

                if (k < 0)
                        return k;
                if (r >= 0)
                        r = append_lists(reply, s);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

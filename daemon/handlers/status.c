/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * status: clients, grants, leases, foreign counters and audit counters, for admins
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "build-config.h"
#include "error.h"
#include "handlers/handlers.h"
#include "message-pack.h"
#include "wire.h"

/* The lists of a status reply, in the order their entries are cut into parts. */
typedef enum StatusList {
        STATUS_GRANTS,
        STATUS_LEASES,
        STATUS_CLIENTS,
        _STATUS_LIST_MAX,
} StatusList;

static const char *const status_list_keys[_STATUS_LIST_MAX] = {
        [STATUS_GRANTS] = "grants",
        [STATUS_LEASES] = "leases",
        [STATUS_CLIENTS] = "clients",
};

/* Room in a part for what is not an entry: the reply's own keys, the lists' headers, and in
 * the first part the server's fields (a few hundred bytes, and the PCI units the kernel holds,
 * at most 3 bytes each). */
#define STATUS_PART_HEADROOM (2048U + 3U * PMUGATE_UNITS_MAX)

typedef struct StatusEntries {
        Server *server;
        size_t n[_STATUS_LIST_MAX];
        uint32_t *lease_cpus;           /* the CPUs with a lease, ascending */
        const Session **clients;
        char *cpus;                     /* CPUSET_FORMAT_MAX: a grant's CPU list */
        size_t starts[PMUGATE_REPLY_PARTS_MAX + 1];  /* part k: entries starts[k] to starts[k+1] */
        size_t n_parts;
        size_t omitted;                 /* entries past the last part */
} StatusEntries;

static void status_entries_done(StatusEntries *e) {
        free(e->lease_cpus);
        free(e->clients);
        free(e->cpus);
}

static size_t status_total(const StatusEntries *e) {
        return e->n[STATUS_GRANTS] + e->n[STATUS_LEASES] + e->n[STATUS_CLIENTS];
}

/* Entry i of all lists, counted through grants, then leases, then clients. */
static int pack_entry(msgpack_packer *pk, StatusEntries *e, size_t i) {
        Server *s = e->server;

        if (i < e->n[STATUS_GRANTS]) {
                const Grant *g = &s->grants.items[i];

                if (!g->has_cpus || cpuset_format(&g->cpus, e->cpus, CPUSET_FORMAT_MAX) < 0)
                        e->cpus[0] = '\0';
                return pack_tuple(pk, (const msgpack_object[_STATUS_GRANT_FIELDS]) {
                        [STATUS_GRANT_JOB] = tuple_string(g->job),
                        [STATUS_GRANT_UID] = tuple_uint(g->uid),
                        [STATUS_GRANT_CPUS] = tuple_string(e->cpus),
                }, _STATUS_GRANT_FIELDS);
        }
        i -= e->n[STATUS_GRANTS];
        if (i < e->n[STATUS_LEASES]) {
                uint32_t cpu = e->lease_cpus[i];
                const Lease *lease = &s->leases->cpus[cpu];

                return pack_tuple(pk, (const msgpack_object[_STATUS_LEASE_FIELDS]) {
                        [STATUS_LEASE_CPU] = tuple_uint(cpu),
                        [STATUS_LEASE_UID] = tuple_uint(lease->uid),
                        [STATUS_LEASE_PID] = tuple_int(lease->pid),
                        [STATUS_LEASE_ROLE] = tuple_string(role_to_string(lease->role)),
                        [STATUS_LEASE_JOB] = tuple_string(lease->job),
                        [STATUS_LEASE_REGISTERS] = tuple_uint(lease->n_journal),
                }, _STATUS_LEASE_FIELDS);
        }
        i -= e->n[STATUS_LEASES];
        return pack_tuple(pk, (const msgpack_object[_STATUS_CLIENT_FIELDS]) {
                [STATUS_CLIENT_UID] = tuple_uint(e->clients[i]->peer.uid),
                [STATUS_CLIENT_PID] = tuple_int(e->clients[i]->peer.pid),
                [STATUS_CLIENT_ROLE] = tuple_string(role_to_string(e->clients[i]->rights.role)),
                [STATUS_CLIENT_REQUESTS] = tuple_uint(e->clients[i]->requests),
        }, _STATUS_CLIENT_FIELDS);
}

/* Collects the entries and cuts them into parts of at most PMUGATE_STATUS_PART_BYTES, each
 * entry measured by packing it once. */
static int status_plan(Server *s, StatusEntries *e) {
        msgpack_sbuffer scratch;
        msgpack_packer pk;
        size_t used = STATUS_PART_HEADROOM, total, i, n = 0;
        int r = 0;

        e->server = s;
        e->n[STATUS_GRANTS] = s->grants.n;
        e->n[STATUS_LEASES] = leases_count(s->leases);
        e->n[STATUS_CLIENTS] = s->n_sessions;
        e->lease_cpus = malloc(sizeof(uint32_t) * (e->n[STATUS_LEASES] ?: 1));
        e->clients = malloc(sizeof(Session *) * (e->n[STATUS_CLIENTS] ?: 1));
        e->cpus = malloc(CPUSET_FORMAT_MAX);
        if (!e->lease_cpus || !e->clients || !e->cpus)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < s->leases->n_cpus && n < e->n[STATUS_LEASES]; cpu++)
                if (s->leases->cpus[cpu].owner)
                        e->lease_cpus[n++] = cpu;
        e->n[STATUS_LEASES] = n;
        n = 0;
        for (const Session *o = s->sessions; o && n < e->n[STATUS_CLIENTS]; o = o->next)
                e->clients[n++] = o;
        e->n[STATUS_CLIENTS] = n;

        total = status_total(e);
        msgpack_sbuffer_init(&scratch);
        msgpack_packer_init(&pk, &scratch, msgpack_sbuffer_write);
        e->starts[0] = 0;
        e->n_parts = 1;
        for (i = 0; i < total; i++) {
                msgpack_sbuffer_clear(&scratch);
                r = pack_entry(&pk, e, i);
                if (r < 0)
                        break;
                /* A part holds at least one entry: none is near the size of a part. */
                if (used + scratch.size > PMUGATE_STATUS_PART_BYTES && i > e->starts[e->n_parts - 1]) {
                        if (e->n_parts == PMUGATE_REPLY_PARTS_MAX)
                                break;
                        e->starts[e->n_parts++] = i;
                        used = STATUS_PART_HEADROOM;
                }
                used += scratch.size;
        }
        msgpack_sbuffer_destroy(&scratch);
        if (r < 0)
                return r;
        e->starts[e->n_parts] = i;
        e->omitted = total - i;
        return 0;
}

/* Each list's slice of entries first to end. */
static int pack_slices(msgpack_packer *pk, StatusEntries *e, size_t first, size_t end) {
        size_t list_start = 0;

        for (StatusList l = 0; l < _STATUS_LIST_MAX; l++) {
                size_t list_end = list_start + e->n[l];
                size_t from = MAX(first, list_start), to = MIN(end, list_end);

                TRY(pack_string(pk, status_list_keys[l]));
                TRY_PACK(msgpack_pack_array(pk, to > from ? to - from : 0));
                for (size_t i = from; i < to; i++)
                        TRY(pack_entry(pk, e, i));
                list_start = list_end;
        }
        return 0;
}

static int pack_server_fields(msgpack_packer *pk, Server *s) {
        static const char *const sinks[] = { "journal", "stderr", "file" };
        AuditStats as;

        audit_stats(s->audit, &as);
        TRY(pack_key_string(pk, "server", "pmugated " PMUGATE_VERSION));
        TRY(pack_key_string(pk, "backend", s->backend->vtable->name));
        TRY(pack_key_string(pk, "mode", access_mode_to_string(s->config.mode)));
        TRY(pack_key_string(pk, "config", s->config_path));
        TRY(handler_pack_foreign(pk, s));
        TRY(pack_string(pk, "counters"));
        TRY_PACK(msgpack_pack_map(pk, 6));
        TRY(pack_key_uint(pk, "connections", s->counters.connections));
        TRY(pack_key_uint(pk, "refused_connections", s->counters.refused_connections));
        TRY(pack_key_uint(pk, "requests", s->counters.requests));
        TRY(pack_key_uint(pk, "ops", s->counters.ops));
        TRY(pack_key_uint(pk, "denials", s->counters.denials));
        TRY(pack_key_uint(pk, "protocol_errors", s->counters.protocol_errors));
        TRY(pack_string(pk, "audit"));
        TRY_PACK(msgpack_pack_map(pk, 3));
        TRY(pack_key_string(pk, "sink", sinks[as.sink]));
        TRY(pack_key_uint(pk, "emitted", as.emitted));
        TRY(pack_key_uint(pk, "suppressed", as.suppressed));
        return 0;
}

/* One message while it fits PMUGATE_STATUS_PART_BYTES, else parts as a batch reply has them:
 * each a whole reply map with "part" and "parts" and the next slices of "grants", "leases"
 * and "clients"; the server's own fields (and "omitted", when entries were left out) only in
 * the first. */
int handle_status(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        _cleanup_(status_entries_done) StatusEntries e = {};
        int r;

        r = status_plan(s, &e);
        if (r < 0)
                return r;
        for (size_t p = 0; p < e.n_parts; p++) {
                size_t keys = _STATUS_LIST_MAX + (e.n_parts > 1 ? 2 : 0);
                msgpack_packer pk;

                if (p == 0)
                        TRY(server_reply_begin(s, req, keys + 7 + (e.omitted > 0), &pk));
                else
                        TRY(server_reply_next_part(s, req, keys, &pk));
                if (e.n_parts > 1) {
                        TRY(pack_key_uint(&pk, "part", p));
                        TRY(pack_key_uint(&pk, "parts", e.n_parts));
                }
                if (p == 0) {
                        TRY(pack_server_fields(&pk, s));
                        if (e.omitted > 0)
                                TRY(pack_key_uint(&pk, "omitted", e.omitted));
                }
                TRY(pack_slices(&pk, &e, e.starts[p], e.starts[p + 1]));
                if (e.n_parts > 1)
                        TRY(server_reply_end_part(s));
        }
        return 0;
}

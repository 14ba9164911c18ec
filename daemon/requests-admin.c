/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Request handlers for leases, job grants and administration: lease, release, grant, revoke,
 * reset, reload
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cpulist.h"
#include "error.h"
#include "log.h"
#include "server.h"

#define TRY(expr)                               \
        do {                                    \
                if ((expr) < 0)                 \
                        return -ENOMEM;         \
        } while (0)

int server_reply_begin(Server *s, const Request *req, size_t extra_keys, msgpack_packer *ret) {
        msgpack_sbuffer_clear(&s->reply);
        msgpack_packer_init(ret, &s->reply, msgpack_sbuffer_write);
        return reply_pack_begin(ret, req->id, extra_keys);
}

static int reply_cpus(Server *s, const Request *req, const uint32_t *cpus, size_t n) {
        msgpack_packer pk;

        TRY(server_reply_begin(s, req, 1, &pk));
        TRY(pack_string(&pk, "cpus"));
        TRY(msgpack_pack_array(&pk, n));
        for (size_t i = 0; i < n; i++)
                TRY(msgpack_pack_uint32(&pk, cpus[i]));
        return 0;
}

static void format_cpus(const uint32_t *cpus, size_t n, char *buf, size_t size) {
        if (cpulist_format(cpus, n, buf, size) < 0)
                (void) snprintf(buf, size, "%zu CPUs", n);
}

static int refuse_not_admin(Server *s, Client *c, const Request *req) {
        char reason[160];

        (void) snprintf(reason, sizeof(reason), "'%s' needs root or a group in admin_groups; uid %u is neither",
                        request_type_to_string(req->type), (unsigned) c->peer.uid);
        return server_reply_error(s, c, req, req->id, PROTO_E_NOT_AUTHORIZED, reason, -1);
}

/* Returns 0 when every CPU of the request exists and is online; otherwise packs the refusal
 * and returns 1 (or a negative errno when even that failed). */
static int check_cpus(Server *s, Client *c, const Request *req) {
        for (size_t i = 0; i < req->n_cpus; i++)
                if (!machine_cpu(s->machine, req->cpus[i]) || !s->machine->cpus[req->cpus[i]].online) {
                        char reason[128];
                        int r;

                        (void) snprintf(reason, sizeof(reason), "CPU %" PRIu32 " does not exist or is offline",
                                        req->cpus[i]);
                        r = server_reply_error(s, c, req, req->id, PROTO_E_NO_SUCH_CPU, reason, -1);
                        return r < 0 ? r : 1;
                }
        return 0;
}

int server_resolve_scope(Server *s, Client *c, const Request *req) {
        char reason[320];
        int r;

        if (!c->rights.scoped)
                return 0;
        r = scope_resolve(s->cgroup_root, &c->peer, &s->grants, &c->scope, reason, sizeof(reason));
        if (r > 0) {
                int q = server_reply_error(s, c, req, req->id, r, reason, -1);
                return q < 0 ? q : r;
        }
        return r;
}

void server_end_leases(Server *s, Client *c, const char *why) {
        uint32_t cpus[256];
        size_t n = 0, ended;
        char list[512];

        if (!s->leases)
                return;
        for (uint32_t cpu = 0; cpu < s->leases->n_cpus && n < ELEMENTSOF(cpus); cpu++)
                if (leases_held_by(s->leases, cpu, c))
                        cpus[n++] = cpu;
        ended = leases_release(s->leases, c, NULL, 0);
        if (ended == 0)
                return;
        format_cpus(cpus, n, list, sizeof(list));
        server_audit(s, c, "lease-end", "restored", c->scope.job[0] ? c->scope.job : NULL, list, why, ended);
}

static void on_preempted(const void *owner, uint32_t cpu, void *userdata) {
        Server *s = userdata;

        for (Client *o = s->clients; o; o = o->next)
                if (o == owner) {
                        char list[16];

                        o->preempted = true;
                        cpuset_add(&o->preempted_cpus, cpu);
                        (void) snprintf(list, sizeof(list), "%" PRIu32, cpu);
                        server_audit(s, o, "lease-preempted", "restored", NULL, list, "a user's lease took the CPU", 1);
                }
}

int server_handle_lease(Server *s, Client *c, const Request *req) {
        LeaseHolder holder = { .owner = c, .role = c->rights.role, .uid = c->peer.uid, .pid = c->peer.pid };
        char reason[320], list[512];
        int r;

        if (!c->rights.may_write)
                return server_reply_error(s, c, req, req->id, PROTO_E_NOT_AUTHORIZED,
                                          c->rights.reason[0] ? c->rights.reason : "this role may not program counters", -1);
        if (!req->has_cpus || req->n_cpus == 0)
                return server_reply_error(s, c, req, req->id, PROTO_E_BAD_FIELD, "'lease' needs a non-empty 'cpus'", -1);
        r = check_cpus(s, c, req);
        if (r != 0)
                return r < 0 ? r : 0;
        r = server_resolve_scope(s, c, req);
        if (r != 0)
                return r < 0 ? r : 0;
        if (c->rights.scoped)
                for (size_t i = 0; i < req->n_cpus; i++)
                        if (!cpuset_has(&c->scope.cpus, req->cpus[i])) {
                                (void) snprintf(reason, sizeof(reason), "CPU %" PRIu32 " is not one of job %s's CPUs",
                                                req->cpus[i], c->scope.job);
                                return server_reply_error(s, c, req, req->id, PROTO_E_OUT_OF_SCOPE, reason, -1);
                        }
        holder.job = c->scope.job[0] ? c->scope.job : NULL;

        if (c->peer.uid != 0) {
                size_t held = 0, more = 0;

                for (uint32_t cpu = 0; cpu < s->leases->n_cpus; cpu++)
                        if (s->leases->cpus[cpu].owner && s->leases->cpus[cpu].uid == c->peer.uid)
                                held++;
                for (size_t i = 0; i < req->n_cpus; i++)
                        more += !leases_held_by(s->leases, req->cpus[i], c);
                if (held + more > s->config.leases_per_uid_max) {
                        (void) snprintf(reason, sizeof(reason),
                                        "uid %u would hold leases on %zu CPUs; at most %u are allowed per user",
                                        (unsigned) c->peer.uid, held + more, s->config.leases_per_uid_max);
                        server_audit_denial(s, c, "lease", PROTO_E_LIMIT, reason, NULL, NULL);
                        return server_reply_error(s, c, req, req->id, PROTO_E_LIMIT, reason, -1);
                }
        }

        /* What holds the PMU may have changed while nobody held these CPUs. */
        for (size_t i = 0; i < req->n_cpus; i++)
                if (!s->leases->cpus[req->cpus[i]].owner)
                        pmu_detect(s->pmu, req->cpus[i]);

        r = leases_acquire(s->leases, &holder, req->cpus, req->n_cpus, on_preempted, s, reason, sizeof(reason));
        format_cpus(req->cpus, req->n_cpus, list, sizeof(list));
        if (r > 0) {
                server_audit_denial(s, c, "lease", r, reason, list, NULL);
                return server_reply_error(s, c, req, req->id, r, reason, -1);
        }
        server_audit(s, c, "lease-begin", "allowed", holder.job, list, NULL, req->n_cpus);
        return reply_cpus(s, req, req->cpus, req->n_cpus);
}

int server_handle_release(Server *s, Client *c, const Request *req) {
        uint32_t held[256];
        size_t n = 0, ended;
        char list[512];

        for (uint32_t cpu = 0; cpu < s->leases->n_cpus && n < ELEMENTSOF(held); cpu++)
                if (leases_held_by(s->leases, cpu, c) && (!req->has_cpus || req->n_cpus == 0))
                        held[n++] = cpu;
        for (size_t i = 0; req->has_cpus && i < req->n_cpus && n < ELEMENTSOF(held); i++)
                if (leases_held_by(s->leases, req->cpus[i], c))
                        held[n++] = req->cpus[i];
        ended = leases_release(s->leases, c, req->has_cpus ? req->cpus : NULL, req->has_cpus ? req->n_cpus : 0);
        if (ended > 0) {
                format_cpus(held, n, list, sizeof(list));
                server_audit(s, c, "lease-end", "restored", c->scope.job[0] ? c->scope.job : NULL, list, "released", ended);
        }
        return reply_cpus(s, req, held, n);
}

int server_handle_grant(Server *s, Client *c, const Request *req) {
        char list[512] = "", reason[160];
        msgpack_packer pk;
        int r;

        if (!c->rights.may_admin)
                return refuse_not_admin(s, c, req);
        if (req->has_cpus) {
                r = check_cpus(s, c, req);
                if (r != 0)
                        return r < 0 ? r : 0;
                format_cpus(req->cpus, req->n_cpus, list, sizeof(list));
        }
        r = grants_put(&s->grants, req->job, req->uid, req->has_cpus ? req->cpus : NULL, req->has_cpus ? req->n_cpus : 0);
        if (r == -ENOSPC) {
                (void) snprintf(reason, sizeof(reason), "already %zu grants, the most allowed", s->grants.n);
                return server_reply_error(s, c, req, req->id, PROTO_E_LIMIT, reason, -1);
        }
        if (r < 0)
                return r;
        {
                AuditRecord rec = {
                        .event = "grant", .verdict = r == 1 ? "replaced" : "allowed",
                        .uid = c->peer.uid, .gid = c->peer.gid, .pid = c->peer.pid,
                        .job = req->job, .cpus = list[0] ? list : "cgroup",
                };
                char target[32];

                (void) snprintf(target, sizeof(target), "granted to uid %u", (unsigned) req->uid);
                rec.reason = target;
                audit_emit(s->audit, &rec);
        }
        TRY(server_reply_begin(s, req, 2, &pk));
        TRY(pack_key_string(&pk, "job", req->job));
        TRY(pack_key_bool(&pk, "replaced", r == 1));
        return 0;
}

int server_handle_revoke(Server *s, Client *c, const Request *req) {
        msgpack_packer pk;
        Grant removed;
        size_t ended = 0;
        int r;

        if (!c->rights.may_admin)
                return refuse_not_admin(s, c, req);
        r = grants_remove(&s->grants, req->job, &removed);
        if (r == 0) {
                /* The job's processes lose their leases now, with a restore, not at their
                 * next request: the epilog must leave a clean PMU. */
                for (Client *o = s->clients; o; o = o->next) {
                        if (o->peer.uid != removed.uid || !o->rights.scoped || strcmp(o->scope.job, removed.job) != 0)
                                continue;
                        for (uint32_t cpu = 0; cpu < s->leases->n_cpus; cpu++)
                                ended += leases_held_by(s->leases, cpu, o);
                        server_end_leases(s, o, "job grant revoked");
                }
                server_audit(s, c, "revoke", "allowed", req->job, NULL, NULL, ended);
        }
        TRY(server_reply_begin(s, req, 3, &pk));
        TRY(pack_key_string(&pk, "job", req->job));
        TRY(pack_key_bool(&pk, "revoked", r == 0));
        TRY(pack_key_uint(&pk, "leases_ended", ended));
        return 0;
}

int server_handle_reset(Server *s, Client *c, const Request *req) {
        uint32_t cpus[PMUGATE_LIST_MAX];
        size_t n = 0, failed = 0;
        char list[512];
        int r;

        if (!c->rights.may_admin)
                return refuse_not_admin(s, c, req);
        if (req->has_cpus) {
                r = check_cpus(s, c, req);
                if (r != 0)
                        return r < 0 ? r : 0;
                memcpy(cpus, req->cpus, req->n_cpus * sizeof(uint32_t));
                n = req->n_cpus;
        } else
                for (uint32_t cpu = 0; cpu < s->machine->n_cpus && n < ELEMENTSOF(cpus); cpu++)
                        if (s->machine->cpus[cpu].online)
                                cpus[n++] = cpu;

        for (size_t i = 0; i < n; i++) {
                const Lease *lease = &s->leases->cpus[cpus[i]];

                for (Client *o = s->clients; lease->owner && o; o = o->next)
                        if (o == lease->owner) {
                                o->preempted = true;
                                cpuset_add(&o->preempted_cpus, cpus[i]);
                        }
                leases_end_cpu(s->leases, cpus[i]);
                pmu_detect(s->pmu, cpus[i]);
                if (pmu_reset_cpu(s->pmu, cpus[i]) < 0)
                        failed++;
        }
        format_cpus(cpus, n, list, sizeof(list));
        server_audit(s, c, "reset", failed ? "partial" : "allowed", NULL, list, NULL, n);
        if (failed > 0) {
                char reason[160];

                (void) snprintf(reason, sizeof(reason), "%zu of %zu CPUs could not be reset completely; see the daemon's log",
                                failed, n);
                return server_reply_error(s, c, req, req->id, PROTO_E_INTERNAL, reason, -1);
        }
        return reply_cpus(s, req, cpus, n);
}

int server_handle_reload(Server *s, Client *c, const Request *req) {
        char reason[400];
        msgpack_packer pk;
        Config config;
        int r;

        if (!c->rights.may_admin)
                return refuse_not_admin(s, c, req);
        r = config_load(s->config_path, false, &config, reason, sizeof(reason));
        if (r < 0) {
                AuditRecord rec = { .event = "reload", .verdict = "refused", .uid = c->peer.uid, .gid = c->peer.gid,
                                    .pid = c->peer.pid, .reason = reason };

                audit_emit(s->audit, &rec);
                log_warning("Configuration reload refused, the old policy stays in force: %s", reason);
                return server_reply_error(s, c, req, req->id, PROTO_E_BAD_CONFIG, reason, -1);
        }
        s->config = config;
        s->grants.max = config.grants_max;
        for (Client *o = s->clients; o; o = o->next)
                policy_rights(&s->config, &o->peer, &o->rights);
        server_audit(s, c, "reload", "allowed", NULL, NULL, s->config_path, 0);
        log_info("Configuration reloaded from %s (mode %s)", s->config_path, access_mode_to_string(config.mode));
        TRY(server_reply_begin(s, req, 1, &pk));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(config.mode)));
        return 0;
}

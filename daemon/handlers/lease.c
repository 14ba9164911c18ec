/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lease and release: the exclusive right to program a CPU's PMU, and its end with a restore
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "error.h"
#include "handlers.h"


void handler_end_leases(Server *s, Session *c, const char *why) {
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
        handler_format_cpus(cpus, n, list, sizeof(list));
        server_audit(s, c, "lease-end", "restored", c->scope.job[0] ? c->scope.job : NULL, list, why, ended);
}

static void on_preempted(const void *owner, uint32_t cpu, void *userdata) {
        Server *s = userdata;

        for (Session *o = s->sessions; o; o = o->next)
                if (o == owner) {
                        char list[16];

                        o->preempted = true;
                        cpuset_add(&o->preempted_cpus, cpu);
                        (void) snprintf(list, sizeof(list), "%" PRIu32, cpu);
                        server_audit(s, o, "lease-preempted", "restored", NULL, list, "a user's lease took the CPU", 1);
                }
}

int handle_lease(Server *s, Session *c, const Request *req) {
        LeaseHolder holder = { .owner = c, .role = c->rights.role, .uid = c->peer.uid, .pid = c->peer.pid };
        char reason[320], list[512];
        int r;

        if (!req->has_cpus || req->n_cpus == 0)
                return server_reply_error(s, c, req, req->id, PROTO_E_BAD_FIELD, "'lease' needs a non-empty 'cpus'", -1);
        r = handler_check_cpus(s, c, req);
        if (r != 0)
                return r < 0 ? r : 0;
        r = handler_resolve_scope(s, c, req);
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
        handler_format_cpus(req->cpus, req->n_cpus, list, sizeof(list));
        if (r > 0) {
                server_audit_denial(s, c, "lease", r, reason, list, NULL);
                return server_reply_error(s, c, req, req->id, r, reason, -1);
        }
        server_audit(s, c, "lease-begin", "allowed", holder.job, list, NULL, req->n_cpus);
        return handler_reply_cpus(s, req, req->cpus, req->n_cpus);
}

int handle_release(Server *s, Session *c, const Request *req) {
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
                handler_format_cpus(held, n, list, sizeof(list));
                server_audit(s, c, "lease-end", "restored", c->scope.job[0] ? c->scope.job : NULL, list, "released", ended);
        }
        return handler_reply_cpus(s, req, held, n);
}

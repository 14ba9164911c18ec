/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lease and release: the exclusive right to program a CPU's PMU, and its end with a restore
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handlers/handlers.h"
#include "pmu/pmu-uncore.h"


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

/* Leases of this uid over all its connections, and how many of cpus it does not hold yet. */
static size_t leases_of_uid(const Server *s, uid_t uid) {
        size_t n = 0;

        for (const Session *o = s->sessions; o; o = o->next)
                if (o->peer.uid == uid)
                        n += cpuset_count(&o->leased);
        return n;
}

/* A CPU another job-mode session holds may be held on a right that is gone (its job's cgroup
 * lost the CPU, say): that is found out now, once per holder, before the request is told the
 * CPU is busy. Other holders' rights change only at a reload, which revalidates them itself. */
static void revalidate_holders(Server *s, Session *c, const Request *req) {
        CpuSet wanted;

        cpuset_clear(&wanted);
        for (size_t i = 0; i < req->n_cpus; i++)
                cpuset_add(&wanted, req->cpus[i]);
        for (Session *o = s->sessions; o; o = o->next) {
                bool holds = false;

                if (o == c || !o->rights.scoped)
                        continue;
                for (unsigned w = 0; w < PMUGATE_CPUS_MAX / 64 && !holds; w++)
                        holds = (o->leased.bits[w] & wanted.bits[w]) != 0;
                if (holds)
                        (void) server_revalidate_session(s, o, "another client asked for its CPUs");
        }
}

/* Who holds a CPU is the holder's business: an admin is told its uid, pid, role and job (the
 * audit always records them), a connection of the same uid its own pid and job, and anyone
 * else, monitors included, only that another user holds it. */
static void busy_reason(Server *s, const Session *c, const LeaseHolder *holder, const Request *req,
                        char *reason, size_t size) {
        const Lease *lease;
        uint32_t cpu;

        if (c->rights.may_admin)
                return;
        lease = leases_blocker(s->leases, holder, req->cpus, req->n_cpus, &cpu);
        if (!lease)
                return;
        if (lease->uid == c->peer.uid)
                (void) snprintf(reason, size, "CPU %" PRIu32 " is leased by another connection of yours "
                                "(pid %d%s%s)", cpu, (int) lease->pid, lease->job[0] ? ", job " : "", lease->job);
        else
                (void) snprintf(reason, size, "CPU %" PRIu32 " is leased by another user (an admin can tell "
                                "by whom: pmugatectl status)", cpu);
}

int handle_lease(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        int r = handler_lease_cpus(s, c, req, ret_refusal);

        if (r != 0)
                return r;
        return handler_reply_cpus(s, req, req->cpus, req->n_cpus);
}

int handler_lease_cpus(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        CpuSet leased;
        LeaseHolder holder = { .owner = c, .role = c->rights.role, .uid = c->peer.uid, .pid = c->peer.pid };
        _cleanup_free_ const char **jobs = NULL;
        char list[512], job_list[320];
        CpuSet acquired;
        int r;

        if (!req->has_cpus || req->n_cpus == 0)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "'lease' needs a non-empty 'cpus'");
        r = handler_check_cpus(s, req, ret_refusal);
        if (r != 0)
                return r;
        r = handler_resolve_scope(s, c, ret_refusal);
        if (r != 0)
                return r;
        if (c->rights.scoped) {
                /* Each CPU's lease records the job whose grant gives it, so that a revoke of
                 * that job ends exactly these leases. */
                jobs = calloc(req->n_cpus, sizeof(*jobs));
                if (!jobs)
                        return -ENOMEM;
                for (size_t i = 0; i < req->n_cpus; i++) {
                        jobs[i] = scope_job_of_cpu(&c->scope, &s->grants, c->peer.uid, req->cpus[i]);
                        if (!jobs[i])
                                return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1,
                                              "CPU %" PRIu32 " is not one of job %s's CPUs", req->cpus[i],
                                              c->scope.job);
                }
                holder.jobs = jobs;
        }

        if (c->peer.uid != 0) {
                size_t held = leases_of_uid(s, c->peer.uid), more = 0;

                for (size_t i = 0; i < req->n_cpus; i++)
                        more += !leases_held_by(s->leases, req->cpus[i], c);
                if (held + more > s->config.leases_per_uid_max)
                        return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                                      "uid %u would hold leases on %zu CPUs; at most %u are allowed per user",
                                      (unsigned) c->peer.uid, held + more, s->config.leases_per_uid_max);
        }

        revalidate_holders(s, c, req);
        /* What holds the PMU may have changed while nobody held these CPUs. */
        for (size_t i = 0; i < req->n_cpus; i++)
                if (!s->leases->cpus[req->cpus[i]].owner)
                        pmu_detect(s->pmu, req->cpus[i]);
        leases_held_cpus(s->leases, &leased);
        pmu_uncore_detect(s->pmu, req->cpus, req->n_cpus, &leased);

        r = leases_acquire(s->leases, &holder, req->cpus, req->n_cpus, on_preempted, s, ret_refusal);
        handler_format_cpus(req->cpus, req->n_cpus, list, sizeof(list));
        if (r > 0) {
                /* The audit records the holder the reply may not name. */
                memcpy(ret_refusal->audit_reason, ret_refusal->reason, sizeof(ret_refusal->audit_reason));
                (void) snprintf(ret_refusal->cpus, sizeof(ret_refusal->cpus), "%s", list);
                if (r == PROTO_E_BUSY)
                        busy_reason(s, c, &holder, req, ret_refusal->reason, sizeof(ret_refusal->reason));
                return r;
        }
        cpuset_clear(&acquired);
        for (size_t i = 0; i < req->n_cpus; i++) {
                cpuset_add(&c->leased, req->cpus[i]);
                cpuset_add(&acquired, req->cpus[i]);
        }
        server_lease_jobs(s, &acquired, job_list, sizeof(job_list));
        server_audit(s, c, "lease-begin", "allowed", job_list[0] ? job_list : NULL, list, NULL, req->n_cpus);
        return 0;
}

int handle_release(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        uint32_t held[256];
        size_t n = 0, ended;
        char list[512], jobs[320];
        CpuSet releasing;

        cpuset_clear(&releasing);
        if (!req->has_cpus || req->n_cpus == 0)
                releasing = c->leased;
        else
                for (size_t i = 0; i < req->n_cpus; i++)
                        if (leases_held_by(s->leases, req->cpus[i], c))
                                cpuset_add(&releasing, req->cpus[i]);
        CPUSET_FOREACH(cpu, &releasing)
                if (n < ELEMENTSOF(held))
                        held[n++] = cpu;
        server_lease_jobs(s, &releasing, jobs, sizeof(jobs));
        ended = leases_release(s->leases, c, req->has_cpus ? req->cpus : NULL, req->has_cpus ? req->n_cpus : 0);
        if (ended > 0) {
                handler_format_cpus(held, n, list, sizeof(list));
                server_audit(s, c, "lease-end", "restored", jobs[0] ? jobs : NULL, list, "released", ended);
        }
        return handler_reply_cpus(s, req, held, n);
}

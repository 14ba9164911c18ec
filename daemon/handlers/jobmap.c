/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * jobmap: which job holds which CPU, for monitoring agents and admins
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "message-pack.h"
#include "wire.h"
#include "handlers/handlers.h"
#include "policy/jobmap.h"

typedef struct JobCpus {
        const char *job;
        uid_t uid;
        CpuSet cpus;
        bool listed;    /* holds a CPU, so it appears in the reply */
        uint32_t index; /* its place in the reply's "jobs" */
} JobCpus;

/* Jobs of leases taken in job mode that no grant (any more) names still hold their CPUs until
 * the lease ends; they are listed too, with the lease's uid. */
static int collect(Server *s, JobCpus **ret, size_t *ret_n) {
        const Leases *l = s->leases;
        _cleanup_free_ JobCpus *jobs = NULL;
        size_t n = 0;

        jobs = calloc(s->grants.n + l->n_cpus + 1, sizeof(JobCpus));
        if (!jobs)
                return -ENOMEM;
        for (size_t i = 0; i < s->grants.n; i++) {
                const Grant *g = &s->grants.items[i];
                int r;

                jobs[n] = (JobCpus) { .job = g->job, .uid = g->uid };
                r = jobmap_grant_cpus(s->cgroup_root, g, &jobs[n].cpus);
                if (r == -ENOMEM)
                        return r;
                /* Not found (the job's cgroup comes after the Prolog) or unreadable: no CPUs yet. */
                n++;
        }
        for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++) {
                const Lease *lease = &l->cpus[cpu];
                size_t k;

                if (!lease->owner || !lease->job[0])
                        continue;
                for (k = 0; k < n; k++)
                        if (strcmp(jobs[k].job, lease->job) == 0)
                                break;
                if (k == n)
                        jobs[n++] = (JobCpus) { .job = lease->job, .uid = lease->uid };
                cpuset_add(&jobs[k].cpus, cpu);
        }
        *ret = TAKE_PTR(jobs);
        *ret_n = n;
        return 0;
}

int handle_jobmap(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        const Machine *m = s->machine;
        const Leases *l = s->leases;
        _cleanup_free_ JobCpus *jobs = NULL;
        size_t n_jobs = 0, n_listed = 0, n_rows = 0;
        msgpack_packer pk;
        int r;

        r = collect(s, &jobs, &n_jobs);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n_jobs; k++) {
                for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                        if (cpuset_has(&jobs[k].cpus, cpu) && m->cpus[cpu].present) {
                                n_rows++;
                                jobs[k].listed = true;
                        }
                if (jobs[k].listed)
                        jobs[k].index = (uint32_t) n_listed++;
        }

        TRY(server_reply_begin(s, req, 5, &pk));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(s->config.mode)));
        TRY(pack_string(&pk, "jobs"));
        TRY_PACK(msgpack_pack_array(&pk, n_listed));
        for (size_t k = 0; k < n_jobs; k++)
                if (jobs[k].listed)
                        TRY(pack_string(&pk, jobs[k].job));
        /* [cpu, index into jobs], by CPU: a CPU two jobs share (oversubscription) has two rows */
        TRY(pack_string(&pk, "cpus"));
        TRY_PACK(msgpack_pack_array(&pk, n_rows));
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                for (size_t k = 0; k < n_jobs; k++)
                        if (jobs[k].listed && cpuset_has(&jobs[k].cpus, cpu) && m->cpus[cpu].present)
                                TRY(pack_tuple(&pk, (const msgpack_object[_JOBMAP_CPU_FIELDS]) {
                                        [JOBMAP_CPU_CPU] = tuple_uint(cpu),
                                        [JOBMAP_CPU_JOB] = tuple_uint(jobs[k].index),
                                }, _JOBMAP_CPU_FIELDS));
        /* [cpu, role]: who programs the CPU's counters now, without saying which uid */
        TRY(pack_string(&pk, "leases"));
        TRY_PACK(msgpack_pack_array(&pk, leases_count(l)));
        for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++)
                if (l->cpus[cpu].owner)
                        TRY(pack_tuple(&pk, (const msgpack_object[_JOBMAP_LEASE_FIELDS]) {
                                [JOBMAP_LEASE_CPU] = tuple_uint(cpu),
                                [JOBMAP_LEASE_ROLE] = tuple_string(role_to_string(l->cpus[cpu].role)),
                        }, _JOBMAP_LEASE_FIELDS));
        /* A uid says who ran what; only admins, or monitors where the policy allows it, see it. */
        TRY(pack_string(&pk, "uids"));
        if (c->rights.may_admin || s->config.jobmap_uids) {
                TRY_PACK(msgpack_pack_array(&pk, n_listed));
                for (size_t k = 0; k < n_jobs; k++)
                        if (jobs[k].listed)
                                TRY_PACK(msgpack_pack_uint32(&pk, jobs[k].uid));
        } else
                TRY_PACK(msgpack_pack_nil(&pk));
        if (s->reply.size > PMUGATE_REPLY_SIZE_MAX)
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "the job map (%zu bytes) is larger than a reply may be (%u)", s->reply.size,
                              PMUGATE_REPLY_SIZE_MAX);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers every handler uses: replies that list CPUs, CPU checks, the caller's job scope, the
 * `revoked` notice. Beneath the handlers and the dispatch table: nothing here calls back up.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "cpulist.h"
#include "error.h"
#include "handlers/handlers.h"
#include "pmu/pmu-uncore.h"


int handler_reply_cpus(Server *s, const Request *req, const uint32_t *cpus, size_t n) {
        msgpack_packer pk;

        TRY(server_reply_begin(s, req, 1, &pk));
        TRY(pack_string(&pk, "cpus"));
        TRY_PACK(msgpack_pack_array(&pk, n));
        for (size_t i = 0; i < n; i++)
                TRY_PACK(msgpack_pack_uint32(&pk, cpus[i]));
        return 0;
}

void handler_format_cpus(const uint32_t *cpus, size_t n, char *buf, size_t size) {
        if (cpulist_format(cpus, n, buf, size) < 0)
                (void) snprintf(buf, size, "%zu CPUs", n);
}


int handler_check_cpus(Server *s, const Request *req, Refusal *ret_refusal) {
        for (size_t i = 0; i < req->n_cpus; i++)
                if (!machine_cpu(s->machine, req->cpus[i]) || !s->machine->cpus[req->cpus[i]].online)
                        return refuse(ret_refusal, PROTO_E_NO_SUCH_CPU, -1,
                                      "CPU %" PRIu32 " does not exist or is offline", req->cpus[i]);
        return 0;
}

/* Said once, like a preemption: the right that allowed these leases is gone (a revoked or
 * replaced grant, a job that lost CPUs, a reload that changed the role), so they ended and
 * their registers were restored. */
int handler_report_revocation(Session *c, Refusal *ret_refusal) {
        const char *word = cpuset_count(&c->revoked_cpus) == 1 ? "CPU" : "CPUs";
        char cpus[128];

        if (cpuset_format(&c->revoked_cpus, cpus, sizeof(cpus)) < 0)
                (void) snprintf(cpus, sizeof(cpus), "several");
        if (cpuset_is_empty(&c->revoked_cpus))
                (void) refuse(ret_refusal, PROTO_E_REVOKED, -1, "revoked: %zu perf handle(s) closed (%s)",
                              c->perf_revoked, c->revoked_why);
        else if (c->perf_revoked > 0)
                (void) refuse(ret_refusal, PROTO_E_REVOKED, -1,
                              "revoked: the leases on %s %s ended and %zu perf handle(s) closed (%s); "
                              "their registers were restored", word, cpus, c->perf_revoked, c->revoked_why);
        else
                (void) refuse(ret_refusal, PROTO_E_REVOKED, -1,
                              "revoked: the leases on %s %s ended (%s); their registers were restored", word,
                              cpus, c->revoked_why);
        c->perf_revoked = 0;
        c->revoked = false;
        cpuset_clear(&c->revoked_cpus);
        c->revoked_why[0] = '\0';
        return PROTO_E_REVOKED;
}

int handler_perf_slot(const Server *s, const Session *c, int *ret_slot, Refusal *ret_refusal) {
        if (!s->perf_driver)
                return refuse(ret_refusal, PROTO_E_UNKNOWN_OP, -1, "this daemon serves no perf events: %s",
                              s->choice.reason[0] ? s->choice.reason : "its perf_event path is not set up");
        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++)
                if (!c->perf[i]) {
                        *ret_slot = (int) i;
                        return 0;
                }
        return refuse(ret_refusal, PROTO_E_LIMIT, -1, "this connection holds %u perf handles, the most allowed; "
                      "perf_close one first", PERF_HANDLES_PER_SESSION_MAX);
}

int handler_resolve_scope(Server *s, Session *c, Refusal *ret_refusal) {
        int r;

        if (!c->rights.scoped)
                return 0;
        r = scope_resolve(s->cgroup_root, &c->peer, &s->grants, &c->scope, ret_refusal);
        /* Whatever the scope is now, the session's leases must fit it: a job's cgroup that lost
         * CPUs takes their leases with it, before this request may use them. */
        (void) session_revalidate_leases(s, c, r == 0 ? &c->scope : NULL,
                                         r == 0 ? "the job's CPUs changed" : ret_refusal->reason);
        /* the notice of leases that just ended comes first; the refusal is told next time */
        if (c->revoked)
                return handler_report_revocation(c, ret_refusal);
        return r;
}

int handler_pack_foreign(msgpack_packer *pk, const Server *s) {
        uint32_t held = 0;

        for (uint32_t u = 0; u < s->machine->n_units; u++)
                held += pmu_uncore_unit_owner(s->pmu, u) != UNCORE_OWNER_NONE;
        TRY(pack_string(pk, "foreign"));
        TRY_PACK(msgpack_pack_map(pk, 6));
        TRY(pack_key_bool(pk, "nmi_watchdog", s->machine->nmi_watchdog));
        TRY(pack_key_uint(pk, "fixed_mask", pmu_foreign_fixed_union(s->pmu)));
        TRY(pack_key_uint(pk, "gp_mask", pmu_foreign_gp_union(s->pmu)));
        TRY(pack_key_uint(pk, "l3_mask", pmu_uncore_l3_union(s->pmu)));
        TRY(pack_key_uint(pk, "df_mask", pmu_uncore_df_union(s->pmu)));
        TRY(pack_string(pk, "units"));
        TRY_PACK(msgpack_pack_array(pk, held));
        for (uint32_t u = 0; u < s->machine->n_units; u++)
                if (pmu_uncore_unit_owner(s->pmu, u) != UNCORE_OWNER_NONE)
                        TRY_PACK(msgpack_pack_uint32(pk, u));
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reset and reload: an admin puts CPUs back to a clean PMU, or applies an edited policy
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "handlers/handlers.h"
#include "log.h"
#include "pmu/pmu-uncore.h"


int handle_reset(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        CpuSet leased;
        _cleanup_free_ uint32_t *cpus = NULL;
        size_t n = 0, failed = 0;
        char list[512];
        int r;

        /* Every CPU the machine has, up to PMUGATE_CPUS_MAX, when the request names none. */
        cpus = calloc(MAX(s->machine->n_cpus, 1U), sizeof(uint32_t));
        if (!cpus)
                return -ENOMEM;
        if (req->has_cpus) {
                r = handler_check_cpus(s, req, ret_refusal);
                if (r != 0)
                        return r;
                for (size_t i = 0; i < req->n_cpus && n < s->machine->n_cpus; i++)
                        cpus[n++] = req->cpus[i];
        } else
                for (uint32_t cpu = 0; cpu < s->machine->n_cpus; cpu++)
                        if (s->machine->cpus[cpu].online)
                                cpus[n++] = cpu;

        for (size_t i = 0; i < n; i++) {
                const Lease *lease = &s->leases->cpus[cpus[i]];

                for (Session *o = s->sessions; lease->owner && o; o = o->next)
                        if (o == lease->owner) {
                                o->preempted = true;
                                cpuset_add(&o->preempted_cpus, cpus[i]);
                        }
                leases_end_cpu(s->leases, cpus[i]);
                /* A journal a failed restore kept is tried again first: the reset below would
                 * otherwise leave its original values to be put back at the next start. */
                r = leases_retry_kept(s->leases, cpus[i]);
                pmu_detect(s->pmu, cpus[i]);
                /* Through perf the kernel programs the counters: writing them would take them
                 * from under its events (or fail, under lockdown). The leases end all the same. */
                if (s->choice.counters != BACKEND_COUNTERS_MSR) {
                        failed += r < 0;
                        continue;
                }
                if (pmu_reset_cpu(s->pmu, cpus[i]) < 0 || r < 0)
                        failed++;
        }
        /* The uncore of CCXs and packages nobody leases any more, read again. */
        leases_held_cpus(s->leases, &leased);
        pmu_uncore_detect(s->pmu, cpus, n, &leased);
        handler_format_cpus(cpus, n, list, sizeof(list));
        server_audit(s, c, "reset", failed ? "partial" : "allowed", NULL, list, NULL, n);
        if (failed > 0)
                return refuse(ret_refusal, PROTO_E_INTERNAL, -1,
                              "%zu of %zu CPUs could not be reset completely; see the daemon's log", failed, n);
        return handler_reply_cpus(s, req, cpus, n);
}

int handle_reload(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        ReloadCaller caller = { .uid = c->peer.uid, .gid = c->peer.gid, .pid = c->peer.pid, .via = "reload request" };
        char reason[PMUGATE_REASON_MAX];
        msgpack_packer pk;
        int r;

        /* A configuration refused is the caller's error, whatever errno it failed with; the
         * reason says what and where. */
        r = server_reload(s, &caller, reason, sizeof(reason));
        if (r < 0)
                return refuse(ret_refusal, PROTO_E_BAD_CONFIG, -1, "%s", reason);
        TRY(server_reply_begin(s, req, 2, &pk));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(s->config.mode)));
        TRY(pack_key_string(&pk, "config", s->config_path));
        return 0;
}

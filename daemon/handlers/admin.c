/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reset and reload: an admin puts CPUs back to a clean PMU, or applies an edited policy
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "handlers.h"
#include "log.h"


int handle_reset(Server *s, Session *c, const Request *req) {
        uint32_t cpus[PMUGATE_LIST_MAX];
        size_t n = 0, failed = 0;
        char list[512];
        int r;

        if (req->has_cpus) {
                r = handler_check_cpus(s, c, req);
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

                for (Session *o = s->sessions; lease->owner && o; o = o->next)
                        if (o == lease->owner) {
                                o->preempted = true;
                                cpuset_add(&o->preempted_cpus, cpus[i]);
                        }
                leases_end_cpu(s->leases, cpus[i]);
                pmu_detect(s->pmu, cpus[i]);
                if (pmu_reset_cpu(s->pmu, cpus[i]) < 0)
                        failed++;
        }
        handler_format_cpus(cpus, n, list, sizeof(list));
        server_audit(s, c, "reset", failed ? "partial" : "allowed", NULL, list, NULL, n);
        if (failed > 0) {
                char reason[160];

                (void) snprintf(reason, sizeof(reason), "%zu of %zu CPUs could not be reset completely; see the daemon's log",
                                failed, n);
                return server_reply_error(s, c, req, req->id, PROTO_E_INTERNAL, reason, -1);
        }
        return handler_reply_cpus(s, req, cpus, n);
}

int handle_reload(Server *s, Session *c, const Request *req) {
        ReloadCaller caller = { .uid = c->peer.uid, .gid = c->peer.gid, .pid = c->peer.pid, .via = "reload request" };
        char reason[400];
        msgpack_packer pk;
        int r;

        r = server_reload(s, &caller, reason, sizeof(reason));
        if (r < 0)
                return server_reply_error(s, c, req, req->id, PROTO_E_BAD_CONFIG, reason, -1);
        TRY(server_reply_begin(s, req, 1, &pk));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(s->config.mode)));
        return 0;
}

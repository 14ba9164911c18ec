/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Request handlers: hello, batch, status. Replies are packed into the server's shared buffer;
 * docs/PROTOCOL.md documents every key.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "build-config.h"
#include "cpulist.h"
#include "error.h"
#include "log.h"
#include "server.h"

#define PERF_CAPABILITIES_MSR 0x345U

#define TRY(expr)                               \
        do {                                    \
                if ((expr) < 0)                 \
                        return -ENOMEM;         \
        } while (0)

static msgpack_packer reply_packer(Server *s) {
        msgpack_packer pk;

        msgpack_sbuffer_clear(&s->reply);
        msgpack_packer_init(&pk, &s->reply, msgpack_sbuffer_write);
        return pk;
}

static uint32_t first_online_cpu(const Machine *m) {
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                if (m->cpus[cpu].online)
                        return cpu;
        return 0;
}

static int pack_cpu_model(msgpack_packer *pk, const Machine *m) {
        const CpuModel *model = m->cpu_model;

        TRY(pack_string(pk, "cpu"));
        TRY(msgpack_pack_map(pk, 7));
        TRY(pack_key_string(pk, "vendor", m->vendor));
        TRY(pack_key_uint(pk, "family", m->family));
        TRY(pack_key_uint(pk, "model", m->model));
        TRY(pack_key_uint(pk, "stepping", m->stepping));
        TRY(pack_key_string(pk, "model_name", m->model_name));
        TRY(pack_key_string(pk, "key", model ? model->key : ""));
        TRY(pack_key_string(pk, "name", model ? model->name : ""));
        return 0;
}

static int pack_pmu(msgpack_packer *pk, Server *s) {
        const CpuModel *model = s->machine->cpu_model;
        uint64_t caps = 0;
        bool have_caps;

        TRY(pack_string(pk, "pmu"));
        if (!model)
                return msgpack_pack_nil(pk) < 0 ? -ENOMEM : 0;
        have_caps = backend_msr_read(s->backend, first_online_cpu(s->machine), PERF_CAPABILITIES_MSR, &caps) == 0;
        TRY(msgpack_pack_map(pk, 7));
        TRY(pack_key_uint(pk, "version", model->pmu_version));
        TRY(pack_key_uint(pk, "gp_counters", machine_gp_counters(s->machine)));
        TRY(pack_key_uint(pk, "fixed_counters", model->fixed_counters));
        TRY(pack_key_uint(pk, "counter_width", model->counter_width));
        TRY(pack_key_uint(pk, "perf_metrics", model->perf_metrics));
        TRY(pack_key_uint(pk, "slots_width", model->slots_width));
        TRY(pack_string(pk, "perf_capabilities"));
        TRY(have_caps ? msgpack_pack_uint64(pk, caps) : msgpack_pack_nil(pk));
        return 0;
}

static int pack_cpus(msgpack_packer *pk, const Machine *m) {
        uint32_t n = 0;

        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                n += m->cpus[cpu].present;
        TRY(pack_string(pk, "cpus"));
        TRY(msgpack_pack_array(pk, n));
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                const MachineCpu *c = &m->cpus[cpu];

                if (!c->present)
                        continue;
                /* [cpu, package, die, core, thread, online]; topology is -1 for offline CPUs */
                TRY(msgpack_pack_array(pk, 6));
                TRY(msgpack_pack_uint32(pk, cpu));
                TRY(msgpack_pack_int32(pk, c->package));
                TRY(msgpack_pack_int32(pk, c->die));
                TRY(msgpack_pack_int32(pk, c->core));
                TRY(msgpack_pack_uint32(pk, c->thread));
                TRY(c->online ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
        }
        return 0;
}

static int pack_units(msgpack_packer *pk, const Machine *m) {
        TRY(pack_string(pk, "units"));
        TRY(msgpack_pack_array(pk, m->n_units));
        for (uint32_t i = 0; i < m->n_units; i++) {
                const MachineUnit *u = &m->units[i];

                /* [index, bdf, vendor, device, package] */
                TRY(msgpack_pack_array(pk, 5));
                TRY(msgpack_pack_uint32(pk, i));
                TRY(pack_string(pk, u->bdf));
                TRY(msgpack_pack_uint16(pk, u->vendor));
                TRY(msgpack_pack_uint16(pk, u->device));
                TRY(msgpack_pack_int32(pk, u->package));
        }
        return 0;
}

static int pack_registers(msgpack_packer *pk, const Allowlist *a) {
        TRY(pack_string(pk, "registers"));
        TRY(msgpack_pack_array(pk, a->n_msr + a->n_pci));
        for (size_t i = 0; i < a->n_msr + a->n_pci; i++) {
                const AllowEntry *e = i < a->n_msr ? &a->msr[i] : &a->pci[i - a->n_msr];

                /* [kind, first, last, width, write_mask, scope, class, name, pci_vendor, pci_device] */
                TRY(msgpack_pack_array(pk, 10));
                TRY(pack_string(pk, e->pci ? "pci" : "msr"));
                TRY(msgpack_pack_uint32(pk, e->first));
                TRY(msgpack_pack_uint32(pk, e->last));
                TRY(msgpack_pack_uint8(pk, e->width));
                TRY(msgpack_pack_uint64(pk, e->write_mask));
                TRY(pack_string(pk, reg_scope_to_string(e->scope)));
                TRY(pack_string(pk, e->cls));
                TRY(pack_string(pk, e->name));
                TRY(msgpack_pack_uint16(pk, e->pci_vendor));
                TRY(msgpack_pack_uint16(pk, e->pci_device));
        }
        return 0;
}

static int pack_scope(msgpack_packer *pk, Server *s, Client *c) {
        char reason[320] = "";
        uint32_t n = 0;

        TRY(pack_string(pk, "scope"));
        if (!c->rights.scoped)
                return msgpack_pack_nil(pk) < 0 ? -ENOMEM : 0;
        /* hello must answer even without a grant, so the refusal becomes part of the reply. */
        if (scope_resolve(s->cgroup_root, &c->peer, &s->grants, &c->scope, reason, sizeof(reason)) != 0) {
                TRY(msgpack_pack_map(pk, 1));
                return pack_key_string(pk, "reason", reason);
        }
        CPUSET_FOREACH(cpu, &c->scope.cpus)
                n += cpu < s->machine->n_cpus;
        TRY(msgpack_pack_map(pk, 2));
        TRY(pack_key_string(pk, "job", c->scope.job));
        TRY(pack_string(pk, "cpus"));
        TRY(msgpack_pack_array(pk, n));
        CPUSET_FOREACH(cpu, &c->scope.cpus)
                if (cpu < s->machine->n_cpus)
                        TRY(msgpack_pack_uint32(pk, cpu));
        return 0;
}

static int pack_caller(msgpack_packer *pk, Server *s, Client *c) {
        TRY(pack_string(pk, "caller"));
        TRY(msgpack_pack_map(pk, 9));
        TRY(pack_key_uint(pk, "uid", c->peer.uid));
        TRY(pack_key_uint(pk, "gid", c->peer.gid));
        TRY(pack_key_uint(pk, "pid", (uint64_t) c->peer.pid));
        TRY(pack_key_string(pk, "role", role_to_string(c->rights.role)));
        TRY(pack_key_bool(pk, "read", c->rights.may_read));
        TRY(pack_key_bool(pk, "write", c->rights.may_write));
        TRY(pack_key_bool(pk, "admin", c->rights.may_admin));
        TRY(pack_key_string(pk, "reason", c->rights.reason));
        return pack_scope(pk, s, c);
}

int server_handle_hello(Server *s, Client *c, const Request *req) {
        msgpack_packer pk = reply_packer(s);
        int r;

        TRY(reply_pack_begin(&pk, req->id, 13));
        TRY(pack_key_string(&pk, "server", "pmugated " PMUGATE_VERSION));
        TRY(pack_key_uint(&pk, "protocol", PMUGATE_PROTOCOL_VERSION));
        TRY(pack_key_string(&pk, "backend", s->backend->vtable->name));
        TRY(pack_key_bool(&pk, "simulated", s->backend->simulated));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(s->config.mode)));
        r = pack_cpu_model(&pk, s->machine);
        if (r >= 0)
                r = pack_pmu(&pk, s);
        if (r >= 0)
                r = pack_cpus(&pk, s->machine);
        if (r >= 0)
                r = pack_units(&pk, s->machine);
        if (r >= 0)
                r = pack_registers(&pk, s->allowlist);
        if (r < 0)
                return r;
        TRY(pack_string(&pk, "foreign"));
        TRY(msgpack_pack_map(&pk, 3));
        TRY(pack_key_bool(&pk, "nmi_watchdog", s->machine->nmi_watchdog));
        TRY(pack_key_uint(&pk, "fixed_mask", pmu_foreign_fixed_union(s->pmu)));
        TRY(pack_key_uint(&pk, "gp_mask", pmu_foreign_gp_union(s->pmu)));
        r = pack_caller(&pk, s, c);
        if (r < 0)
                return r;
        TRY(pack_string(&pk, "limits"));
        TRY(msgpack_pack_map(&pk, 2));
        TRY(pack_key_uint(&pk, "request_size", PMUGATE_REQUEST_SIZE_MAX));
        TRY(pack_key_uint(&pk, "ops_per_batch", PMUGATE_OPS_PER_BATCH_MAX));
        return 0;
}

/* Summaries for audit records: the CPUs and distinct registers of a batch, truncated. */
static void summarize_ops(const RegOp *ops, size_t n, bool writes_only, char *cpus, size_t cpus_size, char *regs,
                          size_t regs_size) {
        uint32_t cpu_list[64] = {}, reg_list[16] = {};
        size_t n_cpus = 0, n_regs = 0, used = 0;

        for (size_t i = 0; i < n; i++) {
                bool seen = false;

                if (writes_only && !reg_op_is_write(&ops[i]))
                        continue;
                for (size_t j = 0; j < n_cpus && !seen; j++)
                        seen = cpu_list[j] == ops[i].target;
                if (!seen && n_cpus < ELEMENTSOF(cpu_list) && !reg_op_is_pci(&ops[i]))
                        cpu_list[n_cpus++] = ops[i].target;
                seen = false;
                for (size_t j = 0; j < n_regs && !seen; j++)
                        seen = reg_list[j] == ops[i].reg;
                if (!seen && n_regs < ELEMENTSOF(reg_list))
                        reg_list[n_regs++] = ops[i].reg;
        }
        if (cpulist_format(cpu_list, n_cpus, cpus, cpus_size) < 0)
                (void) snprintf(cpus, cpus_size, "many");
        regs[0] = '\0';
        for (size_t j = 0; j < n_regs; j++) {
                int k = snprintf(regs + used, regs_size - used, "%s0x%" PRIx32, j ? "," : "", reg_list[j]);

                if (k < 0 || (size_t) k >= regs_size - used)
                        break;
                used += (size_t) k;
        }
}

static void audit_writes(Server *s, const Client *c, const RegOp *ops, size_t n, const char *job) {
        size_t writes = 0;
        char cpus[256], regs[200];
        AuditRecord rec = {
                .event = "write",
                .verdict = "allowed",
                .uid = c->peer.uid,
                .gid = c->peer.gid,
                .pid = c->peer.pid,
                .op = "batch",
                .cpus = cpus,
                .regs = regs,
                .job = job,
        };

        for (size_t i = 0; i < n; i++)
                writes += reg_op_is_write(&ops[i]);
        if (writes == 0)
                return;
        summarize_ops(ops, n, true, cpus, sizeof(cpus), regs, sizeof(regs));
        rec.count = writes;
        audit_emit(s->audit, &rec);
}

int server_handle_batch(Server *s, Client *c, const Request *req) {
        BatchContext ctx = {
                .machine = s->machine,
                .allowlist = s->allowlist,
                .rights = &c->rights,
                .scope = c->rights.scoped ? &c->scope : NULL,
                .package_read_shared = s->config.package_read_shared,
                .leases = s->leases,
                .owner = c,
                .pmu = s->pmu,
        };
        msgpack_packer pk;
        BatchRefusal refusal;
        int r;

        /* A user without any right learns that first; the job's scope is only looked up
         * for callers it applies to. */
        if (c->rights.may_read) {
                r = server_resolve_scope(s, c, req);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        r = batch_check(&ctx, req->ops, req->n_ops, s->entries, &refusal);
        if (r > 0) {
                char cpus[256] = "", regs[200] = "";

                /* A denial storm is rate limited; do not describe records that are dropped. */
                if (audit_would_emit(s->audit, c->peer.uid))
                        summarize_ops(&req->ops[refusal.op_index], 1, false, cpus, sizeof(cpus), regs, sizeof(regs));
                server_audit_denial(s, c, "batch", refusal.code, refusal.reason, cpus, regs);
                return server_reply_error(s, c, req, req->id, refusal.code, refusal.reason, (int64_t) refusal.op_index);
        }

        batch_execute(&ctx, s->backend, req->ops, s->entries, req->n_ops, s->status, s->values);
        s->counters.ops += req->n_ops;
        audit_writes(s, c, req->ops, req->n_ops, c->rights.scoped ? c->scope.job : NULL);

        pk = reply_packer(s);
        TRY(reply_pack_begin(&pk, req->id, 2));
        TRY(pack_string(&pk, "status"));
        TRY(pack_int32_array(&s->reply, s->status, req->n_ops));
        TRY(pack_string(&pk, "values"));
        TRY(pack_uint64_array(&s->reply, s->values, req->n_ops));
        return 0;
}

static int pack_grants_and_leases(msgpack_packer *pk, Server *s) {
        _cleanup_free_ char *list = malloc(CPUSET_FORMAT_MAX);
        const Leases *l = s->leases;

        if (!list)
                return -ENOMEM;
        TRY(pack_string(pk, "grants"));
        TRY(msgpack_pack_array(pk, s->grants.n));
        for (size_t i = 0; i < s->grants.n; i++) {
                const Grant *g = &s->grants.items[i];

                if (!g->has_cpus || cpuset_format(&g->cpus, list, CPUSET_FORMAT_MAX) < 0)
                        list[0] = '\0';
                /* [job, uid, cpus ("" when the job's cgroup decides)] */
                TRY(msgpack_pack_array(pk, 3));
                TRY(pack_string(pk, g->job));
                TRY(msgpack_pack_uint32(pk, g->uid));
                TRY(pack_string(pk, list));
        }
        TRY(pack_string(pk, "leases"));
        TRY(msgpack_pack_array(pk, leases_count(l)));
        for (uint32_t cpu = 0; cpu < l->n_cpus; cpu++) {
                const Lease *lease = &l->cpus[cpu];

                if (!lease->owner)
                        continue;
                /* [cpu, uid, pid, role, job, registers journaled] */
                TRY(msgpack_pack_array(pk, 6));
                TRY(msgpack_pack_uint32(pk, cpu));
                TRY(msgpack_pack_uint32(pk, lease->uid));
                TRY(msgpack_pack_int32(pk, lease->pid));
                TRY(pack_string(pk, role_to_string(lease->role)));
                TRY(pack_string(pk, lease->job));
                TRY(msgpack_pack_uint64(pk, lease->n_journal));
        }
        return 0;
}

int server_handle_status(Server *s, Client *c, const Request *req) {
        msgpack_packer pk;
        AuditStats as;
        int r;
        static const char *const sinks[] = { "journal", "stderr", "file" };

        if (!c->rights.may_admin) {
                char reason[128];

                (void) snprintf(reason, sizeof(reason), "status needs root or a group in admin_groups; uid %u is neither",
                                (unsigned) c->peer.uid);
                return server_reply_error(s, c, req, req->id, PROTO_E_NOT_AUTHORIZED, reason, -1);
        }
        audit_stats(s->audit, &as);

        pk = reply_packer(s);
        TRY(reply_pack_begin(&pk, req->id, 9));
        TRY(pack_key_string(&pk, "server", "pmugated " PMUGATE_VERSION));
        TRY(pack_key_string(&pk, "backend", s->backend->vtable->name));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(s->config.mode)));
        r = pack_grants_and_leases(&pk, s);
        if (r < 0)
                return r;
        TRY(pack_string(&pk, "foreign"));
        TRY(msgpack_pack_map(&pk, 3));
        TRY(pack_key_bool(&pk, "nmi_watchdog", s->machine->nmi_watchdog));
        TRY(pack_key_uint(&pk, "fixed_mask", pmu_foreign_fixed_union(s->pmu)));
        TRY(pack_key_uint(&pk, "gp_mask", pmu_foreign_gp_union(s->pmu)));
        TRY(pack_string(&pk, "clients"));
        TRY(msgpack_pack_array(&pk, s->n_clients));
        for (const Client *o = s->clients; o; o = o->next) {
                /* [uid, pid, role, requests] */
                TRY(msgpack_pack_array(&pk, 4));
                TRY(msgpack_pack_uint32(&pk, o->peer.uid));
                TRY(msgpack_pack_int32(&pk, o->peer.pid));
                TRY(pack_string(&pk, role_to_string(o->rights.role)));
                TRY(msgpack_pack_uint64(&pk, o->requests));
        }
        TRY(pack_string(&pk, "counters"));
        TRY(msgpack_pack_map(&pk, 6));
        TRY(pack_key_uint(&pk, "connections", s->counters.connections));
        TRY(pack_key_uint(&pk, "refused_connections", s->counters.refused_connections));
        TRY(pack_key_uint(&pk, "requests", s->counters.requests));
        TRY(pack_key_uint(&pk, "ops", s->counters.ops));
        TRY(pack_key_uint(&pk, "denials", s->counters.denials));
        TRY(pack_key_uint(&pk, "protocol_errors", s->counters.protocol_errors));
        TRY(pack_string(&pk, "audit"));
        TRY(msgpack_pack_map(&pk, 3));
        TRY(pack_key_string(&pk, "sink", sinks[as.sink]));
        TRY(pack_key_uint(&pk, "emitted", as.emitted));
        TRY(pack_key_uint(&pk, "suppressed", as.suppressed));
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hello: what this daemon serves and what the caller may do with it (docs/PROTOCOL.md)
 */
#include <errno.h>
#include <stdio.h>

#include "build-config.h"
#include "error.h"
#include "handlers/handlers.h"
#include "message-pack.h"
#include "server/perf-sessions.h"
#include "wire.h"

#define PERF_CAPABILITIES_MSR 0x345U


static uint32_t first_online_cpu(const Machine *m) {
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                if (m->cpus[cpu].online)
                        return cpu;
        return 0;
}

static int pack_cpu_model(msgpack_packer *pk, const Machine *m) {
        const CpuModel *model = m->cpu_model;

        TRY(pack_string(pk, "cpu"));
        TRY_PACK(msgpack_pack_map(pk, 7));
        TRY(pack_key_string(pk, "vendor", m->vendor));
        TRY(pack_key_uint(pk, "family", m->family));
        TRY(pack_key_uint(pk, "model", m->model));
        TRY(pack_key_uint(pk, "stepping", m->stepping));
        TRY(pack_key_string(pk, "model_name", m->model_name));
        TRY(pack_key_string(pk, "key", model ? model->key : ""));
        TRY(pack_key_string(pk, "name", model ? model->name : ""));
        return 0;
}

/* TopDown slots per cycle: what the kernel says of its core PMU (ARM's caps/slots, PMMIR_EL1.SLOTS)
 * where it says it, else the model's. */
static unsigned slots_width(const Server *s) {
        const PerfPmu *core = s->perf_catalog ? perf_catalog_core(s->perf_catalog) : NULL;

        return core && core->slots > 0 ? core->slots : s->machine->cpu_model->slots_width;
}

static int pack_pmu(msgpack_packer *pk, Server *s) {
        const CpuModel *model = s->machine->cpu_model;
        uint64_t caps = 0;
        bool have_caps;

        TRY(pack_string(pk, "pmu"));
        if (!model)
                return msgpack_pack_nil(pk) < 0 ? -ENOMEM : 0;
        have_caps = !cpu_model_is_amd(model) && !cpu_model_is_arm(model) &&
                    backend_msr_read(s->backend, first_online_cpu(s->machine), PERF_CAPABILITIES_MSR,
                                     &caps) == 0;
        TRY_PACK(msgpack_pack_map(pk, cpu_model_is_amd(model) ? 12 : 7));
        TRY(pack_key_uint(pk, "version", model->pmu_version));
        TRY(pack_key_uint(pk, "gp_counters", machine_gp_counters(s->machine)));
        TRY(pack_key_uint(pk, "fixed_counters", model->fixed_counters));
        TRY(pack_key_uint(pk, "counter_width", model->counter_width));
        TRY(pack_key_uint(pk, "perf_metrics", model->perf_metrics));
        TRY(pack_key_uint(pk, "slots_width", slots_width(s)));
        TRY(pack_string(pk, "perf_capabilities"));
        TRY_PACK(have_caps ? msgpack_pack_uint64(pk, caps) : msgpack_pack_nil(pk));
        if (cpu_model_is_amd(model)) {
                /* CPUID leaf 0x80000022 as discovery read it (or the model's defaults) */
                TRY(pack_string(pk, "perfmon_v2"));
                TRY_PACK(s->machine->perfmon_v2 ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
                TRY(pack_key_uint(pk, "l3_counters", s->machine->l3_counters));
                TRY(pack_key_uint(pk, "df_counters", s->machine->df_counters));
                TRY(pack_key_uint(pk, "umc_counters", s->machine->umc_counters));
                TRY(pack_string(pk, "cpuid"));
                TRY_PACK(s->machine->cpuid_read ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
        }
        return 0;
}

static int pack_cpus(msgpack_packer *pk, const Machine *m) {
        uint32_t n = 0;

        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                n += m->cpus[cpu].present;
        TRY(pack_string(pk, "cpus"));
        TRY_PACK(msgpack_pack_array(pk, n));
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                const MachineCpu *c = &m->cpus[cpu];

                if (!c->present)
                        continue;
                TRY(pack_tuple(pk, (const msgpack_object[_HELLO_CPU_FIELDS]) {
                        [HELLO_CPU_CPU] = tuple_uint(cpu),
                        [HELLO_CPU_PACKAGE] = tuple_int(c->package),
                        [HELLO_CPU_DIE] = tuple_int(c->die),
                        [HELLO_CPU_CORE] = tuple_int(c->core),
                        [HELLO_CPU_THREAD] = tuple_uint(c->thread),
                        [HELLO_CPU_ONLINE] = tuple_bool(c->online),
                        [HELLO_CPU_CCX] = tuple_int(c->ccx),
                }, _HELLO_CPU_FIELDS));
        }
        return 0;
}

static int pack_units(msgpack_packer *pk, const Machine *m) {
        TRY(pack_string(pk, "units"));
        TRY_PACK(msgpack_pack_array(pk, m->n_units));
        for (uint32_t i = 0; i < m->n_units; i++) {
                const MachineUnit *u = &m->units[i];

                TRY(pack_tuple(pk, (const msgpack_object[_HELLO_UNIT_FIELDS]) {
                        [HELLO_UNIT_INDEX] = tuple_uint(i),
                        [HELLO_UNIT_BDF] = tuple_string(u->bdf),
                        [HELLO_UNIT_VENDOR] = tuple_uint(u->vendor),
                        [HELLO_UNIT_DEVICE] = tuple_uint(u->device),
                        [HELLO_UNIT_PACKAGE] = tuple_int(u->package),
                }, _HELLO_UNIT_FIELDS));
        }
        return 0;
}

static int pack_counters(msgpack_packer *pk, const Machine *m) {
        TRY(pack_string(pk, "counters"));
        TRY_PACK(msgpack_pack_array(pk, m->n_counters));
        for (uint32_t i = 0; i < m->n_counters; i++) {
                const MachineCounter *c = &m->counters[i];

                TRY(pack_tuple(pk, (const msgpack_object[_HELLO_COUNTER_FIELDS]) {
                        [HELLO_COUNTER_INDEX] = tuple_uint(i),
                        [HELLO_COUNTER_NAME] = tuple_string(c->name),
                        [HELLO_COUNTER_PACKAGE] = tuple_int(c->package),
                        [HELLO_COUNTER_WIDTH] = tuple_uint(c->width),
                        [HELLO_COUNTER_SCALE] = tuple_double(c->scale),
                        [HELLO_COUNTER_UNIT] = tuple_string(c->unit),
                        [HELLO_COUNTER_CLASS] = tuple_string(c->cls),
                        [HELLO_COUNTER_ERROR] = tuple_string(c->error),
                }, _HELLO_COUNTER_FIELDS));
        }
        return 0;
}

static int pack_registers(msgpack_packer *pk, const Allowlist *a) {
        TRY(pack_string(pk, "registers"));
        TRY_PACK(msgpack_pack_array(pk, a->n_msr + a->n_pci));
        for (size_t i = 0; i < a->n_msr + a->n_pci; i++) {
                const AllowEntry *e = i < a->n_msr ? &a->msr[i] : &a->pci[i - a->n_msr];

                TRY(pack_tuple(pk, (const msgpack_object[_HELLO_REGISTER_FIELDS]) {
                        [HELLO_REGISTER_KIND] =
                                tuple_string(e->pci ? WIRE_REGISTER_KIND_PCI : WIRE_REGISTER_KIND_MSR),
                        [HELLO_REGISTER_FIRST] = tuple_uint(e->first),
                        [HELLO_REGISTER_LAST] = tuple_uint(e->last),
                        [HELLO_REGISTER_WIDTH] = tuple_uint(e->width),
                        [HELLO_REGISTER_WRITE_MASK] = tuple_uint(e->write_mask),
                        [HELLO_REGISTER_SCOPE] = tuple_string(reg_scope_to_string(e->scope)),
                        [HELLO_REGISTER_CLASS] = tuple_string(e->cls),
                        [HELLO_REGISTER_NAME] = tuple_string(e->name),
                        [HELLO_REGISTER_PCI_VENDOR] = tuple_uint(e->pci_vendor),
                        [HELLO_REGISTER_PCI_DEVICE] = tuple_uint(e->pci_device),
                }, _HELLO_REGISTER_FIELDS));
        }
        return 0;
}

static int pack_scope(msgpack_packer *pk, Server *s, Session *c) {
        Refusal no_scope;
        uint32_t n = 0;
        int r;

        TRY(pack_string(pk, "scope"));
        if (!c->rights.scoped)
                return msgpack_pack_nil(pk) < 0 ? -ENOMEM : 0;
        /* hello must answer even without a grant, so the refusal becomes part of the reply.
         * The leases must fit the scope it found; a revocation is told at the next request
         * that acts on the PMU. */
        refusal_clear(&no_scope);
        r = scope_resolve(s->cgroup_root, &c->peer, &s->grants, &c->scope, &no_scope);
        (void) session_revalidate_leases(s, c, r == 0 ? &c->scope : NULL,
                                         r == 0 ? "the job's CPUs changed" : no_scope.reason);
        if (r != 0) {
                TRY_PACK(msgpack_pack_map(pk, 1));
                return pack_key_string(pk, "reason", no_scope.reason);
        }
        CPUSET_FOREACH(cpu, &c->scope.cpus)
                n += cpu < s->machine->n_cpus;
        TRY_PACK(msgpack_pack_map(pk, 2));
        TRY(pack_key_string(pk, "job", c->scope.job));
        TRY(pack_string(pk, "cpus"));
        TRY_PACK(msgpack_pack_array(pk, n));
        CPUSET_FOREACH(cpu, &c->scope.cpus)
                if (cpu < s->machine->n_cpus)
                        TRY_PACK(msgpack_pack_uint32(pk, cpu));
        return 0;
}

/* How counters are programmed (backend/backend-choice.h). Not "counters": that key has been
 * the package counters since protocol 1. */
static int pack_counting(msgpack_packer *pk, const Server *s) {
        TRY(pack_string(pk, "counting"));
        TRY_PACK(msgpack_pack_map(pk, 4));
        TRY(pack_key_string(pk, "via", backend_counters_to_string(s->choice.counters)));
        TRY(pack_key_string(pk, "wanted", backend_wanted_to_string(s->choice.wanted)));
        TRY(pack_key_string(pk, "reason", s->choice.reason));
        return pack_key_bool(pk, "msr_reads", s->choice.msr_reads);
}

/* The PMUs perf_open may name, as this machine's kernel (or the simulator) shows them. */
static int pack_perf_pmus(msgpack_packer *pk, const Server *s) {
        const PerfCatalog *cat = s->perf_driver ? s->perf_catalog : NULL;
        size_t n = cat ? cat->n_pmus : 0;

        TRY(pack_string(pk, "pmus"));
        TRY_PACK(msgpack_pack_array(pk, n));
        for (size_t i = 0; i < n; i++) {
                const PerfPmu *p = &cat->pmus[i];

                TRY(pack_tuple(pk, (const msgpack_object[_HELLO_PMU_FIELDS]) {
                        [HELLO_PMU_NAME] = tuple_string(p->name),
                        [HELLO_PMU_KIND] = tuple_string(perf_pmu_kind_to_string(p->kind)),
                        [HELLO_PMU_TYPE] = tuple_uint(p->type),
                        [HELLO_PMU_PACKAGE] = tuple_int(p->package),
                        [HELLO_PMU_CPU] = tuple_int(p->cpu),
                        [HELLO_PMU_TOPDOWN] = tuple_uint(p->topdown),
                }, _HELLO_PMU_FIELDS));
        }
        return 0;
}

static int pack_caller(msgpack_packer *pk, Server *s, Session *c) {
        TRY(pack_string(pk, "caller"));
        TRY_PACK(msgpack_pack_map(pk, 9));
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

/* "sim_events": the encodings a simulated PMU counts, nil on hardware (docs/PROTOCOL.md). */
static int pack_sim_events(msgpack_packer *pk, Server *s) {
        uint64_t events[PMUGATE_SIM_EVENTS_MAX];
        size_t n;

        TRY(pack_string(pk, "sim_events"));
        if (!s->backend->vtable->modelled_events) {
                TRY_PACK(msgpack_pack_nil(pk));
                return 0;
        }
        n = s->backend->vtable->modelled_events(s->backend, events, ELEMENTSOF(events));
        if (n > ELEMENTSOF(events))
                n = ELEMENTSOF(events);
        TRY_PACK(msgpack_pack_array(pk, n));
        for (size_t i = 0; i < n; i++)
                TRY_PACK(msgpack_pack_uint64(pk, events[i]));
        return 0;
}

/* "tsc_hz": the TSC's rate, for clients turning TSC ticks into seconds; nil when unknown. */
static int pack_tsc_hz(msgpack_packer *pk, Server *s) {
        TRY(pack_string(pk, "tsc_hz"));
        if (s->backend->tsc_hz == 0) {
                TRY_PACK(msgpack_pack_nil(pk));
                return 0;
        }
        TRY_PACK(msgpack_pack_uint64(pk, s->backend->tsc_hz));
        return 0;
}

int handle_hello(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        msgpack_packer pk;
        int r;

        TRY(server_reply_begin(s, req, 18, &pk));
        TRY(pack_key_string(&pk, "server", "pmugated " PMUGATE_VERSION));
        TRY(pack_key_uint(&pk, "protocol", PMUGATE_PROTOCOL_VERSION));
        TRY(pack_key_string(&pk, "backend", s->backend->vtable->name));
        TRY(pack_key_bool(&pk, "simulated", s->backend->simulated));
        TRY(pack_sim_events(&pk, s));
        TRY(pack_tsc_hz(&pk, s));
        TRY(pack_counting(&pk, s));
        TRY(pack_perf_pmus(&pk, s));
        TRY(pack_key_string(&pk, "mode", access_mode_to_string(s->config.mode)));
        r = pack_cpu_model(&pk, s->machine);
        if (r >= 0)
                r = pack_pmu(&pk, s);
        if (r >= 0)
                r = pack_cpus(&pk, s->machine);
        if (r >= 0)
                r = pack_units(&pk, s->machine);
        if (r >= 0)
                r = pack_counters(&pk, s->machine);
        if (r >= 0)
                r = pack_registers(&pk, s->allowlist);
        if (r < 0)
                return r;
        TRY(handler_pack_foreign(&pk, s));
        r = pack_caller(&pk, s, c);
        if (r < 0)
                return r;
        TRY(pack_string(&pk, "limits"));
        TRY_PACK(msgpack_pack_map(&pk, 10));
        TRY(pack_key_uint(&pk, "request_size", PMUGATE_REQUEST_SIZE_MAX));
        TRY(pack_key_uint(&pk, "ops_per_batch", PMUGATE_OPS_PER_BATCH_MAX));
        TRY(pack_key_uint(&pk, "results_per_message", PMUGATE_REPLY_PART_RESULTS));
        TRY(pack_key_uint(&pk, "list_entries", PMUGATE_LIST_MAX));
        TRY(pack_key_uint(&pk, "each_steps", PMUGATE_EACH_OPS_MAX));
        TRY(pack_key_uint(&pk, "perf_groups", PERF_GROUPS_PER_OPEN_MAX));
        TRY(pack_key_uint(&pk, "perf_group_events", PERF_GROUP_EVENTS_MAX));
        TRY(pack_key_uint(&pk, "perf_events", PERF_EVENTS_PER_OPEN_MAX));
        TRY(pack_key_uint(&pk, "perf_handles", PERF_HANDLES_PER_SESSION_MAX));
        TRY(pack_key_uint(&pk, "perf_events_per_uid", server_perf_events_per_uid_max(s)));
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: hello and the machine description it returns
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/connection.h"
#include "core/package-counters.h"
#include "macro.h"
#include "message.h"
#include "wire.h"

pmugate_info *pmugate_info_free(pmugate_info *info) {
        if (!info)
                return NULL;
        free(info->cpus);
        free(info->units);
        free(info->registers);
        free(info->counters);
        free(info->scope_cpus);
        free(info->foreign_units);
        free(info->pmus);
        free(info->sim_events);
        free(info);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_info *, pmugate_info_free);

static const msgpack_object *array_at(const msgpack_object *a, uint32_t i, uint32_t min_size) {
        const msgpack_object *e;

        if (!a || a->type != MSGPACK_OBJECT_ARRAY || i >= a->via.array.size)
                return NULL;
        e = &a->via.array.ptr[i];
        if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size < min_size)
                return NULL;
        return e;
}

static int64_t field_int(const msgpack_object *tuple, uint32_t i) {
        int64_t v = 0;

        (void) object_get_int(&tuple->via.array.ptr[i], &v);
        return v;
}

static int decode_cpus(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *a = msgpack_map_get(reply, "cpus");

        if (!a || a->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        info->cpus = calloc(a->via.array.size ?: 1, sizeof(pmugate_cpu));
        if (!info->cpus)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                /* daemons before the CCX was known send the fields before it */
                const msgpack_object *t = array_at(a, i, HELLO_CPU_CCX);
                const msgpack_object *online;

                if (!t)
                        return -EBADMSG;
                online = &t->via.array.ptr[HELLO_CPU_ONLINE];
                info->cpus[i] = (pmugate_cpu) {
                        .cpu = (uint32_t) field_int(t, HELLO_CPU_CPU),
                        .package = (int32_t) field_int(t, HELLO_CPU_PACKAGE),
                        .die = (int32_t) field_int(t, HELLO_CPU_DIE),
                        .core = (int32_t) field_int(t, HELLO_CPU_CORE),
                        .thread = (uint32_t) field_int(t, HELLO_CPU_THREAD),
                        .online = online->type == MSGPACK_OBJECT_BOOLEAN && online->via.boolean,
                        .ccx = t->via.array.size > HELLO_CPU_CCX ?
                                (int32_t) field_int(t, HELLO_CPU_CCX) : -1,
                };
        }
        info->n_cpus = a->via.array.size;
        return 0;
}

/* "sim_events": nil on hardware, absent from older daemons. */
static int decode_sim_events(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *a = msgpack_map_get(reply, "sim_events");

        if (!a || a->type != MSGPACK_OBJECT_ARRAY)
                return 0;
        info->sim_events = calloc(a->via.array.size ?: 1, sizeof(uint64_t));
        if (!info->sim_events)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                if (a->via.array.ptr[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                        return -EBADMSG;
                info->sim_events[i] = a->via.array.ptr[i].via.u64;
        }
        info->n_sim_events = a->via.array.size;
        return 0;
}

static int decode_units(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *a = msgpack_map_get(reply, "units");

        if (!a || a->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        info->units = calloc(a->via.array.size ?: 1, sizeof(pmugate_unit));
        if (!info->units)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                const msgpack_object *t = array_at(a, i, _HELLO_UNIT_FIELDS);
                pmugate_unit *u = &info->units[i];

                if (!t)
                        return -EBADMSG;
                u->index = (uint32_t) field_int(t, HELLO_UNIT_INDEX);
                object_copy_string(&t->via.array.ptr[HELLO_UNIT_BDF], u->bdf, sizeof(u->bdf));
                u->vendor = (uint16_t) field_int(t, HELLO_UNIT_VENDOR);
                u->device = (uint16_t) field_int(t, HELLO_UNIT_DEVICE);
                u->package = (int32_t) field_int(t, HELLO_UNIT_PACKAGE);
        }
        info->n_units = a->via.array.size;
        return 0;
}

/* foreign.units: indices of units the kernel holds; one that names no unit is dropped. */
static int decode_foreign_units(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *foreign = msgpack_map_get(reply, "foreign");
        const msgpack_object *a = foreign ? msgpack_map_get(foreign, "units") : NULL;

        if (!a || a->type != MSGPACK_OBJECT_ARRAY)
                return 0;
        info->foreign_units = calloc(a->via.array.size ?: 1, sizeof(uint32_t));
        if (!info->foreign_units)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                int64_t v;

                if (object_get_int(&a->via.array.ptr[i], &v) && v >= 0 && (uint64_t) v < info->n_units)
                        info->foreign_units[info->n_foreign_units++] = (uint32_t) v;
        }
        return 0;
}

bool pmugate_info_unit_is_kernels(const pmugate_info *info, uint32_t unit) {
        for (size_t i = 0; info && i < info->n_foreign_units; i++)
                if (info->foreign_units[i] == unit)
                        return true;
        return false;
}

static int decode_registers(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *a = msgpack_map_get(reply, "registers");

        if (!a || a->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        info->registers = calloc(a->via.array.size ?: 1, sizeof(pmugate_register));
        if (!info->registers)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                const msgpack_object *t = array_at(a, i, _HELLO_REGISTER_FIELDS);
                pmugate_register *r = &info->registers[i];
                char kind[8];

                if (!t)
                        return -EBADMSG;
                object_copy_string(&t->via.array.ptr[HELLO_REGISTER_KIND], kind, sizeof(kind));
                r->pci = strcmp(kind, WIRE_REGISTER_KIND_PCI) == 0;
                r->first = (uint32_t) field_int(t, HELLO_REGISTER_FIRST);
                r->last = (uint32_t) field_int(t, HELLO_REGISTER_LAST);
                r->width = (uint8_t) field_int(t, HELLO_REGISTER_WIDTH);
                if (t->via.array.ptr[HELLO_REGISTER_WRITE_MASK].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
                        r->write_mask = t->via.array.ptr[HELLO_REGISTER_WRITE_MASK].via.u64;
                object_copy_string(&t->via.array.ptr[HELLO_REGISTER_SCOPE], r->scope, sizeof(r->scope));
                object_copy_string(&t->via.array.ptr[HELLO_REGISTER_CLASS], r->cls, sizeof(r->cls));
                object_copy_string(&t->via.array.ptr[HELLO_REGISTER_NAME], r->name, sizeof(r->name));
                r->pci_vendor = (uint16_t) field_int(t, HELLO_REGISTER_PCI_VENDOR);
                r->pci_device = (uint16_t) field_int(t, HELLO_REGISTER_PCI_DEVICE);
        }
        info->n_registers = a->via.array.size;
        return 0;
}

static void decode_model(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *cpu = msgpack_map_get(reply, "cpu"), *pmu = msgpack_map_get(reply, "pmu");
        uint64_t v;

        (void) reply_get_string(cpu, "vendor", info->vendor, sizeof(info->vendor));
        if (reply_get_uint(cpu, "family", &v))
                info->family = (uint32_t) v;
        if (reply_get_uint(cpu, "model", &v))
                info->model = (uint32_t) v;
        if (reply_get_uint(cpu, "stepping", &v))
                info->stepping = (uint32_t) v;
        (void) reply_get_string(cpu, "model_name", info->model_name, sizeof(info->model_name));
        (void) reply_get_string(cpu, "key", info->model_key, sizeof(info->model_key));
        (void) reply_get_string(cpu, "name", info->model_label, sizeof(info->model_label));

        if (!pmu || pmu->type != MSGPACK_OBJECT_MAP)
                return;
        info->has_pmu = true;
        if (reply_get_uint(pmu, "version", &v))
                info->pmu_version = (uint32_t) v;
        if (reply_get_uint(pmu, "gp_counters", &v))
                info->gp_counters = (uint32_t) v;
        if (reply_get_uint(pmu, "fixed_counters", &v))
                info->fixed_counters = (uint32_t) v;
        if (reply_get_uint(pmu, "counter_width", &v))
                info->counter_width = (uint32_t) v;
        if (reply_get_uint(pmu, "perf_metrics", &v))
                info->perf_metrics = (uint32_t) v;
        if (reply_get_uint(pmu, "slots_width", &v))
                info->slots_width = (uint32_t) v;
        info->has_perf_capabilities = reply_get_uint(pmu, "perf_capabilities", &info->perf_capabilities);
        (void) reply_get_bool(pmu, "perfmon_v2", &info->perfmon_v2);
        (void) reply_get_bool(pmu, "cpuid", &info->cpuid_read);
        if (reply_get_uint(pmu, "l3_counters", &v))
                info->l3_counters = (uint32_t) v;
        if (reply_get_uint(pmu, "df_counters", &v))
                info->df_counters = (uint32_t) v;
        if (reply_get_uint(pmu, "umc_counters", &v))
                info->umc_counters = (uint32_t) v;
}

static void decode_scope(const msgpack_object *scope, pmugate_info *info) {
        const msgpack_object *cpus;

        if (!scope || scope->type != MSGPACK_OBJECT_MAP)
                return;
        info->scoped = true;
        (void) reply_get_string(scope, "job", info->scope_job, sizeof(info->scope_job));
        (void) reply_get_string(scope, "reason", info->scope_reason, sizeof(info->scope_reason));
        cpus = msgpack_map_get(scope, "cpus");
        if (!cpus || cpus->type != MSGPACK_OBJECT_ARRAY)
                return;
        info->scope_cpus = calloc(cpus->via.array.size ?: 1, sizeof(uint32_t));
        if (!info->scope_cpus)
                return;
        for (uint32_t i = 0; i < cpus->via.array.size; i++) {
                int64_t v = 0;

                (void) object_get_int(&cpus->via.array.ptr[i], &v);
                info->scope_cpus[i] = (uint32_t) v;
        }
        info->n_scope_cpus = cpus->via.array.size;
}

static void decode_caller(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *caller = msgpack_map_get(reply, "caller"), *limits = msgpack_map_get(reply, "limits");
        const msgpack_object *foreign = msgpack_map_get(reply, "foreign");
        uint64_t v;
        int64_t i;

        if (reply_get_uint(caller, "uid", &v))
                info->uid = (uint32_t) v;
        if (reply_get_uint(caller, "gid", &v))
                info->gid = (uint32_t) v;
        if (reply_get_int(caller, "pid", &i))
                info->pid = (int32_t) i;
        (void) reply_get_string(caller, "role", info->role, sizeof(info->role));
        (void) reply_get_bool(caller, "read", &info->may_read);
        (void) reply_get_bool(caller, "write", &info->may_write);
        (void) reply_get_bool(caller, "admin", &info->may_admin);
        (void) reply_get_string(caller, "reason", info->rights_reason, sizeof(info->rights_reason));
        decode_scope(msgpack_map_get(caller, "scope"), info);
        if (reply_get_uint(limits, "request_size", &v))
                info->max_request_size = (uint32_t) v;
        if (reply_get_uint(limits, "ops_per_batch", &v))
                info->max_ops_per_batch = (uint32_t) v;
        if (reply_get_uint(limits, "each_steps", &v))
                info->max_each_steps = (uint32_t) MIN(v, (uint64_t) PMUGATE_EACH_OPS_MAX);
        (void) reply_get_bool(foreign, "nmi_watchdog", &info->nmi_watchdog);
        (void) reply_get_uint(foreign, "fixed_mask", &info->foreign_fixed_mask);
        (void) reply_get_uint(foreign, "gp_mask", &info->foreign_gp_mask);
        (void) reply_get_uint(foreign, "l3_mask", &info->foreign_l3_mask);
        (void) reply_get_uint(foreign, "df_mask", &info->foreign_df_mask);
}

/* hello "counting"; a daemon without it programs through MSRs. */
static void decode_counting(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *counting = msgpack_map_get(reply, "counting");

        (void) snprintf(info->counters_via, sizeof(info->counters_via), "msr");
        info->msr_reads = true;
        if (!counting || counting->type != MSGPACK_OBJECT_MAP)
                return;
        (void) reply_get_string(counting, "via", info->counters_via, sizeof(info->counters_via));
        (void) reply_get_string(counting, "wanted", info->counters_wanted, sizeof(info->counters_wanted));
        (void) reply_get_string(counting, "reason", info->counters_reason, sizeof(info->counters_reason));
        (void) reply_get_bool(counting, "msr_reads", &info->msr_reads);
}

static int decode_pmus(const msgpack_object *reply, pmugate_info *info) {
        const msgpack_object *a = msgpack_map_get(reply, "pmus");

        if (!a)
                return 0;
        if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size > PERF_PMUS_MAX)
                return -EBADMSG;
        info->pmus = calloc(a->via.array.size ?: 1, sizeof(pmugate_perf_pmu));
        if (!info->pmus)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                const msgpack_object *t = array_at(a, i, _HELLO_PMU_FIELDS);
                pmugate_perf_pmu *p = &info->pmus[i];
                int64_t type, topdown, package, cpu;

                if (!t)
                        return -EBADMSG;
                type = field_int(t, HELLO_PMU_TYPE);
                topdown = field_int(t, HELLO_PMU_TOPDOWN);
                package = field_int(t, HELLO_PMU_PACKAGE);
                cpu = field_int(t, HELLO_PMU_CPU);
                if (type < 0 || type > UINT32_MAX || topdown < 0 || topdown > 2 || package < -1 ||
                    package > INT32_MAX || cpu < -1 || cpu > INT32_MAX)
                        return -EBADMSG;
                object_copy_string(&t->via.array.ptr[HELLO_PMU_NAME], p->name, sizeof(p->name));
                object_copy_string(&t->via.array.ptr[HELLO_PMU_KIND], p->kind, sizeof(p->kind));
                p->type = (uint32_t) type;
                p->package = (int32_t) package;
                p->cpu = (int32_t) cpu;
                p->topdown = (uint8_t) topdown;
        }
        info->n_pmus = a->via.array.size;
        return 0;
}

bool pmugate_info_counts_via_perf(const pmugate_info *info) {
        return info && strcmp(info->counters_via, "perf") == 0;
}

unsigned pmugate_info_perf_topdown(const pmugate_info *info) {
        unsigned level = 0;

        for (size_t i = 0; info && i < info->n_pmus; i++)
                if (strcmp(info->pmus[i].kind, "core") == 0)
                        level = MAX(level, (unsigned) info->pmus[i].topdown);
        return level;
}

int pmugate_hello(pmugate *c, pmugate_info **ret) {
        _cleanup_(pmugate_info_freep) pmugate_info *info = NULL;
        const msgpack_object *reply;
        msgpack_packer pk;
        uint64_t v;
        int r;

        if (!c || !ret)
                return -EINVAL;
        r = connection_begin(c, REQUEST_HELLO, 0, &pk);
        if (r < 0)
                return r;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;

        info = calloc(1, sizeof(*info));
        if (!info)
                return -ENOMEM;
        (void) reply_get_string(reply, "server", info->server, sizeof(info->server));
        if (reply_get_uint(reply, "protocol", &v))
                info->protocol = (uint32_t) v;
        (void) reply_get_string(reply, "backend", info->backend, sizeof(info->backend));
        (void) reply_get_bool(reply, "simulated", &info->simulated);
        (void) reply_get_string(reply, "mode", info->mode, sizeof(info->mode));
        /* nil (unknown) or a rate out of bounds leaves 0: rates then use the client's clock */
        if (reply_get_uint(reply, "tsc_hz", &v) && v >= PMUGATE_TSC_KHZ_MIN * 1000U &&
            v <= PMUGATE_TSC_KHZ_MAX * 1000U)
                info->tsc_hz = v;
        decode_counting(reply, info);
        decode_model(reply, info);
        decode_caller(reply, info);
        r = decode_cpus(reply, info);
        if (r >= 0)
                r = decode_sim_events(reply, info);
        if (r >= 0)
                r = decode_units(reply, info);
        if (r >= 0)
                r = decode_foreign_units(reply, info);
        if (r >= 0)
                r = decode_registers(reply, info);
        if (r >= 0)
                r = package_counters_decode(reply, &info->counters, &info->n_counters);
        if (r >= 0)
                r = decode_pmus(reply, info);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(info);
        return 0;
}

static uint32_t register_count(const pmugate_register *r) {
        return (r->last - r->first) / (r->pci ? r->width : 1U) + 1;
}

void pmugate_info_register_name(const pmugate_info *info, bool pci, uint32_t reg, char *buf, size_t size) {
        if (size == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; i < info->n_registers; i++) {
                const pmugate_register *r = &info->registers[i];

                if (r->pci != pci || reg < r->first || reg > r->last)
                        continue;
                if (r->first == r->last)
                        (void) snprintf(buf, size, "%s", r->name);
                else
                        (void) snprintf(buf, size, "%s%u", r->name, (reg - r->first) / (pci ? r->width : 1U));
                return;
        }
}

int pmugate_info_register_by_name(const pmugate_info *info, const char *name, bool *ret_pci, uint32_t *ret_reg) {
        for (size_t i = 0; i < info->n_registers; i++) {
                const pmugate_register *r = &info->registers[i];
                size_t n = strlen(r->name);
                char *end;
                unsigned long index;

                if (strncasecmp(name, r->name, n) != 0)
                        continue;
                if (r->first == r->last) {
                        if (name[n] != '\0')
                                continue;
                        index = 0;
                } else {
                        if (name[n] < '0' || name[n] > '9')
                                continue;
                        index = strtoul(name + n, &end, 10);
                        if (*end != '\0' || index >= register_count(r))
                                continue;
                }
                if (ret_pci)
                        *ret_pci = r->pci;
                if (ret_reg)
                        *ret_reg = r->first + (uint32_t) index * (r->pci ? r->width : 1U);
                return 0;
        }
        return -ENOENT;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the LIKWID forwarder's records (client/likwid/likwid-record.h) and the mapping
 * of their CPUs, devices and registers onto pmugate's (client/likwid/likwid-map.c), what a
 * LIKWID process sends pmugate-likwid-accessD
 *
 * Input: a byte choosing the model (skx, clx, icx, zen4, or one pmugate does not know), a byte
 * whose bits take CPUs 0-7 offline, then 32-byte records as LIKWID writes them. The records also
 * program a core PMU shadow as on a node that counts via perf (client/likwid/likwid-perf.c):
 * its checks, its events and the registers rebuilt from counts the records' data make up.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "likwid/likwid-forward.h"
#include "likwid/likwid-map.h"
#include "likwid/likwid-perf.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two packages of two cores with two threads each; package 1's L3 is unknown on CPU 7. */
static const pmugate_cpu machine_cpus[] = {
        { .cpu = 0, .package = 0, .core = 0, .thread = 0, .ccx = 0 },
        { .cpu = 1, .package = 0, .core = 1, .thread = 0, .ccx = 0 },
        { .cpu = 2, .package = 1, .core = 0, .thread = 0, .ccx = 1 },
        { .cpu = 3, .package = 1, .core = 1, .thread = 0, .ccx = 1 },
        { .cpu = 4, .package = 0, .core = 0, .thread = 1, .ccx = 0 },
        { .cpu = 5, .package = 0, .core = 1, .thread = 1, .ccx = 0 },
        { .cpu = 6, .package = 1, .core = 0, .thread = 1, .ccx = 1 },
        { .cpu = 7, .package = 1, .core = 1, .thread = 1, .ccx = -1 },
};
/* Memory channels on both packages, one on a package the daemon could not tell, and a
 * function whose address ends like a channel's but is another vendor's. */
static const pmugate_unit units[] = {
        { .index = 0, .bdf = "0000:3a:0a.2", .vendor = 0x8086, .device = 0x2042, .package = 0 },
        { .index = 1, .bdf = "0000:3a:0a.6", .vendor = 0x8086, .device = 0x2046, .package = 0 },
        { .index = 2, .bdf = "0000:3a:0d.2", .vendor = 0x8086, .device = 0x204a, .package = 0 },
        { .index = 3, .bdf = "0000:ae:0a.2", .vendor = 0x8086, .device = 0x2042, .package = 1 },
        { .index = 4, .bdf = "0000:ae:0c.6", .vendor = 0x8086, .device = 0x2046, .package = -1 },
        { .index = 5, .bdf = "0000:d7:0b.2", .vendor = 0x1022, .device = 0x2046, .package = 1 },
};
static const pmugate_register registers[] = {
        { .first = 0x186, .last = 0x18D, .width = 8, .write_mask = 0xFFC7FFFF, .scope = "thread",
          .cls = "core-pmu", .name = "IA32_PERFEVTSEL" },
        { .first = 0x38F, .last = 0x38F, .width = 8, .write_mask = 0x70000000F, .scope = "thread",
          .cls = "core-pmu", .name = "IA32_PERF_GLOBAL_CTRL" },
        { .first = 0x611, .last = 0x611, .width = 8, .scope = "package", .cls = "rapl",
          .name = "PKG_ENERGY" },
        { .first = 0xC0010230, .last = 0xC001023B, .width = 8, .write_mask = 0xFF0F0000FFFFFF,
          .scope = "ccx", .cls = "amd-l3", .name = "AMD_L3_PERF" },
        { .first = 0xC0010240, .last = 0xC001025F, .width = 8, .write_mask = 0x7FFFFFFFFF,
          .scope = "package", .cls = "amd-df", .name = "AMD_DF_PERF" },
        { .pci = true, .first = 0xA0, .last = 0xB8, .width = 8, .scope = "package", .cls = "uncore-imc",
          .name = "IMC_PMON_CTR", .pci_vendor = 0x8086, .pci_device = 0x2046 },
        { .pci = true, .first = 0xD8, .last = 0xE4, .width = 4, .write_mask = 0xFFC6FFFF, .scope = "package",
          .cls = "uncore-imc", .name = "IMC_PMON_CTL", .pci_vendor = 0x8086, .pci_device = 0x2046 },
        { .pci = true, .first = 0xF4, .last = 0xF4, .width = 4, .write_mask = 0x103, .scope = "package",
          .cls = "uncore-imc", .name = "IMC_PMON_BOX_CTL", .pci_vendor = 0x8086, .pci_device = 0x2042 },
};
/* Ice Lake-SP's free-running DDR counters as the daemon serves them; one failed to open. */
static const pmugate_counter counters[] = {
        { .index = 0, .name = "uncore_imc_free_running_0/read", .package = 0, .width = 64,
          .scale = 6.103515625e-5, .unit = "MiB", .cls = "uncore-imc" },
        { .index = 1, .name = "uncore_imc_free_running_0/write", .package = 0, .width = 64,
          .scale = 6.103515625e-5, .unit = "MiB", .cls = "uncore-imc" },
        { .index = 2, .name = "uncore_imc_free_running_3/read", .package = 1, .width = 64,
          .scale = 6.103515625e-5, .unit = "MiB", .cls = "uncore-imc",
          .error = "perf_event_open: No such device" },
        { .index = 7, .name = "uncore_imc_free_running_3/write", .package = 1, .width = 48, .scale = 1,
          .unit = "", .cls = "uncore-imc" },
};
static const char *const models[] = { "skx", "clx", "icx", "zen4", "" };
static const char *const scopes[] = { "thread", "core", "ccx", "package", "bogus" };

static void check_lease_cpus(const pmugate_info *info, const pmugate_cpu *target) {
        for (size_t s = 0; s < ELEMENTSOF(scopes); s++)
                for (size_t max = 0; max <= info->n_cpus; max += info->n_cpus / 2 ?: 1) {
                        uint32_t cpus[ELEMENTSOF(machine_cpus) + 1];
                        bool has_target = false;
                        int n;

                        cpus[max] = UINT32_MAX;
                        n = likwid_lease_cpus(info, target, scopes[s], cpus, max);
                        fuzz_assert(n == -E2BIG || (n >= 1 && (size_t) n <= max));
                        fuzz_assert(cpus[max] == UINT32_MAX);
                        for (int i = 0; i < n; i++) {
                                const pmugate_cpu *c = likwid_map_cpu(info, cpus[i]);

                                /* online CPUs of the target's package, each once */
                                fuzz_assert(c && c->package == target->package);
                                for (int j = 0; j < i; j++)
                                        fuzz_assert(cpus[j] != cpus[i]);
                                has_target = has_target || cpus[i] == target->cpu;
                        }
                        fuzz_assert(n < 0 || has_target);
                }
}

/* The perf translation of the records' writes to a shadow core PMU. */
static void check_perf(const pmugate_info *info, LikwidCoreShadow *shadow, LikwidPerfCounts *counts,
                       const LikwidRecord *rec) {
        LikwidPerfModel m = {
                .n_gp = 4U + (rec->padding & 4U), .n_fixed = 3U + (rec->padding & 1U),
                .topdown = rec->padding % 3U, .counter_width = 48,
        };
        LikwidPerfReg reg = likwid_perf_classify(rec->device % 2 == 0, rec->reg);
        uint64_t values[LIKWID_PERF_EVENTS_MAX];
        LikwidPerfPlan plan;
        char why[256];
        uint32_t counter;
        int channel;

        fuzz_assert(reg.kind < _LIKWID_PERF_REG_MAX);
        fuzz_assert((reg.kind == LIKWID_PERF_REG_NONE) == (reg.name == NULL));
        fuzz_assert((reg.kind == LIKWID_PERF_REG_REFUSED) == (reg.why != NULL));
        if (reg.kind == LIKWID_PERF_REG_EVTSEL && reg.index < LIKWID_PERF_GP_MAX)
                shadow->evtsel[reg.index] = rec->data;
        else if (reg.kind == LIKWID_PERF_REG_FIXED_CTRL)
                shadow->fixed_ctrl = rec->data;
        else if (reg.kind == LIKWID_PERF_REG_GLOBAL_CTRL)
                shadow->global_ctrl = rec->data;
        (void) likwid_perf_check_evtsel(rec->data, why, sizeof(why));
        if (likwid_perf_check_fixed_ctrl(&m, rec->data, why, sizeof(why)) == 0)
                for (unsigned i = m.n_fixed; i < 16; i++)
                        fuzz_assert(((rec->data >> (4 * i)) & 0xF) == 0);
        if (likwid_perf_check_global_ctrl(&m, rec->data, why, sizeof(why)) == 0)
                fuzz_assert(!(rec->data & ((UINT64_C(1) << 48) - 1) & ~((UINT64_C(1) << m.n_gp) - 1) &
                              ~(((UINT64_C(1) << m.n_fixed) - 1) << 32)));

        if (likwid_perf_plan(&m, shadow, &plan, why, sizeof(why)) == 0) {
                size_t total = 0;

                fuzz_assert(plan.n_events <= LIKWID_PERF_EVENTS_MAX && plan.n_groups <= LIKWID_PERF_GROUPS_MAX);
                for (size_t g = 0; g < plan.n_groups; g++) {
                        fuzz_assert(plan.group_len[g] > 0 && plan.group_first[g] == total);
                        total += plan.group_len[g];
                }
                fuzz_assert(total == plan.n_events);
                fuzz_assert(plan.slots_event < (int) plan.n_events);
                for (size_t i = 0; i < plan.n_events; i++) {
                        fuzz_assert(strcmp(plan.events[i].pmu, "cpu") == 0);
                        /* never an attr flag in config: USR, OS, INT, ANY, EN, PC */
                        fuzz_assert(!(plan.events[i].config & (LIKWID_EVTSEL_USR | LIKWID_EVTSEL_OS |
                                                                LIKWID_EVTSEL_PC | LIKWID_EVTSEL_INT |
                                                                LIKWID_EVTSEL_ANY | LIKWID_EVTSEL_EN)));
                        values[i] = rec->data >> (i % 8);
                }
                counts->counting = rec->type & 1;
                likwid_perf_counts_sample(counts, &plan, values);
                if (plan.n_events > 0)
                        fuzz_assert((likwid_perf_counts_read(counts, &m, LIKWID_PERF_REG_PMC, rec->reg % 8) >> 48) == 0);
                (void) likwid_perf_counts_read(counts, &m, LIKWID_PERF_REG_PERF_METRICS, 0);
                likwid_perf_counts_write(counts, reg.kind, reg.index, rec->data);
        }
        fuzz_assert(likwid_perf_scale(rec->data, rec->data | 1, 0) == rec->data);

        channel = likwid_imc_channel(info, rec->device);
        fuzz_assert(channel < 0 || (likwid_model_has_ubox(info) && channel < 6));
        if (likwid_map_cas(info, rec->device, rec->cpu, rec->reg & 1, &counter) == 0)
                fuzz_assert(channel >= 0 && likwid_find_counter(info, counter) != NULL &&
                            likwid_find_counter(info, counter)->package == (int32_t) rec->cpu);
}

static void check_record(const pmugate_info *info, const LikwidRecord *rec) {
        const pmugate_cpu *cpu = likwid_map_cpu(info, rec->cpu);
        const pmugate_register *msr = likwid_find_msr(info, rec->reg);
        uint32_t unit = UINT32_MAX, counter = UINT32_MAX;
        int r;

        fuzz_assert(!cpu || (cpu->cpu == rec->cpu && cpu->online));
        if (cpu)
                check_lease_cpus(info, cpu);
        fuzz_assert(!msr || (!msr->pci && msr->first <= rec->reg && rec->reg <= msr->last));

        r = likwid_map_unit(info, rec->device, rec->cpu, &unit);
        fuzz_assert(r == 0 || r == -ENODEV);
        if (r == 0) {
                const pmugate_register *e = likwid_find_pci(info, unit, rec->reg);
                bool found = false;

                /* a served unit of the socket LIKWID named, never one of unknown package */
                for (size_t i = 0; i < info->n_units; i++)
                        if (info->units[i].index == unit) {
                                found = true;
                                fuzz_assert(info->units[i].package == (int32_t) rec->cpu);
                                fuzz_assert(info->units[i].vendor == 0x8086);
                        }
                fuzz_assert(found && !likwid_device_is_freerun(rec->device) &&
                            rec->device != LIKWID_DEV_MSR);
                fuzz_assert(!e || (e->pci && e->first <= rec->reg && rec->reg <= e->last &&
                                   (rec->reg - e->first) % e->width == 0));
        } else
                fuzz_assert(unit == UINT32_MAX);

        r = likwid_map_freerun(info, rec->device, rec->cpu, rec->reg, &counter);
        fuzz_assert(r == 0 || r == -ENODEV || r == -EINVAL);
        if (r == 0) {
                const pmugate_counter *c = likwid_find_counter(info, counter);

                fuzz_assert(c && c->error[0] == '\0' && c->package == (int32_t) rec->cpu);
                fuzz_assert(likwid_device_is_freerun(rec->device));
                fuzz_assert(rec->reg == LIKWID_FREERUN_READ || rec->reg == LIKWID_FREERUN_WRITE);
        } else
                fuzz_assert(counter == UINT32_MAX);
        if (likwid_freerun_present(info, rec->device, rec->cpu))
                fuzz_assert(likwid_map_freerun(info, rec->device, rec->cpu, LIKWID_FREERUN_READ,
                                               &counter) == 0);
        /* Ice Lake-SP's programmable channels are present only beside their controller's
         * free-running counters */
        if (likwid_mmio_channel_present(info, rec->device, rec->cpu))
                fuzz_assert(likwid_device_is_mmio_channel(rec->device) &&
                            likwid_freerun_present(info, LIKWID_DEV_MMIO_FREERUN_FIRST +
                                                   (rec->device - LIKWID_DEV_MMIO_IMC_FIRST) / 2, rec->cpu));

        /* every release's device number becomes a 5.2 number the forwarder knows, or unserved */
        for (LikwidVersion v = LIKWID_VERSION_UNKNOWN; v <= _LIKWID_VERSION_MAX; v++) {
                uint32_t device = 0;

                r = likwid_device_from_version(v, rec->device, &device);
                fuzz_assert(r == 0 || r == -ERANGE || r == -EINVAL);
                fuzz_assert((r == -EINVAL) == (v == LIKWID_VERSION_UNKNOWN || v == _LIKWID_VERSION_MAX));
                fuzz_assert(r < 0 || device == LIKWID_DEV_UNSERVED || device <= LIKWID_DEV_MMIO_FREERUN_LAST);
                fuzz_assert(r < 0 || v != LIKWID_VERSION_5_2 || device == LIKWID_DEV_UNSERVED ||
                            device == rec->device);
        }

        /* the answers of a write that never reaches the hardware */
        if (likwid_write_is_switch_off(rec->reg, rec->data))
                fuzz_assert(rec->data == 0);
        if (likwid_read_is_placeholder(info, rec->reg))
                fuzz_assert(likwid_model_has_ubox(info));
        fuzz_assert(!likwid_model_has_ubox(info) || likwid_model_answers_ubox_freeze(info));
        (void) likwid_write_is_gate(rec->device != LIKWID_DEV_MSR, rec->reg);
        (void) likwid_register_is_readonly_counter(likwid_find_pci(info, rec->device, rec->reg));
        fuzz_assert(likwid_error_from_refusal((int) rec->data) <= LIKWID_ERR_LOCKED);
        fuzz_assert(likwid_error_from_errno(-(int) (rec->data & 0xfff)) <= LIKWID_ERR_LOCKED);
        (void) likwid_refusal_is_permanent((int) rec->data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        pmugate_cpu cpus[ELEMENTSOF(machine_cpus)];
        pmugate_info info = {
                .cpus = cpus, .n_cpus = ELEMENTSOF(cpus),
                .units = (pmugate_unit *) units, .n_units = ELEMENTSOF(units),
                .registers = (pmugate_register *) registers, .n_registers = ELEMENTSOF(registers),
                .counters = (pmugate_counter *) counters, .n_counters = ELEMENTSOF(counters),
        };
        LikwidForwarder *f = NULL;
        LikwidCoreShadow shadow = {};
        LikwidPerfCounts counts = {};
        FILE *log;

        if (size < 2)
                return 0;
        (void) snprintf(info.model_key, sizeof(info.model_key), "%s", models[data[0] % ELEMENTSOF(models)]);
        memcpy(cpus, machine_cpus, sizeof(cpus));
        for (size_t i = 0; i < ELEMENTSOF(cpus); i++)
                cpus[i].online = !(data[1] & (1U << i));

        /* without pmugated every access is answered "locked", and nothing else is touched */
        log = fopen("/dev/null", "we");
        if (!log || likwid_forwarder_new(NULL, log, "fuzz-likwid", true, &f) < 0)
                abort();
        for (size_t off = 2; off + LIKWID_RECORD_SIZE <= size; off += LIKWID_RECORD_SIZE) {
                LikwidRecord rec, answered;
                int r;

                memcpy(&rec, data + off, sizeof(rec));
                check_record(&info, &rec);
                check_perf(&info, &shadow, &counts, &rec);

                answered = rec;
                r = likwid_forwarder_handle(f, &answered);
                fuzz_assert(r == (rec.type == LIKWID_EXIT ? 0 : 1));
                fuzz_assert(answered.cpu == rec.cpu && answered.reg == rec.reg &&
                            answered.device == rec.device && answered.type == rec.type);
                if (r == 1 && rec.type != LIKWID_WRITE)
                        fuzz_assert(answered.data == 0 && answered.errorcode != LIKWID_ERR_NOERROR);
        }
        fuzz_assert(!likwid_forwarder_has_pending(f));
        likwid_forwarder_free(f);
        fclose(log);
        return 0;
}

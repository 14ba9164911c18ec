/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LIKWID's core PMU programming as perf events
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "likwid/likwid-perf.h"
#include "macro.h"

#define MSR_PMC0 0xC1U
#define MSR_A_PMC0 0x4C1U
#define MSR_PERFEVTSEL0 0x186U
#define MSR_FIXED_CTR0 0x309U
#define MSR_FIXED_CTR_CTRL 0x38DU
#define MSR_PERF_GLOBAL_STATUS 0x38EU
#define MSR_PERF_GLOBAL_CTRL 0x38FU
#define MSR_PERF_GLOBAL_STATUS_RESET 0x390U
#define MSR_PERF_GLOBAL_STATUS_SET 0x391U
#define MSR_PERF_GLOBAL_INUSE 0x392U
#define MSR_PERF_METRICS 0x329U
#define MSR_OFFCORE_RSP_0 0x1A6U
#define MSR_OFFCORE_RSP_1 0x1A7U
#define MSR_LBR_SELECT 0x1C8U
#define MSR_LBR_TOS 0x1C9U
#define MSR_DEBUGCTL 0x1D9U
#define MSR_PEBS_ENABLE 0x3F1U
#define MSR_PEBS_LD_LAT 0x3F6U
#define MSR_PEBS_FRONTEND 0x3F7U
#define MSR_AMD_LEGACY_FIRST 0xC0010000U
#define MSR_AMD_LEGACY_LAST 0xC0010007U
#define MSR_AMD_GLOBAL_FIRST 0xC0000300U
#define MSR_AMD_GLOBAL_LAST 0xC0000303U
#define MSR_AMD_CORE_FIRST 0xC0010200U
#define MSR_AMD_CORE_LAST 0xC001020BU
#define MSR_AMD_UNCORE_FIRST 0xC0010230U
#define MSR_AMD_UNCORE_LAST 0xC001025FU

/* Fixed counter i's OS and USR enables in FIXED_CTR_CTRL; its other two bits are AnyThread
 * and PMI. */
#define FIXED_CTRL_BITS 4U
#define FIXED_CTRL_OS 0x1U
#define FIXED_CTRL_USR 0x2U
#define FIXED_CTRL_ENABLES (FIXED_CTRL_OS | FIXED_CTRL_USR)
#define FIXED_SLOTS 3U
#define METRICS_L1 4U
#define METRIC_BITS 8U
#define METRIC_FULL 0xFFU

#define WHY_OFFCORE "the offcore response events need the offcore response MSRs, which a perf " \
        "event of the core PMU ('cpu') carries in config1 only for the kernel's named events; not translated"
#define WHY_PEBS "PEBS samples; pmugate counts, it does not sample"
#define WHY_LBR "the last branch record samples branches; pmugate counts, it does not sample"
#define WHY_AMD_CORE "LIKWID's AMD core counter programming is not translated to perf events; use " \
        "'pmugate stat' on this node"
#define WHY_AMD_UNCORE "LIKWID's AMD L3 and data-fabric counters are not translated to perf events; use " \
        "'pmugate stat' on this node"

static LikwidPerfReg reg_of(LikwidPerfRegKind kind, unsigned index, const char *name) {
        return (LikwidPerfReg) { .kind = kind, .index = index, .name = name };
}

static LikwidPerfReg refused(const char *name, const char *why) {
        return (LikwidPerfReg) { .kind = LIKWID_PERF_REG_REFUSED, .name = name, .why = why };
}

static LikwidPerfReg classify_amd(uint32_t reg) {
        if (reg >= MSR_AMD_CORE_FIRST && reg <= MSR_AMD_CORE_LAST)
                return refused((reg - MSR_AMD_CORE_FIRST) % 2 == 0 ? "PerfEvtSel" : "PerfCtr", WHY_AMD_CORE);
        if (reg >= MSR_AMD_LEGACY_FIRST && reg <= MSR_AMD_LEGACY_LAST)
                return refused(reg < MSR_AMD_LEGACY_FIRST + 4 ? "PerfEvtSel (legacy)" : "PerfCtr (legacy)",
                               WHY_AMD_CORE);
        if (reg >= MSR_AMD_GLOBAL_FIRST && reg <= MSR_AMD_GLOBAL_LAST)
                return refused("PerfCntrGlobalCtl/Status", WHY_AMD_CORE);
        if (reg >= MSR_AMD_UNCORE_FIRST && reg <= MSR_AMD_UNCORE_LAST)
                return refused("ChL3PmcCfg/DF_PerfCtl", WHY_AMD_UNCORE);
        return reg_of(LIKWID_PERF_REG_NONE, 0, NULL);
}

LikwidPerfReg likwid_perf_classify(bool intel, uint32_t reg) {
        if (!intel)
                return classify_amd(reg);
        if (reg >= MSR_PERFEVTSEL0 && reg < MSR_PERFEVTSEL0 + LIKWID_PERF_GP_MAX)
                return reg_of(LIKWID_PERF_REG_EVTSEL, reg - MSR_PERFEVTSEL0, "IA32_PERFEVTSEL");
        if (reg >= MSR_PMC0 && reg < MSR_PMC0 + LIKWID_PERF_GP_MAX)
                return reg_of(LIKWID_PERF_REG_PMC, reg - MSR_PMC0, "IA32_PMC");
        if (reg >= MSR_A_PMC0 && reg < MSR_A_PMC0 + LIKWID_PERF_GP_MAX)
                return reg_of(LIKWID_PERF_REG_PMC, reg - MSR_A_PMC0, "IA32_A_PMC");
        if (reg >= MSR_FIXED_CTR0 && reg < MSR_FIXED_CTR0 + LIKWID_PERF_FIXED_MAX)
                return reg_of(LIKWID_PERF_REG_FIXED_CTR, reg - MSR_FIXED_CTR0, "IA32_FIXED_CTR");
        switch (reg) {
        case MSR_FIXED_CTR_CTRL:
                return reg_of(LIKWID_PERF_REG_FIXED_CTRL, 0, "IA32_FIXED_CTR_CTRL");
        case MSR_PERF_GLOBAL_CTRL:
                return reg_of(LIKWID_PERF_REG_GLOBAL_CTRL, 0, "IA32_PERF_GLOBAL_CTRL");
        case MSR_PERF_METRICS:
                return reg_of(LIKWID_PERF_REG_PERF_METRICS, 0, "MSR_PERF_METRICS");
        case MSR_PERF_GLOBAL_STATUS:
        case MSR_PERF_GLOBAL_STATUS_RESET:
        case MSR_PERF_GLOBAL_STATUS_SET:
        case MSR_PERF_GLOBAL_INUSE:
                return reg_of(LIKWID_PERF_REG_STATUS, 0, "IA32_PERF_GLOBAL_STATUS");
        case MSR_OFFCORE_RSP_0:
        case MSR_OFFCORE_RSP_1:
                return refused("MSR_OFFCORE_RSP", WHY_OFFCORE);
        case MSR_PEBS_ENABLE:
        case MSR_PEBS_LD_LAT:
        case MSR_PEBS_FRONTEND:
                return refused("IA32_PEBS_ENABLE/PEBS_LD_LAT/PEBS_FRONTEND", WHY_PEBS);
        case MSR_DEBUGCTL:
        case MSR_LBR_SELECT:
        case MSR_LBR_TOS:
                return refused("IA32_DEBUGCTL/LBR_SELECT/LBR_TOS", WHY_LBR);
        default:
                break;
        }
        return reg_of(LIKWID_PERF_REG_NONE, 0, NULL);
}

LikwidPerfModel likwid_perf_model(const pmugate_info *info) {
        return (LikwidPerfModel) {
                .n_gp = MIN(info->gp_counters, LIKWID_PERF_GP_MAX),
                .n_fixed = MIN(info->fixed_counters, LIKWID_PERF_FIXED_MAX),
                .topdown = pmugate_info_perf_topdown(info),
                .counter_width = info->counter_width > 0 && info->counter_width < 64 ? info->counter_width : 48,
        };
}

int likwid_perf_check_evtsel(uint64_t value, char *reason, size_t size) {
        static const struct {
                uint64_t bit;
                const char *why;
        } refused_bits[] = {
                { LIKWID_EVTSEL_INT, "INT (an interrupt on overflow: sampling)" },
                { LIKWID_EVTSEL_ANY, "ANY (counting the other hardware thread of the core)" },
                { LIKWID_EVTSEL_PC, "PC (pin control)" },
        };
        uint64_t known = LIKWID_EVTSEL_EVENT_UMASK | LIKWID_EVTSEL_USR | LIKWID_EVTSEL_OS | LIKWID_EVTSEL_EDGE |
                         LIKWID_EVTSEL_EN | LIKWID_EVTSEL_INV | LIKWID_EVTSEL_CMASK;

        for (size_t i = 0; i < ELEMENTSOF(refused_bits); i++)
                if (value & refused_bits[i].bit) {
                        (void) snprintf(reason, size, "bit %s has no perf counting equivalent", refused_bits[i].why);
                        return -EPERM;
                }
        if (value & ~known) {
                (void) snprintf(reason, size, "bits 0x%" PRIx64 " (TSX filters and others) have no perf counting "
                                "equivalent here", value & ~known);
                return -EPERM;
        }
        if ((value & LIKWID_EVTSEL_EN) && (value & (LIKWID_EVTSEL_OS | LIKWID_EVTSEL_USR)) == LIKWID_EVTSEL_OS) {
                (void) snprintf(reason, size, "counting in the kernel only (OS without USR) is not offered");
                return -EPERM;
        }
        return 0;
}

int likwid_perf_check_fixed_ctrl(const LikwidPerfModel *m, uint64_t value, char *reason, size_t size) {
        for (unsigned i = 0; i < 64 / FIXED_CTRL_BITS; i++) {
                uint64_t bits = (value >> (i * FIXED_CTRL_BITS)) & 0xF;

                if (bits == 0)
                        continue;
                if (i >= m->n_fixed) {
                        (void) snprintf(reason, size, "fixed counter %u does not exist (the CPU has %u)", i,
                                        m->n_fixed);
                        return -EPERM;
                }
                if (bits & ~(uint64_t) FIXED_CTRL_ENABLES) {
                        (void) snprintf(reason, size, "fixed counter %u: AnyThread and PMI (interrupt) have no "
                                        "perf counting equivalent", i);
                        return -EPERM;
                }
                if (bits == FIXED_CTRL_OS) {
                        (void) snprintf(reason, size, "fixed counter %u: counting in the kernel only (OS "
                                        "without USR) is not offered", i);
                        return -EPERM;
                }
        }
        return 0;
}

int likwid_perf_check_global_ctrl(const LikwidPerfModel *m, uint64_t value, char *reason, size_t size) {
        uint64_t valid = (UINT64_C(1) << m->n_gp) - 1;

        valid |= ((UINT64_C(1) << m->n_fixed) - 1) << LIKWID_GLOBAL_FIXED_SHIFT;
        if (m->topdown > 0)
                valid |= UINT64_C(1) << LIKWID_GLOBAL_METRICS_BIT;
        if (value & ~valid) {
                (void) snprintf(reason, size, "enable bits 0x%" PRIx64 " name counters this CPU's perf PMU "
                                "does not have%s", value & ~valid,
                                (value & ~valid) >> LIKWID_GLOBAL_METRICS_BIT ?
                                        " (PERF_METRICS: the kernel offers no topdown metric events here)" : "");
                return -EPERM;
        }
        return 0;
}

static void plan_add(LikwidPerfPlan *p, uint64_t config, bool kernel, LikwidPerfSlotKind kind, unsigned index,
                     const char *name) {
        pmugate_perf_event *e = &p->events[p->n_events];

        *e = (pmugate_perf_event) { .config = config, .kernel = kernel };
        (void) snprintf(e->pmu, sizeof(e->pmu), "cpu");
        (void) snprintf(e->name, sizeof(e->name), "%s", name);
        p->slots[p->n_events++] = (LikwidPerfSlot) { .kind = kind, .index = index };
}

static void plan_close_group(LikwidPerfPlan *p, size_t first) {
        if (p->n_events == first)
                return;
        p->group_first[p->n_groups] = first;
        p->group_len[p->n_groups++] = p->n_events - first;
}

int likwid_perf_plan(const LikwidPerfModel *m, const LikwidCoreShadow *s, LikwidPerfPlan *ret, char *reason,
                     size_t size) {
        static const uint32_t fixed_config[LIKWID_PERF_FIXED_MAX] = {
                LIKWID_PERF_INST_RETIRED, LIKWID_PERF_CPU_CLK_UNHALTED, LIKWID_PERF_REF_TSC, LIKWID_PERF_SLOTS,
        };
        static const char *const fixed_name[LIKWID_PERF_FIXED_MAX] = {
                "FIXC0 INSTR_RETIRED_ANY", "FIXC1 CPU_CLK_UNHALTED_CORE", "FIXC2 CPU_CLK_UNHALTED_REF",
                "FIXC3 TOPDOWN_SLOTS",
        };
        bool metrics = s->global_ctrl & (UINT64_C(1) << LIKWID_GLOBAL_METRICS_BIT);
        bool slots_in_metrics = false;
        char name[PMUGATE_PERF_EVENT_NAME_MAX];
        size_t first;
        int r;

        *ret = (LikwidPerfPlan) { .slots_event = -1 };
        r = likwid_perf_check_global_ctrl(m, s->global_ctrl, reason, size);
        if (r < 0)
                return r;
        r = likwid_perf_check_fixed_ctrl(m, s->fixed_ctrl, reason, size);
        if (r < 0)
                return r;
        if (metrics) {
                /* The kernel's topdown metric events only count in a group SLOTS leads; SLOTS
                 * is fixed counter 3, whether or not LIKWID enabled it too. */
                uint64_t fixed3 = (s->fixed_ctrl >> (FIXED_SLOTS * FIXED_CTRL_BITS)) & FIXED_CTRL_ENABLES;
                unsigned n_metrics = m->topdown >= 2 ? LIKWID_PERF_METRICS_MAX : METRICS_L1;

                ret->slots_event = (int) ret->n_events;
                plan_add(ret, LIKWID_PERF_SLOTS, fixed3 & FIXED_CTRL_OS, LIKWID_SLOT_FIXED, FIXED_SLOTS,
                         fixed_name[FIXED_SLOTS]);
                for (unsigned i = 0; i < n_metrics; i++) {
                        (void) snprintf(name, sizeof(name), "PERF_METRICS byte %u", i);
                        plan_add(ret, LIKWID_PERF_METRIC(i), fixed3 & FIXED_CTRL_OS, LIKWID_SLOT_METRIC, i, name);
                }
                plan_close_group(ret, 0);
                slots_in_metrics = true;
        }
        first = ret->n_events;
        for (unsigned i = 0; i < m->n_fixed; i++) {
                uint64_t bits = (s->fixed_ctrl >> (i * FIXED_CTRL_BITS)) & FIXED_CTRL_ENABLES;

                if (!(s->global_ctrl & (UINT64_C(1) << (LIKWID_GLOBAL_FIXED_SHIFT + i))) || bits == 0)
                        continue;
                if (i == FIXED_SLOTS && slots_in_metrics)
                        continue;
                if (i == FIXED_SLOTS && m->topdown == 0) {
                        (void) snprintf(reason, size, "fixed counter 3 (TOPDOWN.SLOTS) has no perf event on this "
                                        "node's core PMU");
                        return -EPERM;
                }
                if (i == FIXED_SLOTS)
                        ret->slots_event = (int) ret->n_events;
                plan_add(ret, fixed_config[i], bits & FIXED_CTRL_OS, LIKWID_SLOT_FIXED, i, fixed_name[i]);
        }
        for (unsigned i = 0; i < m->n_gp; i++) {
                uint64_t v = s->evtsel[i];
                uint64_t config;

                if (!(s->global_ctrl & (UINT64_C(1) << i)) || !(v & LIKWID_EVTSEL_EN))
                        continue;
                r = likwid_perf_check_evtsel(v, reason, size);
                if (r < 0)
                        return r;
                config = v & (LIKWID_EVTSEL_EVENT_UMASK | LIKWID_EVTSEL_EDGE | LIKWID_EVTSEL_INV | LIKWID_EVTSEL_CMASK);
                (void) snprintf(name, sizeof(name), "PMC%u 0x%" PRIx64, i, config);
                plan_add(ret, config, v & LIKWID_EVTSEL_OS, LIKWID_SLOT_PMC, i, name);
        }
        plan_close_group(ret, first);
        return 0;
}

uint64_t likwid_perf_scale(uint64_t value, uint64_t time_enabled, uint64_t time_running) {
        if (time_running == 0 || time_running >= time_enabled)
                return value;
        return (uint64_t) ((unsigned __int128) value * time_enabled / time_running);
}

static uint64_t *counter_of(LikwidPerfCounts *c, LikwidPerfSlot slot) {
        switch (slot.kind) {
        case LIKWID_SLOT_PMC:
                return slot.index < LIKWID_PERF_GP_MAX ? &c->pmc[slot.index] : NULL;
        case LIKWID_SLOT_FIXED:
                return slot.index < LIKWID_PERF_FIXED_MAX ? &c->fixed[slot.index] : NULL;
        case LIKWID_SLOT_METRIC:
                return slot.index < LIKWID_PERF_METRICS_MAX ? &c->metric[slot.index] : NULL;
        }
        return NULL;
}

void likwid_perf_counts_sample(LikwidPerfCounts *c, const LikwidPerfPlan *p, const uint64_t *values) {
        for (size_t i = 0; i < p->n_events; i++) {
                /* perf's counts are 64 bits from the open and never wrap in a run */
                uint64_t delta = values[i] >= c->last[i] ? values[i] - c->last[i] : 0;
                uint64_t *reg = counter_of(c, p->slots[i]);

                if (c->counting && c->sampled && reg) {
                        *reg += delta;
                        if ((int) i == p->slots_event)
                                c->metric_slots += delta;
                }
                c->last[i] = values[i];
        }
        c->sampled = true;
}

void likwid_perf_counts_rebase(LikwidPerfCounts *c, const LikwidPerfPlan *p, const uint64_t *values) {
        for (size_t i = 0; i < p->n_events; i++)
                c->last[i] = values[i];
        c->sampled = true;
}

uint64_t likwid_perf_metrics_register(const uint64_t *metric, size_t n, uint64_t slots) {
        uint64_t reg = 0;

        if (slots == 0)
                return 0;
        for (size_t i = 0; i < MIN(n, (size_t) LIKWID_PERF_METRICS_MAX); i++) {
                uint64_t byte = (uint64_t) (((unsigned __int128) metric[i] * METRIC_FULL + slots / 2) / slots);

                reg |= MIN(byte, (uint64_t) METRIC_FULL) << (i * METRIC_BITS);
        }
        return reg;
}

uint64_t likwid_perf_counts_read(const LikwidPerfCounts *c, const LikwidPerfModel *m, LikwidPerfRegKind kind,
                                 unsigned index) {
        uint64_t mask = m->counter_width >= 64 ? UINT64_MAX : (UINT64_C(1) << m->counter_width) - 1;

        switch (kind) {
        case LIKWID_PERF_REG_PMC:
                return index < LIKWID_PERF_GP_MAX ? c->pmc[index] & mask : 0;
        case LIKWID_PERF_REG_FIXED_CTR:
                return index < LIKWID_PERF_FIXED_MAX ? c->fixed[index] & mask : 0;
        case LIKWID_PERF_REG_PERF_METRICS:
                return likwid_perf_metrics_register(c->metric, LIKWID_PERF_METRICS_MAX, c->metric_slots);
        default:
                return 0;
        }
}

void likwid_perf_counts_write(LikwidPerfCounts *c, LikwidPerfRegKind kind, unsigned index, uint64_t value) {
        switch (kind) {
        case LIKWID_PERF_REG_PMC:
                if (index < LIKWID_PERF_GP_MAX)
                        c->pmc[index] = value;
                break;
        case LIKWID_PERF_REG_FIXED_CTR:
                if (index < LIKWID_PERF_FIXED_MAX)
                        c->fixed[index] = value;
                break;
        case LIKWID_PERF_REG_PERF_METRICS:
                /* The register restarts its fractions; so do they here. */
                memset(c->metric, 0, sizeof(c->metric));
                c->metric_slots = 0;
                break;
        default:
                break;
        }
}

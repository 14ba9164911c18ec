/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clean PMU per model, and the restore and write values that keep to it
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "macro.h"
#include "pmu/clean-table.h"

#define BIT(n) (UINT64_C(1) << (n))

/* Intel IA32_PERFEVTSELx (pmu-registers.md §2.4): PC 19, INT 20, EN 22. */
#define EVTSEL_OFF (BIT(19) | BIT(20) | BIT(22))
/* IA32_FIXED_CTR_CTRL (§2.5): OS, USR and PMI of each of the four fields. */
#define FIXED_CTRL_OFF UINT64_C(0xBBBB)
/* GLOBAL_STATUS (§2.6): PMC0-7, FIXED_CTR0-3, PERF_METRICS; what exists is the model's. */
#define GLOBAL_STATUS_COUNTERS (UINT64_C(0xFF) | UINT64_C(0xF) << 32 | BIT(48))
/* AMD PerfEvtSel (§3.1): INT 20, EN 22; L3 and data fabric (§3.3): EN 22. */
#define AMD_EVTSEL_OFF (BIT(20) | BIT(22))
#define AMD_UNCORE_OFF BIT(22)
#define AMD_STATUS_COUNTERS UINT64_C(0x3F)
/* Skylake-SP IMC (§6.1): event and fixed control EN 22 and overflow enable 20; box control
 * FRZ 8 and FRZ_EN 16; box status bit i for CTRi, 4 for the fixed counter, write 1 to clear. */
#define IMC_CTL_OFF (BIT(20) | BIT(22))
#define IMC_BOX_CTL_OFF (BIT(8) | BIT(16))
#define IMC_BOX_STATUS_COUNTERS UINT64_C(0x1F)

#define REG(p, a, b, s, k, o, clr, n) \
        { .pci = (p), .first = (a), .last = (b), .stride = (s), .kind = (k), .off = (o), .clear_reg = (clr), .name = (n) }
#define COUNTERS(a, b, s, n) REG(false, a, b, s, CLEAN_COUNTER, 0, 0, n)
#define CONTROL(a, b, s, o, n) REG(false, a, b, s, CLEAN_CONTROL, o, 0, n)
#define STATUS(a, clr, o, n) REG(false, a, a, 1, CLEAN_STATUS, o, clr, n)
#define ACTION(a, n) REG(false, a, a, 1, CLEAN_ACTION, 0, 0, n)
#define PCI_COUNTERS(a, b, s, n) REG(true, a, b, s, CLEAN_COUNTER, 0, 0, n)
#define PCI_CONTROL(a, b, s, o, n) REG(true, a, b, s, CLEAN_CONTROL, o, 0, n)
#define PCI_STATUS(a, clr, o, n) REG(true, a, a, 1, CLEAN_STATUS, o, clr, n)

#define INTEL_CORE                                                                                      \
        COUNTERS(0x0C1, 0x0C8, 1, "IA32_PMC"),                                                          \
        CONTROL(0x186, 0x18D, 1, EVTSEL_OFF, "IA32_PERFEVTSEL"),                                        \
        CONTROL(0x1A6, 0x1A7, 1, 0, "MSR_OFFCORE_RSP"),                                                 \
        COUNTERS(0x309, 0x30C, 1, "IA32_FIXED_CTR"),                                                    \
        COUNTERS(0x329, 0x329, 1, "MSR_PERF_METRICS"),                                                  \
        CONTROL(0x38D, 0x38D, 1, FIXED_CTRL_OFF, "IA32_FIXED_CTR_CTRL"),                                \
        STATUS(0x38E, 0x390, GLOBAL_STATUS_COUNTERS, "IA32_PERF_GLOBAL_STATUS"),                        \
        /* The kernel enables every counter here and each one in its own control register:    \
         * the global enables may stay as found, EN and the fixed fields stop the counters. */  \
        CONTROL(0x38F, 0x38F, 1, 0, "IA32_PERF_GLOBAL_CTRL"),                                           \
        ACTION(0x390, "IA32_PERF_GLOBAL_STATUS_RESET"),                                                 \
        ACTION(0x391, "IA32_PERF_GLOBAL_STATUS_SET"),                                                   \
        COUNTERS(0x4C1, 0x4C8, 1, "IA32_A_PMC")

static const CleanReg intel_skx[] = {
        INTEL_CORE,
        PCI_COUNTERS(0x0A0, 0x0B8, 8, "IMC_PMON_CTR"),
        PCI_COUNTERS(0x0D0, 0x0D0, 1, "IMC_PMON_FIXED_CTR"),
        PCI_CONTROL(0x0D8, 0x0E4, 4, IMC_CTL_OFF, "IMC_PMON_CTL"),
        PCI_CONTROL(0x0F0, 0x0F0, 1, IMC_CTL_OFF, "IMC_PMON_FIXED_CTL"),
        PCI_CONTROL(0x0F4, 0x0F4, 1, IMC_BOX_CTL_OFF, "IMC_PMON_BOX_CTL"),
        PCI_STATUS(0x0F8, 0x0F8, IMC_BOX_STATUS_COUNTERS, "IMC_PMON_BOX_STATUS"),
};

/* Ice Lake-SP, Sapphire, Emerald and Granite Rapids serve no uncore box (their memory controllers are MMIO). */
static const CleanReg intel_icx_spr[] = {
        INTEL_CORE,
};

/* Sierra Forest: the core PMU without offcore response, TOPDOWN.SLOTS or PERF_METRICS (its
 * allowlist has none of them); GLOBAL_STATUS bits of absent counters read 0. */
static const CleanReg intel_srf[] = {
        COUNTERS(0x0C1, 0x0C8, 1, "IA32_PMC"),
        CONTROL(0x186, 0x18D, 1, EVTSEL_OFF, "IA32_PERFEVTSEL"),
        COUNTERS(0x309, 0x30B, 1, "IA32_FIXED_CTR"),
        CONTROL(0x38D, 0x38D, 1, FIXED_CTRL_OFF, "IA32_FIXED_CTR_CTRL"),
        STATUS(0x38E, 0x390, GLOBAL_STATUS_COUNTERS, "IA32_PERF_GLOBAL_STATUS"),
        CONTROL(0x38F, 0x38F, 1, 0, "IA32_PERF_GLOBAL_CTRL"),
        ACTION(0x390, "IA32_PERF_GLOBAL_STATUS_RESET"),
        ACTION(0x391, "IA32_PERF_GLOBAL_STATUS_SET"),
        COUNTERS(0x4C1, 0x4C8, 1, "IA32_A_PMC"),
};

static const CleanReg amd_zen[] = {
        STATUS(0xC0000300, 0xC0000302, AMD_STATUS_COUNTERS, "AMD_PERF_CNTR_GLOBAL_STATUS"),
        /* As on Intel: the kernel sets every global enable; PerfEvtSel.EN stops a counter. */
        CONTROL(0xC0000301, 0xC0000301, 1, 0, "AMD_PERF_CNTR_GLOBAL_CTL"),
        ACTION(0xC0000302, "AMD_PERF_CNTR_GLOBAL_STATUS_CLR"),
        ACTION(0xC0000303, "AMD_PERF_CNTR_GLOBAL_STATUS_SET"),
        CONTROL(0xC0010200, 0xC001020A, 2, AMD_EVTSEL_OFF, "AMD_PERF_CTL"),
        COUNTERS(0xC0010201, 0xC001020B, 2, "AMD_PERF_CTR"),
        CONTROL(0xC0010230, 0xC001023A, 2, AMD_UNCORE_OFF, "AMD_L3_PERF_CTL"),
        COUNTERS(0xC0010231, 0xC001023B, 2, "AMD_L3_PERF_CTR"),
        CONTROL(0xC0010240, 0xC001025E, 2, AMD_UNCORE_OFF, "AMD_DF_PERF_CTL"),
        COUNTERS(0xC0010241, 0xC001025F, 2, "AMD_DF_PERF_CTR"),
};

static const CleanTable tables[] = {
        { .models = { "skx", "clx" }, .regs = intel_skx, .n_regs = ELEMENTSOF(intel_skx) },
        { .models = { "icx", "spr", "emr", "gnr" }, .regs = intel_icx_spr, .n_regs = ELEMENTSOF(intel_icx_spr) },
        { .models = { "srf" }, .regs = intel_srf, .n_regs = ELEMENTSOF(intel_srf) },
        { .models = { "zen4", "zen5" }, .regs = amd_zen, .n_regs = ELEMENTSOF(amd_zen) },
};

static const char *const kind_names[_CLEAN_KIND_MAX] = {
        [CLEAN_COUNTER] = "counter",
        [CLEAN_CONTROL] = "control",
        [CLEAN_STATUS] = "status",
        [CLEAN_ACTION] = "action",
};

const char *clean_kind_to_string(CleanKind k) {
        if ((unsigned) k >= _CLEAN_KIND_MAX)
                return NULL;
        return kind_names[k];
}

const CleanTable *clean_tables(size_t *ret_n) {
        *ret_n = ELEMENTSOF(tables);
        return tables;
}

const CleanTable *clean_table_for(const CpuModel *model) {
        if (!model || !model->key)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(tables); i++)
                for (size_t k = 0; k < ELEMENTSOF(tables[i].models) && tables[i].models[k]; k++)
                        if (strcmp(tables[i].models[k], model->key) == 0)
                                return &tables[i];
        return NULL;
}

const CleanReg *clean_find(const CleanTable *t, uint32_t reg, bool pci) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_regs; i++) {
                const CleanReg *c = &t->regs[i];

                if (c->pci == pci && reg >= c->first && reg <= c->last && (reg - c->first) % c->stride == 0)
                        return c;
        }
        return NULL;
}

static uint64_t width_mask(unsigned width) {
        return width >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * width)) - 1;
}

uint64_t clean_restore_value(const AllowEntry *e, const CleanReg *c, uint64_t current, uint64_t original,
                             uint64_t keep) {
        uint64_t full = width_mask(e->width), mask = e->write_mask & full, v;

        /* A counter's count belongs to the holder whatever the journal says: it goes to zero. */
        if ((e->flags & ALLOW_FLAG_COUNTER) || (c && c->kind == CLEAN_COUNTER))
                return 0;
        if (!c || c->kind != CLEAN_CONTROL)
                v = (current & ~mask) | (original & mask);
        else {
                v = (c->value & ~mask) | (original & mask);
                v = (v & ~c->off) | (c->value & c->off);
        }
        return ((v & ~keep) | (current & keep)) & full;
}

uint64_t clean_write_value(const AllowEntry *e, const CleanReg *c, uint64_t current, uint64_t value,
                           uint64_t mask, uint64_t keep) {
        uint64_t full = width_mask(e->width), writable = e->write_mask & full;

        mask &= writable;
        if (!c || c->kind != CLEAN_CONTROL)
                return ((current & ~mask) | (value & mask)) & full;
        /* The client's other writable bits and foreign bits stay; what it may not write at all
         * is the clean value, not whatever someone else left there. */
        keep = ((writable & ~mask) | keep) & ~mask;
        return ((value & mask) | (current & keep) | (c->value & ~writable & ~keep)) & full;
}

bool clean_write_needs_current(const AllowEntry *e, const CleanReg *c, uint64_t mask, uint64_t keep) {
        uint64_t full = width_mask(e->width), writable = e->write_mask & full;

        mask &= writable;
        if (c && c->kind == CLEAN_CONTROL)
                return ((writable & ~mask) | keep) != 0;
        return (mask & full) != full;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The PMUs the simulated machine shows the perf_event path, as a kernel's sysfs would: "cpu"
 * (PERF_TYPE_RAW; on Grace "armv8_pmuv3_0" of a dynamic type with its TopDown slots), "hardware" and, on the Intel models with kernel-uncore IMC counters, one
 * "uncore_imc_<n>" per memory-controller box
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

#include "backend/sim/backend-sim.h"
#include "backend/sim/sim-model.h"
#include "backend/sim/sim-perf-pmus.h"
#include "backend/sim/sim-perf.h"
#include "backend/sim/sim-regs.h"
#include "macro.h"

static void add_format(PerfPmu *p, const char *name, uint64_t mask) {
        PerfFormatField *f = &p->formats[p->n_formats++];

        (void) snprintf(f->name, sizeof(f->name), "%s", name);
        f->config_word = 0;
        f->mask = mask;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(PerfCatalog *, perf_catalog_free);

int sim_perf_catalog(Backend *b, PerfCatalog **ret) {
        _cleanup_(perf_catalog_freep) PerfCatalog *c = NULL;
        const SimModel *m = backend_sim_model(b);
        SimPerfBox boxes[SIM_PERF_UNCORE_BOXES_MAX];
        size_t n_boxes;
        PerfPmu cpu = {
                .name = "cpu",
                .type = PERF_TYPE_RAW,
                .kind = PERF_PMU_CORE,
                .package = -1,
                .cpu = -1,
                .write_class = "core-pmu",
        }, hardware = {
                .name = "hardware",
                .type = PERF_TYPE_HARDWARE,
                .kind = PERF_PMU_CORE,
                .package = -1,
                .cpu = -1,
                /* the generic ids below PERF_COUNT_HW_MAX; the driver refuses the rest */
                .config_mask = { HARDWARE_CONFIG_MASK },
                .write_class = "core-pmu",
        };
        int r;

        if (!m)
                return -EINVAL;
        if (m->arm) {
                (void) snprintf(cpu.name, sizeof(cpu.name), "%s", SIM_PERF_ARM_CORE_PMU);
                cpu.type = SIM_PERF_ARM_CORE_TYPE;
                cpu.config_mask[0] = ARM_RAW_CONFIG_MASK;
                cpu.slots = (uint8_t) m->slots_width;
                add_format(&cpu, "event", ARM_RAW_CONFIG_MASK);
        } else {
                cpu.config_mask[0] = m->amd ? AMD_RAW_CONFIG_MASK : INTEL_RAW_CONFIG_MASK;
                cpu.topdown = (uint8_t) m->perf_metrics;
                /* as the kernel's caps/branches: 32 entries of architectural LBR on the Intel
                 * models, 16 of AMD's LbrExtV2 (whose entries carry no cycles); Neoverse V2 has
                 * no branch record buffer, so Grace reports none */
                cpu.branches = m->amd ? 16 : 32;
                add_format(&cpu, "event", m->amd ? EVTSEL_EVENT_MASK |
                                                           AMD_EVTSEL_EVENT_HI_MASK << AMD_EVTSEL_EVENT_HI_SHIFT
                                                 : EVTSEL_EVENT_MASK);
                add_format(&cpu, "umask", EVTSEL_UMASK_MASK << EVTSEL_UMASK_SHIFT);
                add_format(&cpu, "edge", EVTSEL_EDGE);
                add_format(&cpu, "inv", EVTSEL_INV);
                add_format(&cpu, "cmask", EVTSEL_CMASK_MASK << EVTSEL_CMASK_SHIFT);
                if (!m->amd && m->perf_metrics >= 2) {
                        /* the kernel's frontend field of Sapphire Rapids and later: MSR_PEBS_FRONTEND */
                        add_format(&cpu, "frontend", UINT64_C(0xFFFFFF));
                        cpu.formats[cpu.n_formats - 1].config_word = 1;
                        cpu.config_mask[1] = UINT64_C(0xFFFFFF);
                }
        }

        r = perf_catalog_new(&c);
        if (r < 0)
                return r;
        r = perf_catalog_add(c, &cpu);
        if (r >= 0)
                r = perf_catalog_add(c, &hardware);
        n_boxes = m->amd ? 0 : sim_perf_find_boxes(b->machine, boxes);
        for (size_t i = 0; r >= 0 && i < n_boxes; i++) {
                PerfPmu u = {
                        .type = boxes[i].type,
                        .kind = PERF_PMU_UNCORE,
                        .package = boxes[i].package,
                        .cpu = (int) boxes[i].cpu,
                        .config_mask = { 0xFFFF },
                        .write_class = "uncore-imc",
                };

                memcpy(u.name, boxes[i].name, sizeof(u.name));
                add_format(&u, "event", EVTSEL_EVENT_MASK);
                add_format(&u, "umask", EVTSEL_UMASK_MASK << EVTSEL_UMASK_SHIFT);
                r = perf_catalog_add(c, &u);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

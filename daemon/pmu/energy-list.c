/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The built-in energy list
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"
#include "pmu/energy-list.h"

/* Sorted by address. The scopes are the hardware's, whatever an allowlist says: PP0 counts
 * every core of the package, PSYS the platform around the packages. */
static const EnergyRegister energy_list[] = {
        { 0x00000611, ENERGY_SCOPE_PACKAGE, "MSR_PKG_ENERGY_STATUS" },
        { 0x00000619, ENERGY_SCOPE_PACKAGE, "MSR_DRAM_ENERGY_STATUS" },
        { 0x00000639, ENERGY_SCOPE_PACKAGE, "MSR_PP0_ENERGY_STATUS" },
        { 0x00000641, ENERGY_SCOPE_PACKAGE, "MSR_PP1_ENERGY_STATUS" },
        { 0x0000064D, ENERGY_SCOPE_MACHINE, "MSR_PLATFORM_ENERGY_STATUS" },
        { 0xC001029A, ENERGY_SCOPE_CORE, "AMD_CORE_ENERGY_STAT" },
        { 0xC001029B, ENERGY_SCOPE_PACKAGE, "AMD_PKG_ENERGY_STAT" },
};

const EnergyRegister *energy_list_lookup(uint32_t msr) {
        for (size_t i = 0; i < ELEMENTSOF(energy_list); i++)
                if (energy_list[i].msr == msr)
                        return &energy_list[i];
        return NULL;
}

bool energy_list_overlaps(uint32_t first, uint32_t last) {
        for (size_t i = 0; i < ELEMENTSOF(energy_list); i++)
                if (energy_list[i].msr >= first && energy_list[i].msr <= last)
                        return true;
        return false;
}

int energy_scope_cpus(const Machine *m, const EnergyRegister *e, uint32_t cpu, CpuSet *ret) {
        const MachineCpu *c = machine_cpu(m, cpu);

        if (!c || !c->online)
                return -ENXIO;
        switch (e->scope) {
        case ENERGY_SCOPE_CORE:
                return machine_scope_cpus(m, REG_SCOPE_CORE, cpu, false, ret);
        case ENERGY_SCOPE_PACKAGE:
                return machine_scope_cpus(m, REG_SCOPE_PACKAGE, cpu, false, ret);
        default:
                cpuset_clear(ret);
                for (uint32_t i = 0; i < m->n_cpus; i++)
                        if (m->cpus[i].present && m->cpus[i].online)
                                cpuset_add(ret, i);
                return 0;
        }
}

void energy_scope_describe(const Machine *m, const EnergyRegister *e, uint32_t cpu, char *buf, size_t size) {
        const MachineCpu *c = machine_cpu(m, cpu);
        int32_t package = c ? c->package : -1;

        switch (e->scope) {
        case ENERGY_SCOPE_CORE:
                (void) snprintf(buf, size, "every thread of CPU %" PRIu32 "'s core", cpu);
                break;
        case ENERGY_SCOPE_PACKAGE:
                (void) snprintf(buf, size, "all of package %" PRIi32, package);
                break;
        default:
                (void) snprintf(buf, size, "the whole machine");
                break;
        }
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The built-in energy list: the MSRs that count energy (RAPL on Intel and AMD, AMD's per-core
 * energy). Their readings are a power side channel on whoever else runs on the CPUs they count
 * for (CVE-2020-8694, CVE-2020-8695, CVE-2020-12912): a user reads them only holding every one
 * of those CPUs, unless pmugate.conf's energy_read_shared opts in. Built in rather than an
 * allowlist flag, so that an allowlist that forgets it, or gives a register too narrow a
 * scope, cannot hand energy out.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/machine.h"
#include "cpuset.h"

typedef enum EnergyScope {
        ENERGY_SCOPE_CORE,      /* every thread of the core (AMD_CORE_ENERGY_STAT counts both) */
        ENERGY_SCOPE_PACKAGE,   /* every CPU of the package */
        ENERGY_SCOPE_MACHINE,   /* every CPU of the machine (the platform's psys domain) */
        _ENERGY_SCOPE_MAX,
} EnergyScope;

typedef struct EnergyRegister {
        uint32_t msr;
        EnergyScope scope;
        const char *name;
} EnergyRegister;

/* The entry for msr, or NULL when it counts no energy. */
const EnergyRegister *energy_list_lookup(uint32_t msr);

/* Whether any energy register lies within first-last (the allowlist parser flags such
 * entries, so the per-op check looks only there). */
bool energy_list_overlaps(uint32_t first, uint32_t last);

/* The online CPUs whose energy the register read on cpu counts. Returns 0 with a non-empty
 * set, or -ENXIO when cpu does not exist or is offline. */
int energy_scope_cpus(const Machine *m, const EnergyRegister *e, uint32_t cpu, CpuSet *ret);

/* "core 3 of package 0", "package 1", "the whole machine": what the register counts for. */
void energy_scope_describe(const Machine *m, const EnergyRegister *e, uint32_t cpu, char *buf, size_t size);

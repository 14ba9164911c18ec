/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: package-scope quantities. Memory traffic from the daemon's package counters and
 * RAPL energy as bytes and joules, with the counters' wraps taken out.
 *
 * The daemon serves the kernel's uncore memory-controller events as read-only counters
 * (pmugate_info.counters, read with pmugate_batch_read_counter()) and the RAPL energy MSRs as
 * package registers (pmugate_batch_read_msr() on any CPU of the package). Both count for the
 * whole package, so in job mode they are readable only to a job holding the whole package,
 * unless the policy shares package reads.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How much a counter width bits wide (1-64) advanced from before to after, taking one wrap
 * into account: sample at least once per wrap period. */
uint64_t pmugate_counter_delta(uint64_t before, uint64_t after, unsigned width);

typedef enum pmugate_counter_kind {
        PMUGATE_COUNTER_OTHER,
        PMUGATE_COUNTER_DRAM_READ,      /* cas_count_read, or the free-running read counter */
        PMUGATE_COUNTER_DRAM_WRITE,     /* cas_count_write, or the free-running write counter */
} pmugate_counter_kind;

/* What a package counter measures, from its event name. */
pmugate_counter_kind pmugate_counter_kind_of(const pmugate_counter *c);

/* Bytes one count of a memory-traffic counter stands for (its scale in its unit: B, KiB, MiB,
 * GiB, KB, MB, GB); 0 when the unit is not a size. The kernel's CAS and free-running counters
 * give 64 (one cache line). */
double pmugate_counter_bytes(const pmugate_counter *c);

/* RAPL energy domains (Intel SDM vol. 3B §15.10). */
typedef enum pmugate_rapl_domain {
        PMUGATE_RAPL_PACKAGE,           /* MSR_PKG_ENERGY_STATUS */
        PMUGATE_RAPL_DRAM,              /* MSR_DRAM_ENERGY_STATUS */
        PMUGATE_RAPL_PP0,               /* MSR_PP0_ENERGY_STATUS (cores) */
        PMUGATE_RAPL_PLATFORM,          /* MSR_PLATFORM_ENERGY_STATUS (psys) */
        _PMUGATE_RAPL_DOMAIN_MAX,
} pmugate_rapl_domain;

#define PMUGATE_MSR_RAPL_POWER_UNIT 0x606U
#define PMUGATE_RAPL_ENERGY_WIDTH 32U   /* the energy status counters are 32 bits and wrap */

/* The energy status MSR of a domain, or 0 for an unknown domain. */
uint32_t pmugate_rapl_energy_msr(pmugate_rapl_domain d);

/* AMD Zen 4 and Zen 5 (pmu-registers.md §3.4): RAPL_PWR_UNIT, with the energy unit in the same
 * bits 12:8, and the package energy counter, 32 bits. */
#define PMUGATE_MSR_AMD_RAPL_PWR_UNIT 0xC0010299U
#define PMUGATE_MSR_AMD_PKG_ENERGY_STAT 0xC001029BU

/* The same for a CPU model ("zen4", "zen5": AMD's registers; any other model: Intel's). */
uint32_t pmugate_rapl_energy_msr_for(const char *model_key, pmugate_rapl_domain d);
uint32_t pmugate_rapl_power_unit_msr(const char *model_key);

/* "PACKAGE", "DRAM", "PP0", "PLATFORM". */
const char *pmugate_rapl_domain_name(pmugate_rapl_domain d);

/* Joules per count of a domain on a CPU model ("skx", "clx", "icx", "spr", "emr", "gnr", "srf",
 * "zen4", "zen5"; AMD has the package domain only), from the value of
 * MSR_RAPL_POWER_UNIT: 2^-ESU J, except the server parts' fixed DRAM unit (2^-16 J on
 * Skylake-SP, Cascade Lake and Ice Lake-SP) and the platform domain's 1 J on Sapphire Rapids
 * (and Emerald Rapids, Granite Rapids, Sierra Forest, which share its domains).
 * -EOPNOTSUPP when the model has no such domain (PP0 on those, PLATFORM before them)
 * or the model is unknown. */
int pmugate_rapl_joules_per_count(const char *model_key, pmugate_rapl_domain d, uint64_t power_unit,
                                  double *ret_joules);

#ifdef __cplusplus
}
#endif

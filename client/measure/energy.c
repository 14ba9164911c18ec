/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: RAPL energy units per model (pmu-registers.md §2.10)
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "macro.h"
#include "pmugate/package.h"

#define RAPL_ESU_SHIFT 8
#define RAPL_ESU_MASK 0x1fU
#define RAPL_DRAM_FIXED_ESU 16          /* Skylake-SP, Cascade Lake, Ice Lake-SP ("model_hsx") */

static const struct {
        uint32_t msr;
        const char *name;
} domains[_PMUGATE_RAPL_DOMAIN_MAX] = {
        [PMUGATE_RAPL_PACKAGE] = { 0x611, "PACKAGE" },
        [PMUGATE_RAPL_DRAM] = { 0x619, "DRAM" },
        [PMUGATE_RAPL_PP0] = { 0x639, "PP0" },
        [PMUGATE_RAPL_PLATFORM] = { 0x64D, "PLATFORM" },
};

uint32_t pmugate_rapl_energy_msr(pmugate_rapl_domain d) {
        return (unsigned) d < _PMUGATE_RAPL_DOMAIN_MAX ? domains[d].msr : 0;
}

static bool model_is_amd(const char *model_key) {
        return model_key && (strcmp(model_key, "zen4") == 0 || strcmp(model_key, "zen5") == 0);
}

uint32_t pmugate_rapl_energy_msr_for(const char *model_key, pmugate_rapl_domain d) {
        if (model_is_amd(model_key))
                return d == PMUGATE_RAPL_PACKAGE ? PMUGATE_MSR_AMD_PKG_ENERGY_STAT : 0;
        return pmugate_rapl_energy_msr(d);
}

uint32_t pmugate_rapl_power_unit_msr(const char *model_key) {
        return model_is_amd(model_key) ? PMUGATE_MSR_AMD_RAPL_PWR_UNIT : PMUGATE_MSR_RAPL_POWER_UNIT;
}

const char *pmugate_rapl_domain_name(pmugate_rapl_domain d) {
        return (unsigned) d < _PMUGATE_RAPL_DOMAIN_MAX ? domains[d].name : NULL;
}

int pmugate_rapl_joules_per_count(const char *model_key, pmugate_rapl_domain d, uint64_t power_unit,
                                  double *ret_joules) {
        bool spr, hsx_dram;
        unsigned esu = (unsigned) (power_unit >> RAPL_ESU_SHIFT) & RAPL_ESU_MASK;

        if (!model_key || !ret_joules || (unsigned) d >= _PMUGATE_RAPL_DOMAIN_MAX)
                return -EINVAL;
        /* AMD: the package counter only (perf's rapl.c, model_amd_hygon), in 2^-ESU J */
        if (model_is_amd(model_key)) {
                if (d != PMUGATE_RAPL_PACKAGE)
                        return -EOPNOTSUPP;
                *ret_joules = ldexp(1.0, -(int) esu);
                return 0;
        }
        /* Emerald Rapids and Sierra Forest have Sapphire Rapids' domains (perf's rapl.c:
         * model_spr); Granite Rapids is taken to have them too (docs/TOPDOWN.md says what is
         * not checked) */
        spr = strcmp(model_key, "spr") == 0 || strcmp(model_key, "emr") == 0 ||
              strcmp(model_key, "gnr") == 0 || strcmp(model_key, "srf") == 0;
        hsx_dram = strcmp(model_key, "skx") == 0 || strcmp(model_key, "clx") == 0 ||
                   strcmp(model_key, "icx") == 0;
        if (!spr && !hsx_dram)
                return -EOPNOTSUPP;
        switch (d) {
        case PMUGATE_RAPL_PP0:
                if (spr)
                        return -EOPNOTSUPP;
                break;
        case PMUGATE_RAPL_PLATFORM:
                if (!spr)
                        return -EOPNOTSUPP;
                *ret_joules = 1.0;
                return 0;
        case PMUGATE_RAPL_DRAM:
                if (hsx_dram)
                        esu = RAPL_DRAM_FIXED_ESU;
                break;
        default:
                break;
        }
        *ret_joules = ldexp(1.0, -(int) esu);
        return 0;
}

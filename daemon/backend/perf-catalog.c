/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf_event path's catalogue of PMUs: the table every PMU a client may name is looked up
 * in. perf_catalog_read_sysfs() (perf-catalog-sysfs.c) fills it from the kernel's sysfs, the
 * simulator's driver from its model.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "backend/perf-catalog.h"
#include "macro.h"

static const char *const kind_names[_PERF_PMU_KIND_MAX] = {
        [PERF_PMU_CORE] = "core",
        [PERF_PMU_UNCORE] = "uncore",
        [PERF_PMU_SOFTWARE] = "software",
};

const char *perf_pmu_kind_to_string(PerfPmuKind k) {
        return k >= 0 && k < _PERF_PMU_KIND_MAX ? kind_names[k] : NULL;
}

int perf_catalog_new(PerfCatalog **ret) {
        _cleanup_free_ PerfCatalog *c = calloc(1, sizeof(*c));
        PerfPmu software = {
                .name = "software",
                .type = PERF_TYPE_SOFTWARE,
                .kind = PERF_PMU_SOFTWARE,
                .package = -1,
                .cpu = -1,
        };
        int r;

        if (!c)
                return -ENOMEM;
        c->pmus = calloc(PERF_PMUS_MAX, sizeof(PerfPmu));
        if (!c->pmus)
                return -ENOMEM;
        r = perf_catalog_add(c, &software);
        if (r < 0) {
                free(c->pmus);
                return r;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

int perf_catalog_add(PerfCatalog *c, const PerfPmu *p) {
        if (perf_catalog_find(c, p->name) || perf_catalog_find_type(c, p->type))
                return -EEXIST;
        if (c->n_pmus >= PERF_PMUS_MAX)
                return -E2BIG;
        c->pmus[c->n_pmus] = *p;
        c->pmus[c->n_pmus].name[sizeof(p->name) - 1] = '\0';
        c->n_pmus++;
        return 0;
}

const PerfPmu *perf_catalog_find(const PerfCatalog *c, const char *name) {
        for (size_t i = 0; c && i < c->n_pmus; i++)
                if (strncmp(c->pmus[i].name, name, sizeof(c->pmus[i].name)) == 0)
                        return &c->pmus[i];
        return NULL;
}

const PerfPmu *perf_catalog_find_type(const PerfCatalog *c, uint32_t type) {
        for (size_t i = 0; c && i < c->n_pmus; i++)
                if (c->pmus[i].type == type)
                        return &c->pmus[i];
        return NULL;
}

const PerfPmu *perf_catalog_core(const PerfCatalog *c) {
        for (size_t i = 0; c && i < c->n_pmus; i++)
                if (c->pmus[i].kind == PERF_PMU_CORE)
                        return &c->pmus[i];
        return NULL;
}

PerfCatalog *perf_catalog_free(PerfCatalog *c) {
        if (c) {
                free(c->pmus);
                free(c);
        }
        return NULL;
}

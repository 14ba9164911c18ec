/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The PMUs the kernel shows under sys/bus/event_source/devices (read from --root as hostile
 * input), or the simulator shows in its place: each PMU's attr.type, kind, format fields and,
 * for uncore PMUs, the package and the CPU its cpumask names.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/machine.h"
#include "pmugate-limits.h"

typedef enum PerfPmuKind {
        PERF_PMU_CORE,
        PERF_PMU_UNCORE,
        PERF_PMU_SOFTWARE,
        _PERF_PMU_KIND_MAX,
} PerfPmuKind;

const char *perf_pmu_kind_to_string(PerfPmuKind k);

/* Where a format field's value goes: a config word (0 config, 1 config1, 2 config2) and its bits. */
typedef struct PerfFormatField {
        char name[16];
        unsigned config_word;
        uint64_t mask;
} PerfFormatField;

typedef struct PerfPmu {
        char name[PERF_PMU_NAME_MAX];   /* "cpu", "cpu_core", "armv8_pmuv3_0", "uncore_imc_0", "software" */
        uint32_t type;                  /* attr.type */
        PerfPmuKind kind;
        int package;                    /* uncore: its package; -1 for core and software */
        int cpu;                        /* uncore: the CPU its cpumask names, where events open; -1 */
        uint64_t config_mask[3];        /* the union of its format fields, per config word */
        PerfFormatField formats[PERF_PMU_FORMATS_MAX];
        size_t n_formats;
        char write_class[16];           /* the register class whose write right its events need
                                         * ("core-pmu", "uncore-imc", ...); "" for software */
        uint8_t topdown;                /* core PMU: 0 none, 1 slots and level-1 metric events
                                         * (events/topdown-retiring), 2 level 2 too (topdown-heavy-ops) */
        uint32_t branches;              /* core PMU: the Last Branch Record's depth (sysfs
                                         * caps/branches, at most TIMING_BRANCHES_MAX); 0: no
                                         * branch stack, or not known */
} PerfPmu;

typedef struct PerfCatalog {
        PerfPmu *pmus;
        size_t n_pmus;
} PerfCatalog;

/* Reads <root>/sys/bus/event_source/devices: the core PMU ("cpu", "cpu_core", or an ARM
 * "armv8_*"), uncore PMUs with a cpumask (package from m's topology), and adds "software"
 * (PERF_TYPE_SOFTWARE) and, with a core PMU, "hardware" (PERF_TYPE_HARDWARE). A PMU whose
 * files do not parse is left out with a log line. Returns 0 or a negative errno. */
int perf_catalog_read_sysfs(const char *root, const Machine *m, PerfCatalog **ret);

/* An empty catalogue with "software" only, for a driver to fill (the simulator's). */
int perf_catalog_new(PerfCatalog **ret);
/* Adds a copy of p; -EEXIST for a name or type already there, -E2BIG past PERF_PMUS_MAX. */
int perf_catalog_add(PerfCatalog *c, const PerfPmu *p);
const PerfPmu *perf_catalog_find(const PerfCatalog *c, const char *name);
const PerfPmu *perf_catalog_find_type(const PerfCatalog *c, uint32_t type);
/* The core PMU, or NULL. */
const PerfPmu *perf_catalog_core(const PerfCatalog *c);
/* NULL-safe; returns NULL. */
PerfCatalog *perf_catalog_free(PerfCatalog *c);

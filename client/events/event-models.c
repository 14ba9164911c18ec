/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a model's event names come from besides pmugate's table: libpfm4's PMU for the model
 * and perf's generic names. Event lookup (events.c) and the event list (event-list.c) both
 * use it, so it sits below them.
 */
#include <perfmon/pfmlib.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "events/event-models.h"
#include "events/event-table.h"
#include "macro.h"

static const struct {
        const char *model;
        const char *pmu;
} libpfm_pmus[] = {
        { "skx", "skx" },
        { "clx", "clx" },
        { "icx", "icx" },
        { "spr", "spr" },
        /* libpfm4 4.13 has no Emerald Rapids table; its events are Sapphire Rapids' */
        { "emr", "spr" },
        /* nor a Granite Rapids one: its Redwood Cove core counts Golden Cove's events */
        { "gnr", "spr" },
        { "zen4", "amd64_fam19h_zen4" },
};

/* perf's generic hardware event names, for the events every supported model has: Intel's
 * names, and perf's own on AMD (where ref-cycles has no event). */
static const struct {
        const char *alias;
        const char *intel;
        const char *amd;
        const char *arm;                /* the kernel's armv8_pmuv3_perf_map */
        const char *intel_older;        /* the Intel name in older models' event lists, if another */
} generic_events[] = {
        { "instructions", "INST_RETIRED.ANY", "ex_ret_instr", "INST_RETIRED" },
        { "cycles", "CPU_CLK_UNHALTED.THREAD", "ls_not_halted_cyc", "CPU_CYCLES" },
        { "cpu-cycles", "CPU_CLK_UNHALTED.THREAD", "ls_not_halted_cyc", "CPU_CYCLES" },
        { "ref-cycles", "CPU_CLK_UNHALTED.REF_TSC", NULL, NULL },
        /* the kernel maps branch-instructions to PC_WRITE_RETIRED only on cores that have it;
         * BR_RETIRED is Neoverse V2's count of retired branches */
        { "branches", "BR_INST_RETIRED.ALL_BRANCHES", "ex_ret_brn", "BR_RETIRED" },
        { "branch-instructions", "BR_INST_RETIRED.ALL_BRANCHES", "ex_ret_brn", "BR_RETIRED" },
        { "branch-misses", "BR_MISP_RETIRED.ALL_BRANCHES", "ex_ret_brn_misp", "BR_MIS_PRED" },
        /* perf's on Intel are the last level cache's (event 0x2E, umasks 0x41 and 0x4F); its
         * AMD ones count L2 requests, which the simulated Zen's table does not have; ARM's the
         * L1 data cache's */
        { "cache-misses", "LONGEST_LAT_CACHE.MISS", NULL, "L1D_CACHE_REFILL" },
        { "cache-references", "LONGEST_LAT_CACHE.REFERENCES", NULL, "L1D_CACHE", "LONGEST_LAT_CACHE.REFERENCE" },
};

static bool model_is_amd(const char *model) {
        return (event_table_model(model) & EVENT_MODEL_AMD) != 0;
}

static bool model_is_arm(const char *model) {
        return (event_table_model(model) & EVENT_MODEL_GRACE) != 0;
}

bool event_generic_alias(const char *model, size_t i, const char **ret_alias, const char **ret_name) {
        if (i >= ELEMENTSOF(generic_events))
                return false;
        *ret_alias = generic_events[i].alias;
        *ret_name = model_is_arm(model) ? generic_events[i].arm :
                    model_is_amd(model) ? generic_events[i].amd : generic_events[i].intel;
        return true;
}

const char *event_generic_older_name(const char *model, const char *alias) {
        for (size_t i = 0; i < ELEMENTSOF(generic_events); i++)
                if (strcasecmp(generic_events[i].alias, alias) == 0)
                        return model_is_amd(model) || model_is_arm(model) ? NULL : generic_events[i].intel_older;
        return NULL;
}

/* The generic alias's index, or -1 when alias is none of perf's generic names. */
ssize_t event_generic_index(const char *alias) {
        for (size_t i = 0; i < ELEMENTSOF(generic_events); i++)
                if (strcasecmp(generic_events[i].alias, alias) == 0)
                        return (ssize_t) i;
        return -1;
}

static bool libpfm_pmu_present(const char *model);

static pthread_once_t libpfm_once = PTHREAD_ONCE_INIT;
static int libpfm_status = PFM_ERR_NOINIT;
static bool libpfm_present[ELEMENTSOF(libpfm_pmus)];

static void libpfm_init_once(void) {
        /* libpfm4 activates the PMUs of the host CPU (or the one named by $LIBPFM_FORCE_PMU),
         * so a simulated or remote model is only found when the caller arranged that. */
        libpfm_status = pfm_initialize();
        if (libpfm_status != PFM_SUCCESS)
                return;
        for (int p = 0; p < PFM_PMU_MAX; p++) {
                pfm_pmu_info_t info = { .size = sizeof(info) };

                if (pfm_get_pmu_info((pfm_pmu_t) p, &info) != PFM_SUCCESS || !info.name || !info.is_present)
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(libpfm_pmus); i++)
                        if (strcmp(info.name, libpfm_pmus[i].pmu) == 0)
                                libpfm_present[i] = true;
        }
}

bool event_libpfm_ready(const char *model) {
        (void) pthread_once(&libpfm_once, libpfm_init_once);
        return libpfm_status == PFM_SUCCESS && libpfm_pmu_present(model);
}

static bool libpfm_pmu_present(const char *model) {
        for (size_t i = 0; i < ELEMENTSOF(libpfm_pmus); i++)
                if (strcmp(libpfm_pmus[i].model, model) == 0)
                        return libpfm_present[i];
        return false;
}

const char *event_libpfm_pmu(const char *model) {
        for (size_t i = 0; model && i < ELEMENTSOF(libpfm_pmus); i++)
                if (strcmp(libpfm_pmus[i].model, model) == 0)
                        return libpfm_pmus[i].pmu;
        return NULL;
}

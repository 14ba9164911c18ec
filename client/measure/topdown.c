/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TopDown recipes per CPU model, with perf's formulas (its per-model metric files,
 * tools/perf/pmu-events/arch/x86/<model>/<model>-metrics.json, and for AMD the pipeline
 * utilization of amdzen4/amdzen5 pipeline.json). The formulas are data, in
 * client/groups/<model>/topdown-l1.conf and topdown-l2.conf; this module only decides which
 * model gets which and whether the PMU the daemon reports can run them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/reason.h"
#include "macro.h"
#include "measure/measure-internal.h"
#include "measure/topdown.h"

static const TopdownRecipe recipes[] = {
        { "skx", "generic counters, 4-wide slots per core (perf's SMT and core-wide variants)", 0, 0, 3 },
        { "clx", "generic counters, 4-wide slots per core (perf's SMT and core-wide variants)", 0, 0, 3 },
        { "icx", "SLOTS + PERF_METRICS for level 1, generic counters for its corrections and level 2", 1, 1, 4 },
        { "spr", "SLOTS + PERF_METRICS for levels 1 and 2, INT_MISC.UOP_DROPPING on a generic counter", 1, 2, 4 },
        { "zen4", "pipeline utilization on the 6 core counters, 6 dispatch slots per cycle "
                  "(level 2 multiplexed)", 0, 0, 0 },
        { "zen5", "pipeline utilization on the 6 core counters, 8 dispatch slots per cycle "
                  "(level 2 multiplexed)", 0, 0, 0 },
};

static const char *const level_groups[TOPDOWN_LEVEL_MAX + 1] = {
        NULL, "topdown-l1", "topdown-l2", "topdown-l3", "topdown-l4",
};

int topdown_recipe(const pmugate_info *info, unsigned level, const TopdownRecipe **ret_recipe,
                   const char **ret_group, char *reterr_reason, size_t reason_size) {
        const TopdownRecipe *recipe = NULL;
        unsigned needed;

        if (!info || !ret_group)
                return -EINVAL;
        if (level < 1 || level > TOPDOWN_LEVEL_MAX)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "TopDown level %u does not exist; use 1 to 4", level);
        for (size_t i = 0; i < ELEMENTSOF(recipes); i++)
                if (strcmp(recipes[i].model, info->model_key) == 0)
                        recipe = &recipes[i];
        if (!recipe)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "TopDown has no recipe for CPU model '%s' (%s%sfamily %u model 0x%x); "
                                   "pmugate has recipes for skx, clx, icx, spr, zen4 and zen5",
                                   info->model_key[0] ? info->model_key : "unknown",
                                   info->model_label[0] ? info->model_label : info->model_name,
                                   info->model_label[0] || info->model_name[0] ? ", " : "", info->family, info->model);
        if (!info->has_pmu)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "the daemon reports no PMU on this %s", recipe->model);
        needed = level == 1 ? recipe->perf_metrics_l1 : recipe->perf_metrics_l2;
        if (info->perf_metrics < needed)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "TopDown level %u on %s needs PERF_METRICS level %u, but the daemon reports level "
                                   "%u",
                                   level, recipe->model, needed, info->perf_metrics);
        if (info->fixed_counters < recipe->fixed_counters)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "TopDown on %s needs %u fixed counters, but the daemon reports %u", recipe->model,
                                   recipe->fixed_counters, info->fixed_counters);
        if (ret_recipe)
                *ret_recipe = recipe;
        *ret_group = level_groups[level];
        return 0;
}

int pmugate_measure_open_topdown(pmugate *c, unsigned level, const uint32_t *cpus, size_t n_cpus, unsigned flags,
                                 pmugate_measure **ret, char *reterr_reason, size_t reason_size) {
        pmugate_info *info = NULL;
        const char *group;
        int r;

        if (!c || !ret)
                return -EINVAL;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return reason_fail(reterr_reason, reason_size, r, "hello: %s", pmugate_strerror(r));
        r = topdown_recipe(info, level, NULL, &group, reterr_reason, reason_size);
        if (r < 0) {
                pmugate_info_free(info);
                return r;
        }
        return measure_open(c, info, group, NULL, cpus, n_cpus, flags, ret, reterr_reason, reason_size);
}

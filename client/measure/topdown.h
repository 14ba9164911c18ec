/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TopDown recipes: which group files measure TopDown on the CPU model the daemon reports
 */
#pragma once

#include <stddef.h>

#include "pmugate/pmugate.h"

#define TOPDOWN_LEVEL_MAX 4U

typedef struct TopdownRecipe {
        const char *model;              /* model key from hello */
        const char *method;             /* how L1 and L2 are measured, for messages and docs */
        unsigned perf_metrics_l1;       /* PERF_METRICS level each TopDown level needs */
        unsigned perf_metrics_l2;
        unsigned fixed_counters;        /* fixed counters needed (4: SLOTS) */
        const char *tma_version;        /* Intel TMA release of the group files' formulas, or NULL
                                         * where the files do not come from one */
} TopdownRecipe;

/* The recipe for a model key, or NULL. */
const TopdownRecipe *topdown_recipe_for_model(const char *model_key);

/* Picks the recipe for info's model and the group that measures level (1 to 4; levels 3 and 4
 * are generated group files that only some models have), checking the
 * PMU capabilities hello reports. -EOPNOTSUPP with a reason naming the model when there is no
 * recipe or the PMU lacks what it needs; -EINVAL for another level. */
int topdown_recipe(const pmugate_info *info, unsigned level, const TopdownRecipe **ret_recipe,
                   const char **ret_group, char *reterr_reason, size_t reason_size);

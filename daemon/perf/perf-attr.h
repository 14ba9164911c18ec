/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A client's PerfEventSpec turned into a struct perf_event_attr the daemon will open: counting
 * only, its config within what the PMU and the caller's rights allow (design: piece VALIDATE,
 * which owns this file; the SERVER piece carries the smallest version of it until then).
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/perf-catalog.h"
#include "perf-spec.h"
#include "policy/config.h"

typedef struct PerfAttrRules {
        bool may_count_kernel;
        const ClassSet *write_classes;  /* core events need "core-pmu", uncore events their PMU's class */
        uint64_t core_config_mask;      /* 0: from the PMU's formats */
} PerfAttrRules;

int perf_attr_build(const PerfCatalog *cat, const PerfAttrRules *rules, const PerfEventSpec *spec,
                    PerfScope scope, bool leader, bool follow_children, bool on_exec,
                    struct perf_event_attr *ret, const PerfPmu **ret_pmu, char *reason, size_t reason_size);

int perf_attr_verify(const struct perf_event_attr *attr, const uint32_t *allowed_types, size_t n_types,
                     char *reason, size_t reason_size);

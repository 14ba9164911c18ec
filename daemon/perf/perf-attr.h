/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf_event path's validation: a client's PerfEventSpec becomes a struct perf_event_attr
 * only within the catalogue's PMUs, the role's write classes and the allowed event-select bits,
 * counting only; and the opener's own check of a finished attr, however it was built.
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/perf-catalog.h"
#include "perf-spec.h"
#include "policy/config.h"

typedef struct PerfAttrRules {          /* what the caller may ask, from policy and role */
        bool may_count_kernel;
        const ClassSet *write_classes;  /* the role's write classes (NULL: every class, as an
                                         * admin's Rights have): core events need "core-pmu",
                                         * uncore events the class of their PMU (uncore-imc,
                                         * uncore-l3, uncore-df); software events need none */
        uint64_t core_config_mask;      /* the model's PERFEVTSEL write mask without USR OS INT EN
                                         * ANY PC (from the allowlist); 0: from the PMU's formats */
} PerfAttrRules;

/* The read_format of every event the daemon opens. */
#define PERF_ATTR_READ_FORMAT                                                                    \
        (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID | PERF_FORMAT_GROUP)

/* Builds the attr for one event: type from the catalogue, config within the allowed bits,
 * exclude_kernel unless allowed and asked, exclude_hv always (uncore PMUs: no exclude bit, the
 * kernel refuses them there; they count the package), read_format PERF_ATTR_READ_FORMAT,
 * counting only; leader says whether it leads its group (only a leader carries disabled and
 * enable_on_exec); scope decides inherit (process scope with follow_children) and on_exec
 * (process scope only). Uncore events are refused outside cpu scope. Returns 0, or a positive
 * ProtoError with reason filled (ret and ret_pmu untouched on refusal). */
int perf_attr_build(const PerfCatalog *cat, const PerfAttrRules *rules, const PerfEventSpec *spec,
                    PerfScope scope, bool leader, bool follow_children, bool on_exec,
                    struct perf_event_attr *ret, const PerfPmu **ret_pmu, char *reason, size_t reason_size);

/* The opener's check of a finished attr, independent of how it was built. The opener (in
 * backend/, beneath perf/) is given it as a PerfAttrVerify. */
typedef int (*PerfAttrVerify)(const struct perf_event_attr *attr, const uint32_t *types, size_t n,
                              char *reason, size_t size);

/* Every field outside the counting-only set is zero, type is one of allowed_types, size is the
 * daemon's, read_format within PERF_ATTR_READ_FORMAT: no sampling, no
 * breakpoint, tracepoint, probe or BPF, no register or stack sampling, no AUX, no signals, no
 * side-band records. exclude_hv may be clear only with exclude_kernel clear too (an uncore
 * PMU's attr). Returns 0 or -EPERM with reason naming the field. */
int perf_attr_verify(const struct perf_event_attr *attr, const uint32_t *allowed_types, size_t n_types,
                     char *reason, size_t reason_size);

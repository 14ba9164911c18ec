/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PerfEventSpec -> struct perf_event_attr (perf-attr.h). The SERVER piece's smallest version:
 * the PMU from the catalogue, config within its format bits, the caller's classes, the kernel
 * excluded unless allowed, counting only. The VALIDATE piece's version replaces it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "perf/perf-attr.h"

#define READ_FORMAT (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID | \
                     PERF_FORMAT_GROUP)

int perf_attr_build(const PerfCatalog *cat, const PerfAttrRules *rules, const PerfEventSpec *spec,
                    PerfScope scope, bool leader, bool follow_children, bool on_exec,
                    struct perf_event_attr *ret, const PerfPmu **ret_pmu, char *reason, size_t reason_size) {
        const PerfPmu *pmu = perf_catalog_find(cat, spec->pmu);
        const uint64_t configs[3] = { spec->config, spec->config1, spec->config2 };
        struct perf_event_attr attr = {};

        if (!pmu) {
                (void) snprintf(reason, reason_size, "this machine's kernel has no PMU '%s' (hello lists \"pmus\")",
                                spec->pmu);
                return PROTO_E_BAD_FIELD;
        }
        if (pmu->write_class[0] && !class_set_contains(rules->write_classes, pmu->write_class)) {
                (void) snprintf(reason, reason_size, "events of PMU '%s' need the write class '%s', which this role lacks",
                                pmu->name, pmu->write_class);
                return PROTO_E_NOT_AUTHORIZED;
        }
        if (spec->count_kernel && !rules->may_count_kernel) {
                (void) snprintf(reason, reason_size,
                                "counting the kernel needs '[counters] user_count_kernel = yes' in pmugate.conf or an admin");
                return PROTO_E_NOT_AUTHORIZED;
        }
        /* The kernel's software events are one number each in config, nothing in config1/2;
         * the dummy and BPF output events count nothing and are not served. */
        if (pmu->kind == PERF_PMU_SOFTWARE) {
                if (spec->config >= PERF_COUNT_SW_MAX || spec->config == PERF_COUNT_SW_DUMMY ||
                    spec->config == PERF_COUNT_SW_BPF_OUTPUT || spec->config1 != 0 || spec->config2 != 0) {
                        (void) snprintf(reason, reason_size,
                                        "software event %llu is not served (task-clock 1, cpu-clock 0, page-faults 2, "
                                        "context-switches 3, cpu-migrations 4, minor-faults 5, major-faults 6, "
                                        "alignment-faults 7, emulation-faults 8, cgroup-switches 11)",
                                        (unsigned long long) spec->config);
                        return PROTO_E_BAD_FIELD;
                }
        } else {
                for (unsigned w = 0; w < 3; w++) {
                        uint64_t mask = pmu->config_mask[w];

                        if (w == 0 && pmu->kind == PERF_PMU_CORE && rules->core_config_mask != 0)
                                mask = rules->core_config_mask;
                        if (configs[w] & ~mask) {
                                (void) snprintf(reason, reason_size,
                                                "config%s 0x%llx of PMU '%s' sets bits outside 0x%llx, which pmugate does not serve",
                                                w == 0 ? "" : w == 1 ? "1" : "2", (unsigned long long) configs[w], pmu->name,
                                                (unsigned long long) mask);
                                return PROTO_E_BAD_FIELD;
                        }
                }
        }
        if (pmu->kind == PERF_PMU_UNCORE && scope != PERF_SCOPE_CPU) {
                (void) snprintf(reason, reason_size,
                                "a cgroup cannot split package counters; count them with scope cpu holding the package");
                return PROTO_E_OUT_OF_SCOPE;
        }

        attr.size = sizeof(attr);
        attr.type = pmu->type;
        attr.config = spec->config;
        attr.config1 = spec->config1;
        attr.config2 = spec->config2;
        attr.read_format = READ_FORMAT;
        attr.exclude_kernel = !spec->count_kernel;
        attr.exclude_hv = 1;
        attr.disabled = leader;
        attr.inherit = scope == PERF_SCOPE_PROCESS && follow_children;
        attr.enable_on_exec = leader && on_exec;
        *ret = attr;
        if (ret_pmu)
                *ret_pmu = pmu;
        return 0;
}

int perf_attr_verify(const struct perf_event_attr *attr, const uint32_t *allowed_types, size_t n_types,
                     char *reason, size_t reason_size) {
        bool known = false;

        for (size_t i = 0; i < n_types; i++)
                known |= allowed_types[i] == attr->type;
        if (!known || attr->size != sizeof(*attr) || attr->sample_period != 0 || attr->sample_type != 0 ||
            attr->bp_type != 0 || attr->sample_regs_user != 0 || attr->sample_regs_intr != 0 ||
            attr->sample_stack_user != 0 || attr->freq || attr->mmap || attr->comm || attr->task ||
            !attr->exclude_hv || attr->branch_sample_type != 0) {
                (void) snprintf(reason, reason_size, "the attr is not a counting event of a PMU the daemon serves");
                return -EPERM;
        }
        return 0;
}

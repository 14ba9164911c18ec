/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf_event path's validation of what a client asks: the PMU from the catalogue, the
 * event's bits as a register write's (the same allowlisted masks), the role's classes, and
 * counting only. perf_attr_verify() is the opener's second look, built to need nothing but the
 * attr and the catalogue's types.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "macro.h"
#include "perf/perf-attr.h"
#include "perf/perf-timing.h"

_Static_assert(__builtin_types_compatible_p(__typeof__(&perf_attr_verify), PerfAttrVerify),
               "the opener calls perf_attr_verify() through a PerfAttrVerify");

/* The kernel's software events a counting user may want, and none of its others: no DUMMY
 * (side-band only), BPF_OUTPUT (a BPF program's channel), CGROUP_SWITCHES (sampling). */
static const struct {
        uint64_t config;
        const char *name;
} software_events[] = {
        { PERF_COUNT_SW_CPU_CLOCK, "cpu-clock" },
        { PERF_COUNT_SW_TASK_CLOCK, "task-clock" },
        { PERF_COUNT_SW_PAGE_FAULTS, "page-faults" },
        { PERF_COUNT_SW_CONTEXT_SWITCHES, "context-switches" },
        { PERF_COUNT_SW_CPU_MIGRATIONS, "cpu-migrations" },
        { PERF_COUNT_SW_PAGE_FAULTS_MIN, "minor-faults" },
        { PERF_COUNT_SW_PAGE_FAULTS_MAJ, "major-faults" },
        { PERF_COUNT_SW_ALIGNMENT_FAULTS, "alignment-faults" },
        { PERF_COUNT_SW_EMULATION_FAULTS, "emulation-faults" },
};

_printf_(4, 5) static int refuse(char *reason, size_t size, int code, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, size, fmt, ap);
        va_end(ap);
        return code;
}

static bool software_allowed(uint64_t config) {
        for (size_t i = 0; i < ELEMENTSOF(software_events); i++)
                if (software_events[i].config == config)
                        return true;
        return false;
}

/* One config word of a PMU with formats: refused where it sets bits no format (or, for the
 * core PMU's config, the model's allowlisted event-select mask) names. */
static int check_word(const PerfPmu *p, const char *word, uint64_t value, uint64_t allowed, char *reason,
                      size_t size) {
        if (allowed == 0)
                return refuse(reason, size, PROTO_E_BAD_FIELD, "PMU '%s' has no %s field: '%s' is not accepted",
                              p->name, word, word);
        if (value & ~allowed)
                return refuse(reason, size, PROTO_E_REG_NOT_ALLOWED,
                              "%s 0x%" PRIx64 " of PMU '%s' sets bits 0x%" PRIx64 " outside the allowed 0x%" PRIx64,
                              word, value, p->name, value & ~allowed, allowed);
        return 0;
}

static int check_config(const PerfPmu *p, const PerfAttrRules *rules, const PerfEventSpec *spec, char *reason,
                        size_t size) {
        uint64_t mask0;
        int r;

        if (p->kind == PERF_PMU_SOFTWARE) {
                if (!software_allowed(spec->config))
                        return refuse(reason, size, PROTO_E_REG_NOT_ALLOWED,
                                      "software event %" PRIu64 " is not served: only cpu-clock, task-clock, "
                                      "page-faults, context-switches, cpu-migrations, minor-faults, major-faults, "
                                      "alignment-faults and emulation-faults count",
                                      spec->config);
        } else if (p->type == PERF_TYPE_HARDWARE) {
                /* the upper half would be an extended type: a PMU chosen by number, not by name */
                if (spec->config >= PERF_COUNT_HW_MAX)
                        return refuse(reason, size, PROTO_E_REG_NOT_ALLOWED,
                                      "hardware event %" PRIu64 " is not one of the kernel's %u generic events",
                                      spec->config, (unsigned) PERF_COUNT_HW_MAX);
        } else {
                mask0 = p->kind == PERF_PMU_CORE && rules->core_config_mask != 0 ? rules->core_config_mask
                                                                                 : p->config_mask[0];
                if (p->n_formats == 0 && mask0 == 0)
                        return refuse(reason, size, PROTO_E_REG_NOT_ALLOWED,
                                      "PMU '%s' describes no format fields: its events cannot be checked", p->name);
                r = check_word(p, "config", spec->config, mask0, reason, size);
                if (r != 0)
                        return r;
                if (spec->has_config1) {
                        r = check_word(p, "config1", spec->config1, p->config_mask[1], reason, size);
                        if (r != 0)
                                return r;
                }
                if (spec->has_config2) {
                        r = check_word(p, "config2", spec->config2, p->config_mask[2], reason, size);
                        if (r != 0)
                                return r;
                }
                return 0;
        }
        if (spec->has_config1 || spec->has_config2)
                return refuse(reason, size, PROTO_E_BAD_FIELD, "PMU '%s' has no %s field: '%s' is not accepted",
                              p->name, spec->has_config1 ? "config1" : "config2",
                              spec->has_config1 ? "config1" : "config2");
        return 0;
}

int perf_attr_build(const PerfCatalog *cat, const PerfAttrRules *rules, const PerfEventSpec *spec,
                    PerfScope scope, bool leader, bool follow_children, bool on_exec,
                    struct perf_event_attr *ret, const PerfPmu **ret_pmu, char *reason, size_t reason_size) {
        const PerfPmu *p;
        int r;

        if (scope < 0 || scope >= _PERF_SCOPE_MAX)
                return refuse(reason, reason_size, PROTO_E_BAD_FIELD, "unknown scope %d", (int) scope);
        p = perf_catalog_find(cat, spec->pmu);
        if (!p)
                return refuse(reason, reason_size, PROTO_E_BAD_FIELD, "no PMU '%.*s' on this machine", (int) PERF_PMU_NAME_MAX,
                              spec->pmu);
        if (p->kind == PERF_PMU_UNCORE && scope != PERF_SCOPE_CPU)
                return refuse(reason, reason_size, PROTO_E_OUT_OF_SCOPE,
                              "PMU '%s' counts a whole package: %s; count it with scope cpu holding the package",
                              p->name, scope == PERF_SCOPE_JOB ? "a cgroup cannot split package counters"
                                                               : "a process cannot own package counters");
        if (p->kind != PERF_PMU_SOFTWARE &&
            (p->write_class[0] == '\0' ||
             (rules->write_classes && !class_set_contains(rules->write_classes, p->write_class))))
                return refuse(reason, reason_size, PROTO_E_NOT_AUTHORIZED,
                              "events of PMU '%s' need the write class '%s', which your role does not have",
                              p->name, p->write_class[0] ? p->write_class : "(none)");
        if (spec->count_kernel && !rules->may_count_kernel)
                return refuse(reason, reason_size, PROTO_E_NOT_AUTHORIZED,
                              "'kernel': counting in the kernel is not allowed for your role "
                              "([counters] user_count_kernel in pmugate.conf)");
        r = check_config(p, rules, spec, reason, reason_size);
        if (r != 0)
                return r;

        *ret = (struct perf_event_attr) {
                .type = p->type,
                .size = sizeof(struct perf_event_attr),
                .config = spec->config,
                .config1 = spec->has_config1 ? spec->config1 : 0,
                .config2 = spec->has_config2 ? spec->config2 : 0,
                .read_format = PERF_ATTR_READ_FORMAT,
                /* the daemon enables a group once every event of it is open */
                .disabled = leader,
                .inherit = scope == PERF_SCOPE_PROCESS && follow_children,
                .enable_on_exec = scope == PERF_SCOPE_PROCESS && leader && on_exec,
                .exclude_kernel = !spec->count_kernel,
                .exclude_hv = 1,
        };
        /* An uncore PMU counts its package at every privilege level and the kernel refuses
         * any exclude bit on it (PERF_PMU_CAP_NO_EXCLUDE: EINVAL), as it refuses the MSR path
         * nothing either: its counts are the package's, whoever ran. */
        if (p->kind == PERF_PMU_UNCORE) {
                ret->exclude_kernel = 0;
                ret->exclude_hv = 0;
        }
        if (ret_pmu)
                *ret_pmu = p;
        return 0;
}

static bool type_allowed(uint32_t type, const uint32_t *types, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (types[i] == type)
                        return true;
        return false;
}

int perf_attr_verify(const struct perf_event_attr *attr, const uint32_t *allowed_types, size_t n_types,
                     char *reason, size_t reason_size) {
        /* Named, for a reason a reader can act on; the byte check below catches the rest,
         * including fields of a newer kernel header than this list. */
        const struct {
                const char *name;
                bool set;
        } forbidden[] = {
                { "sample_period", attr->sample_period != 0 },
                { "sample_type", attr->sample_type != 0 },
                { "freq", attr->freq },
                { "precise_ip", attr->precise_ip != 0 },
                { "pinned", attr->pinned },
                { "exclusive", attr->exclusive },
                { "exclude_user", attr->exclude_user },
                { "exclude_idle", attr->exclude_idle },
                { "mmap", attr->mmap },
                { "comm", attr->comm },
                { "inherit_stat", attr->inherit_stat },
                { "task", attr->task },
                { "watermark", attr->watermark },
                { "mmap_data", attr->mmap_data },
                { "sample_id_all", attr->sample_id_all },
                { "exclude_host", attr->exclude_host },
                { "exclude_guest", attr->exclude_guest },
                { "exclude_callchain_kernel", attr->exclude_callchain_kernel },
                { "exclude_callchain_user", attr->exclude_callchain_user },
                { "mmap2", attr->mmap2 },
                { "comm_exec", attr->comm_exec },
                { "use_clockid", attr->use_clockid },
                { "context_switch", attr->context_switch },
                { "write_backward", attr->write_backward },
                { "namespaces", attr->namespaces },
                { "ksymbol", attr->ksymbol },
                { "bpf_event", attr->bpf_event },
                { "aux_output", attr->aux_output },
                { "cgroup", attr->cgroup },
                { "text_poke", attr->text_poke },
                { "build_id", attr->build_id },
                { "inherit_thread", attr->inherit_thread },
                { "remove_on_exec", attr->remove_on_exec },
                { "sigtrap", attr->sigtrap },
                { "wakeup_events", attr->wakeup_events != 0 },
                { "bp_type", attr->bp_type != 0 },
                { "branch_sample_type", attr->branch_sample_type != 0 },
                { "sample_regs_user", attr->sample_regs_user != 0 },
                { "sample_stack_user", attr->sample_stack_user != 0 },
                { "clockid", attr->clockid != 0 },
                { "sample_regs_intr", attr->sample_regs_intr != 0 },
                { "aux_watermark", attr->aux_watermark != 0 },
                { "sample_max_stack", attr->sample_max_stack != 0 },
                { "aux_sample_size", attr->aux_sample_size != 0 },
                { "sig_data", attr->sig_data != 0 },
        };
        struct perf_event_attr rest;
        static const struct perf_event_attr zero = {};

        /* The one sampling attr (pmugate timing): byte for byte what timing_attr_fill() makes
         * for its mode, period in bounds. Its type is the kernel's generic hardware or software
         * type, not a catalogue PMU's. Any other sampling attr falls through and is refused. */
        if (timing_attr_is_ours(attr))
                return 0;
        if (attr->size != sizeof(struct perf_event_attr))
                return refuse(reason, reason_size, -EPERM, "attr size %" PRIu32 " is not the daemon's %zu",
                              attr->size, sizeof(struct perf_event_attr));
        if (attr->type == PERF_TYPE_TRACEPOINT || attr->type == PERF_TYPE_BREAKPOINT ||
            !type_allowed(attr->type, allowed_types, n_types))
                return refuse(reason, reason_size, -EPERM, "attr type %" PRIu32 " is none of the catalogue's PMUs",
                              attr->type);
        for (size_t i = 0; i < ELEMENTSOF(forbidden); i++)
                if (forbidden[i].set)
                        return refuse(reason, reason_size, -EPERM, "attr field '%s' is set: the daemon only counts",
                                      forbidden[i].name);
        if (attr->read_format & ~(uint64_t) PERF_ATTR_READ_FORMAT)
                return refuse(reason, reason_size, -EPERM, "attr read_format 0x%" PRIx64 " has bits beyond 0x%x",
                              (uint64_t) attr->read_format, (unsigned) PERF_ATTR_READ_FORMAT);
        /* exclude_hv, or no exclude bit at all: the form of an uncore PMU, which refuses them */
        if (!attr->exclude_hv && attr->exclude_kernel)
                return refuse(reason, reason_size, -EPERM,
                              "attr field 'exclude_hv' is not set: the hypervisor is never counted");
        if (attr->enable_on_exec && !attr->disabled)
                return refuse(reason, reason_size, -EPERM, "attr enable_on_exec without disabled");

        /* Everything else: the accepted fields cleared, not one bit may remain. */
        rest = *attr;
        rest.type = 0;
        rest.size = 0;
        rest.config = 0;
        rest.config1 = 0;
        rest.config2 = 0;
        rest.read_format = 0;
        rest.disabled = 0;
        rest.inherit = 0;
        rest.enable_on_exec = 0;
        rest.exclude_kernel = 0;
        rest.exclude_hv = 0;
        if (memcmp(&rest, &zero, sizeof(rest)) != 0)
                return refuse(reason, reason_size, -EPERM, "attr has bits set outside the fields the daemon sets");
        return 0;
}

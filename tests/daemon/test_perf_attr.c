/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the perf_event path's validation. Decoding of a client's EVENT (every key it
 * takes, every field of the kernel's attr it refuses by name), the attr built from it under
 * each rule, and the opener's check of finished attrs with each forbidden field set. Attrs the
 * daemon builds for software events are opened on the real kernel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/machine.h"
#include "backend/perf-catalog.h"
#include "error.h"
#include "macro.h"
#include "perf-spec.h"
#include "perf/perf-attr.h"

#define UNCORE_TYPE 14U
#define L3_TYPE 15U

DEFINE_TRIVIAL_CLEANUP_FUNC(PerfCatalog *, perf_catalog_free);

/* ------------------------------------------------------------------ decoding an EVENT */

static msgpack_object str(const char *s) {
        return (msgpack_object) { .type = MSGPACK_OBJECT_STR, .via.str = { .size = (uint32_t) strlen(s), .ptr = s } };
}
static msgpack_object u64v(uint64_t v) {
        return (msgpack_object) { .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = v };
}
static msgpack_object boolean(bool v) {
        return (msgpack_object) { .type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = v };
}

typedef struct Event {
        msgpack_object_kv kv[16];
        msgpack_object map;
} Event;

static msgpack_object *event(Event *e, size_t n) {
        e->map = (msgpack_object) { .type = MSGPACK_OBJECT_MAP, .via.map = { .size = (uint32_t) n, .ptr = e->kv } };
        return &e->map;
}

static void kv(Event *e, size_t i, const char *key, msgpack_object val) {
        e->kv[i].key = str(key);
        e->kv[i].val = val;
}

/* Decodes e's first n pairs expecting a refusal whose reason holds want; the spec is untouched. */
static void assert_decode_refused(Event *e, size_t n, const char *want) {
        PerfEventSpec s;
        char reason[PMUGATE_REASON_MAX] = "";

        memset(&s, 0x5a, sizeof(s));
        assert_int_equal(perf_event_spec_decode(event(e, n), &s, reason, sizeof(reason)), PROTO_E_BAD_FIELD);
        if (!strstr(reason, want))
                fail_msg("reason '%s' does not say '%s'", reason, want);
        for (size_t i = 0; i < sizeof(s); i++)
                assert_int_equal(((uint8_t *) &s)[i], 0x5a);
        for (const char *p = reason; *p; p++)
                assert_true(*p >= 0x20 && *p <= 0x7e);
}

static void test_decode_minimal(void **state) {
        Event e;
        PerfEventSpec s;
        char reason[PMUGATE_REASON_MAX] = "";

        kv(&e, 0, "pmu", str("cpu"));
        kv(&e, 1, "config", u64v(0x3c));
        assert_int_equal(perf_event_spec_decode(event(&e, 2), &s, reason, sizeof(reason)), 0);
        assert_string_equal(s.pmu, "cpu");
        assert_int_equal(s.config, 0x3c);
        assert_false(s.has_config1);
        assert_false(s.has_config2);
        assert_false(s.count_kernel);
        assert_string_equal(s.name, "");
}

static void test_decode_full(void **state) {
        char longest_pmu[PERF_PMU_NAME_MAX], longest_name[PERF_EVENT_NAME_MAX + 1];
        Event e;
        PerfEventSpec s;
        char reason[PMUGATE_REASON_MAX] = "";

        memset(longest_pmu, 'a', sizeof(longest_pmu) - 1);
        longest_pmu[sizeof(longest_pmu) - 1] = '\0';
        memset(longest_name, '~', sizeof(longest_name) - 1);
        longest_name[sizeof(longest_name) - 1] = '\0';
        /* in any order */
        kv(&e, 0, "name", str(longest_name));
        kv(&e, 1, "kernel", boolean(true));
        kv(&e, 2, "config2", u64v(7));
        kv(&e, 3, "config1", u64v(UINT64_MAX));
        kv(&e, 4, "config", u64v(0));
        kv(&e, 5, "pmu", str(longest_pmu));
        assert_int_equal(perf_event_spec_decode(event(&e, 6), &s, reason, sizeof(reason)), 0);
        assert_string_equal(s.pmu, longest_pmu);
        assert_int_equal(s.config, 0);
        assert_true(s.has_config1 && s.config1 == UINT64_MAX);
        assert_true(s.has_config2 && s.config2 == 7);
        assert_true(s.count_kernel);
        assert_string_equal(s.name, longest_name);

        kv(&e, 1, "kernel", boolean(false));
        kv(&e, 0, "name", str("uncore_imc_0 cas count (read)"));
        kv(&e, 5, "pmu", str("uncore_imc_0"));
        assert_int_equal(perf_event_spec_decode(event(&e, 6), &s, reason, sizeof(reason)), 0);
        assert_false(s.count_kernel);
        assert_string_equal(s.pmu, "uncore_imc_0");
}

static void test_decode_missing(void **state) {
        Event e;

        kv(&e, 0, "config", u64v(1));
        assert_decode_refused(&e, 1, "needs 'pmu'");
        kv(&e, 0, "pmu", str("cpu"));
        assert_decode_refused(&e, 1, "needs 'config'");
        assert_decode_refused(&e, 0, "needs 'pmu'");
}

static void test_decode_twice(void **state) {
        static const char *const keys[] = { "pmu", "config", "config1", "config2", "kernel", "name" };
        Event e;

        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                char want[64];

                kv(&e, 0, "pmu", str("cpu"));
                kv(&e, 1, "config", u64v(1));
                kv(&e, 2, "config1", u64v(1));
                kv(&e, 3, "config2", u64v(1));
                kv(&e, 4, "kernel", boolean(false));
                kv(&e, 5, "name", str("x"));
                e.kv[6] = e.kv[i];
                (void) snprintf(want, sizeof(want), "field '%s' is given twice", keys[i]);
                assert_decode_refused(&e, 7, want);
        }
}

static void test_decode_unknown(void **state) {
        static const char nul_key[] = { 'c', 'p', 'u', '\0', 'x' };
        Event e;

        kv(&e, 0, "pmu", str("cpu"));
        kv(&e, 1, "config", u64v(1));
        kv(&e, 2, "colour", str("red"));
        assert_decode_refused(&e, 3, "unknown field 'colour'");
        kv(&e, 2, "Config", u64v(1));
        assert_decode_refused(&e, 3, "unknown field 'Config'");
        kv(&e, 2, "sample_period\n", u64v(1));
        assert_decode_refused(&e, 3, "unknown field 'sample_period?'");
        /* a NUL inside the key neither ends it early nor names a field */
        e.kv[2].key = (msgpack_object) { .type = MSGPACK_OBJECT_STR, .via.str = { .size = sizeof(nul_key), .ptr = nul_key } };
        assert_decode_refused(&e, 3, "unknown field 'cpu?x'");
        e.kv[2].key = u64v(3);
        assert_decode_refused(&e, 3, "keys must be strings");
}

/* Every field of struct perf_event_attr (linux/perf_event.h), each refused with its own reason. */
static const struct {
        const char *name;
        const char *why;
} kernel_fields[] = {
        { "type", "name the PMU with 'pmu'" },
        { "size", "the daemon sets it" },
        { "sample_period", "pmugate counts, it does not sample" },
        { "sample_freq", "pmugate counts, it does not sample" },
        { "sample_type", "pmugate counts, it does not sample" },
        { "read_format", "the daemon reads every event" },
        { "disabled", "'follow' and 'on_exec'" },
        { "inherit", "'follow' and 'on_exec'" },
        { "pinned", "never pinned" },
        { "exclusive", "never exclusive" },
        { "exclude_user", "user space is always counted" },
        { "exclude_kernel", "with 'kernel'" },
        { "exclude_hv", "the hypervisor is never counted" },
        { "exclude_idle", "the daemon sets it" },
        { "mmap", "side-band records" },
        { "comm", "side-band records" },
        { "freq", "does not sample" },
        { "inherit_stat", "does not sample" },
        { "enable_on_exec", "'on_exec'" },
        { "task", "side-band records" },
        { "watermark", "does not sample" },
        { "precise_ip", "does not sample" },
        { "mmap_data", "side-band records" },
        { "sample_id_all", "does not sample" },
        { "exclude_host", "the daemon sets it" },
        { "exclude_guest", "the daemon sets it" },
        { "exclude_callchain_kernel", "does not sample" },
        { "exclude_callchain_user", "does not sample" },
        { "mmap2", "side-band records" },
        { "comm_exec", "side-band records" },
        { "use_clockid", "does not sample" },
        { "context_switch", "side-band records" },
        { "write_backward", "does not sample" },
        { "namespaces", "side-band records" },
        { "ksymbol", "side-band records" },
        { "bpf_event", "side-band records" },
        { "aux_output", "AUX area tracing is never opened" },
        { "cgroup", "side-band records" },
        { "text_poke", "side-band records" },
        { "build_id", "side-band records" },
        { "inherit_thread", "'follow'" },
        { "remove_on_exec", "'on_exec'" },
        { "sigtrap", "never send signals" },
        { "wakeup_events", "does not sample" },
        { "wakeup_watermark", "does not sample" },
        { "bp_type", "breakpoints are never opened" },
        { "bp_addr", "breakpoints are never opened" },
        { "bp_len", "breakpoints are never opened" },
        { "kprobe_func", "kprobes are never opened" },
        { "kprobe_addr", "kprobes are never opened" },
        { "uprobe_path", "uprobes are never opened" },
        { "probe_offset", "never opened" },
        { "branch_sample_type", "branch sampling" },
        { "sample_regs_user", "registers are never sampled" },
        { "sample_stack_user", "stacks are never sampled" },
        { "clockid", "does not sample" },
        { "sample_regs_intr", "registers are never sampled" },
        { "aux_watermark", "AUX area tracing" },
        { "sample_max_stack", "does not sample" },
        { "aux_sample_size", "AUX area tracing" },
        { "aux_action", "AUX area tracing" },
        { "aux_start_paused", "AUX area tracing" },
        { "aux_pause", "AUX area tracing" },
        { "aux_resume", "AUX area tracing" },
        { "sig_data", "never send signals" },
        { "config3", "config3" },
};

static void test_decode_kernel_fields(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(kernel_fields); i++) {
                Event e;
                char want[128];

                kv(&e, 0, "pmu", str("cpu"));
                kv(&e, 1, "config", u64v(1));
                /* any value, even a well-typed harmless one */
                kv(&e, 2, kernel_fields[i].name, u64v(0));
                (void) snprintf(want, sizeof(want), "field '%s' is not accepted: ", kernel_fields[i].name);
                assert_decode_refused(&e, 3, want);
                assert_decode_refused(&e, 3, kernel_fields[i].why);
                /* also first, before pmu and config */
                e.kv[3] = e.kv[0];
                e.kv[0] = e.kv[2];
                assert_decode_refused(&e, 2, want);
                assert_non_null(perf_attr_field_refusal(kernel_fields[i].name));
        }
        assert_null(perf_attr_field_refusal("config"));
        assert_null(perf_attr_field_refusal("config1"));
        assert_null(perf_attr_field_refusal("config2"));
}

static void test_decode_pmu(void **state) {
        char too_long[PERF_PMU_NAME_MAX + 1];
        Event e;

        memset(too_long, 'a', sizeof(too_long) - 1);
        too_long[sizeof(too_long) - 1] = '\0';
        kv(&e, 1, "config", u64v(1));
        kv(&e, 0, "pmu", str(too_long));
        assert_decode_refused(&e, 2, "'pmu' must be a PMU's name of 1 to 39 characters");
        kv(&e, 0, "pmu", str(""));
        assert_decode_refused(&e, 2, "'pmu' must be");
        kv(&e, 0, "pmu", u64v(4));
        assert_decode_refused(&e, 2, "'pmu' must be");
        kv(&e, 0, "pmu", str("CPU"));
        assert_decode_refused(&e, 2, "'pmu' may hold only a-z, 0-9 and _");
        kv(&e, 0, "pmu", str("../cpu"));
        assert_decode_refused(&e, 2, "'pmu' may hold only");
        kv(&e, 0, "pmu", str("cpu core"));
        assert_decode_refused(&e, 2, "'pmu' may hold only");
}

static void test_decode_values(void **state) {
        static const char *const words[] = { "config", "config1", "config2" };
        char too_long[PERF_EVENT_NAME_MAX + 2];
        Event e;

        kv(&e, 0, "pmu", str("cpu"));
        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                char want[64];

                (void) snprintf(want, sizeof(want), "'%s' must be an unsigned 64-bit integer", words[i]);
                kv(&e, 1, words[i], (msgpack_object) { .type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = -1 });
                assert_decode_refused(&e, 2, want);
                kv(&e, 1, words[i], str("0x3c"));
                assert_decode_refused(&e, 2, want);
                kv(&e, 1, words[i], (msgpack_object) { .type = MSGPACK_OBJECT_FLOAT64, .via.f64 = 1.0 });
                assert_decode_refused(&e, 2, want);
                kv(&e, 1, words[i], boolean(true));
                assert_decode_refused(&e, 2, want);
        }
        kv(&e, 1, "config", u64v(1));
        kv(&e, 2, "kernel", u64v(1));
        assert_decode_refused(&e, 3, "'kernel' must be true or false");
        kv(&e, 2, "kernel", str("yes"));
        assert_decode_refused(&e, 3, "'kernel' must be true or false");

        memset(too_long, 'n', sizeof(too_long) - 1);
        too_long[sizeof(too_long) - 1] = '\0';
        kv(&e, 2, "name", str(too_long));
        assert_decode_refused(&e, 3, "'name' must be a string of 1 to 63 characters");
        kv(&e, 2, "name", str(""));
        assert_decode_refused(&e, 3, "'name' must be");
        kv(&e, 2, "name", u64v(1));
        assert_decode_refused(&e, 3, "'name' must be");
        kv(&e, 2, "name", str("cycles\x1b[2J"));
        assert_decode_refused(&e, 3, "'name' may hold only printable ASCII");
        kv(&e, 2, "name", str("caf\xc3\xa9"));
        assert_decode_refused(&e, 3, "'name' may hold only printable ASCII");
}

static void test_decode_not_a_map(void **state) {
        msgpack_object o = str("cpu");
        PerfEventSpec s;
        char reason[PMUGATE_REASON_MAX];

        assert_int_equal(perf_event_spec_decode(&o, &s, reason, sizeof(reason)), PROTO_E_BAD_FIELD);
        assert_string_equal(reason, "an event must be a map");
        o = (msgpack_object) { .type = MSGPACK_OBJECT_ARRAY };
        assert_int_equal(perf_event_spec_decode(&o, &s, reason, sizeof(reason)), PROTO_E_BAD_FIELD);
}

/* ------------------------------------------------------------------ building the attr */

static PerfCatalog *catalog(void) {
        PerfCatalog *c = NULL;
        PerfPmu cpu = {
                .name = "cpu",
                .type = PERF_TYPE_RAW,
                .kind = PERF_PMU_CORE,
                .package = -1,
                .cpu = -1,
                /* event, umask, edge, pc, inv, cmask; offcore_rsp in config1 */
                .config_mask = { 0xff8cffffULL, UINT64_MAX, 0 },
                .formats = { { "event", 0, 0xff }, { "offcore_rsp", 1, UINT64_MAX } },
                .n_formats = 2,
                .write_class = "core-pmu",
                .topdown = 2,
        };
        PerfPmu hardware = {
                .name = "hardware",
                .type = PERF_TYPE_HARDWARE,
                .kind = PERF_PMU_CORE,
                .package = -1,
                .cpu = -1,
                .config_mask = { 0xff },
                .write_class = "core-pmu",
        };
        PerfPmu imc = {
                .name = "uncore_imc_0",
                .type = UNCORE_TYPE,
                .kind = PERF_PMU_UNCORE,
                .package = 0,
                .cpu = 0,
                .config_mask = { 0xffff, 0, 0 },
                .formats = { { "event", 0, 0xff }, { "umask", 0, 0xff00 } },
                .n_formats = 2,
                .write_class = "uncore-imc",
        };
        PerfPmu l3 = {
                .name = "amd_l3",
                .type = L3_TYPE,
                .kind = PERF_PMU_UNCORE,
                .package = 1,
                .cpu = 2,
                .config_mask = { 0xff000000000000ffULL, 0, 0xff },
                .formats = { { "event", 0, 0xff }, { "threadmask", 0, 0xff00000000000000ULL }, { "x", 2, 0xff } },
                .n_formats = 3,
                .write_class = "uncore-l3",
        };

        assert_int_equal(perf_catalog_new(&c), 0);
        assert_int_equal(perf_catalog_add(c, &cpu), 0);
        assert_int_equal(perf_catalog_add(c, &hardware), 0);
        assert_int_equal(perf_catalog_add(c, &imc), 0);
        assert_int_equal(perf_catalog_add(c, &l3), 0);
        return c;
}

static ClassSet user_classes = { .classes = { "core-pmu", "uncore-imc" }, .n = 2 };
static ClassSet no_classes = {};

static const PerfAttrRules user_rules = { .write_classes = &user_classes };

static PerfEventSpec spec(const char *pmu, uint64_t config) {
        PerfEventSpec s = { .config = config };

        (void) snprintf(s.pmu, sizeof(s.pmu), "%s", pmu);
        return s;
}

static const uint32_t all_types[] = { PERF_TYPE_SOFTWARE, PERF_TYPE_RAW, PERF_TYPE_HARDWARE, UNCORE_TYPE, L3_TYPE };

/* Builds, expecting success, and checks the opener would take it. */
static struct perf_event_attr build_ok(const PerfAttrRules *rules, const PerfEventSpec *s, PerfScope scope,
                                       bool leader, bool follow, bool on_exec) {
        _cleanup_(perf_catalog_freep) PerfCatalog *c = catalog();
        struct perf_event_attr attr;
        const PerfPmu *p = NULL;
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        r = perf_attr_build(c, rules, s, scope, leader, follow, on_exec, &attr, &p, reason, sizeof(reason));
        if (r != 0)
                fail_msg("refused (%d): %s", r, reason);
        assert_non_null(p);
        assert_int_equal(p->type, attr.type);
        r = perf_attr_verify(&attr, all_types, ELEMENTSOF(all_types), reason, sizeof(reason));
        if (r != 0)
                fail_msg("the opener refuses what was built: %s", reason);
        return attr;
}

static void assert_build_refused(const PerfAttrRules *rules, const PerfEventSpec *s, PerfScope scope, int code,
                                 const char *want) {
        _cleanup_(perf_catalog_freep) PerfCatalog *c = catalog();
        struct perf_event_attr attr;
        const PerfPmu *p = (const PerfPmu *) 0x1;
        char reason[PMUGATE_REASON_MAX] = "";

        memset(&attr, 0x5a, sizeof(attr));
        assert_int_equal(perf_attr_build(c, rules, s, scope, true, true, true, &attr, &p, reason, sizeof(reason)),
                         code);
        if (!strstr(reason, want))
                fail_msg("reason '%s' does not say '%s'", reason, want);
        assert_ptr_equal(p, (const PerfPmu *) 0x1);
        for (size_t i = 0; i < sizeof(attr); i++)
                assert_int_equal(((uint8_t *) &attr)[i], 0x5a);
}

static void test_build_core(void **state) {
        PerfEventSpec s = spec("cpu", 0x01c2);
        struct perf_event_attr attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, true, true), want = {
                .type = PERF_TYPE_RAW,
                .size = sizeof(struct perf_event_attr),
                .config = 0x01c2,
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID |
                               PERF_FORMAT_GROUP,
                .disabled = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };

        /* every byte: cpu scope neither inherits nor enables on exec, whatever was asked */
        assert_memory_equal(&attr, &want, sizeof(attr));
        attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, false, false, false);
        want.disabled = 0;
        assert_memory_equal(&attr, &want, sizeof(attr));
        attr = build_ok(&user_rules, &s, PERF_SCOPE_JOB, true, true, true);
        want.disabled = 1;
        assert_memory_equal(&attr, &want, sizeof(attr));

        /* the topdown group: SLOTS leads, metric events follow */
        s = spec("cpu", 0x0400);
        attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, false, false);
        assert_int_equal(attr.config, 0x0400);
        s = spec("cpu", 0x8100);
        attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, false, false, false);
        assert_int_equal(attr.config, 0x8100);
}

static void test_build_process_scope(void **state) {
        PerfEventSpec s = spec("software", PERF_COUNT_SW_TASK_CLOCK);
        struct perf_event_attr attr;

        attr = build_ok(&user_rules, &s, PERF_SCOPE_PROCESS, true, true, true);
        assert_true(attr.inherit && attr.enable_on_exec && attr.disabled);
        attr = build_ok(&user_rules, &s, PERF_SCOPE_PROCESS, false, true, true);
        assert_true(attr.inherit && !attr.enable_on_exec && !attr.disabled);
        attr = build_ok(&user_rules, &s, PERF_SCOPE_PROCESS, true, false, false);
        assert_true(!attr.inherit && !attr.enable_on_exec && attr.disabled);
        attr = build_ok(&user_rules, &s, PERF_SCOPE_JOB, true, true, true);
        assert_true(!attr.inherit && !attr.enable_on_exec);
        attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, true, true);
        assert_true(!attr.inherit && !attr.enable_on_exec);
}

static void test_build_kernel(void **state) {
        PerfAttrRules admin = { .may_count_kernel = true, .write_classes = NULL };
        PerfEventSpec s = spec("cpu", 0x3c);
        struct perf_event_attr attr;

        s.count_kernel = true;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_NOT_AUTHORIZED,
                             "'kernel': counting in the kernel is not allowed");
        attr = build_ok(&admin, &s, PERF_SCOPE_CPU, true, false, false);
        assert_false(attr.exclude_kernel);
        assert_true(attr.exclude_hv);
        s.count_kernel = false;
        attr = build_ok(&admin, &s, PERF_SCOPE_CPU, true, false, false);
        assert_true(attr.exclude_kernel);
        /* software events too: the kernel's share of task-clock is the kernel's */
        s = spec("software", PERF_COUNT_SW_TASK_CLOCK);
        s.count_kernel = true;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_PROCESS, PROTO_E_NOT_AUTHORIZED, "'kernel'");
}

static void test_build_unknown_pmu(void **state) {
        PerfEventSpec s = spec("tracepoint", 1);

        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_BAD_FIELD, "no PMU 'tracepoint' on this machine");
        s = spec("uncore_imc_1", 1);
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_BAD_FIELD, "no PMU 'uncore_imc_1'");
}

static void test_build_scope(void **state) {
        PerfEventSpec s = spec("cpu", 0x3c);

        assert_build_refused(&user_rules, &s, _PERF_SCOPE_MAX, PROTO_E_BAD_FIELD, "unknown scope");
        assert_build_refused(&user_rules, &s, (PerfScope) -1, PROTO_E_BAD_FIELD, "unknown scope");
}

static void test_build_write_class(void **state) {
        PerfAttrRules none = { .write_classes = &no_classes };
        PerfAttrRules admin = { .write_classes = NULL };
        ClassSet l3_only = { .classes = { "uncore-l3" }, .n = 1 };
        PerfAttrRules l3 = { .write_classes = &l3_only };
        PerfEventSpec s = spec("cpu", 0x3c);

        assert_build_refused(&none, &s, PERF_SCOPE_CPU, PROTO_E_NOT_AUTHORIZED,
                             "events of PMU 'cpu' need the write class 'core-pmu'");
        assert_build_refused(&l3, &s, PERF_SCOPE_CPU, PROTO_E_NOT_AUTHORIZED, "'core-pmu'");
        s = spec("hardware", PERF_COUNT_HW_CPU_CYCLES);
        assert_build_refused(&none, &s, PERF_SCOPE_CPU, PROTO_E_NOT_AUTHORIZED,
                             "events of PMU 'hardware' need the write class 'core-pmu'");
        s = spec("amd_l3", 0x01);
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_NOT_AUTHORIZED,
                             "events of PMU 'amd_l3' need the write class 'uncore-l3'");
        (void) build_ok(&l3, &s, PERF_SCOPE_CPU, true, false, false);
        (void) build_ok(&admin, &s, PERF_SCOPE_CPU, true, false, false);
        s = spec("uncore_imc_0", 0x0304);
        assert_build_refused(&none, &s, PERF_SCOPE_CPU, PROTO_E_NOT_AUTHORIZED, "'uncore-imc'");
        (void) build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, false, false);
        /* software events need no class at all */
        s = spec("software", PERF_COUNT_SW_PAGE_FAULTS);
        (void) build_ok(&none, &s, PERF_SCOPE_CPU, true, false, false);
}

static void test_build_core_mask(void **state) {
        PerfAttrRules model = { .write_classes = &user_classes, .core_config_mask = 0x00ff00ffULL };
        PerfEventSpec s = spec("cpu", 0x01c2);

        /* from the PMU's formats */
        s.config = 1ULL << 16; /* USR: no format names it */
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED,
                             "config 0x10000 of PMU 'cpu' sets bits 0x10000 outside the allowed 0xff8cffff");
        s.config = 1ULL << 32;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED, "sets bits 0x100000000");
        /* from the model's allowlisted event-select mask, narrower than the formats */
        s.config = 0x01c2;
        assert_build_refused(&model, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED,
                             "config 0x1c2 of PMU 'cpu' sets bits 0x100 outside the allowed 0xff00ff");
        s.config = 0x10c2;
        assert_build_refused(&model, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED, "outside the allowed 0xff00ff");
        s.config = 0x0500c2;
        (void) build_ok(&model, &s, PERF_SCOPE_CPU, true, false, false);
        /* the model's mask is for the core PMU only, not an uncore's */
        s = spec("uncore_imc_0", 0xff00);
        (void) build_ok(&model, &s, PERF_SCOPE_CPU, true, false, false);
}

static void test_build_config1_config2(void **state) {
        PerfAttrRules admin = { .write_classes = NULL };
        PerfEventSpec s = spec("cpu", 0x01b7);
        struct perf_event_attr attr;

        s.has_config1 = true;
        s.config1 = 0x3fb80001ULL;
        attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, false, false);
        assert_int_equal(attr.config1, 0x3fb80001ULL);
        assert_int_equal(attr.config2, 0);
        s.has_config2 = true;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_BAD_FIELD,
                             "PMU 'cpu' has no config2 field: 'config2' is not accepted");
        /* a spec's config1 without has_config1 never reaches the attr */
        s = spec("cpu", 0x3c);
        s.config1 = 0xdead;
        attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, false, false);
        assert_int_equal(attr.config1, 0);

        s = spec("uncore_imc_0", 0x04);
        s.has_config1 = true;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_BAD_FIELD,
                             "PMU 'uncore_imc_0' has no config1 field");
        s = spec("amd_l3", 0x04);
        s.has_config2 = true;
        s.config2 = 0x0f;
        attr = build_ok(&admin, &s, PERF_SCOPE_CPU, true, false, false);
        assert_int_equal(attr.config2, 0x0f);
        s.config2 = 0x100;
        assert_build_refused(&admin, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED,
                             "config2 0x100 of PMU 'amd_l3' sets bits 0x100 outside the allowed 0xff");

        s = spec("hardware", PERF_COUNT_HW_INSTRUCTIONS);
        s.has_config1 = true;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_BAD_FIELD, "PMU 'hardware' has no config1");
        s = spec("software", PERF_COUNT_SW_TASK_CLOCK);
        s.has_config2 = true;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_BAD_FIELD, "PMU 'software' has no config2");
}

static void test_build_hardware(void **state) {
        PerfEventSpec s;
        struct perf_event_attr attr;

        for (uint64_t c = 0; c < PERF_COUNT_HW_MAX; c++) {
                s = spec("hardware", c);
                attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, false, false);
                assert_int_equal(attr.type, PERF_TYPE_HARDWARE);
                assert_int_equal(attr.config, c);
        }
        s = spec("hardware", PERF_COUNT_HW_MAX);
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED,
                             "is not one of the kernel's");
        /* the extended type: hardware event 0 of the PMU with type 4, chosen by number */
        s = spec("hardware", (UINT64_C(4) << 32) | PERF_COUNT_HW_CPU_CYCLES);
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED, "is not one of the kernel's");
}

static void test_build_software(void **state) {
        static const uint64_t allowed[] = {
                PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS,
                PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_MIGRATIONS, PERF_COUNT_SW_PAGE_FAULTS_MIN,
                PERF_COUNT_SW_PAGE_FAULTS_MAJ, PERF_COUNT_SW_ALIGNMENT_FAULTS, PERF_COUNT_SW_EMULATION_FAULTS,
        };
        static const uint64_t refused[] = {
                PERF_COUNT_SW_DUMMY, PERF_COUNT_SW_BPF_OUTPUT, PERF_COUNT_SW_CGROUP_SWITCHES, PERF_COUNT_SW_MAX,
                UINT64_MAX,
        };
        PerfEventSpec s;

        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                struct perf_event_attr attr;

                s = spec("software", allowed[i]);
                attr = build_ok(&user_rules, &s, PERF_SCOPE_PROCESS, true, true, false);
                assert_int_equal(attr.type, PERF_TYPE_SOFTWARE);
                assert_int_equal(attr.config, allowed[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                s = spec("software", refused[i]);
                assert_build_refused(&user_rules, &s, PERF_SCOPE_PROCESS, PROTO_E_REG_NOT_ALLOWED, "is not served");
        }
}

static void test_build_uncore(void **state) {
        PerfEventSpec s = spec("uncore_imc_0", 0x0304);
        struct perf_event_attr attr;

        attr = build_ok(&user_rules, &s, PERF_SCOPE_CPU, true, false, false);
        assert_int_equal(attr.type, UNCORE_TYPE);
        assert_int_equal(attr.config, 0x0304);
        /* the kernel refuses every exclude bit on an uncore PMU (PERF_PMU_CAP_NO_EXCLUDE) */
        assert_false(attr.exclude_kernel);
        assert_false(attr.exclude_hv);
        assert_false(attr.exclude_user);
        assert_build_refused(&user_rules, &s, PERF_SCOPE_JOB, PROTO_E_OUT_OF_SCOPE,
                             "a cgroup cannot split package counters; count it with scope cpu holding the package");
        assert_build_refused(&user_rules, &s, PERF_SCOPE_PROCESS, PROTO_E_OUT_OF_SCOPE, "scope cpu");
        s.config = 0x10304;
        assert_build_refused(&user_rules, &s, PERF_SCOPE_CPU, PROTO_E_REG_NOT_ALLOWED,
                             "config 0x10304 of PMU 'uncore_imc_0' sets bits 0x10000 outside the allowed 0xffff");
}

static void test_build_no_formats(void **state) {
        _cleanup_(perf_catalog_freep) PerfCatalog *c = catalog();
        PerfPmu bare = {
                .name = "uncore_x",
                .type = 30,
                .kind = PERF_PMU_UNCORE,
                .write_class = "uncore",
        };
        PerfAttrRules admin = { .write_classes = NULL };
        PerfEventSpec s = spec("uncore_x", 0);
        struct perf_event_attr attr;
        char reason[PMUGATE_REASON_MAX] = "";

        assert_int_equal(perf_catalog_add(c, &bare), 0);
        assert_int_equal(perf_attr_build(c, &admin, &s, PERF_SCOPE_CPU, true, false, false, &attr, NULL, reason,
                                         sizeof(reason)),
                         PROTO_E_REG_NOT_ALLOWED);
        assert_non_null(strstr(reason, "describes no format fields"));
}

/* The attrs built for the software events open on this kernel, as perf_event_open(2) takes
 * them: a process-scope group following children, enabled at exec, read with its times. */
static void test_build_opens_on_the_kernel(void **state) {
        PerfEventSpec lead = spec("software", PERF_COUNT_SW_TASK_CLOCK), member = spec("software",
                                                                                       PERF_COUNT_SW_PAGE_FAULTS);
        struct perf_event_attr a = build_ok(&user_rules, &lead, PERF_SCOPE_PROCESS, true, true, false),
                               b = build_ok(&user_rules, &member, PERF_SCOPE_PROCESS, false, true, false);
        uint64_t values[3 + 2 * 2];
        long fd, fd2;
        volatile uint64_t spin = 0;

        fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0 && (errno == ENOSYS || errno == EACCES || errno == ENOENT)) {
                print_message("perf_event_open: %s; not tried on this kernel\n", strerror(errno));
                skip();
        }
        assert_true(fd >= 0);
        fd2 = syscall(SYS_perf_event_open, &b, 0, -1, (int) fd, PERF_FLAG_FD_CLOEXEC);
        assert_true(fd2 >= 0);
        assert_int_equal(syscall(SYS_ioctl, (int) fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP), 0);
        for (unsigned i = 0; i < 10000000; i++)
                spin += i;
        assert_true(spin > 0);  /* the loop ran, and clang sees the variable used */
        assert_int_equal(read((int) fd, values, sizeof(values)), sizeof(values));
        assert_int_equal(values[0], 2);         /* nr */
        assert_true(values[1] > 0);             /* time_enabled */
        assert_true(values[2] > 0);             /* time_running */
        assert_true(values[3] > 0);             /* task-clock, then its id */
        (void) close((int) fd2);
        (void) close((int) fd);
}

/* ------------------------------------------------------------------ the opener's check */

static struct perf_event_attr good_attr(void) {
        return (struct perf_event_attr) {
                .type = PERF_TYPE_RAW,
                .size = sizeof(struct perf_event_attr),
                .config = 0x3c,
                .config1 = 1,
                .config2 = 2,
                .read_format = PERF_ATTR_READ_FORMAT,
                .disabled = 1,
                .inherit = 1,
                .enable_on_exec = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
}

static void assert_verify_refused(const struct perf_event_attr *attr, const char *want) {
        char reason[PMUGATE_REASON_MAX] = "";

        assert_int_equal(perf_attr_verify(attr, all_types, ELEMENTSOF(all_types), reason, sizeof(reason)), -EPERM);
        if (!strstr(reason, want))
                fail_msg("reason '%s' does not say '%s'", reason, want);
}

static void test_verify_accepts(void **state) {
        struct perf_event_attr attr = good_attr();
        char reason[PMUGATE_REASON_MAX] = "";

        assert_int_equal(perf_attr_verify(&attr, all_types, ELEMENTSOF(all_types), reason, sizeof(reason)), 0);
        attr.exclude_kernel = 0;
        attr.inherit = 0;
        attr.enable_on_exec = 0;
        attr.disabled = 0;
        attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
        assert_int_equal(perf_attr_verify(&attr, all_types, ELEMENTSOF(all_types), reason, sizeof(reason)), 0);
}

/* pmugated's own package counters (perf-counters.c), which the opener opens for it: a CPU-wide
 * uncore counting event with no exclude bit, as the kernel's uncore PMUs demand. */
static void test_verify_accepts_package_counters(void **state) {
        MachineCounter c = { .type = UNCORE_TYPE, .config = 0x0304, .fd = -EBADF };
        struct perf_event_attr attr;
        char reason[PMUGATE_REASON_MAX] = "";

        machine_counter_attr(&c, &attr);
        assert_int_equal(perf_attr_verify(&attr, all_types, ELEMENTSOF(all_types), reason, sizeof(reason)), 0);
        /* its type must still be the catalogue's */
        c.type = 99;
        machine_counter_attr(&c, &attr);
        assert_verify_refused(&attr, "attr type 99 is none of the catalogue's PMUs");
        /* and an exclude_kernel without exclude_hv is no uncore form */
        c.type = UNCORE_TYPE;
        machine_counter_attr(&c, &attr);
        attr.exclude_kernel = 1;
        assert_verify_refused(&attr, "'exclude_hv' is not set");
}

static void test_verify_type_and_size(void **state) {
        static const uint32_t with_tracepoint[] = { PERF_TYPE_TRACEPOINT, PERF_TYPE_BREAKPOINT, PERF_TYPE_RAW };
        struct perf_event_attr attr = good_attr();
        char reason[PMUGATE_REASON_MAX] = "";

        attr.type = 99;
        assert_verify_refused(&attr, "attr type 99 is none of the catalogue's PMUs");
        attr.type = PERF_TYPE_RAW;
        assert_int_equal(perf_attr_verify(&attr, NULL, 0, reason, sizeof(reason)), -EPERM);
        /* never a tracepoint or breakpoint, even when a caller's list names one */
        attr.type = PERF_TYPE_TRACEPOINT;
        assert_int_equal(perf_attr_verify(&attr, with_tracepoint, 3, reason, sizeof(reason)), -EPERM);
        attr.type = PERF_TYPE_BREAKPOINT;
        assert_int_equal(perf_attr_verify(&attr, with_tracepoint, 3, reason, sizeof(reason)), -EPERM);
        attr = good_attr();
        attr.size = PERF_ATTR_SIZE_VER0;
        assert_verify_refused(&attr, "attr size 64 is not the daemon's");
        attr.size = sizeof(attr) + 8;
        assert_verify_refused(&attr, "is not the daemon's");
}

/* Each field the opener must refuse, set alone on an otherwise good attr. */
static void set_field(struct perf_event_attr *a, const char *name) {
#define SET(field, value)                               \
        if (strcmp(name, #field) == 0) {                \
                a->field = value;                       \
                return;                                 \
        }
        SET(sample_period, 4000)
        SET(sample_type, PERF_SAMPLE_IP)
        SET(freq, 1)
        SET(precise_ip, 2)
        SET(pinned, 1)
        SET(exclusive, 1)
        SET(exclude_user, 1)
        SET(exclude_idle, 1)
        SET(mmap, 1)
        SET(comm, 1)
        SET(inherit_stat, 1)
        SET(task, 1)
        SET(watermark, 1)
        SET(mmap_data, 1)
        SET(sample_id_all, 1)
        SET(exclude_host, 1)
        SET(exclude_guest, 1)
        SET(exclude_callchain_kernel, 1)
        SET(exclude_callchain_user, 1)
        SET(mmap2, 1)
        SET(comm_exec, 1)
        SET(use_clockid, 1)
        SET(context_switch, 1)
        SET(write_backward, 1)
        SET(namespaces, 1)
        SET(ksymbol, 1)
        SET(bpf_event, 1)
        SET(aux_output, 1)
        SET(cgroup, 1)
        SET(text_poke, 1)
        SET(build_id, 1)
        SET(inherit_thread, 1)
        SET(remove_on_exec, 1)
        SET(sigtrap, 1)
        SET(wakeup_events, 1)
        SET(bp_type, 2 /* HW_BREAKPOINT_W */)
        SET(branch_sample_type, PERF_SAMPLE_BRANCH_ANY)
        SET(sample_regs_user, 0xff)
        SET(sample_stack_user, 8192)
        SET(clockid, 1)
        SET(sample_regs_intr, 0xff)
        SET(aux_watermark, 4096)
        SET(sample_max_stack, 16)
        SET(aux_sample_size, 4096)
        SET(sig_data, 1)
#undef SET
        fail_msg("no field %s", name);
}

static void test_verify_forbidden_fields(void **state) {
        static const char *const names[] = {
                "sample_period", "sample_type", "freq", "precise_ip", "pinned", "exclusive", "exclude_user",
                "exclude_idle", "mmap", "comm", "inherit_stat", "task", "watermark", "mmap_data",
                "sample_id_all", "exclude_host", "exclude_guest", "exclude_callchain_kernel",
                "exclude_callchain_user", "mmap2", "comm_exec", "use_clockid", "context_switch",
                "write_backward", "namespaces", "ksymbol", "bpf_event", "aux_output", "cgroup", "text_poke",
                "build_id", "inherit_thread", "remove_on_exec", "sigtrap", "wakeup_events", "bp_type",
                "branch_sample_type", "sample_regs_user", "sample_stack_user", "clockid", "sample_regs_intr",
                "aux_watermark", "sample_max_stack", "aux_sample_size", "sig_data",
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                struct perf_event_attr attr = good_attr();
                char want[64];

                set_field(&attr, names[i]);
                (void) snprintf(want, sizeof(want), "attr field '%s' is set", names[i]);
                assert_verify_refused(&attr, want);
        }
}

static void test_verify_read_format_and_hv(void **state) {
        struct perf_event_attr attr = good_attr();

        attr.read_format |= PERF_FORMAT_LOST;
        assert_verify_refused(&attr, "attr read_format 0x");
        attr = good_attr();
        attr.read_format = UINT64_C(1) << 63;
        assert_verify_refused(&attr, "has bits beyond");
        attr = good_attr();
        attr.exclude_hv = 0;
        assert_verify_refused(&attr, "'exclude_hv' is not set");
        /* no exclude bit at all is an uncore PMU's attr */
        attr.exclude_kernel = 0;
        assert_int_equal(perf_attr_verify(&attr, all_types, ELEMENTSOF(all_types), NULL, 0), 0);
        attr = good_attr();
        attr.disabled = 0;
        assert_verify_refused(&attr, "enable_on_exec without disabled");
}

/* Bits no field name reaches: the flag word's reserved bits, the reserved words, and whatever a
 * newer header adds past them (the size check keeps the struct's end the daemon's). */
static void test_verify_reserved_bits(void **state) {
        size_t flags = offsetof(struct perf_event_attr, read_format) + sizeof(uint64_t);
        size_t reserved_2 = offsetof(struct perf_event_attr, sample_max_stack) + sizeof(uint16_t);
        size_t reserved_3 = offsetof(struct perf_event_attr, aux_sample_size) + sizeof(uint32_t);
        struct perf_event_attr attr;
        uint64_t word;

        attr = good_attr();
        memcpy(&word, (uint8_t *) &attr + flags, sizeof(word));
        word |= UINT64_C(1) << 63;
        memcpy((uint8_t *) &attr + flags, &word, sizeof(word));
        assert_verify_refused(&attr, "bits set outside the fields the daemon sets");
        attr = good_attr();
        ((uint8_t *) &attr)[reserved_2] = 1;
        assert_verify_refused(&attr, "bits set outside");
        attr = good_attr();
        ((uint8_t *) &attr)[reserved_3 + 3] = 0x80;
        assert_verify_refused(&attr, "bits set outside");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_minimal),
                cmocka_unit_test(test_decode_full),
                cmocka_unit_test(test_decode_missing),
                cmocka_unit_test(test_decode_twice),
                cmocka_unit_test(test_decode_unknown),
                cmocka_unit_test(test_decode_kernel_fields),
                cmocka_unit_test(test_decode_pmu),
                cmocka_unit_test(test_decode_values),
                cmocka_unit_test(test_decode_not_a_map),
                cmocka_unit_test(test_build_core),
                cmocka_unit_test(test_build_process_scope),
                cmocka_unit_test(test_build_kernel),
                cmocka_unit_test(test_build_unknown_pmu),
                cmocka_unit_test(test_build_scope),
                cmocka_unit_test(test_build_write_class),
                cmocka_unit_test(test_build_core_mask),
                cmocka_unit_test(test_build_config1_config2),
                cmocka_unit_test(test_build_hardware),
                cmocka_unit_test(test_build_software),
                cmocka_unit_test(test_build_uncore),
                cmocka_unit_test(test_build_no_formats),
                cmocka_unit_test(test_build_opens_on_the_kernel),
                cmocka_unit_test(test_verify_accepts),
                cmocka_unit_test(test_verify_accepts_package_counters),
                cmocka_unit_test(test_verify_type_and_size),
                cmocka_unit_test(test_verify_forbidden_fields),
                cmocka_unit_test(test_verify_read_format_and_hv),
                cmocka_unit_test(test_verify_reserved_bits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

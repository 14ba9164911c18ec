/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the perf_event path's validation, from a client's bytes to the attr the opener
 * opens: perf_event_spec_decode() (proto/perf-spec.c) on one EVENT map or an array of them,
 * perf_attr_build() (daemon/perf/perf-attr.c) of each decoded event in every scope, as leader
 * and member, under a user's and an admin's rules, on a fixed Sapphire Rapids-like catalogue,
 * and perf_attr_verify() on what was built and on the input's first bytes read as an attr.
 *
 * Input: one msgpack object (an EVENT map, or an array of up to 64 of them).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/perf-catalog.h"
#include "error.h"
#include "fuzz_util.h"
#include "macro.h"
#include "perf-spec.h"
#include "perf/perf-attr.h"
#include "request-decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EVENTS_MAX 64U
#define DEPTH_MAX 4U
#define IMC_TYPE 14U
#define USER_CORE_MASK 0x00ff00ffULL

static PerfCatalog *catalog;
static uint32_t types[PERF_PMUS_MAX];
static size_t n_types;
static const ClassSet user_classes = { .classes = { "core-pmu", "uncore-imc" }, .n = 2 };

static void setup(void) {
        PerfPmu cpu = {
                .name = "cpu",
                .type = PERF_TYPE_RAW,
                .kind = PERF_PMU_CORE,
                .package = -1,
                .cpu = -1,
                .config_mask = { 0xff8cffffULL, 0xffffffULL, 0 },
                .formats = { { "event", 0, 0xff }, { "frontend", 1, 0xffffff } },
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
                .type = IMC_TYPE,
                .kind = PERF_PMU_UNCORE,
                .package = 0,
                .cpu = 0,
                .config_mask = { 0xffff, 0, 0xf },
                .formats = { { "event", 0, 0xff }, { "umask", 0, 0xff00 }, { "x", 2, 0xf } },
                .n_formats = 3,
                .write_class = "uncore-imc",
        };
        PerfPmu upi = {
                .name = "uncore_upi_0",
                .type = IMC_TYPE + 1,
                .kind = PERF_PMU_UNCORE,
                .package = 1,
                .cpu = 2,
                .config_mask = { 0xffffffffULL },
                .formats = { { "event", 0, 0xffffffffULL } },
                .n_formats = 1,
                .write_class = "uncore",
        };

        if (perf_catalog_new(&catalog) < 0 || perf_catalog_add(catalog, &cpu) < 0 ||
            perf_catalog_add(catalog, &hardware) < 0 || perf_catalog_add(catalog, &imc) < 0 ||
            perf_catalog_add(catalog, &upi) < 0)
                abort();
        for (size_t i = 0; i < catalog->n_pmus; i++)
                types[n_types++] = catalog->pmus[i].type;
}

static void assert_reason(const char *reason, size_t size) {
        fuzz_assert(strnlen(reason, size) < size);
        fuzz_assert(reason[0] != '\0');
        for (const char *p = reason; *p; p++)
                fuzz_assert(*p >= 0x20 && *p <= 0x7e);
}

/* What a software event may be: the nine counting events, numbered 0 to EMULATION_FAULTS. */
static bool software_counting(uint64_t config) {
        return config <= PERF_COUNT_SW_EMULATION_FAULTS;
}

static void check_built(const struct perf_event_attr *a, const PerfPmu *p, const PerfAttrRules *rules,
                        const PerfEventSpec *s, PerfScope scope, bool leader, bool follow, bool on_exec) {
        char reason[PMUGATE_REASON_MAX] = "";
        uint64_t mask0;

        /* the opener takes whatever the validation built */
        fuzz_assert(perf_attr_verify(a, types, n_types, reason, sizeof(reason)) == 0);
        fuzz_assert(p == perf_catalog_find(catalog, s->pmu));
        fuzz_assert(a->type == p->type);
        /* an uncore PMU takes no exclude bit; every other counts neither hypervisor nor, unless
         * asked, kernel */
        fuzz_assert(a->exclude_hv == (p->kind != PERF_PMU_UNCORE));
        fuzz_assert(a->exclude_kernel == (p->kind != PERF_PMU_UNCORE && !s->count_kernel));
        fuzz_assert(!s->count_kernel || rules->may_count_kernel);
        fuzz_assert(a->read_format == PERF_ATTR_READ_FORMAT);
        fuzz_assert(a->disabled == leader);
        fuzz_assert(a->inherit == (scope == PERF_SCOPE_PROCESS && follow));
        fuzz_assert(a->enable_on_exec == (scope == PERF_SCOPE_PROCESS && leader && on_exec));
        fuzz_assert(a->config == s->config);
        fuzz_assert(a->config1 == (s->has_config1 ? s->config1 : 0));
        fuzz_assert(a->config2 == (s->has_config2 ? s->config2 : 0));
        switch (p->kind) {
        case PERF_PMU_SOFTWARE:
                fuzz_assert(software_counting(a->config));
                fuzz_assert(!s->has_config1 && !s->has_config2);
                break;
        case PERF_PMU_UNCORE:
                fuzz_assert(scope == PERF_SCOPE_CPU);
                fuzz_assert(!rules->write_classes || class_set_contains(rules->write_classes, p->write_class));
                fuzz_assert((a->config & ~p->config_mask[0]) == 0);
                fuzz_assert((a->config1 & ~p->config_mask[1]) == 0 && (a->config2 & ~p->config_mask[2]) == 0);
                break;
        case PERF_PMU_CORE:
                fuzz_assert(!rules->write_classes || class_set_contains(rules->write_classes, "core-pmu"));
                if (p->type == PERF_TYPE_HARDWARE) {
                        fuzz_assert(a->config < PERF_COUNT_HW_MAX);
                        fuzz_assert(!s->has_config1 && !s->has_config2);
                        break;
                }
                mask0 = rules->core_config_mask ? rules->core_config_mask : p->config_mask[0];
                fuzz_assert((a->config & ~mask0) == 0);
                fuzz_assert((a->config1 & ~p->config_mask[1]) == 0 && (a->config2 & ~p->config_mask[2]) == 0);
                break;
        default:
                fuzz_assert(false);
        }
}

static void build_all(const PerfEventSpec *s) {
        const PerfAttrRules rules[] = {
                { .write_classes = &user_classes, .core_config_mask = USER_CORE_MASK },
                { .may_count_kernel = true, .write_classes = NULL },
        };

        for (size_t k = 0; k < ELEMENTSOF(rules); k++)
                for (int scope = 0; scope < _PERF_SCOPE_MAX; scope++)
                        for (unsigned flags = 0; flags < 8; flags++) {
                                bool leader = flags & 1, follow = flags & 2, on_exec = flags & 4;
                                struct perf_event_attr attr, before;
                                const PerfPmu *p = NULL;
                                char reason[PMUGATE_REASON_MAX] = "";
                                int r;

                                memset(&attr, 0xa5, sizeof(attr));
                                before = attr;
                                r = perf_attr_build(catalog, &rules[k], s, (PerfScope) scope, leader, follow,
                                                    on_exec, &attr, &p, reason, sizeof(reason));
                                if (r != 0) {
                                        fuzz_assert(r > 0 && r < _PROTO_E_MAX && proto_error_name(r));
                                        assert_reason(reason, sizeof(reason));
                                        fuzz_assert(memcmp(&attr, &before, sizeof(attr)) == 0 && !p);
                                        continue;
                                }
                                check_built(&attr, p, &rules[k], s, (PerfScope) scope, leader, follow, on_exec);
                        }
}

static void decode_one(const msgpack_object *o) {
        PerfEventSpec s, before;
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        memset(&s, 0x5a, sizeof(s));
        before = s;
        r = perf_event_spec_decode(o, &s, reason, sizeof(reason));
        if (r != 0) {
                fuzz_assert(r == PROTO_E_BAD_FIELD);
                assert_reason(reason, sizeof(reason));
                fuzz_assert(memcmp(&s, &before, sizeof(s)) == 0);
                return;
        }
        fuzz_assert(FUZZ_TERMINATED(s.pmu) && s.pmu[0] != '\0');
        for (const char *p = s.pmu; *p; p++)
                fuzz_assert((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
        fuzz_assert(FUZZ_TERMINATED(s.name));
        for (const char *p = s.name; *p; p++)
                fuzz_assert(*p >= 0x20 && *p <= 0x7e);
        fuzz_assert(s.has_config1 || s.config1 == 0);
        fuzz_assert(s.has_config2 || s.config2 == 0);
        build_all(&s);
}

/* The input's first bytes as an attr, whatever they hold: the opener accepts only what the
 * accepted fields alone rebuild. */
static void verify_raw(const uint8_t *data, size_t size) {
        struct perf_event_attr attr = {}, clean;
        char reason[PMUGATE_REASON_MAX] = "";
        int r;

        memcpy(&attr, data, size < sizeof(attr) ? size : sizeof(attr));
        r = perf_attr_verify(&attr, types, n_types, reason, sizeof(reason));
        fuzz_assert(r == 0 || r == -EPERM);
        if (r < 0) {
                assert_reason(reason, sizeof(reason));
                return;
        }
        clean = (struct perf_event_attr) {
                .type = attr.type,
                .size = attr.size,
                .config = attr.config,
                .config1 = attr.config1,
                .config2 = attr.config2,
                .read_format = attr.read_format,
                .disabled = attr.disabled,
                .inherit = attr.inherit,
                .enable_on_exec = attr.enable_on_exec,
                .exclude_kernel = attr.exclude_kernel,
                .exclude_hv = attr.exclude_hv,
        };
        fuzz_assert(memcmp(&attr, &clean, sizeof(attr)) == 0);
        fuzz_assert(attr.size == sizeof(attr) && (attr.exclude_hv || !attr.exclude_kernel));
        fuzz_assert(perf_catalog_find_type(catalog, attr.type));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        msgpack_zone zone;
        msgpack_object root;
        size_t off = 0;

        if (!catalog)
                setup();
        verify_raw(data, size);
        if (size > PMUGATE_REQUEST_SIZE_MAX || msgpack_check(data, size, DEPTH_MAX) < 0)
                return 0;
        if (!msgpack_zone_init(&zone, 4096))
                abort();
        if (msgpack_unpack((const char *) data, size, &off, &zone, &root) == MSGPACK_UNPACK_SUCCESS) {
                if (root.type == MSGPACK_OBJECT_ARRAY) {
                        for (uint32_t i = 0; i < root.via.array.size && i < EVENTS_MAX; i++)
                                decode_one(&root.via.array.ptr[i]);
                } else
                        decode_one(&root);
        }
        msgpack_zone_destroy(&zone);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: pmugate's event table against libpfm4's event lists, model by model
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/event-models.h"
#include "events/event-table.h"
#include "events/events.h"
#include "macro.h"

/* libpfm4 4.13 files SPR's TOPDOWN.*_SLOTS umasks under TOPDOWN's fixed-counter pseudo code 0x00,
 * while Intel's list has them on event 0xa4 (and 0x0400 is TOPDOWN.SLOTS itself): pmugate's
 * table wins for these. The test notices when libpfm4 changes. */
static bool known_libpfm_divergence(const char *model, const char *name, uint64_t table, uint64_t libpfm) {
        size_t n = strlen(name);

        /* UOPS_RETIRED.MS: libpfm4 4.13 has umask 0x08; perf's sapphirerapids pipeline.json
         * (intel/perfmon's list) umask 0x04 with MSR_PEBS_FRONTEND = 0x8, which the table
         * follows (test_uops_retired_ms) */
        if (strcmp(model, "spr") == 0 && strcmp(name, "UOPS_RETIRED.MS") == 0)
                return table == 0x04c2 && libpfm == 0x08c2;
        return strcmp(model, "spr") == 0 && strncmp(name, "TOPDOWN.", 8) == 0 && n > 6 &&
               strcmp(name + n - 6, "_SLOTS") == 0 && libpfm == (table & ~EVTSEL_EVENT_MASK);
}

/* The Golden Cove-family event that needs a facet of MSR_PEBS_FRONTEND carries it, on every
 * model with that core, and with its modifiers. */
static void test_uops_retired_ms(void **state) {
        static const char *const models[] = { "spr", "emr", "gnr" };
        const EventTableEntry *all;
        size_t n;

        (void) state;
        for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
                const EventTableEntry *e = event_table_lookup(models[i], "uops_retired.ms");

                assert_non_null(e);
                assert_int_equal(e->config, 0x04c2);
                assert_int_equal(e->frontend, 0x8);
        }
        assert_null(event_table_lookup("icx", "UOPS_RETIRED.MS"));
        all = event_table_entries(&n);
        for (size_t k = 0; k < n; k++)
                if (all[k].frontend)
                        assert_string_equal(all[k].name, "UOPS_RETIRED.MS");
}

/* Every GP encoding of the table that libpfm4 also knows must be libpfm4's. Names libpfm4
 * spells differently or lacks are counted, and most of the table must be checked. */
static void compare_model(const char *model, size_t *ret_checked, size_t *ret_applicable) {
        const EventTableEntry *table;
        unsigned bit = event_table_model(model);
        size_t n, checked = 0, applicable = 0;

        assert_int_equal(setenv("LIBPFM_FORCE_PMU", event_libpfm_pmu(model), 1), 0);
        assert_int_equal(pfm_initialize(), PFM_SUCCESS);
        table = event_table_entries(&n);
        for (size_t i = 0; i < n; i++) {
                uint64_t codes[4] = {};
                pfm_pmu_encode_arg_t arg = { .codes = codes, .count = 4, .size = sizeof(arg) };
                char spec[256], *p;

                if (!(table[i].models & bit) || !table[i].gp_ok || table[i].metrics_field >= 0)
                        continue;
                applicable++;
                (void) snprintf(spec, sizeof(spec), "%s::%s", event_libpfm_pmu(model), table[i].name);
                p = strchr(spec + strlen(model) + 2, '.');
                *p = ':';
                for (p++; *p; p++)
                        if (*p == '.')
                                *p = '_';
                if (pfm_get_os_event_encoding(spec, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg) != PFM_SUCCESS)
                        continue;
                /* a fixed-counter event's GP twin (INST_RETIRED.ANY_P, ...) is what libpfm4 gives */
                if (table[i].fixed >= 0 && (codes[0] & EVENT_CONFIG_MASK) != table[i].config)
                        continue;
                if (known_libpfm_divergence(model, table[i].name, table[i].config, codes[0] & EVENT_CONFIG_MASK))
                        continue;
                if ((codes[0] & EVENT_CONFIG_MASK) != table[i].config)
                        fail_msg("%s %s: table 0x%llx, libpfm4 0x%llx", model, table[i].name,
                                 (unsigned long long) table[i].config,
                                 (unsigned long long) (codes[0] & EVENT_CONFIG_MASK));
                checked++;
        }
        pfm_terminate();
        print_message("%s: %zu of %zu table events checked against libpfm4\n", model, checked, applicable);
        *ret_checked = checked;
        *ret_applicable = applicable;
}

static void test_table_matches_libpfm(void **state) {
        static const char *const models[] = { "skx", "clx", "icx", "spr" };

        (void) state;
        for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
                size_t checked, applicable;

                compare_model(models[i], &checked, &applicable);
                assert_true(applicable > 0);
                /* libpfm4 4.13 lacks a few (e.g. some SPR TOPDOWN.*_SLOTS spellings) */
                assert_true(checked * 2 >= applicable);
        }
}

/* The AMD table uses perf's names, libpfm4 its own: the Zen 4 events libpfm4 4.13 knows are
 * compared through this map. */
static void test_zen4_matches_libpfm(void **state) {
        static const struct {
                const char *table, *libpfm;
        } names[] = {
                { "ls_not_halted_cyc", "CYCLES_NOT_IN_HALT" },
                { "ex_ret_instr", "RETIRED_INSTRUCTIONS" },
                { "ex_ret_ops", "RETIRED_OPS" },
                { "ex_ret_brn", "RETIRED_BRANCH_INSTRUCTIONS" },
                { "ex_ret_brn_misp", "RETIRED_BRANCH_INSTRUCTIONS_MISPREDICTED" },
                { "ex_ret_brn_tkn", "RETIRED_TAKEN_BRANCH_INSTRUCTIONS" },
                { "fp_ret_sse_avx_ops.all", "RETIRED_SSE_AVX_FLOPS:ANY" },
        };

        (void) state;
        assert_int_equal(setenv("LIBPFM_FORCE_PMU", "amd64_fam19h_zen4", 1), 0);
        assert_int_equal(pfm_initialize(), PFM_SUCCESS);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                const EventTableEntry *e = event_table_lookup("zen4", names[i].table);
                uint64_t codes[4] = {};
                pfm_pmu_encode_arg_t arg = { .codes = codes, .count = 4, .size = sizeof(arg) };
                char spec[128];

                assert_non_null(e);
                assert_ptr_equal(event_table_lookup("zen5", names[i].table), e);
                (void) snprintf(spec, sizeof(spec), "amd64_fam19h_zen4::%s", names[i].libpfm);
                assert_int_equal(pfm_get_os_event_encoding(spec, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg),
                                 PFM_SUCCESS);
                if ((codes[0] & EVENT_CONFIG_MASK_AMD) != e->config)
                        fail_msg("zen4 %s: table 0x%llx, libpfm4 %s 0x%llx", names[i].table,
                                 (unsigned long long) e->config, names[i].libpfm,
                                 (unsigned long long) (codes[0] & EVENT_CONFIG_MASK_AMD));
        }
        pfm_terminate();
}

static void test_lookup(void **state) {
        const EventTableEntry *e;

        (void) state;
        e = event_table_lookup("spr", "INT_MISC.UOP_DROPPING");
        assert_non_null(e);
        assert_int_equal(e->config, 0x10ad);
        e = event_table_lookup("icx", "INT_MISC.UOP_DROPPING");
        assert_non_null(e);
        assert_int_equal(e->config, 0x100d);
        e = event_table_lookup("clx", "IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE");
        assert_non_null(e);
        assert_int_equal(e->config, 0x400019c);
        assert_null(event_table_lookup("skx", "topdown-retiring"));
        assert_null(event_table_lookup("icx", "topdown-heavy-ops"));
        assert_null(event_table_lookup("zen4", "INST_RETIRED.ANY"));
        /* AMD: event[11:8] in bits 35:32, the per-model events on their model only */
        assert_int_equal(event_table_lookup("zen4", "de_no_dispatch_per_slot.no_ops_from_frontend")->config,
                         0x1000001a0ULL);
        assert_int_equal(event_table_lookup("zen5", "ex_ret_ucode_ops")->config, 0x1000000c2ULL);
        assert_int_equal(event_table_lookup("zen4", "ex_no_retire.load_not_complete")->config, 0xa2d6);
        assert_int_equal(event_table_lookup("zen4", "resyncs_or_nc_redirects")->config, 0x96);
        assert_null(event_table_lookup("zen5", "resyncs_or_nc_redirects"));
        assert_int_equal(event_table_lookup("zen5", "bp_redirects.resync")->config, 0x19f);
        assert_null(event_table_lookup("zen4", "bp_redirects.resync"));
        assert_null(event_table_lookup("spr", "ex_ret_ops"));
        e = event_table_lookup("spr", "TOPDOWN.BR_MISPREDICT_SLOTS");
        assert_non_null(e);
        assert_int_equal(e->gp_mask, 0x01);
}

/* Grace: Arm event numbers (perf's armv8-common-and-microarch.json) and nothing of x86; every
 * entry a bare 16-bit number on any of the six event counters, no name twice. */
static void test_grace(void **state) {
        static const struct {
                const char *name;
                uint64_t number;
        } known[] = {
                { "CPU_CYCLES", 0x11 }, { "INST_RETIRED", 0x08 }, { "STALL_SLOT_FRONTEND", 0x3e },
                { "STALL_SLOT_BACKEND", 0x3d }, { "STALL_SLOT", 0x3f }, { "OP_SPEC", 0x3b },
                { "OP_RETIRED", 0x3a }, { "BR_MIS_PRED_RETIRED", 0x22 }, { "L3D_CACHE", 0x2b },
                { "FP_SCALE_OPS_SPEC", 0x80c0 }, { "FP_FIXED_OPS_SPEC", 0x80c1 }, { "CNT_CYCLES", 0x4004 },
        };
        const EventTableEntry *table;
        size_t n;

        (void) state;
        assert_int_equal(event_table_model("grace"), EVENT_MODEL_GRACE);
        for (size_t i = 0; i < ELEMENTSOF(known); i++) {
                const EventTableEntry *e = event_table_lookup("grace", known[i].name);

                assert_non_null(e);
                assert_true(e->config == known[i].number);
        }
        assert_non_null(event_table_lookup("grace", "op_spec"));
        assert_null(event_table_lookup("grace", "INST_RETIRED.ANY"));
        assert_null(event_table_lookup("spr", "OP_SPEC"));
        table = event_table_entries(&n);
        for (size_t i = 0; i < n; i++) {
                if (!(table[i].models & EVENT_MODEL_GRACE))
                        continue;
                assert_int_equal(table[i].models, EVENT_MODEL_GRACE);
                /* CPU_CYCLES alone has the cycle counter besides the event counters */
                assert_true(table[i].gp_ok && table[i].metrics_field < 0);
                assert_int_equal(table[i].fixed,
                                 strcmp(table[i].name, "CPU_CYCLES") == 0 ? FIXED_ARM_CYCLE_COUNTER : -1);
                assert_true((table[i].config & ~EVENT_CONFIG_MASK_ARM) == 0 && table[i].config != 0);
                for (size_t k = 0; k < i; k++)
                        assert_false((table[k].models & EVENT_MODEL_GRACE) &&
                                     strcmp(table[k].name, table[i].name) == 0);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lookup),
                cmocka_unit_test(test_grace),
                cmocka_unit_test(test_table_matches_libpfm),
                cmocka_unit_test(test_uops_retired_ms),
                cmocka_unit_test(test_zen4_matches_libpfm),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the client's AMD package events: which data-fabric and L3 counters a
 * measurement programs, with what, and what it withholds
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/package-events.h"

#define EN (UINT64_C(1) << 22)
#define DF_CTL0 0xC0010240U
#define L3_CTL0 0xC0010230U
#define READ_BEATS "local_or_remote_socket_read_data_beats_dram"
#define WRITE_BEATS "local_or_remote_socket_write_data_beats_dram"
#define L3_ALL "l3_lookup_state.all_coherent_accesses_to_l3"
#define L3_MISS "l3_lookup_state.l3_miss"

/* Two packages of two CCXs of two CPUs: CPU n is in package n / 4 and CCX n / 2. */
static pmugate_cpu cpus[8];

static pmugate_info zen(const char *key, unsigned df_counters) {
        pmugate_info info = { .cpus = cpus, .n_cpus = 8, .l3_counters = 6, .df_counters = df_counters };

        for (uint32_t i = 0; i < 8; i++)
                cpus[i] = (pmugate_cpu) { .cpu = i, .package = (int32_t) (i / 4), .core = (int32_t) i,
                                          .online = true, .ccx = (int32_t) (i / 2) };
        (void) snprintf(info.model_key, sizeof(info.model_key), "%s", key);
        return info;
}

static PackageEvents *plan(const pmugate_info *info, const char *const *events, const uint32_t *measured,
                           size_t n) {
        PackageEvents *pe = NULL;

        for (size_t i = 0; events[i]; i++)
                assert_int_equal(package_events_add(&pe, events[i]), (int) i);
        assert_int_equal(package_events_plan(pe, info, measured, n), 0);
        return pe;
}

static size_t sources_of(const PackageEvents *pe, size_t p, size_t e) {
        size_t n = 0;

        for (size_t i = 0; i < pe->n_sources; i++)
                n += pe->sources[i].package == p && pe->sources[i].event == e;
        return n;
}

static void test_df_both_directions_share_the_counters(void **state) {
        static const char *const events[] = { READ_BEATS, WRITE_BEATS, NULL };
        static const uint32_t measured[] = { 0, 4 };
        pmugate_info info = zen("zen4", 16);
        PackageEvents *pe = plan(&info, events, measured, 2);
        bool used[2][16] = { { false } };

        assert_int_equal(pe->n_packages, 2);
        for (size_t p = 0; p < 2; p++)
                for (size_t e = 0; e < 2; e++) {
                        assert_null(pe->withheld[p * 2 + e]);
                        assert_int_equal(sources_of(pe, p, e), 8);
                }
        for (size_t i = 0; i < pe->n_sources; i++) {
                const PackageSource *s = &pe->sources[i];
                unsigned index = (s->ctl - DF_CTL0) / 2;

                assert_true(s->is_programmed);
                assert_int_equal(s->ccx, -1);
                assert_int_equal(s->target, pe->package_cpu[s->package]);
                assert_int_equal(s->msr, s->ctl + 1);
                assert_true(index < 16);
                assert_false(used[s->package][index]);
                used[s->package][index] = true;
                /* 8 of 12 channels counted: scaled to all of them */
                assert_true(fabs(s->factor - 1.5) < 1e-12);
        }
        /* channel 1's read beats: event 0x5F, umask 0x7FE (low byte at 15:8, high nibble at 27:24) */
        assert_true(pe->sources[1].ctl_value == (0x5F | 0xFE << 8 | UINT64_C(0x7) << 24 | EN));
        /* channel 4's write beats: event 0x11F has its high bits at 37:32 */
        assert_true(pe->sources[12].ctl_value ==
                    (0x1F | UINT64_C(1) << 32 | 0xFF << 8 | UINT64_C(0x7) << 24 | EN));
        package_events_free(pe);
        (void) state;
}

static void test_df_one_direction_counts_every_channel(void **state) {
        static const char *const events[] = { READ_BEATS, NULL };
        static const uint32_t measured[] = { 1 };
        pmugate_info info = zen("zen5", 16);
        PackageEvents *pe = plan(&info, events, measured, 1);

        assert_int_equal(sources_of(pe, 0, 0), 12);
        for (size_t i = 0; i < pe->n_sources; i++)
                assert_true(pe->sources[i].factor == 1.0);
        package_events_free(pe);
        (void) state;
}

static void test_l3_per_ccx_of_the_measured_cpus(void **state) {
        static const char *const events[] = { L3_ALL, L3_MISS, NULL };
        /* CCX 0 twice, CCX 1 once (package 0); CCX 3 (package 1) */
        static const uint32_t measured[] = { 0, 1, 3, 7 };
        pmugate_info info = zen("zen4", 16);
        PackageEvents *pe = plan(&info, events, measured, 4);

        assert_int_equal(sources_of(pe, 0, 0), 2);
        assert_int_equal(sources_of(pe, 0, 1), 2);
        assert_int_equal(sources_of(pe, 1, 0), 1);
        for (size_t i = 0; i < pe->n_sources; i++) {
                const PackageSource *s = &pe->sources[i];
                uint64_t umask = s->event == 0 ? 0xFF : 0x01;

                assert_int_equal(s->ccx, (int32_t) s->target / 2);
                assert_int_equal(s->ctl, L3_CTL0 + 2 * s->event);
                assert_true(s->ctl_value ==
                            (0x04 | umask << 8 | EN | UINT64_C(3) << 46 | UINT64_C(3) << 56));
        }
        package_events_free(pe);
        (void) state;
}

static void test_withheld_with_reasons(void **state) {
        static const char *const events[] = { READ_BEATS, L3_MISS, NULL };
        static const uint32_t measured[] = { 0 };
        pmugate_info info = zen("skx", 16);
        PackageEvents *pe = plan(&info, events, measured, 1);

        assert_int_equal(pe->n_sources, 0);
        assert_non_null(strstr(pe->withheld[0], "AMD Zen 4 or Zen 5"));
        assert_non_null(strstr(pe->withheld[1], "AMD Zen 4 or Zen 5"));
        package_events_free(pe);

        info = zen("zen4", 0);
        pe = plan(&info, events, measured, 1);
        assert_non_null(strstr(pe->withheld[0], "data-fabric counters"));
        assert_null(pe->withheld[1]);
        assert_int_equal(sources_of(pe, 0, 1), 1);
        package_events_free(pe);
        (void) state;
}

/* Counters the kernel's amd_uncore driver holds (hello's foreign l3_mask and df_mask) are
 * skipped: L3 events take the next free counters, the data fabric counts fewer channels. */
static void test_kernel_counters_skipped(void **state) {
        static const char *const events[] = { L3_ALL, L3_MISS, READ_BEATS, NULL };
        static const uint32_t measured[] = { 0 };
        pmugate_info info = zen("zen4", 16);
        PackageEvents *pe;

        info.foreign_l3_mask = 0x5;     /* counters 0 and 2 */
        info.foreign_df_mask = 0x1F;    /* 5 of 16 */
        pe = plan(&info, events, measured, 1);
        for (size_t i = 0; i < pe->n_sources; i++) {
                const PackageSource *s = &pe->sources[i];

                if (s->ccx >= 0)
                        assert_int_equal(s->ctl, L3_CTL0 + 2 * (s->event == 0 ? 1 : 3));
                else
                        assert_true(s->ctl >= DF_CTL0 + 2 * 5);
        }
        assert_int_equal(sources_of(pe, 0, 2), 11);
        package_events_free(pe);

        info.foreign_l3_mask = 0x3E;    /* only counter 0 left for two events */
        pe = plan(&info, events, measured, 1);
        assert_null(pe->withheld[0]);
        assert_non_null(strstr(pe->withheld[1], "the kernel's amd_uncore driver"));
        package_events_free(pe);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_df_both_directions_share_the_counters),
                cmocka_unit_test(test_df_one_direction_counts_every_channel),
                cmocka_unit_test(test_l3_per_ccx_of_the_measured_cpus),
                cmocka_unit_test(test_withheld_with_reasons),
                cmocka_unit_test(test_kernel_counters_skipped),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

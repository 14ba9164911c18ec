/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allowlist parser, lookups, never-list and shipped data files
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "log.h"
#include "macro.h"
#include "pmu/allowlist.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Allowlist *, allowlist_free);

static char tmpdir[] = "/tmp/test-allowlist-XXXXXX";

static const char *shipped_dir(void) {
        const char *d = getenv("PMUGATE_ALLOWLIST_DIR");

        if (!d || !*d)
                fail_msg("PMUGATE_ALLOWLIST_DIR is not set; it must point at policy/allowlists");
        return d;
}

static Allowlist *parse_shipped(const char *name) {
        char path[PATH_MAX], reason[256] = "";
        Allowlist *a = NULL;
        unsigned line = 0;
        int r;

        (void) snprintf(path, sizeof(path), "%s/%s", shipped_dir(), name);
        r = allowlist_parse_file(path, &a, &line, reason, sizeof(reason));
        if (r < 0)
                fail_msg("%s: %s (r=%d)", path, reason, r);
        assert_non_null(a);
        return a;
}

/* Writes len bytes (or the whole string when len is 0) to tmpdir/name and returns its path. */
static const char *write_file(const char *name, const char *content, size_t len) {
        static char path[PATH_MAX];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        f = fopen(path, "we");
        assert_non_null(f);
        if (len == 0)
                len = strlen(content);
        assert_int_equal(fwrite(content, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        return path;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int setup_tmpdir(void **state) {
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmpdir(void **state) {
        return nftw(tmpdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---------------------------------------------------------------- shipped files */

static void test_shipped_skx(void **state) {
        _cleanup_(allowlist_freep) Allowlist *a = parse_shipped("intel-skx.conf");
        const AllowEntry *e;

        assert_int_equal(a->n_models, 2);
        assert_string_equal(a->models[0], "skx");
        assert_string_equal(a->models[1], "clx");

        /* General-purpose counters and event selects, at both edges and just outside. */
        assert_null(allowlist_find_msr(a, 0xC0));
        e = allowlist_find_msr(a, 0xC1);
        assert_non_null(e);
        assert_string_equal(e->name, "IA32_PMC");
        assert_int_equal(e->write_mask, 0xFFFFFFFFFFFFULL);
        assert_ptr_equal(allowlist_find_msr(a, 0xC8), e);
        assert_null(allowlist_find_msr(a, 0xC9));

        assert_null(allowlist_find_msr(a, 0x185));
        e = allowlist_find_msr(a, 0x186);
        assert_non_null(e);
        assert_int_equal(e->write_mask, 0xFFC7FFFFULL);
        assert_int_equal(e->scope, REG_SCOPE_THREAD);
        assert_int_equal(e->width, 8);
        assert_false(e->pci);
        assert_string_equal(e->cls, "core-pmu");
        assert_ptr_equal(allowlist_find_msr(a, 0x18D), e);
        assert_null(allowlist_find_msr(a, 0x18E));

        e = allowlist_find_msr(a, 0x1A6);
        assert_non_null(e);
        assert_string_equal(e->cls, "offcore");
        assert_int_equal(e->write_mask, 0x3FFFFF8FFFULL);

        /* Three fixed counters, no SLOTS and no PERF_METRICS on this model. */
        assert_non_null(allowlist_find_msr(a, 0x30B));
        assert_null(allowlist_find_msr(a, 0x30C));
        assert_null(allowlist_find_msr(a, 0x329));
        assert_int_equal(allowlist_find_msr(a, 0x38D)->write_mask, 0x333);
        assert_int_equal(allowlist_find_msr(a, 0x38E)->write_mask, 0);
        assert_int_equal(allowlist_find_msr(a, 0x38F)->write_mask, 0x7000000FFULL);
        assert_int_equal(allowlist_find_msr(a, 0x390)->write_mask, 0x7000000FFULL);
        assert_int_equal(allowlist_find_msr(a, 0x392)->write_mask, 0);
        assert_string_equal(allowlist_find_msr(a, 0x345)->cls, "core-pmu-info");

        /* RAPL: status readable, limits absent. */
        e = allowlist_find_msr(a, 0x611);
        assert_non_null(e);
        assert_int_equal(e->scope, REG_SCOPE_PACKAGE);
        assert_string_equal(e->cls, "rapl");
        assert_int_equal(e->write_mask, 0);
        assert_null(allowlist_find_msr(a, 0x610));
        assert_null(allowlist_find_msr(a, 0x618));
        assert_null(allowlist_find_msr(a, 0x638));

        /* 3 IMC channel functions x 6 register groups. */
        assert_int_equal(a->n_pci, 18);
}

static void test_shipped_skx_pci(void **state) {
        _cleanup_(allowlist_freep) Allowlist *a = parse_shipped("intel-skx.conf");
        static const uint16_t devices[] = { 0x2042, 0x2046, 0x204A };
        const AllowEntry *e;

        for (size_t i = 0; i < ELEMENTSOF(devices); i++) {
                uint16_t d = devices[i];

                /* 48-bit counters: four registers of 8 bytes, found only at their start. */
                e = allowlist_find_pci(a, 0x8086, d, 0xA0);
                assert_non_null(e);
                assert_true(e->pci);
                assert_int_equal(e->pci_vendor, 0x8086);
                assert_int_equal(e->pci_device, d);
                assert_int_equal(e->width, 8);
                assert_int_equal(e->write_mask, 0);
                assert_int_equal(e->scope, REG_SCOPE_PACKAGE);
                assert_string_equal(e->cls, "uncore-imc");
                assert_ptr_equal(allowlist_find_pci(a, 0x8086, d, 0xA8), e);
                assert_ptr_equal(allowlist_find_pci(a, 0x8086, d, 0xB8), e);
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xA4));
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xBC));
                assert_null(allowlist_find_pci(a, 0x8086, d, 0x9C));
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xC0));

                e = allowlist_find_pci(a, 0x8086, d, 0xD8);
                assert_non_null(e);
                assert_int_equal(e->width, 4);
                assert_int_equal(e->write_mask, 0xFFC6FFFF);
                assert_ptr_equal(allowlist_find_pci(a, 0x8086, d, 0xE4), e);
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xDA));
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xE8));

                assert_int_equal(allowlist_find_pci(a, 0x8086, d, 0xD0)->width, 8);
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xD4));
                assert_int_equal(allowlist_find_pci(a, 0x8086, d, 0xF0)->write_mask, 0x00400000);
                assert_int_equal(allowlist_find_pci(a, 0x8086, d, 0xF4)->write_mask, 0x103);
                assert_int_equal(allowlist_find_pci(a, 0x8086, d, 0xF8)->write_mask, 0);
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xFC));
                assert_null(allowlist_find_pci(a, 0x8086, d, 0x0));
                assert_null(allowlist_find_pci(a, 0x8086, d, 0xFFC));
        }

        /* Keyed by vendor:device: the same offsets elsewhere are not open. */
        assert_null(allowlist_find_pci(a, 0x8086, 0x2043, 0xA0));
        assert_null(allowlist_find_pci(a, 0x8086, 0x2041, 0xF4));
        assert_null(allowlist_find_pci(a, 0x8086, 0x2066, 0xF4));
        assert_null(allowlist_find_pci(a, 0x1022, 0x2042, 0xA0));
        assert_null(allowlist_find_pci(a, 0x8087, 0x2042, 0xA0));
        assert_null(allowlist_find_pci(a, 0x0000, 0x0000, 0x0));
        assert_null(allowlist_find_pci(a, 0xFFFF, 0xFFFF, 0xFFC));
}

static void test_shipped_icx_spr(void **state) {
        static const struct {
                const char *file, *model;
                uint64_t offcore;
                bool psys;
        } cases[] = {
                { "intel-icx.conf", "icx", 0x3FFFFFBFFFULL, false },
                { "intel-spr.conf", "spr", 0x3FFFFFFFFFULL, true },
                { "intel-emr.conf", "emr", 0x3FFFFFFFFFULL, true },
                { "intel-gnr.conf", "gnr", 0x3FFFFFFFFFULL, true },
        };
        /* Every other entry's write mask, the same on these models: counters take 48 bits,
         * event selects never PC, INT, ANY or bits 32+, clocks and RAPL are read-only. */
        static const struct {
                uint32_t first, last;
                uint64_t mask;
        } masks[] = {
                { 0x010, 0x010, 0 }, { 0x0E7, 0x0E8, 0 }, { 0x345, 0x345, 0 },
                { 0x0C1, 0x0C8, 0xFFFFFFFFFFFFULL }, { 0x4C1, 0x4C8, 0xFFFFFFFFFFFFULL },
                { 0x186, 0x18D, 0xFFC7FFFFULL }, { 0x309, 0x30C, 0xFFFFFFFFFFFFULL },
                { 0x38E, 0x38E, 0 }, { 0x392, 0x392, 0 }, { 0x606, 0x606, 0 }, { 0x611, 0x611, 0 },
                { 0x613, 0x614, 0 }, { 0x619, 0x619, 0 }, { 0x61B, 0x61C, 0 }, { 0x639, 0x639, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(allowlist_freep) Allowlist *a = parse_shipped(cases[i].file);
                const AllowEntry *e;

                for (size_t m = 0; m < ELEMENTSOF(masks); m++)
                        for (uint32_t msr = masks[m].first; msr <= masks[m].last; msr++) {
                                e = allowlist_find_msr(a, msr);
                                assert_non_null(e);
                                assert_int_equal(e->write_mask, masks[m].mask);
                        }
                assert_null(allowlist_find_msr(a, 0x0C9));
                assert_null(allowlist_find_msr(a, 0x18E));
                if (cases[i].psys)
                        assert_int_equal(allowlist_find_msr(a, 0x64D)->write_mask, 0);

                assert_int_equal(a->n_models, 1);
                assert_string_equal(a->models[0], cases[i].model);
                assert_int_equal(a->n_pci, 0);

                assert_non_null(allowlist_find_msr(a, 0x18D));
                assert_non_null(allowlist_find_msr(a, 0x4C8));
                e = allowlist_find_msr(a, 0x30C);
                assert_non_null(e);
                assert_string_equal(e->name, "IA32_FIXED_CTR");
                assert_ptr_equal(allowlist_find_msr(a, 0x309), e);
                assert_null(allowlist_find_msr(a, 0x30D));

                e = allowlist_find_msr(a, 0x329);
                assert_non_null(e);
                assert_string_equal(e->name, "MSR_PERF_METRICS");
                assert_int_equal(e->write_mask, UINT64_MAX);

                assert_int_equal(allowlist_find_msr(a, 0x38D)->write_mask, 0x3333);
                assert_int_equal(allowlist_find_msr(a, 0x38F)->write_mask, 0x1000F000000FFULL);
                assert_int_equal(allowlist_find_msr(a, 0x390)->write_mask, 0x1000F000000FFULL);
                assert_int_equal(allowlist_find_msr(a, 0x391)->write_mask, 0x1000F000000FFULL);
                assert_int_equal(allowlist_find_msr(a, 0x1A6)->write_mask, cases[i].offcore);
                assert_int_equal(allowlist_find_msr(a, 0x1A7)->write_mask, cases[i].offcore);
                assert_int_equal(allowlist_find_msr(a, 0x64D) != NULL, cases[i].psys);
        }
}

/* Sierra Forest: 8 + 3 counters, no TOPDOWN.SLOTS, PERF_METRICS or offcore response. */
static void test_shipped_srf(void **state) {
        static const struct {
                uint32_t first, last;
                uint64_t mask;
        } masks[] = {
                { 0x010, 0x010, 0 }, { 0x0E7, 0x0E8, 0 }, { 0x345, 0x345, 0 },
                { 0x0C1, 0x0C8, 0xFFFFFFFFFFFFULL }, { 0x4C1, 0x4C8, 0xFFFFFFFFFFFFULL },
                { 0x186, 0x18D, 0xFFC7FFFFULL }, { 0x309, 0x30B, 0xFFFFFFFFFFFFULL },
                { 0x38D, 0x38D, 0x333 }, { 0x38E, 0x38E, 0 }, { 0x38F, 0x391, 0x7000000FFULL },
                { 0x392, 0x392, 0 }, { 0x606, 0x606, 0 }, { 0x611, 0x611, 0 }, { 0x613, 0x614, 0 },
                { 0x619, 0x619, 0 }, { 0x61B, 0x61C, 0 }, { 0x64D, 0x64D, 0 },
        };
        static const uint32_t absent[] = { 0x0C9, 0x18E, 0x1A6, 0x1A7, 0x30C, 0x329, 0x639 };
        _cleanup_(allowlist_freep) Allowlist *a = parse_shipped("intel-srf.conf");
        const AllowEntry *e;

        assert_int_equal(a->n_models, 1);
        assert_string_equal(a->models[0], "srf");
        assert_int_equal(a->n_pci, 0);
        for (size_t m = 0; m < ELEMENTSOF(masks); m++)
                for (uint32_t msr = masks[m].first; msr <= masks[m].last; msr++) {
                        e = allowlist_find_msr(a, msr);
                        assert_non_null(e);
                        assert_int_equal(e->write_mask, masks[m].mask);
                }
        for (size_t i = 0; i < ELEMENTSOF(absent); i++)
                assert_null(allowlist_find_msr(a, absent[i]));
        assert_true(allowlist_find_msr(a, 0x30B)->flags & ALLOW_FLAG_COUNTER);
        assert_true(allowlist_find_msr(a, 0x390)->flags & ALLOW_FLAG_ACTION);
        assert_int_equal(allowlist_find_msr(a, 0x611)->scope, REG_SCOPE_PACKAGE);
}

static void test_shipped_amd(void **state) {
        static const char *const files[] = { "amd-zen4.conf", "amd-zen5.conf" };
        static const char *const models[] = { "zen4", "zen5" };

        for (size_t f = 0; f < ELEMENTSOF(files); f++) {
                _cleanup_(allowlist_freep) Allowlist *a = parse_shipped(files[f]);
                const AllowEntry *e;

                assert_int_equal(a->n_models, 1);
                assert_string_equal(a->models[0], models[f]);
                for (unsigned i = 0; i < 6; i++) {
                        e = allowlist_find_msr(a, 0xC0010200 + 2 * i);
                        assert_non_null(e);
                        assert_int_equal(e->write_mask, 0xFFFC7FFFFULL);
                        assert_int_equal(e->scope, REG_SCOPE_THREAD);
                        e = allowlist_find_msr(a, 0xC0010201 + 2 * i);
                        assert_int_equal(e->write_mask, 0xFFFFFFFFFFFFULL);
                        assert_true(e->flags & ALLOW_FLAG_COUNTER);
                        e = allowlist_find_msr(a, 0xC0010230 + 2 * i);
                        assert_int_equal(e->scope, REG_SCOPE_CCX);
                        assert_string_equal(e->cls, "uncore-l3");
                        assert_int_equal(allowlist_find_msr(a, 0xC0010231 + 2 * i)->scope, REG_SCOPE_CCX);
                }
                /* Nothing past the sixth pair, and no legacy aliases. */
                assert_null(allowlist_find_msr(a, 0xC001020C));
                assert_null(allowlist_find_msr(a, 0xC0010000));
                assert_null(allowlist_find_msr(a, 0xC0010004));
                e = allowlist_find_msr(a, 0xC0010240);
                assert_int_equal(e->scope, REG_SCOPE_PACKAGE);
                assert_int_equal(e->write_mask, 0x3F0F40FFFFULL);
                assert_non_null(allowlist_find_msr(a, 0xC001025F));
                assert_null(allowlist_find_msr(a, 0xC0010260));
                assert_int_equal(allowlist_find_msr(a, 0xC0000300)->write_mask, 0);
                assert_int_equal(allowlist_find_msr(a, 0xC0000301)->write_mask, 0x3F);
                e = allowlist_find_msr(a, 0xC0000302);
                assert_int_equal(e->write_mask, 0x3F);
                assert_true(e->flags & ALLOW_FLAG_ACTION);
                /* Status-set is listed for reading; the never-list refuses writing it. */
                assert_int_equal(allowlist_find_msr(a, 0xC0000303)->write_mask, 0);
                assert_int_equal(allowlist_find_msr(a, 0xC001029B)->write_mask, 0);
                assert_int_equal(allowlist_find_msr(a, 0xC001029B)->scope, REG_SCOPE_PACKAGE);
                assert_int_equal(allowlist_find_msr(a, 0xC001029A)->scope, REG_SCOPE_CORE);
                /* Intel's PMU is not there. */
                assert_null(allowlist_find_msr(a, 0x186));
                assert_null(allowlist_find_msr(a, 0x38F));
        }
}

/* The gaps a review found: each address and its neighbours inside the entry are refused for
 * reading and writing, and the registers just outside stay what they were. */
static void test_never_list_gaps(void **state) {
        static const struct {
                uint32_t msr;
                const char *name;
        } closed[] = {
                { 0x8C, "IA32_SGXLEPUBKEYHASH0-3" },  { 0x8F, "IA32_SGXLEPUBKEYHASH0-3" },
                { 0xE1, "IA32_UMWAIT_CONTROL" },      { 0xE2, "MSR_PKG_CST_CONFIG_CONTROL" },
                { 0x1A4, "MSR_MISC_FEATURE_CONTROL" }, { 0x1C4, "IA32_XFD" },
                { 0x1C5, "IA32_XFD_ERR" },            { 0xD90, "IA32_BNDCFGS" },
                { 0xD93, "IA32_PASID" },              { 0xDB0, "IA32_PKG_HDC_CTL" },
                { 0xDB1, "IA32_PM_CTL1" },            { 0xDB2, "IA32_THREAD_STALL" },
                { 0xC0011024, "AMD_CORE_CFG" },       { 0xC0011026, "AMD_CORE_CFG" },
                { 0xC0011027, "AMD_DR0_ADDR_MASK" },  { 0xC0011028, "AMD_FP_CFG" },
                { 0xC001102B, "AMD_CORE_CFG" },       { 0xC001102D, "AMD_CORE_CFG" },
                { 0xC001102F, "AMD_CORE_CFG" },       { 0xC001103D, "AMD_IBS" },
                { 0xC001103F, "AMD_IBS" },
        };
        static const uint32_t open[] = { 0x8B, 0x90, 0xE0, 0xE3, 0x1A3, 0x1A5, 0x1C3, 0x1C6,
                                         0xD8F, 0xD91, 0xD92, 0xD94, 0xDAF, 0xDB3, 0xC0011040 };

        for (size_t i = 0; i < ELEMENTSOF(closed); i++) {
                assert_string_equal(never_list_lookup(closed[i].msr, false), closed[i].name);
                assert_string_equal(never_list_lookup(closed[i].msr, true), closed[i].name);
        }
        for (size_t i = 0; i < ELEMENTSOF(open); i++)
                assert_null(never_list_lookup(open[i], true));
        /* The whole AMD configuration and IBS blocks, without a hole. */
        for (uint32_t msr = 0xC0011020; msr <= 0xC001103F; msr++)
                assert_non_null(never_list_lookup(msr, false));
        /* The binary search finds every entry only while the table stays sorted; a probe of
         * each closed address above did that for the new ones, these for their neighbours. */
        assert_string_equal(never_list_lookup(0x79, false), "IA32_BIOS_UPDT_TRIG");
        assert_string_equal(never_list_lookup(0x9B, false), "IA32_SMM_MONITOR_CTL");
        assert_string_equal(never_list_lookup(0x10A, false), "IA32_ARCH_CAPABILITIES");
        assert_string_equal(never_list_lookup(0x1A2, true), "MSR_TEMPERATURE_TARGET");
        assert_string_equal(never_list_lookup(0x1C8, false), "MSR_LBR_SELECT");
        assert_string_equal(never_list_lookup(0xDA0, false), "IA32_XSS");
        assert_string_equal(never_list_lookup(0xDC0, false), "MSR_LBR_INFO");
}

static void test_never_list_amd(void **state) {
        static const uint32_t never[] = { 0xC0010015, 0xC0010010, 0xC0000080, 0xC001011F, 0xC0011030,
                                          0xC001103C, 0xC0010300, 0xC0002000, 0xC0002FFF, 0xC00102B3,
                                          0xC0000104, 0xC000010E, 0xC0010058, 0xC001001D };
        static const uint32_t write_only_refused[] = { 0xC0000303, 0xC0010062, 0xC0010064, 0xC001006B,
                                                       0xC00102F0 };

        for (size_t i = 0; i < ELEMENTSOF(never); i++) {
                assert_non_null(never_list_lookup(never[i], false));
                assert_non_null(never_list_lookup(never[i], true));
        }
        for (size_t i = 0; i < ELEMENTSOF(write_only_refused); i++) {
                assert_null(never_list_lookup(write_only_refused[i], false));
                assert_non_null(never_list_lookup(write_only_refused[i], true));
        }
        /* The counters themselves are not on it. */
        assert_null(never_list_lookup(0xC0010200, true));
        assert_null(never_list_lookup(0xC0000301, true));
        assert_null(never_list_lookup(0xC0000302, true));
        assert_null(never_list_lookup(0xC0010230, true));
        assert_null(never_list_lookup(0xC0010240, true));
}

/* Properties every shipped file must keep, whoever edits it next. */
static void test_shipped_invariants(void **state) {
        static const char *const files[] = { "intel-skx.conf", "intel-icx.conf", "intel-spr.conf",
                                             "amd-zen4.conf", "amd-zen5.conf" };

        for (size_t f = 0; f < ELEMENTSOF(files); f++) {
                _cleanup_(allowlist_freep) Allowlist *a = parse_shipped(files[f]);

                assert_true(a->n_msr > 0);
                for (size_t i = 0; i < a->n_msr; i++) {
                        const AllowEntry *e = &a->msr[i];

                        if (i > 0)
                                assert_true(a->msr[i - 1].last < e->first);
                        for (uint64_t reg = e->first; reg <= e->last; reg++)
                                if (never_list_lookup((uint32_t) reg, e->write_mask != 0))
                                        fail_msg("%s: %s covers never-list MSR 0x%" PRIx64, files[f],
                                                 e->name, reg);
                        if (strcmp(e->name, "IA32_PERFEVTSEL") == 0)
                                /* No PC, INT, ANY; nothing at or above bit 32. */
                                assert_int_equal(e->write_mask & 0xFFFFFFFF00380000ULL, 0);
                        if (strncmp(e->name, "AMD_PERF_CTL", 12) == 0)
                                /* No INT (20), GuestOnly (40), HostOnly (41), nothing reserved. */
                                assert_int_equal(e->write_mask & ~0xFFFC7FFFFULL, 0);
                        if (strncmp(e->name, "AMD_L3_PERF_CTL", 15) == 0 ||
                            strncmp(e->name, "AMD_DF_PERF_CTL", 15) == 0)
                                assert_int_equal(e->write_mask & (UINT64_C(1) << 20), 0);
                        if (strcmp(e->name, "IA32_FIXED_CTR_CTRL") == 0)
                                /* No AnyThread, no PMI, no adaptive PEBS. */
                                assert_int_equal(e->write_mask & ~0x3333ULL, 0);
                        if (strcmp(e->cls, "rapl") == 0 || strcmp(e->cls, "core-pmu-info") == 0)
                                assert_int_equal(e->write_mask, 0);
                        assert_non_null(reg_scope_to_string(e->scope));
                }
                for (size_t i = 0; i < a->n_pci; i++) {
                        const AllowEntry *e = &a->pci[i];

                        if (e->width == 4)
                                assert_true(e->write_mask <= UINT32_MAX);
                        if (e->write_mask != 0)
                                assert_true(e->first >= PCI_CONFIG_HEADER_END);
                        if (strcmp(e->name, "IMC_PMON_CTL") == 0)
                                /* No overflow enable (20), no EV_SEL_EXT (21), nothing reserved. */
                                assert_int_equal(e->write_mask & ~0xFFC6FFFFULL, 0);
                }
        }
}

/* ---------------------------------------------------------------- names and the never-list */

static void test_register_names(void **state) {
        _cleanup_(allowlist_freep) Allowlist *a = parse_shipped("intel-skx.conf");
        char buf[ALLOW_NAME_MAX + 12];
        const AllowEntry *e;

        e = allowlist_find_msr(a, 0x188);
        allow_entry_register_name(e, 0x188, buf, sizeof(buf));
        assert_string_equal(buf, "IA32_PERFEVTSEL2");
        allow_entry_register_name(e, 0x186, buf, sizeof(buf));
        assert_string_equal(buf, "IA32_PERFEVTSEL0");
        allow_entry_register_name(e, 0x18D, buf, sizeof(buf));
        assert_string_equal(buf, "IA32_PERFEVTSEL7");

        e = allowlist_find_msr(a, 0x4C8);
        allow_entry_register_name(e, 0x4C8, buf, sizeof(buf));
        assert_string_equal(buf, "IA32_A_PMC7");

        /* A single register keeps its name as written. */
        e = allowlist_find_msr(a, 0x38F);
        allow_entry_register_name(e, 0x38F, buf, sizeof(buf));
        assert_string_equal(buf, "IA32_PERF_GLOBAL_CTRL");
        e = allowlist_find_msr(a, 0x1A7);
        allow_entry_register_name(e, 0x1A7, buf, sizeof(buf));
        assert_string_equal(buf, "MSR_OFFCORE_RSP_1");

        /* PCI ranges count registers, not bytes. */
        e = allowlist_find_pci(a, 0x8086, 0x2046, 0xB8);
        allow_entry_register_name(e, 0xB8, buf, sizeof(buf));
        assert_string_equal(buf, "IMC_PMON_CTR3");
        e = allowlist_find_pci(a, 0x8086, 0x2046, 0xDC);
        allow_entry_register_name(e, 0xDC, buf, sizeof(buf));
        assert_string_equal(buf, "IMC_PMON_CTL1");
        e = allowlist_find_pci(a, 0x8086, 0x2046, 0xF4);
        allow_entry_register_name(e, 0xF4, buf, sizeof(buf));
        assert_string_equal(buf, "IMC_PMON_BOX_CTL");

        /* Truncates, and never writes to a zero-sized buffer. */
        e = allowlist_find_msr(a, 0x188);
        allow_entry_register_name(e, 0x188, buf, 6);
        assert_string_equal(buf, "IA32_");
        buf[0] = 'x';
        allow_entry_register_name(e, 0x188, buf, 0);
        assert_int_equal(buf[0], 'x');
}

static void test_never_list(void **state) {
        static const uint32_t required[] = {
                0x600, 0x1D9, 0x3F1, 0x3F2, 0x3F6, 0x3F7, 0x1A0,
                0xC0000080, 0xC0000081, 0xC0000082, 0xC0000083, 0xC0000084,
                0xC0000100, 0xC0000101, 0xC0000102, 0xC0000103, 0x174, 0x175, 0x176,
                0x1B, 0x3A, 0x48, 0x49, 0x10B, 0x10A,
                0x610, 0x618, 0x638, 0x640, 0x65C, 0x1AD, 0x199, 0x1B0, 0x770, 0x774,
                0x1C8, 0x1C9, 0x680, 0x690, 0x69F, 0x6C0, 0x6DF, 0xDC0, 0xDDF,
                0x14CE, 0x14CF, 0x1500, 0x151F, 0x1580, 0x1600, 0x161F,
                0x560, 0x561, 0x570, 0x571, 0x572, 0x580, 0x587,
                0x14C1, 0x14C8, 0x1309, 0x130C, 0x9B, 0x79,
                /* machine check: global registers, CTL2 of banks 0-31, the banks themselves */
                0x179, 0x17A, 0x17B, 0x280, 0x29F, 0x400, 0x401, 0x402, 0x403, 0x47F,
                /* clock modulation, thermal interrupts, the rest of HWP */
                0x19A, 0x19B, 0x1B2, 0x772, 0x773, 0x775, 0x776, 0x777,
                0xC0010015, 0xC0010010, 0xC0010114, 0xC0010117,
                0xC0010020, 0xC0010111, 0xC0010112, 0xC0010113, 0xC0010115, 0xC0010116, 0xC0010118,
                0xC001011F, 0xC0011020, 0xC0011021, 0xC0011022, 0xC0011029,
        };
        /* Written never, read where an allowlist lists them. */
        static const uint32_t write_only[] = { 0x10, 0x1A2, 0x64B, 0x64C, 0x771 };
        static const uint32_t open[] = {
                0x0, 0xC1, 0xC8, 0xE7, 0xE8, 0x186, 0x18D, 0x1A6, 0x1A7, 0x309, 0x30C,
                0x329, 0x345, 0x38D, 0x38E, 0x38F, 0x390, 0x391, 0x392, 0x4C1, 0x4C8,
                0x606, 0x611, 0x613, 0x614, 0x619, 0x61B, 0x61C, 0x639, 0x64D,
                0x14C0, 0x14C9, 0x1308, 0x130D, 0x1620, 0x6BF, 0x6A1, 0x6A3,
                0x19C, 0x1B1, 0x178, 0x17C, 0x27F, 0x2A0, 0x3FF, 0x480, 0x648, 0x649, 0x64A, 0x778,
                0xC0000085, 0xC0000105, 0xC0010000, 0xC0010200, 0xC0010201, 0xC0011040, UINT32_MAX,
        };

        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!never_list_lookup(required[i], false) || !never_list_lookup(required[i], true))
                        fail_msg("MSR 0x%" PRIx32 " is missing from the never-list", required[i]);
        for (size_t i = 0; i < ELEMENTSOF(write_only); i++) {
                if (!never_list_lookup(write_only[i], true))
                        fail_msg("writing MSR 0x%" PRIx32 " is not on the never-list", write_only[i]);
                if (never_list_lookup(write_only[i], false))
                        fail_msg("reading MSR 0x%" PRIx32 " is on the never-list", write_only[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(open); i++)
                if (never_list_lookup(open[i], true) || never_list_lookup(open[i], false))
                        fail_msg("MSR 0x%" PRIx32 " is on the never-list as %s", open[i],
                                 never_list_lookup(open[i], true));

        assert_string_equal(never_list_lookup(0x600, false), "IA32_DS_AREA");
        assert_string_equal(never_list_lookup(0x1D9, true), "IA32_DEBUGCTL");
        assert_string_equal(never_list_lookup(0x3F1, false), "IA32_PEBS_ENABLE");
        assert_string_equal(never_list_lookup(0xC0000080, true), "IA32_EFER");
        assert_string_equal(never_list_lookup(0x610, true), "MSR_PKG_POWER_LIMIT");
        assert_string_equal(never_list_lookup(0x10, true), "IA32_TIME_STAMP_COUNTER");
        assert_string_equal(never_list_lookup(0x43E, false), "IA32_MCi_CTL/STATUS/ADDR/MISC");
        assert_string_equal(never_list_lookup(0xC0000103, true), "IA32_TSC_AUX");
        assert_string_equal(never_list_lookup(0xC0010020, true), "AMD_PATCH_LOADER");
        assert_string_equal(never_list_lookup(0xC0011029, false), "AMD_DE_CFG");
}

static void test_scope_names(void **state) {
        assert_string_equal(reg_scope_to_string(REG_SCOPE_THREAD), "thread");
        assert_string_equal(reg_scope_to_string(REG_SCOPE_CORE), "core");
        assert_string_equal(reg_scope_to_string(REG_SCOPE_PACKAGE), "package");
        assert_string_equal(reg_scope_to_string(REG_SCOPE_CCX), "ccx");
        assert_null(reg_scope_to_string(_REG_SCOPE_MAX));
        assert_null(reg_scope_to_string((RegScope) -1));
}

/* ---------------------------------------------------------------- parser */

static Allowlist *parse_text(const char *text) {
        char reason[256] = "";
        Allowlist *a = NULL;
        unsigned line = 0;
        int r;

        r = allowlist_parse_file(write_file("good.conf", text, 0), &a, &line, reason, sizeof(reason));
        if (r < 0)
                fail_msg("unexpected failure: r=%d: %s", r, reason);
        return a;
}

static void test_parse_syntax(void **state) {
        _cleanup_(allowlist_freep) Allowlist *a = parse_text(
                "# leading comment\n"
                "\n"
                "   models   t1 t-2 t_3  # trailing comment\n"
                "\tmsr\t390\t0\tcore\tx\tDECIMAL\r\n"
                "msr 0X1A6 0xffffffffffffffff package x UPPER_HEX\n"
                "msr 0x10-0x11 18446744073709551615 thread x Dotted.name_2\n"
                "pci 8086:ABCD 0xFF8 8 0 package x LAST8\n"
                "pci abcd:8086 0 4 0xFFFFFFFF thread x FIRST4\n"
                "msr 0xFFFFFFFF 0 thread x TOP");
        const AllowEntry *e;

        assert_int_equal(a->n_models, 3);
        assert_string_equal(a->models[1], "t-2");
        assert_int_equal(a->n_msr, 4);
        assert_int_equal(a->n_pci, 2);
        assert_string_equal(a->path + strlen(a->path) - strlen("/good.conf"), "/good.conf");

        e = allowlist_find_msr(a, 0x186);
        assert_non_null(e);
        assert_string_equal(e->name, "DECIMAL");
        assert_int_equal(e->scope, REG_SCOPE_CORE);
        assert_int_equal(allowlist_find_msr(a, 0x1A6)->write_mask, UINT64_MAX);
        assert_int_equal(allowlist_find_msr(a, 0x11)->write_mask, UINT64_MAX);
        assert_string_equal(allowlist_find_msr(a, UINT32_MAX)->name, "TOP");
        assert_string_equal(allowlist_find_pci(a, 0x8086, 0xABCD, 0xFF8)->name, "LAST8");
        assert_null(allowlist_find_pci(a, 0x8086, 0xABCD, 0xFFC));
        assert_string_equal(allowlist_find_pci(a, 0xABCD, 0x8086, 0)->name, "FIRST4");
}

static void test_parse_sorts_and_finds(void **state) {
        _cleanup_(allowlist_freep) Allowlist *a = parse_text(
                "models t\n"
                "msr 0x30-0x3F 0 thread x D\n"
                "msr 0x20 0 thread x C\n"
                "msr 0x10-0x1F 0 thread x B\n"
                "msr 0x1 0 thread x A\n"
                "pci 8086:0002 0x10 4 0 package x P3\n"
                "pci 8086:0001 0x20 4 0 package x P2\n"
                "pci 8086:0001 0x10-0x1C 4 0 package x P1\n"
                "pci 1000:0009 0x10 4 0 package x P0\n"
                "pci 8086:0003 0x10-0x18 8 0 package x P4\n");
        static const char *const msr_order[] = { "A", "B", "C", "D" };
        static const char *const pci_order[] = { "P0", "P1", "P2", "P3", "P4" };

        assert_int_equal(a->n_msr, ELEMENTSOF(msr_order));
        for (size_t i = 0; i < a->n_msr; i++)
                assert_string_equal(a->msr[i].name, msr_order[i]);
        assert_int_equal(a->n_pci, ELEMENTSOF(pci_order));
        for (size_t i = 0; i < a->n_pci; i++)
                assert_string_equal(a->pci[i].name, pci_order[i]);

        assert_null(allowlist_find_msr(a, 0x0));
        assert_string_equal(allowlist_find_msr(a, 0x1)->name, "A");
        assert_null(allowlist_find_msr(a, 0x2));
        assert_string_equal(allowlist_find_msr(a, 0x10)->name, "B");
        assert_string_equal(allowlist_find_msr(a, 0x1F)->name, "B");
        assert_string_equal(allowlist_find_msr(a, 0x20)->name, "C");
        assert_null(allowlist_find_msr(a, 0x21));
        assert_string_equal(allowlist_find_msr(a, 0x3F)->name, "D");
        assert_null(allowlist_find_msr(a, 0x40));

        assert_string_equal(allowlist_find_pci(a, 0x8086, 0x0001, 0x10)->name, "P1");
        assert_string_equal(allowlist_find_pci(a, 0x8086, 0x0001, 0x1C)->name, "P1");
        assert_string_equal(allowlist_find_pci(a, 0x8086, 0x0001, 0x20)->name, "P2");
        assert_null(allowlist_find_pci(a, 0x8086, 0x0001, 0x24));
        assert_null(allowlist_find_pci(a, 0x8086, 0x0001, 0x0C));
        assert_string_equal(allowlist_find_pci(a, 0x8086, 0x0002, 0x10)->name, "P3");
        assert_null(allowlist_find_pci(a, 0x8086, 0x0002, 0x14));
        assert_string_equal(allowlist_find_pci(a, 0x8086, 0x0003, 0x18)->name, "P4");
        assert_null(allowlist_find_pci(a, 0x8086, 0x0003, 0x14));
        assert_string_equal(allowlist_find_pci(a, 0x1000, 0x0009, 0x10)->name, "P0");
        assert_null(allowlist_find_pci(a, 0x1000, 0x0008, 0x10));
}

typedef struct BadCase {
        const char *what;
        const char *text;
        unsigned line;
        const char *reason;
} BadCase;

#define M "models t\n"
#define OK_MSR "msr 0x186 0 thread core-pmu IA32_PERFEVTSEL\n"

static const BadCase bad_cases[] = {
        { "unknown directive", M OK_MSR "register 0x10 0 thread x Y\n", 3, "unknown directive 'register'" },
        { "bad hex number", M "\n# comment\nmsr 0x18G 0 thread x A\n", 4, "bad address '0x18G'" },
        { "bare 0x", M "msr 0x 0 thread x A\n", 2, "bad address '0x'" },
        { "double prefix", M "msr 0x0x10 0 thread x A\n", 2, "bad address '0x0x10'" },
        { "signed number", M "msr 0x10 -1 thread x A\n", 2, "bad write mask '-1'" },
        { "plus sign", M "msr +16 0 thread x A\n", 2, "bad address '+16'" },
        { "digit separator", M "msr 1_000 0 thread x A\n", 2, "bad address '1_000'" },
        { "mask overflow", M "msr 0x10 0x10000000000000000 thread x A\n", 2, "bad write mask" },
        { "MSR beyond 32 bits", M "msr 0x100000000 0 thread x A\n", 2, "out of range" },
        { "bad range end", M "msr 0x10-zz 0 thread x A\n", 2, "bad address 'zz'" },
        { "empty range end", M "msr 0x10- 0 thread x A\n", 2, "bad address ''" },
        { "reversed range", M "msr 0x18D-0x186 0 thread x A\n", 2, "ends before it starts" },
        { "overlapping MSR ranges",
          M "msr 0x186-0x18D 0xFF thread x A\nmsr 0xC1 0 thread x B\nmsr 0x18D 0 thread x C\n",
          4, "overlaps A on line 2" },
        { "overlap reported at the later line", M "msr 0x190 0 thread x A\nmsr 0x180-0x195 0 thread x B\n",
          3, "overlaps A on line 2" },
        { "duplicate MSR", M "\n\nmsr 0x10 0 thread x A\nmsr 0x10 0 thread x B\n",
          5, "overlaps A on line 4" },
        { "overlapping PCI ranges",
          M "pci 8086:2042 0xA0-0xB8 8 0 package x CTR\npci 8086:2042 0xBC 4 0 package x HI\n",
          3, "overlaps CTR on line 2" },
        { "width not 4 or 8", M "pci 8086:2042 0xF4 2 0 package x A\n", 2, "width 2 is neither 4 nor 8" },
        { "width 16", M "pci 8086:2042 0xF0 16 0 package x A\n", 2, "width 16 is neither 4 nor 8" },
        { "misaligned PCI start", M OK_MSR "pci 8086:2042 0xF2 4 0 package x A\n",
          3, "not made of aligned 4-byte" },
        { "misaligned PCI last", M "pci 8086:2042 0xA0-0xA4 8 0 package x A\n",
          2, "not made of aligned 8-byte" },
        { "PCI 8-byte at 4-aligned start", M "pci 8086:2042 0xA4 8 0 package x A\n",
          2, "not made of aligned 8-byte" },
        { "PCI past config space", M "pci 8086:2042 0x1000 4 0 package x A\n", 2, "out of range" },
        { "PCI mask wider than 4 bytes", M "pci 8086:2042 0xF4 4 0x100000000 package x A\n",
          2, "out of range" },
        { "bad PCI id", M "pci 8086-2042 0xF4 4 0 package x A\n", 2, "bad PCI id '8086-2042'" },
        { "short PCI id", M "pci 808:2042 0xF4 4 0 package x A\n", 2, "bad PCI id" },
        { "PCI id with prefix", M "pci 0x8086:0x2042 0xF4 4 0 package x A\n", 2, "bad PCI id" },
        { "missing models line", "# no models\n" OK_MSR "\n", 3, "no 'models' line" },
        { "empty file", "", 1, "no 'models' line" },
        { "second models line", M OK_MSR "models u\n", 3, "second 'models' line (the first is line 1)" },
        { "models without keys", "models\n", 1, "at least one model key" },
        { "too many model keys", "models a b c d e f g h i\n", 1, "too many model keys" },
        { "model key too long", "models abcdefghijklmnop\n", 1, "bad model key 'abcdefghijklmnop'" },
        { "model key charset", "models SKX\n", 1, "bad model key 'SKX'" },
        { "model key twice", "models skx clx skx\n", 1, "'skx' listed twice" },
        { "unknown scope", M "msr 0x10 0 socket x A\n", 2, "unknown scope 'socket'" },
        { "bad class", M "msr 0x10 0 thread Core_PMU A\n", 2, "bad class 'Core_PMU'" },
        { "class too long", M "msr 0x10 0 thread abcdefghijklmnop A\n", 2, "bad class" },
        { "bad name", M "msr 0x10 0 thread x A-B\n", 2, "bad name 'A-B'" },
        { "name too long", M "msr 0x10 0 thread x ABCDEFGHIJABCDEFGHIJABCDEFGHIJABCDEFGHIJ\n",
          2, "bad name" },
        { "msr field count", M "msr 0x10 0 thread x\n", 2, "'msr' takes 5 fields" },
        { "msr unknown flag", M "msr 0x10 0 thread x A B\n", 2, "unknown flag 'B'" },
        { "pci unknown flag", M "pci 8086:2042 0xF4 4 0 package x A zero\n", 2, "unknown flag 'zero'" },
        { "counter and action", M "msr 0x10 0 thread x A counter action\n", 2, "both a counter and an action" },
        { "pci field count", M "pci 8086:2042 0xF4 4 0 package x\n", 2, "'pci' takes 7 fields" },
        { "too many fields", M "msr 1 2 3 4 5 6 7 8 9 10\n", 2, "too many fields" },
};

static void test_parse_bad(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
                const BadCase *c = &bad_cases[i];
                char reason[256] = "", prefix[32];
                Allowlist *a = NULL;
                unsigned line = 0;
                int r;

                r = allowlist_parse_file(write_file("bad.conf", c->text, 0), &a, &line, reason,
                                         sizeof(reason));
                if (r != -EINVAL)
                        fail_msg("%s: expected -EINVAL, got %d", c->what, r);
                assert_null(a);
                if (line != c->line)
                        fail_msg("%s: expected line %u, got %u (%s)", c->what, c->line, line, reason);
                (void) snprintf(prefix, sizeof(prefix), "line %u: ", c->line);
                if (strncmp(reason, prefix, strlen(prefix)) != 0 || !strstr(reason, c->reason))
                        fail_msg("%s: expected '%s%s...', got '%s'", c->what, prefix, c->reason, reason);
        }
}

static void test_parse_limits(void **state) {
        static const char with_nul[] = M "msr 0x10\0 0 thread x A\n";
        _cleanup_free_ char *text = NULL;
        char reason[256] = "", longline[1100];
        size_t size = 0;
        Allowlist *a = NULL;
        unsigned line = 0;
        FILE *f;
        int r;

        /* 1023 characters are fine, 1024 are not. */
        memset(longline, 0, sizeof(longline));
        memcpy(longline, M "#", strlen(M "#"));
        memset(longline + strlen(M "#"), 'x', 1022);
        assert_int_equal(strlen(longline), strlen(M) + 1023);
        a = parse_text(longline);
        a = allowlist_free(a);
        longline[strlen(longline)] = 'x';
        r = allowlist_parse_file(write_file("long.conf", longline, 0), &a, &line, reason, sizeof(reason));
        assert_int_equal(r, -EINVAL);
        assert_int_equal(line, 2);
        assert_non_null(strstr(reason, "longer than 1023"));

        r = allowlist_parse_file(write_file("nul.conf", with_nul, sizeof(with_nul) - 1), &a, &line, reason,
                                 sizeof(reason));
        assert_int_equal(r, -EINVAL);
        assert_int_equal(line, 2);
        assert_non_null(strstr(reason, "NUL byte"));

        /* 4096 entries are fine; the 4097th is refused at its own line. */
        f = open_memstream(&text, &size);
        assert_non_null(f);
        fputs(M, f);
        for (unsigned i = 0; i < 4096; i++)
                fprintf(f, "msr 0x%x 0 thread x R\n", 0x20000 + i);
        assert_int_equal(fflush(f), 0);
        a = parse_text(text);
        assert_int_equal(a->n_msr, 4096);
        assert_string_equal(allowlist_find_msr(a, 0x20000 + 4095)->name, "R");
        a = allowlist_free(a);
        fprintf(f, "pci 8086:2042 0xF4 4 0 package x P\n");
        assert_int_equal(fclose(f), 0);
        r = allowlist_parse_file(write_file("many.conf", text, 0), &a, &line, reason, sizeof(reason));
        assert_int_equal(r, -EINVAL);
        assert_int_equal(line, 4098);
        assert_non_null(strstr(reason, "more than 4096 entries"));
}

static void test_parse_errors_without_outputs(void **state) {
        const char *path;
        Allowlist *a = NULL;
        unsigned line = 77;
        char reason[8] = "keep";

        /* The reason and line pointers are optional, and a short buffer truncates. */
        path = write_file("bad.conf", "models t\nfoo\n", 0);
        assert_int_equal(allowlist_parse_file(path, &a, NULL, NULL, 0), -EINVAL);
        assert_int_equal(allowlist_parse_file(path, &a, &line, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(line, 2);
        assert_string_equal(reason, "line 2:");

        /* Not a syntax error: nothing about lines is reported. */
        line = 77;
        strcpy(reason, "keep");
        path = "/nonexistent/pmugate/x.conf";
        assert_int_equal(allowlist_parse_file(path, &a, &line, reason, sizeof(reason)), -ENOENT);
        assert_int_equal(line, 77);
        assert_string_equal(reason, "keep");
        assert_int_equal(allowlist_parse_file(tmpdir, &a, &line, reason, sizeof(reason)), -EISDIR);
        assert_null(a);
}

/* A data file that lists every register the never-list added for machine checks, thermal and
 * clock control, TDP and turbo, HWP, the TSC and AMD's hardware configuration, all writable,
 * opens none of them for writing, and only the write-only ones for reading; a writable PCI
 * entry over the configuration header is flagged too. */
static void test_never_list_writable_file_opens_nothing(void **state) {
        static const struct {
                uint32_t first, last;
                bool readable;
        } listed[] = {
                { 0x10, 0x10, true }, { 0x179, 0x17B, false }, { 0x19A, 0x19B, false },
                { 0x1A2, 0x1A2, true }, { 0x1B2, 0x1B2, false }, { 0x280, 0x29F, false },
                { 0x400, 0x47F, false }, { 0x48, 0x49, false }, { 0x10B, 0x10B, false },
                { 0x64B, 0x64C, true }, { 0x770, 0x770, false }, { 0x771, 0x771, true },
                { 0x772, 0x777, false }, { 0xC0000100, 0xC0000103, false },
                { 0xC0010010, 0xC0010010, false },
                { 0xC0010015, 0xC0010015, false }, { 0xC0010020, 0xC0010020, false },
                { 0xC0010111, 0xC0010118, false }, { 0xC001011F, 0xC001011F, false },
                { 0xC0011020, 0xC0011022, false }, { 0xC0011029, 0xC0011029, false },
        };
        _cleanup_free_ char *text = NULL;
        _cleanup_(allowlist_freep) Allowlist *a = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        const AllowEntry *e;

        assert_non_null(f);
        fprintf(f, "models t\n");
        for (size_t i = 0; i < ELEMENTSOF(listed); i++)
                fprintf(f, "msr 0x%" PRIx32 "-0x%" PRIx32 " 0xFFFFFFFFFFFFFFFF thread core-pmu HOLE%zu\n",
                        listed[i].first, listed[i].last, i);
        fprintf(f, "pci 8086:2042 0x00-0x3C 4 0xFFFFFFFF package uncore-imc PCI_HEADER\n");
        fprintf(f, "pci 8086:2046 0x38-0x44 4 0xFFFFFFFF package uncore-imc ACROSS_HEADER_END\n");
        fprintf(f, "pci 8086:2046 0x48-0x4C 4 0xFFFFFFFF package uncore-imc AFTER_HEADER\n");
        fprintf(f, "pci 8086:204a 0x00-0x3C 4 0x0 package uncore-imc HEADER_READ_ONLY\n");
        assert_int_equal(fclose(f), 0);
        a = parse_text(text);

        for (size_t i = 0; i < ELEMENTSOF(listed); i++)
                for (uint64_t reg = listed[i].first; reg <= listed[i].last; reg++) {
                        e = allowlist_find_msr(a, (uint32_t) reg);
                        assert_non_null(e);
                        assert_int_equal(e->write_mask, UINT64_MAX);
                        if (!(e->flags & ALLOW_FLAG_NEVER))
                                fail_msg("%s is not flagged as overlapping the never-list", e->name);
                        if (!never_list_lookup((uint32_t) reg, true))
                                fail_msg("writing MSR 0x%" PRIx64 " is allowed", reg);
                        if ((never_list_lookup((uint32_t) reg, false) == NULL) != listed[i].readable)
                                fail_msg("reading MSR 0x%" PRIx64 " is %s", reg,
                                         listed[i].readable ? "refused" : "allowed");
                }

        e = allowlist_find_pci(a, 0x8086, 0x2042, 0x04);
        assert_non_null(e);
        assert_true(e->flags & ALLOW_FLAG_NEVER);
        e = allowlist_find_pci(a, 0x8086, 0x2046, 0x40);
        assert_non_null(e);
        assert_true(e->flags & ALLOW_FLAG_NEVER);
        e = allowlist_find_pci(a, 0x8086, 0x2046, 0x48);
        assert_non_null(e);
        assert_false(e->flags & ALLOW_FLAG_NEVER);
        /* Reading the header is the allowlist's business: a read-only entry is not flagged. */
        e = allowlist_find_pci(a, 0x8086, 0x204a, 0x00);
        assert_non_null(e);
        assert_false(e->flags & ALLOW_FLAG_NEVER);
}

/* A data file that lists a never-list register parses, and the entry is there; what keeps the
 * register closed is never_list_lookup(), which the daemon consults first at every request. */
static void test_never_list_wins_at_lookup(void **state) {
        _cleanup_(allowlist_freep) Allowlist *a = parse_text(
                "models t\n"
                "msr 0x600 0xFFFFFFFFFFFFFFFF thread core-pmu IA32_DS_AREA\n"
                "msr 0x1D0-0x1DF 0xFF thread core-pmu WIDE\n"
                "msr 0x186 0xFFC7FFFF thread core-pmu IA32_PERFEVTSEL\n");
        const AllowEntry *e;

        e = allowlist_find_msr(a, 0x600);
        assert_non_null(e);
        assert_int_equal(e->write_mask, UINT64_MAX);
        assert_string_equal(never_list_lookup(0x600, false), "IA32_DS_AREA");

        e = allowlist_find_msr(a, 0x1D9);
        assert_non_null(e);
        assert_string_equal(never_list_lookup(0x1D9, true), "IA32_DEBUGCTL");
        assert_null(never_list_lookup(0x1D8, true));

        assert_non_null(allowlist_find_msr(a, 0x186));
        assert_null(never_list_lookup(0x186, true));
}

/* ---------------------------------------------------------------- loading by model */

static void test_load_shipped(void **state) {
        static const struct {
                const char *key, *file;
        } cases[] = {
                { "skx", "/intel-skx.conf" },
                { "clx", "/intel-skx.conf" },
                { "icx", "/intel-icx.conf" },
                { "spr", "/intel-spr.conf" },
                { "emr", "/intel-emr.conf" },
                { "gnr", "/intel-gnr.conf" },
                { "srf", "/intel-srf.conf" },
        };
        Allowlist *a = (Allowlist *) 0x1;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(allowlist_freep) Allowlist *b = NULL;
                size_t n, m = strlen(cases[i].file);

                assert_int_equal(allowlist_load_for_model(shipped_dir(), cases[i].key, &b), 0);
                assert_non_null(b);
                n = strlen(b->path);
                assert_true(n > m);
                assert_string_equal(b->path + n - m, cases[i].file);
        }

        {
                /* Flags the daemon's lease restore relies on. */
                _cleanup_(allowlist_freep) Allowlist *spr = NULL;

                assert_int_equal(allowlist_load_for_model(shipped_dir(), "spr", &spr), 0);
                assert_true(allowlist_find_msr(spr, 0xC1)->flags & ALLOW_FLAG_COUNTER);
                assert_true(allowlist_find_msr(spr, 0x30C)->flags & ALLOW_FLAG_COUNTER);
                assert_true(allowlist_find_msr(spr, 0x329)->flags & ALLOW_FLAG_COUNTER);
                assert_true(allowlist_find_msr(spr, 0x390)->flags & ALLOW_FLAG_ACTION);
                assert_true(allowlist_find_msr(spr, 0x391)->flags & ALLOW_FLAG_ACTION);
                assert_int_equal(allowlist_find_msr(spr, 0x186)->flags, 0);
                assert_int_equal(allowlist_find_msr(spr, 0x38F)->flags, 0);
        }

        {
                _cleanup_(allowlist_freep) Allowlist *zen4 = NULL, *zen5 = NULL;

                assert_int_equal(allowlist_load_for_model(shipped_dir(), "zen4", &zen4), 0);
                assert_int_equal(allowlist_load_for_model(shipped_dir(), "zen5", &zen5), 0);
                assert_true(allowlist_find_msr(zen5, 0xC0010201)->flags & ALLOW_FLAG_COUNTER);
        }
        assert_int_equal(allowlist_load_for_model(shipped_dir(), "zen3", &a), -ENOENT);
        assert_int_equal(allowlist_load_for_model(shipped_dir(), "", &a), -ENOENT);
        assert_ptr_equal(a, (Allowlist *) 0x1);
}

static void make_subdir(const char *name, char *path, size_t size) {
        (void) snprintf(path, size, "%s/%s", tmpdir, name);
        assert_int_equal(mkdir(path, 0755), 0);
}

static void test_load_tmp(void **state) {
        _cleanup_(allowlist_freep) Allowlist *a = NULL;
        char dir[PATH_MAX];

        make_subdir("load", dir, sizeof(dir));
        /* Each model in one file; other names are not data files. */
        write_file("load/20-a.conf", "models bar\nmsr 0x20 0 thread x SECOND\n", 0);
        write_file("load/10-b.conf", "models foo\nmsr 0x10 0 thread x FIRST\n", 0);
        write_file("load/notes.txt", "this is not an allowlist\n", 0);
        write_file("load/.hidden.conf", "neither is this\nmodels foo\n", 0);
        write_file("load/old.conf~", "nor this\nmodels foo\n", 0);

        assert_int_equal(allowlist_load_for_model(dir, "foo", &a), 0);
        assert_non_null(allowlist_find_msr(a, 0x10));
        assert_null(allowlist_find_msr(a, 0x20));
        a = allowlist_free(a);
        assert_int_equal(allowlist_load_for_model(dir, "bar", &a), 0);
        assert_non_null(allowlist_find_msr(a, 0x20));
        a = allowlist_free(a);
        assert_int_equal(allowlist_load_for_model(dir, "baz", &a), -ENOENT);
        assert_null(a);

        /* A broken file stops loading even when an earlier file already matched. */
        write_file("load/30-broken.conf", "models other\nmsr 0x10 0 socket x A\n", 0);
        assert_int_equal(allowlist_load_for_model(dir, "foo", &a), -EINVAL);
        assert_null(a);

        /* Two files for one model: refused, for this machine's model and for any other. */
        make_subdir("twice", dir, sizeof(dir));
        write_file("twice/10-a.conf", "models foo bar\nmsr 0x10 0 thread x A\n", 0);
        write_file("twice/20-b.conf", "models baz bar\nmsr 0x20 0 thread x B\n", 0);
        assert_int_equal(allowlist_load_for_model(dir, "foo", &a), -ENOTUNIQ);
        assert_null(a);
        assert_int_equal(allowlist_load_for_model(dir, "bar", &a), -ENOTUNIQ);
        assert_null(a);
        write_file("twice/20-b.conf", "models baz\nmsr 0x20 0 thread x B\n", 0);
        assert_int_equal(allowlist_load_for_model(dir, "bar", &a), 0);
        a = allowlist_free(a);
        write_file("twice/30-c.conf", "models qux qux\nmsr 0x20 0 thread x C\n", 0);
        assert_int_equal(allowlist_load_for_model(dir, "foo", &a), -EINVAL);
        assert_null(a);

        make_subdir("empty", dir, sizeof(dir));
        assert_int_equal(allowlist_load_for_model(dir, "foo", &a), -ENOENT);
        (void) snprintf(dir, sizeof(dir), "%s/missing", tmpdir);
        assert_int_equal(allowlist_load_for_model(dir, "foo", &a), -ENOENT);
        assert_null(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shipped_skx),
                cmocka_unit_test(test_shipped_skx_pci),
                cmocka_unit_test(test_shipped_icx_spr),
                cmocka_unit_test(test_shipped_srf),
                cmocka_unit_test(test_shipped_invariants),
                cmocka_unit_test(test_shipped_amd),
                cmocka_unit_test(test_never_list_amd),
                cmocka_unit_test(test_never_list_gaps),
                cmocka_unit_test(test_register_names),
                cmocka_unit_test(test_never_list),
                cmocka_unit_test(test_never_list_writable_file_opens_nothing),
                cmocka_unit_test(test_scope_names),
                cmocka_unit_test(test_parse_syntax),
                cmocka_unit_test(test_parse_sorts_and_finds),
                cmocka_unit_test(test_parse_bad),
                cmocka_unit_test(test_parse_limits),
                cmocka_unit_test(test_parse_errors_without_outputs),
                cmocka_unit_test(test_never_list_wins_at_lookup),
                cmocka_unit_test(test_load_shipped),
                cmocka_unit_test(test_load_tmp),
        };

        return cmocka_run_group_tests(tests, setup_tmpdir, teardown_tmpdir);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the perf_event path's catalogue read from a kernel's sysfs under a root directory,
 * fake trees written as Ice Lake-SP, Sapphire Rapids, an AMD and an ARM kernel show them, and
 * as a hostile or broken tree might
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
#include <sys/stat.h>
#include <unistd.h>

#include "backend/machine.h"
#include "backend/perf-catalog.h"
#include "backend/perf-format.h"
#include "log.h"
#include "macro.h"
#include "tmpdir_fixture.h"

#define DEVICES "sys/bus/event_source/devices"

static void make_parents(char *path, size_t from) {
        for (char *p = strchr(path + from, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                (void) mkdir(path, 0755);
                *p = '/';
        }
}

static void write_file(const char *rel, const char *text) {
        char path[4096];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        make_parents(path, strlen(tmpdir) + 1);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static void write_pmu_file(const char *pmu, const char *rel, const char *text) {
        char path[512];

        (void) snprintf(path, sizeof(path), DEVICES "/%s/%s", pmu, rel);
        write_file(path, text);
}

static void make_link(const char *target, const char *rel) {
        char path[4096];

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        make_parents(path, strlen(tmpdir) + 1);
        assert_int_equal(symlink(target, path), 0);
}

static void pmu(const char *name, const char *type, const char *cpumask) {
        write_pmu_file(name, "type", type);
        if (cpumask)
                write_pmu_file(name, "cpumask", cpumask);
}

static void intel_core(const char *name) {
        pmu(name, "4\n", NULL);
        write_pmu_file(name, "format/event", "config:0-7\n");
        write_pmu_file(name, "format/umask", "config:8-15\n");
        write_pmu_file(name, "format/edge", "config:18\n");
        write_pmu_file(name, "format/pc", "config:19\n");
        write_pmu_file(name, "format/inv", "config:23\n");
        write_pmu_file(name, "format/cmask", "config:24-31\n");
        write_pmu_file(name, "format/offcore_rsp", "config1:0-63\n");
        write_pmu_file(name, "format/frontend", "config1:0-23\n");
        write_pmu_file(name, "events/topdown-retiring", "event=0x00,umask=0x80\n");
        write_pmu_file(name, "events/slots", "event=0x00,umask=0x4\n");
}

/* The kernel's own PMUs that never go in, whatever they hold. */
static void kernel_pmus(void) {
        pmu("software", "1\n", NULL);
        pmu("tracepoint", "2\n", NULL);
        pmu("breakpoint", "5\n", NULL);
        pmu("kprobe", "6\n", NULL);
        write_pmu_file("kprobe", "format/retprobe", "config:0\n");
        pmu("uprobe", "7\n", NULL);
        pmu("msr", "9\n", NULL);
        write_pmu_file("msr", "format/event", "config:0-63\n");
        pmu("power", "10\n", "0\n");
        write_pmu_file("power", "format/event", "config:0-7\n");
}

static void uncore(const char *name, const char *type, const char *cpumask) {
        pmu(name, type, cpumask);
        write_pmu_file(name, "format/event", "config:0-7\n");
        write_pmu_file(name, "format/umask", "config:8-15\n");
}

/* Two packages of two CPUs; CPU 3 offline. */
static Machine *machine(void) {
        Machine *m = machine_new();

        assert_non_null(m);
        m->n_cpus = 4;
        m->cpus = calloc(4, sizeof(MachineCpu));
        assert_non_null(m->cpus);
        for (int i = 0; i < 4; i++)
                m->cpus[i] = (MachineCpu) { .present = true, .online = i != 3, .package = i / 2, .core = i % 2 };
        machine_update_summary(m);
        return m;
}

static PerfCatalog *read_catalog(void) {
        Machine *m = machine();
        PerfCatalog *c = NULL;

        log_set_max_level(LOG_CRIT);
        assert_int_equal(perf_catalog_read_sysfs(tmpdir, m, &c), 0);
        log_set_max_level(LOG_WARNING);
        machine_free(m);
        assert_non_null(c);
        return c;
}

static const PerfFormatField *format(const PerfPmu *p, const char *name) {
        for (size_t i = 0; i < p->n_formats; i++)
                if (strcmp(p->formats[i].name, name) == 0)
                        return &p->formats[i];
        return NULL;
}

static void assert_names(const PerfCatalog *c, const char *const *names, size_t n) {
        assert_int_equal(c->n_pmus, n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(c->pmus[i].name, names[i]);
}

/* caps/branches, the LBR's depth: absent is none, and only a small decimal is believed. */
static void test_branches(void **state) {
        static const struct {
                const char *text;
                uint32_t depth;
        } rows[] = {
                { NULL, 0 }, { "32\n", 32 }, { "16", 16 }, { "0\n", 0 }, { "64\n", 64 }, { "65\n", 0 },
                { "4096\n", 0 }, { "-1\n", 0 }, { "32x\n", 0 }, { "x\n", 0 }, { "\n", 0 }, { " 32\n", 0 },
                { "0032\n", 0 }, { "18446744073709551648\n", 0 },
        };

        (void) state;
        kernel_pmus();
        intel_core("cpu");
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                PerfCatalog *c;
                char path[4096];

                (void) snprintf(path, sizeof(path), "%s/" DEVICES "/cpu/caps/branches", tmpdir);
                (void) unlink(path);
                if (rows[i].text)
                        write_pmu_file("cpu", "caps/branches", rows[i].text);
                c = read_catalog();
                if (perf_catalog_core(c)->branches != rows[i].depth)
                        fail_msg("caps/branches %s: depth %u, not %u", rows[i].text ? rows[i].text : "(absent)",
                                 perf_catalog_core(c)->branches, rows[i].depth);
                perf_catalog_free(c);
        }
}

static void test_icelake_sp(void **state) {
        static const char *const names[] = { "software", "cpu", "hardware", "uncore_imc_0", "uncore_imc_1",
                                             "uncore_upi_0" };
        PerfCatalog *c;
        const PerfPmu *p;

        kernel_pmus();
        intel_core("cpu");
        uncore("uncore_imc_0", "14\n", "0,2\n");
        uncore("uncore_imc_1", "15\n", "2\n");
        uncore("uncore_upi_0", "16\n", "0\n");
        c = read_catalog();
        assert_names(c, names, ELEMENTSOF(names));

        p = perf_catalog_core(c);
        assert_non_null(p);
        assert_string_equal(p->name, "cpu");
        assert_int_equal(p->type, PERF_TYPE_RAW);
        assert_int_equal(p->kind, PERF_PMU_CORE);
        assert_string_equal(p->write_class, "core-pmu");
        assert_int_equal(p->topdown, 1);
        assert_int_equal(p->package, -1);
        assert_int_equal(p->cpu, -1);
        assert_int_equal(p->n_formats, 8);
        /* in name order, whatever order the directory lists them in */
        assert_string_equal(p->formats[0].name, "cmask");
        assert_int_equal(p->config_mask[0], 0xff8cffffULL);
        assert_true(p->config_mask[1] == UINT64_MAX);
        assert_int_equal(p->config_mask[2], 0);
        assert_int_equal(format(p, "frontend")->config_word, 1);
        assert_int_equal(format(p, "frontend")->mask, 0xffffff);
        assert_int_equal(format(p, "edge")->mask, 1 << 18);

        p = perf_catalog_find(c, "hardware");
        assert_non_null(p);
        assert_int_equal(p->type, PERF_TYPE_HARDWARE);
        assert_int_equal(p->kind, PERF_PMU_CORE);
        assert_string_equal(p->write_class, "core-pmu");
        assert_int_equal(p->n_formats, 0);
        assert_int_equal(p->config_mask[0], 0xff);

        p = perf_catalog_find(c, "software");
        assert_int_equal(p->type, PERF_TYPE_SOFTWARE);
        assert_int_equal(p->kind, PERF_PMU_SOFTWARE);
        assert_string_equal(p->write_class, "");

        p = perf_catalog_find(c, "uncore_imc_0");
        assert_int_equal(p->type, 14);
        assert_int_equal(p->kind, PERF_PMU_UNCORE);
        assert_string_equal(p->write_class, "uncore-imc");
        assert_int_equal(p->cpu, 0);
        assert_int_equal(p->package, 0);
        assert_int_equal(p->config_mask[0], 0xffff);
        p = perf_catalog_find(c, "uncore_imc_1");
        assert_int_equal(p->cpu, 2);
        assert_int_equal(p->package, 1);
        /* an uncore PMU no class of the shipped policy grants */
        assert_string_equal(perf_catalog_find(c, "uncore_upi_0")->write_class, "uncore");
        assert_null(perf_catalog_find(c, "tracepoint"));
        assert_null(perf_catalog_find(c, "power"));
        assert_null(perf_catalog_find_type(c, 2));
        perf_catalog_free(c);
}

/* As the kernel shows it: every entry of the bus a link into sys/devices. */
static void test_sapphire_rapids_links(void **state) {
        static const char *const names[] = { "software", "cpu", "hardware", "uncore_imc_1",
                                             "uncore_imc_free_running_0" };
        PerfCatalog *c;

        write_file("sys/devices/cpu/type", "4\n");
        write_file("sys/devices/cpu/format/event", "config:0-7\n");
        write_file("sys/devices/cpu/format/umask", "config:8-15\n");
        write_file("sys/devices/cpu/events/topdown-retiring", "event=0x00,umask=0x80\n");
        write_file("sys/devices/cpu/events/topdown-heavy-ops", "event=0x00,umask=0x84\n");
        write_file("sys/devices/uncore_imc_free_running_0/type", "20\n");
        write_file("sys/devices/uncore_imc_free_running_0/cpumask", "0\n");
        write_file("sys/devices/uncore_imc_free_running_0/format/event", "config:0-7\n");
        write_file("sys/devices/tracepoint/type", "2\n");
        make_link("../../../devices/cpu", DEVICES "/cpu");
        make_link("../../../devices/uncore_imc_free_running_0", DEVICES "/uncore_imc_free_running_0");
        make_link("../../../devices/tracepoint", DEVICES "/tracepoint");
        /* deeper, as a PMU with a parent device is linked */
        write_file("sys/devices/pci0000:00/0000:00:05.0/uncore_imc_1/type", "21\n");
        write_file("sys/devices/pci0000:00/0000:00:05.0/uncore_imc_1/cpumask", "2\n");
        write_file("sys/devices/pci0000:00/0000:00:05.0/uncore_imc_1/format/event", "config:0-7\n");
        make_link("../../../devices/pci0000:00/0000:00:05.0/uncore_imc_1", DEVICES "/uncore_imc_1");
        c = read_catalog();
        assert_names(c, names, ELEMENTSOF(names));
        assert_int_equal(perf_catalog_core(c)->topdown, 2);
        assert_string_equal(perf_catalog_find(c, "uncore_imc_free_running_0")->write_class, "uncore-imc");
        perf_catalog_free(c);
}

static void test_amd(void **state) {
        static const char *const names[] = { "software", "cpu", "hardware", "amd_df", "amd_l3" };
        PerfCatalog *c;
        const PerfPmu *p;

        pmu("cpu", "4\n", NULL);
        write_pmu_file("cpu", "format/event", "config:0-7,32-35\n");
        write_pmu_file("cpu", "format/umask", "config:8-15\n");
        pmu("amd_l3", "11\n", "0,2\n");
        write_pmu_file("amd_l3", "format/event", "config:0-7\n");
        write_pmu_file("amd_l3", "format/threadmask", "config:56-63\n");
        pmu("amd_df", "12\n", "2\n");
        write_pmu_file("amd_df", "format/event", "config:0-7,32-35,59-60\n");
        pmu("amd_iommu_0", "13\n", "0\n");
        c = read_catalog();
        assert_names(c, names, ELEMENTSOF(names));
        p = perf_catalog_core(c);
        assert_int_equal(p->topdown, 0);
        assert_int_equal(p->config_mask[0], 0xf0000ffffULL);
        p = perf_catalog_find(c, "amd_l3");
        assert_string_equal(p->write_class, "uncore-l3");
        assert_true(p->config_mask[0] == 0xff000000000000ffULL);
        p = perf_catalog_find(c, "amd_df");
        assert_string_equal(p->write_class, "uncore-df");
        assert_int_equal(p->package, 1);
        assert_int_equal(p->cpu, 2);
        perf_catalog_free(c);
}

/* Grace: the core PMU's type is dynamic; the first armv8_* is the core PMU, others stay out. */
static void test_arm(void **state) {
        static const char *const names[] = { "software", "armv8_pmuv3_0", "hardware" };
        PerfCatalog *c;
        const PerfPmu *p;

        pmu("armv8_pmuv3_0", "8\n", NULL);
        write_pmu_file("armv8_pmuv3_0", "format/event", "config:0-15\n");
        write_pmu_file("armv8_pmuv3_0", "format/long", "config1:0\n");
        write_pmu_file("armv8_pmuv3_0", "format/rdpmc", "config1:1\n");
        pmu("armv8_pmuv3_1", "9\n", NULL);
        write_pmu_file("armv8_pmuv3_1", "format/event", "config:0-15\n");
        pmu("nvidia_scf_pmu_0", "12\n", "0\n");
        c = read_catalog();
        assert_names(c, names, ELEMENTSOF(names));
        p = perf_catalog_core(c);
        assert_int_equal(p->type, 8);
        assert_string_equal(p->write_class, "core-pmu");
        assert_int_equal(p->config_mask[0], 0xffff);
        assert_int_equal(p->config_mask[1], 3);
        perf_catalog_free(c);
}

/* No sysfs at all: the kernel's software events alone, no "hardware" without a core PMU. */
static void test_no_sysfs(void **state) {
        static const char *const names[] = { "software" };
        PerfCatalog *c = read_catalog();

        assert_names(c, names, ELEMENTSOF(names));
        assert_null(perf_catalog_core(c));
        perf_catalog_free(c);
}

/* "cpu" with the tracepoint type: opening its "events" would open tracepoints. */
static void test_core_with_a_kernel_type(void **state) {
        static const char *const names[] = { "software", "uncore_imc_0" };
        PerfCatalog *c;

        pmu("cpu", "2\n", NULL);
        write_pmu_file("cpu", "format/event", "config:0-7\n");
        uncore("uncore_imc_0", "14\n", "0\n");
        c = read_catalog();
        assert_names(c, names, ELEMENTSOF(names));
        assert_null(perf_catalog_find(c, "hardware"));
        perf_catalog_free(c);
}

static void test_hostile(void **state) {
        static const char *const names[] = { "software", "cpu", "hardware", "uncore_imc_0" };
        char big[PERF_SYSFS_FILE_MAX + 16], outside[4096];
        PerfCatalog *c;

        intel_core("cpu");
        uncore("uncore_imc_0", "14\n", "0\n");
        /* a PMU directory that leads out of the root */
        (void) snprintf(outside, sizeof(outside), "%s/elsewhere/type", tmpdir);
        write_file("elsewhere/type", "17\n");
        write_file("elsewhere/cpumask", "0\n");
        make_link("../../../../elsewhere", DEVICES "/uncore_imc_1");
        make_link(outside, DEVICES "/uncore_imc_2");
        /* of the kernel's shape, but climbing out again, or through a link inside sys/devices */
        make_link("../../../devices/../../elsewhere", DEVICES "/uncore_imc_20");
        make_link("../../../devices/./x/../../../elsewhere", DEVICES "/uncore_imc_21");
        make_link("../../../../elsewhere", "sys/devices/hop");
        make_link("../../../devices/hop", DEVICES "/uncore_imc_22");
        write_file("sys/devices/real/uncore_imc_23/type", "31\n");
        write_file("sys/devices/real/uncore_imc_23/cpumask", "0\n");
        make_link("real", "sys/devices/alias");
        make_link("../../../devices/alias/uncore_imc_23", DEVICES "/uncore_imc_23");
        make_link("../../../devices/", DEVICES "/uncore_imc_24");
        make_link("../../../devices//elsewhere", DEVICES "/uncore_imc_25");
        /* a format file, a type and a cpumask that are links */
        uncore("uncore_imc_3", "18\n", "0\n");
        make_link("../../../../../../elsewhere/type", DEVICES "/uncore_imc_3/format/edge");
        write_pmu_file("uncore_imc_4", "format/event", "config:0-7\n");
        make_link("../../../../../elsewhere/type", DEVICES "/uncore_imc_4/type");
        write_pmu_file("uncore_imc_5", "type", "19\n");
        make_link("../../../../../elsewhere/cpumask", DEVICES "/uncore_imc_5/cpumask");
        /* huge files: a cpumask and a type */
        memset(big, '0', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        uncore("uncore_imc_6", "20\n", big);
        uncore("uncore_imc_7", big, "0\n");
        /* format text that does not parse, or names a word there is none of */
        uncore("uncore_imc_8", "21\n", "0\n");
        write_pmu_file("uncore_imc_8", "format/edge", "config:7-0\n");
        uncore("uncore_imc_9", "22\n", "0\n");
        write_pmu_file("uncore_imc_9", "format/edge", "config3:1\n");
        uncore("uncore_imc_10", "23\n", "0\n");
        write_pmu_file("uncore_imc_10", "format/Edge", "config:18\n");
        /* types that are no number, negative, past 32 bits, another's */
        uncore("uncore_imc_11", "0x18\n", "0\n");
        uncore("uncore_imc_12", "-24\n", "0\n");
        uncore("uncore_imc_13", "4294967296\n", "0\n");
        uncore("uncore_imc_14", "14\n", "0\n");
        /* cpumasks of an offline CPU, one past the machine, garbage */
        uncore("uncore_imc_15", "25\n", "3\n");
        uncore("uncore_imc_16", "26\n", "64\n");
        uncore("uncore_imc_17", "27\n", "zero\n");
        /* no cpumask: not an uncore PMU the daemon can place */
        uncore("uncore_imc_18", "28\n", NULL);
        /* a name of other characters */
        uncore("uncore_IMC_19", "29\n", "0\n");
        c = read_catalog();
        assert_names(c, names, ELEMENTSOF(names));
        perf_catalog_free(c);
}

static void test_too_many_formats(void **state) {
        static const char *const names[] = { "software", "cpu", "hardware" };
        PerfCatalog *c;

        intel_core("cpu");
        uncore("uncore_imc_0", "14\n", "0\n");
        for (unsigned i = 0; i < PERF_PMU_FORMATS_MAX; i++) {
                char rel[64];

                (void) snprintf(rel, sizeof(rel), "format/f%u", i);
                write_pmu_file("uncore_imc_0", rel, "config:40\n");
        }
        c = read_catalog();
        assert_names(c, names, ELEMENTSOF(names));
        perf_catalog_free(c);
}

/* A format field of a name too long to keep is left out, and so are its bits; the PMU stays. */
static void test_long_format_name(void **state) {
        PerfCatalog *c;
        const PerfPmu *p;

        uncore("uncore_cha_0", "14\n", "0\n");
        write_pmu_file("uncore_cha_0", "format/filter_state_long", "config1:0-9\n");
        write_pmu_file("uncore_cha_0", "format/filter_nid", "config1:10-15\n");
        c = read_catalog();
        p = perf_catalog_find(c, "uncore_cha_0");
        assert_non_null(p);
        assert_int_equal(p->n_formats, 3);
        assert_int_equal(p->config_mask[1], 0xfc00);
        perf_catalog_free(c);
}

/* This machine's own sysfs: whatever it has, the catalogue holds "software" and never one of
 * the kernel's own PMUs (tracepoint, breakpoint, kprobe, uprobe, msr). */
static void test_this_machine(void **state) {
        Machine *m = NULL;
        PerfCatalog *c = NULL;

        log_set_max_level(LOG_CRIT);
        if (machine_discover("/", &m) < 0) {
                log_set_max_level(LOG_WARNING);
                skip();
        }
        assert_int_equal(perf_catalog_read_sysfs("/", m, &c), 0);
        log_set_max_level(LOG_WARNING);
        assert_non_null(perf_catalog_find(c, "software"));
        for (size_t i = 0; i < c->n_pmus; i++) {
                const PerfPmu *p = &c->pmus[i];

                print_message("%s type %u kind %s\n", p->name, p->type, perf_pmu_kind_to_string(p->kind));
                assert_true(p->type != PERF_TYPE_TRACEPOINT && p->type != PERF_TYPE_BREAKPOINT);
                assert_true(strcmp(p->name, "tracepoint") != 0 && strcmp(p->name, "kprobe") != 0 &&
                            strcmp(p->name, "uprobe") != 0 && strcmp(p->name, "msr") != 0 &&
                            strcmp(p->name, "breakpoint") != 0);
                assert_true(p->kind != PERF_PMU_UNCORE || (p->cpu >= 0 && p->package >= 0));
        }
        perf_catalog_free(c);
        machine_free(m);
}

static void test_format_parse_mask(void **state) {
        unsigned word = 9, lo, hi;
        uint64_t mask = 42;

        assert_int_equal(perf_format_parse_mask("config:0-7", &word, &mask), 0);
        assert_int_equal(word, 0);
        assert_int_equal(mask, 0xff);
        assert_int_equal(perf_format_parse_mask("config1:0-63", &word, &mask), 0);
        assert_int_equal(word, 1);
        assert_true(mask == UINT64_MAX);
        assert_int_equal(perf_format_parse_mask("config2:5", &word, &mask), 0);
        assert_int_equal(word, 2);
        assert_int_equal(mask, 32);
        assert_int_equal(perf_format_parse_mask("config:0-7,32-35", &word, &mask), 0);
        assert_int_equal(mask, 0xf000000ffULL);
        assert_int_equal(perf_format_parse_mask("config:63", &word, &mask), 0);
        assert_true(mask == UINT64_C(1) << 63);

        word = 9;
        mask = 42;
        assert_int_equal(perf_format_parse_mask("config:7-0", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:64", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:0-64", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:063", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:0-7,4-9", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:8-9,0-7", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:0-7,", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config: 1", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config:+1", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config3:1", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("config10:1", &word, &mask), -EINVAL);
        assert_int_equal(perf_format_parse_mask("bp:1", &word, &mask), -EINVAL);
        assert_int_equal(word, 9);
        assert_int_equal(mask, 42);

        /* the older parser keeps its contract: config alone, one range */
        assert_int_equal(perf_format_parse("config1:0-7", &lo, &hi), -EOPNOTSUPP);
        assert_int_equal(perf_format_parse("config:0-7,32-35", &lo, &hi), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_icelake_sp, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_branches, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_sapphire_rapids_links, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_amd, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_arm, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_no_sysfs, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_core_with_a_kernel_type, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_hostile, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_too_many_formats, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_long_format_name, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test(test_this_machine),
                cmocka_unit_test(test_format_parse_mask),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

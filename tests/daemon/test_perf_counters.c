/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: discovery of the kernel's uncore memory-controller PMUs under a root directory,
 * with sysfs entries written as the kernel writes them, and as a broken or hostile one might;
 * their opening through an opener
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/machine.h"
#include "backend/perf-format.h"
#include "log.h"
#include "macro.h"
#include "tmpdir_fixture.h"

/* A type no kernel PMU has: discovery is tested without opening anything. */
#define NO_SUCH_TYPE "2147418113"

static void write_file(const char *rel, const char *text) {
        char path[4096];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        for (char *p = strchr(path + strlen(tmpdir) + 1, '/'); p; p = strchr(p + 1, '/')) {
                *p = '\0';
                (void) mkdir(path, 0755);
                *p = '/';
        }
        f = fopen(path, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static void add_pmu(const char *name, const char *type, const char *cpumask, const char *event,
                    const char *event_text) {
        char rel[512];

        (void) snprintf(rel, sizeof(rel), "sys/bus/event_source/devices/%s/type", name);
        write_file(rel, type);
        (void) snprintf(rel, sizeof(rel), "sys/bus/event_source/devices/%s/cpumask", name);
        write_file(rel, cpumask);
        (void) snprintf(rel, sizeof(rel), "sys/bus/event_source/devices/%s/format/event", name);
        write_file(rel, "config:0-7\n");
        (void) snprintf(rel, sizeof(rel), "sys/bus/event_source/devices/%s/format/umask", name);
        write_file(rel, "config:8-15\n");
        (void) snprintf(rel, sizeof(rel), "sys/bus/event_source/devices/%s/events/%s", name, event);
        write_file(rel, event_text);
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

static const MachineCounter *find(const Machine *m, const char *name, int32_t package) {
        for (uint32_t i = 0; i < m->n_counters; i++)
                if (strcmp(m->counters[i].name, name) == 0 && m->counters[i].package == package)
                        return &m->counters[i];
        return NULL;
}

static void test_discovery(void **state) {
        Machine *m = machine();
        const MachineCounter *c;

        /* the CAS events, as on Skylake-SP; the PMU counts on CPU 0 and 2, one per package */
        add_pmu("uncore_imc_10", NO_SUCH_TYPE, "0,2\n", "cas_count_read", "event=0x04,umask=0x03\n");
        add_pmu("uncore_imc_2", NO_SUCH_TYPE, "0,2\n", "cas_count_write", "event=0x04,umask=0x0c\n");
        write_file("sys/bus/event_source/devices/uncore_imc_2/events/cas_count_write.scale", "6.103515625e-5\n");
        write_file("sys/bus/event_source/devices/uncore_imc_2/events/cas_count_write.unit", "MiB\n");
        /* free-running, as on Ice Lake-SP */
        add_pmu("uncore_imc_free_running_0", NO_SUCH_TYPE, "2", "read", "event=0xff,umask=0x20");
        /* a value wider than its field, an unknown term, a cpumask naming an offline CPU only */
        add_pmu("uncore_imc_3", NO_SUCH_TYPE, "0", "cas_count_read", "event=0x104\n");
        add_pmu("uncore_imc_4", NO_SUCH_TYPE, "2", "cas_count_read", "event=0x04,edge=1\n");
        add_pmu("uncore_imc_5", NO_SUCH_TYPE, "3", "cas_count_read", "event=0x04\n");
        /* not a type, a scale that is no number, a unit with a space; and PMUs never opened */
        add_pmu("uncore_imc_6", "-1", "0", "cas_count_read", "event=0x04\n");
        add_pmu("uncore_imc_7", NO_SUCH_TYPE, "0", "cas_count_read", "event=0x04\n");
        write_file("sys/bus/event_source/devices/uncore_imc_7/events/cas_count_read.scale", "lots\n");
        write_file("sys/bus/event_source/devices/uncore_imc_7/events/cas_count_read.unit", "M B\n");
        add_pmu("uncore_cha_0", NO_SUCH_TYPE, "0", "cas_count_read", "event=0x04\n");
        add_pmu("uncore_imc_8", NO_SUCH_TYPE, "0", "dclk", "event=0xff\n");

        log_set_max_level(LOG_CRIT);
        assert_int_equal(machine_discover_counters(m, tmpdir), 0);
        log_set_max_level(LOG_WARNING);

        c = find(m, "uncore_imc_10/cas_count_read", 1);
        assert_non_null(c);
        assert_int_equal(c->cpu, 2);
        assert_int_equal(c->config, 0x0304);
        assert_int_equal(c->type, 2147418113U);
        assert_int_equal(c->width, 64);
        assert_string_equal(c->cls, "uncore-imc");
        /* found, not opened: the perf opener opens it (machine_open_counters()) */
        assert_int_equal(c->fd, -EBADF);
        assert_string_equal(c->error, "");
        c = find(m, "uncore_imc_2/cas_count_write", 0);
        assert_non_null(c);
        assert_int_equal(c->config, 0x0c04);
        assert_true(c->scale > 6.1e-5 && c->scale < 6.11e-5);
        assert_string_equal(c->unit, "MiB");
        c = find(m, "uncore_imc_free_running_0/read", 1);
        assert_non_null(c);
        assert_int_equal(c->config, 0x20ff);
        assert_null(find(m, "uncore_imc_free_running_0/read", 0));

        c = find(m, "uncore_imc_3/cas_count_read", 0);
        assert_non_null(c);
        assert_non_null(strstr(c->error, "cannot read its event"));
        c = find(m, "uncore_imc_4/cas_count_read", 1);
        assert_non_null(c);
        assert_non_null(strstr(c->error, "cannot read its event"));
        assert_null(find(m, "uncore_imc_5/cas_count_read", 1));
        assert_null(find(m, "uncore_imc_6/cas_count_read", 0));
        c = find(m, "uncore_imc_7/cas_count_read", 0);
        assert_non_null(c);
        assert_true(c->scale == 1.0);
        assert_string_equal(c->unit, "");
        assert_null(find(m, "uncore_cha_0/cas_count_read", 0));
        assert_null(find(m, "uncore_imc_8/dclk", 0));

        /* package-major, then by name in version order: imc_2 before imc_10 */
        for (uint32_t i = 1; i < m->n_counters; i++)
                assert_true(m->counters[i - 1].package <= m->counters[i].package);
        assert_string_equal(m->counters[0].name, "uncore_imc_2/cas_count_write");
        assert_int_equal(m->n_counters, 8);
        machine_free(m);
}

typedef struct OpenCalls {
        unsigned n;
        int cpus[8];
        struct perf_event_attr attrs[8];
} OpenCalls;

/* The opener's stand-in: the free-running read opens (an fd of /dev/null), the rest are
 * refused as a kernel without the PMU refuses them, CAS writes as a system-call filter would. */
static int fake_open(const struct perf_event_attr *attr, int cpu, void *userdata) {
        OpenCalls *calls = userdata;

        assert_true(calls->n < ELEMENTSOF(calls->attrs));
        calls->attrs[calls->n] = *attr;
        calls->cpus[calls->n++] = cpu;
        if (attr->config == 0x20ff)
                return open("/dev/null", O_RDONLY | O_CLOEXEC);
        return attr->config == 0x0c04 ? -EPERM : -ENOENT;
}

static void test_open_counters(void **state) {
        Machine *m = machine();
        OpenCalls calls = {};
        MachineCounter *c;

        add_pmu("uncore_imc_free_running_0", NO_SUCH_TYPE, "0,2", "read", "event=0xff,umask=0x20");
        add_pmu("uncore_imc_2", "30", "2", "cas_count_write", "event=0x04,umask=0x0c\n");
        add_pmu("uncore_imc_3", "31", "0", "cas_count_read", "event=0x104\n");
        log_set_max_level(LOG_CRIT);
        assert_int_equal(machine_discover_counters(m, tmpdir), 0);
        assert_int_equal(m->n_counters, 4);
        assert_int_equal(machine_open_counters(m, fake_open, &calls), 2);
        log_set_max_level(LOG_WARNING);

        /* every counter found is asked for once, on its PMU's CPU, but the broken sysfs entry */
        assert_int_equal(calls.n, 3);
        for (unsigned i = 0; i < calls.n; i++) {
                const struct perf_event_attr *a = &calls.attrs[i];

                /* CPU-wide counting, no exclude bit (the uncore PMUs refuse them), no group */
                assert_int_equal(a->size, sizeof(struct perf_event_attr));
                assert_false(a->exclude_kernel || a->exclude_hv || a->exclude_user || a->disabled ||
                             a->inherit || a->sample_period || a->read_format);
        }
        c = &m->counters[0];
        assert_string_equal(c->name, "uncore_imc_3/cas_count_read");
        assert_int_equal(c->fd, -EBADF);
        assert_non_null(strstr(c->error, "cannot read its event"));
        c = &m->counters[1];
        assert_string_equal(c->name, "uncore_imc_free_running_0/read");
        assert_int_equal(c->package, 0);
        assert_true(c->fd >= 0);
        assert_string_equal(c->error, "");
        c = &m->counters[2];
        assert_string_equal(c->name, "uncore_imc_2/cas_count_write");
        assert_int_equal(c->package, 1);
        assert_int_equal(c->fd, -EBADF);
        assert_non_null(strstr(c->error, "perf_event_open: Operation not permitted"));
        assert_non_null(strstr(c->error, "perf opener"));
        c = &m->counters[3];
        assert_string_equal(c->name, "uncore_imc_free_running_0/read");
        assert_int_equal(c->package, 1);
        assert_true(c->fd >= 0);
        assert_int_equal(calls.cpus[0] + calls.cpus[1] + calls.cpus[2], 0 + 2 + 2);

        /* open ones and refused ones are not asked for again */
        assert_int_equal(machine_open_counters(m, fake_open, &calls), 0);
        assert_int_equal(calls.n, 3);
        machine_free(m);
}

static void test_no_event_sources(void **state) {
        Machine *m = machine();

        log_set_max_level(LOG_CRIT);
        assert_int_equal(machine_discover_counters(m, tmpdir), 0);
        log_set_max_level(LOG_WARNING);
        assert_int_equal(m->n_counters, 0);
        machine_free(m);
}

/* The one reader of the kernel's text files that discovery uses, for CPU lists as for PMUs. */
static void test_read_text(void **state) {
        static const char with_nul[] = { '0', '-', '3', '\0', '9', '\n' };
        char buf[16], path[4096];
        FILE *f;

        write_file("a", "0-3 \t\n\n");
        assert_int_equal(machine_read_text(tmpdir, "a", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "0-3");
        write_file("b", "0123456789abcdef");
        assert_int_equal(machine_read_text(tmpdir, "b", buf, sizeof(buf)), -EFBIG);
        (void) snprintf(path, sizeof(path), "%s/c", tmpdir);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(with_nul, 1, sizeof(with_nul), f), sizeof(with_nul));
        assert_int_equal(fclose(f), 0);
        assert_int_equal(machine_read_text(tmpdir, "c", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(machine_read_text(tmpdir, "none", buf, sizeof(buf)), -ENOENT);
}

/* Format files of an uncore IMC PMU, by term. */
static int imc_format(const char *term, char *buf, size_t size, void *userdata) {
        const char *text = strcmp(term, "event") == 0 ? "config:0-7" :
                           strcmp(term, "umask") == 0 ? "config:8-15" :
                           strcmp(term, "edge") == 0  ? "config:18" :
                           strcmp(term, "wide") == 0  ? "config:0-63" :
                           strcmp(term, "other") == 0 ? "config1:0-7" : NULL;

        if (!text)
                return -ENOENT;
        (void) snprintf(buf, size, "%s", text);
        return 0;
}

static void test_format_parse(void **state) {
        static const struct {
                const char *text;
                int r;
                unsigned lo, hi;
        } rows[] = {
                {"config:0-7", 0, 0, 7},     {"config:63", 0, 63, 63},  {"config:0-63", 0, 0, 63},
                {"config:7-0", -EINVAL, 0, 0}, {"config:0-64", -EINVAL, 0, 0}, {"config:", -EINVAL, 0, 0},
                {"config:1-2x", -EINVAL, 0, 0}, {"config:-1", -EINVAL, 0, 0},
                {"config1:0-7", -EOPNOTSUPP, 0, 0},
        };
        uint64_t config = 42;

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                unsigned lo = 99, hi = 99;

                assert_int_equal(perf_format_parse(rows[i].text, &lo, &hi), rows[i].r);
                assert_int_equal(lo, rows[i].r == 0 ? rows[i].lo : 99);
                assert_int_equal(hi, rows[i].r == 0 ? rows[i].hi : 99);
        }

        assert_int_equal(perf_event_parse("event=0x04,umask=0x03", imc_format, NULL, &config), 0);
        assert_int_equal(config, 0x0304);
        assert_int_equal(perf_event_parse("edge=1", imc_format, NULL, &config), 0);
        assert_int_equal(config, UINT64_C(1) << 18);
        assert_int_equal(perf_event_parse("wide=0xffffffffffffffff", imc_format, NULL, &config), 0);
        assert_int_equal(config, UINT64_MAX);
        config = 42;
        assert_int_equal(perf_event_parse("event=0x100", imc_format, NULL, &config), -ERANGE);
        assert_int_equal(perf_event_parse("edge=2", imc_format, NULL, &config), -ERANGE);
        assert_int_equal(perf_event_parse("event=-1", imc_format, NULL, &config), -EINVAL);
        assert_int_equal(perf_event_parse("Event=1", imc_format, NULL, &config), -EINVAL);
        assert_int_equal(perf_event_parse("event", imc_format, NULL, &config), -EINVAL);
        assert_int_equal(perf_event_parse("other=1", imc_format, NULL, &config), -EOPNOTSUPP);
        assert_int_equal(perf_event_parse("nosuch=1", imc_format, NULL, &config), -ENOENT);
        assert_int_equal(config, 42);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_read_text, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_discovery, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_open_counters, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_no_event_sources, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test(test_format_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

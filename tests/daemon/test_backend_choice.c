/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the backend choice. Each reason of 'auto' in its order (lockdown file, the
 * simulator's lockdown, the msr driver absent, a write of PERFEVTSEL0 refused), msr and perf
 * asked for, none when perf cannot serve either, and lockdown files that are not the
 * kernel's: huge, without brackets, two bracketed words, a symbolic link, a FIFO.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend-choice.h"
#include "macro.h"
#include "tmpdir_fixture.h"

/* A backend whose MSR ops do what the test says, and count the writes. */
typedef struct FakeBackend {
        Backend base;
        int read_result;
        int write_result;
        unsigned writes;
        uint32_t written_reg;
        uint64_t written_value;
} FakeBackend;

#define PROBE_VALUE 0x43003cULL

static int fake_msr_read(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret_value) {
        FakeBackend *f = (FakeBackend *) b;

        (void) cpu;
        (void) reg;
        if (f->read_result < 0)
                return f->read_result;
        *ret_value = PROBE_VALUE;
        return 0;
}

static int fake_msr_write(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        FakeBackend *f = (FakeBackend *) b;

        (void) cpu;
        f->writes++;
        f->written_reg = reg;
        f->written_value = value;
        return f->write_result;
}

static const BackendVTable fake_vtable = {
        .name = "fake",
        .msr_read = fake_msr_read,
        .msr_write = fake_msr_write,
};

static const BackendProbe conf_probe = {
        .cpu = 0,
        .reg = BACKEND_PROBE_MSR_INTEL,
        .reg_name = "PERFEVTSEL0",
        .wanted_by = "pmugate.conf",
};

static FakeBackend fake(void) {
        return (FakeBackend) { .base = { .vtable = &fake_vtable } };
}

static void write_file(const char *path, const char *data, size_t size) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, size), (ssize_t) size);
        assert_int_equal(close(fd), 0);
}

static void write_lockdown(const char *text) {
        static const char *const dirs[] = { "sys", "sys/kernel", "sys/kernel/security" };
        char path[4096];

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, dirs[i]);
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
        }
        (void) snprintf(path, sizeof(path), "%s/sys/kernel/security/lockdown", tmpdir);
        write_file(path, text, strlen(text));
}

static void test_auto_msr_writes_work(void **state) {
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        write_lockdown("[none] integrity confidentiality\n");
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_MSR);
        assert_int_equal(c.wanted, BACKEND_WANTED_AUTO);
        assert_true(c.msr_reads);
        /* the probe wrote the register with the value it read, nothing else */
        assert_int_equal(f.writes, 1);
        assert_int_equal(f.written_reg, 0x186);
        assert_int_equal(f.written_value, PROBE_VALUE);
        assert_string_equal(c.reason, "a write of PERFEVTSEL0 with its own value works");
}

static void test_auto_no_lockdown_file(void **state) {
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_MSR);
}

static void test_auto_lockdown_file(void **state) {
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        write_lockdown("none [integrity] confidentiality\n");
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_string_equal(c.reason, "kernel lockdown: integrity");
        assert_true(c.msr_reads);
        /* lockdown is reason enough: nothing is written */
        assert_int_equal(f.writes, 0);

        write_lockdown("none integrity [confidentiality]\n");
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_string_equal(c.reason, "kernel lockdown: confidentiality");
}

static void test_auto_simulated_lockdown(void **state) {
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        /* a simulator's lockdown is its own; the file under root is not its kernel's */
        write_lockdown("[none] integrity confidentiality\n");
        f.base.simulated = true;
        f.base.lockdown = "integrity";
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_string_equal(c.reason, "kernel lockdown: integrity");

        f.base.lockdown = NULL;
        write_lockdown("none [integrity] confidentiality\n");
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_MSR);
}

static void test_auto_no_msr_driver(void **state) {
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        f.base.msr_absent = true;
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_string_equal(c.reason, "no msr driver (/dev/cpu/0/msr missing)");
        assert_false(c.msr_reads);
        assert_int_equal(f.writes, 0);
}

static void test_auto_write_refused(void **state) {
        static const int errors[] = { -EPERM, -EIO };
        static const char *const names[] = { "EPERM", "EIO" };
        BackendChoice c;
        char expected[256];

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(errors); i++) {
                FakeBackend f = fake();

                f.write_result = errors[i];
                assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
                assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
                assert_true(c.msr_reads);
                (void) snprintf(expected, sizeof(expected),
                                "a write of PERFEVTSEL0 with its own value was refused (%s): "
                                "msr.allow_writes=off or lockdown", names[i]);
                assert_string_equal(c.reason, expected);
        }
}

static void test_auto_amd_register(void **state) {
        BackendProbe probe = conf_probe;
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        probe.reg = BACKEND_PROBE_MSR_AMD;
        probe.reg_name = "PerfEvtSel0";
        probe.cpu = 2;
        assert_int_equal(backend_choose(tmpdir, &f.base, &probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(f.written_reg, 0xC0010200U);
        f.base.msr_absent = true;
        assert_int_equal(backend_choose(tmpdir, &f.base, &probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_string_equal(c.reason, "no msr driver (/dev/cpu/2/msr missing)");
}

static void test_auto_none(void **state) {
        BackendProbe probe = conf_probe;
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        probe.perf_unusable = "perf_event_open is not there";
        f.write_result = -EPERM;
        assert_int_equal(backend_choose(tmpdir, &f.base, &probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_NONE);
        assert_non_null(strstr(c.reason, "refused (EPERM)"));
        assert_non_null(strstr(c.reason, "perf_event_open is not there"));
}

static void test_wanted_perf(void **state) {
        BackendProbe probe = conf_probe;
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        assert_int_equal(backend_choose(tmpdir, &f.base, &probe, BACKEND_WANTED_PERF, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_int_equal(c.wanted, BACKEND_WANTED_PERF);
        assert_string_equal(c.reason, "chosen in pmugate.conf");
        assert_int_equal(f.writes, 0);

        probe.wanted_by = "--counters";
        assert_int_equal(backend_choose(tmpdir, NULL, &probe, BACKEND_WANTED_PERF, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_string_equal(c.reason, "--counters=perf");
        assert_false(c.msr_reads);
}

static void test_wanted_msr(void **state) {
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_MSR, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_MSR);
        assert_string_equal(c.reason, "chosen in pmugate.conf");

        /* asked for: msr it is, with a warning (1) and the reason */
        f.write_result = -EPERM;
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_MSR, &c), 1);
        assert_int_equal(c.counters, BACKEND_COUNTERS_MSR);
        assert_non_null(strstr(c.reason, "refused (EPERM)"));

        /* but not without the driver */
        f.base.msr_absent = true;
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_MSR, &c), -ENODEV);
        assert_string_equal(c.reason, "no msr driver (/dev/cpu/0/msr missing)");
}

/* ARM: no MSRs at all. Nothing is probed, even under lockdown; auto and perf take perf with the
 * reason, msr is refused with it, and perf unusable leaves none. */
static void test_no_msrs(void **state) {
        BackendProbe probe = conf_probe;
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        probe.no_msrs = "no MSRs on ARM";
        write_lockdown("none [integrity] confidentiality\n");
        assert_int_equal(backend_choose(tmpdir, &f.base, &probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_string_equal(c.reason, "no MSRs on ARM");
        assert_false(c.msr_reads);
        assert_int_equal(f.writes, 0);
        assert_int_equal(backend_choose(tmpdir, NULL, &probe, BACKEND_WANTED_PERF, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);
        assert_int_equal(c.wanted, BACKEND_WANTED_PERF);
        assert_int_equal(backend_choose(tmpdir, &f.base, &probe, BACKEND_WANTED_MSR, &c), -ENODEV);
        assert_string_equal(c.reason, "no MSRs on ARM");
        probe.perf_unusable = "perf_event_open is not there";
        assert_int_equal(backend_choose(tmpdir, &f.base, &probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_NONE);
        assert_string_equal(c.reason, "no MSRs on ARM; and perf: perf_event_open is not there");
        assert_int_equal(f.writes, 0);
}

static void test_lockdown_hostile_files(void **state) {
        char path[4096], word[PMUGATE_LOCKDOWN_WORD_MAX], huge[8192];
        FakeBackend f = fake();
        BackendChoice c;

        (void) state;
        (void) snprintf(path, sizeof(path), "%s/sys/kernel/security/lockdown", tmpdir);

        write_lockdown("none integrity confidentiality\n");
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);
        write_lockdown("[none] [integrity] confidentiality\n");
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);
        write_lockdown("none [integrity confidentiality\n");
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);
        write_lockdown("none [] confidentiality\n");
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);
        write_lockdown("none [INTEGRITY!] confidentiality\n");
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);
        write_lockdown("[aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n");
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);

        /* huge: only the first bytes are read, and the file is not the kernel's */
        memset(huge, 'a', sizeof(huge) - 1);
        huge[sizeof(huge) - 1] = '\0';
        memcpy(huge, "none [integrity] ", 17);
        write_lockdown(huge);
        assert_int_equal(backend_lockdown_read(path, word), -EFBIG);

        /* unknown is not "none", but not lockdown either: the write probe decides */
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(f.writes, 1);
        assert_int_equal(c.counters, BACKEND_COUNTERS_MSR);
        f.write_result = -EPERM;
        assert_int_equal(backend_choose(tmpdir, &f.base, &conf_probe, BACKEND_WANTED_AUTO, &c), 0);
        assert_int_equal(c.counters, BACKEND_COUNTERS_PERF);

        /* a symbolic link planted at the path is not followed */
        (void) snprintf(huge, sizeof(huge), "%s/elsewhere", tmpdir);
        write_file(huge, "none [integrity] confidentiality\n", 33);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink(huge, path), 0);
        assert_int_equal(backend_lockdown_read(path, word), -ELOOP);

        /* a FIFO does not block the start */
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);

        /* a NUL inside */
        assert_int_equal(unlink(path), 0);
        write_file(path, "none [integ\0rity]\n", 18);
        assert_int_equal(backend_lockdown_read(path, word), -EBADMSG);

        /* and the kernel's own format reads */
        assert_int_equal(unlink(path), 0);
        write_lockdown("none [integrity] confidentiality\n");
        assert_int_equal(backend_lockdown_read(path, word), 0);
        assert_string_equal(word, "integrity");
}

static void test_names(void **state) {
        (void) state;
        assert_string_equal(backend_counters_to_string(BACKEND_COUNTERS_MSR), "msr");
        assert_string_equal(backend_counters_to_string(BACKEND_COUNTERS_PERF), "perf");
        assert_string_equal(backend_counters_to_string(BACKEND_COUNTERS_NONE), "none");
        assert_int_equal(backend_wanted_from_string("auto"), BACKEND_WANTED_AUTO);
        assert_int_equal(backend_wanted_from_string("msr"), BACKEND_WANTED_MSR);
        assert_int_equal(backend_wanted_from_string("perf"), BACKEND_WANTED_PERF);
        assert_int_equal(backend_wanted_from_string("dev"), -EINVAL);
        assert_int_equal(backend_wanted_from_string(""), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_auto_msr_writes_work, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_auto_no_lockdown_file, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_auto_lockdown_file, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_auto_simulated_lockdown, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_auto_no_msr_driver, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_auto_write_refused, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_auto_amd_register, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_auto_none, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_wanted_perf, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_wanted_msr, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_no_msrs, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_lockdown_hostile_files, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test(test_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

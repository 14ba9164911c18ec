/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: job grants and their state file. Format and parse round trip, one table row per
 * planted line with whether it loads, headers of other boots, the grant limit, saving and
 * loading through a state directory, saves that fail (a grant is not made, a revoke still
 * ends the grant), a file that would be too large, and files that are not read at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/machine.h"
#include "macro.h"
#include "policy/grants.h"
#include "state-dir.h"
#include "tmpdir_fixture.h"

#define BOOT "6b1e8c7a-1f3d-4c55-9a0e-2b7d4e6f8a90"
#define OTHER_BOOT "0c0ffee0-0000-4000-8000-000000000000"
#define N_CPUS 8U
#define MISSING_CPU 5U          /* a hole in the CPU numbers */
#define HEAD "pmugate-grants 1 boot=" BOOT " crc="

static Machine *machine;

static int setup(void **state) {
        (void) state;
        machine = machine_new();
        assert_non_null(machine);
        machine->cpus = calloc(N_CPUS, sizeof(MachineCpu));
        assert_non_null(machine->cpus);
        machine->n_cpus = N_CPUS;
        for (uint32_t c = 0; c < N_CPUS; c++)
                machine->cpus[c] = (MachineCpu) { .present = c != MISSING_CPU, .online = c != MISSING_CPU };
        return 0;
}

static int teardown(void **state) {
        (void) state;
        machine = machine_free(machine);
        return 0;
}

static void add_record(char *buf, size_t size, const char *text) {
        size_t len = strlen(buf);

        assert_true(state_record_format(buf + len, size - len, "%s", text) > 0);
}

static void add_header(char *buf, size_t size, const char *boot) {
        char text[128];

        (void) snprintf(text, sizeof(text), "pmugate-grants 1 boot=%s", boot);
        buf[0] = '\0';
        add_record(buf, size, text);
}

static int parse(Grants *g, const char *text) {
        char reason[256];

        return grants_parse(g, text, strlen(text), BOOT, machine, reason, sizeof(reason));
}

static void assert_same_grants(const Grants *a, const Grants *b) {
        assert_int_equal(a->n, b->n);
        for (size_t i = 0; i < a->n; i++) {
                const Grant *x = &a->items[i], *y = grants_find(b, x->job);

                assert_non_null(y);
                assert_int_equal(x->uid, y->uid);
                assert_int_equal(x->has_cpus, y->has_cpus);
                assert_int_equal(x->lbr, y->lbr);
                assert_memory_equal(&x->cpus, &y->cpus, sizeof(CpuSet));
        }
}

static void test_round_trip(void **state) {
        static const uint32_t cpus_a[] = { 0, 1, 2, 6 }, cpus_c[] = { 7 };
        Grants g, back;
        _cleanup_free_ char *text = NULL, *again = NULL;
        size_t size, size_again;
        char reason[256];

        (void) state;
        grants_init(&g, NULL, 16);
        grants_init(&back, NULL, 16);
        assert_int_equal(grants_put(&g, "a", 1000, cpus_a, ELEMENTSOF(cpus_a)), 0);
        assert_int_equal(grants_put(&g, "b.x-y+z_1", 0, NULL, 0), 0);
        assert_int_equal(grants_put(&g, "c", 4294967294U, cpus_c, ELEMENTSOF(cpus_c)), 0);
        assert_int_equal(grants_put(&g, "a", 1001, cpus_a, 2), 1);
        assert_int_equal(grants_put_with_lbr(&g, "d", 1002, NULL, 0, true), 0);
        assert_true(grants_find(&g, "d")->lbr);
        assert_false(grants_find(&g, "a")->lbr);
        assert_int_equal(grants_format(&g, BOOT, &text, &size), 0);
        assert_int_equal(strlen(text), size);
        assert_int_equal(strncmp(text, HEAD, strlen(HEAD)), 0);
        assert_non_null(strstr(text, "grant a 1001 0-1 crc="));
        assert_non_null(strstr(text, "grant b.x-y+z_1 0 - crc="));
        assert_non_null(strstr(text, "grant d 1002 - lbr crc="));

        assert_int_equal(grants_parse(&back, text, size, BOOT, machine, reason, sizeof(reason)), 0);
        assert_same_grants(&g, &back);
        assert_int_equal(grants_format(&back, BOOT, &again, &size_again), 0);
        assert_int_equal(size_again, size);
        assert_memory_equal(again, text, size);
        grants_done(&g);
        grants_done(&back);
}

typedef struct Row {
        const char *text;
        bool sealed;
        bool loads;
} Row;

static const Row rows[] = {
        { "grant j 1000 -", true, true },
        { "grant j 1000 0-3", true, true },
        { "grant j 1000 0,2,7", true, true },
        { "grant J.o-b+_9 0 6-7", true, true },
        { "grant j 4294967294 -", true, true },
        { "grant j 1000 -", false, false },                      /* no checksum */
        { "grant j 4294967295 -", true, false },                 /* (uid_t) -1 */
        { "grant j 4294967296 -", true, false },
        { "grant j -1 -", true, false },
        { "grant j 01 -", true, false },
        { "grant j 1e3 -", true, false },
        { "grant a/b 1000 -", true, false },
        { "grant a;b 1000 -", true, false },
        { "grant j\x01 1000 -", true, false },
        { "grant j 1000 8", true, false },                       /* past the last CPU */
        { "grant j 1000 5", true, false },                       /* a CPU the machine does not have */
        { "grant j 1000 4-6", true, false },
        { "grant j 1000 0-", true, false },
        { "grant j 1000 3-1", true, false },
        { "grant j 1000 1a", true, false },
        { "grant j 1000 +1", true, false },
        { "grant j 1000 ", true, false },
        { "grant  j 1000 -", true, false },
        { "grant j 1000", true, false },
        { "grant j 1000 - -", true, false },
        { "grant j 1000 - lbr", true, true },
        { "grant j 1000 0-3 lbr", true, true },
        { "grant j 1000 - LBR", true, false },
        { "grant j 1000 - lbr lbr", true, false },
        { "grant j 1000 - lbrx", true, false },
        { "grant j 1000 - lb", true, false },
        { "grant j 1000 lbr", true, false },
        { "revoke j 1000 -", true, false },
        { "j 1000 -", true, false },
        { "", true, false },
};

static void test_planted_lines(void **state) {
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                Grants g;
                char text[1024], reason[256];
                size_t len;
                int r;

                grants_init(&g, NULL, 16);
                add_header(text, sizeof(text), BOOT);
                len = strlen(text);
                if (rows[i].sealed)
                        add_record(text, sizeof(text), rows[i].text);
                else
                        (void) snprintf(text + len, sizeof(text) - len, "%s\n", rows[i].text);
                r = grants_parse(&g, text, strlen(text), BOOT, machine, reason, sizeof(reason));
                if (r != (rows[i].loads ? 0 : 1) || g.n != (rows[i].loads ? 1U : 0U))
                        fail_msg("row %zu '%s': parse returned %d with %zu grants", i, rows[i].text, r, g.n);
                grants_done(&g);
        }
}

static void test_long_job(void **state) {
        char job[PMUGATE_STRING_MAX + 2], line[PMUGATE_STRING_MAX + 64], text[1024], reason[256];
        Grants g;

        (void) state;
        grants_init(&g, NULL, 16);
        memset(job, 'j', sizeof(job) - 1);
        job[PMUGATE_STRING_MAX] = '\0';
        (void) snprintf(line, sizeof(line), "grant %s 1 -", job);
        add_header(text, sizeof(text), BOOT);
        add_record(text, sizeof(text), line);
        assert_int_equal(grants_parse(&g, text, strlen(text), BOOT, machine, reason, sizeof(reason)), 0);
        assert_int_equal(g.n, 1);
        grants_done(&g);

        job[PMUGATE_STRING_MAX] = 'j';
        job[PMUGATE_STRING_MAX + 1] = '\0';
        (void) snprintf(line, sizeof(line), "grant %s 1 -", job);
        add_header(text, sizeof(text), BOOT);
        add_record(text, sizeof(text), line);
        assert_int_equal(grants_parse(&g, text, strlen(text), BOOT, machine, reason, sizeof(reason)), 1);
        assert_int_equal(g.n, 0);
        assert_int_equal(grants_put(&g, job, 1, NULL, 0), -EINVAL);
}

static void test_headers_and_limits(void **state) {
        static const char *const bad[] = {
                "pmugate-grants 2 boot=" BOOT,
                "pmugate-grants 1 boot=" OTHER_BOOT,
                "pmugate-grants 1",
                "pmugate-grants 1 boot=" BOOT " extra",
                "pmugate-journal 1 boot=" BOOT,
                "grant j 1 -",
        };
        char text[1024], reason[256];
        Grants g;

        (void) state;
        grants_init(&g, NULL, 2);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                text[0] = '\0';
                add_record(text, sizeof(text), bad[i]);
                add_record(text, sizeof(text), "grant j 1 -");
                assert_int_equal(parse(&g, text), -EBADMSG);
                assert_int_equal(g.n, 0);
        }
        text[0] = '\0';
        add_record(text, sizeof(text), "pmugate-grants 1 boot=" OTHER_BOOT);
        assert_int_equal(grants_parse(&g, text, strlen(text), BOOT, machine, reason, sizeof(reason)),
                         -EBADMSG);
        assert_non_null(strstr(reason, "booted"));
        assert_int_equal(grants_parse(&g, "", 0, BOOT, machine, reason, sizeof(reason)), -EBADMSG);
        add_header(text, sizeof(text), BOOT);
        text[strlen(text) - 2] ^= 1;
        assert_int_equal(parse(&g, text), -EBADMSG);

        /* At most max grants, and one per job. */
        add_header(text, sizeof(text), BOOT);
        add_record(text, sizeof(text), "grant a 1 -");
        add_record(text, sizeof(text), "grant a 2 -");
        add_record(text, sizeof(text), "grant b 3 -");
        add_record(text, sizeof(text), "grant c 4 -");
        assert_int_equal(grants_parse(&g, text, strlen(text), BOOT, machine, reason, sizeof(reason)), 2);
        assert_int_equal(g.n, 2);
        assert_int_equal(grants_find(&g, "a")->uid, 1);
        assert_non_null(grants_find(&g, "b"));
        assert_null(grants_find(&g, "c"));
        grants_done(&g);

        grants_init(&g, NULL, 1);
        assert_int_equal(grants_put(&g, "a b", 1, NULL, 0), -EINVAL);
        assert_int_equal(grants_put(&g, "a", (uid_t) -1, NULL, 0), -EINVAL);
        assert_int_equal(grants_put(&g, "a", 1, (const uint32_t[]) { PMUGATE_CPUS_MAX }, 1), -EINVAL);
        assert_int_equal(grants_put(&g, "a", 1, NULL, 0), 0);
        assert_int_equal(grants_put(&g, "b", 1, NULL, 0), -ENOSPC);
        assert_int_equal(g.n, 1);
        grants_done(&g);
}

static StateDir open_state(const char *path) {
        StateDir d = { .boot_id = BOOT };

        d.fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(d.fd >= 0);
        return d;
}

static bool exists(const char *name) {
        char path[PATH_MAX];

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        return access(path, F_OK) == 0;
}

static void test_save_and_load(void **state) {
        static const uint32_t cpus[] = { 1, 2, 3 };
        StateDir d = open_state(tmpdir);
        Grant removed = {};
        Grants g, back;

        (void) state;
        grants_init(&g, &d, 16);
        grants_init(&back, &d, 16);
        assert_int_equal(grants_load(&back, machine), 0);       /* no file yet */
        assert_int_equal(back.n, 0);
        assert_int_equal(grants_put(&g, "10", 1000, cpus, ELEMENTSOF(cpus)), 0);
        assert_int_equal(grants_put(&g, "11", 1001, NULL, 0), 0);
        assert_int_equal(grants_put(&g, "12", 1002, NULL, 0), 0);
        assert_int_equal(grants_remove(&g, "11", &removed), 0);
        assert_string_equal(removed.job, "11");
        assert_int_equal(grants_remove(&g, "11", NULL), -ENOENT);
        assert_false(exists("grants.tmp"));

        assert_int_equal(grants_load(&back, machine), 0);
        assert_same_grants(&g, &back);
        grants_done(&back);

        /* Another boot's file loads nothing. */
        {
                StateDir later = d;

                memcpy(later.boot_id, OTHER_BOOT, sizeof(later.boot_id));
                grants_init(&back, &later, 16);
                assert_int_equal(grants_load(&back, machine), 0);
                assert_int_equal(back.n, 0);
        }
        grants_done(&g);
        close(d.fd);
}

static void test_failed_saves(void **state) {
        StateDir d = open_state(tmpdir);
        char gone[PATH_MAX];
        int good_fd = d.fd, dead_fd;
        Grant removed = {};
        Grants g, back;

        (void) state;
        /* A directory nothing can be created in any more: open, then removed. */
        (void) snprintf(gone, sizeof(gone), "%s/gone", tmpdir);
        assert_int_equal(mkdir(gone, 0700), 0);
        dead_fd = open(gone, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dead_fd >= 0);
        assert_int_equal(rmdir(gone), 0);

        grants_init(&g, &d, 16);
        assert_int_equal(grants_put(&g, "kept", 1000, NULL, 0), 0);
        assert_int_equal(grants_put(&g, "revoked", 1001, NULL, 0), 0);

        d.fd = dead_fd;
        /* Not on disk, so not made: memory stays as the file has it. */
        assert_int_equal(grants_put(&g, "new", 1002, NULL, 0), -EIO);
        assert_null(grants_find(&g, "new"));
        assert_int_equal(grants_put(&g, "kept", 2000, NULL, 0), -EIO);
        assert_int_equal(grants_find(&g, "kept")->uid, 1000);
        assert_int_equal(g.n, 2);
        /* A revoke fails closed: gone from memory, the error says the file still has it. */
        assert_int_equal(grants_remove(&g, "revoked", &removed), -EIO);
        assert_string_equal(removed.job, "revoked");
        assert_null(grants_find(&g, "revoked"));
        assert_true(g.unsaved);

        grants_init(&back, &(StateDir) { .fd = good_fd, .boot_id = BOOT }, 16);
        assert_int_equal(grants_load(&back, machine), 0);
        assert_non_null(grants_find(&back, "revoked"));
        grants_done(&back);

        /* Once the directory works again, revoking again puts the file right. */
        d.fd = good_fd;
        assert_int_equal(grants_remove(&g, "revoked", NULL), -ENOENT);
        assert_false(g.unsaved);
        assert_int_equal(grants_load(&back, machine), 0);
        assert_null(grants_find(&back, "revoked"));
        assert_non_null(grants_find(&back, "kept"));
        grants_done(&back);
        grants_done(&g);
        close(dead_fd);
        close(good_fd);
}

static void test_too_large(void **state) {
        StateDir d = open_state(tmpdir);
        _cleanup_free_ char *text = NULL;
        size_t size = 0, n = 0;
        Grants g;

        (void) state;
        /* Every other CPU of the largest machine: the longest CPU list there is. */
        grants_init(&g, &d, PMUGATE_GRANTS_MAX);
        g.items = calloc(PMUGATE_GRANTS_MAX, sizeof(Grant));
        assert_non_null(g.items);
        while (n * (CPUSET_FORMAT_MAX / 2) < PMUGATE_GRANTS_FILE_SIZE_MAX) {
                Grant *gr = &g.items[n];

                (void) snprintf(gr->job, sizeof(gr->job), "job%zu", n);
                gr->uid = 1000;
                gr->has_cpus = true;
                for (uint32_t c = 0; c < PMUGATE_CPUS_MAX; c += 2)
                        cpuset_add(&gr->cpus, c);
                n++;
        }
        g.n = n;
        assert_int_equal(grants_format(&g, BOOT, &text, &size), -EFBIG);
        assert_null(text);
        assert_int_equal(grants_put(&g, "one-more", 1, NULL, 0), -EFBIG);
        assert_int_equal(g.n, n);
        assert_false(exists("grants"));
        grants_done(&g);
        close(d.fd);
}

static void test_unfit_files(void **state) {
        char path[PATH_MAX], outside[PATH_MAX], text[512];
        StateDir d = open_state(tmpdir);
        Grants g;
        FILE *f;

        (void) state;
        add_header(text, sizeof(text), BOOT);
        add_record(text, sizeof(text), "grant planted 1000 -");
        (void) snprintf(outside, sizeof(outside), "%s/outside", tmpdir);
        f = fopen(outside, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        (void) snprintf(path, sizeof(path), "%s/grants", tmpdir);
        grants_init(&g, &d, 16);

        assert_int_equal(symlink(outside, path), 0);
        assert_int_equal(grants_load(&g, machine), 0);
        assert_int_equal(g.n, 0);
        assert_int_equal(unlink(path), 0);

        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(grants_load(&g, machine), 0);  /* does not block */
        assert_int_equal(g.n, 0);
        assert_int_equal(unlink(path), 0);

        assert_int_equal(link(outside, path), 0);
        assert_int_equal(grants_load(&g, machine), 0);
        assert_int_equal(g.n, 0);
        assert_int_equal(unlink(path), 0);

        assert_int_equal(rename(outside, path), 0);
        assert_int_equal(chown(path, 4242, 4242), 0);
        assert_int_equal(grants_load(&g, machine), 0);
        assert_int_equal(g.n, 0);

        assert_int_equal(chown(path, geteuid(), getegid()), 0);
        assert_int_equal(grants_load(&g, machine), 0);
        assert_int_equal(g.n, 1);
        grants_done(&g);
        close(d.fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_planted_lines),
                cmocka_unit_test(test_long_job),
                cmocka_unit_test(test_headers_and_limits),
                cmocka_unit_test_setup_teardown(test_save_and_load, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_failed_saves, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_too_large, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_unfit_files, tmpdir_setup, tmpdir_teardown),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

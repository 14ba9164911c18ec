/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: pmugate.conf parsing, including refusal of bad files with their line
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static char *write_file(const char *text) {
        char *path = strdup("/tmp/pmugate-test-config-XXXXXX");
        int fd = mkstemp(path);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        return path;
}

static void test_defaults_when_missing(void **state) {
        Config c;
        char reason[256] = "";

        (void) state;
        assert_int_equal(config_load("/nonexistent/pmugate.conf", true, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.n_admin_gids, 0);
        assert_true(c.clients_max > 0);
        assert_int_equal(config_load("/nonexistent/pmugate.conf", false, &c, reason, sizeof(reason)), -ENOENT);
}

static void test_groups_and_limits(void **state) {
        char *path = write_file("# comment\n[access]\nadmin_groups = 0 4240\nuser_groups = 4241\n[limits]\nclients = 8\nclients_per_uid = 2\nleases_per_uid = 3\n");
        char reason[256] = "";
        Config c;

        (void) state;
        assert_int_equal(config_load(path, false, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.n_admin_gids, 2);
        assert_int_equal(c.admin_gids[1], 4240);
        assert_int_equal(c.n_user_gids, 1);
        assert_int_equal(c.clients_max, 8);
        assert_int_equal(c.clients_per_uid_max, 2);
        assert_int_equal(c.leases_per_uid_max, 3);
        unlink(path);
        free(path);
}

static void test_bad_files_name_their_line(void **state) {
        static const struct {
                const char *text;
                const char *line;
        } cases[] = {
                { "[access]\nadmin_groups = 0\nfrobnicate = 1\n", ":3:" },
                { "[limits]\nclients = many\n", ":2:" },
                { "[limits]\nclients = 0\n", ":2:" },
                { "[limits]\n\nclients_per_uid = 100000\n", ":3:" },
                { "[nonsense]\nkey = 1\n", ":2:" },
                { "[access\n", ":1:" },
                { "[access]\nmode = closed\n", ":2:" },
                { "[rights]\nuser_write = Core\n", ":2:" },
                { "[rights]\npackage_read_shared = maybe\n", ":2:" },
        };
        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *path = write_file(cases[i].text);
                char reason[256] = "";
                Config c;

                assert_int_equal(config_load(path, false, &c, reason, sizeof(reason)), -EINVAL);
                assert_non_null(strstr(reason, cases[i].line));
                unlink(path);
                free(path);
        }
}

/* The shipped default and every example policy must load: a typo there would keep a fresh
 * install from starting. */
static void test_shipped_files_load(void **state) {
        static const char *const files[] = {
                "pmugate.conf", "examples/cluster-jobs.conf", "examples/read-only.conf",
                "examples/workstation-open.conf",
        };
        const char *dir = getenv("PMUGATE_POLICY_DIR");

        (void) state;
        assert_non_null(dir);
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                char path[1024], reason[256] = "";
                Config c;

                snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
                if (config_load(path, false, &c, reason, sizeof(reason)) != 0)
                        fail_msg("%s: %s", files[i], reason);
        }
}

static void test_modes_and_classes(void **state) {
        char *path = write_file("[access]\nmode = job\nmonitor_users = 0 77\n[rights]\nuser_write = none\n"
                                "monitor_read = rapl, core-pmu\npackage_read_shared = yes\n");
        char reason[256] = "";
        Config c;

        (void) state;
        assert_int_equal(config_load(path, false, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.mode, ACCESS_MODE_JOB);
        assert_int_equal(c.n_monitor_uids, 2);
        assert_false(class_set_contains(&c.user_write, "core-pmu"));
        assert_true(class_set_contains(&c.user_read, "anything"));
        assert_true(class_set_contains(&c.monitor_read, "rapl"));
        assert_false(class_set_contains(&c.monitor_read, "uncore-imc"));
        assert_true(c.package_read_shared);
        unlink(path);
        free(path);
}

static void test_unknown_user_group_means_nobody(void **state) {
        char *path = write_file("[access]\nuser_groups = no-such-group-pmugate-test\n");
        char *empty = write_file("[access]\nuser_groups =\n");
        char reason[256] = "";
        Config c;

        (void) state;
        assert_int_equal(config_load(path, false, &c, reason, sizeof(reason)), 0);
        assert_true(c.user_groups_set);
        assert_int_equal(c.n_user_gids, 0);
        assert_int_equal(config_load(empty, false, &c, reason, sizeof(reason)), 0);
        assert_false(c.user_groups_set);
        unlink(path);
        unlink(empty);
        free(path);
        free(empty);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults_when_missing),
                cmocka_unit_test(test_groups_and_limits),
                cmocka_unit_test(test_bad_files_name_their_line),
                cmocka_unit_test(test_shipped_files_load),
                cmocka_unit_test(test_modes_and_classes),
                cmocka_unit_test(test_unknown_user_group_means_nobody),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

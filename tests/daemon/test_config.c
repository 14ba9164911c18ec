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
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "policy/config.h"
#include "policy/policy.h"

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
        Rights rights;
        Peer stranger = { .uid = 4242, .gid = 4242, .pidfd = -EBADF, .cgroup_fd = -EBADF };
        char reason[256] = "";

        (void) state;
        assert_int_equal(config_load("/nonexistent/pmugate.conf", true, CONFIG_ANY_OWNER, &c, reason,
                                     sizeof(reason)), 1);
        assert_true(c.clients_max > 0);
        /* Secure by default: users are pmugate-users' members, never everybody. */
        assert_true(c.user_groups_set);
        assert_string_equal(c.user_groups, "pmugate-users");
        assert_string_equal(c.admin_groups, "pmugate-admin");
        /* A uid in neither group (whether or not they exist on this host) has no role. */
        for (size_t i = 0; i < c.n_user_gids; i++)
                assert_int_not_equal(c.user_gids[i], stranger.gid);
        for (size_t i = 0; i < c.n_admin_gids; i++)
                assert_int_not_equal(c.admin_gids[i], stranger.gid);
        policy_rights(&c, &stranger, &rights);
        assert_int_equal(rights.role, ROLE_NONE);
        assert_false(rights.may_read || rights.may_write);
        assert_int_equal(config_load("/nonexistent/pmugate.conf", false, CONFIG_ANY_OWNER, &c, reason,
                                     sizeof(reason)), -ENOENT);
}

static void assert_class_sets_equal(const ClassSet *a, const ClassSet *b) {
        assert_int_equal(a->all, b->all);
        assert_int_equal(a->n, b->n);
        for (size_t i = 0; i < a->n; i++)
                assert_string_equal(a->classes[i], b->classes[i]);
}

/* The built-in defaults and the shipped file say the same, so a node without the file behaves
 * as one with it: the two cannot drift apart unnoticed. */
static void test_defaults_are_the_shipped_file(void **state) {
        const char *dir = getenv("PMUGATE_POLICY_DIR");
        char path[1024], reason[256] = "";
        Config shipped, defaults;

        (void) state;
        assert_non_null(dir);
        (void) snprintf(path, sizeof(path), "%s/pmugate.conf", dir);
        assert_int_equal(config_load(path, false, CONFIG_ANY_OWNER, &shipped, reason, sizeof(reason)), 0);
        config_init_defaults(&defaults);

        assert_int_equal(shipped.mode, defaults.mode);
        assert_string_equal(shipped.admin_groups, defaults.admin_groups);
        assert_int_equal(shipped.n_admin_gids, defaults.n_admin_gids);
        assert_memory_equal(shipped.admin_gids, defaults.admin_gids, sizeof(gid_t) * shipped.n_admin_gids);
        assert_string_equal(shipped.user_groups, defaults.user_groups);
        assert_int_equal(shipped.user_groups_set, defaults.user_groups_set);
        assert_int_equal(shipped.n_user_gids, defaults.n_user_gids);
        assert_memory_equal(shipped.user_gids, defaults.user_gids, sizeof(gid_t) * shipped.n_user_gids);
        assert_int_equal(shipped.n_monitor_uids, defaults.n_monitor_uids);
        assert_memory_equal(shipped.monitor_uids, defaults.monitor_uids,
                            sizeof(shipped.monitor_uids[0]) * shipped.n_monitor_uids);
        assert_int_equal(shipped.n_monitor_gids, defaults.n_monitor_gids);
        assert_class_sets_equal(&shipped.user_read, &defaults.user_read);
        assert_class_sets_equal(&shipped.user_write, &defaults.user_write);
        assert_class_sets_equal(&shipped.monitor_read, &defaults.monitor_read);
        assert_class_sets_equal(&shipped.monitor_write, &defaults.monitor_write);
        assert_int_equal(shipped.package_read_shared, defaults.package_read_shared);
        assert_int_equal(shipped.energy_read_shared, defaults.energy_read_shared);
        assert_false(defaults.energy_read_shared);
        assert_int_equal(shipped.jobmap_uids, defaults.jobmap_uids);
        assert_int_equal(shipped.n_lbr_gids, 0);
        assert_int_equal(defaults.n_lbr_gids, 0);
        assert_int_equal(shipped.clients_max, defaults.clients_max);
        assert_int_equal(shipped.clients_per_uid_max, defaults.clients_per_uid_max);
        assert_int_equal(shipped.grants_max, defaults.grants_max);
        assert_int_equal(shipped.leases_per_uid_max, defaults.leases_per_uid_max);
}

/* The class lbr: members of lbr_groups among users, and admins; never a monitor, never a user
 * outside the groups, nobody at all by default. */
static void test_lbr_groups(void **state) {
        char *path = write_file("[access]\nadmin_groups = 4240\nuser_groups = 4241\nmonitor_users = 4300\n"
                                "[rights]\nlbr_groups = 4250, 4251\n");
        char reason[256] = "";
        Config c, none;
        Rights r;
        Peer user = { .uid = 4242, .gid = 4241, .groups = { 4251 }, .n_groups = 1 };
        Peer plain = { .uid = 4243, .gid = 4241 };
        Peer admin = { .uid = 4244, .gid = 4240 };
        Peer monitor = { .uid = 4300, .gid = 4250 };

        (void) state;
        assert_int_equal(config_load(path, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.n_lbr_gids, 2);
        assert_int_equal(c.lbr_gids[0], 4250);
        assert_int_equal(c.lbr_gids[1], 4251);
        assert_string_equal(c.lbr_groups, "4250, 4251");
        policy_rights(&c, &user, &r);
        assert_true(r.may_lbr);
        policy_rights(&c, &plain, &r);
        assert_int_equal(r.role, ROLE_USER);
        assert_false(r.may_lbr);
        policy_rights(&c, &admin, &r);
        assert_true(r.may_lbr);
        policy_rights(&c, &monitor, &r);
        assert_int_equal(r.role, ROLE_MONITOR);
        assert_false(r.may_lbr);
        config_init_defaults(&none);
        policy_rights(&none, &user, &r);
        assert_false(r.may_lbr);
        unlink(path);
        free(path);
}

/* A file that leaves the groups out gets the default groups, not everybody; only an empty
 * value written out means everybody. */
static void test_left_out_groups_are_the_defaults(void **state) {
        char *partial = write_file("[access]\nmode = job\n");
        char *everybody = write_file("[access]\nuser_groups =\nadmin_groups = 4240\n");
        char reason[256] = "";
        Config c;

        (void) state;
        assert_int_equal(config_load(partial, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.mode, ACCESS_MODE_JOB);
        assert_true(c.user_groups_set);
        assert_string_equal(c.user_groups, "pmugate-users");
        assert_string_equal(c.admin_groups, "pmugate-admin");
        assert_int_equal(config_load(everybody, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_false(c.user_groups_set);
        assert_int_equal(c.n_admin_gids, 1);
        assert_int_equal(c.admin_gids[0], 4240);
        unlink(partial);
        unlink(everybody);
        free(partial);
        free(everybody);
}

static void test_groups_and_limits(void **state) {
        char *path = write_file("# comment\n[access]\nadmin_groups = 0 4240\nuser_groups = 4241\n[limits]\nclients = 8\nclients_per_uid = 2\nleases_per_uid = 3\n");
        char reason[256] = "";
        Config c;

        (void) state;
        assert_int_equal(config_load(path, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.n_admin_gids, 2);
        assert_int_equal(c.admin_gids[1], 4240);
        assert_int_equal(c.n_user_gids, 1);
        assert_int_equal(c.clients_max, 8);
        assert_int_equal(c.clients_per_uid_max, 2);
        assert_int_equal(c.leases_per_uid_max, 3);
        unlink(path);
        free(path);
}

static void test_counters(void **state) {
        char *path = write_file("[counters]\nbackend = perf\nuser_count_kernel = yes\n");
        char reason[256] = "";
        Config c;

        (void) state;
        config_init_defaults(&c);
        assert_int_equal(c.counters_backend, BACKEND_WANTED_AUTO);
        assert_false(c.user_count_kernel);
        assert_int_equal(config_load(path, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.counters_backend, BACKEND_WANTED_PERF);
        assert_true(c.user_count_kernel);
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
                { "[rights]\njobmap_uids = sometimes\n", ":2:" },
                { "[rights]\n\nenergy_read_shared = all\n", ":3:" },
                { "[counters]\nbackend = dev\n", ":2:" },
                { "[counters]\nbackend = auto\n\nbackend = MSR\n", ":4:" },
                { "[counters]\nuser_count_kernel = sometimes\n", ":2:" },
                { "[counters]\nlockdown = none\n", ":2:" },
        };
        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *path = write_file(cases[i].text);
                char reason[256] = "";
                Config c;

                assert_int_equal(config_load(path, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)),
                                 -EINVAL);
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
                if (config_load(path, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)) != 0)
                        fail_msg("%s: %s", files[i], reason);
        }
}

static void test_modes_and_classes(void **state) {
        char *path = write_file("[access]\nmode = job\nmonitor_users = 0 77\n[rights]\nuser_write = none\n"
                                "monitor_read = rapl, core-pmu\npackage_read_shared = yes\n"
                                "jobmap_uids = yes\nenergy_read_shared = yes\n");
        char reason[256] = "";
        Config c;

        (void) state;
        assert_int_equal(config_load(path, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.mode, ACCESS_MODE_JOB);
        assert_int_equal(c.n_monitor_uids, 2);
        assert_false(class_set_contains(&c.user_write, "core-pmu"));
        assert_true(class_set_contains(&c.user_read, "anything"));
        assert_true(class_set_contains(&c.monitor_read, "rapl"));
        assert_false(class_set_contains(&c.monitor_read, "uncore-imc"));
        assert_true(c.package_read_shared);
        assert_true(c.jobmap_uids);
        assert_true(c.energy_read_shared);
        unlink(path);
        free(path);
}

static void test_unknown_user_group_means_nobody(void **state) {
        char *path = write_file("[access]\nuser_groups = no-such-group-pmugate-test\n");
        char *empty = write_file("[access]\nuser_groups =\n");
        char reason[256] = "";
        Config c;

        (void) state;
        assert_int_equal(config_load(path, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_true(c.user_groups_set);
        assert_int_equal(c.n_user_gids, 0);
        assert_int_equal(config_load(empty, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_false(c.user_groups_set);
        unlink(path);
        unlink(empty);
        free(path);
        free(empty);
}

/* The shipped policy authorizes the shipped exporter by its user's name; where that user does
 * not exist (the exporter not installed) it admits nobody and the file still loads. root
 * stands in for a user that exists: its name resolves to its uid. */
static void test_shipped_monitor_user(void **state) {
        const char *dir = getenv("PMUGATE_POLICY_DIR");
        char shipped_path[1024], line[256], reason[256] = "";
        _cleanup_fclose_ FILE *shipped = NULL;
        char *missing = write_file("[access]\nmonitor_users = no-such-user-pmugate-test\n");
        char *existing = write_file("[access]\nmonitor_users = root\n");
        char *none = write_file("[access]\nmonitor_users =\n");
        bool named = false;
        Config c;

        (void) state;
        assert_non_null(dir);
        (void) snprintf(shipped_path, sizeof(shipped_path), "%s/pmugate.conf", dir);
        shipped = fopen(shipped_path, "re");
        assert_non_null(shipped);
        while (fgets(line, sizeof(line), shipped))
                named = named || strcmp(line, "monitor_users = " CONFIG_DEFAULT_MONITOR_USERS "\n") == 0;
        assert_true(named);

        assert_int_equal(config_load(missing, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.n_monitor_uids, 0);
        assert_int_equal(config_load(existing, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.n_monitor_uids, 1);
        assert_int_equal(c.monitor_uids[0], 0);
        assert_int_equal(config_load(none, false, CONFIG_ANY_OWNER, &c, reason, sizeof(reason)), 0);
        assert_int_equal(c.n_monitor_uids, 0);
        unlink(missing);
        unlink(existing);
        unlink(none);
        free(missing);
        free(existing);
        free(none);
}

/* The file decides who may do what: one anyone else may change is refused, whatever it says,
 * at start-up and at reload alike. */
static void test_file_must_be_roots(void **state) {
        static const struct {
                mode_t mode;
                uid_t file_owner;
                uid_t daemon_owner;     /* the uid that started the daemon */
                int expected;
                const char *says;
        } rows[] = {
                { 0644, 0, 0, 0, NULL },
                { 0600, 0, 0, 0, NULL },
                { 0664, 0, 0, -EPERM, "writable by its group" },
                { 0646, 0, 0, -EPERM, "writable by everybody" },
                { 0666, 0, 0, -EPERM, "writable by everybody" },
                { 0644, 4242, 0, -EPERM, "belongs to uid 4242" },
                /* A daemon started by a user for development may read that user's file. */
                { 0644, 4242, 4242, 0, NULL },
                { 0644, 4243, 4242, -EPERM, "belongs to uid 4243" },
                /* root's file stays good for a daemon that dropped to its own user (reload). */
                { 0644, 0, 4242, 0, NULL },
        };
        char reason[400];
        Config c;

        (void) state;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                _cleanup_free_ char *path = write_file("[access]\nmode = job\n");
                int r;

                assert_int_equal(chown(path, rows[i].file_owner, 0), 0);
                assert_int_equal(chmod(path, rows[i].mode), 0);
                reason[0] = '\0';
                r = config_load(path, false, rows[i].daemon_owner, &c, reason, sizeof(reason));
                if (r != rows[i].expected || (rows[i].says && !strstr(reason, rows[i].says)))
                        fail_msg("row %zu: got %d (%s), expected %d saying '%s'", i, r, reason, rows[i].expected,
                                 rows[i].says ?: "");
                if (r == 0)
                        assert_int_equal(c.mode, ACCESS_MODE_JOB);
                (void) unlink(path);
        }

        /* Not a file: a directory, and a FIFO, which must not block the start either. */
        assert_int_equal(config_load("/tmp", false, 0, &c, reason, sizeof(reason)), -EPERM);
        assert_non_null(strstr(reason, "not a regular file"));
        {
                char fifo[] = "/tmp/pmugate-test-config-fifo-XXXXXX";
                int fd = mkstemp(fifo);

                assert_true(fd >= 0);
                close(fd);
                assert_int_equal(unlink(fifo), 0);
                assert_int_equal(mkfifo(fifo, 0644), 0);
                assert_int_equal(config_load(fifo, false, 0, &c, reason, sizeof(reason)), -EPERM);
                (void) unlink(fifo);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults_when_missing),
                cmocka_unit_test(test_defaults_are_the_shipped_file),
                cmocka_unit_test(test_left_out_groups_are_the_defaults),
                cmocka_unit_test(test_groups_and_limits),
                cmocka_unit_test(test_lbr_groups),
                cmocka_unit_test(test_counters),
                cmocka_unit_test(test_bad_files_name_their_line),
                cmocka_unit_test(test_shipped_files_load),
                cmocka_unit_test(test_modes_and_classes),
                cmocka_unit_test(test_unknown_user_group_means_nobody),
                cmocka_unit_test(test_shipped_monitor_user),
                cmocka_unit_test(test_file_must_be_roots),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group membership at reload: the group database narrows a connection's groups, never widens
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "macro.h"
#include "policy/membership.h"
#include "policy/policy.h"
#include "tmpdir_fixture.h"

static void write_etc(const char *name, const char *text) {
        char path[4096];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/etc", tmpdir);
        (void) mkdir(path, 0755);
        (void) snprintf(path, sizeof(path), "%s/etc/%s", tmpdir, name);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static void test_narrow(void **state) {
        Peer p = { .uid = 1000, .gid = 100, .groups = { 10, 20, 30 }, .n_groups = 3 };
        const gid_t now[] = { 100, 30, 40 };
        const gid_t none[] = { 7 };

        /* 20 and 10 are gone; 40 is in the database but the connection never had it. */
        assert_int_equal(peer_narrow_groups(&p, now, ELEMENTSOF(now)), 2);
        assert_int_equal(p.n_groups, 1);
        assert_int_equal(p.groups[0], 30);
        assert_false(p.gid_revoked);
        /* Narrowing again changes nothing; the primary gid goes when the database drops it. */
        assert_int_equal(peer_narrow_groups(&p, now, ELEMENTSOF(now)), 0);
        assert_int_equal(peer_narrow_groups(&p, none, ELEMENTSOF(none)), 2);
        assert_int_equal(p.n_groups, 0);
        assert_true(p.gid_revoked);
        /* A revoked primary gid stays revoked, even if the database names it again. */
        assert_int_equal(peer_narrow_groups(&p, now, ELEMENTSOF(now)), 0);
        assert_true(p.gid_revoked);
        assert_int_equal(peer_narrow_groups(&p, NULL, 0), 0);
}

static void test_rights_follow(void **state) {
        Config c = {};
        Peer p = { .uid = 1000, .gid = 4241, .n_groups = 0 };
        Rights r;

        c.user_groups_set = true;
        c.user_gids[0] = 4241;
        c.n_user_gids = 1;
        policy_rights(&c, &p, &r);
        assert_int_equal(r.role, ROLE_USER);
        p.gid_revoked = true;
        policy_rights(&c, &p, &r);
        assert_int_equal(r.role, ROLE_NONE);
}

static void test_files(void **state) {
        _cleanup_free_ gid_t *gids = NULL;
        size_t n = 99;

        write_etc("passwd", "root:x:0:0::/root:/bin/sh\nann:x:1000:100::/home/ann:/bin/sh\n"
                            "bob:x:1001:101::/home/bob:/bin/sh\nbroken line without fields\n");
        write_etc("group", "users:x:100:\nperf:x:4241:bob,ann\nadm:x:4240:bob\nann2:x:4300:annabel\n"
                           "garbage\nlast:x:4301:carl,ann\n");
        assert_int_equal(membership_read(tmpdir, 1000, &gids, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(gids[0], 100);
        assert_int_equal(gids[1], 4241);
        assert_int_equal(gids[2], 4301);
        free(gids);
        gids = NULL;
        /* No passwd entry: in no group, whatever a group line says. */
        assert_int_equal(membership_read(tmpdir, 1002, &gids, &n), MEMBERSHIP_E_NO_USER);
        assert_int_equal(n, 0);
        assert_null(gids);
}

static void test_files_missing(void **state) {
        gid_t *gids = NULL;
        size_t n = 99;

        /* A root without etc/passwd knows no user. */
        assert_int_equal(membership_read(tmpdir, 1000, &gids, &n), MEMBERSHIP_E_NO_USER);
        assert_int_equal(n, 0);
        assert_null(gids);
}

static void test_nss_root(void **state) {
        _cleanup_free_ gid_t *gids = NULL;
        size_t n = 0;
        int r;

        /* Root is in the system's database everywhere, with group 0 among its groups. */
        r = membership_read("/", 0, &gids, &n);
        assert_int_equal(r, 0);
        assert_true(n >= 1);
        assert_int_equal(gids[0], 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_narrow),
                cmocka_unit_test(test_rights_follow),
                cmocka_unit_test_setup_teardown(test_files, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_files_missing, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test(test_nss_root),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

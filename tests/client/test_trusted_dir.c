/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the directory root writes a job summary into, checked component by component,
 * and the file replaced there without writing through what another user put in its way
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/trusted-dir.h"

static char base[] = "/tmp/pmugate-test-trusted-XXXXXX";

static int setup(void **state) {
        (void) state;
        if (geteuid() != 0)
                return 0;
        if (!mkdtemp(base) || chmod(base, 0755) < 0)
                return -1;
        return 0;
}

static void sub(char *buf, size_t size, const char *name) {
        (void) snprintf(buf, size, "%s/%s", base, name);
}

static void test_directories(void **state) {
        char path[256], reason[512];
        int fd = -1;

        (void) state;
        if (geteuid() != 0)
                skip();         /* the checks want root's own directories */
        assert_int_equal(trusted_dir_open(base, &fd, reason, sizeof(reason)), 0);
        assert_true(fd >= 0);
        (void) close(fd);
        assert_int_equal(trusted_dir_open("relative/dir", &fd, reason, sizeof(reason)), -EINVAL);

        sub(path, sizeof(path), "open");
        assert_int_equal(mkdir(path, 0777), 0);
        assert_int_equal(chmod(path, 0777), 0);
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), -EPERM);
        assert_non_null(strstr(reason, "without the sticky bit"));
        assert_int_equal(chmod(path, 01777), 0);
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), 0);
        (void) close(fd);

        sub(path, sizeof(path), "users");
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), -EPERM);
        assert_non_null(strstr(reason, "belongs to uid 65534"));
        /* a root-owned directory below a user's is no better: the user can rename it away */
        sub(path, sizeof(path), "users/roots");
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), -EPERM);

        sub(path, sizeof(path), "link");
        assert_int_equal(symlink(base, path), 0);
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), -ELOOP);
        assert_non_null(strstr(reason, "symbolic link"));
        sub(path, sizeof(path), "link/open");
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), -ELOOP);
        sub(path, sizeof(path), "missing");
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), -ENOENT);
        assert_non_null(strstr(reason, "does not exist"));
        sub(path, sizeof(path), "open/../open");
        assert_int_equal(trusted_dir_open(path, &fd, reason, sizeof(reason)), -EINVAL);
}

static void test_replace(void **state) {
        char path[256], target[256], reason[512], buf[64] = "";
        struct stat st;
        int dir_fd = -1, fd;
        struct dirent *de;
        DIR *dir;
        ssize_t n;

        (void) state;
        if (geteuid() != 0)
                skip();
        sub(path, sizeof(path), "open");
        assert_int_equal(trusted_dir_open(path, &dir_fd, reason, sizeof(reason)), 0);

        /* another user's link at the name: replaced, its target untouched */
        sub(target, sizeof(target), "secret");
        fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "secret", 6), 6);
        (void) close(fd);
        assert_int_equal(symlinkat(target, dir_fd, "job.json"), 0);
        assert_int_equal(fchownat(dir_fd, "job.json", 65534, 65534, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(file_replace_at(dir_fd, "job.json", "{}\n", 3, 0644, reason, sizeof(reason)), 0);
        assert_int_equal(fstatat(dir_fd, "job.json", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0644);
        assert_int_equal(st.st_uid, 0);
        assert_int_equal(stat(target, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        fd = open(target, O_RDONLY);
        n = read(fd, buf, sizeof(buf) - 1);
        (void) close(fd);
        assert_int_equal(n, 6);
        assert_string_equal(buf, "secret");

        /* a directory at the name is an error, and no temporary file stays */
        assert_int_equal(mkdirat(dir_fd, "dir.json", 0755), 0);
        assert_true(file_replace_at(dir_fd, "dir.json", "{}\n", 3, 0644, reason, sizeof(reason)) < 0);
        assert_int_equal(file_replace_at(dir_fd, "../x.json", "{}", 2, 0644, reason, sizeof(reason)),
                         -EINVAL);
        assert_int_equal(file_replace_at(dir_fd, ".hidden", "{}", 2, 0644, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(file_replace_at(dir_fd, "", "{}", 2, 0644, reason, sizeof(reason)), -EINVAL);
        (void) close(dir_fd);
        dir = opendir(path);
        assert_non_null(dir);
        while ((de = readdir(dir)))
                assert_false(de->d_name[0] == '.' && strcmp(de->d_name, ".") != 0 &&
                             strcmp(de->d_name, "..") != 0);
        (void) closedir(dir);
}

static int teardown(void **state) {
        char cmd[300];

        (void) state;
        if (geteuid() != 0)
                return 0;
        (void) snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", base);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_directories),
                cmocka_unit_test(test_replace),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

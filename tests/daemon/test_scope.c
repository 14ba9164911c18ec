/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: job scope (the /proc/PID/cgroup parser, the cpuset walk that stops at the job's
 * cgroup, which job a CPU is attributed to when a user holds several grants, and that scope needs
 * the peer's own pidfd, which comes only from the socket)
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cpulist.h"
#include "error.h"
#include "macro.h"
#include "policy/grants.h"
#include "policy/policy.h"
#include "policy/scope.h"

#define PATH_SIZE 256
#define TEST_UID 4242

static char tmpdir[] = "/tmp/test-scope-XXXXXX";

static int parse(const char *text, char *v2, char *v1) {
        return scope_parse_proc_cgroup(text, strlen(text), v2, v1, PATH_SIZE);
}

static void test_parse_proc_cgroup(void **state) {
        char v2[PATH_SIZE], v1[PATH_SIZE], small2[8], small1[8];

        assert_int_equal(parse("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n", v2, v1), 0);
        assert_string_equal(v2, "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0");
        assert_string_equal(v1, "");

        /* cgroup v1: the cpuset hierarchy, alone or sharing a line with other controllers */
        assert_int_equal(parse("12:memory:/slurm/uid_1000/job_7\n"
                               "4:cpu,cpuset,cpuacct:/slurm/uid_1000/job_7/step_0\n"
                               "1:name=systemd:/user.slice\n"
                               "0::/\n", v2, v1), 0);
        assert_string_equal(v1, "/slurm/uid_1000/job_7/step_0");
        assert_string_equal(v2, "/");
        /* "cpusets" or "xcpuset" is not "cpuset" */
        assert_int_equal(parse("3:cpusets:/a\n4:xcpuset:/b\n", v2, v1), 0);
        assert_string_equal(v1, "");

        /* no trailing newline; lines without two colons name nothing */
        assert_int_equal(parse("garbage\n\n:\n0::/job_1", v2, v1), 0);
        assert_string_equal(v2, "/job_1");

        /* refused, not guessed: a hierarchy twice, relative or escaping paths */
        assert_int_equal(parse("0::/a\n0::/b\n", v2, v1), -EINVAL);
        assert_string_equal(v2, "");
        assert_int_equal(parse("5:cpuset:/a\n6:cpuset:/b\n", v2, v1), -EINVAL);
        assert_int_equal(parse("0::job_1\n", v2, v1), -EINVAL);
        assert_int_equal(parse("0::/slurm/../job_1\n", v2, v1), -EINVAL);
        assert_int_equal(parse("0::/slurm/./job_1\n", v2, v1), -EINVAL);
        assert_int_equal(parse("0::/slurm//job_1\n", v2, v1), -EINVAL);
        assert_int_equal(parse("0::/job_1/\n", v2, v1), -EINVAL);
        assert_int_equal(parse("0::\n", v2, v1), -EINVAL);
        assert_int_equal(scope_parse_proc_cgroup("0::/a\0b\n", 8, v2, v1, PATH_SIZE), -EINVAL);

        /* a path that does not fit is refused, not cut */
        assert_int_equal(scope_parse_proc_cgroup("0::/job_1234\n", 13, small2, small1, sizeof(small2)),
                         -ENAMETOOLONG);
        assert_int_equal(scope_parse_proc_cgroup("0::/job_12\n", 11, small2, small1, sizeof(small2)), 0);
        assert_string_equal(small2, "/job_12");

        /* text is not NUL-terminated: only size bytes count */
        assert_int_equal(scope_parse_proc_cgroup("0::/job_1XXXX", 9, v2, v1, PATH_SIZE), 0);
        assert_string_equal(v2, "/job_1");
}

static void test_find_job(void **state) {
        char job[16];

        assert_int_equal(scope_find_job("/slurm/uid_1/job_77/step_0", job, sizeof(job)),
                         strlen("/slurm/uid_1/job_77"));
        assert_string_equal(job, "77");
        assert_int_equal(scope_find_job("/job_5", job, sizeof(job)), 6);
        assert_int_equal(scope_find_job("/myjob_5/x", job, sizeof(job)), 0);
        assert_string_equal(job, "");
        assert_int_equal(scope_find_job("/a/job_/b", job, sizeof(job)), 0);
        assert_int_equal(scope_find_job("/job_12345678901234567890", job, sizeof(job)), 0);
}

static void write_text(const char *rel, const char *text) {
        char path[PATH_MAX];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *rel) {
        char path[PATH_MAX];

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        assert_int_equal(mkdir(path, 0755), 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* The walk up from the caller's cgroup stops at the job's directory: an ancestor's cpuset
 * (the whole node's, or another job's parent) never stands for the job's. */
static void test_bounded_walk(void **state) {
        static const char *const files[] = { "cpuset.cpus.effective", NULL };
        const char *path = "/slurm/job_9/step_0/task_0";
        size_t stop = strlen("/slurm/job_9");
        char list[64], *deep;
        CpuSet cpus;

        assert_non_null(mkdtemp(tmpdir));
        make_dir("slurm");
        make_dir("slurm/job_9");
        make_dir("slurm/job_9/step_0");
        make_dir("slurm/job_9/step_0/task_0");
        write_text("cpuset.cpus.effective", "0-63\n");
        write_text("slurm/cpuset.cpus.effective", "0-15\n");

        assert_int_equal(scope_read_cpuset(tmpdir, path, stop, files, &cpus), -ENOENT);

        write_text("slurm/job_9/cpuset.cpus.effective", "4-5\n");
        assert_int_equal(scope_read_cpuset(tmpdir, path, stop, files, &cpus), 0);
        assert_int_equal(cpuset_format(&cpus, list, sizeof(list)), 0);
        assert_string_equal(list, "4-5");

        write_text("slurm/job_9/step_0/cpuset.cpus.effective", "5\n");
        assert_int_equal(scope_read_cpuset(tmpdir, path, stop, files, &cpus), 0);
        assert_int_equal(cpuset_format(&cpus, list, sizeof(list)), 0);
        assert_string_equal(list, "5");

        /* an empty file is none; one that does not parse is refused */
        write_text("slurm/job_9/step_0/cpuset.cpus.effective", "\n");
        assert_int_equal(scope_read_cpuset(tmpdir, path, stop, files, &cpus), 0);
        assert_int_equal(cpuset_format(&cpus, list, sizeof(list)), 0);
        assert_string_equal(list, "4-5");
        write_text("slurm/job_9/step_0/cpuset.cpus.effective", "3-1\n");
        assert_int_equal(scope_read_cpuset(tmpdir, path, stop, files, &cpus), -EINVAL);

        /* the stop must lie within the path */
        assert_int_equal(scope_read_cpuset(tmpdir, "/job_9", 7, files, &cpus), -EINVAL);
        assert_int_equal(scope_read_cpuset(tmpdir, "/job_9", 0, files, &cpus), -EINVAL);

        /* a path too long for a file name is refused, not truncated to a shorter one */
        deep = malloc(8192);
        assert_non_null(deep);
        (void) snprintf(deep, 8192, "/job_9/%0*d", 6000, 0);
        assert_int_equal(scope_read_cpuset(tmpdir, deep, strlen("/job_9"), files, &cpus), -ENAMETOOLONG);
        free(deep);

        assert_int_equal(nftw(tmpdir, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void add_grant(Grants *g, const char *job, uid_t uid, const char *cpus) {
        _cleanup_free_ uint32_t *list = NULL;
        size_t n = 0;

        if (cpus)
                assert_int_equal(cpulist_parse(cpus, PMUGATE_CPUS_MAX, &list, &n), 0);
        assert_true(grants_put(g, job, uid, list, n) >= 0);
}

/* A user with several grants: each CPU belongs to the first grant that names it, and a lease
 * stays covered only while that very job still gives that CPU. */
static void test_job_attribution(void **state) {
        Grants g;
        Scope outside = {}, inside = { .job = "B", .from_cgroup = true };

        grants_init(&g, NULL, 16);
        add_grant(&g, "A", 1000, "0-1");
        add_grant(&g, "B", 1000, "2-3");
        add_grant(&g, "C", 1000, "2");
        add_grant(&g, "D", 2000, "4");
        add_grant(&g, "E", 1000, NULL);         /* the job's cgroup decides: never outside it */
        for (uint32_t cpu = 0; cpu < 4; cpu++)
                cpuset_add(&outside.cpus, cpu);

        assert_string_equal(scope_job_of_cpu(&outside, &g, 1000, 0), "A");
        assert_string_equal(scope_job_of_cpu(&outside, &g, 1000, 2), "B");
        assert_string_equal(scope_job_of_cpu(&outside, &g, 1000, 3), "B");
        assert_null(scope_job_of_cpu(&outside, &g, 1000, 4));           /* out of scope */
        assert_null(scope_job_of_cpu(&outside, &g, 2000, 1));

        assert_true(scope_job_covers(&outside, &g, 1000, "B", 2));
        assert_false(scope_job_covers(&outside, &g, 1000, "A", 2));
        assert_false(scope_job_covers(&outside, &g, 1000, "D", 2));
        assert_false(scope_job_covers(&outside, &g, 1001, "B", 2));      /* another uid's */
        assert_false(scope_job_covers(&outside, &g, 1000, "E", 2));
        assert_false(scope_job_covers(&outside, &g, 1000, "", 2));

        /* B revoked: its CPU 2 is C's too, but the lease B gave ends (fail closed) */
        assert_int_equal(grants_remove(&g, "B", NULL), 0);
        assert_false(scope_job_covers(&outside, &g, 1000, "B", 2));
        assert_true(scope_job_covers(&outside, &g, 1000, "C", 2));
        assert_string_equal(scope_job_of_cpu(&outside, &g, 1000, 2), "C");

        /* B replaced with other CPUs */
        add_grant(&g, "B", 1000, "0");
        assert_false(scope_job_covers(&outside, &g, 1000, "B", 3));

        /* inside a job's cgroup every CPU of the scope is that job's */
        cpuset_add(&inside.cpus, 6);
        assert_string_equal(scope_job_of_cpu(&inside, &g, 1000, 6), "B");
        assert_true(scope_job_covers(&inside, &g, 1000, "B", 6));
        assert_false(scope_job_covers(&inside, &g, 1000, "A", 6));
        assert_false(scope_job_covers(&inside, &g, 1000, "B", 7));

        grants_done(&g);
}

/* Without the socket's pidfd, /proc/PID/cgroup may belong to whoever got the pid after the
 * client: scope is refused, saying why, even when a grant names its CPUs. */
static void test_no_pidfd_no_scope(void **state) {
        static const uint32_t cpus[] = { 0, 1 };
        Peer peer = {
                .uid = TEST_UID, .gid = TEST_UID, .pid = getpid(), .pidfd = -EBADF, .cgroup_fd = -EBADF,
        };
        Grants grants;
        Scope scope = {};
        Refusal why = {};

        (void) state;
        grants_init(&grants, NULL, 16);
        assert_int_equal(grants_put(&grants, "77", TEST_UID, cpus, 2), 0);

        assert_int_equal(scope_resolve("/sys/fs/cgroup", &peer, &grants, &scope, &why),
                         PROTO_E_NO_GRANT);
        assert_non_null(strstr(why.reason, "no pidfd"));
        assert_true(cpuset_is_empty(&scope.cpus));
        /* Nothing was opened on the strength of the pid alone. */
        assert_int_equal(peer.cgroup_fd, -EBADF);
        grants_done(&grants);
}

/* With the socket's pidfd the same grant applies (outside a job's cgroup, through its CPUs). */
static void test_pidfd_from_the_socket(void **state) {
        static const uint32_t cpus[] = { 0, 1 };
        int sv[2];
        Peer peer;
        Grants grants;
        Scope scope = {};
        char cgroup[4096] = "", fdinfo[64], line[256];
        Refusal why = {};
        FILE *f;
        pid_t pinned = 0;
        size_t n;

        (void) state;
        f = fopen("/proc/self/cgroup", "re");
        assert_non_null(f);
        n = fread(cgroup, 1, sizeof(cgroup) - 1, f);
        cgroup[n] = '\0';
        fclose(f);
        if (strstr(cgroup, "job_"))
                skip();   /* running inside a batch job's cgroup: scope would follow that job */

        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(peer_from_socket(sv[0], &peer), 0);
        assert_int_equal(peer.pid, getpid());
        assert_true(peer.pidfd >= 0);
        /* The pidfd is the kernel's handle on the connecting process itself. */
        (void) snprintf(fdinfo, sizeof(fdinfo), "/proc/self/fdinfo/%d", peer.pidfd);
        f = fopen(fdinfo, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "Pid: %d", &pinned) == 1)
                        break;
        fclose(f);
        assert_int_equal(pinned, getpid());

        grants_init(&grants, NULL, 16);
        assert_int_equal(grants_put(&grants, "77", peer.uid, cpus, 2), 0);
        assert_int_equal(scope_resolve("/sys/fs/cgroup", &peer, &grants, &scope, &why), 0);
        assert_true(cpuset_has(&scope.cpus, 0) && cpuset_has(&scope.cpus, 1) && !cpuset_has(&scope.cpus, 2));
        assert_string_equal(scope.job, "77");
        grants_done(&grants);
        peer_done(&peer);
        close(sv[0]);
        close(sv[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_proc_cgroup),
                cmocka_unit_test(test_find_job),
                cmocka_unit_test(test_bounded_walk),
                cmocka_unit_test(test_job_attribution),
                cmocka_unit_test(test_no_pidfd_no_scope),
                cmocka_unit_test(test_pidfd_from_the_socket),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

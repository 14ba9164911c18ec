/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the job map's CPUs of a grant. Explicit CPUs win; otherwise the job's Slurm
 * cgroup (v1 cpuset/slurm*, v2 *slurmstepd.scope, v2 under unified/) is read in its own
 * directory, and only a directory of root's counts.
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

#include "policy/jobmap.h"
#include "tmpdir_fixture.h"

static void make_dirs(const char *rel) {
        char path[1024], *p;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        for (p = path + strlen(tmpdir) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                (void) mkdir(path, 0755);
                *p = '/';
        }
        (void) mkdir(path, 0755);
}

static void write_file(const char *rel, const char *text) {
        char path[1024];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static Grant grant(const char *job, uid_t uid) {
        Grant g = { .uid = uid };

        (void) snprintf(g.job, sizeof(g.job), "%s", job);
        return g;
}

static void test_explicit_cpus(void **state) {
        Grant g = grant("5", 1000);
        CpuSet got;

        g.has_cpus = true;
        cpuset_add(&g.cpus, 7);
        make_dirs("cpuset/slurm/uid_1000/job_5");
        write_file("cpuset/slurm/uid_1000/job_5/cpuset.cpus", "1-2\n");
        assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), 0);
        assert_true(cpuset_has(&got, 7));
        assert_int_equal(cpuset_count(&got), 1);
}

static void test_cgroup_layouts(void **state) {
        static const struct {
                const char *dir, *file, *text, *job;
                uid_t uid;
                unsigned first, count;
        } rows[] = {
                {"cpuset/slurm/uid_1000/job_10", "cpuset.effective_cpus", "4-5\n", "10", 1000, 4, 2},
                {"cpuset/slurm_node7/uid_1001/job_11", "cpuset.cpus", "6\n", "11", 1001, 6, 1},
                {"system.slice/slurmstepd.scope/job_12", "cpuset.cpus.effective", "8-11\n", "12", 0, 8, 4},
                {"system.slice/node7_slurmstepd.scope/job_13", "cpuset.cpus.effective", "3\n", "13", 5, 3,
                 1},
                {"unified/system.slice/slurmstepd.scope/job_14", "cpuset.cpus.effective", "0\n", "14", 5, 0,
                 1},
        };

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char file[512];
                Grant g = grant(rows[i].job, rows[i].uid);
                CpuSet got;

                make_dirs(rows[i].dir);
                (void) snprintf(file, sizeof(file), "%s/%s", rows[i].dir, rows[i].file);
                write_file(file, rows[i].text);
                assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), 0);
                assert_int_equal(cpuset_count(&got), rows[i].count);
                assert_true(cpuset_has(&got, rows[i].first));
        }
}

static void test_not_found(void **state) {
        Grant g = grant("20", 1000), other_uid = grant("21", 1000);
        CpuSet got;

        /* no cgroup yet */
        assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), -ENOENT);
        /* v1: another uid's directory is not this grant's */
        make_dirs("cpuset/slurm/uid_2000/job_21");
        write_file("cpuset/slurm/uid_2000/job_21/cpuset.cpus", "1\n");
        assert_int_equal(jobmap_grant_cpus(tmpdir, &other_uid, &got), -ENOENT);
        /* a parent's CPUs are never the job's: an empty job directory has none */
        make_dirs("system.slice/slurmstepd.scope/job_20");
        write_file("system.slice/slurmstepd.scope/cpuset.cpus.effective", "0-63\n");
        assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), -ENOENT);
        /* a cpuset file that is not a CPU list */
        write_file("system.slice/slurmstepd.scope/job_20/cpuset.cpus.effective", "all of them\n");
        assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), -ENOENT);
        /* a job id that is a prefix of another's does not match it */
        make_dirs("system.slice/slurmstepd.scope/job_200");
        write_file("system.slice/slurmstepd.scope/job_200/cpuset.cpus.effective", "9\n");
        assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), -ENOENT);
}

static void test_owner(void **state) {
        Grant g = grant("30", 1000);
        char dir[1024];
        CpuSet got;

        make_dirs("system.slice/slurmstepd.scope/job_30");
        write_file("system.slice/slurmstepd.scope/job_30/cpuset.cpus.effective", "2\n");
        assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), 0);
        /* a cgroup the user made (v2 delegation) does not stand for the job */
        (void) snprintf(dir, sizeof(dir), "%s/system.slice/slurmstepd.scope/job_30", tmpdir);
        if (geteuid() != 0) {
                skip();
                return;
        }
        assert_int_equal(chown(dir, 1000, 1000), 0);
        assert_int_equal(jobmap_grant_cpus(tmpdir, &g, &got), -ENOENT);
}

static void test_candidates(void **state) {
        char buf[4096];
        int n;

        make_dirs("system.slice/slurmstepd.scope");
        make_dirs("system.slice/other.scope");
        make_dirs("cpuset/slurm_a");
        make_dirs("cpuset/unrelated");
        n = jobmap_candidate_paths(tmpdir, "4", 9, buf, sizeof(buf));
        assert_int_equal(n, 2);
        assert_string_equal(buf, "/system.slice/slurmstepd.scope/job_4");
        assert_string_equal(buf + strlen(buf) + 1, "/cpuset/slurm_a/uid_9/job_4");
        assert_int_equal(jobmap_candidate_paths(tmpdir, "4", 9, buf, 20), -ENAMETOOLONG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_explicit_cpus, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_layouts, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_not_found, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_owner, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test_setup_teardown(test_candidates, tmpdir_setup, tmpdir_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the scopes of the perf_event path on this machine's real kernel (root): the job's
 * directory in the real cgroup v2 hierarchy, found for a caller that runs in it and refused for
 * one outside any job, for another job's name, for a directory a user owns and for a symlinked
 * component; a process of the caller's with its threads, refused when another uid's, exited, or
 * outside the job's cgroup; and that a cgroup cpu-clock event on the fd it returns counts only
 * its own job's tasks on a CPU two jobs share.
 *
 * Callers are forked children that connect over a Unix socket, so that the Peer comes from
 * SO_PEERCRED and SO_PEERPIDFD as the server fills it.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "error.h"
#include "macro.h"
#include "perf/perf-target.h"
#include "pmugate-limits.h"
#include "policy/policy.h"
#include "refusal.h"

#define NOBODY 65534
#define OTHER_UID 65533
#define JOB "1234"
#define OTHER_JOB "5678"
#define THREADS 3

static char v2_mount[512];          /* where the cgroup v2 hierarchy is mounted */
static char cgroup_root[512];       /* what the daemon is given: v2_mount or its parent (hybrid) */
static char test_name[64];          /* pmugate-test-PID, beneath v2_mount */
static char test_dir[600], job_dir[700], other_job_dir[700], outside_dir[700];
static struct sockaddr_un address;
static socklen_t address_size;
static int listener = -EBADF;

typedef struct Caller {
        pid_t pid;
        int conn;               /* the daemon's end of the caller's connection */
        int release;            /* closing it lets the caller exit */
        Peer peer;
} Caller;

typedef struct CallerSpec {
        const char *cgroup;     /* the directory to run in; NULL: stay */
        uid_t uid;              /* 0: stay root */
        int threads;            /* more threads besides the main one (small stacks) */
        bool connect;
        long busy_msec;         /* > 0: spin this much CPU time on CPU 0, then exit */
        bool undumpable;        /* PR_SET_DUMPABLE 0, as a setuid program is */
        uid_t saved_uid;        /* > 0: the saved uid instead of uid */
} CallerSpec;

static void write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text)) {
                fprintf(stderr, "# cannot write %s to %s: %m\n", text, path);
                _exit(99);
        }
        (void) close(fd);
}

static void *idle_thread(void *arg) {
        for (;;)
                pause();
        return arg;
}

static double thread_cpu_msec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static _Noreturn void caller_main(const CallerSpec *spec, int ready, int release) {
        char byte = 1;

        if (spec->cgroup) {
                char procs[1100];

                (void) snprintf(procs, sizeof(procs), "%s/cgroup.procs", spec->cgroup);
                write_file(procs, "0");
        }
        if (spec->uid != 0 &&
            (setgroups(0, NULL) < 0 || setresgid(spec->uid, spec->uid, spec->uid) < 0 ||
             setresuid(spec->uid, spec->uid, spec->saved_uid ?: spec->uid) < 0))
                _exit(98);
        /* Changing uids left the child undumpable; a program exec'd as the user is dumpable. */
        if (prctl(PR_SET_DUMPABLE, spec->undumpable ? 0 : 1, 0, 0, 0) < 0)
                _exit(93);
        for (int i = 0; i < spec->threads; i++) {
                pthread_attr_t small;
                pthread_t t;

                if (pthread_attr_init(&small) != 0 || pthread_attr_setstacksize(&small, 64 * 1024) != 0 ||
                    pthread_create(&t, &small, idle_thread, NULL) != 0)
                        _exit(97);
        }
        if (spec->connect) {
                int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

                if (fd < 0 || connect(fd, (struct sockaddr *) &address, address_size) < 0)
                        _exit(96);
        }
        if (spec->busy_msec > 0) {
                cpu_set_t one;

                CPU_ZERO(&one);
                CPU_SET(0, &one);
                if (sched_setaffinity(0, sizeof(one), &one) < 0)
                        _exit(95);
                /* Both jobs' loops start together, so they share the CPU all along. */
                if (write(ready, &byte, 1) != 1 || read(release, &byte, 1) < 0)
                        _exit(94);
                for (double start = thread_cpu_msec(); thread_cpu_msec() - start < (double) spec->busy_msec;)
                        ;
                _exit(0);
        }
        if (write(ready, &byte, 1) != 1)
                _exit(94);
        (void) read(release, &byte, 1);
        _exit(0);
}

static void spawn(const CallerSpec *spec, Caller *ret) {
        int ready[2], release[2];
        char byte;

        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        assert_int_equal(pipe2(release, O_CLOEXEC), 0);
        *ret = (Caller) { .conn = -EBADF, .peer = { .pidfd = -EBADF, .cgroup_fd = -EBADF } };
        ret->pid = fork();
        assert_true(ret->pid >= 0);
        if (ret->pid == 0) {
                /* Nothing of the other callers: each exits when its own release pipe closes. */
                for (int fd = 3; fd < 1024; fd++)
                        if (fd != ready[1] && fd != release[0])
                                (void) close(fd);
                caller_main(spec, ready[1], release[0]);
        }
        (void) close(ready[1]);
        (void) close(release[0]);
        ret->release = release[1];
        assert_int_equal(read(ready[0], &byte, 1), 1);
        (void) close(ready[0]);
        if (spec->connect) {
                ret->conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
                assert_true(ret->conn >= 0);
                assert_int_equal(peer_from_socket(ret->conn, &ret->peer), 0);
                assert_int_equal(ret->peer.pid, ret->pid);
                /* SO_PEERPIDFD: Linux 6.5 and later */
                assert_true(ret->peer.pidfd >= 0);
        }
}

static int finish(Caller *c) {
        int status = -1;

        if (c->release >= 0)
                (void) close(c->release);
        c->release = -EBADF;
        assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
        peer_done(&c->peer);
        if (c->conn >= 0)
                (void) close(c->conn);
        c->conn = -EBADF;
        return status;
}

static bool same_dir(int fd, const char *path) {
        struct stat a, b;

        return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The cgroup2 mount of this machine from /proc/self/mountinfo: a unified host's /sys/fs/cgroup,
 * a hybrid host's /sys/fs/cgroup/unified. */
static bool find_v2_mount(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[4096];

        while (f && fgets(line, sizeof(line), f)) {
                char mount_point[512], type[64];
                const char *dash = strstr(line, " - ");

                if (!dash || sscanf(dash, " - %63s", type) != 1 || strcmp(type, "cgroup2") != 0)
                        continue;
                if (sscanf(line, "%*s %*s %*s %*s %511s", mount_point) != 1)
                        continue;
                (void) snprintf(v2_mount, sizeof(v2_mount), "%s", mount_point);
                return true;
        }
        return false;
}

static int setup(void **state) {
        size_t n;

        if (geteuid() != 0 || !find_v2_mount()) {
                fprintf(stderr, "# needs root and a cgroup v2 hierarchy\n");
                return 0;
        }
        n = strlen(v2_mount);
        if (n > 8 && strcmp(v2_mount + n - 8, "/unified") == 0)
                (void) snprintf(cgroup_root, sizeof(cgroup_root), "%.*s", (int) (n - 8), v2_mount);
        else
                (void) snprintf(cgroup_root, sizeof(cgroup_root), "%s", v2_mount);
        (void) snprintf(test_name, sizeof(test_name), "pmugate-test-%d", (int) getpid());
        (void) snprintf(test_dir, sizeof(test_dir), "%s/%s", v2_mount, test_name);
        (void) snprintf(job_dir, sizeof(job_dir), "%s/job_" JOB, test_dir);
        (void) snprintf(other_job_dir, sizeof(other_job_dir), "%s/job_" OTHER_JOB, test_dir);
        (void) snprintf(outside_dir, sizeof(outside_dir), "%s/login", test_dir);
        if (mkdir(test_dir, 0755) < 0 || mkdir(job_dir, 0755) < 0 || mkdir(other_job_dir, 0755) < 0 ||
            mkdir(outside_dir, 0755) < 0) {
                fprintf(stderr, "# cannot make the test's cgroups under %s: %m\n", v2_mount);
                return -1;
        }

        address = (struct sockaddr_un) { .sun_family = AF_UNIX };
        n = (size_t) snprintf(address.sun_path + 1, sizeof(address.sun_path) - 1, "pmugate-test-perf-target-%d",
                              (int) getpid());
        address_size = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n);
        listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (listener < 0 || bind(listener, (struct sockaddr *) &address, address_size) < 0 ||
            listen(listener, 16) < 0)
                return -1;
        return 0;
}

static void remove_cgroup(const char *dir) {
        /* An exited task leaves its cgroup a moment after its parent reaped it. */
        for (int i = 0; i < 100 && rmdir(dir) < 0 && errno == EBUSY; i++)
                (void) usleep(10000);
}

static int teardown(void **state) {
        if (listener >= 0)
                (void) close(listener);
        if (test_dir[0]) {
                char kill_file[700];
                int fd;

                /* Callers a failed test left behind end with their cgroups (Linux 5.14 and later). */
                (void) snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", test_dir);
                fd = open(kill_file, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void) !write(fd, "1", 1);
                        (void) close(fd);
                }
                remove_cgroup(job_dir);
                remove_cgroup(other_job_dir);
                remove_cgroup(outside_dir);
                remove_cgroup(test_dir);
        }
        return 0;
}

static void need_cgroups(void) {
        if (!test_dir[0])
                skip();
}

static void test_job_cgroup_found(void **state) {
        Caller c;
        Refusal r = {};
        char path[512], expected[512];
        int fd = -EBADF;

        need_cgroups();
        spawn(&(CallerSpec) { .cgroup = job_dir, .uid = NOBODY, .connect = true }, &c);
        assert_int_equal(perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r), 0);
        assert_true(same_dir(fd, job_dir));
        assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
        (void) close(fd);

        /* a unified host's cgroup_root is the v2 mount itself */
        fd = -EBADF;
        assert_int_equal(perf_target_job_cgroup(v2_mount, &c.peer, JOB, &fd, &r), 0);
        assert_true(same_dir(fd, job_dir));
        (void) close(fd);

        assert_int_equal(perf_target_job_path(&c.peer, JOB, path, sizeof(path), &r), 0);
        assert_int_equal(snprintf(expected, sizeof(expected), "/%s/job_" JOB, test_name), strlen(path));
        assert_string_equal(path, expected);

        /* no v2 hierarchy where the daemon was told to look */
        fd = -EBADF;
        assert_int_equal(perf_target_job_cgroup("/proc/self", &c.peer, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_non_null(strstr(r.reason, "per-job counting needs the cgroup v2 hierarchy (mounted at "
                                         "/proc/self or /proc/self/unified)"));
        assert_int_equal(fd, -EBADF);
        assert_int_equal(WEXITSTATUS(finish(&c)), 0);
}

static void test_job_cgroup_refused(void **state) {
        Caller c;
        Refusal r = {};
        int fd = -EBADF;

        need_cgroups();
        /* outside any job (a login shell's cgroup) */
        spawn(&(CallerSpec) { .cgroup = outside_dir, .uid = NOBODY, .connect = true }, &c);
        assert_int_equal(perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_non_null(strstr(r.reason, "is not inside a job's cgroup"));
        assert_int_equal(finish(&c), 0);

        /* in another job than the one asked for */
        spawn(&(CallerSpec) { .cgroup = other_job_dir, .uid = NOBODY, .connect = true }, &c);
        assert_int_equal(perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_non_null(strstr(r.reason, "runs in the cgroup of job " OTHER_JOB ", not of job " JOB));
        assert_int_equal(finish(&c), 0);

        /* a job directory a user owns: delegation lets users make cgroups of any name */
        spawn(&(CallerSpec) { .cgroup = job_dir, .uid = NOBODY, .connect = true }, &c);
        assert_int_equal(chown(job_dir, NOBODY, NOBODY), 0);
        assert_int_equal(perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_non_null(strstr(r.reason, "is not root's: a user-made cgroup cannot stand for a job"));
        assert_int_equal(chown(job_dir, 0, 0), 0);
        assert_int_equal(perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r), 0);
        (void) close(fd);
        fd = -EBADF;

        /* the caller gone and reaped: its kept /proc/PID/cgroup reads no more, and a process
         * that took its pid would not be believed */
        (void) close(c.release);
        c.release = -EBADF;
        assert_int_equal(waitpid(c.pid, NULL, 0), c.pid);
        assert_int_equal(perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_non_null(strstr(r.reason, "cannot tell which job pid"));
        assert_int_equal(fd, -EBADF);
        peer_done(&c.peer);
        (void) close(c.conn);
}

/* In a mount namespace of its own, a tmpfs over the test's cgroup directory holds job_1234 as a
 * symlink to a directory of root's in the v2 hierarchy, which would pass every other check. */
static void test_job_cgroup_symlink(void **state) {
        Caller c;
        pid_t pid;
        int status;

        need_cgroups();
        spawn(&(CallerSpec) { .cgroup = job_dir, .uid = NOBODY, .connect = true }, &c);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                Refusal r = {};
                int fd = -EBADF, code;

                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount("tmpfs", test_dir, "tmpfs", 0, "mode=0755") < 0)
                        _exit(90);
                if (chdir(test_dir) < 0 || symlink(v2_mount, "job_" JOB) < 0)
                        _exit(91);
                code = perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r);
                fprintf(stderr, "# symlinked component: %d %s\n", code, r.reason);
                _exit(code == PROTO_E_NO_GRANT && strstr(r.reason, "(a symlink?)") && fd == -EBADF ? 0 : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(finish(&c), 0);
}

/* A job named by its id (a monitor's scope job): found where the job map looks, in the v2
 * hierarchy only, root's only, never through a symlink; refused with where it looked. */
static void test_job_cgroup_of_id(void **state) {
        char slice[600], scope[700], job[800], tmp[] = "/tmp/pmugate-test-of-id-XXXXXX", path[1024];
        bool made_slice = false;
        Refusal r = {};
        int fd = -EBADF;

        need_cgroups();
        (void) snprintf(slice, sizeof(slice), "%s/system.slice", v2_mount);
        (void) snprintf(scope, sizeof(scope), "%s/%s_slurmstepd.scope", slice, test_name);
        (void) snprintf(job, sizeof(job), "%s/job_" JOB, scope);
        if (mkdir(slice, 0755) == 0)
                made_slice = true;
        assert_int_equal(mkdir(scope, 0755), 0);
        assert_int_equal(mkdir(job, 0755), 0);

        assert_int_equal(perf_target_job_cgroup_of_id(cgroup_root, JOB, &fd, &r), 0);
        assert_true(same_dir(fd, job));
        assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        (void) close(fd);
        fd = -EBADF;
        assert_int_equal(perf_target_job_cgroup_of_id(v2_mount, JOB, &fd, &r), 0);
        (void) close(fd);

        /* another job's id finds nothing: the test's job directory is not that job */
        fd = -EBADF;
        assert_int_equal(perf_target_job_cgroup_of_id(cgroup_root, OTHER_JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_non_null(strstr(r.reason, "has no cgroup of root's in the v2 hierarchy"));
        assert_int_equal(fd, -EBADF);
        /* a directory of a user's with the job's name does not stand for it */
        assert_int_equal(chown(job, NOBODY, NOBODY), 0);
        assert_int_equal(perf_target_job_cgroup_of_id(cgroup_root, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_int_equal(fd, -EBADF);
        assert_int_equal(chown(job, 0, 0), 0);

        /* outside cgroup2 (a plain directory tree), and through a symlinked component */
        assert_non_null(mkdtemp(tmp));
        (void) snprintf(path, sizeof(path), "%s/system.slice", tmp);
        assert_int_equal(mkdir(path, 0755), 0);
        (void) snprintf(path, sizeof(path), "%s/system.slice/x_slurmstepd.scope", tmp);
        assert_int_equal(mkdir(path, 0755), 0);
        (void) snprintf(path, sizeof(path), "%s/system.slice/x_slurmstepd.scope/job_" JOB, tmp);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(perf_target_job_cgroup_of_id(tmp, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_int_equal(fd, -EBADF);
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(symlink(job, path), 0);
        assert_int_equal(perf_target_job_cgroup_of_id(tmp, JOB, &fd, &r), PROTO_E_NO_GRANT);
        assert_int_equal(fd, -EBADF);
        assert_int_equal(unlink(path), 0);
        (void) snprintf(path, sizeof(path), "%s/system.slice/x_slurmstepd.scope", tmp);
        assert_int_equal(rmdir(path), 0);
        (void) snprintf(path, sizeof(path), "%s/system.slice", tmp);
        assert_int_equal(rmdir(path), 0);
        assert_int_equal(rmdir(tmp), 0);

        remove_cgroup(job);
        remove_cgroup(scope);
        if (made_slice)
                remove_cgroup(slice);
}

static int compare_pid(const void *a, const void *b) {
        return *(const pid_t *) a < *(const pid_t *) b ? -1 : *(const pid_t *) a > *(const pid_t *) b;
}

static void test_process_own(void **state) {
        Caller c, other;
        PerfProcess p;
        Refusal r = {};
        char job_path[256], task[64];
        pid_t listed[THREADS + 1];
        size_t n = 0;
        DIR *d;
        struct dirent *de;

        need_cgroups();
        spawn(&(CallerSpec) { .cgroup = job_dir, .uid = NOBODY, .threads = THREADS, .connect = true }, &c);
        assert_int_equal(perf_target_process("/proc", &c.peer, 0, NULL, &p, &r), 0);
        assert_int_equal(p.pid, c.pid);
        assert_int_equal(p.n_tids, THREADS + 1);
        (void) snprintf(task, sizeof(task), "/proc/%d/task", (int) c.pid);
        d = opendir(task);
        assert_non_null(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && n < ELEMENTSOF(listed))
                        listed[n++] = (pid_t) atoi(de->d_name);
        (void) closedir(d);
        assert_int_equal(n, THREADS + 1);
        qsort(listed, n, sizeof(pid_t), compare_pid);
        qsort(p.tids, p.n_tids, sizeof(pid_t), compare_pid);
        assert_memory_equal(listed, p.tids, n * sizeof(pid_t));
        assert_true(perf_target_process_alive(&p));
        perf_process_done(&p);
        assert_int_equal(p.pidfd, -EBADF);

        /* by pid, in job mode: the process runs in the job's cgroup */
        assert_int_equal(perf_target_job_path(&c.peer, JOB, job_path, sizeof(job_path), &r), 0);
        assert_int_equal(perf_target_process("/proc", &c.peer, c.pid, job_path, &p, &r), 0);
        assert_int_equal(p.n_tids, THREADS + 1);

        /* a process of the same uid outside the job's cgroup is not the job's */
        spawn(&(CallerSpec) { .cgroup = outside_dir, .uid = NOBODY }, &other);
        {
                PerfProcess q;
                char expected[PMUGATE_REASON_MAX];

                assert_int_equal(perf_target_process("/proc", &c.peer, other.pid, job_path, &q, &r),
                                 PROTO_E_OUT_OF_SCOPE);
                (void) snprintf(expected, sizeof(expected),
                                "process %d is not inside your job's cgroup %s: count the processes of your job",
                                (int) other.pid, job_path);
                assert_string_equal(r.reason, expected);
                /* outside job mode it is the caller's to count */
                assert_int_equal(perf_target_process("/proc", &c.peer, other.pid, NULL, &q, &r), 0);
                perf_process_done(&q);
        }
        assert_int_equal(finish(&other), 0);

        /* the job's cgroup as a prefix only at a component: job_12345 is not inside job_1234 */
        {
                PerfProcess q;
                char sibling[1100];
                Caller s;

                (void) snprintf(sibling, sizeof(sibling), "%s5", job_dir);
                assert_int_equal(mkdir(sibling, 0755), 0);
                spawn(&(CallerSpec) { .cgroup = sibling, .uid = NOBODY }, &s);
                assert_int_equal(perf_target_process("/proc", &c.peer, s.pid, job_path, &q, &r),
                                 PROTO_E_OUT_OF_SCOPE);
                assert_int_equal(finish(&s), 0);
                remove_cgroup(sibling);
        }

        assert_int_equal(finish(&c), 0);
        /* the pid was released: the pidfd says so */
        assert_false(perf_target_process_alive(&p));
        perf_process_done(&p);
}

static void test_process_other_uid(void **state) {
        Caller c, root_caller, other, saved;
        PerfProcess p;
        Refusal r = {};
        char expected[PMUGATE_REASON_MAX];

        need_cgroups();
        spawn(&(CallerSpec) { .uid = NOBODY, .connect = true }, &c);
        spawn(&(CallerSpec) { .uid = OTHER_UID, .threads = 1 }, &other);
        assert_int_equal(perf_target_process("/proc", &c.peer, other.pid, NULL, &p, &r), PROTO_E_NOT_AUTHORIZED);
        (void) snprintf(expected, sizeof(expected), "process %d is not yours: its thread %d runs as uid %u",
                        (int) other.pid, (int) other.pid, OTHER_UID);
        assert_non_null(strstr(r.reason, expected));
        assert_non_null(strstr(r.reason, "only when asked as root"));

        /* the caller's uid, but a saved uid of another's: it may become that uid again */
        spawn(&(CallerSpec) { .uid = NOBODY, .saved_uid = OTHER_UID }, &saved);
        assert_int_equal(perf_target_process("/proc", &c.peer, saved.pid, NULL, &p, &r), PROTO_E_NOT_AUTHORIZED);
        assert_non_null(strstr(r.reason, "saved 65533"));
        assert_int_equal(finish(&saved), 0);

        /* the caller's uid, not dumpable (as a setuid program): ptrace's rule */
        spawn(&(CallerSpec) { .uid = NOBODY, .undumpable = true }, &saved);
        assert_int_equal(perf_target_process("/proc", &c.peer, saved.pid, NULL, &p, &r), PROTO_E_NOT_AUTHORIZED);
        (void) snprintf(expected, sizeof(expected), "process %d is not dumpable", (int) saved.pid);
        assert_non_null(strstr(r.reason, expected));
        assert_int_equal(finish(&saved), 0);

        /* root's own process (this test) is no more the caller's */
        assert_int_equal(perf_target_process("/proc", &c.peer, getpid(), NULL, &p, &r), PROTO_E_NOT_AUTHORIZED);

        /* root may count anyone's process */
        spawn(&(CallerSpec) { .connect = true }, &root_caller);
        assert_int_equal(perf_target_process("/proc", &root_caller.peer, other.pid, NULL, &p, &r), 0);
        assert_int_equal(p.n_tids, 2);
        perf_process_done(&p);

        assert_int_equal(finish(&root_caller), 0);
        assert_int_equal(finish(&other), 0);
        assert_int_equal(finish(&c), 0);
}

static void test_process_exited(void **state) {
        Caller c;
        PerfProcess p;
        Refusal r = {};
        siginfo_t si = {};
        char expected[128];
        pid_t zombie;

        need_cgroups();
        spawn(&(CallerSpec) { .uid = NOBODY, .connect = true }, &c);
        zombie = fork();
        assert_true(zombie >= 0);
        if (zombie == 0) {
                if (setresuid(NOBODY, NOBODY, NOBODY) < 0)
                        _exit(1);
                _exit(0);
        }
        /* exited and not reaped yet: a zombie */
        assert_int_equal(waitid(P_PID, (id_t) zombie, &si, WEXITED | WNOWAIT), 0);
        assert_int_equal(perf_target_process("/proc", &c.peer, zombie, NULL, &p, &r), PROTO_E_BAD_FIELD);
        (void) snprintf(expected, sizeof(expected), "process %d has exited", (int) zombie);
        assert_string_equal(r.reason, expected);
        /* reaped: the pid names nothing */
        assert_int_equal(waitpid(zombie, NULL, 0), zombie);
        assert_int_equal(perf_target_process("/proc", &c.peer, zombie, NULL, &p, &r), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(r.reason, expected));

        assert_int_equal(perf_target_process("/proc", &c.peer, -5, NULL, &p, &r), PROTO_E_BAD_FIELD);
        assert_int_equal(finish(&c), 0);
}

static int perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group, unsigned long flags) {
        return (int) syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* Two jobs in two real cgroups take turns on CPU 0, each spinning a known amount of CPU time; a
 * cgroup cpu-clock event on CPU 0 through each job's directory fd counts that job's time only. */
static void test_cgroup_counting(void **state) {
        static const long busy_msec[2] = { 400, 200 };
        const char *dirs[2] = { job_dir, other_job_dir };
        const char *jobs[2] = { JOB, OTHER_JOB };
        Caller callers[2], busy[2];
        int events[2];

        need_cgroups();
        for (int i = 0; i < 2; i++) {
                struct perf_event_attr attr = {
                        .type = PERF_TYPE_SOFTWARE,
                        .size = sizeof(attr),
                        .config = PERF_COUNT_SW_CPU_CLOCK,
                        .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                };
                Refusal r = {};
                int fd = -EBADF;

                spawn(&(CallerSpec) { .cgroup = dirs[i], .uid = NOBODY, .connect = true }, &callers[i]);
                assert_int_equal(perf_target_job_cgroup(cgroup_root, &callers[i].peer, jobs[i], &fd, &r), 0);
                events[i] = perf_event_open(&attr, fd, 0, -1, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC);
                if (events[i] < 0)
                        fprintf(stderr, "# perf_event_open of a cgroup event: %m\n");
                assert_true(events[i] >= 0);
                (void) close(fd);
        }
        for (int i = 0; i < 2; i++)
                spawn(&(CallerSpec) { .cgroup = dirs[i], .uid = NOBODY, .busy_msec = busy_msec[i] }, &busy[i]);
        for (int i = 0; i < 2; i++) {
                (void) close(busy[i].release);
                busy[i].release = -EBADF;
        }
        for (int i = 0; i < 2; i++) {
                struct rusage ru;
                uint64_t v[3];
                double counted, spent;
                int status;

                assert_int_equal(wait4(busy[i].pid, &status, 0, &ru), busy[i].pid);
                assert_int_equal(status, 0);
                busy[i].pid = -1;
                assert_int_equal(read(events[i], v, sizeof(v)), (ssize_t) sizeof(v));
                counted = (double) v[0] / 1e6;
                spent = (double) ru.ru_utime.tv_sec * 1e3 + (double) ru.ru_utime.tv_usec / 1e3 +
                        (double) ru.ru_stime.tv_sec * 1e3 + (double) ru.ru_stime.tv_usec / 1e3;
                fprintf(stderr, "# job %s: cpu-clock %.1f ms in its cgroup on CPU 0, its loop spent %.1f ms "
                        "(enabled %.1f ms, running %.1f ms)\n", jobs[i], counted, spent,
                        (double) v[1] / 1e6, (double) v[2] / 1e6);
                /* its own time (the loop and its start), not the other job's */
                assert_true(counted >= spent * 0.8 && counted <= spent * 1.2 + 20.0);
                (void) close(events[i]);
        }
        for (int i = 0; i < 2; i++)
                assert_int_equal(finish(&callers[i]), 0);
}

/* A process with more threads than PERF_PROCESS_THREADS_MAX is refused, not counted in part. */
static void test_process_too_many_threads(void **state) {
        Caller c;
        PerfProcess p;
        Refusal r = {};
        char expected[128];

        need_cgroups();
        spawn(&(CallerSpec) { .uid = NOBODY, .threads = PERF_PROCESS_THREADS_MAX, .connect = true }, &c);
        assert_int_equal(perf_target_process("/proc", &c.peer, 0, NULL, &p, &r), PROTO_E_LIMIT);
        (void) snprintf(expected, sizeof(expected), "process %d has more than %u threads", (int) c.pid,
                        PERF_PROCESS_THREADS_MAX);
        assert_non_null(strstr(r.reason, expected));
        assert_int_equal(finish(&c), 0);
}

/* The daemon serves as its own user, not root, after start-up: both scopes work from there. */
static void test_as_daemon_user(void **state) {
        Caller c;
        pid_t pid;
        int status;

        need_cgroups();
        spawn(&(CallerSpec) { .cgroup = job_dir, .uid = NOBODY, .threads = 1, .connect = true }, &c);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char job_path[256];
                PerfProcess p;
                Refusal r = {};
                int fd = -EBADF;

                if (setgroups(0, NULL) < 0 || setresgid(OTHER_UID, OTHER_UID, OTHER_UID) < 0 ||
                    setresuid(OTHER_UID, OTHER_UID, OTHER_UID) < 0)
                        _exit(90);
                if (perf_target_job_cgroup(cgroup_root, &c.peer, JOB, &fd, &r) != 0 || !same_dir(fd, job_dir))
                        _exit(91);
                if (perf_target_job_path(&c.peer, JOB, job_path, sizeof(job_path), &r) != 0)
                        _exit(92);
                if (perf_target_process("/proc", &c.peer, 0, job_path, &p, &r) != 0 || p.n_tids != 2 ||
                    !perf_target_process_alive(&p))
                        _exit(93);
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(finish(&c), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_job_cgroup_found),
                cmocka_unit_test(test_job_cgroup_refused),
                cmocka_unit_test(test_job_cgroup_symlink),
                cmocka_unit_test(test_job_cgroup_of_id),
                cmocka_unit_test(test_process_own),
                cmocka_unit_test(test_process_other_uid),
                cmocka_unit_test(test_process_exited),
                cmocka_unit_test(test_process_too_many_threads),
                cmocka_unit_test(test_as_daemon_user),
                cmocka_unit_test(test_cgroup_counting),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}

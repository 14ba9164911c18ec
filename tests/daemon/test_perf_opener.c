/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the perf opener on this machine's kernel (software events, a real cgroup, real fd
 * passing) and the kernel's perf driver over it. Run as root, as the opener is started by root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/perf-driver.h"
#include "backend/perf-opener.h"
#include "macro.h"
#include "perf/perf-attr.h"
#include "timing-attr.h"
#include "pmugate-limits.h"

#define READ_FORMAT (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)
/* The bit of CAP_PERFMON in /proc/PID/status masks. */
#define PERFMON_MASK (UINT64_C(1) << 38)

static const uint32_t software_only[] = { PERF_TYPE_SOFTWARE };
static unsigned verify_calls;

/* The opener's check as the tests give it: software counting events only. */
static int verify_software(const struct perf_event_attr *attr, const uint32_t *types, size_t n, char *reason,
                           size_t size) {
        verify_calls++;
        for (size_t i = 0; i < n; i++)
                if (attr->type == types[i] && attr->size == sizeof(*attr) && attr->sample_period == 0)
                        return 0;
        (void) snprintf(reason, size, "type %u is not allowed", attr->type);
        return -EPERM;
}

static uid_t nobody_uid(gid_t *ret_gid) {
        struct passwd *pw = getpwnam("nobody");

        *ret_gid = pw ? pw->pw_gid : 65534;
        return pw ? pw->pw_uid : 65534;
}

static PerfOpener *start(void) {
        PerfOpener *o = NULL;
        gid_t gid;
        uid_t uid = nobody_uid(&gid);

        assert_int_equal(perf_opener_start(verify_software, software_only, ELEMENTSOF(software_only), uid, gid,
                                           &o), 0);
        assert_non_null(o);
        assert_true(perf_opener_pid(o) > 0);
        return o;
}

static struct perf_event_attr software(uint64_t config, uint64_t read_format) {
        return (struct perf_event_attr) { .type = PERF_TYPE_SOFTWARE, .size = sizeof(struct perf_event_attr),
                                          .config = config, .read_format = read_format, .exclude_kernel = 1,
                                          .exclude_hv = 1 };
}

static void spin_ms(unsigned ms) {
        struct timespec start, now;

        assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start), 0);
        do
                assert_int_equal(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now), 0);
        while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

/* value, time_enabled, time_running of a single event */
static void read3(int fd, uint64_t v[3]) {
        assert_int_equal(read(fd, v, 3 * sizeof(uint64_t)), 3 * sizeof(uint64_t));
}

static void assert_advances(int fd) {
        uint64_t a[3], b[3];

        read3(fd, a);
        spin_ms(30);
        read3(fd, b);
        assert_true(b[0] > a[0]);
        assert_true(b[1] > a[1]);
        assert_true(b[2] > 0);
}

static uint64_t status_field(pid_t pid, const char *field) {
        char path[64], line[256];
        FILE *f;
        uint64_t v = UINT64_MAX;

        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':')
                        v = strtoull(line + strlen(field) + 1, NULL,
                                     strcmp(field, "NoNewPrivs") == 0 ? 10 : 16);
        (void) fclose(f);
        return v;
}

static void test_privileges_of_the_opener(void **state) {
        PerfOpener *o = start();
        pid_t pid = perf_opener_pid(o);
        char path[64], line[256], uid_line[256] = "";
        struct stat st;
        gid_t gid;
        uid_t uid = nobody_uid(&gid);
        FILE *f;
        int fd;

        (void) state;
        /* One round trip: the opener has dropped its privileges before it answers. */
        {
                struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, 0);

                struct perf_event_attr hw = { .type = PERF_TYPE_HARDWARE, .size = sizeof(hw) };

                fd = perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0);
                assert_true(fd >= 0);
                (void) close(fd);
                /* A refused request after it: once it is answered, the opener has closed its
                 * copy of the first fd. */
                assert_int_equal(perf_opener_open(o, &hw, getpid(), -1, -1, -1, 0), -EPERM);
        }
        assert_int_equal(status_field(pid, "CapEff"), PERFMON_MASK);
        assert_int_equal(status_field(pid, "CapPrm"), PERFMON_MASK);
        assert_int_equal(status_field(pid, "CapBnd"), PERFMON_MASK);
        assert_int_equal(status_field(pid, "CapInh"), 0);
        assert_int_equal(status_field(pid, "CapAmb"), 0);
        assert_int_equal(status_field(pid, "NoNewPrivs"), 1);
        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Uid:", 4) == 0)
                        (void) snprintf(uid_line, sizeof(uid_line), "%s", line);
        (void) fclose(f);
        (void) snprintf(line, sizeof(line), "Uid:\t%u\t%u\t%u\t%u\n", uid, uid, uid, uid);
        assert_string_equal(uid_line, line);
        /* Not dumpable: the kernel gives the files of its /proc directory to root, not to its
         * uid (the directory itself keeps the uid). */
        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_uid, 0);
        /* It kept no fd of ours: its socket and stdin, stdout, stderr. */
        (void) snprintf(path, sizeof(path), "/proc/%d/fd/4", (int) pid);
        assert_int_equal(access(path, F_OK), -1);
        perf_opener_stop(o);
}

static void test_task_clock_of_a_process(void **state) {
        PerfOpener *o = start();
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, READ_FORMAT);
        int fd;

        (void) state;
        fd = perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0);
        assert_true(fd >= 0);
        assert_int_equal(fcntl(fd, F_GETFD), FD_CLOEXEC);
        assert_advances(fd);
        (void) close(fd);
        perf_opener_stop(o);
}

static void test_cpu_clock_on_a_cpu(void **state) {
        PerfOpener *o = start();
        struct perf_event_attr attr = software(PERF_COUNT_SW_CPU_CLOCK, READ_FORMAT);
        int fd;

        (void) state;
        /* A CPU-wide event: perf_event_paranoid > 0 refuses it without CAP_PERFMON. */
        fd = perf_opener_open(o, &attr, -1, -1, 0, -1, 0);
        assert_true(fd >= 0);
        assert_advances(fd);
        (void) close(fd);
        perf_opener_stop(o);
}

static void test_group(void **state) {
        PerfOpener *o = start();
        struct perf_event_attr leader = software(PERF_COUNT_SW_TASK_CLOCK, READ_FORMAT | PERF_FORMAT_GROUP);
        struct perf_event_attr member = software(PERF_COUNT_SW_CONTEXT_SWITCHES,
                                                 READ_FORMAT | PERF_FORMAT_GROUP);
        uint64_t v[5];
        int lfd, mfd;

        (void) state;
        leader.disabled = 1;
        lfd = perf_opener_open(o, &leader, getpid(), -1, -1, -1, 0);
        assert_true(lfd >= 0);
        mfd = perf_opener_open(o, &member, getpid(), -1, -1, lfd, 0);
        assert_true(mfd >= 0);
        assert_int_equal(ioctl(lfd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP), 0);
        spin_ms(20);
        (void) usleep(1000);
        assert_int_equal(read(lfd, v, sizeof(v)), sizeof(v));
        assert_int_equal(v[0], 2);      /* nr: the member joined the leader's group */
        assert_true(v[1] > 0 && v[2] > 0);
        assert_true(v[3] > 0);          /* task-clock */
        (void) close(mfd);
        (void) close(lfd);
        perf_opener_stop(o);
}

/* The cgroup v2 directory of this process, opened from the v2 mount that mountinfo names. */
static int own_cgroup_dir(void) {
        char line[4096], mount[4096] = "", cg[4096] = "", path[8192];
        FILE *f = fopen("/proc/self/mountinfo", "re");

        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                char *sep = strstr(line, " - cgroup2 "), *fields[5], *save = NULL, *p = line;

                if (!sep || mount[0])
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(fields); i++, p = NULL)
                        fields[i] = strtok_r(p, " ", &save);
                (void) snprintf(mount, sizeof(mount), "%s", fields[4]);
        }
        (void) fclose(f);
        f = fopen("/proc/self/cgroup", "re");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        (void) snprintf(cg, sizeof(cg), "%s", line + 3);
                }
        (void) fclose(f);
        if (!mount[0] || !cg[0])
                return -ENOENT;
        (void) snprintf(path, sizeof(path), "%s%s", mount, cg);
        return open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
}

static void test_cgroup(void **state) {
        PerfOpener *o = start();
        struct perf_event_attr attr = software(PERF_COUNT_SW_CPU_CLOCK, READ_FORMAT);
        cpu_set_t was, cpu0;
        int dir, fd;

        (void) state;
        dir = own_cgroup_dir();
        if (dir < 0) {
                perf_opener_stop(o);
                skip();
        }
        fd = perf_opener_open(o, &attr, 0, dir, 0, -1, PERF_FLAG_PID_CGROUP);
        assert_true(fd >= 0);
        /* The cgroup's tasks on CPU 0: this one, pinned there. */
        assert_int_equal(sched_getaffinity(0, sizeof(was), &was), 0);
        CPU_ZERO(&cpu0);
        CPU_SET(0, &cpu0);
        assert_int_equal(sched_setaffinity(0, sizeof(cpu0), &cpu0), 0);
        assert_advances(fd);
        assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
        /* A cgroup needs its directory fd and the flag together. */
        assert_int_equal(perf_opener_open(o, &attr, 0, dir, 0, -1, 0), -EINVAL);
        assert_int_equal(perf_opener_open(o, &attr, 0, -1, 0, -1, PERF_FLAG_PID_CGROUP), -EINVAL);
        (void) close(fd);
        (void) close(dir);
        perf_opener_stop(o);
}

static void test_refusals(void **state) {
        PerfOpener *o = start();
        struct perf_event_attr hw = { .type = PERF_TYPE_HARDWARE, .size = sizeof(hw),
                                      .config = PERF_COUNT_HW_CPU_CYCLES };
        struct perf_event_attr sampling = software(PERF_COUNT_SW_TASK_CLOCK, 0);
        struct perf_event_attr ok = software(PERF_COUNT_SW_TASK_CLOCK, 0);
        unsigned before;

        (void) state;
        sampling.sample_period = 1000;
        assert_int_equal(perf_opener_open(o, &hw, getpid(), -1, -1, -1, 0), -EPERM);
        assert_int_equal(perf_opener_open(o, &sampling, getpid(), -1, -1, -1, 0), -EPERM);
        /* Flags it does not pass are refused before anything is sent. */
        before = verify_calls;
        assert_int_equal(perf_opener_open(o, &ok, getpid(), -1, -1, -1, PERF_FLAG_FD_OUTPUT), -EINVAL);
        assert_int_equal(perf_opener_open(o, &ok, getpid(), -1, -1, -1, PERF_FLAG_FD_NO_GROUP), -EINVAL);
        assert_int_equal(verify_calls, before);
        /* The kernel's own errors come back as they are. */
        assert_int_equal(perf_opener_open(o, &ok, -1, -1, -1, -1, 0), -EINVAL);
        perf_opener_stop(o);
}

/* The daemon's end of the opener's socket: the one fd perf_opener_start() added. */
static int started_socket(PerfOpener **ret) {
        bool before[256] = {};
        int found = -1;

        for (int fd = 0; fd < 256; fd++)
                before[fd] = fcntl(fd, F_GETFD) >= 0;
        *ret = start();
        for (int fd = 0; fd < 256; fd++)
                if (!before[fd] && fcntl(fd, F_GETFD) >= 0) {
                        assert_int_equal(found, -1);
                        found = fd;
                }
        assert_true(found >= 0);
        return found;
}

/* Sends size bytes of msg with n_fds fds (each a copy of fd) as one message and returns the
 * opener's error; an fd it sends back is closed. */
static int raw_request(int sock, const void *msg, size_t size, int fd, size_t n_fds) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        int fds[4] = { fd, fd, fd, fd };
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = size };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        PerfOpenerReply reply = { .error = 1 };
        struct iovec riov = { .iov_base = &reply, .iov_len = sizeof(reply) };
        struct msghdr rh = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        struct cmsghdr *c;

        if (n_fds > 0) {
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        assert_int_equal(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t) size);
        memset(&control, 0, sizeof(control));
        assert_int_equal(recvmsg(sock, &rh, MSG_CMSG_CLOEXEC), sizeof(reply));
        for (c = CMSG_FIRSTHDR(&rh); c; c = CMSG_NXTHDR(&rh, c)) {
                int got;

                assert_int_equal(c->cmsg_type, SCM_RIGHTS);
                assert_int_equal(c->cmsg_len, CMSG_LEN(sizeof(int)));
                memcpy(&got, CMSG_DATA(c), sizeof(int));
                assert_int_equal(reply.error, 0);
                (void) close(got);
        }
        return reply.error;
}

static void test_hostile_messages(void **state) {
        PerfOpener *o = NULL;
        int sock = started_socket(&o), dir = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC), fd;
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, 0);
        PerfOpenerRequest req = { .pid = getpid(), .cpu = -1 }, bad;
        char big[sizeof(req) + 8] = {};

        (void) state;
        assert_true(dir >= 0);
        memcpy(req.attr, &attr, sizeof(attr));
        assert_int_equal(raw_request(sock, &req, sizeof(req), -1, 0), 0);
        /* Shorter or longer than a request. */
        assert_int_equal(raw_request(sock, &req, sizeof(req) - 1, -1, 0), -EINVAL);
        memcpy(big, &req, sizeof(req));
        assert_int_equal(raw_request(sock, big, sizeof(big), -1, 0), -EINVAL);
        /* More fds than it takes, or other fds than the request names. */
        bad = req;
        bad.fds = PERF_OPENER_FD_GROUP | PERF_OPENER_FD_CGROUP;
        bad.flags = PERF_FLAG_PID_CGROUP;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), dir, 3), -EINVAL);
        assert_int_equal(raw_request(sock, &req, sizeof(req), dir, 1), -EINVAL);
        bad = req;
        bad.fds = PERF_OPENER_FD_GROUP;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), -1, 0), -EINVAL);
        bad.fds = 1U << 7;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), dir, 1), -EINVAL);
        /* Flags it does not pass, a cgroup without its fd or its fd without the flag, a
         * cgroup fd that is no directory, a reserved field set. */
        bad = req;
        bad.flags = PERF_FLAG_FD_OUTPUT;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), -1, 0), -EINVAL);
        bad.flags = PERF_FLAG_PID_CGROUP;
        bad.cpu = 0;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), -1, 0), -EINVAL);
        bad.flags = 0;
        bad.fds = PERF_OPENER_FD_CGROUP;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), dir, 1), -EINVAL);
        bad.flags = PERF_FLAG_PID_CGROUP;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), sock, 1), -EINVAL);
        bad = req;
        bad.reserved = 1;
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), -1, 0), -EINVAL);
        /* The attr is its own to check: a size other than the daemon's is refused. */
        bad = req;
        attr.size = sizeof(attr) - 8;
        memcpy(bad.attr, &attr, sizeof(attr));
        assert_int_equal(raw_request(sock, &bad, sizeof(bad), -1, 0), -EPERM);

        /* It still serves, and kept none of the fds it was sent. */
        assert_int_equal(raw_request(sock, &req, sizeof(req), -1, 0), 0);
        fd = perf_opener_open(o, &(struct perf_event_attr) { .type = PERF_TYPE_HARDWARE, .size = sizeof(attr) },
                              getpid(), -1, -1, -1, 0);
        assert_int_equal(fd, -EPERM);
        {
                char path[64];

                (void) snprintf(path, sizeof(path), "/proc/%d/fd/4", (int) perf_opener_pid(o));
                assert_int_equal(access(path, F_OK), -1);
        }
        (void) close(dir);
        perf_opener_stop(o);
}

/* The fds the process pid holds. */
static size_t fds_of(pid_t pid) {
        char path[64];
        size_t n = 0;
        DIR *d;

        (void) snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        d = opendir(path);
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                n += de->d_name[0] != '.';
        (void) closedir(d);
        return n;
}

/* A batch of n entries of req, the entries' fds as n_fds copies of fd, header fields as given;
 * size: the message's bytes (the whole batch when 0). Returns the reply's size; its errors go
 * to errors (when it is a batch reply), the fds that came are counted in *ret_n_fds and closed. */
static size_t raw_batch(int sock, uint32_t magic, uint32_t n, const PerfOpenerRequest *req, size_t size, int fd,
                        size_t n_fds, int32_t *errors, size_t *ret_n_fds) {
        size_t whole = sizeof(PerfOpenerBatchHeader) + n * sizeof(*req);
        PerfOpenerBatchHeader header = { .magic = magic, .n = n };
        char *msg = calloc(1, whole), reply[sizeof(header) + PERF_OPENER_BATCH_MAX * sizeof(int32_t)];
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * PERF_OPENER_BATCH_MAX)];
        } control = {};
        int fds[PERF_OPENER_BATCH_MAX];
        struct iovec iov, riov = { .iov_base = reply, .iov_len = sizeof(reply) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct msghdr rh = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        struct cmsghdr *c;
        ssize_t got;

        assert_non_null(msg);
        assert_true(n_fds <= PERF_OPENER_BATCH_MAX);
        memcpy(msg, &header, sizeof(header));
        for (size_t i = 0; i < n; i++)
                memcpy(msg + sizeof(header) + i * sizeof(*req), req, sizeof(*req));
        iov = (struct iovec) { .iov_base = msg, .iov_len = size ? size : whole };
        for (size_t i = 0; i < n_fds; i++)
                fds[i] = fd;
        if (n_fds > 0) {
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        assert_int_equal(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t) iov.iov_len);
        free(msg);
        memset(&control, 0, sizeof(control));
        got = recvmsg(sock, &rh, MSG_CMSG_CLOEXEC);
        assert_true(got > 0);
        *ret_n_fds = 0;
        for (c = CMSG_FIRSTHDR(&rh); c; c = CMSG_NXTHDR(&rh, c)) {
                assert_int_equal(c->cmsg_type, SCM_RIGHTS);
                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                        int one;

                        memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        (void) close(one);
                        (*ret_n_fds)++;
                }
        }
        if ((size_t) got >= sizeof(header) + sizeof(int32_t)) {
                memcpy(&header, reply, sizeof(header));
                assert_int_equal(header.magic, PERF_OPENER_BATCH_MAGIC);
                assert_int_equal((size_t) got, sizeof(header) + header.n * sizeof(int32_t));
                memcpy(errors, reply + sizeof(header), header.n * sizeof(int32_t));
        } else if (got == sizeof(int32_t))
                memcpy(errors, reply, sizeof(int32_t));
        return (size_t) got;
}

static void test_batch(void **state) {
        PerfOpener *o = start();
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, READ_FORMAT);
        struct perf_event_attr hardware = { .type = PERF_TYPE_HARDWARE, .size = sizeof(attr) };
        struct perf_event_attr leader = software(PERF_COUNT_SW_TASK_CLOCK, READ_FORMAT | PERF_FORMAT_GROUP);
        struct perf_event_attr member = software(PERF_COUNT_SW_CONTEXT_SWITCHES, READ_FORMAT | PERF_FORMAT_GROUP);
        PerfOpenerEvent events[PERF_OPENER_BATCH_MAX + 1];
        int fds[PERF_OPENER_BATCH_MAX + 1], leaders[3];
        uint64_t v[5];

        (void) state;
        /* A full batch: every entry checked, every fd in one answer. */
        for (size_t i = 0; i < ELEMENTSOF(events); i++)
                events[i] = (PerfOpenerEvent) { .attr = &attr, .pid = getpid(), .cgroup_fd = -1, .cpu = -1,
                                                .group_fd = -1 };
        events[7].attr = &hardware;
        assert_int_equal(perf_opener_open_batch(o, events, PERF_OPENER_BATCH_MAX, fds), 0);
        assert_int_equal(fds[7], -EPERM);
        for (size_t i = 0; i < PERF_OPENER_BATCH_MAX; i++)
                if (i != 7) {
                        assert_true(fds[i] >= 0);
                        assert_advances(fds[i]);
                        (void) close(fds[i]);
                }
        /* Too many, none, or bad flags: refused before anything is sent. */
        assert_int_equal(perf_opener_open_batch(o, events, PERF_OPENER_BATCH_MAX + 1, fds), -EINVAL);
        assert_int_equal(perf_opener_open_batch(o, events, 0, fds), -EINVAL);
        events[0].flags = PERF_FLAG_FD_OUTPUT;
        assert_int_equal(perf_opener_open_batch(o, events, 1, fds), -EINVAL);

        /* Groups: the leaders in one batch, then the members with their leaders' fds. */
        leader.disabled = 1;
        for (size_t i = 0; i < 3; i++)
                events[i] = (PerfOpenerEvent) { .attr = &leader, .pid = getpid(), .cgroup_fd = -1, .cpu = -1,
                                                .group_fd = -1 };
        assert_int_equal(perf_opener_open_batch(o, events, 3, leaders), 0);
        for (size_t i = 0; i < 3; i++) {
                assert_true(leaders[i] >= 0);
                events[i] = (PerfOpenerEvent) { .attr = &member, .pid = getpid(), .cgroup_fd = -1, .cpu = -1,
                                                .group_fd = leaders[i] };
        }
        assert_int_equal(perf_opener_open_batch(o, events, 3, fds), 0);
        for (size_t i = 0; i < 3; i++) {
                assert_true(fds[i] >= 0);
                assert_int_equal(ioctl(leaders[i], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP), 0);
        }
        spin_ms(10);
        for (size_t i = 0; i < 3; i++) {
                assert_int_equal(read(leaders[i], v, sizeof(v)), sizeof(v));
                assert_int_equal(v[0], 2);      /* nr: each member joined its own leader */
                (void) close(fds[i]);
                (void) close(leaders[i]);
        }
        perf_opener_stop(o);
}

static void test_hostile_batches(void **state) {
        PerfOpener *o = NULL;
        int sock = started_socket(&o), dir = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, 0);
        PerfOpenerRequest req = { .pid = getpid(), .cpu = -1 }, grouped;
        int32_t errors[PERF_OPENER_BATCH_MAX];
        size_t n_fds, opener_fds, whole = sizeof(PerfOpenerBatchHeader) + 2 * sizeof(req);

        (void) state;
        assert_true(dir >= 0);
        memcpy(req.attr, &attr, sizeof(attr));
        opener_fds = fds_of(perf_opener_pid(o));
        /* Well formed: an answer per entry, an fd per 0. */
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &req, 0, -1, 0, errors, &n_fds),
                         sizeof(PerfOpenerBatchHeader) + 2 * sizeof(int32_t));
        assert_int_equal(errors[0], 0);
        assert_int_equal(errors[1], 0);
        assert_int_equal(n_fds, 2);
        /* fds that do not match the entries' counts: fewer, more, or where none is named. */
        grouped = req;
        grouped.fds = PERF_OPENER_FD_GROUP;
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &grouped, 0, -1, 0, errors, &n_fds),
                         sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &grouped, 0, dir, 1, errors, &n_fds),
                         sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &grouped, 0, dir, 3, errors, &n_fds),
                         sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &req, 0, dir, 2, errors, &n_fds),
                         sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(n_fds, 0);
        /* The counts match but the entry's fd is no perf event: it fails with the kernel's
         * errno, in a batch answer. */
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 1, &grouped, 0, dir, 1, errors, &n_fds),
                         sizeof(PerfOpenerBatchHeader) + sizeof(int32_t));
        assert_true(errors[0] < 0);
        assert_int_equal(n_fds, 0);
        /* Too many, none, a wrong magic. */
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, PERF_OPENER_BATCH_MAX + 1, &req, 0, -1, 0, errors,
                                   &n_fds), sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 0, &req, 0, -1, 0, errors, &n_fds),
                         sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC + 1, 2, &req, 0, -1, 0, errors, &n_fds),
                         sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        /* Truncated: the header counts more entries than came, or a part of one. */
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &req, whole - sizeof(req), -1, 0, errors,
                                   &n_fds), sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &req, whole - 1, -1, 0, errors, &n_fds),
                         sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 2, &req, sizeof(PerfOpenerBatchHeader) - 1, -1, 0,
                                   errors, &n_fds), sizeof(int32_t));
        assert_int_equal(errors[0], -EINVAL);
        /* A single request with more fds than any takes. */
        assert_int_equal(raw_request(sock, &req, sizeof(req), dir, 3), -EINVAL);

        /* It still serves, one at a time and in batches, and kept none of the fds it was sent. */
        assert_int_equal(raw_request(sock, &req, sizeof(req), -1, 0), 0);
        assert_int_equal(raw_batch(sock, PERF_OPENER_BATCH_MAGIC, 1, &req, 0, -1, 0, errors, &n_fds),
                         sizeof(PerfOpenerBatchHeader) + sizeof(int32_t));
        assert_int_equal(errors[0], 0);
        /* The opener closes its copies of what it sent after the answer: once it answered a
         * request that opens nothing, they are closed. */
        grouped = req;
        grouped.reserved = 1;
        assert_int_equal(raw_request(sock, &grouped, sizeof(grouped), -1, 0), -EINVAL);
        assert_int_equal(fds_of(perf_opener_pid(o)), opener_fds);
        (void) close(dir);
        perf_opener_stop(o);
}

/* As the shipped unit's SystemCallFilter= without perf_event_open does: EPERM for that call. */
static int deny_perf_event_open(void) {
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(filter), .filter = filter };

        return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static void test_probe(void **state) {
        PerfOpener *o = start();
        int status = -1;
        pid_t pid;

        (void) state;
        assert_int_equal(perf_opener_probe_error(o), 0);
        perf_opener_stop(o);

        /* Under a filter that leaves the call out, start-up learns it from the probe. */
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, 0);
                gid_t gid;
                uid_t uid = nobody_uid(&gid);
                int r;

                if (deny_perf_event_open() < 0)
                        _exit(10);
                if (perf_opener_start(verify_software, software_only, 1, uid, gid, &o) < 0)
                        _exit(11);
                if (perf_opener_probe_error(o) != -EPERM)
                        _exit(12);
                r = perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0);
                perf_opener_stop(o);
                _exit(r == -EPERM ? 0 : 13);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_killed_opener(void **state) {
        PerfOpener *o = start();
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, 0);
        siginfo_t si = {};
        int fd;

        (void) state;
        fd = perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0);
        assert_true(fd >= 0);
        (void) close(fd);
        assert_int_equal(kill(perf_opener_pid(o), SIGKILL), 0);
        assert_int_equal(waitid(P_PID, (id_t) perf_opener_pid(o), &si, WEXITED | WNOWAIT), 0);
        assert_int_equal(perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0), -EPIPE);
        assert_int_equal(perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0), -EPIPE);
        assert_null(perf_opener_stop(o));
}

static void test_opener_ends_with_its_socket(void **state) {
        PerfOpener *o = start();
        pid_t pid = perf_opener_pid(o);

        (void) state;
        assert_null(perf_opener_stop(o));
        assert_int_equal(kill(pid, 0), -1);
        assert_int_equal(errno, ESRCH);
}

static void driver_round(PerfDriver *d) {
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, READ_FORMAT);
        uint64_t a[3], b[3], c[3];
        int h, exported;

        attr.disabled = 1;
        h = perf_driver_open(d, &attr, getpid(), -1, -1, -1, 0);
        assert_true(h >= 0);
        assert_int_equal(perf_driver_enable(d, h, true), 0);
        spin_ms(20);
        assert_int_equal(perf_driver_read(d, h, a, sizeof(a)), sizeof(a));
        assert_true(a[0] > 0);
        assert_int_equal(perf_driver_disable(d, h, false), 0);
        assert_int_equal(perf_driver_read(d, h, b, sizeof(b)), sizeof(b));
        spin_ms(20);
        assert_int_equal(perf_driver_read(d, h, c, sizeof(c)), sizeof(c));
        assert_int_equal(b[0], c[0]);   /* disabled: it stopped counting */
        exported = perf_driver_export_fd(d, h);
        assert_true(exported > 2 && exported != h);
        assert_int_equal(fcntl(exported, F_GETFD), FD_CLOEXEC);
        (void) close(exported);
        perf_driver_close(d, h);
        assert_int_equal(fcntl(h, F_GETFD), -1);
}

static void test_kernel_driver_through_the_opener(void **state) {
        PerfOpener *o = start();
        PerfDriver *d = NULL;

        (void) state;
        assert_int_equal(perf_driver_kernel_new(o, &d), 0);
        driver_round(d);
        assert_null(perf_driver_free(d));
        perf_opener_stop(o);
}

static void test_kernel_driver_in_process(void **state) {
        PerfDriver *d = NULL;

        (void) state;
        assert_int_equal(perf_driver_kernel_new(NULL, &d), 0);
        driver_round(d);
        assert_null(perf_driver_free(d));
        assert_null(perf_driver_free(NULL));
}

/* ---- the opener as a service: pmugated's side of its socket ---- */

/* A listening SOCK_SEQPACKET socket at a fresh path under /tmp, as the opener's socket unit has. */
static int listen_at(char *path, size_t size) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        (void) snprintf(path, size, "/tmp/test-perf-opener-%d.socket", (int) getpid());
        (void) unlink(path);
        (void) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(fd, 4), 0);
        return fd;
}

/* One run of the opener service: accepts one connection and serves it until it closes. */
static pid_t serve_one(int listen_fd) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

                _exit(fd >= 0 && perf_opener_serve(fd, verify_software, software_only, ELEMENTSOF(software_only)) == 0
                      ? EXIT_SUCCESS : EXIT_FAILURE);
        }
        return pid;
}

static void kill_and_reap(pid_t pid) {
        (void) kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static void test_remote_opener(void **state) {
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, READ_FORMAT);
        char path[108];
        int listen_fd = listen_at(path, sizeof(path));
        PerfOpener *o = NULL;
        pid_t first = serve_one(listen_fd), second;
        int fd;

        (void) state;
        assert_int_equal(perf_opener_new_remote(path, &o), 0);
        /* Not connected yet: nothing is opened before the daemon is the service's user. */
        assert_int_equal(perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0), -ENOTCONN);
        assert_int_equal(perf_opener_connect(o), 0);
        assert_int_equal(perf_opener_connect(o), 0);
        assert_int_equal(perf_opener_probe_error(o), 0);
        assert_int_equal(perf_opener_pid(o), 0);
        fd = perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0);
        assert_true(fd >= 0);
        assert_advances(fd);
        (void) close(fd);
        attr.type = PERF_TYPE_TRACEPOINT;
        assert_int_equal(perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0), -EPERM);
        attr.type = PERF_TYPE_SOFTWARE;

        /* The service dies and its socket starts it again: the next open connects again. */
        kill_and_reap(first);
        second = serve_one(listen_fd);
        fd = perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0);
        assert_true(fd >= 0);
        assert_advances(fd);
        (void) close(fd);

        /* It dies again and nothing listens any more: reported gone, and it stays gone. */
        kill_and_reap(second);
        (void) close(listen_fd);
        (void) unlink(path);
        assert_int_equal(perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0), -EPIPE);
        assert_int_equal(perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0), -EPIPE);
        /* Stopping a remote opener closes the connection only: it is not our child. */
        assert_null(perf_opener_stop(o));
}

/* The opener with the daemon's own check (perf_attr_verify()) opens timing_attr_fill()'s
 * sampling attr, IP mode on a CPU for this process, and refuses it with any one bit of any
 * byte but the period changed: each of those is a sampling attr the daemon never built. */
static void check_timing_attrs(PerfOpener *o) {
        const size_t period_at = offsetof(struct perf_event_attr, sample_period);
        struct perf_event_attr good, bad;
        int fd;

        timing_attr_fill(&good, TIMING_MODE_IPS, 100003, false);
        fd = perf_opener_open(o, &good, getpid(), -1, 0, -1, 0);
        assert_true(fd >= 0);
        (void) close(fd);
        for (size_t i = 0; i < sizeof(good); i++) {
                if (i >= period_at && i < period_at + sizeof(uint64_t))
                        continue;
                bad = good;
                ((uint8_t *) &bad)[i] ^= 0x01;
                assert_int_equal(perf_opener_open(o, &bad, getpid(), -1, 0, -1, 0), -EPERM);
                bad = good;
                ((uint8_t *) &bad)[i] ^= 0x80;
                assert_int_equal(perf_opener_open(o, &bad, getpid(), -1, 0, -1, 0), -EPERM);
        }
        timing_attr_fill(&bad, TIMING_MODE_IPS, 1, false);
        assert_int_equal(perf_opener_open(o, &bad, getpid(), -1, 0, -1, 0), -EPERM);
}

static const uint32_t kernel_types[] = { PERF_TYPE_SOFTWARE };

static void test_timing_attr_forked_opener(void **state) {
        PerfOpener *o = NULL;
        gid_t gid;
        uid_t uid = nobody_uid(&gid);

        (void) state;
        assert_int_equal(perf_opener_start(perf_attr_verify, kernel_types, ELEMENTSOF(kernel_types), uid, gid, &o), 0);
        check_timing_attrs(o);
        perf_opener_stop(o);
}

static void test_timing_attr_remote_opener(void **state) {
        char path[108];
        int listen_fd = listen_at(path, sizeof(path));
        PerfOpener *o = NULL;
        pid_t pid = fork();

        (void) state;
        assert_true(pid >= 0);
        if (pid == 0) {
                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

                _exit(fd >= 0 && perf_opener_serve(fd, perf_attr_verify, kernel_types, ELEMENTSOF(kernel_types)) == 0
                      ? EXIT_SUCCESS : EXIT_FAILURE);
        }
        assert_int_equal(perf_opener_new_remote(path, &o), 0);
        assert_int_equal(perf_opener_connect(o), 0);
        check_timing_attrs(o);
        assert_null(perf_opener_stop(o));
        kill_and_reap(pid);
        (void) close(listen_fd);
        (void) unlink(path);
}

static void test_remote_opener_missing(void **state) {
        struct perf_event_attr attr = software(PERF_COUNT_SW_TASK_CLOCK, 0);
        PerfOpener *o = NULL;

        (void) state;
        assert_int_equal(perf_opener_new_remote("perf-opener.socket", &o), -EINVAL);
        assert_null(o);
        assert_int_equal(perf_opener_new_remote("/nonexistent/perf-opener.socket", &o), 0);
        assert_int_equal(perf_opener_connect(o), -ENOENT);
        assert_int_equal(perf_opener_probe_error(o), -ENOENT);
        assert_int_equal(perf_opener_open(o, &attr, getpid(), -1, -1, -1, 0), -EPIPE);
        assert_null(perf_opener_stop(o));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_privileges_of_the_opener),
                cmocka_unit_test(test_task_clock_of_a_process),
                cmocka_unit_test(test_cpu_clock_on_a_cpu),
                cmocka_unit_test(test_group),
                cmocka_unit_test(test_cgroup),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_hostile_messages),
                cmocka_unit_test(test_batch),
                cmocka_unit_test(test_hostile_batches),
                cmocka_unit_test(test_probe),
                cmocka_unit_test(test_killed_opener),
                cmocka_unit_test(test_opener_ends_with_its_socket),
                cmocka_unit_test(test_kernel_driver_through_the_opener),
                cmocka_unit_test(test_kernel_driver_in_process),
                cmocka_unit_test(test_remote_opener),
                cmocka_unit_test(test_remote_opener_missing),
                cmocka_unit_test(test_timing_attr_forked_opener),
                cmocka_unit_test(test_timing_attr_remote_opener),
        };

        if (geteuid() != 0) {
                (void) fprintf(stderr, "test_perf_opener needs root: the opener is started by root\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}

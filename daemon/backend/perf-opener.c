/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf opener: a forked process with CAP_PERFMON alone that opens perf events for the server
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/perf-opener.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"

#define OPENER_FDS_MAX 2U
/* The flags the opener passes on; PERF_FLAG_FD_CLOEXEC is always added. */
#define OPENER_FLAGS (PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP)
/* The opener's end of the socketpair in the child: every fd above it is closed. */
#define OPENER_CHILD_FD 3

struct PerfOpener {
        pid_t pid;      /* forked: our child; 0 for the service, whose socket's peer credentials
                         * are those of whoever listens on it (systemd), not the opener's */
        int fd;         /* -1 while a connected opener is not connected */
        char *path;     /* the opener service's socket; NULL for a forked opener */
        bool dead;      /* stopped answering: every open fails with -EPIPE, logged once */
        int probe_error; /* what perf_event_open() answered the opener when it was ready, or why
                          * the service's socket could not be reached */
};

static void close_fds(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        (void) close(fds[i]);
}

/* The fds one message carries at most: a batch's group and cgroup fds, or a batch reply's. */
#define MESSAGE_FDS_MAX MAX(PERF_OPENER_BATCH_FDS_MAX, PERF_OPENER_BATCH_MAX)
#define BATCH_REQUEST_SIZE_MAX (sizeof(PerfOpenerBatchHeader) + PERF_OPENER_BATCH_MAX * sizeof(PerfOpenerRequest))

/* Reads one message of at most max_size bytes (its size in *ret_size) and at most max_fds fds
 * in SCM_RIGHTS. Anything else (a longer message, other control data, more fds, truncated
 * control data) is refused with -EBADMSG, closing whatever fds came. Returns 1, 0 at end of
 * file, or -errno. */
static int receive_message(int fd, void *buf, size_t max_size, size_t *ret_size, int *fds, size_t max_fds,
                           size_t *ret_n_fds) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * MESSAGE_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = max_size };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = CMSG_SPACE(sizeof(int) * max_fds) };
        size_t n_fds = 0;
        bool bad = false;
        ssize_t n;

        if (max_fds > MESSAGE_FDS_MAX)
                return -EINVAL;
        memset(&control, 0, sizeof(control));
        do
                n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0 && mh.msg_controllen == 0)
                return 0;
        for (struct cmsghdr *c = mh.msg_controllen ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
                        bad = true;
                        continue;
                }
                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                        int got;

                        memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (n_fds < max_fds)
                                fds[n_fds++] = got;
                        else {
                                (void) close(got);
                                bad = true;
                        }
                }
        }
        if (bad || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                close_fds(fds, n_fds);
                return -EBADMSG;
        }
        *ret_size = (size_t) n;
        *ret_n_fds = n_fds;
        return 1;
}

/* One message of exactly size bytes, else -EBADMSG; as receive_message(). */
static int receive_exact(int fd, void *buf, size_t size, int *fds, size_t max_fds, size_t *ret_n_fds) {
        size_t got = 0, n_fds = 0;
        int r;

        r = receive_message(fd, buf, size, &got, fds, max_fds, &n_fds);
        if (r <= 0)
                return r;
        if (got != size) {
                close_fds(fds, n_fds);
                return -EBADMSG;
        }
        *ret_n_fds = n_fds;
        return 1;
}

static int send_with_fds(int fd, const void *buf, size_t size, const int *fds, size_t n_fds) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * MESSAGE_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = (void *) buf, .iov_len = size };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (n_fds > MESSAGE_FDS_MAX)
                return -EINVAL;
        if (n_fds > 0) {
                struct cmsghdr *c;

                memset(&control, 0, sizeof(control));
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        do
                n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == size ? 0 : -EIO;
}

/* ---- the opener's side ---- */

static void cap_freep(cap_t *c) {
        if (*c)
                (void) cap_free(*c);
}

/* A capability mask line of /proc/self/status ("CapEff:\t0000004000000000"). */
static int status_mask(const char *field, uint64_t *ret) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        size_t len = strlen(field);

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, field, len) == 0 && line[len] == ':') {
                        char *end;

                        errno = 0;
                        *ret = strtoull(line + len + 1, &end, 16);
                        if (errno != 0 || end == line + len + 1 || (*end != '\n' && *end != '\0'))
                                return -EBADMSG;
                        return 0;
                }
        return -ENOENT;
}

/* What the opener may keep: CAP_PERFMON, when it had it; nothing else anywhere. The bounding
 * set only when the opener could empty it (root, or CAP_SETPCAP): a daemon started without
 * either keeps the bounding set it was given, and no_new_privs keeps it from gaining any. */
static int verify_capabilities(uint64_t keep, bool bounded) {
        static const char *const empty[] = { "CapInh", "CapAmb" };
        static const char *const kept[] = { "CapPrm", "CapEff", "CapBnd" };
        uint64_t v;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(empty); i++) {
                r = status_mask(empty[i], &v);
                if (r < 0)
                        return log_error_errno(r, "Perf opener: cannot read %s of /proc/self/status", empty[i]);
                if (v != 0)
                        return log_error_errno(EPERM, "Perf opener: %s is %016" PRIx64 ", not empty",
                                               empty[i], v);
        }
        for (size_t i = 0; i < ELEMENTSOF(kept); i++) {
                r = status_mask(kept[i], &v);
                if (r < 0)
                        return log_error_errno(r, "Perf opener: cannot read %s of /proc/self/status", kept[i]);
                if (strcmp(kept[i], "CapBnd") == 0 && !bounded)
                        continue;
                if (v & ~keep)
                        return log_error_errno(EPERM, "Perf opener: %s is %016" PRIx64
                                               ", more than CAP_PERFMON", kept[i], v);
        }
        return 0;
}

static bool have_capability(cap_value_t cap, cap_flag_t flag) {
        _cleanup_(cap_freep) cap_t now = cap_get_proc();
        cap_flag_value_t v = CAP_CLEAR;

        return now && cap_get_flag(now, cap, flag, &v) == 0 && v == CAP_SET;
}

int perf_opener_drop_privileges(uid_t uid, gid_t gid, uint64_t *ret_keep) {
        _cleanup_(cap_freep) cap_t caps = NULL;
        cap_value_t perfmon = CAP_PERFMON;
        bool root = geteuid() == 0, keep = have_capability(CAP_PERFMON, CAP_PERMITTED);
        bool bounded = root || have_capability(CAP_SETPCAP, CAP_EFFECTIVE);
        int r;

        if (root && uid == 0)
                return log_error_errno(EINVAL, "Perf opener: refusing to run as root");
        if (cap_reset_ambient() < 0 && errno != EINVAL)
                return log_error_errno(errno, "Perf opener: cannot clear the ambient capability set");
        if (bounded)
                for (cap_value_t cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
                        if (cap != CAP_PERFMON && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) > 0 &&
                            prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
                                return log_error_errno(errno, "Perf opener: cannot drop capability %d from the "
                                                       "bounding set", (int) cap);
        if (root) {
                /* Without KEEPCAPS the switch away from uid 0 empties the permitted set. */
                if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                        return log_error_errno(errno, "Perf opener: PR_SET_KEEPCAPS failed");
                if (setgroups(0, NULL) < 0)
                        return log_error_errno(errno, "Perf opener: setgroups() failed");
                if (setresgid(gid, gid, gid) < 0)
                        return log_error_errno(errno, "Perf opener: setresgid(%u) failed", (unsigned) gid);
                if (setresuid(uid, uid, uid) < 0)
                        return log_error_errno(errno, "Perf opener: setresuid(%u) failed", (unsigned) uid);
                if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
                        return log_error_errno(errno, "Perf opener: clearing PR_SET_KEEPCAPS failed");
        }

        caps = cap_init();
        if (!caps)
                return log_error_errno(ENOMEM, "Perf opener: cannot allocate capability sets");
        if (keep && (cap_set_flag(caps, CAP_PERMITTED, 1, &perfmon, CAP_SET) < 0 ||
                     cap_set_flag(caps, CAP_EFFECTIVE, 1, &perfmon, CAP_SET) < 0))
                return log_error_errno(errno, "Perf opener: cannot build its capability sets");
        if (cap_set_proc(caps) < 0)
                return log_error_errno(errno, "Perf opener: cannot set its capabilities");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(errno, "Perf opener: cannot set no_new_privs");
        /* Nobody of its uid may ptrace it or read its memory; changing uid may have reset this. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return log_error_errno(errno, "Perf opener: PR_SET_DUMPABLE failed");

        *ret_keep = keep ? UINT64_C(1) << CAP_PERFMON : 0;
        r = verify_capabilities(*ret_keep, bounded);
        if (r < 0)
                return r;
        if (root && (setuid(0) == 0 || geteuid() == 0))
                return log_error_errno(EPERM, "Perf opener: could regain root");
        return 0;
}

static size_t request_fds(const PerfOpenerRequest *req) {
        return !!(req->fds & PERF_OPENER_FD_GROUP) + !!(req->fds & PERF_OPENER_FD_CGROUP);
}

static int opener_handle(const PerfOpenerRequest *req, const int *fds, size_t n_fds, PerfAttrVerify verify,
                         const uint32_t *types, size_t n_types) {
        struct perf_event_attr attr;
        size_t want = request_fds(req);
        int group_fd = -1, cgroup_fd = -1, pid = req->pid, fd;
        char reason[256] = "";
        struct stat st;
        int r;

        if (req->reserved != 0 || (req->fds & ~(uint32_t) (PERF_OPENER_FD_GROUP | PERF_OPENER_FD_CGROUP)) ||
            n_fds != want || (req->flags & ~(uint64_t) OPENER_FLAGS))
                return -EINVAL;
        if (req->fds & PERF_OPENER_FD_GROUP)
                group_fd = fds[0];
        if (req->fds & PERF_OPENER_FD_CGROUP)
                cgroup_fd = fds[n_fds - 1];
        /* PERF_FLAG_PID_CGROUP with a directory fd that came along, and only then. */
        if (!!(req->flags & PERF_FLAG_PID_CGROUP) != (cgroup_fd >= 0))
                return -EINVAL;
        if (cgroup_fd >= 0) {
                if (fstat(cgroup_fd, &st) < 0 || !S_ISDIR(st.st_mode) || req->cpu < 0)
                        return -EINVAL;
                pid = cgroup_fd;
        } else if (req->pid < -1)
                return -EINVAL;

        memcpy(&attr, req->attr, sizeof(attr));
        r = verify(&attr, types, n_types, reason, sizeof(reason));
        if (r < 0) {
                log_warning("Perf opener refused an event the server asked for: %s",
                            reason[0] ? reason : "no reason given");
                return r == -EPERM ? r : -EPERM;
        }
        fd = (int) syscall(SYS_perf_event_open, &attr, pid, (int) req->cpu, group_fd,
                           (unsigned long) (req->flags | PERF_FLAG_FD_CLOEXEC));
        return fd < 0 ? -errno : fd;
}

/* perf_event_open() without an attr: the kernel answers EFAULT and opens nothing; a seccomp
 * filter that does not allow the call (the shipped unit's SystemCallFilter=, which answers
 * EPERM) answers first. 0 when the call is allowed, else the negative errno. */
static int probe_perf_event_open(void) {
        if (syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0UL) >= 0)
                return -EBADMSG;
        return errno == EFAULT ? 0 : -errno;
}

/* A batch request of size bytes in msg with its fds: 0 with ret_reply (its size in
 * *ret_size) and the fds opened, or -EINVAL when it is no well-formed batch (the message is
 * answered as a bad one). Each entry's fds are its own: an entry that names more or other fds
 * than it was given never reaches another entry's. */
static int opener_handle_batch(const void *msg, size_t size, const int *fds, size_t n_fds, PerfAttrVerify verify,
                               const uint32_t *types, size_t n_types, void *ret_reply, size_t *ret_size,
                               int *ret_fds, size_t *ret_n_fds) {
        const PerfOpenerRequest *reqs = (const PerfOpenerRequest *) ((const char *) msg +
                                                                     sizeof(PerfOpenerBatchHeader));
        PerfOpenerBatchHeader header;
        int32_t *errors = (int32_t *) ((char *) ret_reply + sizeof(header));
        size_t want = 0, used = 0, opened = 0;

        if (size < sizeof(header))
                return -EINVAL;
        memcpy(&header, msg, sizeof(header));
        if (header.magic != PERF_OPENER_BATCH_MAGIC || header.n == 0 || header.n > PERF_OPENER_BATCH_MAX ||
            size != sizeof(header) + header.n * sizeof(PerfOpenerRequest))
                return -EINVAL;
        for (size_t i = 0; i < header.n; i++) {
                PerfOpenerRequest req;

                memcpy(&req, &reqs[i], sizeof(req));
                want += request_fds(&req);
        }
        /* The fds must be exactly those the entries name, else none can be told apart. */
        if (want != n_fds)
                return -EINVAL;
        memcpy(ret_reply, &header, sizeof(header));
        for (size_t i = 0; i < header.n; i++) {
                PerfOpenerRequest req;
                size_t mine;
                int fd;

                memcpy(&req, &reqs[i], sizeof(req));
                mine = request_fds(&req);
                fd = opener_handle(&req, fds + used, mine, verify, types, n_types);
                used += mine;
                errors[i] = fd < 0 ? fd : 0;
                if (fd >= 0)
                        ret_fds[opened++] = fd;
        }
        *ret_size = sizeof(header) + header.n * sizeof(int32_t);
        *ret_n_fds = opened;
        return 0;
}

int perf_opener_serve(int sock, PerfAttrVerify verify, const uint32_t *types, size_t n_types) {
        /* Ready, with whether the call is allowed at all: the server waits for this, so that a
         * failed drop or a system-call filter without perf_event_open shows at its start, not
         * at the first open. */
        PerfOpenerReply ready = { .error = probe_perf_event_open() };
        _cleanup_free_ void *msg = NULL;
        int r;

        if (!verify || n_types > PERF_PMUS_MAX || (n_types > 0 && !types))
                return -EINVAL;
        /* Room for the largest batch: a longer message is truncated, and refused. */
        msg = malloc(BATCH_REQUEST_SIZE_MAX);
        if (!msg)
                return log_error_errno(ENOMEM, "Perf opener: no memory for its requests");
        r = send_with_fds(sock, &ready, sizeof(ready), NULL, 0);
        if (r < 0)
                return r == -EPIPE ? 0 : log_error_errno(r, "Perf opener: cannot say it is ready");
        for (;;) {
                PerfOpenerReply reply = {};
                char batch_reply[sizeof(PerfOpenerBatchHeader) + PERF_OPENER_BATCH_MAX * sizeof(int32_t)];
                int fds[MESSAGE_FDS_MAX], opened[PERF_OPENER_BATCH_MAX];
                size_t size = 0, n_fds = 0, n_opened = 0, reply_size = sizeof(reply);
                const void *answer = &reply;

                r = receive_message(sock, msg, BATCH_REQUEST_SIZE_MAX, &size, fds, PERF_OPENER_BATCH_FDS_MAX,
                                    &n_fds);
                if (r == 0)
                        return 0;
                if (r == -EBADMSG)
                        reply.error = -EINVAL;
                else if (r < 0)
                        return log_error_errno(r, "Perf opener: cannot receive a request");
                else if (size == sizeof(PerfOpenerRequest)) {
                        PerfOpenerRequest req;
                        int fd;

                        memcpy(&req, msg, sizeof(req));
                        fd = n_fds <= OPENER_FDS_MAX ? opener_handle(&req, fds, n_fds, verify, types, n_types)
                                                     : -EINVAL;
                        if (fd < 0)
                                reply.error = fd;
                        else
                                opened[n_opened++] = fd;
                        close_fds(fds, n_fds);
                } else {
                        if (opener_handle_batch(msg, size, fds, n_fds, verify, types, n_types, batch_reply,
                                                &reply_size, opened, &n_opened) < 0) {
                                reply.error = -EINVAL;
                                reply_size = sizeof(reply);
                        } else
                                answer = batch_reply;
                        close_fds(fds, n_fds);
                }
                r = send_with_fds(sock, answer, reply_size, opened, n_opened);
                close_fds(opened, n_opened);
                if (r < 0)
                        return r == -EPIPE ? 0 : log_error_errno(r, "Perf opener: cannot send its answer");
        }
}

__attribute__((noreturn)) static void opener_main(int sock, pid_t parent, PerfAttrVerify verify,
                                                  const uint32_t *types, size_t n_types, uid_t uid, gid_t gid) {
        sigset_t all;
        uint64_t keep = 0;
        int r;

        /* The server may have blocked signals for sd-event; the opener must die of SIGTERM. */
        (void) sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        if (sock != OPENER_CHILD_FD) {
                if (dup2(sock, OPENER_CHILD_FD) < 0)
                        _exit(EXIT_FAILURE);
                sock = OPENER_CHILD_FD;
        }
        /* stdin, stdout and stderr (the log) stay; the server's devices, sockets and state
         * directory go. */
        if (syscall(SYS_close_range, OPENER_CHILD_FD + 1, ~0U, 0) < 0)
                _exit(EXIT_FAILURE);
        if (fcntl(sock, F_SETFD, FD_CLOEXEC) < 0)
                _exit(EXIT_FAILURE);

        r = perf_opener_drop_privileges(uid, gid, &keep);
        if (r < 0)
                _exit(EXIT_FAILURE);
        /* Set after the uid change, which clears it; then the parent may already be gone. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
                _exit(EXIT_FAILURE);
        if (keep == 0)
                log_notice("Perf opener runs without CAP_PERFMON (pmugated was not started with it): it opens "
                           "only what /proc/sys/kernel/perf_event_paranoid allows its user");
        else
                log_debug("Perf opener runs as uid %u with CAP_PERFMON alone", (unsigned) geteuid());

        r = perf_opener_serve(sock, verify, types, n_types);
        _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}

/* ---- the server's side ---- */

/* The answer to a request, or the opener's first message (ready, no fd): 1 with the reply, or
 * a negative errno when the opener is gone or broke the protocol. */
static int receive_reply(PerfOpener *o, PerfOpenerReply *ret, int *ret_fd) {
        struct pollfd p = { .fd = o->fd, .events = POLLIN };
        size_t n_fds = 0;
        int fd = -1, r;

        do
                r = poll(&p, 1, PERF_OPENER_TIMEOUT_MSEC);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        if (r == 0)
                return -ETIMEDOUT;
        r = receive_exact(o->fd, ret, sizeof(*ret), &fd, 1, &n_fds);
        if (r == 0)
                return -EPIPE;
        if (r < 0)
                return r;
        if ((ret->error == 0) != (n_fds == 1) || ret->error > 0 || ret->error < -4095) {
                if (n_fds == 1)
                        (void) close(fd);
                return -EBADMSG;
        }
        *ret_fd = fd;
        return 1;
}

static int wait_ready(PerfOpener *o) {
        PerfOpenerReply reply;
        struct pollfd p = { .fd = o->fd, .events = POLLIN };
        size_t n_fds = 0;
        int fd = -1, r;

        do
                r = poll(&p, 1, PERF_OPENER_TIMEOUT_MSEC);
        while (r < 0 && errno == EINTR);
        if (r <= 0)
                return r < 0 ? -errno : -ETIMEDOUT;
        r = receive_exact(o->fd, &reply, sizeof(reply), &fd, 1, &n_fds);
        if (r <= 0)
                return r < 0 ? r : -EPIPE;
        if (n_fds > 0 || reply.error > 0 || reply.error < -4095) {
                close_fds(&fd, n_fds);
                return -EBADMSG;
        }
        o->probe_error = reply.error;
        return 0;
}

int perf_opener_start(PerfAttrVerify verify, const uint32_t *allowed_types, size_t n_types, uid_t uid,
                      gid_t gid, PerfOpener **ret) {
        _cleanup_free_ PerfOpener *o = NULL;
        int pair[2];
        pid_t parent = getpid(), pid;
        int r;

        if (!verify || n_types > PERF_PMUS_MAX || (n_types > 0 && !allowed_types))
                return -EINVAL;
        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        (void) fflush(stderr);
        pid = fork();
        if (pid < 0) {
                r = -errno;
                (void) close(pair[0]);
                (void) close(pair[1]);
                return r;
        }
        if (pid == 0) {
                (void) close(pair[0]);
                opener_main(pair[1], parent, verify, allowed_types, n_types, uid, gid);
        }
        (void) close(pair[1]);
        o->pid = pid;
        o->fd = pair[0];
        r = wait_ready(o);
        if (r < 0) {
                perf_opener_stop(TAKE_PTR(o));
                return r;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

/* The opener service's socket: connects and waits for its ready message. The service checks
 * that we are its own user, so this runs after the daemon has become that user. */
static int opener_connect(PerfOpener *o) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;

        if (strlen(o->path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, o->path, strlen(o->path) + 1);
        o->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (o->fd < 0) {
                o->fd = -1;
                return -errno;
        }
        r = connect(o->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ? -errno : wait_ready(o);
        if (r < 0) {
                (void) close(o->fd);
                o->fd = -1;
        }
        return r;
}

int perf_opener_new_remote(const char *path, PerfOpener **ret) {
        _cleanup_free_ PerfOpener *o = NULL;

        if (!path || path[0] != '/')
                return -EINVAL;
        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->fd = -1;
        o->path = strdup(path);
        if (!o->path)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int perf_opener_connect(PerfOpener *o) {
        int r;

        if (!o->path)
                return -EINVAL;
        if (o->fd >= 0)
                return 0;
        r = opener_connect(o);
        if (r < 0) {
                /* Serve without the perf path, saying why at each open. */
                o->dead = true;
                o->probe_error = r;
        }
        return r;
}

static int opener_gone(PerfOpener *o, int error) {
        if (!o->dead) {
                if (o->path)
                        log_error_errno(error, "Perf opener service at %s is gone and could not be reached "
                                        "again: no perf event can be opened until pmugated restarts", o->path);
                else
                        log_error_errno(error, "Perf opener (process %d) is gone: no perf event can be opened "
                                        "until pmugated restarts", (int) o->pid);
        }
        o->dead = true;
        return -EPIPE;
}

/* One request and its answer: 0 with the reply and fd, -EAGAIN when the opener was gone before
 * it answered (the request may be sent again to a new one), -EPIPE when it broke the protocol
 * or hung (it is not asked again), or the errno of sending the request. */
static int opener_ask(PerfOpener *o, const PerfOpenerRequest *req, const int *fds, size_t n_fds,
                      PerfOpenerReply *reply, int *ret_fd) {
        int r;

        r = send_with_fds(o->fd, req, sizeof(*req), fds, n_fds);
        if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN)
                return -EAGAIN;
        if (r < 0)
                return r;
        r = receive_reply(o, reply, ret_fd);
        if (r == -EPIPE || r == -ECONNRESET)
                return -EAGAIN;
        if (r < 0)
                /* After a timeout a late answer would be taken for the next request's: never ask
                 * this opener again. */
                return opener_gone(o, -r);
        return 0;
}

int perf_opener_open(PerfOpener *o, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                     int group_fd, unsigned long flags) {
        PerfOpenerRequest req = { .pid = pid, .cpu = cpu, .flags = flags };
        PerfOpenerReply reply;
        int fds[OPENER_FDS_MAX], fd = -1;
        size_t n_fds = 0;
        int r;

        if (!attr || (flags & ~(unsigned long) OPENER_FLAGS) ||
            !!(flags & PERF_FLAG_PID_CGROUP) != (cgroup_fd >= 0))
                return -EINVAL;
        if (o->dead)
                return -EPIPE;
        if (o->fd < 0)
                return -ENOTCONN;
        memcpy(req.attr, attr, sizeof(req.attr));
        if (group_fd >= 0) {
                req.fds |= PERF_OPENER_FD_GROUP;
                fds[n_fds++] = group_fd;
        }
        if (cgroup_fd >= 0) {
                req.fds |= PERF_OPENER_FD_CGROUP;
                fds[n_fds++] = cgroup_fd;
                req.pid = -1;
        }
        r = opener_ask(o, &req, fds, n_fds, &reply, &fd);
        if (r == -EAGAIN && o->path) {
                /* The service ended (a crash, a restart): its socket starts it again. Once; a
                 * second loss in a row is reported. */
                log_warning("Perf opener service went away; connecting to %s again", o->path);
                (void) close(o->fd);
                o->fd = -1;
                r = opener_connect(o);
                if (r < 0)
                        return opener_gone(o, -r);
                r = opener_ask(o, &req, fds, n_fds, &reply, &fd);
        }
        if (r == -EAGAIN)
                return opener_gone(o, EPIPE);
        if (r < 0)
                return r;
        return reply.error < 0 ? reply.error : fd;
}

/* The answer to a batch of n: 0 with each entry's fd or negative errno in ret_fds, or a
 * negative errno when the opener is gone or broke the protocol (nothing kept open). */
static int receive_batch_reply(PerfOpener *o, size_t n, int *ret_fds) {
        char buf[sizeof(PerfOpenerBatchHeader) + PERF_OPENER_BATCH_MAX * sizeof(int32_t)];
        struct pollfd p = { .fd = o->fd, .events = POLLIN };
        PerfOpenerBatchHeader header;
        int fds[PERF_OPENER_BATCH_MAX];
        size_t size = 0, n_fds = 0, used = 0;
        int r;

        do
                r = poll(&p, 1, PERF_OPENER_TIMEOUT_MSEC);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        if (r == 0)
                return -ETIMEDOUT;
        r = receive_message(o->fd, buf, sizeof(header) + n * sizeof(int32_t), &size, fds, n, &n_fds);
        if (r == 0)
                return -EPIPE;
        if (r < 0)
                return r;
        memcpy(&header, buf, MIN(size, sizeof(header)));
        if (size != sizeof(header) + n * sizeof(int32_t) || header.magic != PERF_OPENER_BATCH_MAGIC ||
            header.n != n) {
                close_fds(fds, n_fds);
                return -EBADMSG;
        }
        for (size_t i = 0; i < n; i++) {
                int32_t error;

                memcpy(&error, buf + sizeof(header) + i * sizeof(error), sizeof(error));
                if (error > 0 || error < -4095 || (error == 0 && used >= n_fds)) {
                        close_fds(fds, n_fds);
                        return -EBADMSG;
                }
                ret_fds[i] = error < 0 ? error : fds[used++];
        }
        if (used != n_fds) {
                close_fds(fds, n_fds);
                return -EBADMSG;
        }
        return 0;
}

/* As opener_ask(), for a batch of n. */
static int opener_ask_batch(PerfOpener *o, const void *msg, size_t size, const int *fds, size_t n_fds, size_t n,
                            int *ret_fds) {
        int r;

        r = send_with_fds(o->fd, msg, size, fds, n_fds);
        if (r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN)
                return -EAGAIN;
        if (r < 0)
                return r;
        r = receive_batch_reply(o, n, ret_fds);
        if (r == -EPIPE || r == -ECONNRESET)
                return -EAGAIN;
        if (r < 0)
                return opener_gone(o, -r);
        return 0;
}

int perf_opener_open_batch(PerfOpener *o, const PerfOpenerEvent *events, size_t n, int *ret_fds) {
        _cleanup_free_ char *msg = NULL;
        PerfOpenerBatchHeader header = { .magic = PERF_OPENER_BATCH_MAGIC, .n = (uint32_t) n };
        int fds[PERF_OPENER_BATCH_FDS_MAX];
        size_t n_fds = 0, size = sizeof(header) + n * sizeof(PerfOpenerRequest);
        int r;

        if (!events || !ret_fds || n == 0 || n > PERF_OPENER_BATCH_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                const PerfOpenerEvent *e = &events[i];

                if (!e->attr || (e->flags & ~(unsigned long) OPENER_FLAGS) ||
                    !!(e->flags & PERF_FLAG_PID_CGROUP) != (e->cgroup_fd >= 0))
                        return -EINVAL;
                n_fds += (e->group_fd >= 0) + (e->cgroup_fd >= 0);
        }
        if (n_fds > PERF_OPENER_BATCH_FDS_MAX)
                return -EINVAL;
        if (o->dead)
                return -EPIPE;
        if (o->fd < 0)
                return -ENOTCONN;
        msg = calloc(1, size);
        if (!msg)
                return -ENOMEM;
        memcpy(msg, &header, sizeof(header));
        n_fds = 0;
        for (size_t i = 0; i < n; i++) {
                const PerfOpenerEvent *e = &events[i];
                PerfOpenerRequest req = { .pid = e->pid, .cpu = e->cpu, .flags = e->flags };

                memcpy(req.attr, e->attr, sizeof(req.attr));
                if (e->group_fd >= 0) {
                        req.fds |= PERF_OPENER_FD_GROUP;
                        fds[n_fds++] = e->group_fd;
                }
                if (e->cgroup_fd >= 0) {
                        req.fds |= PERF_OPENER_FD_CGROUP;
                        fds[n_fds++] = e->cgroup_fd;
                        req.pid = -1;
                }
                memcpy(msg + sizeof(header) + i * sizeof(req), &req, sizeof(req));
        }
        r = opener_ask_batch(o, msg, size, fds, n_fds, n, ret_fds);
        if (r == -EAGAIN && o->path) {
                log_warning("Perf opener service went away; connecting to %s again", o->path);
                (void) close(o->fd);
                o->fd = -1;
                r = opener_connect(o);
                if (r < 0)
                        return opener_gone(o, -r);
                r = opener_ask_batch(o, msg, size, fds, n_fds, n, ret_fds);
        }
        if (r == -EAGAIN)
                return opener_gone(o, EPIPE);
        return r;
}

int perf_opener_probe_error(const PerfOpener *o) {
        return o->probe_error;
}

pid_t perf_opener_pid(const PerfOpener *o) {
        return o ? o->pid : 0;
}

PerfOpener *perf_opener_stop(PerfOpener *o) {
        if (!o)
                return NULL;
        if (o->path) {
                /* Not our child: the service goes on serving the next connection. */
                if (o->fd >= 0)
                        (void) close(o->fd);
                free(o->path);
                free(o);
                return NULL;
        }
        /* The opener holds nothing to save, and one that hangs would never see the end of file. */
        (void) close(o->fd);
        (void) kill(o->pid, SIGKILL);
        while (waitpid(o->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        free(o);
        return NULL;
}

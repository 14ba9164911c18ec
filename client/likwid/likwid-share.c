/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The run directory of 'pmugate likwid': the share socket and the void file
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "likwid/likwid-share.h"
#include "macro.h"
#include "pmugate-limits.h"

int likwid_run_dir_open(const char *path, int *ret_dirfd) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (!path || path[0] != '/')
                return -EINVAL;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* Only its user reaches what is in it: nobody else can connect to the share socket or
         * plant a void file. */
        if (st.st_uid != getuid() || (st.st_mode & 0077) != 0)
                return -EPERM;
        *ret_dirfd = TAKE_FD(fd);
        return 0;
}

static int share_address(const char *run_dir, struct sockaddr_un *sa) {
        *sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        if (snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", run_dir, LIKWID_SHARE_NAME) >=
            (int) sizeof(sa->sun_path))
                return -ENAMETOOLONG;
        return 0;
}

int likwid_share_listen(const char *run_dir, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_un sa;
        mode_t old;
        int r;

        r = share_address(run_dir, &sa);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        old = umask(0077);
        r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
        (void) umask(old);
        if (r < 0)
                return -errno;
        if (listen(fd, PMUGATE_LIKWID_JOINED_MAX) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int likwid_share_connect(const char *run_dir, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_un sa;
        struct ucred cred;
        socklen_t len = sizeof(cred);
        int r;

        r = share_address(run_dir, &sa);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return -errno;
        if (cred.uid != getuid())
                return -EPERM;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The parent of pid from /proc/PID/stat, or -1. The command name (field 2) may hold spaces
 * and parentheses, so the fields after it are found from its last ')'. */
static pid_t parent_of(int proc_fd, pid_t pid) {
        char path[32], buf[512], *p;
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int ppid;

        (void) snprintf(path, sizeof(path), "%d/stat", (int) pid);
        fd = openat(proc_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1 || ppid < 0)
                return -1;
        return (pid_t) ppid;
}

bool likwid_pid_descends(int proc_fd, pid_t pid, pid_t ancestor) {
        for (unsigned i = 0; i < PMUGATE_LIKWID_ANCESTRY_MAX && pid > 0; i++) {
                if (pid == ancestor)
                        return true;
                pid = parent_of(proc_fd, pid);
        }
        return false;
}

bool likwid_peer_joins(int fd, pid_t ancestor) {
        _cleanup_close_ int proc_fd = -1;
        struct ucred cred;
        socklen_t len = sizeof(cred);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != getuid())
                return false;
        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
                return false;
        /* The peer's parent is the measured program, whose ancestor is the LIKWID that started
         * this forwarder: another of the user's processes outside the measurement is not. */
        return ancestor > 1 && likwid_pid_descends(proc_fd, cred.pid, ancestor);
}

int likwid_run_void(int dirfd, const char *reason) {
        _cleanup_close_ int fd = -1;
        size_t len = strnlen(reason, PMUGATE_LIKWID_VOID_REASON_MAX - 1);
        char line[PMUGATE_LIKWID_VOID_REASON_MAX + 1];

        fd = openat(dirfd, LIKWID_VOID_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return errno == EEXIST ? 0 : -errno;
        memcpy(line, reason, len);
        line[len++] = '\n';
        if (write(fd, line, len) != (ssize_t) len)
                return -EIO;
        return 0;
}

int likwid_run_void_reason(int dirfd, char *buf, size_t size) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        ssize_t n;

        if (size == 0)
                return -EINVAL;
        buf[0] = '\0';
        fd = openat(dirfd, LIKWID_VOID_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        /* Whatever is there, even unreadable, says the counts are void. */
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 1;
        n = read(fd, buf, size - 1);
        buf[n > 0 ? n : 0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        for (char *p = buf; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
        return 1;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files root writes into a directory an admin named (the Slurm Epilog's job summaries)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/trusted-dir.h"
#include "macro.h"

/* A random temporary name that exists already is tried again this often before giving up. */
#define TEMP_NAME_TRIES 16U

static bool writable_by_others(const struct stat *st) {
        return (st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX);
}

/* Why the directory at fd (reached as path up to len) cannot be trusted, or 0. */
static int check_dir(int fd, const char *path, size_t len, char *reterr_reason, size_t reason_size) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode)) {
                (void) snprintf(reterr_reason, reason_size, "%.*s is not a directory", (int) len, path);
                return -ENOTDIR;
        }
        if (st.st_uid != 0) {
                (void) snprintf(reterr_reason, reason_size,
                                "%.*s belongs to uid %u, not root: its owner could swap what root writes "
                                "there for a link", (int) len, path, (unsigned) st.st_uid);
                return -EPERM;
        }
        if (writable_by_others(&st)) {
                (void) snprintf(reterr_reason, reason_size,
                                "%.*s is writable by group or others (mode %04o) without the sticky bit: "
                                "they could swap what root writes there for a link (chmod go-w or +t)",
                                (int) len, path, (unsigned) (st.st_mode & 07777));
                return -EPERM;
        }
        return 0;
}

int trusted_dir_open(const char *path, int *ret_fd, char *reterr_reason, size_t reason_size) {
        _cleanup_close_ int fd = -EBADF;
        const char *p;
        int r;

        if (path[0] != '/') {
                (void) snprintf(reterr_reason, reason_size, "%s is not an absolute path", path);
                return -EINVAL;
        }
        fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = check_dir(fd, "/", 1, reterr_reason, reason_size);
        if (r < 0)
                return r;
        for (p = path; *p;) {
                char name[NAME_MAX + 1];
                size_t n, end;
                int next;

                p += strspn(p, "/");
                n = strcspn(p, "/");
                if (n == 0)
                        break;
                end = (size_t) (p - path) + n;
                if (n > NAME_MAX) {
                        (void) snprintf(reterr_reason, reason_size, "%.*s: a name too long", (int) end,
                                        path);
                        return -ENAMETOOLONG;
                }
                memcpy(name, p, n);
                name[n] = '\0';
                p += n;
                if (strcmp(name, ".") == 0)
                        continue;
                if (strcmp(name, "..") == 0) {
                        (void) snprintf(reterr_reason, reason_size, "%s: name the directory without \"..\"",
                                        path);
                        return -EINVAL;
                }
                next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0) {
                        struct stat st;

                        r = negative_errno();
                        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
                                (void) snprintf(reterr_reason, reason_size,
                                                "%.*s is a symbolic link; not following it (name the real "
                                                "directory)", (int) end, path);
                                return -ELOOP;
                        }
                        if (r == -ENOENT)
                                (void) snprintf(reterr_reason, reason_size, "%.*s does not exist", (int) end,
                                                path);
                        else
                                (void) snprintf(reterr_reason, reason_size, "%.*s: %s", (int) end, path,
                                                strerror(-r));
                        return r;
                }
                (void) close(fd);
                fd = next;
                r = check_dir(fd, path, end, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int write_all(int fd, const void *data, size_t size) {
        const char *p = data;

        while (size > 0) {
                ssize_t n = write(fd, p, size);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

static int create_temp(int dir_fd, const char *name, char *ret_temp, size_t temp_size, int *ret_fd) {
        for (unsigned i = 0; i < TEMP_NAME_TRIES; i++) {
                uint64_t rnd;
                int fd;

                if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                        return negative_errno();
                if ((size_t) snprintf(ret_temp, temp_size, ".%s.%016" PRIx64, name, rnd) >= temp_size)
                        return -ENAMETOOLONG;
                fd = openat(dir_fd, ret_temp,
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
                if (fd >= 0) {
                        *ret_fd = fd;
                        return 0;
                }
                if (errno != EEXIST)
                        return negative_errno();
        }
        return -EEXIST;
}

int file_replace_at(int dir_fd, const char *name, const void *data, size_t size, mode_t mode,
                    char *reterr_reason, size_t reason_size) {
        _cleanup_close_ int fd = -EBADF;
        char temp[NAME_MAX + 1];
        int r;

        if (!name[0] || name[0] == '.' || strchr(name, '/') || strlen(name) + 18 > NAME_MAX) {
                (void) snprintf(reterr_reason, reason_size,
                                "'%s' is not a file name (one component, not starting with a dot)", name);
                return -EINVAL;
        }
        r = create_temp(dir_fd, name, temp, sizeof(temp), &fd);
        if (r < 0) {
                (void) snprintf(reterr_reason, reason_size, "cannot create a file there: %s", strerror(-r));
                return r;
        }
        r = write_all(fd, data, size);
        if (r >= 0 && fchmod(fd, mode) < 0)
                r = negative_errno();
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && renameat(dir_fd, temp, dir_fd, name) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(dir_fd, temp, 0);
                (void) snprintf(reterr_reason, reason_size, "cannot write %s: %s", name, strerror(-r));
                return r;
        }
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel-file.h"
#include "macro.h"

ssize_t kernel_file_read(int dir_fd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        size_t n = 0;

        if (size == 0)
                return -EINVAL;
        fd = openat(dir_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        for (;;) {
                ssize_t k = read(fd, buf + n, size - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n == size)
                        return -EFBIG;
        }
        if (memchr(buf, '\0', n))
                return -EINVAL;
        buf[n] = '\0';
        return (ssize_t) n;
}

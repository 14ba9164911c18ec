/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers shared by daemon, library and tests: cleanup attributes and ownership transfer
 */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand ownership of a pointer or fd out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                     \
        ({                                              \
                __typeof__(p) _taken_ = (p);            \
                (p) = NULL;                             \
                _taken_;                                \
        })
#define TAKE_FD(fd)                                     \
        ({                                              \
                int _taken_fd_ = (fd);                  \
                (fd) = -EBADF;                          \
                _taken_fd_;                             \
        })

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)         \
        static inline void func##p(type *p) {           \
                if (*p)                                 \
                        *p = func(*p);                  \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a small file of the kernel's (procfs, sysfs, securityfs) as hostile input: under
 * --root, or where someone planted a link or a FIFO, it is whatever a file there holds.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Reads the regular file path (relative to dir_fd, or absolute with AT_FDCWD) whole into buf
 * as a string, not following a link and not blocking on a FIFO. These file systems report
 * sizes that are not the content's, so it reads to the end. Returns the length (trailing white
 * space kept), or -EBADFD (not a regular file), -EFBIG (size - 1 bytes or more), -EINVAL (a NUL
 * inside), or the open's or read's negative errno. */
ssize_t kernel_file_read(int dir_fd, const char *path, char *buf, size_t size);

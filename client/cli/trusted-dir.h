/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files root writes into a directory an admin named: the directory checked through its fd, the
 * file created there without following or reusing anything another user put in its way
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Opens the directory at the absolute path for root to write into. Each component is opened
 * with O_NOFOLLOW from the one before it, and every directory on the way, the last one included,
 * must be owned by root and writable by nobody else unless its sticky bit is set (as /tmp): then
 * no other user can rename a directory of the path away or swap a symbolic link in. Returns 0
 * and the directory's fd in *ret_fd, or a negative errno with the reason in reterr_reason:
 * -ENOENT (a component does not exist), -ELOOP (a symbolic link), -ENOTDIR, -EPERM (another
 * owner, or writable by others without the sticky bit), -EINVAL (not an absolute path, or a
 * ".." in it). */
int trusted_dir_open(const char *path, int *ret_fd, char *reterr_reason, size_t reason_size);

/* Writes size bytes of data as name (one path component, not starting with a dot) in the
 * directory dir_fd with the given mode: into a new temporary file (O_CREAT|O_EXCL|O_NOFOLLOW,
 * a random name starting with a dot), its mode set with fchmod, synced, then renamed over name.
 * Whatever was at name before (another user's file, a symbolic link) is replaced, never written
 * through; a directory there is an error. Returns 0 or a negative errno with the reason in
 * reterr_reason; on failure the temporary file is removed. */
int file_replace_at(int dir_fd, const char *name, const void *data, size_t size, mode_t mode,
                    char *reterr_reason, size_t reason_size);

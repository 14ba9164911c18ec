/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dropping privileges after start-up
 */
#pragma once

#include <sys/types.h>

/* Switches to user (its uid, primary gid, no supplementary groups), leaves no capability in
 * any set (effective, permitted, inheritable, ambient, bounding) and sets NO_NEW_PRIVS. When
 * not started as root there is nothing to switch; the capability sets are still emptied.
 * Verifies the result and fails rather than run with privilege left over. */
int privileges_drop(const char *user);

/* The uid and gid the daemon runs as after start-up: user's when started as root (refusing
 * root itself), else its own. */
int privileges_user_ids(const char *user, uid_t *ret_uid, gid_t *ret_gid);

/* Opens runtime_dir and runtime_dir/state, creating them if needed (modes 0755 and 0700), and
 * returns an O_DIRECTORY fd of state in ret_fd. Refuses, saying what to fix, either when it
 * is a symlink or not a directory or belongs to someone other than root or daemon_uid, the
 * runtime directory when group or others may write it, and state unless its mode is 0700.
 * When running as root, gives a state directory of root's (and root's files in it) to
 * daemon_uid:daemon_gid, through fds of what was checked, and then switches the file system
 * identity to them, so that root recovers the last run's state as the daemon's user would. */
int privileges_prepare_state_dir(const char *runtime_dir, uid_t daemon_uid, gid_t daemon_gid, int *ret_fd);

/* Ends what privileges_prepare_state_dir() began: root acts on files as root again. The state
 * directory and everything created in it belong to the daemon's user, which keeps its state
 * there after dropping privileges. Nothing when not running as root. */
int privileges_hand_over_state_dir(void);

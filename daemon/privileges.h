/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dropping privileges after start-up
 */
#pragma once

/* Switches to user (its uid, primary gid, no supplementary groups), leaves no capability in
 * any set (effective, permitted, inheritable, ambient, bounding) and sets NO_NEW_PRIVS. When
 * not started as root there is nothing to switch; the capability sets are still emptied.
 * Verifies the result and fails rather than run with privilege left over. */
int privileges_drop(const char *user);

/* Creates dir (mode 0700) if needed and, when running as root, takes it and its files back
 * for root, which recovers the last run's state from it first. Refuses a symlink. */
int privileges_prepare_state_dir(const char *dir);

/* Gives dir and its files to user, so the daemon can keep its state there after dropping
 * privileges. */
int privileges_hand_over_state_dir(const char *dir, const char *user);

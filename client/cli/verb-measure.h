/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate topdown and pmugate stat
 */
#pragma once

/* Each returns the exit status: the wrapped command's in wrapper mode, 0 on success, 1 on a
 * failure, 2 on a usage error. */
int verb_topdown(int argc, char *argv[], const char *socket_path);
int verb_stat(int argc, char *argv[], const char *socket_path);

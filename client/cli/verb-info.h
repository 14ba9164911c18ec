/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate info
 */
#pragma once

/* Returns the exit status: 0, 1 on a failure, 2 on a usage error. */
int verb_info(int argc, char *argv[], const char *socket_path);

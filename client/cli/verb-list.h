/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate list: the events, groups and metrics of the connected machine's model
 */
#pragma once

/* Returns the exit status: 0, 1 on a failure, 2 on a usage error. */
int verb_list(int argc, char *argv[], const char *socket_path);

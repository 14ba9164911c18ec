/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: cycles per basic block from the LBR, or sampled IPs (docs/TIMING.md)
 */
#pragma once

/* Returns the exit status: the command's, 0, 1 on a failure, 2 on a usage error. */
int verb_timing(int argc, char *argv[], const char *socket_path);

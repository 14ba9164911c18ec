/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job: a job's report across the nodes it ran on
 */
#pragma once

/* Returns the exit status: 0 a report of every node, 3 a report with nodes missing, 1 nothing
 * to report, 2 a usage error. */
int verb_job(int argc, char *argv[]);

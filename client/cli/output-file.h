/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * -o FILE: the name expanded as likwid-perfctr does (%h host, %p pid, %j job id, %r rank),
 * and the output format its suffix names
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/measure-output.h"

#define OUTPUT_PATH_MAX 4096U

/* Expands %h (host name up to its first dot), %p (this process's pid), %j (the batch job:
 * $SLURM_JOB_ID, $PBS_JOBID, $LSB_JOBID, else "nojob"), %r (the rank: $SLURM_PROCID,
 * $PMI_RANK, $PMIX_RANK, $OMPI_COMM_WORLD_RANK, else 0) and %%. Returns 0, -EINVAL with a
 * reason for another %, -ENAMETOOLONG. */
int output_path_expand(const char *pattern, char *buf, size_t size, char *reterr_reason, size_t reason_size);

/* The format a file name's suffix names: .csv, .json (one document), .jsonl, .txt (the
 * table); false for another suffix. */
bool output_format_from_path(const char *path, OutputFormat *ret);

/* Opens path for writing the output, without writing through anything another user controls:
 * a new file is created (O_EXCL, mode 0666 less the umask); an existing one is truncated only
 * if it is a regular file this process's effective uid owns, or a character device (/dev/null, a
 * terminal). A symbolic link (at the last component) is refused, as is a file another uid owns
 * (a name such as out-%j.csv is predictable, and someone may have created it first), a FIFO, a
 * socket or a directory. Returns 0 and the open file in *ret, or a negative errno with the reason
 * in reterr_reason: -ELOOP (a symbolic link), -EPERM (another uid's file), -EINVAL (not a regular
 * file), or what open(2) said. */
int output_file_open(const char *path, FILE **ret, char *reterr_reason, size_t reason_size);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU selections as likwid-perfctr users write them, beside plain lists: "0-3,8",
 * "S0:0-3" (socket 0's first four hardware threads), "N:0-7" (the node), "C0:" (all of
 * last-level cache domain 0), "M1:0,2" (NUMA domain 1), "S0:0-1@S1:0-1" or "S0:0-1,S1:0-1"
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "pmugate/pmugate.h"

/* Room for the reason cpu_expr_parse() gives. */
#define CPU_EXPR_REASON_MAX 256U

/* Parses text against the machine info describes. A plain number is a CPU's own number; in a
 * domain (N: node, S<n>: socket, C<n>: last-level cache, M<n>: memory (NUMA) domain, the
 * last two being the socket on the supported parts) numbers count the domain's online CPUs
 * physical cores first, as likwid does, and an empty list after the colon means all of them.
 * Parts join with '@' or ','. The CPUs come out in the order given, each once. Returns 0,
 * -EINVAL with a reason for bad syntax, -ENXIO with a reason for a CPU or domain the machine
 * lacks (or has offline), -ENOMEM. */
int cpu_expr_parse(const char *text, const pmugate_info *info, uint32_t **ret_cpus, size_t *ret_n,
                   char *reterr_reason, size_t reason_size);

/* The CPUs a measurement covers: text parsed by cpu_expr_parse() (opt names the option, "-c"
 * or "-C", in reasons), or without text the caller's own CPUs (its affinity, which under
 * Slurm is the job's cpuset) that are online on the daemon's machine. In job mode every CPU
 * must be one of the caller's job. Returns 0, or with a reason -EINVAL (syntax), -ENXIO (not
 * on this machine) or -EACCES (not in the caller's job). */
int cpu_select(const char *opt, const char *text, const pmugate_info *info, uint32_t **ret_cpus,
               size_t *ret_n, char *reterr_reason, size_t reason_size);

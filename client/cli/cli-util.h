/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the pmugate and pmugatectl command lines
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pmugate/pmugate.h"

static inline void pmugate_disconnect_p(pmugate **c) {
        *c = pmugate_disconnect(*c);
}

static inline void pmugate_batch_free_p(pmugate_batch **b) {
        *b = pmugate_batch_free(*b);
}

/* Connects, printing a one-line reason (with what to do) on failure. */
int cli_connect(const char *socket_path, pmugate **ret);

/* Prints "PROG: WHAT: REASON" for an error from the library, using the daemon's reason
 * when it refused the request. Returns the exit status to use (1). */
int cli_report(const char *prog, pmugate *c, int error, const char *what);

/* Writes s as one CSV field: quoted (with quotes doubled) when it holds a comma, a quote or a
 * line break; NULL is an empty field. */
void cli_csv_text(FILE *f, const char *s);

/* Parses a hex (0x) or decimal unsigned 64-bit number. */
int cli_parse_u64(const char *s, uint64_t *ret);

/* Parses a CPU list ("0-3,8"); CPUs the machine lacks are left for the daemon to refuse by name. */
int cli_parse_cpus(const char *s, uint32_t **ret_cpus, size_t *ret_n);

/* Resolves a register given as a number or an allowlist name. */
int cli_parse_register(const char *s, const pmugate_info *info, bool pci, uint32_t *ret);

/* After getopt_long() returned '?' or ':', prints "PROG: unknown option -x" (or "option -x needs
 * a value") naming the option itself, not the argument it stood in (getopt leaves optind on
 * the command's verb while inside a cluster like "-x,"), with the pmugate spelling of perf's
 * and LIKWID's options where one exists, and "(see 'PROG VERB --help')". verb may be NULL.
 * Returns -EINVAL. */
int cli_unknown_option(const char *prog, const char *verb, char *const argv[], int opt);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict value parsers for the simulator configuration: the whole string must be consumed
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Each returns 0, or -EINVAL when the text is not a number/boolean, -ERANGE when it lies
 * outside [min, max]. */
int sim_parse_double(const char *text, double min, double max, double *ret);
int sim_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *ret);
int sim_parse_bool(const char *text, bool *ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One-line reasons that go with a negative errno out of the measurement modules
 */
#pragma once

#include <stddef.h>

#include "macro.h"

/* Writes the formatted reason into buf (when buf is not NULL) and returns error. */
_printf_(4, 5)
int reason_fail(char *buf, size_t size, int error, const char *format, ...);

/* Writes the formatted reason into buf (when buf is not NULL), for a caller that goes on. */
_printf_(3, 4)
void reason_set(char *buf, size_t size, const char *format, ...);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Number formatting for large outputs: the same text as printf's, without its cost per call
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Enough for any number these write, with its terminating NUL. */
#define NUMBER_TEXT_MAX 40U

/* Writes v in decimal to buf (NUMBER_TEXT_MAX bytes); returns its length. */
size_t number_format_u64(uint64_t v, char *buf);

/* Writes x to buf (NUMBER_TEXT_MAX bytes) exactly as printf's "%.17g" does (17 significant
 * digits, correctly rounded, ties to even, trailing zeros dropped); returns its length.
 * Integers below 2^53 and values from 1e-6 to 1e17 are written with integer arithmetic,
 * the rest (and NaN, infinities) by snprintf(). */
size_t number_format_g17(double x, char *buf);

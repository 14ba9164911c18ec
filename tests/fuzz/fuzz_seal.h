/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the fuzz targets of the state directory's files: inputs sealed as a writer that
 * computes checksums would seal them
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "state-dir.h"

/* An input that starts with '!' has each of its lines sealed with a good checksum first, as an
 * attacker who computes checksums would write them: that reaches the checks behind them. Points
 * data and size at the sealed text in b; leaves other inputs alone. Returns 0 or negative errno. */
int fuzz_seal_lines(const uint8_t **data, size_t *size, StateBuffer *b);

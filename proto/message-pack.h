/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format, the writing half: the daemon's replies and the client's requests. No I/O here.
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate-limits.h"
#include "wire.h"

/* Encoding helpers. Each begins a map of the given number of entries and writes the fixed
 * leading keys, leaving extra_keys entries for the caller. */
int request_pack_begin(msgpack_packer *pk, uint64_t id, const char *op, size_t extra_keys);
int reply_pack_begin(msgpack_packer *pk, uint64_t id, size_t extra_keys);
int reply_pack_error(msgpack_packer *pk, uint64_t id, int code, const char *reason, int64_t op_index);
/* Appends arrays of integers to a buffer, encoded exactly as msgpack-c's packer would
 * (smallest form of each value). Batch replies carry thousands of them; going through the
 * packer's per-value callback costs more than the register reads themselves. */
int pack_int32_array(msgpack_sbuffer *sb, const int32_t *v, size_t n);
int pack_uint64_array(msgpack_sbuffer *sb, const uint64_t *v, size_t n);

int pack_string(msgpack_packer *pk, const char *s);
int pack_key_string(msgpack_packer *pk, const char *key, const char *value);
int pack_key_uint(msgpack_packer *pk, const char *key, uint64_t value);
int pack_key_bool(msgpack_packer *pk, const char *key, bool value);

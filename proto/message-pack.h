/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format, the writing half: the daemon's replies and the client's requests. No I/O here.
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* A reply tuple: fields[i] is the field at position i (the enums of wire.h), packed as an
 * array of n, each in its smallest form as the packer's typed functions would write it. A
 * position no initializer names is a zero msgpack_object, which packs as nil. */
int pack_tuple(msgpack_packer *pk, const msgpack_object *fields, size_t n);

static inline msgpack_object tuple_uint(uint64_t v) {
        return (msgpack_object) { .type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = v };
}

static inline msgpack_object tuple_int(int64_t v) {
        if (v >= 0)
                return tuple_uint((uint64_t) v);
        return (msgpack_object) { .type = MSGPACK_OBJECT_NEGATIVE_INTEGER, .via.i64 = v };
}

static inline msgpack_object tuple_bool(bool v) {
        return (msgpack_object) { .type = MSGPACK_OBJECT_BOOLEAN, .via.boolean = v };
}

static inline msgpack_object tuple_double(double v) {
        return (msgpack_object) { .type = MSGPACK_OBJECT_FLOAT64, .via.f64 = v };
}

/* The string is referenced, not copied: it must outlive the pack_tuple() call. */
static inline msgpack_object tuple_string(const char *s) {
        return (msgpack_object) {
                .type = MSGPACK_OBJECT_STR,
                .via.str = { .size = (uint32_t) strlen(s ?: ""), .ptr = s ?: "" },
        };
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format: the packers, for the daemon's replies and the client's requests. Nothing here
 * reads a peer's bytes.
 */
#include <errno.h>
#include <string.h>

#include "error.h"
#include "message-pack.h"

static int sbuffer_reserve(msgpack_sbuffer *sb, size_t extra) {
        size_t need = sb->size + extra, alloc = sb->alloc ?: 1024;
        char *data;

        if (need <= sb->alloc)
                return 0;
        while (alloc < need)
                alloc *= 2;
        data = realloc(sb->data, alloc);
        if (!data)
                return -ENOMEM;
        sb->data = data;
        sb->alloc = alloc;
        return 0;
}

static uint8_t *put_be(uint8_t *p, uint64_t v, unsigned bytes) {
        for (unsigned i = bytes; i-- > 0; v >>= 8)
                p[i] = (uint8_t) v;
        return p + bytes;
}

static uint8_t *put_array_header(uint8_t *p, size_t n) {
        if (n < 16) {
                *p++ = (uint8_t) (0x90 | n);
                return p;
        }
        if (n <= UINT16_MAX) {
                *p++ = 0xdc;
                return put_be(p, n, 2);
        }
        *p++ = 0xdd;
        return put_be(p, n, 4);
}

static uint8_t *put_uint(uint8_t *p, uint64_t v) {
        if (v < 0x80) {
                *p++ = (uint8_t) v;
                return p;
        }
        if (v <= UINT8_MAX) {
                *p++ = 0xcc;
                return put_be(p, v, 1);
        }
        if (v <= UINT16_MAX) {
                *p++ = 0xcd;
                return put_be(p, v, 2);
        }
        if (v <= UINT32_MAX) {
                *p++ = 0xce;
                return put_be(p, v, 4);
        }
        *p++ = 0xcf;
        return put_be(p, v, 8);
}

/* msgpack-c packs non-negative signed values as unsigned, negatives in the smallest signed
 * form: negative fixint down to -32, then int8, int16, int32. */
static uint8_t *put_int(uint8_t *p, int32_t v) {
        if (v >= 0)
                return put_uint(p, (uint64_t) v);
        if (v >= -32) {
                *p++ = (uint8_t) v;
                return p;
        }
        if (v >= INT8_MIN) {
                *p++ = 0xd0;
                return put_be(p, (uint8_t) v, 1);
        }
        if (v >= INT16_MIN) {
                *p++ = 0xd1;
                return put_be(p, (uint16_t) v, 2);
        }
        *p++ = 0xd2;
        return put_be(p, (uint32_t) v, 4);
}

int pack_int32_array(msgpack_sbuffer *sb, const int32_t *v, size_t n) {
        uint8_t *p;

        if (n > UINT32_MAX || sbuffer_reserve(sb, 5 + 5 * n) < 0)
                return -ENOMEM;
        p = put_array_header((uint8_t *) sb->data + sb->size, n);
        for (size_t i = 0; i < n; i++)
                p = put_int(p, v[i]);
        sb->size = (size_t) (p - (uint8_t *) sb->data);
        return 0;
}

int pack_uint64_array(msgpack_sbuffer *sb, const uint64_t *v, size_t n) {
        uint8_t *p;

        if (n > UINT32_MAX || sbuffer_reserve(sb, 5 + 9 * n) < 0)
                return -ENOMEM;
        p = put_array_header((uint8_t *) sb->data + sb->size, n);
        for (size_t i = 0; i < n; i++)
                p = put_uint(p, v[i]);
        sb->size = (size_t) (p - (uint8_t *) sb->data);
        return 0;
}

int pack_string(msgpack_packer *pk, const char *s) {
        size_t n = strlen(s);
        int r;

        r = msgpack_pack_str(pk, n);
        if (r < 0)
                return -ENOMEM;
        return msgpack_pack_str_body(pk, s, n) < 0 ? -ENOMEM : 0;
}

int pack_key_string(msgpack_packer *pk, const char *key, const char *value) {
        if (pack_string(pk, key) < 0)
                return -ENOMEM;
        return pack_string(pk, value ?: "");
}

int pack_key_uint(msgpack_packer *pk, const char *key, uint64_t value) {
        if (pack_string(pk, key) < 0)
                return -ENOMEM;
        return msgpack_pack_uint64(pk, value) < 0 ? -ENOMEM : 0;
}

int pack_key_bool(msgpack_packer *pk, const char *key, bool value) {
        if (pack_string(pk, key) < 0)
                return -ENOMEM;
        return (value ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) < 0 ? -ENOMEM : 0;
}

/* Every message starts {"v": 1, "id": ID, ...}. With fewer than 16 keys these bytes are a
 * fixmap header, fixstr keys and a fixint version: written at once rather than value by value
 * through the packer, as every request and reply needs them. */
#define MSGPACK_FIXMAP 0x80
#define MSGPACK_FIXMAP_MAX 15U
#define MSGPACK_FIXSTR 0xa0
#define MSGPACK_TRUE 0xc3

_Static_assert(PMUGATE_PROTOCOL_VERSION <= 0x7f, "the version must be a positive fixint");

static int pack_head(msgpack_packer *pk, uint64_t id, size_t keys) {
        const char head[] = {
                (char) (MSGPACK_FIXMAP | keys), (char) (MSGPACK_FIXSTR | 1), 'v', (char) PMUGATE_PROTOCOL_VERSION,
                (char) (MSGPACK_FIXSTR | 2), 'i', 'd',
        };

        if (keys > MSGPACK_FIXMAP_MAX) {
                /* Large maps (hello) are rare: the packer writes their header. */
                if (msgpack_pack_map(pk, keys) < 0 || pack_key_uint(pk, "v", PMUGATE_PROTOCOL_VERSION) < 0 ||
                    pack_key_uint(pk, "id", id) < 0)
                        return -ENOMEM;
                return 0;
        }
        if (pk->callback(pk->data, head, sizeof(head)) < 0 || msgpack_pack_uint64(pk, id) < 0)
                return -ENOMEM;
        return 0;
}

int request_pack_begin(msgpack_packer *pk, uint64_t id, const char *op, size_t extra_keys) {
        static const char op_key[] = { (char) (MSGPACK_FIXSTR | 2), 'o', 'p' };
        int r;

        r = pack_head(pk, id, 3 + extra_keys);
        if (r < 0)
                return r;
        if (pk->callback(pk->data, op_key, sizeof(op_key)) < 0)
                return -ENOMEM;
        return pack_string(pk, op);
}

int reply_pack_begin(msgpack_packer *pk, uint64_t id, size_t extra_keys) {
        static const char ok_true[] = { (char) (MSGPACK_FIXSTR | 2), 'o', 'k', (char) MSGPACK_TRUE };
        int r;

        r = pack_head(pk, id, 3 + extra_keys);
        if (r < 0)
                return r;
        return pk->callback(pk->data, ok_true, sizeof(ok_true)) < 0 ? -ENOMEM : 0;
}

int reply_pack_error(msgpack_packer *pk, uint64_t id, int code, const char *reason, int64_t op_index) {
        if (msgpack_pack_map(pk, 4) < 0)
                return -ENOMEM;
        if (pack_key_uint(pk, "v", PMUGATE_PROTOCOL_VERSION) < 0 || pack_key_uint(pk, "id", id) < 0 ||
            pack_key_bool(pk, "ok", false) < 0 || pack_string(pk, "error") < 0)
                return -ENOMEM;
        if (msgpack_pack_map(pk, op_index >= 0 ? 4 : 3) < 0)
                return -ENOMEM;
        if (pack_key_uint(pk, "code", (uint64_t) code) < 0 ||
            pack_key_string(pk, "name", proto_error_name(code) ?: "unknown") < 0 ||
            pack_key_string(pk, "reason", reason ?: proto_error_reason(code)) < 0)
                return -ENOMEM;
        if (op_index >= 0 && pack_key_uint(pk, "op", (uint64_t) op_index) < 0)
                return -ENOMEM;
        return 0;
}

int pack_tuple(msgpack_packer *pk, const msgpack_object *fields, size_t n) {
        if (n > UINT32_MAX || msgpack_pack_array(pk, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (msgpack_pack_object(pk, fields[i]) < 0)
                        return -ENOMEM;
        return 0;
}

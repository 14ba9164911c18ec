/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: request decoding, the msgpack pre-check, and reply encoding
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "error.h"
#include "macro.h"
#include "message.h"

typedef struct Fixture {
        RequestBuffer *buf;
        msgpack_sbuffer sb;
        msgpack_packer pk;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->buf = request_buffer_new();
        assert_non_null(f->buf);
        msgpack_sbuffer_init(&f->sb);
        msgpack_packer_init(&f->pk, &f->sb, msgpack_sbuffer_write);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        request_buffer_free(f->buf);
        msgpack_sbuffer_destroy(&f->sb);
        free(f);
        return 0;
}

static int decode(Fixture *f, Request *req, DecodeError *e) {
        return request_decode(f->sb.data, f->sb.size, f->buf, req, e);
}

static void pack_op(msgpack_packer *pk, const char *kind, uint32_t target, uint32_t reg, bool write, uint64_t value) {
        msgpack_pack_array(pk, write ? 4 : 3);
        pack_string(pk, kind);
        msgpack_pack_uint32(pk, target);
        msgpack_pack_uint32(pk, reg);
        if (write)
                msgpack_pack_uint64(pk, value);
}

static void test_hello(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        assert_int_equal(request_pack_begin(&f->pk, 42, "hello", 0), 0);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.type, REQUEST_HELLO);
        assert_int_equal(req.id, 42);
}

/* The fast header bytes equal what msgpack-c's packer writes for the same map. */
static void test_headers_match_msgpack_c(void **state) {
        static const uint64_t ids[] = { 0, 1, 127, 128, 65536, UINT64_MAX };
        (void) state;

        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
                msgpack_sbuffer mine, theirs;
                msgpack_packer a, b;

                msgpack_sbuffer_init(&mine);
                msgpack_sbuffer_init(&theirs);
                msgpack_packer_init(&a, &mine, msgpack_sbuffer_write);
                msgpack_packer_init(&b, &theirs, msgpack_sbuffer_write);
                assert_int_equal(request_pack_begin(&a, ids[i], "batch", 1), 0);
                assert_int_equal(reply_pack_begin(&a, ids[i], 2), 0);
                assert_int_equal(reply_pack_begin(&a, ids[i], 14), 0);
                msgpack_pack_map(&b, 4);
                pack_key_uint(&b, "v", PMUGATE_PROTOCOL_VERSION);
                pack_key_uint(&b, "id", ids[i]);
                pack_key_string(&b, "op", "batch");
                msgpack_pack_map(&b, 5);
                pack_key_uint(&b, "v", PMUGATE_PROTOCOL_VERSION);
                pack_key_uint(&b, "id", ids[i]);
                pack_key_bool(&b, "ok", true);
                msgpack_pack_map(&b, 17);
                pack_key_uint(&b, "v", PMUGATE_PROTOCOL_VERSION);
                pack_key_uint(&b, "id", ids[i]);
                pack_key_bool(&b, "ok", true);
                assert_int_equal(mine.size, theirs.size);
                assert_memory_equal(mine.data, theirs.data, mine.size);
                msgpack_sbuffer_destroy(&mine);
                msgpack_sbuffer_destroy(&theirs);
        }
}

static void test_duplicate_fixed_keys(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        msgpack_pack_map(&f->pk, 4);
        pack_key_uint(&f->pk, "v", 1);
        pack_key_uint(&f->pk, "id", 3);
        pack_key_string(&f->pk, "op", "hello");
        pack_key_string(&f->pk, "op", "batch");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "duplicate"));
        assert_true(e.has_id);
}

static void test_batch_ops(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        request_pack_begin(&f->pk, 1, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 4);
        pack_op(&f->pk, "r", 3, 0xC1, false, 0);
        pack_op(&f->pk, "w", 2, 0x186, true, UINT64_MAX);
        pack_op(&f->pk, "pr", 1, 0xA0, false, 0);
        pack_op(&f->pk, "pw", 0, 0xF4, true, 3);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_ops, 4);
        assert_int_equal(req.ops[0].kind, REG_OP_MSR_READ);
        assert_int_equal(req.ops[0].target, 3);
        assert_int_equal(req.ops[0].reg, 0xC1);
        assert_int_equal(req.ops[1].kind, REG_OP_MSR_WRITE);
        assert_true(req.ops[1].value == UINT64_MAX);
        assert_int_equal(req.ops[2].kind, REG_OP_PCI_READ);
        assert_int_equal(req.ops[3].kind, REG_OP_PCI_WRITE);
        assert_int_equal(req.ops[3].value, 3);
}

/* ["cr", counter]: a package counter read, one argument, mixed with other ops */
static void test_counter_read(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        request_pack_begin(&f->pk, 1, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 3);
        msgpack_pack_array(&f->pk, 2);
        pack_string(&f->pk, "cr");
        msgpack_pack_uint32(&f->pk, 7);
        pack_op(&f->pk, "r", 3, 0x611, false, 0);
        msgpack_pack_array(&f->pk, 2);
        pack_string(&f->pk, "cr");
        msgpack_pack_uint32(&f->pk, UINT32_MAX);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_ops, 3);
        assert_int_equal(req.ops[0].kind, REG_OP_COUNTER_READ);
        assert_int_equal(req.ops[0].target, 7);
        assert_false(reg_op_is_write(&req.ops[0]));
        assert_false(reg_op_names_cpu(&req.ops[0]));
        assert_true(reg_op_names_cpu(&req.ops[1]));
        assert_int_equal(req.ops[2].target, UINT32_MAX);

        /* two arguments, none, a negative index: bad-field */
        for (int k = 0; k < 3; k++) {
                msgpack_sbuffer_clear(&f->sb);
                request_pack_begin(&f->pk, 2, "batch", 1);
                pack_string(&f->pk, "ops");
                msgpack_pack_array(&f->pk, 1);
                msgpack_pack_array(&f->pk, k == 0 ? 3 : k == 1 ? 1 : 2);
                pack_string(&f->pk, "cr");
                if (k == 0) {
                        msgpack_pack_uint32(&f->pk, 1);
                        msgpack_pack_uint32(&f->pk, 2);
                } else if (k == 2)
                        msgpack_pack_int32(&f->pk, -1);
                assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        }
}

static void test_sweep_is_cpu_major(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        request_pack_begin(&f->pk, 1, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 3);
        pack_string(&f->pk, "R");
        msgpack_pack_array(&f->pk, 2);
        msgpack_pack_uint32(&f->pk, 4);
        msgpack_pack_uint32(&f->pk, 5);
        msgpack_pack_array(&f->pk, 3);
        msgpack_pack_uint32(&f->pk, 0xC1);
        msgpack_pack_uint32(&f->pk, 0xC2);
        msgpack_pack_uint32(&f->pk, 0x309);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_ops, 6);
        assert_int_equal(req.ops[0].target, 4);
        assert_int_equal(req.ops[0].reg, 0xC1);
        assert_int_equal(req.ops[2].reg, 0x309);
        assert_int_equal(req.ops[3].target, 5);
        assert_int_equal(req.ops[3].reg, 0xC1);
}

static void test_sweep_limit_checked_before_expansion(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        request_pack_begin(&f->pk, 9, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 3);
        pack_string(&f->pk, "R");
        msgpack_pack_array(&f->pk, PMUGATE_LIST_MAX);
        for (unsigned i = 0; i < PMUGATE_LIST_MAX; i++)
                msgpack_pack_uint32(&f->pk, i);
        msgpack_pack_array(&f->pk, PMUGATE_OPS_PER_BATCH_MAX / PMUGATE_LIST_MAX + 1);
        for (unsigned i = 0; i <= PMUGATE_OPS_PER_BATCH_MAX / PMUGATE_LIST_MAX; i++)
                msgpack_pack_uint32(&f->pk, i);
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_int_equal(f->buf->ops_capacity, PMUGATE_OPS_KEPT);
        assert_true(e.has_id);
        assert_int_equal(e.id, 9);
}

static void test_refusals(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;
        static const uint8_t not_map[] = { 0x93, 0x01, 0x02, 0x03 };
        static const uint8_t huge_array[] = { 0x81, 0xa2, 'i', 'd', 0xdd, 0x7f, 0xff, 0xff, 0xff };
        static const uint8_t reserved[] = { 0xc1 };

        assert_int_equal(request_decode(not_map, sizeof(not_map), f->buf, &req, &e), PROTO_E_MALFORMED);
        assert_int_equal(request_decode(huge_array, sizeof(huge_array), f->buf, &req, &e), PROTO_E_MALFORMED);
        assert_int_equal(request_decode(reserved, sizeof(reserved), f->buf, &req, &e), PROTO_E_MALFORMED);
        assert_int_equal(request_decode("", 0, f->buf, &req, &e), PROTO_E_MALFORMED);

        /* wrong version */
        msgpack_pack_map(&f->pk, 3);
        pack_key_uint(&f->pk, "v", 2);
        pack_key_uint(&f->pk, "id", 5);
        pack_key_string(&f->pk, "op", "hello");
        assert_int_equal(decode(f, &req, &e), PROTO_E_VERSION);
        assert_true(e.has_id);
        msgpack_sbuffer_clear(&f->sb);

        /* unknown op */
        request_pack_begin(&f->pk, 1, "frobnicate", 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_UNKNOWN_OP);
        msgpack_sbuffer_clear(&f->sb);

        /* unknown key */
        request_pack_begin(&f->pk, 1, "hello", 1);
        pack_key_uint(&f->pk, "ops", 1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        msgpack_sbuffer_clear(&f->sb);

        /* missing required key */
        request_pack_begin(&f->pk, 1, "batch", 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        msgpack_sbuffer_clear(&f->sb);

        /* wrong types inside an op */
        request_pack_begin(&f->pk, 1, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 3);
        pack_string(&f->pk, "r");
        msgpack_pack_int32(&f->pk, -1);
        msgpack_pack_uint32(&f->pk, 0xC1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "ops[0]"));
        msgpack_sbuffer_clear(&f->sb);

        /* register wider than 32 bits */
        request_pack_begin(&f->pk, 1, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 3);
        pack_string(&f->pk, "r");
        msgpack_pack_uint32(&f->pk, 0);
        msgpack_pack_uint64(&f->pk, UINT64_C(0x100000000));
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        msgpack_sbuffer_clear(&f->sb);

        /* job with a character outside the allowed set */
        request_pack_begin(&f->pk, 1, "revoke", 1);
        pack_key_string(&f->pk, "job", "12;rm");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
}

/* Packs {"v", "id", "op": "batch", "ops": [[kind (n bytes), args...]]}: args scalars, or
 * with sweep the [cpus] [regs] [values] of a sweep write. */
static void pack_kind_op(Fixture *f, const char *kind, size_t n, unsigned args, bool sweep) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 1, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 1 + args);
        msgpack_pack_str(&f->pk, n);
        msgpack_pack_str_body(&f->pk, kind, n);
        for (unsigned i = 0; i < args; i++) {
                /* CPU 0, register 0x186, value 0; in a sweep each as a list of one */
                if (sweep)
                        msgpack_pack_array(&f->pk, 1);
                msgpack_pack_uint32(&f->pk, i == 1 ? 0x186 : 0);
        }
}

/* Kinds are matched on the whole string: a NUL or any other byte in front of, after or
 * instead of a kind's letters is an unknown kind, never another kind. */
static void test_op_kinds_whole_strings(void **state) {
        static const struct {
                const char *kind;
                size_t n;
                unsigned args;
                bool sweep;
                int code;
                uint8_t decoded;
        } cases[] = {
                { "r", 1, 2, false, 0, REG_OP_MSR_READ },
                { "w", 1, 3, false, 0, REG_OP_MSR_WRITE },
                { "wm", 2, 4, false, 0, REG_OP_MSR_WRITE },
                { "pr", 2, 2, false, 0, REG_OP_PCI_READ },
                { "pw", 2, 3, false, 0, REG_OP_PCI_WRITE },
                { "W", 1, 3, true, 0, REG_OP_MSR_WRITE },
                { "R", 1, 2, true, 0, REG_OP_MSR_READ },
                /* Each with the arguments of the kind it only looks like. */
                { "\0W", 2, 3, true, PROTO_E_BAD_FIELD, 0 },
                { "W\0", 2, 3, true, PROTO_E_BAD_FIELD, 0 },
                { "\0R", 2, 2, true, PROTO_E_BAD_FIELD, 0 },
                { "WW", 2, 3, true, PROTO_E_BAD_FIELD, 0 },
                { "\0\0W", 3, 3, true, PROTO_E_BAD_FIELD, 0 },
                { "\0w", 2, 3, false, PROTO_E_BAD_FIELD, 0 },
                { "\0r", 2, 2, false, PROTO_E_BAD_FIELD, 0 },
                { "r\0", 2, 2, false, PROTO_E_BAD_FIELD, 0 },
                { "wmx", 3, 4, false, PROTO_E_BAD_FIELD, 0 },
                { "rw", 2, 2, false, PROTO_E_BAD_FIELD, 0 },
                { "", 0, 2, false, PROTO_E_BAD_FIELD, 0 },
                /* High bytes: shifting them as signed chars was undefined behaviour. */
                { "\xffm", 2, 4, false, PROTO_E_BAD_FIELD, 0 },
                { "\x80\x80", 2, 2, false, PROTO_E_BAD_FIELD, 0 },
                { "w\xed", 2, 3, false, PROTO_E_BAD_FIELD, 0 },
                { "\xd7", 1, 3, false, PROTO_E_BAD_FIELD, 0 },
        };
        Fixture *f = *state;
        DecodeError e;
        Request req;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                pack_kind_op(f, cases[i].kind, cases[i].n, cases[i].args, cases[i].sweep);
                memset(&req, 0, sizeof(req));
                if (decode(f, &req, &e) != cases[i].code)
                        fail_msg("case %zu: kind of %zu bytes decoded with %d, expected %d (%s)", i,
                                 cases[i].n, e.code, cases[i].code, e.reason);
                if (cases[i].code != 0) {
                        assert_non_null(strstr(e.reason, "unknown kind"));
                        continue;
                }
                assert_int_equal(req.n_ops, 1);
                assert_int_equal(req.ops[0].kind, cases[i].decoded);
        }
}

/* One "R" of count CPUs (all CPU 0) by n_regs registers. */
static void pack_sweep(msgpack_packer *pk, unsigned count, unsigned n_regs) {
        msgpack_pack_array(pk, 3);
        pack_string(pk, "R");
        msgpack_pack_array(pk, count);
        for (unsigned i = 0; i < count; i++)
                msgpack_pack_uint32(pk, 0);
        msgpack_pack_array(pk, n_regs);
        for (unsigned i = 0; i < n_regs; i++)
                msgpack_pack_uint32(pk, 0xC1);
}

static void test_too_many_ops(void **state) {
        Fixture *f = *state;
        unsigned sweeps = PMUGATE_OPS_PER_BATCH_MAX / PMUGATE_LIST_MAX;
        DecodeError e;
        Request req;

        /* exactly the limit: served, the buffer grows to it and shrinks back */
        request_pack_begin(&f->pk, 1, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        pack_sweep(&f->pk, PMUGATE_LIST_MAX, sweeps);
        assert_true(f->sb.size <= PMUGATE_REQUEST_SIZE_MAX);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_ops, PMUGATE_OPS_PER_BATCH_MAX);
        assert_int_equal(req.ops[PMUGATE_OPS_PER_BATCH_MAX - 1].reg, 0xC1);
        assert_int_equal(f->buf->ops_capacity, PMUGATE_OPS_PER_BATCH_MAX);
        request_buffer_shrink(f->buf);
        assert_int_equal(f->buf->ops_capacity, PMUGATE_OPS_KEPT);

        /* one more op, as a single op after the sweeps */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 2, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 2);
        pack_sweep(&f->pk, PMUGATE_LIST_MAX, sweeps);
        pack_op(&f->pk, "r", 0, 0xC1, false, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_non_null(strstr(e.reason, "131072"));

        /* more single ops in the array than a batch may hold, refused from the array header */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 3, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, PMUGATE_OPS_PER_BATCH_MAX + 1);
        for (unsigned i = 0; i < 8000; i++)
                pack_op(&f->pk, "r", 0, 0xC1, false, 0);
        assert_int_not_equal(decode(f, &req, &e), 0);
}

static void pack_each_header(Fixture *f, const uint32_t *cpus, size_t n_cpus, size_t n_steps) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 7, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 3);
        pack_string(&f->pk, "each");
        msgpack_pack_array(&f->pk, n_cpus);
        for (size_t i = 0; i < n_cpus; i++)
                msgpack_pack_uint32(&f->pk, cpus[i]);
        msgpack_pack_array(&f->pk, n_steps);
}

static void test_each_expands_cpu_major(void **state) {
        static const uint32_t cpus[] = { 4, 9 };
        Fixture *f = *state;
        DecodeError e;
        Request req;

        pack_each_header(f, cpus, 2, 3);
        msgpack_pack_array(&f->pk, 4);
        pack_string(&f->pk, "wm");
        msgpack_pack_uint32(&f->pk, 0x38F);
        msgpack_pack_uint64(&f->pk, 0);
        msgpack_pack_uint64(&f->pk, 0x7);
        msgpack_pack_array(&f->pk, 2);
        pack_string(&f->pk, "r");
        msgpack_pack_uint32(&f->pk, 0x10);
        msgpack_pack_array(&f->pk, 3);
        pack_string(&f->pk, "w");
        msgpack_pack_uint32(&f->pk, 0x30C);
        msgpack_pack_uint64(&f->pk, UINT64_MAX);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_ops, 6);
        for (size_t c = 0; c < 2; c++) {
                const RegOp *op = &req.ops[c * 3];

                assert_int_equal(op[0].kind, REG_OP_MSR_WRITE);
                assert_int_equal(op[0].target, cpus[c]);
                assert_int_equal(op[0].reg, 0x38F);
                assert_int_equal(op[0].value, 0);
                assert_int_equal(op[0].mask, 0x7);
                assert_int_equal(op[1].kind, REG_OP_MSR_READ);
                assert_int_equal(op[1].target, cpus[c]);
                assert_int_equal(op[1].reg, 0x10);
                assert_int_equal(op[2].kind, REG_OP_MSR_WRITE);
                assert_int_equal(op[2].reg, 0x30C);
                assert_true(op[2].value == UINT64_MAX);
                assert_true(op[2].mask == UINT64_MAX);
        }

        /* no CPUs or no steps: nothing to run, and that is not an error */
        pack_each_header(f, cpus, 0, 0);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_ops, 0);
}

static void test_each_refusals(void **state) {
        static const uint32_t cpus[] = { 0, 1 };
        static uint32_t many_cpus[PMUGATE_LIST_MAX + 1];
        Fixture *f = *state;
        DecodeError e;
        Request req;
        static const struct {
                const char *kind;
                unsigned args;
                const char *reason;
        } steps[] = {
                { "pr", 2, "is not r, w or wm" },
                { "R", 2, "is not r, w or wm" },
                { "each", 2, "is not r, w or wm" },
                { "cr", 1, "is not r, w or wm" },
                { "r", 2, "takes 1 arguments" },
                { "w", 1, "takes 2 arguments" },
                { "wm", 2, "takes 3 arguments" },
        };

        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                pack_each_header(f, cpus, 2, 1);
                msgpack_pack_array(&f->pk, 1 + steps[i].args);
                pack_string(&f->pk, steps[i].kind);
                for (unsigned a = 0; a < steps[i].args; a++)
                        msgpack_pack_uint32(&f->pk, 0x10);
                assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
                assert_non_null(strstr(e.reason, steps[i].reason));
        }

        /* a register past 32 bits, a step that is no array */
        pack_each_header(f, cpus, 2, 1);
        msgpack_pack_array(&f->pk, 2);
        pack_string(&f->pk, "r");
        msgpack_pack_uint64(&f->pk, UINT64_C(1) << 32);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "register"));
        pack_each_header(f, cpus, 2, 1);
        msgpack_pack_uint32(&f->pk, 5);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);

        /* more steps than one CPU may run */
        pack_each_header(f, cpus, 2, PMUGATE_EACH_OPS_MAX + 1);
        for (unsigned i = 0; i <= PMUGATE_EACH_OPS_MAX; i++) {
                msgpack_pack_array(&f->pk, 2);
                pack_string(&f->pk, "r");
                msgpack_pack_uint32(&f->pk, 0x10);
        }
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);

        /* a CPU list longer than a list may be */
        pack_each_header(f, many_cpus, ELEMENTSOF(many_cpus), 1);
        msgpack_pack_array(&f->pk, 2);
        pack_string(&f->pk, "r");
        msgpack_pack_uint32(&f->pk, 0x10);
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);

        /* expanding past the batch limit is refused before anything is expanded */
        pack_each_header(f, many_cpus, PMUGATE_LIST_MAX, PMUGATE_EACH_OPS_MAX);
        for (unsigned i = 0; i < PMUGATE_EACH_OPS_MAX; i++) {
                msgpack_pack_array(&f->pk, 2);
                pack_string(&f->pk, "r");
                msgpack_pack_uint32(&f->pk, 0x10);
        }
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_int_equal(f->buf->ops_capacity, PMUGATE_OPS_KEPT);

        /* the wrong shape of the op itself */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 8, "batch", 1);
        pack_string(&f->pk, "ops");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 2);
        pack_string(&f->pk, "each");
        msgpack_pack_array(&f->pk, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'each' takes"));
}

static void test_too_large(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;
        char *big = calloc(1, PMUGATE_REQUEST_SIZE_MAX + 1);

        assert_non_null(big);
        assert_int_equal(request_decode(big, PMUGATE_REQUEST_SIZE_MAX + 1, f->buf, &req, &e), PROTO_E_TOO_LARGE);
        free(big);
}

static void test_msgpack_check(void **state) {
        static const uint8_t ok[] = { 0x92, 0x01, 0xa1, 'x' };
        static const uint8_t trailing[] = { 0x01, 0x02 };
        static const uint8_t short_str[] = { 0xa5, 'a' };
        static const uint8_t deep[] = { 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x01 };

        (void) state;
        assert_int_equal(msgpack_check(ok, sizeof(ok), 4), 0);
        assert_int_equal(msgpack_check(trailing, sizeof(trailing), 4), -EBADMSG);
        assert_int_equal(msgpack_check(short_str, sizeof(short_str), 4), -EBADMSG);
        assert_int_equal(msgpack_check(deep, sizeof(deep), 4), -EBADMSG);
        assert_int_equal(msgpack_check(deep, sizeof(deep), 8), 0);
}

static void test_error_table(void **state) {
        (void) state;
        for (int code = 1; code < _PROTO_E_MAX; code++) {
                assert_non_null(proto_error_name(code));
                assert_true(proto_error_to_errno(code) > 0);
        }
        assert_null(proto_error_name(_PROTO_E_MAX));
        assert_int_equal(proto_error_to_errno(PROTO_E_REG_FORBIDDEN), EPERM);
}

static void test_int_arrays_match_msgpack_c(void **state) {
        static const int32_t ints[] = { 0, 1, 127, 128, 255, 256, 65535, 65536, INT32_MAX, -1, -5, -32, -33, -128,
                                        -129, -32768, -32769, INT32_MIN };
        static const uint64_t uints[] = { 0, 1, 127, 128, 255, 256, 65535, 65536, UINT32_MAX, UINT64_C(1) << 32,
                                          UINT64_C(0xFFFFFFFFFFFF), UINT64_MAX };
        msgpack_sbuffer mine, theirs;
        msgpack_packer pk;

        (void) state;
        for (size_t n = 0; n < 40; n += 13) {
                int32_t iv[40] = {};
                uint64_t uv[40] = {};

                for (size_t i = 0; i < n; i++) {
                        iv[i] = ints[i % (sizeof(ints) / sizeof(ints[0]))];
                        uv[i] = uints[i % (sizeof(uints) / sizeof(uints[0]))];
                }
                msgpack_sbuffer_init(&mine);
                msgpack_sbuffer_init(&theirs);
                msgpack_packer_init(&pk, &theirs, msgpack_sbuffer_write);
                assert_int_equal(pack_int32_array(&mine, iv, n), 0);
                assert_int_equal(pack_uint64_array(&mine, uv, n), 0);
                msgpack_pack_array(&pk, n);
                for (size_t i = 0; i < n; i++)
                        msgpack_pack_int32(&pk, iv[i]);
                msgpack_pack_array(&pk, n);
                for (size_t i = 0; i < n; i++)
                        msgpack_pack_uint64(&pk, uv[i]);
                assert_int_equal(mine.size, theirs.size);
                assert_memory_equal(mine.data, theirs.data, mine.size);
                msgpack_sbuffer_destroy(&mine);
                msgpack_sbuffer_destroy(&theirs);
        }
        {
                /* 70000 entries need the 32-bit array header. */
                static int32_t big[70000];
                msgpack_sbuffer_init(&mine);
                assert_int_equal(pack_int32_array(&mine, big, 70000), 0);
                assert_int_equal((uint8_t) mine.data[0], 0xdd);
                assert_int_equal(mine.size, 5 + 70000);
                msgpack_sbuffer_destroy(&mine);
        }
}

/* Every op kind and request type is found by its own name and by nothing shorter or longer,
 * and only r, w and wm are steps of "each". */
static void test_wire_names_round_trip(void **state) {
        (void) state;

        for (int k = 0; k < _WIRE_OP_MAX; k++) {
                const char *name = wire_op_to_string(k);

                assert_non_null(name);
                assert_int_equal(strlen(name), wire_ops[k].name_len);
                assert_int_equal(wire_op_from_string(name, strlen(name)), k);
                /* a prefix is another kind ("w" of "wm") or none */
                assert_int_not_equal(wire_op_from_string(name, strlen(name) - 1), k);
                assert_int_equal(wire_ops[k].step_args > 0,
                                 k == WIRE_OP_READ || k == WIRE_OP_WRITE || k == WIRE_OP_WRITE_MASKED);
                for (int other = 0; other < k; other++)
                        assert_string_not_equal(name, wire_op_to_string(other));
        }
        assert_null(wire_op_to_string(_WIRE_OP_MAX));
        assert_int_equal(wire_op_from_string("eac", 3), -EINVAL);
        assert_int_equal(wire_op_from_string("eachx", 5), -EINVAL);
        assert_int_equal(wire_op_from_string("each", 4), WIRE_OP_EACH);

        for (int t = 0; t < _REQUEST_TYPE_MAX; t++) {
                const char *name = request_type_to_string(t);

                assert_non_null(name);
                assert_int_equal(request_type_from_string(name, strlen(name)), t);
                assert_int_equal(request_type_from_string(name, strlen(name) - 1), -EINVAL);
        }
        assert_null(request_type_to_string(_REQUEST_TYPE_MAX));
        assert_int_equal(request_type_from_string("hellox", 6), -EINVAL);
}

/* A reply tuple packed by position is byte for byte what the typed packers wrote before:
 * the daemon's hello and status replies did not change on the wire. */
static void test_tuple_matches_typed_packers(void **state) {
        static const int64_t ints[] = { 0, 1, 127, 128, 255, 256, 65535, 65536, -1, -32, -33, -128, -129,
                                        -32768, -32769, INT32_MIN, INT32_MAX };
        msgpack_sbuffer a, b;
        msgpack_packer pa, pb;

        (void) state;
        msgpack_sbuffer_init(&a);
        msgpack_sbuffer_init(&b);
        msgpack_packer_init(&pa, &a, msgpack_sbuffer_write);
        msgpack_packer_init(&pb, &b, msgpack_sbuffer_write);

        for (size_t i = 0; i < ELEMENTSOF(ints); i++) {
                msgpack_sbuffer_clear(&a);
                msgpack_sbuffer_clear(&b);
                assert_int_equal(pack_tuple(&pa, (const msgpack_object[3]) {
                        tuple_int(ints[i]), tuple_uint((uint64_t) ints[i] & UINT32_MAX),
                        tuple_uint((uint16_t) ints[i]) }, 3), 0);
                msgpack_pack_array(&pb, 3);
                msgpack_pack_int32(&pb, (int32_t) ints[i]);
                msgpack_pack_uint32(&pb, (uint32_t) ints[i]);
                msgpack_pack_uint16(&pb, (uint16_t) ints[i]);
                assert_int_equal(a.size, b.size);
                assert_memory_equal(a.data, b.data, a.size);
        }

        msgpack_sbuffer_clear(&a);
        msgpack_sbuffer_clear(&b);
        assert_int_equal(pack_tuple(&pa, (const msgpack_object[_HELLO_COUNTER_FIELDS]) {
                [HELLO_COUNTER_INDEX] = tuple_uint(3),
                [HELLO_COUNTER_NAME] = tuple_string("energy-pkg"),
                [HELLO_COUNTER_PACKAGE] = tuple_int(-1),
                [HELLO_COUNTER_WIDTH] = tuple_uint(32),
                [HELLO_COUNTER_SCALE] = tuple_double(6.103515625e-05),
                [HELLO_COUNTER_UNIT] = tuple_string("J"),
                [HELLO_COUNTER_CLASS] = tuple_string(""),
                [HELLO_COUNTER_ERROR] = tuple_string(NULL),
        }, _HELLO_COUNTER_FIELDS), 0);
        msgpack_pack_array(&pb, 8);
        msgpack_pack_uint32(&pb, 3);
        pack_string(&pb, "energy-pkg");
        msgpack_pack_int32(&pb, -1);
        msgpack_pack_uint8(&pb, 32);
        msgpack_pack_double(&pb, 6.103515625e-05);
        pack_string(&pb, "J");
        pack_string(&pb, "");
        pack_string(&pb, "");
        assert_int_equal(a.size, b.size);
        assert_memory_equal(a.data, b.data, a.size);

        msgpack_sbuffer_clear(&a);
        msgpack_sbuffer_clear(&b);
        assert_int_equal(pack_tuple(&pa, (const msgpack_object[3]) {
                [0] = tuple_bool(true), [2] = tuple_bool(false) }, 3), 0);
        msgpack_pack_array(&pb, 3);
        msgpack_pack_true(&pb);
        msgpack_pack_nil(&pb);
        msgpack_pack_false(&pb);
        assert_int_equal(a.size, b.size);
        assert_memory_equal(a.data, b.data, a.size);

        msgpack_sbuffer_destroy(&a);
        msgpack_sbuffer_destroy(&b);
}

static void pack_event(msgpack_packer *pk, const char *pmu, uint64_t config, const char *extra_key) {
        msgpack_pack_map(pk, extra_key ? 3 : 2);
        pack_key_string(pk, "pmu", pmu);
        pack_key_uint(pk, "config", config);
        if (extra_key)
                pack_key_uint(pk, extra_key, 1);
}

/* A perf_open of scope process with one group of two events, or with extra_key in the event. */
static void pack_perf_open(Fixture *f, const char *scope, const char *event_key) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 2);
        pack_key_string(&f->pk, "scope", scope);
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 2);
        pack_event(&f->pk, "software", 1, event_key);
        pack_event(&f->pk, "software", 2, NULL);
}

static void test_perf_open(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        pack_perf_open(f, "process", NULL);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.type, REQUEST_PERF_OPEN);
        assert_int_equal(req.perf_scope, PERF_SCOPE_PROCESS);
        assert_true(req.follow);
        assert_false(req.on_exec);
        assert_false(req.handoff);
        assert_false(req.has_pid);
        assert_int_equal(req.n_perf_groups, 1);
        assert_int_equal(req.perf_group_sizes[0], 2);
        assert_int_equal(req.n_perf_events, 2);
        assert_string_equal(req.perf_events[0].pmu, "software");
        assert_int_equal(req.perf_events[1].config, 2);
        assert_false(req.perf_events[0].count_kernel);

        /* A full event: every key it may have. */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 5);
        pack_key_string(&f->pk, "scope", "process");
        pack_key_uint(&f->pk, "pid", 1234);
        pack_string(&f->pk, "follow");
        msgpack_pack_false(&f->pk);
        pack_string(&f->pk, "on_exec");
        msgpack_pack_true(&f->pk);
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_map(&f->pk, 6);
        pack_key_string(&f->pk, "pmu", "cpu");
        pack_key_uint(&f->pk, "config", 0x00c0);
        pack_key_uint(&f->pk, "config1", 7);
        pack_key_uint(&f->pk, "config2", 8);
        pack_string(&f->pk, "kernel");
        msgpack_pack_true(&f->pk);
        pack_key_string(&f->pk, "name", "INST_RETIRED.ANY");
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.pid, 1234);
        assert_false(req.follow);
        assert_true(req.on_exec);
        assert_true(req.perf_events[0].has_config1 && req.perf_events[0].has_config2);
        assert_int_equal(req.perf_events[0].config2, 8);
        assert_true(req.perf_events[0].count_kernel);
        assert_string_equal(req.perf_events[0].name, "INST_RETIRED.ANY");

        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 10, "perf_read", 1);
        pack_key_uint(&f->pk, "handle", 3);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.type, REQUEST_PERF_READ);
        assert_int_equal(req.handle, 3);
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 11, "perf_close", 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
}

/* perf_open of scope with "thread" and the booleans given (follow, on_exec: -1 not given). */
static void pack_perf_thread(Fixture *f, const char *scope, int follow, int on_exec) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 4 + (follow >= 0) + (on_exec >= 0));
        pack_key_string(&f->pk, "scope", scope);
        pack_key_uint(&f->pk, "pid", 4321);
        pack_string(&f->pk, "thread");
        msgpack_pack_true(&f->pk);
        if (follow >= 0) {
                pack_string(&f->pk, "follow");
                (void) (follow ? msgpack_pack_true(&f->pk) : msgpack_pack_false(&f->pk));
        }
        if (on_exec >= 0) {
                pack_string(&f->pk, "on_exec");
                (void) (on_exec ? msgpack_pack_true(&f->pk) : msgpack_pack_false(&f->pk));
        }
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 1);
        pack_event(&f->pk, "software", 1, NULL);
}

static void test_perf_open_thread(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        /* one thread alone: follow defaults to false, and may be given false */
        pack_perf_thread(f, "process", -1, -1);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_true(req.thread);
        assert_false(req.follow);
        assert_int_equal(req.pid, 4321);
        pack_perf_thread(f, "process", 0, 0);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_true(req.thread);
        assert_false(req.follow);
        pack_perf_open(f, "process", NULL);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_false(req.thread);

        pack_perf_thread(f, "process", 1, -1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'follow' must be false"));
        pack_perf_thread(f, "process", -1, 1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'on_exec' is not accepted"));
        pack_perf_thread(f, "job", -1, -1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "belong to scope 'process'"));
}

/* perf_open of scope with "job": ID (a monitor's or an admin's, for the job it names). */
static void pack_perf_named_job(Fixture *f, const char *scope, const char *job) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 3);
        pack_key_string(&f->pk, "scope", scope);
        pack_key_string(&f->pk, "job", job);
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 1);
        pack_event(&f->pk, "hardware", 0, NULL);
}

static void test_perf_open_named_job(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        pack_perf_named_job(f, "job", "4711.batch");
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.perf_scope, PERF_SCOPE_JOB);
        assert_true(req.has_job);
        assert_string_equal(req.job, "4711.batch");
        pack_perf_open(f, "process", NULL);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_false(req.has_job);

        pack_perf_named_job(f, "process", "4711");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'job' belongs to scope 'job'"));
        /* a job id is checked as everywhere: never a path */
        pack_perf_named_job(f, "job", "../job_1");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'job' may hold only"));
        pack_perf_named_job(f, "job", "");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
}

/* A timing_open with the given keys: mode, pid, cpus (n of them from first), and period when
 * period_key; extra names one key more (with the value 1). */
static void pack_timing_open(Fixture *f, const char *mode, uint64_t pid, uint32_t first, size_t n, bool period_key,
                             uint64_t period, const char *extra) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 5, "timing_open", 4 + (period_key ? 1 : 0) + (extra ? 1 : 0));
        pack_key_string(&f->pk, "mode", mode);
        pack_key_uint(&f->pk, "pid", pid);
        pack_key_bool(&f->pk, "on_exec", true);
        pack_string(&f->pk, "cpus");
        msgpack_pack_array(&f->pk, n);
        for (size_t i = 0; i < n; i++)
                msgpack_pack_uint32(&f->pk, first + (uint32_t) i);
        if (period_key)
                pack_key_uint(&f->pk, "period", period);
        if (extra)
                pack_key_uint(&f->pk, extra, 1);
}

static void test_timing_open(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        pack_timing_open(f, "branches", 4242, 2, 3, true, 200003, NULL);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.type, REQUEST_TIMING_OPEN);
        assert_int_equal(req.timing_mode, TIMING_MODE_BRANCHES);
        assert_int_equal(req.pid, 4242);
        assert_true(req.on_exec);
        assert_true(req.has_period);
        assert_int_equal(req.period, 200003);
        assert_int_equal(req.n_cpus, 3);
        assert_int_equal(req.cpus[0], 2);
        assert_int_equal(req.cpus[2], 4);
        pack_timing_open(f, "ips", 1, 0, TIMING_CPUS_PER_OPEN, false, 0, NULL);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.timing_mode, TIMING_MODE_IPS);
        assert_false(req.has_period);
        assert_int_equal(req.n_cpus, TIMING_CPUS_PER_OPEN);

        /* each wrong value refused by name */
        pack_timing_open(f, "lbr", 1, 0, 1, false, 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'mode'"));
        pack_timing_open(f, "ips", 0, 0, 1, false, 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'pid'"));
        pack_timing_open(f, "ips", (uint64_t) INT32_MAX + 1, 0, 1, false, 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'pid'"));
        pack_timing_open(f, "ips", 1, 0, 1, true, 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'period'"));
        pack_timing_open(f, "ips", 1, 0, 0, false, 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'cpus'"));
        pack_timing_open(f, "ips", 1, 0, TIMING_CPUS_PER_OPEN + 1, false, 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_non_null(strstr(e.reason, "per timing_open"));
        /* perf_open's keys and an attr's are no keys of timing_open */
        pack_timing_open(f, "ips", 1, 0, 1, false, 0, "scope");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "unknown key 'scope' for operation 'timing_open'"));
        pack_timing_open(f, "ips", 1, 0, 1, false, 0, "sample_type");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "unknown key 'sample_type'"));
        pack_timing_open(f, "ips", 1, 0, 1, false, 0, "lbr");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);

        /* a CPU twice, a string for the period, no pid */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 5, "timing_open", 3);
        pack_key_string(&f->pk, "mode", "ips");
        pack_key_uint(&f->pk, "pid", 7);
        pack_string(&f->pk, "cpus");
        msgpack_pack_array(&f->pk, 2);
        msgpack_pack_uint32(&f->pk, 1);
        msgpack_pack_uint32(&f->pk, 1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "twice"));
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 5, "timing_open", 4);
        pack_key_string(&f->pk, "mode", "ips");
        pack_key_uint(&f->pk, "pid", 7);
        pack_key_string(&f->pk, "period", "100003");
        pack_string(&f->pk, "cpus");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_uint32(&f->pk, 1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'period'"));
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 5, "timing_open", 2);
        pack_key_string(&f->pk, "mode", "ips");
        pack_string(&f->pk, "cpus");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_uint32(&f->pk, 1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "missing a required key"));
}

/* A timing_open of one thread (tid) of pid, from now (on_exec only when on_exec >= 0). */
static void pack_timing_tid(Fixture *f, uint64_t tid, int on_exec) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 6, "timing_open", 4 + (on_exec >= 0));
        pack_key_string(&f->pk, "mode", "ips");
        pack_key_uint(&f->pk, "pid", 4242);
        pack_key_uint(&f->pk, "tid", tid);
        if (on_exec >= 0)
                pack_key_bool(&f->pk, "on_exec", on_exec);
        pack_string(&f->pk, "cpus");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_uint32(&f->pk, 0);
}

static void test_timing_open_tid(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        pack_timing_tid(f, 4250, -1);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_tids, 1);
        assert_false(req.has_tids);
        assert_int_equal(req.tids[0], 4250);
        assert_int_equal(req.pid, 4242);
        assert_false(req.on_exec);
        pack_timing_tid(f, 4250, 0);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.tids[0], 4250);

        /* without the key: no thread named */
        pack_timing_open(f, "ips", 1, 0, 1, false, 0, NULL);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_tids, 0);

        /* 0, past a pid's range, and with an exec still to come: refused by name */
        pack_timing_tid(f, 0, -1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'tid'"));
        pack_timing_tid(f, (uint64_t) INT32_MAX + 1, -1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'tid'"));
        pack_timing_tid(f, 4250, 1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'on_exec' is not accepted"));
        /* tid belongs to timing_open, not to perf_open (whose key is 'thread') */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 7, "perf_open", 1);
        pack_key_uint(&f->pk, "tid", 5);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "unknown key 'tid'"));
}

/* A timing_open of n threads (first, first + step, ...) of pid 4242 on n_cpus CPUs, with tid
 * too when tid > 0. */
static void pack_timing_tids(Fixture *f, size_t n, uint32_t first, uint32_t step, size_t n_cpus, uint32_t tid) {
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 8, "timing_open", 4 + (tid > 0));
        pack_key_string(&f->pk, "mode", "ips");
        pack_key_uint(&f->pk, "pid", 4242);
        if (tid > 0)
                pack_key_uint(&f->pk, "tid", tid);
        pack_string(&f->pk, "tids");
        msgpack_pack_array(&f->pk, n);
        for (size_t i = 0; i < n; i++)
                msgpack_pack_uint32(&f->pk, first + (uint32_t) i * step);
        pack_string(&f->pk, "cpus");
        msgpack_pack_array(&f->pk, n_cpus);
        for (size_t i = 0; i < n_cpus; i++)
                msgpack_pack_uint32(&f->pk, (uint32_t) i);
}

static void test_timing_open_tids(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        pack_timing_tids(f, 3, 4250, 1, 2, 0);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_true(req.has_tids);
        assert_int_equal(req.n_tids, 3);
        assert_int_equal(req.tids[0], 4250);
        assert_int_equal(req.tids[2], 4252);
        assert_int_equal(req.n_cpus, 2);

        /* the most threads, and the most events (63 threads on 4 CPUs are 252 <= 253) */
        pack_timing_tids(f, TIMING_TIDS_PER_OPEN, 5000, 1, 1, 0);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_int_equal(req.n_tids, TIMING_TIDS_PER_OPEN);
        pack_timing_tids(f, 63, 5000, 1, 4, 0);
        assert_int_equal(decode(f, &req, &e), 0);

        /* one thread more than the bound, events past what one reply passes */
        pack_timing_tids(f, TIMING_TIDS_PER_OPEN + 1, 5000, 1, 1, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_non_null(strstr(e.reason, "'tids'"));
        pack_timing_tids(f, TIMING_TIDS_PER_OPEN, 5000, 1, 4, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_non_null(strstr(e.reason, "256 events, at most 253"));

        /* empty, a duplicate, 0, beyond a pid's range, and with tid as well */
        pack_timing_tids(f, 0, 5000, 1, 1, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "at least one thread"));
        pack_timing_tids(f, 3, 5000, 0, 1, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "names thread 5000 twice"));
        pack_timing_tids(f, 2, 0, 1, 1, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'tids'[0]"));
        pack_timing_tids(f, 1, (uint32_t) INT32_MAX + 1, 1, 1, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'tids'[0]"));
        pack_timing_tids(f, 2, 5000, 1, 1, 4999);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "send one of them"));
}

static void test_grant_lbr(void **state) {
        Fixture *f = *state;
        DecodeError e;
        Request req;

        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 5, "grant", 3);
        pack_key_string(&f->pk, "job", "42");
        pack_key_uint(&f->pk, "uid", 1000);
        pack_key_bool(&f->pk, "lbr", true);
        assert_int_equal(decode(f, &req, &e), 0);
        assert_true(req.lbr);
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 5, "grant", 3);
        pack_key_string(&f->pk, "job", "42");
        pack_key_uint(&f->pk, "uid", 1000);
        pack_key_uint(&f->pk, "lbr", 1);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'lbr' must be true or false"));
}

static void test_perf_open_refusals(void **state) {
        static const char *const sampling[] = { "sample_period", "sample_freq", "sample_type", "freq", "bp_type",
                                                "bp_addr", "sample_regs_user", "sample_regs_intr", "sample_stack_user",
                                                "type", "disabled", "inherit", "exclude_kernel", "exclude_hv",
                                                "precise_ip", "kprobe_func", "read_format", "config3" };
        Fixture *f = *state;
        DecodeError e;
        Request req;

        /* Every attr field a client might try is refused by name, with why. */
        for (size_t i = 0; i < ELEMENTSOF(sampling); i++) {
                pack_perf_open(f, "process", sampling[i]);
                assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
                assert_non_null(strstr(e.reason, sampling[i]));
                assert_non_null(strstr(e.reason, "not accepted"));
        }
        pack_perf_open(f, "process", "frobnicate");
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "unknown field 'frobnicate'"));
        pack_perf_open(f, "everywhere", NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'scope'"));
        pack_perf_open(f, "cpu", NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "needs 'cpus'"));

        /* pid belongs to scope process */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 3);
        pack_key_string(&f->pk, "scope", "job");
        pack_key_uint(&f->pk, "pid", 1);
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 1);
        pack_event(&f->pk, "software", 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "belong to scope 'process'"));

        /* pmu names with bytes sysfs never has, a string config, an empty group */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 2);
        pack_key_string(&f->pk, "scope", "process");
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 1);
        pack_event(&f->pk, "../cpu", 0, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);
        assert_non_null(strstr(e.reason, "'pmu'"));
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 2);
        pack_key_string(&f->pk, "scope", "process");
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, 0);
        assert_int_equal(decode(f, &req, &e), PROTO_E_BAD_FIELD);

        /* too many events in a group, too many groups */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 2);
        pack_key_string(&f->pk, "scope", "process");
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, 1);
        msgpack_pack_array(&f->pk, PERF_GROUP_EVENTS_MAX + 1);
        for (unsigned i = 0; i < PERF_GROUP_EVENTS_MAX + 1; i++)
                pack_event(&f->pk, "software", i, NULL);
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_non_null(strstr(e.reason, "per group"));
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 2);
        pack_key_string(&f->pk, "scope", "process");
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, PERF_GROUPS_PER_OPEN_MAX + 1);
        for (unsigned g = 0; g < PERF_GROUPS_PER_OPEN_MAX + 1; g++) {
                msgpack_pack_array(&f->pk, 1);
                pack_event(&f->pk, "software", g, NULL);
        }
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_non_null(strstr(e.reason, "groups"));
        /* Within each group's limit, past the events of one perf_open. */
        msgpack_sbuffer_clear(&f->sb);
        request_pack_begin(&f->pk, 9, "perf_open", 2);
        pack_key_string(&f->pk, "scope", "process");
        pack_string(&f->pk, "groups");
        msgpack_pack_array(&f->pk, PERF_GROUPS_PER_OPEN_MAX);
        for (unsigned g = 0; g < PERF_GROUPS_PER_OPEN_MAX; g++) {
                msgpack_pack_array(&f->pk, 3);
                for (unsigned i = 0; i < 3; i++)
                        pack_event(&f->pk, "software", i, NULL);
        }
        assert_int_equal(decode(f, &req, &e), PROTO_E_TOO_MANY_OPS);
        assert_non_null(strstr(e.reason, "events in one perf_open"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_hello, setup, teardown),
                cmocka_unit_test(test_headers_match_msgpack_c),
                cmocka_unit_test_setup_teardown(test_duplicate_fixed_keys, setup, teardown),
                cmocka_unit_test_setup_teardown(test_batch_ops, setup, teardown),
                cmocka_unit_test_setup_teardown(test_counter_read, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sweep_is_cpu_major, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sweep_limit_checked_before_expansion, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_op_kinds_whole_strings, setup, teardown),
                cmocka_unit_test_setup_teardown(test_too_many_ops, setup, teardown),
                cmocka_unit_test_setup_teardown(test_each_expands_cpu_major, setup, teardown),
                cmocka_unit_test_setup_teardown(test_each_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_too_large, setup, teardown),
                cmocka_unit_test(test_msgpack_check),
                cmocka_unit_test(test_error_table),
                cmocka_unit_test(test_int_arrays_match_msgpack_c),
                cmocka_unit_test(test_wire_names_round_trip),
                cmocka_unit_test(test_tuple_matches_typed_packers),
                cmocka_unit_test_setup_teardown(test_perf_open, setup, teardown),
                cmocka_unit_test_setup_teardown(test_perf_open_named_job, setup, teardown),
                cmocka_unit_test_setup_teardown(test_perf_open_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timing_open, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timing_open_tid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timing_open_tids, setup, teardown),
                cmocka_unit_test_setup_teardown(test_grant_lbr, setup, teardown),
                cmocka_unit_test_setup_teardown(test_perf_open_thread, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

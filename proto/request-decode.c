/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format: the request decoder, the first code that sees a client's bytes. Everything
 * here reads untrusted input; the fuzz target links this half of proto/ alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "macro.h"
#include "request-decode.h"
#include "wire.h"

#define MSGPACK_CHECK_DEPTH_MAX 32U
#define REQUEST_DEPTH_MAX 5U

static bool object_equals(const msgpack_object *o, const char *s, size_t n) {
        return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n && memcmp(o->via.str.ptr, s, n) == 0;
}


/* Which optional keys each request type accepts, beyond "v", "id" and "op". */
enum {
        KEY_OPS = 1 << 0,
        KEY_CPUS = 1 << 1,
        KEY_JOB = 1 << 2,
        KEY_UID = 1 << 3,
        KEY_V = 1 << 4,
        KEY_ID = 1 << 5,
        KEY_OP = 1 << 6,
        KEY_SCOPE = 1 << 7,
        KEY_PID = 1 << 8,
        KEY_FOLLOW = 1 << 9,
        KEY_ON_EXEC = 1 << 10,
        KEY_HANDOFF = 1 << 11,
        KEY_HANDLE = 1 << 12,
        KEY_GROUPS = 1 << 13,
        KEY_THREAD = 1 << 14,
        KEY_MODE = 1 << 15,
        KEY_PERIOD = 1 << 16,
        KEY_LBR = 1 << 17,
        KEY_TID = 1 << 18,
        KEY_TIDS = 1 << 19,
};

/* Every key this protocol knows, by length: requests are matched against it once per key. */
static unsigned classify_key(const msgpack_object *key) {
        const char *p = key->via.str.ptr;

        switch (key->via.str.size) {
        case 1:
                return p[0] == 'v' ? KEY_V : 0;
        case 2:
                return memcmp(p, "id", 2) == 0 ? KEY_ID : memcmp(p, "op", 2) == 0 ? KEY_OP : 0;
        case 3:
                return memcmp(p, "ops", 3) == 0 ? KEY_OPS :
                       memcmp(p, "job", 3) == 0 ? KEY_JOB :
                       memcmp(p, "uid", 3) == 0 ? KEY_UID :
                       memcmp(p, "pid", 3) == 0 ? KEY_PID :
                       memcmp(p, "lbr", 3) == 0 ? KEY_LBR :
                       memcmp(p, "tid", 3) == 0 ? KEY_TID : 0;
        case 4:
                return memcmp(p, "cpus", 4) == 0 ? KEY_CPUS :
                       memcmp(p, "mode", 4) == 0 ? KEY_MODE :
                       memcmp(p, "tids", 4) == 0 ? KEY_TIDS : 0;
        case 5:
                return memcmp(p, "scope", 5) == 0 ? KEY_SCOPE : 0;
        case 6:
                return memcmp(p, "follow", 6) == 0 ? KEY_FOLLOW :
                       memcmp(p, "handle", 6) == 0 ? KEY_HANDLE :
                       memcmp(p, "groups", 6) == 0 ? KEY_GROUPS :
                       memcmp(p, "thread", 6) == 0 ? KEY_THREAD :
                       memcmp(p, "period", 6) == 0 ? KEY_PERIOD : 0;
        case 7:
                return memcmp(p, "on_exec", 7) == 0 ? KEY_ON_EXEC :
                       memcmp(p, "handoff", 7) == 0 ? KEY_HANDOFF : 0;
        default:
                return 0;
        }
}

static const struct {
        unsigned allowed;
        unsigned required;
} request_keys[_REQUEST_TYPE_MAX] = {
        [REQUEST_HELLO] = { 0, 0 },
        [REQUEST_BATCH] = { KEY_OPS, KEY_OPS },
        [REQUEST_STATUS] = { 0, 0 },
        [REQUEST_LEASE] = { KEY_CPUS, 0 },
        [REQUEST_RELEASE] = { KEY_CPUS, 0 },
        [REQUEST_GRANT] = { KEY_JOB | KEY_UID | KEY_CPUS | KEY_LBR, KEY_JOB | KEY_UID },
        [REQUEST_REVOKE] = { KEY_JOB, KEY_JOB },
        [REQUEST_RESET] = { KEY_CPUS, 0 },
        [REQUEST_RELOAD] = { 0, 0 },
        [REQUEST_JOBMAP] = { 0, 0 },
        [REQUEST_PERF_OPEN] = { KEY_SCOPE | KEY_CPUS | KEY_PID | KEY_FOLLOW | KEY_ON_EXEC | KEY_HANDOFF | KEY_GROUPS |
                                KEY_THREAD | KEY_JOB,
                                KEY_SCOPE | KEY_GROUPS },
        [REQUEST_PERF_READ] = { KEY_HANDLE, KEY_HANDLE },
        [REQUEST_PERF_CLOSE] = { KEY_HANDLE, KEY_HANDLE },
        [REQUEST_TIMING_OPEN] = { KEY_MODE | KEY_PID | KEY_ON_EXEC | KEY_PERIOD | KEY_CPUS | KEY_TID | KEY_TIDS,
                                  KEY_MODE | KEY_PID | KEY_CPUS },
};

RequestBuffer *request_buffer_new(void) {
        RequestBuffer *b = calloc(1, sizeof(*b));

        if (!b)
                return NULL;
        b->ops = calloc(PMUGATE_OPS_KEPT, sizeof(*b->ops));
        if (!b->ops || !msgpack_zone_init(&b->zone, 64U * 1024U)) {
                free(b->ops);
                free(b);
                return NULL;
        }
        b->ops_capacity = PMUGATE_OPS_KEPT;
        b->zone_initialized = true;
        return b;
}

void request_buffer_shrink(RequestBuffer *b) {
        RegOp *ops;

        if (!b || b->ops_capacity <= PMUGATE_OPS_KEPT)
                return;
        ops = realloc(b->ops, PMUGATE_OPS_KEPT * sizeof(*b->ops));
        if (!ops)
                return;
        b->ops = ops;
        b->ops_capacity = PMUGATE_OPS_KEPT;
}

int request_buffer_swap_ops(RequestBuffer *b, RegOp **ops, size_t *capacity) {
        RegOp *mine = b->ops;
        size_t mine_capacity = b->ops_capacity;

        if (!*ops) {
                *ops = calloc(PMUGATE_OPS_KEPT, sizeof(**ops));
                if (!*ops)
                        return -ENOMEM;
                *capacity = PMUGATE_OPS_KEPT;
        }
        b->ops = *ops;
        b->ops_capacity = *capacity;
        *ops = mine;
        *capacity = mine_capacity;
        return 0;
}

/* Room for n ops in all, doubling, never past the batch limit (which the callers checked). */
static int request_buffer_reserve(RequestBuffer *b, size_t n) {
        size_t capacity = b->ops_capacity;
        RegOp *ops;

        if (n <= capacity)
                return 0;
        if (n > PMUGATE_OPS_PER_BATCH_MAX)
                return -E2BIG;
        while (capacity < n)
                capacity = MIN(capacity * 2, (size_t) PMUGATE_OPS_PER_BATCH_MAX);
        ops = realloc(b->ops, capacity * sizeof(*b->ops));
        if (!ops)
                return -ENOMEM;
        b->ops = ops;
        b->ops_capacity = capacity;
        return 0;
}

RequestBuffer *request_buffer_free(RequestBuffer *b) {
        if (!b)
                return NULL;
        if (b->zone_initialized)
                msgpack_zone_destroy(&b->zone);
        free(b->ops);
        free(b);
        return NULL;
}

static uint64_t read_be(const uint8_t *p, unsigned n) {
        uint64_t v = 0;

        for (unsigned i = 0; i < n; i++)
                v = (v << 8) | p[i];
        return v;
}

int msgpack_check(const void *data, size_t size, unsigned max_depth) {
        const uint8_t *p = data;
        uint64_t pending[MSGPACK_CHECK_DEPTH_MAX + 1];
        unsigned depth = 0;
        size_t pos = 0;

        if (max_depth > MSGPACK_CHECK_DEPTH_MAX)
                max_depth = MSGPACK_CHECK_DEPTH_MAX;
        pending[0] = 1;

        for (;;) {
                uint64_t payload = 0, children = 0;
                unsigned len_bytes = 0, fixed = 0;
                uint8_t b;

                while (depth > 0 && pending[depth] == 0)
                        depth--;
                if (pending[depth] == 0)
                        break;
                pending[depth]--;

                if (pos >= size)
                        return -EBADMSG;
                b = p[pos++];

                if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
                        ;
                else if (b >= 0x80 && b <= 0x8f)
                        children = 2ULL * (b & 0x0f);
                else if (b >= 0x90 && b <= 0x9f)
                        children = b & 0x0f;
                else if (b >= 0xa0 && b <= 0xbf)
                        payload = b & 0x1f;
                else
                        switch (b) {
                        case 0xc4: case 0xd9: len_bytes = 1; break;  /* bin8, str8 */
                        case 0xc5: case 0xda: len_bytes = 2; break;  /* bin16, str16 */
                        case 0xc6: case 0xdb: len_bytes = 4; break;  /* bin32, str32 */
                        case 0xc7: len_bytes = 1; fixed = 1; break;  /* ext8: length, type */
                        case 0xc8: len_bytes = 2; fixed = 1; break;
                        case 0xc9: len_bytes = 4; fixed = 1; break;
                        case 0xca: fixed = 4; break;
                        case 0xcb: fixed = 8; break;
                        case 0xcc: case 0xd0: fixed = 1; break;
                        case 0xcd: case 0xd1: fixed = 2; break;
                        case 0xce: case 0xd2: fixed = 4; break;
                        case 0xcf: case 0xd3: fixed = 8; break;
                        case 0xd4: fixed = 2; break;                 /* fixext: type + data */
                        case 0xd5: fixed = 3; break;
                        case 0xd6: fixed = 5; break;
                        case 0xd7: fixed = 9; break;
                        case 0xd8: fixed = 17; break;
                        case 0xdc: case 0xde: len_bytes = 2; break;
                        case 0xdd: case 0xdf: len_bytes = 4; break;
                        default:
                                return -EBADMSG;                     /* 0xc1 is never used */
                        }

                if (len_bytes > 0) {
                        uint64_t n;

                        if (size - pos < len_bytes)
                                return -EBADMSG;
                        n = read_be(p + pos, len_bytes);
                        pos += len_bytes;
                        if (b == 0xdc || b == 0xdd)
                                children = n;
                        else if (b == 0xde || b == 0xdf)
                                children = 2 * n;
                        else
                                payload = n;
                }
                payload += fixed;
                if (payload > size - pos)
                        return -EBADMSG;
                pos += payload;

                if (children > 0) {
                        /* Every element takes at least one byte. */
                        if (children > size - pos || depth + 1 > max_depth)
                                return -EBADMSG;
                        pending[++depth] = children;
                }
        }

        return pos == size ? 0 : -EBADMSG;
}

bool msgpack_object_is_string(const msgpack_object *o, const char *s) {
        return object_equals(o, s, strlen(s));
}

const msgpack_object *msgpack_map_get(const msgpack_object *obj, const char *key) {
        size_t n;

        if (!obj || obj->type != MSGPACK_OBJECT_MAP)
                return NULL;
        n = strlen(key);
        for (uint32_t i = 0; i < obj->via.map.size; i++)
                if (object_equals(&obj->via.map.ptr[i].key, key, n))
                        return &obj->via.map.ptr[i].val;
        return NULL;
}

_printf_(3, 4) static int refuse(DecodeError *e, int code, const char *fmt, ...) {
        va_list ap;

        e->code = code;
        va_start(ap, fmt);
        (void) vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
        va_end(ap);
        /* Reasons quote client bytes; keep them printable ASCII so the reply is valid UTF-8
         * and safe in a terminal or a log. */
        for (char *p = e->reason; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p > 0x7e)
                        *p = '?';
        return code;
}

static bool get_u32(const msgpack_object *o, uint32_t *ret) {
        if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > UINT32_MAX)
                return false;
        *ret = (uint32_t) o->via.u64;
        return true;
}

static bool get_u64(const msgpack_object *o, uint64_t *ret) {
        if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                return false;
        *ret = o->via.u64;
        return true;
}

static int decode_u32_list(const msgpack_object *o, uint32_t *out, size_t max, size_t *ret_n,
                           const char *what, DecodeError *e) {
        if (o->type != MSGPACK_OBJECT_ARRAY)
                return refuse(e, PROTO_E_BAD_FIELD, "%s must be an array of unsigned integers", what);
        if (o->via.array.size > max)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "%s has %" PRIu32 " entries, at most %zu allowed",
                              what, o->via.array.size, max);
        for (uint32_t i = 0; i < o->via.array.size; i++)
                if (!get_u32(&o->via.array.ptr[i], &out[i]))
                        return refuse(e, PROTO_E_BAD_FIELD, "%s[%" PRIu32 "] is not an unsigned 32-bit integer",
                                      what, i);
        *ret_n = o->via.array.size;
        return 0;
}

/* Expands ["R", [cpus], [regs]] and ["W", [cpus], [regs], [values]] cpu-major into ops. */
static int decode_sweep(const msgpack_object *a, bool write, size_t index, RequestBuffer *buf, size_t *n_ops,
                        DecodeError *e) {
        const msgpack_object *cpus = &a->via.array.ptr[1], *regs = &a->via.array.ptr[2], *values = NULL;
        size_t n_cpus, n_regs;
        uint64_t total;

        WireOp kind = write ? WIRE_OP_SWEEP_WRITE : WIRE_OP_SWEEP_READ;

        if (a->via.array.size != wire_ops[kind].args + 1U)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: '%s' takes %s", index, wire_ops[kind].name,
                              write ? "[cpus], [regs], [values]" : "[cpus], [regs]");
        if (cpus->type != MSGPACK_OBJECT_ARRAY || regs->type != MSGPACK_OBJECT_ARRAY)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: CPUs and registers must be arrays", index);

        total = (uint64_t) cpus->via.array.size * regs->via.array.size;
        if (total > PMUGATE_OPS_PER_BATCH_MAX - *n_ops)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "batch expands to more than %u operations",
                              PMUGATE_OPS_PER_BATCH_MAX);
        if (write) {
                values = &a->via.array.ptr[3];
                if (values->type != MSGPACK_OBJECT_ARRAY || values->via.array.size != regs->via.array.size)
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: 'W' needs one value per register", index);
        }
        /* The CPU list goes through the scratch CPU array; registers are read in place. */
        if (decode_u32_list(cpus, buf->cpus, PMUGATE_LIST_MAX, &n_cpus, "sweep CPUs", e) > 0)
                return e->code;
        if (request_buffer_reserve(buf, *n_ops + (size_t) total) < 0)
                return -ENOMEM;
        n_regs = regs->via.array.size;
        /* The first CPU's row is decoded (and every register checked), the others copied from
         * it: the op array is written in order, not in strides of a row, which for a maximal
         * sweep (4 MiB of ops) made decoding several times slower. */
        for (size_t r = 0; r < n_regs; r++) {
                uint32_t reg;
                uint64_t value = 0;

                if (!get_u32(&regs->via.array.ptr[r], &reg))
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: register %zu is not an unsigned 32-bit integer",
                                      index, r);
                if (write && !get_u64(&values->via.array.ptr[r], &value))
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: value %zu is not an unsigned 64-bit integer",
                                      index, r);
                if (n_cpus > 0)
                        buf->ops[*n_ops + r] = (RegOp) {
                                .kind = write ? REG_OP_MSR_WRITE : REG_OP_MSR_READ,
                                .target = buf->cpus[0],
                                .reg = reg,
                                .value = value,
                                .mask = UINT64_MAX,
                        };
        }
        for (size_t c = 1; c < n_cpus; c++) {
                RegOp *row = &buf->ops[*n_ops + c * n_regs];

                memcpy(row, &buf->ops[*n_ops], n_regs * sizeof(*row));
                for (size_t r = 0; r < n_regs; r++)
                        row[r].target = buf->cpus[c];
        }
        *n_ops += (size_t) total;
        return 0;
}

/* One CPU's part of ["each", [cpus], [op, ...]]: ["r", msr], ["w", msr, value] or
 * ["wm", msr, value, mask]. */
static int decode_each_step(const msgpack_object *a, size_t index, size_t step, RegOp *ret, DecodeError *e) {
        const msgpack_object *k;
        WireOp kind;
        unsigned args;

        if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size < 2 || a->via.array.ptr[0].type != MSGPACK_OBJECT_STR)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: step %zu must be an array [kind, msr, ...]", index,
                              step);
        k = &a->via.array.ptr[0];
        *ret = (RegOp) { .mask = UINT64_MAX };
        kind = wire_op_from_string(k->via.str.ptr, k->via.str.size);
        if (kind < 0 || wire_ops[kind].step_args == 0)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: step %zu: kind '%.*s' is not r, w or wm", index, step,
                              (int) (k->via.str.size > 16 ? 16 : k->via.str.size), k->via.str.ptr);
        ret->kind = kind == WIRE_OP_READ ? REG_OP_MSR_READ : REG_OP_MSR_WRITE;
        args = wire_ops[kind].step_args;
        if (a->via.array.size != args + 1)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: step %zu: '%.*s' takes %u arguments", index, step,
                              (int) k->via.str.size, k->via.str.ptr, args);
        if (!get_u32(&a->via.array.ptr[1], &ret->reg))
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: step %zu: register must be an unsigned 32-bit integer",
                              index, step);
        if (args >= 2 && !get_u64(&a->via.array.ptr[2], &ret->value))
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: step %zu: value must be an unsigned 64-bit integer",
                              index, step);
        if (args >= 3 && !get_u64(&a->via.array.ptr[3], &ret->mask))
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: step %zu: mask must be an unsigned 64-bit integer",
                              index, step);
        return 0;
}

/* Expands ["each", [cpus], [step, ...]] cpu-major: every step on the first CPU, in order, then
 * on the next. A sample's per-CPU sequence (stop the counters, read the clock, restart) sent
 * once for all CPUs instead of once per CPU. */
static int decode_each(const msgpack_object *a, size_t index, RequestBuffer *buf, size_t *n_ops, DecodeError *e) {
        const msgpack_object *cpus = &a->via.array.ptr[1], *steps = &a->via.array.ptr[2];
        RegOp sequence[PMUGATE_EACH_OPS_MAX];
        size_t n_cpus, n_steps;
        uint64_t total;

        if (a->via.array.size != wire_ops[WIRE_OP_EACH].args + 1U)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: 'each' takes [cpus], [steps]", index);
        if (cpus->type != MSGPACK_OBJECT_ARRAY || steps->type != MSGPACK_OBJECT_ARRAY)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%zu]: CPUs and steps must be arrays", index);
        n_steps = steps->via.array.size;
        if (n_steps > PMUGATE_EACH_OPS_MAX)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "ops[%zu]: %zu steps per CPU, at most %u allowed", index,
                              n_steps, PMUGATE_EACH_OPS_MAX);
        total = (uint64_t) cpus->via.array.size * n_steps;
        if (total > PMUGATE_OPS_PER_BATCH_MAX - *n_ops)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "batch expands to more than %u operations",
                              PMUGATE_OPS_PER_BATCH_MAX);
        for (size_t i = 0; i < n_steps; i++) {
                int r = decode_each_step(&steps->via.array.ptr[i], index, i, &sequence[i], e);

                if (r != 0)
                        return r;
        }
        if (decode_u32_list(cpus, buf->cpus, PMUGATE_LIST_MAX, &n_cpus, "each CPUs", e) > 0)
                return e->code;
        if (request_buffer_reserve(buf, *n_ops + (size_t) total) < 0)
                return -ENOMEM;
        for (size_t c = 0; c < n_cpus; c++)
                for (size_t i = 0; i < n_steps; i++) {
                        RegOp *op = &buf->ops[*n_ops + c * n_steps + i];

                        *op = sequence[i];
                        op->target = buf->cpus[c];
                }
        *n_ops += (size_t) total;
        return 0;
}

/* ["cr", counter]: one package counter by its index in hello's "counters". */
static int decode_counter_read(const msgpack_object *a, uint32_t index, RequestBuffer *buf, size_t *n_ops,
                               DecodeError *e) {
        RegOp *op;

        if (a->via.array.size != wire_ops[WIRE_OP_COUNTER_READ].args + 1U)
                return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "]: 'cr' takes 1 argument", index);
        if (*n_ops >= PMUGATE_OPS_PER_BATCH_MAX)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "batch expands to more than %u operations",
                              PMUGATE_OPS_PER_BATCH_MAX);
        if (request_buffer_reserve(buf, *n_ops + 1) < 0)
                return -ENOMEM;
        op = &buf->ops[*n_ops];
        *op = (RegOp) { .kind = REG_OP_COUNTER_READ, .mask = UINT64_MAX };
        if (!get_u32(&a->via.array.ptr[1], &op->target))
                return refuse(e, PROTO_E_BAD_FIELD,
                              "ops[%" PRIu32 "]: counter must be an unsigned 32-bit integer", index);
        (*n_ops)++;
        return 0;
}

static int decode_ops(const msgpack_object *o, RequestBuffer *buf, Request *req, DecodeError *e) {
        size_t n_ops = 0;

        if (o->type != MSGPACK_OBJECT_ARRAY)
                return refuse(e, PROTO_E_BAD_FIELD, "'ops' must be an array");
        if (o->via.array.size > PMUGATE_OPS_PER_BATCH_MAX)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "batch has %" PRIu32 " operations, at most %u allowed",
                              o->via.array.size, PMUGATE_OPS_PER_BATCH_MAX);

        for (uint32_t i = 0; i < o->via.array.size; i++) {
                const msgpack_object *a = &o->via.array.ptr[i], *k;
                RegOp *op;
                WireOp kind;
                bool write, pci, masked = false;
                unsigned args;
                int r;

                if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size < 2 ||
                    a->via.array.ptr[0].type != MSGPACK_OBJECT_STR)
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "] must be an array [kind, ...]", i);
                k = &a->via.array.ptr[0];
                kind = wire_op_from_string(k->via.str.ptr, k->via.str.size);

                switch (kind) {
                case WIRE_OP_SWEEP_READ:
                case WIRE_OP_SWEEP_WRITE:
                        r = decode_sweep(a, kind == WIRE_OP_SWEEP_WRITE, i, buf, &n_ops, e);
                        if (r != 0)
                                return r;
                        continue;
                case WIRE_OP_COUNTER_READ:
                        r = decode_counter_read(a, i, buf, &n_ops, e);
                        if (r != 0)
                                return r;
                        continue;
                case WIRE_OP_EACH:
                        r = decode_each(a, i, buf, &n_ops, e);
                        if (r != 0)
                                return r;
                        continue;
                case WIRE_OP_READ:
                        write = false, pci = false;
                        break;
                case WIRE_OP_WRITE:
                        write = true, pci = false;
                        break;
                case WIRE_OP_WRITE_MASKED:
                        write = true, pci = false, masked = true;
                        break;
                case WIRE_OP_PCI_READ:
                        write = false, pci = true;
                        break;
                case WIRE_OP_PCI_WRITE:
                        write = true, pci = true;
                        break;
                default:
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "]: unknown kind '%.*s'", i,
                                      (int) (k->via.str.size > 16 ? 16 : k->via.str.size), k->via.str.ptr);
                }

                args = wire_ops[kind].args;
                if (a->via.array.size != args + 1)
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "]: '%.*s' takes %u arguments", i,
                                      (int) k->via.str.size, k->via.str.ptr, args);
                if (n_ops >= PMUGATE_OPS_PER_BATCH_MAX)
                        return refuse(e, PROTO_E_TOO_MANY_OPS, "batch expands to more than %u operations",
                                      PMUGATE_OPS_PER_BATCH_MAX);
                if (request_buffer_reserve(buf, n_ops + 1) < 0)
                        return -ENOMEM;

                op = &buf->ops[n_ops];
                op->kind = pci ? (write ? REG_OP_PCI_WRITE : REG_OP_PCI_READ)
                               : (write ? REG_OP_MSR_WRITE : REG_OP_MSR_READ);
                op->value = 0;
                op->mask = UINT64_MAX;
                if (!get_u32(&a->via.array.ptr[1], &op->target))
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "]: %s must be an unsigned 32-bit integer",
                                      i, pci ? "unit" : "cpu");
                if (!get_u32(&a->via.array.ptr[2], &op->reg))
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "]: %s must be an unsigned 32-bit integer",
                                      i, pci ? "offset" : "register");
                if (write && !get_u64(&a->via.array.ptr[3], &op->value))
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "]: value must be an unsigned 64-bit integer",
                                      i);
                if (masked && !get_u64(&a->via.array.ptr[4], &op->mask))
                        return refuse(e, PROTO_E_BAD_FIELD, "ops[%" PRIu32 "]: mask must be an unsigned 64-bit integer",
                                      i);
                n_ops++;
        }

        req->ops = buf->ops;
        req->n_ops = n_ops;
        return 0;
}

static int decode_job(const msgpack_object *o, Request *req, DecodeError *e) {
        if (o->type != MSGPACK_OBJECT_STR || o->via.str.size == 0 || o->via.str.size > PMUGATE_STRING_MAX)
                return refuse(e, PROTO_E_BAD_FIELD, "'job' must be a non-empty string of at most %u bytes",
                              PMUGATE_STRING_MAX);
        for (uint32_t i = 0; i < o->via.str.size; i++) {
                char c = o->via.str.ptr[i];

                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-' || c == '+'))
                        return refuse(e, PROTO_E_BAD_FIELD, "'job' may hold only letters, digits and . _ - +");
        }
        memcpy(req->job, o->via.str.ptr, o->via.str.size);
        req->job[o->via.str.size] = '\0';
        req->has_job = true;
        return 0;
}

static int decode_bool(const msgpack_object *o, bool *ret, const msgpack_object *key, DecodeError *e) {
        if (o->type != MSGPACK_OBJECT_BOOLEAN)
                return refuse(e, PROTO_E_BAD_FIELD, "'%.*s' must be true or false", (int) key->via.str.size,
                              key->via.str.ptr);
        *ret = o->via.boolean;
        return 0;
}

static int decode_perf_scope(const msgpack_object *o, Request *req, DecodeError *e) {
        if (o->type == MSGPACK_OBJECT_STR)
                req->perf_scope = perf_scope_from_string(o->via.str.ptr, o->via.str.size);
        if (o->type != MSGPACK_OBJECT_STR || req->perf_scope < 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'scope' must be \"cpu\", \"job\" or \"process\"");
        return 0;
}

/* "groups": [[EVENT, ...], ...], every event decoded into the buffer, group after group. */
static int decode_perf_groups(const msgpack_object *o, RequestBuffer *buf, Request *req, DecodeError *e) {
        size_t n = 0;

        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size == 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'groups' must be a non-empty array of groups [[event, ...], ...]");
        if (o->via.array.size > PERF_GROUPS_PER_OPEN_MAX)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "%" PRIu32 " groups, at most %u per perf_open",
                              o->via.array.size, PERF_GROUPS_PER_OPEN_MAX);
        for (uint32_t g = 0; g < o->via.array.size; g++) {
                const msgpack_object *group = &o->via.array.ptr[g];

                if (group->type != MSGPACK_OBJECT_ARRAY || group->via.array.size == 0)
                        return refuse(e, PROTO_E_BAD_FIELD, "groups[%" PRIu32 "] must be a non-empty array of events", g);
                if (group->via.array.size > PERF_GROUP_EVENTS_MAX)
                        return refuse(e, PROTO_E_TOO_MANY_OPS, "groups[%" PRIu32 "] has %" PRIu32 " events, at most %u per group",
                                      g, group->via.array.size, PERF_GROUP_EVENTS_MAX);
                if (group->via.array.size > PERF_EVENTS_PER_OPEN_MAX - n)
                        return refuse(e, PROTO_E_TOO_MANY_OPS, "more than %u events in one perf_open",
                                      PERF_EVENTS_PER_OPEN_MAX);
                for (uint32_t i = 0; i < group->via.array.size; i++) {
                        char why[sizeof(e->reason) - 32];
                        int r = perf_event_spec_decode(&group->via.array.ptr[i], &buf->perf_events[n], why, sizeof(why));

                        if (r != 0)
                                return refuse(e, r, "groups[%" PRIu32 "][%" PRIu32 "]: %s", g, i, why);
                        n++;
                }
                buf->perf_group_sizes[g] = (uint8_t) group->via.array.size;
        }
        req->perf_events = buf->perf_events;
        req->n_perf_events = n;
        req->perf_group_sizes = buf->perf_group_sizes;
        req->n_perf_groups = o->via.array.size;
        return 0;
}

/* The keys of perf_open each belong to a scope: one given where it means nothing is refused
 * rather than ignored, so a client never believes it asked for something it did not get. */
static int check_perf_open(Request *req, unsigned seen, DecodeError *e) {
        const char *scope = perf_scope_to_string(req->perf_scope);

        if (req->perf_scope == PERF_SCOPE_CPU && !(seen & KEY_CPUS))
                return refuse(e, PROTO_E_BAD_FIELD, "scope 'cpu' needs 'cpus'");
        if (req->perf_scope == PERF_SCOPE_PROCESS && (seen & KEY_CPUS))
                return refuse(e, PROTO_E_BAD_FIELD, "scope 'process' counts wherever the process runs: 'cpus' is not accepted");
        if (req->perf_scope != PERF_SCOPE_PROCESS &&
            (seen & (KEY_PID | KEY_FOLLOW | KEY_ON_EXEC | KEY_HANDOFF | KEY_THREAD)))
                return refuse(e, PROTO_E_BAD_FIELD,
                              "'pid', 'follow', 'on_exec', 'handoff' and 'thread' belong to scope 'process', not '%s'",
                              scope);
        if (req->perf_scope != PERF_SCOPE_JOB && (seen & KEY_JOB))
                return refuse(e, PROTO_E_BAD_FIELD, "'job' belongs to scope 'job', not '%s'", scope);
        if (req->has_cpus && req->n_cpus == 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'cpus' must name at least one CPU");
        /* one thread alone: nothing it starts is counted, and an execve would end the thread */
        if (req->thread && ((seen & KEY_FOLLOW) ? req->follow : false))
                return refuse(e, PROTO_E_BAD_FIELD, "'thread' counts one thread alone: 'follow' must be false");
        if (req->thread && req->on_exec)
                return refuse(e, PROTO_E_BAD_FIELD, "'thread' counts one thread alone from now: 'on_exec' is not accepted");
        if (!(seen & KEY_FOLLOW))
                req->follow = !req->thread;
        return 0;
}

static int decode_timing_mode(const msgpack_object *o, Request *req, DecodeError *e) {
        if (o->type == MSGPACK_OBJECT_STR)
                req->timing_mode = timing_mode_from_string(o->via.str.ptr, o->via.str.size);
        if (o->type != MSGPACK_OBJECT_STR || req->timing_mode < 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'mode' must be \"branches\" or \"ips\"");
        return 0;
}

/* The pid names one process, never the caller by default: a sampling event follows what it
 * is opened on, so the client says which. The CPUs bound the fds one reply carries. */
static int check_timing_open(Request *req, DecodeError *e) {
        if (req->pid == 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'pid' must name a process (not 0)");
        if (req->n_cpus == 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'cpus' must name at least one CPU");
        if (req->n_cpus > TIMING_CPUS_PER_OPEN)
                return refuse(e, PROTO_E_TOO_MANY_OPS, "%zu CPUs, at most %u per timing_open", req->n_cpus,
                              TIMING_CPUS_PER_OPEN);
        for (size_t i = 0; i < req->n_cpus; i++)
                for (size_t j = 0; j < i; j++)
                        if (req->cpus[i] == req->cpus[j])
                                return refuse(e, PROTO_E_BAD_FIELD, "'cpus' names CPU %" PRIu32 " twice", req->cpus[i]);
        if (req->has_period && req->period == 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'period' must be at least 1 (leave it out for the default)");
        if (req->has_tids && req->n_tids == 0)
                return refuse(e, PROTO_E_BAD_FIELD, "'tids' must name at least one thread (or be left out)");
        for (size_t i = 0; i < req->n_tids; i++) {
                if (req->tids[i] == 0 || req->tids[i] > INT32_MAX)
                        return refuse(e, PROTO_E_BAD_FIELD, "'tids'[%zu] must be a thread id (not 0)", i);
                for (size_t j = 0; j < i; j++)
                        if (req->tids[i] == req->tids[j])
                                return refuse(e, PROTO_E_BAD_FIELD, "'tids' names thread %" PRIu32 " twice",
                                              req->tids[i]);
        }
        /* every event's fd goes back in the one reply, and one message carries at most this many */
        if (req->n_tids > 0 && req->n_tids * req->n_cpus > PERF_HANDOFF_FDS_PER_MESSAGE)
                return refuse(e, PROTO_E_TOO_MANY_OPS,
                              "%zu threads on %zu CPUs are %zu events, at most %u per timing_open (the fds one "
                              "reply passes): ask in several", req->n_tids, req->n_cpus, req->n_tids * req->n_cpus,
                              PERF_HANDOFF_FDS_PER_MESSAGE);
        /* an exec leaves one thread, whose events the pid's own are: a thread of a process that
         * already runs is opened from now */
        if (req->n_tids > 0 && req->on_exec)
                return refuse(e, PROTO_E_BAD_FIELD,
                              "'tid' and 'tids' sample running threads from now: 'on_exec' is not accepted");
        return 0;
}

static int decode_map(const msgpack_object *root, RequestBuffer *buf, Request *req, DecodeError *e) {
        const msgpack_object *v = NULL, *id = NULL, *op = NULL;
        uint32_t kinds[PMUGATE_REQUEST_KEYS_MAX];
        unsigned seen = 0;
        int r;

        /* One pass names every key; the fixed ones are looked at first, so a refusal can echo
         * the id and a version mismatch is reported before anything else. */
        for (uint32_t i = 0; i < root->via.map.size; i++) {
                const msgpack_object *key = &root->via.map.ptr[i].key;

                kinds[i] = key->type == MSGPACK_OBJECT_STR ? classify_key(key) : 0;
                if (kinds[i] == KEY_ID && !id)
                        id = &root->via.map.ptr[i].val;
                else if (kinds[i] == KEY_V && !v)
                        v = &root->via.map.ptr[i].val;
                else if (kinds[i] == KEY_OP && !op)
                        op = &root->via.map.ptr[i].val;
        }

        if (!id || !get_u64(id, &req->id))
                return refuse(e, PROTO_E_BAD_FIELD, "'id' must be present and an unsigned integer");
        e->has_id = true;
        e->id = req->id;

        if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 != PMUGATE_PROTOCOL_VERSION)
                return refuse(e, PROTO_E_VERSION, "this daemon speaks protocol version %u; upgrade the client",
                              PMUGATE_PROTOCOL_VERSION);

        if (!op || op->type != MSGPACK_OBJECT_STR)
                return refuse(e, PROTO_E_BAD_FIELD, "'op' must be present and a string");
        req->type = request_type_from_string(op->via.str.ptr, op->via.str.size);
        if (req->type < 0)
                return refuse(e, PROTO_E_UNKNOWN_OP, "unknown operation '%.*s'",
                              (int) (op->via.str.size > 32 ? 32 : op->via.str.size), op->via.str.ptr);

        for (uint32_t i = 0; i < root->via.map.size; i++) {
                const msgpack_object *key = &root->via.map.ptr[i].key, *val = &root->via.map.ptr[i].val;
                unsigned bit;

                if (key->type != MSGPACK_OBJECT_STR)
                        return refuse(e, PROTO_E_BAD_FIELD, "map keys must be strings");
                bit = kinds[i];
                if (bit & (KEY_V | KEY_ID | KEY_OP)) {
                        if (seen & bit)
                                return refuse(e, PROTO_E_BAD_FIELD, "duplicate key '%.*s'", (int) key->via.str.size,
                                              key->via.str.ptr);
                        seen |= bit;
                        continue;
                }
                if (!(request_keys[req->type].allowed & bit))
                        return refuse(e, PROTO_E_BAD_FIELD, "unknown key '%.*s' for operation '%s'",
                                      (int) (key->via.str.size > 32 ? 32 : key->via.str.size), key->via.str.ptr,
                                      request_type_to_string(req->type));
                if (seen & bit)
                        return refuse(e, PROTO_E_BAD_FIELD, "duplicate key '%.*s'", (int) key->via.str.size,
                                      key->via.str.ptr);
                seen |= bit;

                switch (bit) {
                case KEY_OPS:
                        r = decode_ops(val, buf, req, e);
                        break;
                case KEY_CPUS:
                        r = decode_u32_list(val, buf->cpus, PMUGATE_LIST_MAX, &req->n_cpus, "'cpus'", e);
                        req->cpus = buf->cpus;
                        req->has_cpus = true;
                        break;
                case KEY_JOB:
                        r = decode_job(val, req, e);
                        break;
                case KEY_UID:
                        r = get_u32(val, &req->uid) ? 0 : refuse(e, PROTO_E_BAD_FIELD, "'uid' must be an unsigned 32-bit integer");
                        req->has_uid = true;
                        break;
                case KEY_SCOPE:
                        r = decode_perf_scope(val, req, e);
                        break;
                case KEY_PID:
                        r = get_u32(val, &req->pid) && req->pid <= INT32_MAX ? 0 :
                            refuse(e, PROTO_E_BAD_FIELD, "'pid' must be a process id (0: the caller)");
                        req->has_pid = true;
                        break;
                case KEY_FOLLOW:
                case KEY_ON_EXEC:
                case KEY_HANDOFF:
                case KEY_THREAD:
                case KEY_LBR:
                        r = decode_bool(val, bit == KEY_FOLLOW ? &req->follow : bit == KEY_ON_EXEC ? &req->on_exec :
                                        bit == KEY_HANDOFF ? &req->handoff : bit == KEY_LBR ? &req->lbr : &req->thread, key, e);
                        break;
                case KEY_HANDLE:
                        r = get_u32(val, &req->handle) ? 0 :
                            refuse(e, PROTO_E_BAD_FIELD, "'handle' must be an unsigned 32-bit integer");
                        req->has_handle = true;
                        break;
                case KEY_GROUPS:
                        r = decode_perf_groups(val, buf, req, e);
                        break;
                case KEY_TID:
                case KEY_TIDS:
                        if (req->tids) {
                                r = refuse(e, PROTO_E_BAD_FIELD,
                                           "'tid' is the one-thread form of 'tids': send one of them");
                                break;
                        }
                        if (bit == KEY_TIDS) {
                                r = decode_u32_list(val, buf->tids, TIMING_TIDS_PER_OPEN, &req->n_tids, "'tids'", e);
                                req->tids = buf->tids;
                                req->has_tids = true;
                                break;
                        }
                        r = get_u32(val, &buf->tids[0]) && buf->tids[0] > 0 && buf->tids[0] <= INT32_MAX ? 0 :
                            refuse(e, PROTO_E_BAD_FIELD, "'tid' must be a thread id (not 0)");
                        req->tids = buf->tids;
                        req->n_tids = 1;
                        break;
                case KEY_MODE:
                        r = decode_timing_mode(val, req, e);
                        break;
                case KEY_PERIOD:
                        r = get_u64(val, &req->period) ? 0 :
                            refuse(e, PROTO_E_BAD_FIELD, "'period' must be an unsigned 64-bit integer");
                        req->has_period = true;
                        break;
                default:
                        r = refuse(e, PROTO_E_INTERNAL, "unhandled key");
                }
                if (r != 0)
                        return r;
        }

        seen &= ~(unsigned) (KEY_V | KEY_ID | KEY_OP);
        if ((seen & request_keys[req->type].required) != request_keys[req->type].required)
                return refuse(e, PROTO_E_BAD_FIELD, "operation '%s' is missing a required key",
                              request_type_to_string(req->type));
        if (req->type == REQUEST_PERF_OPEN)
                return check_perf_open(req, seen, e);
        if (req->type == REQUEST_TIMING_OPEN)
                return check_timing_open(req, e);
        return 0;
}

int request_decode(const void *data, size_t size, RequestBuffer *buf, Request *ret, DecodeError *ret_error) {
        msgpack_object root;
        size_t off = 0;
        Request req = {};
        int r;

        *ret_error = (DecodeError) {};

        if (size > PMUGATE_REQUEST_SIZE_MAX)
                return refuse(ret_error, PROTO_E_TOO_LARGE, "request of %zu bytes exceeds the limit of %u", size,
                              PMUGATE_REQUEST_SIZE_MAX);
        if (msgpack_check(data, size, REQUEST_DEPTH_MAX) < 0)
                return refuse(ret_error, PROTO_E_MALFORMED, "request is not a single well-formed msgpack object");

        msgpack_zone_clear(&buf->zone);
        r = msgpack_unpack(data, size, &off, &buf->zone, &root);
        if (r == MSGPACK_UNPACK_NOMEM_ERROR)
                return -ENOMEM;
        if (r != MSGPACK_UNPACK_SUCCESS)
                return refuse(ret_error, PROTO_E_MALFORMED, "request is not a single well-formed msgpack object");
        if (root.type != MSGPACK_OBJECT_MAP)
                return refuse(ret_error, PROTO_E_MALFORMED, "request must be a msgpack map");
        if (root.via.map.size > PMUGATE_REQUEST_KEYS_MAX)
                return refuse(ret_error, PROTO_E_BAD_FIELD, "request has too many keys");

        r = decode_map(&root, buf, &req, ret_error);
        if (r != 0)
                return r;
        *ret = req;
        return 0;
}

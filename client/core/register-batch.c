/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: batches. Ops are encoded as they are added; running a batch again re-sends the
 * same bytes with a new request id, so a sampling loop encodes nothing per sample.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/connection.h"
#include "core/register-batch.h"
#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"
#include "wire.h"

/* What a batch request holds besides its ops: the map with "v", "id", "op": "batch" and the
 * ops array's header, each at its longest encoding. */
#define BATCH_REQUEST_HEAD_BYTES 64U

struct pmugate_batch {
        msgpack_sbuffer ops;      /* encoded op arrays, without the enclosing array header */
        msgpack_packer packer;
        size_t n_ops;             /* entries of the "ops" array */
        size_t n_results;         /* ops after expanding sweeps */
        int32_t *status;          /* room for results_capacity results */
        uint64_t *values;
        size_t results_capacity;
        size_t n_filled;          /* results of the last run */
};

int pmugate_batch_new(pmugate_batch **ret) {
        pmugate_batch *b;

        if (!ret)
                return -EINVAL;
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        msgpack_sbuffer_init(&b->ops);
        msgpack_packer_init(&b->packer, &b->ops, msgpack_sbuffer_write);
        *ret = b;
        return 0;
}

/* Room for n more results, within the daemon's limit on a batch. The room itself is taken when
 * the batch runs (results_alloc()): a batch encoded once and run every sample holds no results
 * between its runs where its user lets them go (batch_results_release()). */
static int reserve_results(pmugate_batch *b, size_t n) {
        if (n > PMUGATE_OPS_PER_BATCH_MAX - b->n_results)
                return -E2BIG;
        return 0;
}

/* Room for every result of the batch, before it runs: allocated anew rather than grown, as
 * nothing of a previous run is kept, so no page is copied or touched before a reply fills it. */
static int results_alloc(pmugate_batch *b) {
        if (b->n_results <= b->results_capacity)
                return 0;
        batch_results_release(b);
        b->status = malloc(b->n_results * sizeof(*b->status));
        b->values = malloc(b->n_results * sizeof(*b->values));
        if (!b->status || !b->values) {
                batch_results_release(b);
                return -ENOMEM;
        }
        b->results_capacity = b->n_results;
        return 0;
}

void batch_results_release(pmugate_batch *b) {
        if (!b)
                return;
        free(b->status);
        free(b->values);
        b->status = NULL;
        b->values = NULL;
        b->results_capacity = 0;
        b->n_filled = 0;
}

/* After an op was encoded from byte `before` on, r telling how that went: keeps it when it was
 * encoded whole and the request still fits the daemon's size limit, else takes it back. */
static int finish_op(pmugate_batch *b, size_t before, int r, size_t n_results) {
        if (r >= 0 && b->ops.size > PMUGATE_REQUEST_SIZE_MAX - BATCH_REQUEST_HEAD_BYTES)
                r = -E2BIG;
        if (r < 0) {
                b->ops.size = before;
                return r;
        }
        b->n_ops++;
        b->n_results += n_results;
        return (int) (b->n_results - n_results);
}

pmugate_batch *pmugate_batch_free(pmugate_batch *b) {
        if (!b)
                return NULL;
        msgpack_sbuffer_destroy(&b->ops);
        free(b->status);
        free(b->values);
        free(b);
        return NULL;
}

void pmugate_batch_clear(pmugate_batch *b) {
        msgpack_sbuffer_clear(&b->ops);
        b->n_ops = b->n_results = b->n_filled = 0;
}

size_t pmugate_batch_size(const pmugate_batch *b) {
        return b->n_results;
}

/* An op of kind on one target; its arity says which of register, value and mask it carries
 * (a package counter read names its counter alone). */
static int add_op(pmugate_batch *b, WireOp kind, uint32_t target, uint32_t reg, uint64_t value,
                  uint64_t mask) {
        unsigned args = wire_ops[kind].args;
        msgpack_packer *pk;
        size_t before;
        int r;

        if (!b)
                return -EINVAL;
        r = reserve_results(b, 1);
        if (r < 0)
                return r;
        pk = &b->packer;
        before = b->ops.size;
        r = msgpack_pack_array(pk, 1 + args) < 0 || pack_string(pk, wire_ops[kind].name) < 0 ||
            msgpack_pack_uint32(pk, target) < 0 || (args >= 2 && msgpack_pack_uint32(pk, reg) < 0) ||
            (args >= 3 && msgpack_pack_uint64(pk, value) < 0) ||
            (args >= 4 && msgpack_pack_uint64(pk, mask) < 0) ? -ENOMEM : 0;
        return finish_op(b, before, r, 1);
}

int pmugate_batch_read_msr(pmugate_batch *b, uint32_t cpu, uint32_t reg) {
        return add_op(b, WIRE_OP_READ, cpu, reg, 0, 0);
}

int pmugate_batch_write_msr(pmugate_batch *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        return add_op(b, WIRE_OP_WRITE, cpu, reg, value, 0);
}

int pmugate_batch_read_pci(pmugate_batch *b, uint32_t unit, uint32_t offset) {
        return add_op(b, WIRE_OP_PCI_READ, unit, offset, 0, 0);
}

int pmugate_batch_read_counter(pmugate_batch *b, uint32_t counter) {
        return add_op(b, WIRE_OP_COUNTER_READ, counter, 0, 0, 0);
}

int pmugate_batch_write_pci(pmugate_batch *b, uint32_t unit, uint32_t offset, uint64_t value) {
        return add_op(b, WIRE_OP_PCI_WRITE, unit, offset, value, 0);
}

int pmugate_batch_write_msr_bits(pmugate_batch *b, uint32_t cpu, uint32_t reg, uint64_t value, uint64_t mask) {
        return add_op(b, WIRE_OP_WRITE_MASKED, cpu, reg, value, mask);
}

static int pack_u32_list(msgpack_packer *pk, const uint32_t *v, size_t n) {
        if (msgpack_pack_array(pk, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (msgpack_pack_uint32(pk, v[i]) < 0)
                        return -ENOMEM;
        return 0;
}

/* Begins a compact op of kind over cpus whose expansion gives n_results: its array header, its
 * kind and its CPU list, after the checks every compact op shares. ret_before: where it began,
 * for finish_op() once the rest is encoded; on failure nothing of it stays. */
static int begin_compact(pmugate_batch *b, WireOp kind, const uint32_t *cpus, size_t n_cpus,
                         size_t n_results, size_t *ret_before) {
        msgpack_packer *pk = &b->packer;
        int r;

        if (n_cpus > PMUGATE_LIST_MAX)
                return -E2BIG;
        r = reserve_results(b, n_results);
        if (r < 0)
                return r;
        *ret_before = b->ops.size;
        r = msgpack_pack_array(pk, 1 + wire_ops[kind].args) < 0 ||
            pack_string(pk, wire_ops[kind].name) < 0 || pack_u32_list(pk, cpus, n_cpus) < 0 ?
                -ENOMEM : 0;
        if (r < 0)
                b->ops.size = *ret_before;
        return r;
}

int pmugate_batch_read_msrs(pmugate_batch *b, const uint32_t *cpus, size_t n_cpus, const uint32_t *regs, size_t n_regs) {
        size_t before;
        int r;

        if (!b || (n_cpus > 0 && !cpus) || (n_regs > 0 && !regs))
                return -EINVAL;
        if (n_regs > PMUGATE_LIST_MAX)
                return -E2BIG;
        r = begin_compact(b, WIRE_OP_SWEEP_READ, cpus, n_cpus, n_cpus * n_regs, &before);
        if (r < 0)
                return r;
        r = pack_u32_list(&b->packer, regs, n_regs);
        return finish_op(b, before, r, n_cpus * n_regs);
}

/* A step of "each": its kind and register, then the value and mask its arity carries. */
static int pack_step(msgpack_packer *pk, const pmugate_step *step) {
        WireOp kind;
        unsigned args;

        switch (step->kind) {
        case PMUGATE_STEP_READ:
                kind = WIRE_OP_READ;
                break;
        case PMUGATE_STEP_WRITE:
                kind = WIRE_OP_WRITE;
                break;
        case PMUGATE_STEP_WRITE_BITS:
                kind = WIRE_OP_WRITE_MASKED;
                break;
        default:
                return -EINVAL;
        }
        args = wire_ops[kind].step_args;
        return msgpack_pack_array(pk, 1 + args) < 0 || pack_string(pk, wire_ops[kind].name) < 0 ||
               msgpack_pack_uint32(pk, step->reg) < 0 ||
               (args >= 2 && msgpack_pack_uint64(pk, step->value) < 0) ||
               (args >= 3 && msgpack_pack_uint64(pk, step->mask) < 0) ? -ENOMEM : 0;
}

int pmugate_batch_each_cpu(pmugate_batch *b, const uint32_t *cpus, size_t n_cpus, const pmugate_step *steps,
                           size_t n_steps) {
        size_t before;
        int r;

        if (!b || (n_cpus > 0 && !cpus) || (n_steps > 0 && !steps))
                return -EINVAL;
        if (n_steps > PMUGATE_EACH_OPS_MAX)
                return -E2BIG;
        r = begin_compact(b, WIRE_OP_EACH, cpus, n_cpus, n_cpus * n_steps, &before);
        if (r < 0)
                return r;
        r = msgpack_pack_array(&b->packer, n_steps) < 0 ? -ENOMEM : 0;
        for (size_t i = 0; r >= 0 && i < n_steps; i++)
                r = pack_step(&b->packer, &steps[i]);
        return finish_op(b, before, r, n_cpus * n_steps);
}

/* Takes the results of one reply message, after the n_filled already taken. */
static int decode_results(pmugate_batch *b, const msgpack_object *reply) {
        const msgpack_object *status = msgpack_map_get(reply, "status"), *values = msgpack_map_get(reply, "values");
        size_t n;

        if (!status || !values || status->type != MSGPACK_OBJECT_ARRAY || values->type != MSGPACK_OBJECT_ARRAY ||
            status->via.array.size != values->via.array.size || status->via.array.size > b->n_results - b->n_filled)
                return -EBADMSG;
        n = status->via.array.size;
        for (size_t i = 0; i < n; i++) {
                const msgpack_object *s = &status->via.array.ptr[i], *v = &values->via.array.ptr[i];
                int64_t st;

                if (!object_get_int(s, &st) || st > 0 || st < -4095 || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                        return -EBADMSG;
                b->status[b->n_filled + i] = (int32_t) st;
                b->values[b->n_filled + i] = v->via.u64;
        }
        b->n_filled += n;
        return 0;
}

int pmugate_batch_run(pmugate *c, pmugate_batch *b) {
        const msgpack_object *reply;
        msgpack_packer pk;
        uint64_t parts = 1;
        int r;

        if (!c || !b)
                return -EINVAL;
        b->n_filled = 0;
        r = results_alloc(b);
        if (r < 0)
                return r;
        r = connection_begin(c, REQUEST_BATCH, 1, &pk);
        if (r < 0)
                return r;
        if (pack_string(&pk, "ops") < 0 || msgpack_pack_array(&pk, b->n_ops) < 0 ||
            msgpack_sbuffer_write(&c->request, b->ops.data, b->ops.size) < 0)
                return -ENOMEM;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;
        /* Many results come in parts, each its own message; the first says how many. */
        if (msgpack_map_get(reply, "parts")) {
                uint64_t part = UINT64_MAX;

                if (!reply_get_uint(reply, "parts", &parts) || parts < 2 || parts > PMUGATE_REPLY_PARTS_MAX ||
                    !reply_get_uint(reply, "part", &part) || part != 0)
                        return -EBADMSG;
        }
        r = decode_results(b, reply);
        for (uint64_t part = 1; r >= 0 && part < parts; part++) {
                r = connection_receive_part(c, part, parts, &reply);
                if (r >= 0)
                        r = decode_results(b, reply);
        }
        if (r >= 0 && b->n_filled != b->n_results)
                r = -EBADMSG;
        if (r < 0)
                b->n_filled = 0;
        return r;
}

int pmugate_batch_result(const pmugate_batch *b, size_t i, uint64_t *ret_value) {
        if (!b || i >= b->n_filled)
                return -EINVAL;
        if (ret_value)
                *ret_value = b->values[i];
        return b->status[i];
}

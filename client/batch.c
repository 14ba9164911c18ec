/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: batches. Ops are encoded as they are added; running a batch again re-sends the
 * same bytes with a new request id, so a sampling loop encodes nothing per sample.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "connection.h"
#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"

struct pmugate_batch {
        msgpack_sbuffer ops;      /* encoded op arrays, without the enclosing array header */
        msgpack_packer packer;
        size_t n_ops;             /* entries of the "ops" array */
        size_t n_results;         /* ops after expanding sweeps */
        int32_t *status;
        uint64_t *values;
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
        b->status = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(*b->status));
        b->values = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(*b->values));
        if (!b->status || !b->values) {
                pmugate_batch_free(b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
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

static int add_op(pmugate_batch *b, const char *kind, uint32_t target, uint32_t reg, unsigned n_values,
                  uint64_t value, uint64_t mask) {
        msgpack_packer *pk;
        size_t before;

        if (!b)
                return -EINVAL;
        pk = &b->packer;
        before = b->ops.size;
        if (b->n_results >= PMUGATE_OPS_PER_BATCH_MAX)
                return -E2BIG;
        if (msgpack_pack_array(pk, 3 + n_values) < 0 || pack_string(pk, kind) < 0 ||
            msgpack_pack_uint32(pk, target) < 0 || msgpack_pack_uint32(pk, reg) < 0 ||
            (n_values >= 1 && msgpack_pack_uint64(pk, value) < 0) ||
            (n_values >= 2 && msgpack_pack_uint64(pk, mask) < 0)) {
                b->ops.size = before;
                return -ENOMEM;
        }
        b->n_ops++;
        return (int) b->n_results++;
}

int pmugate_batch_read_msr(pmugate_batch *b, uint32_t cpu, uint32_t reg) {
        return add_op(b, "r", cpu, reg, 0, 0, 0);
}

int pmugate_batch_write_msr(pmugate_batch *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        return add_op(b, "w", cpu, reg, 1, value, 0);
}

int pmugate_batch_read_pci(pmugate_batch *b, uint32_t unit, uint32_t offset) {
        return add_op(b, "pr", unit, offset, 0, 0, 0);
}

int pmugate_batch_read_counter(pmugate_batch *b, uint32_t counter) {
        msgpack_packer *pk;
        size_t before;

        if (!b)
                return -EINVAL;
        if (b->n_results >= PMUGATE_OPS_PER_BATCH_MAX)
                return -E2BIG;
        pk = &b->packer;
        before = b->ops.size;
        if (msgpack_pack_array(pk, 2) < 0 || pack_string(pk, "cr") < 0 ||
            msgpack_pack_uint32(pk, counter) < 0) {
                b->ops.size = before;
                return -ENOMEM;
        }
        b->n_ops++;
        return (int) b->n_results++;
}

int pmugate_batch_write_pci(pmugate_batch *b, uint32_t unit, uint32_t offset, uint64_t value) {
        return add_op(b, "pw", unit, offset, 1, value, 0);
}

int pmugate_batch_write_msr_bits(pmugate_batch *b, uint32_t cpu, uint32_t reg, uint64_t value, uint64_t mask) {
        return add_op(b, "wm", cpu, reg, 2, value, mask);
}

int pmugate_batch_read_msrs(pmugate_batch *b, const uint32_t *cpus, size_t n_cpus, const uint32_t *regs, size_t n_regs) {
        msgpack_packer *pk;
        size_t before;
        int first;

        if (!b || (n_cpus > 0 && !cpus) || (n_regs > 0 && !regs))
                return -EINVAL;
        if (n_cpus > PMUGATE_LIST_MAX || n_regs > PMUGATE_LIST_MAX ||
            n_cpus * n_regs > PMUGATE_OPS_PER_BATCH_MAX - b->n_results)
                return -E2BIG;
        pk = &b->packer;
        before = b->ops.size;
        if (msgpack_pack_array(pk, 3) < 0 || pack_string(pk, "R") < 0 || msgpack_pack_array(pk, n_cpus) < 0)
                goto oom;
        for (size_t i = 0; i < n_cpus; i++)
                if (msgpack_pack_uint32(pk, cpus[i]) < 0)
                        goto oom;
        if (msgpack_pack_array(pk, n_regs) < 0)
                goto oom;
        for (size_t i = 0; i < n_regs; i++)
                if (msgpack_pack_uint32(pk, regs[i]) < 0)
                        goto oom;
        b->n_ops++;
        first = (int) b->n_results;
        b->n_results += n_cpus * n_regs;
        return first;
oom:
        b->ops.size = before;
        return -ENOMEM;
}

static int decode_results(pmugate_batch *b, const msgpack_object *reply) {
        const msgpack_object *status = msgpack_map_get(reply, "status"), *values = msgpack_map_get(reply, "values");

        if (!status || !values || status->type != MSGPACK_OBJECT_ARRAY || values->type != MSGPACK_OBJECT_ARRAY ||
            status->via.array.size != b->n_results || values->via.array.size != b->n_results)
                return -EBADMSG;
        for (size_t i = 0; i < b->n_results; i++) {
                const msgpack_object *s = &status->via.array.ptr[i], *v = &values->via.array.ptr[i];
                int64_t st;

                if (!object_get_int(s, &st) || st > 0 || st < -4095 || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                        return -EBADMSG;
                b->status[i] = (int32_t) st;
                b->values[i] = v->via.u64;
        }
        b->n_filled = b->n_results;
        return 0;
}

int pmugate_batch_run(pmugate *c, pmugate_batch *b) {
        const msgpack_object *reply;
        msgpack_packer pk;
        int r;

        if (!c || !b)
                return -EINVAL;
        b->n_filled = 0;
        r = connection_begin(c, "batch", 1, &pk);
        if (r < 0)
                return r;
        if (pack_string(&pk, "ops") < 0 || msgpack_pack_array(&pk, b->n_ops) < 0 ||
            msgpack_sbuffer_write(&c->request, b->ops.data, b->ops.size) < 0)
                return -ENOMEM;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;
        return decode_results(b, reply);
}

int pmugate_batch_result(const pmugate_batch *b, size_t i, uint64_t *ret_value) {
        if (!b || i >= b->n_filled)
                return -EINVAL;
        if (ret_value)
                *ret_value = b->values[i];
        return b->status[i];
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the daemon's request decoder, the first code that sees a client's bytes
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz-util.h"
#include "message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal goes back to the client as an error reply: it must encode into a reply that is
 * itself one well-formed msgpack object. */
static void assert_refusal_replies(const DecodeError *error) {
        msgpack_sbuffer sb;
        msgpack_packer pk;

        fuzz_assert(error->code > 0 && error->code < _PROTO_E_MAX);
        fuzz_assert(FUZZ_TERMINATED(error->reason));
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        fuzz_assert(reply_pack_error(&pk, error->has_id ? error->id : 0, error->code,
                                     error->reason[0] ? error->reason : NULL, -1) == 0);
        fuzz_assert(msgpack_check(sb.data, sb.size, 8) == 0);
        msgpack_sbuffer_destroy(&sb);
}

static void assert_request_valid(const Request *req, const RequestBuffer *buf) {
        fuzz_assert(req->type < _REQUEST_TYPE_MAX);
        fuzz_assert(request_type_to_string(req->type));
        fuzz_assert(req->n_ops <= PMUGATE_OPS_PER_BATCH_MAX);
        fuzz_assert(req->n_ops == 0 || req->ops);
        /* the op array grew to hold them, within the limit */
        fuzz_assert(buf->ops_capacity >= req->n_ops && buf->ops_capacity <= PMUGATE_OPS_PER_BATCH_MAX);
        for (size_t i = 0; i < req->n_ops; i++)
                fuzz_assert(req->ops[i].kind < _REG_OP_MAX);
        fuzz_assert(req->n_cpus <= PMUGATE_LIST_MAX);
        fuzz_assert(req->n_cpus == 0 || req->has_cpus);
        fuzz_assert(!req->has_job || strnlen(req->job, sizeof(req->job)) <= PMUGATE_STRING_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static RequestBuffer *buf;
        DecodeError error;
        Request req;
        int r;

        if (!buf)
                buf = request_buffer_new();
        if (!buf)
                abort();
        memset(&error, 0, sizeof(error));
        r = request_decode(data, size, buf, &req, &error);
        fuzz_assert(r == 0 || r == -ENOMEM || (r > 0 && r < _PROTO_E_MAX && error.code == r));
        if (r > 0)
                assert_refusal_replies(&error);
        if (r == 0)
                assert_request_valid(&req, buf);
        /* the daemon shrinks the buffer when a client leaves: decoding goes on after it */
        if (size % 7 == 0)
                request_buffer_shrink(buf);
        return 0;
}

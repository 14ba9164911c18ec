/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the daemon's request decoder, the first code that sees a client's bytes
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz_util.h"
#include "request-decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal goes back to the client as an error reply, its reason a msgpack string: the
 * reason must be terminated printable ASCII (valid UTF-8, safe in a terminal or a log) and the
 * code one the reply can name. The packer is not linked here (tests/proto/test_message.c packs
 * error replies); this target holds the decoder alone. */
static void assert_refusal_replies(const DecodeError *error) {
        fuzz_assert(error->code > 0 && error->code < _PROTO_E_MAX);
        fuzz_assert(proto_error_name(error->code));
        fuzz_assert(FUZZ_TERMINATED(error->reason));
        for (const char *p = error->reason; *p; p++)
                fuzz_assert(*p >= 0x20 && *p <= 0x7e);
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
        /* a timing_open the daemon sees names a mode, a process and 1 to 64 distinct CPUs */
        if (req->type == REQUEST_TIMING_OPEN) {
                fuzz_assert(timing_mode_to_string(req->timing_mode));
                fuzz_assert(req->pid > 0 && req->pid <= INT32_MAX);
                fuzz_assert(req->n_cpus >= 1 && req->n_cpus <= TIMING_CPUS_PER_OPEN);
                fuzz_assert(!req->has_period || req->period > 0);
                for (size_t i = 0; i < req->n_cpus; i++)
                        for (size_t j = 0; j < i; j++)
                                fuzz_assert(req->cpus[i] != req->cpus[j]);
        }
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the daemon's request decoder, the first code that sees a client's bytes
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "error.h"
#include "message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static RequestBuffer *buf;
        DecodeError error;
        Request req;
        int r;

        if (!buf)
                buf = request_buffer_new();
        if (!buf)
                abort();
        r = request_decode(data, size, buf, &req, &error);
        assert(r == 0 || r == -ENOMEM || (r > 0 && r < _PROTO_E_MAX && error.code == r));
        if (r == 0) {
                assert(req.type < _REQUEST_TYPE_MAX);
                assert(req.n_ops <= PMUGATE_OPS_PER_BATCH_MAX);
                for (size_t i = 0; i < req.n_ops; i++)
                        assert(req.ops[i].kind < _REG_OP_MAX);
        }
        return 0;
}

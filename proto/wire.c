/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire's names: request types and op kinds (wire.h)
 */
#include <string.h>

#include "wire.h"

static const char *const request_type_names[_REQUEST_TYPE_MAX] = {
        [REQUEST_HELLO] = "hello",     [REQUEST_BATCH] = "batch",     [REQUEST_STATUS] = "status",
        [REQUEST_LEASE] = "lease",     [REQUEST_RELEASE] = "release", [REQUEST_GRANT] = "grant",
        [REQUEST_REVOKE] = "revoke",   [REQUEST_RESET] = "reset",     [REQUEST_RELOAD] = "reload",
        [REQUEST_JOBMAP] = "jobmap",   [REQUEST_PERF_OPEN] = "perf_open",
        [REQUEST_PERF_READ] = "perf_read", [REQUEST_PERF_CLOSE] = "perf_close",
        [REQUEST_TIMING_OPEN] = "timing_open",
};

#define WIRE_OP(n, a, s) { .name = n, .name_len = sizeof(n) - 1, .args = a, .step_args = s }

const WireOpInfo wire_ops[_WIRE_OP_MAX] = {
        [WIRE_OP_READ] = WIRE_OP("r", 2, 1),
        [WIRE_OP_WRITE] = WIRE_OP("w", 3, 2),
        [WIRE_OP_WRITE_MASKED] = WIRE_OP("wm", 4, 3),
        [WIRE_OP_PCI_READ] = WIRE_OP("pr", 2, 0),
        [WIRE_OP_PCI_WRITE] = WIRE_OP("pw", 3, 0),
        [WIRE_OP_SWEEP_READ] = WIRE_OP("R", 2, 0),
        [WIRE_OP_SWEEP_WRITE] = WIRE_OP("W", 3, 0),
        [WIRE_OP_COUNTER_READ] = WIRE_OP("cr", 1, 0),
        [WIRE_OP_EACH] = WIRE_OP("each", 2, 0),
};

const char *request_type_to_string(RequestType t) {
        if ((unsigned) t >= _REQUEST_TYPE_MAX)
                return NULL;
        return request_type_names[t];
}

RequestType request_type_from_string(const char *s, size_t n) {
        for (unsigned t = 0; t < _REQUEST_TYPE_MAX; t++)
                if (n > 0 && s[0] == request_type_names[t][0] && n == strlen(request_type_names[t]) &&
                    memcmp(s, request_type_names[t], n) == 0)
                        return (RequestType) t;
        return _REQUEST_TYPE_INVALID;
}

/* A kind is its whole string, length and every byte: folding the bytes into one number once
 * let "\0W" pass for "W". This runs once per element of a batch, hence the length and first
 * byte compared before the rest, and no call for the one-byte kinds ("r" first, the commonest
 * single op). */
WireOp wire_op_from_string(const char *s, size_t n) {
        for (unsigned k = 0; k < _WIRE_OP_MAX; k++)
                if (n == wire_ops[k].name_len && s[0] == wire_ops[k].name[0] &&
                    (n == 1 || memcmp(s + 1, wire_ops[k].name + 1, n - 1) == 0))
                        return (WireOp) k;
        return _WIRE_OP_INVALID;
}

const char *wire_op_to_string(WireOp op) {
        if ((unsigned) op >= _WIRE_OP_MAX)
                return NULL;
        return wire_ops[op].name;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire's vocabulary, spelled once for both sides: the request types and their names, the
 * register op kinds with their names and arities, and the positions of every tuple a reply
 * carries. The daemon's decoder and packers and the client's request builders and reply
 * readers all take them from here, so a kind or a position cannot drift between the two.
 * docs/PROTOCOL.md describes each of them.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

typedef enum RequestType {
        REQUEST_HELLO,
        REQUEST_BATCH,
        REQUEST_STATUS,
        REQUEST_LEASE,
        REQUEST_RELEASE,
        REQUEST_GRANT,
        REQUEST_REVOKE,
        REQUEST_RESET,
        REQUEST_RELOAD,
        REQUEST_JOBMAP,
        _REQUEST_TYPE_MAX,
        _REQUEST_TYPE_INVALID = -EINVAL,
} RequestType;

/* The request's "op" string; NULL for a value outside the enum. */
const char *request_type_to_string(RequestType t);
/* The type whose name is exactly the n bytes at s, or -EINVAL. */
RequestType request_type_from_string(const char *s, size_t n);

/* The kinds of element in a batch's "ops" array (and, for some, in an "each" op's steps). */
typedef enum WireOp {
        WIRE_OP_READ,           /* ["r", cpu, msr]; as a step ["r", msr] */
        WIRE_OP_WRITE,          /* ["w", cpu, msr, value]; as a step ["w", msr, value] */
        WIRE_OP_WRITE_MASKED,   /* ["wm", cpu, msr, value, mask]; as a step ["wm", msr, value, mask] */
        WIRE_OP_PCI_READ,       /* ["pr", unit, offset] */
        WIRE_OP_PCI_WRITE,      /* ["pw", unit, offset, value] */
        WIRE_OP_SWEEP_READ,     /* ["R", [cpus], [msrs]] */
        WIRE_OP_SWEEP_WRITE,    /* ["W", [cpus], [msrs], [values]] */
        WIRE_OP_COUNTER_READ,   /* ["cr", counter]: an index into hello's "counters" */
        WIRE_OP_EACH,           /* ["each", [cpus], [step, ...]] */
        _WIRE_OP_MAX,
        _WIRE_OP_INVALID = -EINVAL,
} WireOp;

typedef struct WireOpInfo {
        const char *name;
        uint8_t name_len;
        uint8_t args;           /* elements after the kind in a batch's "ops" */
        uint8_t step_args;      /* elements after the kind as a step of "each"; 0: never a step */
} WireOpInfo;

extern const WireOpInfo wire_ops[_WIRE_OP_MAX];

/* The kind whose name is exactly the n bytes at s (length and every byte), or -EINVAL. */
WireOp wire_op_from_string(const char *s, size_t n);
/* The kind's wire name; NULL for a value outside the enum. */
const char *wire_op_to_string(WireOp op);

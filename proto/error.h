/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Protocol error codes: numbered, named, with a default reason and the errno the library maps
 * them to. The numbers are wire format and never change meaning.
 */
#pragma once

#include <stdbool.h>

typedef enum ProtoError {
        _PROTO_E_SUCCESS = 0,
        PROTO_E_MALFORMED = 1,         /* not msgpack, or not a map at the top */
        PROTO_E_VERSION = 2,           /* "v" missing or not spoken by this daemon */
        PROTO_E_UNKNOWN_OP = 3,        /* "op" names nothing this daemon knows */
        PROTO_E_BAD_FIELD = 4,         /* missing, unknown or wrongly typed field */
        PROTO_E_TOO_LARGE = 5,         /* message exceeds PMUGATE_REQUEST_SIZE_MAX */
        PROTO_E_TOO_MANY_OPS = 6,      /* batch exceeds PMUGATE_OPS_PER_BATCH_MAX */
        PROTO_E_NOT_AUTHORIZED = 7,    /* the caller's role does not allow this */
        PROTO_E_REG_NOT_ALLOWED = 8,   /* register not in the allowlist of this CPU model */
        PROTO_E_REG_FORBIDDEN = 9,     /* register on the built-in never-list */
        PROTO_E_READ_ONLY = 10,        /* write to a register whose write mask is 0 */
        PROTO_E_NO_SUCH_CPU = 11,      /* CPU not present or not online */
        PROTO_E_NO_SUCH_UNIT = 12,     /* PCI unit index unknown */
        PROTO_E_TOO_MANY_CLIENTS = 13, /* connection limit (total or per uid) reached */
        PROTO_E_BUSY = 14,             /* register held by another user of the PMU */
        PROTO_E_INTERNAL = 15,         /* daemon-side failure; see its log */
        PROTO_E_NO_GRANT = 16,         /* job mode: no grant for this caller */
        PROTO_E_NO_LEASE = 17,         /* writing needs a lease on the CPU */
        PROTO_E_PREEMPTED = 18,        /* the caller's lease was taken by a higher role */
        PROTO_E_OUT_OF_SCOPE = 19,     /* CPU or package outside the caller's job */
        PROTO_E_BAD_CONFIG = 20,       /* reload: the new configuration was refused */
        PROTO_E_LIMIT = 21,            /* a configured limit (leases per user, grants) was reached */
        PROTO_E_REVOKED = 22,          /* the caller's leases ended: the right that allowed them is gone */
        _PROTO_E_MAX,
} ProtoError;

/* Stable lower-case name such as "reg-not-allowed", or NULL for an unknown code. */
const char *proto_error_name(int code);

/* One-line default reason for an error code. */
const char *proto_error_reason(int code);

/* The (positive) errno the client library reports for an error code. */
int proto_error_to_errno(int code);

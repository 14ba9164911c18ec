/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Protocol error codes
 */
#include <errno.h>

#include "error.h"
#include "macro.h"

static const struct {
        const char *name;
        const char *reason;
        int errnum;
} proto_errors[_PROTO_E_MAX] = {
        [_PROTO_E_SUCCESS] = { "ok", "success", 0 },
        [PROTO_E_MALFORMED] = { "malformed", "request is not a msgpack map", EBADMSG },
        [PROTO_E_VERSION] = { "version", "unsupported protocol version", EPROTONOSUPPORT },
        [PROTO_E_UNKNOWN_OP] = { "unknown-op", "unknown operation", EOPNOTSUPP },
        [PROTO_E_BAD_FIELD] = { "bad-field", "missing, unknown or wrongly typed field", EINVAL },
        [PROTO_E_TOO_LARGE] = { "too-large", "request message too large", EMSGSIZE },
        [PROTO_E_TOO_MANY_OPS] = { "too-many-ops", "too many operations in one batch", E2BIG },
        [PROTO_E_NOT_AUTHORIZED] = { "not-authorized", "caller is not authorized", EACCES },
        [PROTO_E_REG_NOT_ALLOWED] = { "reg-not-allowed", "register is not on the allowlist", EPERM },
        [PROTO_E_REG_FORBIDDEN] = { "reg-forbidden", "register is on the never-list", EPERM },
        [PROTO_E_READ_ONLY] = { "read-only", "register is read-only", EROFS },
        [PROTO_E_NO_SUCH_CPU] = { "no-such-cpu", "no such CPU, or CPU offline", ENODEV },
        [PROTO_E_NO_SUCH_UNIT] = { "no-such-unit", "no such PCI unit", ENODEV },
        [PROTO_E_TOO_MANY_CLIENTS] = { "too-many-clients", "too many clients", EUSERS },
        [PROTO_E_BUSY] = { "busy", "register is in use by another PMU user", EBUSY },
        [PROTO_E_INTERNAL] = { "internal", "internal daemon error", EIO },
        [PROTO_E_NO_GRANT] = { "no-grant", "no job grant for this caller", EACCES },
        [PROTO_E_NO_LEASE] = { "no-lease", "no lease on this CPU", ENOLCK },
        [PROTO_E_PREEMPTED] = { "preempted", "lease was preempted", ECANCELED },
        [PROTO_E_OUT_OF_SCOPE] = { "out-of-scope", "CPU is outside the caller's scope", EPERM },
        [PROTO_E_BAD_CONFIG] = { "bad-config", "configuration refused", EINVAL },
        [PROTO_E_LIMIT] = { "limit", "a configured limit was reached", EDQUOT },
        [PROTO_E_REVOKED] = { "revoked", "leases ended: the right that allowed them is gone", EKEYREVOKED },
};

const char *proto_error_name(int code) {
        if (code < 0 || code >= _PROTO_E_MAX)
                return NULL;
        return proto_errors[code].name;
}

const char *proto_error_reason(int code) {
        if (code < 0 || code >= _PROTO_E_MAX)
                return "unknown error";
        return proto_errors[code].reason;
}

int proto_error_to_errno(int code) {
        if (code <= 0 || code >= _PROTO_E_MAX)
                return EPROTO;
        return proto_errors[code].errnum;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: administration (grant, revoke, reset, reload)
 */
#include <errno.h>
#include <string.h>

#include "core/connection.h"
#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"
#include "wire.h"

int pmugate_grant(pmugate *c, const char *job, uint32_t uid, const uint32_t *cpus, size_t n_cpus, bool *ret_replaced) {
        return pmugate_grant_with_lbr(c, job, uid, cpus, n_cpus, false, ret_replaced);
}

int pmugate_grant_with_lbr(pmugate *c, const char *job, uint32_t uid, const uint32_t *cpus, size_t n_cpus, bool lbr,
                           bool *ret_replaced) {
        const msgpack_object *reply;
        msgpack_packer pk;
        bool replaced = false;
        int r;

        if (!c || !job || (n_cpus > 0 && !cpus))
                return -EINVAL;
        if (strlen(job) == 0 || strlen(job) > PMUGATE_STRING_MAX)
                return -EINVAL;
        if (n_cpus > PMUGATE_LIST_MAX)
                return -E2BIG;
        /* "lbr" only when given: a daemon before it refuses the key by name, never ignores it */
        r = connection_begin(c, REQUEST_GRANT, 2 + (n_cpus > 0 ? 1 : 0) + (lbr ? 1 : 0), &pk);
        if (r < 0)
                return r;
        if (pack_key_string(&pk, "job", job) < 0 || pack_key_uint(&pk, "uid", uid) < 0 ||
            (lbr && pack_key_bool(&pk, "lbr", true) < 0))
                return -ENOMEM;
        if (n_cpus > 0 && connection_pack_cpus(&pk, cpus, n_cpus) < 0)
                return -ENOMEM;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;
        (void) reply_get_bool(reply, "replaced", &replaced);
        if (ret_replaced)
                *ret_replaced = replaced;
        return 0;
}

int pmugate_revoke(pmugate *c, const char *job, bool *ret_revoked) {
        const msgpack_object *reply;
        msgpack_packer pk;
        bool revoked = false;
        int r;

        if (!c || !job || strlen(job) == 0 || strlen(job) > PMUGATE_STRING_MAX)
                return -EINVAL;
        r = connection_begin(c, REQUEST_REVOKE, 1, &pk);
        if (r < 0)
                return r;
        if (pack_key_string(&pk, "job", job) < 0)
                return -ENOMEM;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;
        (void) reply_get_bool(reply, "revoked", &revoked);
        if (ret_revoked)
                *ret_revoked = revoked;
        return 0;
}

/* One request: at most PMUGATE_LIST_MAX CPUs, or none for every CPU. */
static int reset_some(pmugate *c, const uint32_t *cpus, size_t n_cpus) {
        const msgpack_object *reply;
        msgpack_packer pk;
        int r;

        r = connection_begin(c, REQUEST_RESET, n_cpus > 0 ? 1 : 0, &pk);
        if (r < 0)
                return r;
        if (n_cpus > 0 && connection_pack_cpus(&pk, cpus, n_cpus) < 0)
                return -ENOMEM;
        return connection_call(c, &reply);
}

int pmugate_reset(pmugate *c, const uint32_t *cpus, size_t n_cpus) {
        int r;

        if (!c || (n_cpus > 0 && !cpus))
                return -EINVAL;
        if (n_cpus > PMUGATE_CPUS_MAX)
                return -E2BIG;
        if (n_cpus == 0)
                return reset_some(c, NULL, 0);
        /* A request names at most PMUGATE_LIST_MAX CPUs; a longer list goes in turns. */
        for (size_t i = 0; i < n_cpus; i += PMUGATE_LIST_MAX) {
                r = reset_some(c, cpus + i, MIN(n_cpus - i, (size_t) PMUGATE_LIST_MAX));
                if (r < 0)
                        return r;
        }
        return 0;
}

int pmugate_reload(pmugate *c) {
        const msgpack_object *reply;
        msgpack_packer pk;
        int r;

        if (!c)
                return -EINVAL;
        r = connection_begin(c, REQUEST_RELOAD, 0, &pk);
        if (r < 0)
                return r;
        return connection_call(c, &reply);
}

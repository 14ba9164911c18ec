/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: leases
 */
#include <errno.h>

#include "core/connection.h"
#include "message.h"
#include "pmugate-limits.h"
#include "wire.h"

static int lease_call(pmugate *c, RequestType type, const uint32_t *cpus, size_t n_cpus) {
        const msgpack_object *reply;
        msgpack_packer pk;
        int r;

        if (!c || (n_cpus > 0 && !cpus))
                return -EINVAL;
        if (n_cpus > PMUGATE_LIST_MAX)
                return -E2BIG;
        r = connection_begin(c, type, n_cpus > 0 ? 1 : 0, &pk);
        if (r < 0)
                return r;
        if (n_cpus > 0 && connection_pack_cpus(&pk, cpus, n_cpus) < 0)
                return -ENOMEM;
        return connection_call(c, &reply);
}

int pmugate_lease(pmugate *c, const uint32_t *cpus, size_t n_cpus) {
        if (n_cpus == 0)
                return -EINVAL;
        return lease_call(c, REQUEST_LEASE, cpus, n_cpus);
}

int pmugate_release(pmugate *c, const uint32_t *cpus, size_t n_cpus) {
        return lease_call(c, REQUEST_RELEASE, cpus, n_cpus);
}

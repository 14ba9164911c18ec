/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: the job map, which job holds which CPU
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/connection.h"
#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"
#include "wire.h"

pmugate_jobmap *pmugate_jobmap_free(pmugate_jobmap *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; m->jobs && i < m->n_jobs; i++)
                free(m->jobs[i]);
        free(m->jobs);
        free(m->uids);
        free(m->cpus);
        free(m->leases);
        free(m);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_jobmap *, pmugate_jobmap_free);

static bool object_uint32(const msgpack_object *o, uint32_t *ret) {
        if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > UINT32_MAX)
                return false;
        *ret = (uint32_t) o->via.u64;
        return true;
}

static int decode_jobs(const msgpack_object *reply, pmugate_jobmap *m) {
        const msgpack_object *jobs = msgpack_map_get(reply, "jobs"), *uids = msgpack_map_get(reply, "uids");
        uint32_t n;

        if (!jobs || jobs->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        n = jobs->via.array.size;
        m->jobs = calloc(n ?: 1, sizeof(char *));
        if (!m->jobs)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                const msgpack_object *o = &jobs->via.array.ptr[i];

                if (o->type != MSGPACK_OBJECT_STR || o->via.str.size == 0 ||
                    o->via.str.size > PMUGATE_STRING_MAX)
                        return -EBADMSG;
                m->jobs[i] = strndup(o->via.str.ptr, o->via.str.size);
                if (!m->jobs[i])
                        return -ENOMEM;
                m->n_jobs = i + 1;
                /* A job id with a NUL in it would name another job. */
                if (strlen(m->jobs[i]) != o->via.str.size)
                        return -EBADMSG;
        }
        if (uids && uids->type == MSGPACK_OBJECT_ARRAY) {
                if (uids->via.array.size != n)
                        return -EBADMSG;
                m->uids = calloc(n ?: 1, sizeof(uint32_t));
                if (!m->uids)
                        return -ENOMEM;
                for (uint32_t i = 0; i < n; i++)
                        if (!object_uint32(&uids->via.array.ptr[i], &m->uids[i]))
                                return -EBADMSG;
        } else if (uids && uids->type != MSGPACK_OBJECT_NIL)
                return -EBADMSG;
        return 0;
}

static int decode_cpus(const msgpack_object *reply, pmugate_jobmap *m) {
        const msgpack_object *cpus = msgpack_map_get(reply, "cpus"),
                             *leases = msgpack_map_get(reply, "leases");

        if (!cpus || cpus->type != MSGPACK_OBJECT_ARRAY || !leases || leases->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        m->cpus = calloc(cpus->via.array.size ?: 1, sizeof(pmugate_jobmap_cpu));
        m->leases = calloc(leases->via.array.size ?: 1, sizeof(pmugate_jobmap_lease));
        if (!m->cpus || !m->leases)
                return -ENOMEM;
        for (uint32_t i = 0; i < cpus->via.array.size; i++) {
                const msgpack_object *t = &cpus->via.array.ptr[i];

                if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size != _JOBMAP_CPU_FIELDS ||
                    !object_uint32(&t->via.array.ptr[JOBMAP_CPU_CPU], &m->cpus[i].cpu) ||
                    !object_uint32(&t->via.array.ptr[JOBMAP_CPU_JOB], &m->cpus[i].job) ||
                    m->cpus[i].job >= m->n_jobs)
                        return -EBADMSG;
        }
        m->n_cpus = cpus->via.array.size;
        for (uint32_t i = 0; i < leases->via.array.size; i++) {
                const msgpack_object *t = &leases->via.array.ptr[i];

                if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size != _JOBMAP_LEASE_FIELDS ||
                    !object_uint32(&t->via.array.ptr[JOBMAP_LEASE_CPU], &m->leases[i].cpu) ||
                    t->via.array.ptr[JOBMAP_LEASE_ROLE].type != MSGPACK_OBJECT_STR)
                        return -EBADMSG;
                object_copy_string(&t->via.array.ptr[JOBMAP_LEASE_ROLE], m->leases[i].role,
                                   sizeof(m->leases[i].role));
        }
        m->n_leases = leases->via.array.size;
        return 0;
}

int pmugate_jobmap_get(pmugate *c, pmugate_jobmap **ret) {
        _cleanup_(pmugate_jobmap_freep) pmugate_jobmap *m = NULL;
        const msgpack_object *reply;
        msgpack_packer pk;
        int r;

        if (!c || !ret)
                return -EINVAL;
        r = connection_begin(c, REQUEST_JOBMAP, 0, &pk);
        if (r < 0)
                return r;
        r = connection_call(c, &reply);
        if (r < 0)
                return r;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        (void) reply_get_string(reply, "mode", m->mode, sizeof(m->mode));
        r = decode_jobs(reply, m);
        if (r < 0)
                return r;
        r = decode_cpus(reply, m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connection internals shared by the library's modules
 */
#pragma once

#include <msgpack.h>

#include "pmugate/pmugate.h"
#include "wire.h"

struct pmugate {
        int fd;
        uint64_t next_id;
        pmugate_error last_error;
        msgpack_sbuffer request;
        char *reply_buffer;
        msgpack_zone zone;
        msgpack_object reply;   /* the last reply, valid until the next call */
        /* fds the daemon passed (SCM_RIGHTS) with the replies of the last call, when the
         * request asked for up to fds_wanted of them; any others are closed on arrival */
        int *fds;
        size_t n_fds, fds_wanted;
};

/* Starts a request of type in c->request with extra_keys keys left for the caller to pack. */
int connection_begin(pmugate *c, RequestType type, size_t extra_keys, msgpack_packer *ret_packer);

/* Packs the key "cpus" and an array of CPU numbers. */
int connection_pack_cpus(msgpack_packer *pk, const uint32_t *cpus, size_t n);

/* Sends c->request and waits for its reply. A refused request fills last_error and returns
 * the matching negative errno; on success ret_reply points into c->zone until the next call. */
int connection_call(pmugate *c, const msgpack_object **ret_reply);

/* Receives part `part` (of `parts`) of the reply to the last call: a batch reply of many
 * results comes in several messages. ret_reply is valid until the next receive. */
int connection_receive_part(pmugate *c, uint64_t part, uint64_t parts, const msgpack_object **ret_reply);

/* Expects up to n fds with the replies of the next call (a perf_open with handoff). */
int connection_want_fds(pmugate *c, size_t n);
/* Takes the fds the last call received (the caller owns them) and stops expecting more. */
size_t connection_take_fds(pmugate *c, int **ret_fds);
/* Closes fds received and not taken, and stops expecting more. */
void connection_drop_fds(pmugate *c);

/* Typed access to reply fields; each returns false when absent or of another type. */
bool reply_get_uint(const msgpack_object *map, const char *key, uint64_t *ret);
bool reply_get_int(const msgpack_object *map, const char *key, int64_t *ret);
bool reply_get_bool(const msgpack_object *map, const char *key, bool *ret);
bool reply_get_string(const msgpack_object *map, const char *key, char *buf, size_t size);
bool object_get_int(const msgpack_object *o, int64_t *ret);
void object_copy_string(const msgpack_object *o, char *buf, size_t size);

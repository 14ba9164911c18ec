/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: connection, request/reply, errors
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/connection.h"
#include "error.h"
#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"

/* The public reason fields keep a reason whole: the daemon builds none longer. */
_Static_assert(sizeof(((pmugate_error *) NULL)->reason) == PMUGATE_REASON_MAX, "pmugate_error.reason");
_Static_assert(sizeof(((pmugate_info *) NULL)->rights_reason) == PMUGATE_REASON_MAX, "pmugate_info.rights_reason");
_Static_assert(sizeof(((pmugate_info *) NULL)->scope_reason) == PMUGATE_REASON_MAX, "pmugate_info.scope_reason");

int pmugate_connect(const char *socket_path, pmugate **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        pmugate *c;
        const char *path = socket_path;

        if (!ret)
                return -EINVAL;
        if (!path || !*path)
                path = secure_getenv("PMUGATE_SOCKET");
        if (!path || !*path)
                path = PMUGATE_DEFAULT_SOCKET;
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = -EBADF;
        c->next_id = 1;
        msgpack_sbuffer_init(&c->request);
        c->reply_buffer = malloc(PMUGATE_REPLY_SIZE_MAX);
        if (!c->reply_buffer || !msgpack_zone_init(&c->zone, 16U * 1024U)) {
                free(c->reply_buffer);
                msgpack_sbuffer_destroy(&c->request);
                free(c);
                return -ENOMEM;
        }
        c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int e = -errno;
                pmugate_disconnect(c);
                return e;
        }
        *ret = c;
        return 0;
}

pmugate *pmugate_disconnect(pmugate *c) {
        if (!c)
                return NULL;
        if (c->fd >= 0)
                (void) close(c->fd);
        connection_drop_fds(c);
        msgpack_sbuffer_destroy(&c->request);
        msgpack_zone_destroy(&c->zone);
        free(c->reply_buffer);
        free(c);
        return NULL;
}

const pmugate_error *pmugate_last_error(const pmugate *c) {
        return c ? &c->last_error : NULL;
}

const char *pmugate_strerror(int error) {
        const char *s;

        if (error == 0)
                return "success";
        s = strerrordesc_np(abs(error));
        return s ?: "unknown error";
}

int connection_pack_cpus(msgpack_packer *pk, const uint32_t *cpus, size_t n) {
        if (pack_string(pk, "cpus") < 0 || msgpack_pack_array(pk, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (msgpack_pack_uint32(pk, cpus[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int connection_begin(pmugate *c, RequestType type, size_t extra_keys, msgpack_packer *ret_packer) {
        msgpack_sbuffer_clear(&c->request);
        msgpack_packer_init(ret_packer, &c->request, msgpack_sbuffer_write);
        return request_pack_begin(ret_packer, c->next_id, request_type_to_string(type), extra_keys);
}

bool object_get_int(const msgpack_object *o, int64_t *ret) {
        if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
                *ret = (int64_t) o->via.u64;
                return true;
        }
        if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
                *ret = o->via.i64;
                return true;
        }
        return false;
}

void object_copy_string(const msgpack_object *o, char *buf, size_t size) {
        size_t n;

        if (size == 0)
                return;
        if (!o || o->type != MSGPACK_OBJECT_STR) {
                buf[0] = '\0';
                return;
        }
        n = o->via.str.size < size - 1 ? o->via.str.size : size - 1;
        memcpy(buf, o->via.str.ptr, n);
        buf[n] = '\0';
}

bool reply_get_uint(const msgpack_object *map, const char *key, uint64_t *ret) {
        const msgpack_object *o = msgpack_map_get(map, key);

        if (!o || o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                return false;
        *ret = o->via.u64;
        return true;
}

bool reply_get_int(const msgpack_object *map, const char *key, int64_t *ret) {
        const msgpack_object *o = msgpack_map_get(map, key);

        return o && object_get_int(o, ret);
}

bool reply_get_bool(const msgpack_object *map, const char *key, bool *ret) {
        const msgpack_object *o = msgpack_map_get(map, key);

        if (!o || o->type != MSGPACK_OBJECT_BOOLEAN)
                return false;
        *ret = o->via.boolean;
        return true;
}

bool reply_get_string(const msgpack_object *map, const char *key, char *buf, size_t size) {
        const msgpack_object *o = msgpack_map_get(map, key);

        object_copy_string(o, buf, size);
        return o && o->type == MSGPACK_OBJECT_STR;
}

static int record_error(pmugate *c, const msgpack_object *reply) {
        const msgpack_object *e = msgpack_map_get(reply, "error");
        uint64_t code = 0;
        int64_t op = -1;

        c->last_error = (pmugate_error) { .op_index = -1 };
        if (!e || !reply_get_uint(e, "code", &code))
                return -EPROTO;
        c->last_error.code = (int) (code > INT32_MAX ? INT32_MAX : code);
        (void) reply_get_string(e, "name", c->last_error.name, sizeof(c->last_error.name));
        (void) reply_get_string(e, "reason", c->last_error.reason, sizeof(c->last_error.reason));
        if (reply_get_int(e, "op", &op))
                c->last_error.op_index = op;
        return -proto_error_to_errno(c->last_error.code);
}

int connection_want_fds(pmugate *c, size_t n) {
        connection_drop_fds(c);
        if (n == 0)
                return 0;
        c->fds = calloc(n, sizeof(int));
        if (!c->fds)
                return -ENOMEM;
        c->fds_wanted = n;
        return 0;
}

size_t connection_take_fds(pmugate *c, int **ret_fds) {
        size_t n = c->n_fds;

        *ret_fds = TAKE_PTR(c->fds);
        c->n_fds = c->fds_wanted = 0;
        return n;
}

void connection_drop_fds(pmugate *c) {
        for (size_t i = 0; i < c->n_fds; i++)
                (void) close(c->fds[i]);
        free(c->fds);
        c->fds = NULL;
        c->n_fds = c->fds_wanted = 0;
}

/* Keeps the fds a message carried while the caller expects them, closes the rest: a daemon
 * cannot leave an fd in this process the caller did not ask for. A truncated set is refused
 * whole, so no count of fds is ever short without an error. */
static int keep_fds(pmugate *c, struct msghdr *mh) {
        bool overflow = (mh->msg_flags & MSG_CTRUNC) != 0;

        for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
                size_t n;
                int *fds;

                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                fds = (int *) CMSG_DATA(cm);
                for (size_t i = 0; i < n; i++) {
                        int fd;

                        memcpy(&fd, &fds[i], sizeof(fd));
                        if (c->n_fds < c->fds_wanted)
                                c->fds[c->n_fds++] = fd;
                        else {
                                (void) close(fd);
                                overflow = true;
                        }
                }
        }
        return overflow && c->fds_wanted > 0 ? -EBADMSG : 0;
}

static ssize_t receive_message(pmugate *c, int flags, int *ret_fd_error) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(PERF_HANDOFF_FDS_PER_MESSAGE * sizeof(int))];
        } control;
        struct iovec iov = { .iov_base = c->reply_buffer, .iov_len = PMUGATE_REPLY_SIZE_MAX };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = control.buf,
                .msg_controllen = sizeof(control.buf),
        };
        ssize_t n;

        n = recvmsg(c->fd, &mh, flags | MSG_TRUNC | MSG_CMSG_CLOEXEC);
        if (n >= 0)
                *ret_fd_error = keep_fds(c, &mh);
        return n;
}

/* Receives one reply message into c->reply and checks its envelope. */
static int receive_reply(pmugate *c, uint64_t *ret_id, bool *ret_ok) {
        msgpack_object *reply = &c->reply;
        int fd_error = 0;
        uint64_t v = 0;
        size_t off = 0;
        ssize_t n;

        do
                n = receive_message(c, 0, &fd_error);
        while (n < 0 && errno == EINTR);
        /* The kernel reports a reset (the daemon closed with our request unread, as when it
         * refuses a connection) before the messages still queued: the refusal may follow. */
        if (n < 0 && errno == ECONNRESET) {
                n = receive_message(c, MSG_DONTWAIT, &fd_error);
                if (n <= 0)
                        return -ECONNRESET;
        }
        if (n < 0)
                return -errno;
        if (fd_error < 0)
                return fd_error;
        if (n == 0)
                return -ECONNRESET;
        if ((size_t) n > PMUGATE_REPLY_SIZE_MAX)
                return -EMSGSIZE;

        msgpack_zone_clear(&c->zone);
        if (msgpack_check(c->reply_buffer, (size_t) n, 8) < 0 ||
            msgpack_unpack(c->reply_buffer, (size_t) n, &off, &c->zone, reply) != MSGPACK_UNPACK_SUCCESS ||
            reply->type != MSGPACK_OBJECT_MAP)
                return -EBADMSG;
        if (!reply_get_uint(reply, "v", &v) || v != PMUGATE_PROTOCOL_VERSION)
                return -EPROTONOSUPPORT;
        if (!reply_get_bool(reply, "ok", ret_ok) || !reply_get_uint(reply, "id", ret_id))
                return -EBADMSG;
        return 0;
}

int connection_call(pmugate *c, const msgpack_object **ret_reply) {
        uint64_t id = c->next_id++, reply_id = 0;
        bool ok = false;
        ssize_t n;
        int r;

        if (c->request.size > PMUGATE_REQUEST_SIZE_MAX)
                return -EMSGSIZE;
        do
                n = send(c->fd, c->request.data, c->request.size, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EPIPE && errno != ECONNRESET)
                return -errno;
        /* A daemon that refused the connection (a caller without a role, or too many clients)
         * sent why and closed it, maybe before this request went out: the reason is still
         * there to read. */
        if (n < 0) {
                r = -errno;
                if (receive_reply(c, &reply_id, &ok) < 0 || reply_id != 0 || ok)
                        return r;
                return record_error(c, &c->reply);
        }
        /* Parts of an earlier reply that was given up half-read carry an older id: they are
         * passed over, at most as many as one reply can have. */
        for (unsigned skipped = 0;; skipped++) {
                r = receive_reply(c, &reply_id, &ok);
                if (r < 0)
                        return r;
                if (reply_id == 0 || reply_id >= id || skipped >= PMUGATE_REPLY_PARTS_MAX)
                        break;
        }
        /* A connection refused for load answers with id 0 before reading anything. */
        if (reply_id != id && reply_id != 0)
                return -EPROTO;
        if (!ok)
                return record_error(c, &c->reply);
        c->last_error = (pmugate_error) { .op_index = -1 };
        *ret_reply = &c->reply;
        return 0;
}

int connection_receive_part(pmugate *c, uint64_t part, uint64_t parts, const msgpack_object **ret_reply) {
        uint64_t reply_id = 0, reply_part = 0, reply_parts = 0;
        bool ok = false;
        int r;

        r = receive_reply(c, &reply_id, &ok);
        if (r < 0)
                return r;
        if (reply_id != c->next_id - 1 || !ok)
                return -EPROTO;
        if (!reply_get_uint(&c->reply, "part", &reply_part) || !reply_get_uint(&c->reply, "parts", &reply_parts) ||
            reply_part != part || reply_parts != parts)
                return -EBADMSG;
        *ret_reply = &c->reply;
        return 0;
}

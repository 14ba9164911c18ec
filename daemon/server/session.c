/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions: reading requests, answering them, and ending what a client held when it goes
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "server.h"

/* A reply buffer grown past this is given back when a client leaves. */
#define REPLY_BUFFER_KEEP (16U * 1024U)

void session_lease_ended(const void *owner, uint32_t cpu, void *userdata) {
        Server *s = userdata;

        for (Session *c = s->sessions; c; c = c->next)
                if (c == owner) {
                        cpuset_remove(&c->leased, cpu);
                        return;
                }
}

void session_end_leases(Session *c, const char *why) {
        Server *s = c->server;
        char list[512], jobs[320];
        size_t ended;

        if (!s->leases)
                return;
        if (cpuset_format(&c->leased, list, sizeof(list)) < 0)
                (void) snprintf(list, sizeof(list), "%u CPUs", cpuset_count(&c->leased));
        server_lease_jobs(s, &c->leased, jobs, sizeof(jobs));
        /* Every lease this session owns, found in the table itself: none may outlive it. */
        ended = leases_release(s->leases, c, NULL, 0);
        if (ended > 0)
                server_audit(s, c, "lease-end", "restored", jobs[0] ? jobs : NULL, list, why, ended);
}

/* After a client leaves, what a large measurement needed (the reply buffer and the per-op
 * arrays grown to its batches, its lease records) goes back to the system: without this, glibc
 * keeps the freed heap and the daemon stays megabytes above its idle size. */
static void release_memory(Server *s) {
        if (s->reply.alloc > REPLY_BUFFER_KEEP) {
                msgpack_sbuffer_destroy(&s->reply);
                msgpack_sbuffer_init(&s->reply);
        }
        server_shrink_scratch(s);
        (void) malloc_trim(0);
}

static void drop_pending(Session *c) {
        c->server->pending_bytes -= c->pending_size;
        free(c->pending);
        c->pending = NULL;
        c->pending_size = 0;
        c->n_pending = c->pending_next = 0;
}

Session *session_free(Session *c) {
        Server *s;

        if (!c)
                return NULL;
        s = c->server;
        server_audit_folded_writes(s, c);
        session_end_leases(c, "client disconnected");
        peer_done(&c->peer);
        if (c->prev)
                c->prev->next = c->next;
        else if (s->sessions == c)
                s->sessions = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_sessions--;
        sd_event_source_disable_unref(c->io);
        if (c->fd >= 0)
                (void) close(c->fd);
        drop_pending(c);
        log_debug("Session uid=%u pid=%d disconnected", (unsigned) c->peer.uid, (int) c->peer.pid);
        free(c);
        release_memory(s);
        return NULL;
}

/* Sends what is left of c's pending reply, a message at a time. Returns 1 when all of it
 * went, 0 when the socket is full again, or negative errno when the client must be dropped. */
static int session_send_pending(Session *c) {
        while (c->pending_next < c->n_pending) {
                size_t start = c->pending_next > 0 ? c->pending_ends[c->pending_next - 1] : 0;
                ssize_t n = send(c->fd, c->pending + start, c->pending_ends[c->pending_next] - start,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0)
                        return errno == EAGAIN ? 0 : -errno;
                c->pending_next++;
        }
        drop_pending(c);
        return 1;
}

/* Sends s->reply, one message or each of its parts. What a full socket buffer does not take is
 * kept as pending and reading from this client stops until it drains, so a client that never
 * reads cannot make us queue without bound: at most one reply per client. Returns negative
 * errno when the client must be dropped. */
static int session_send_reply(Session *c) {
        Server *s = c->server;
        /* a reply in one message is one part that ends where the reply does */
        const size_t *ends = s->n_reply_parts > 0 ? s->reply_part_ends : &s->reply.size;
        size_t n_parts = s->n_reply_parts > 0 ? s->n_reply_parts : 1, sent = 0, start = 0;

        for (; sent < n_parts; sent++) {
                ssize_t n = send(c->fd, s->reply.data + start, ends[sent] - start, MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0)
                        return -errno;
                start = ends[sent];
        }
        if (sent == n_parts)
                return 0;
        if (s->reply.size - start > PMUGATE_PENDING_BYTES_MAX - s->pending_bytes) {
                log_warning("Dropping uid=%u pid=%d: its %zu-byte reply would take the replies held for clients "
                            "that do not read past %u bytes", (unsigned) c->peer.uid, (int) c->peer.pid,
                            s->reply.size - start, PMUGATE_PENDING_BYTES_MAX);
                return -ENOBUFS;
        }
        c->pending = malloc(s->reply.size - start);
        if (!c->pending)
                return -ENOMEM;
        memcpy(c->pending, s->reply.data + start, s->reply.size - start);
        c->pending_size = s->reply.size - start;
        s->pending_bytes += c->pending_size;
        c->n_pending = n_parts - sent;
        c->pending_next = 0;
        for (size_t i = 0; i < c->n_pending; i++)
                c->pending_ends[i] = ends[sent + i] - start;
        return sd_event_source_set_io_events(c->io, EPOLLOUT);
}

static int session_flush_pending(Session *c) {
        int r = session_send_pending(c);

        if (r <= 0)
                return r;
        return sd_event_source_set_io_events(c->io, EPOLLIN);
}

static int session_handle_message(Session *c, size_t size, bool truncated) {
        Server *s = c->server;
        DecodeError error;
        Request req;
        int r;

        s->counters.requests++;
        c->requests++;
        if (truncated) {
                char reason[96];

                (void) snprintf(reason, sizeof(reason), "request of %zu bytes exceeds the limit of %u bytes", size,
                                PMUGATE_REQUEST_SIZE_MAX);
                r = server_reply_error(s, c, NULL, 0, PROTO_E_TOO_LARGE, reason, -1);
        } else {
                r = request_decode(s->receive_buffer, size, s->request_buffer, &req, &error);
                if (r > 0)
                        r = server_reply_error(s, c, NULL, error.has_id ? error.id : 0, error.code, error.reason, -1);
                else if (r == 0)
                        r = s->dispatch(s, c, &req);
        }
        if (r < 0) {
                /* Out of memory while building a reply: tell the client without dropping it. */
                log_warning_errno(r, "Failed to handle a request from uid %u", (unsigned) c->peer.uid);
                if (server_reply_error(s, c, NULL, 0, PROTO_E_INTERNAL, NULL, -1) < 0)
                        return r;
        }
        return session_send_reply(c);
}

static int session_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Session *c = userdata;
        Server *s = c->server;
        ssize_t n;
        int r;

        if (c->pending) {
                r = session_flush_pending(c);
                if (r < 0)
                        goto drop;
                return 0;
        }
        if (!(revents & EPOLLIN)) {
                if (revents & (EPOLLHUP | EPOLLERR))
                        goto drop;
                return 0;
        }

        /* MSG_TRUNC returns the real length, so an oversized message is recognised, discarded
         * whole by the kernel, and answered, while the connection stays usable. */
        n = recv(fd, s->receive_buffer, PMUGATE_REQUEST_SIZE_MAX, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                goto drop;
        }
        if (n == 0)
                goto drop;      /* orderly shutdown (or an empty message, which is not a request) */
        r = session_handle_message(c, (size_t) n, (size_t) n > PMUGATE_REQUEST_SIZE_MAX);
        if (r < 0)
                goto drop;
        return 0;

drop:
        session_free(c);
        return 0;
}

int session_new(Server *s, int fd, Peer *peer, Session **ret) {
        Session *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (Session) { .server = s, .fd = fd, .peer = *peer };
        policy_rights(&s->config, &c->peer, &c->rights);
        r = sd_event_add_io(s->event, &c->io, fd, EPOLLIN, session_io, c);
        if (r < 0) {
                free(c);
                return r;
        }
        *peer = (Peer) { .pidfd = -EBADF, .cgroup_fd = -EBADF };
        c->next = s->sessions;
        if (s->sessions)
                s->sessions->prev = c;
        s->sessions = c;
        s->n_sessions++;
        *ret = c;
        return 0;
}

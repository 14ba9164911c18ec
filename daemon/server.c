/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Server: sockets, clients and request dispatch
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "server.h"

#define AUDIT_FLUSH_USEC (10U * 1000U * 1000U)

void server_audit(Server *s, const Client *c, const char *event, const char *verdict, const char *job, const char *cpus,
                  const char *reason, uint64_t count) {
        AuditRecord rec = {
                .event = event,
                .verdict = verdict,
                .uid = c->peer.uid,
                .gid = c->peer.gid,
                .pid = c->peer.pid,
                .job = job,
                .cpus = cpus,
                .reason = reason,
                .count = count,
        };

        audit_emit(s->audit, &rec);
}

static Client *client_free(Client *c) {
        Server *s;

        if (!c)
                return NULL;
        s = c->server;
        server_end_leases(s, c, "client disconnected");
        peer_done(&c->peer);
        if (c->prev)
                c->prev->next = c->next;
        else if (s->clients == c)
                s->clients = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_clients--;
        sd_event_source_disable_unref(c->io);
        if (c->fd >= 0)
                (void) close(c->fd);
        free(c->pending);
        log_debug("Client uid=%u pid=%d disconnected", (unsigned) c->peer.uid, (int) c->peer.pid);
        free(c);
        return NULL;
}

/* Sends s->reply. A full socket buffer keeps the reply as pending and stops reading from
 * this client until it drains, so a client that never reads cannot make us queue without
 * bound. Returns negative errno when the client must be dropped. */
static int client_send_reply(Client *c) {
        Server *s = c->server;
        ssize_t n;

        n = send(c->fd, s->reply.data, s->reply.size, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0)
                return 0;
        if (errno != EAGAIN)
                return -errno;
        c->pending = malloc(s->reply.size);
        if (!c->pending)
                return -ENOMEM;
        memcpy(c->pending, s->reply.data, s->reply.size);
        c->pending_size = s->reply.size;
        return sd_event_source_set_io_events(c->io, EPOLLOUT);
}

static int client_flush_pending(Client *c) {
        ssize_t n = send(c->fd, c->pending, c->pending_size, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n < 0)
                return errno == EAGAIN ? 0 : -errno;
        free(c->pending);
        c->pending = NULL;
        c->pending_size = 0;
        return sd_event_source_set_io_events(c->io, EPOLLIN);
}

static bool code_is_denial(int code) {
        switch (code) {
        case PROTO_E_NOT_AUTHORIZED:
        case PROTO_E_REG_NOT_ALLOWED:
        case PROTO_E_REG_FORBIDDEN:
        case PROTO_E_READ_ONLY:
        case PROTO_E_NO_SUCH_CPU:
        case PROTO_E_NO_SUCH_UNIT:
        case PROTO_E_TOO_MANY_CLIENTS:
        case PROTO_E_BUSY:
        case PROTO_E_NO_GRANT:
        case PROTO_E_NO_LEASE:
        case PROTO_E_OUT_OF_SCOPE:
        case PROTO_E_LIMIT:
                return true;
        default:
                return false;
        }
}

void server_audit_denial(Server *s, const Client *c, const char *op, int code, const char *reason, const char *cpus,
                         const char *regs) {
        AuditRecord rec = {
                .event = "deny",
                .verdict = "denied",
                .uid = c->peer.uid,
                .gid = c->peer.gid,
                .pid = c->peer.pid,
                .op = op,
                .code = proto_error_name(code),
                .reason = reason,
                .cpus = cpus,
                .regs = regs,
        };

        s->counters.denials++;
        audit_emit(s->audit, &rec);
}

int server_reply_error(Server *s, Client *c, const Request *req, uint64_t id, int code, const char *reason,
                       int64_t op_index) {
        msgpack_packer pk;

        msgpack_sbuffer_clear(&s->reply);
        msgpack_packer_init(&pk, &s->reply, msgpack_sbuffer_write);
        if (code_is_denial(code) || code == PROTO_E_PREEMPTED) {
                if (req && req->type == REQUEST_BATCH && code != PROTO_E_PREEMPTED)
                        ;       /* batch denials are audited with their CPUs and registers */
                else
                        server_audit_denial(s, c, req ? request_type_to_string(req->type) : NULL, code, reason,
                                            NULL, NULL);
        } else
                s->counters.protocol_errors++;
        return reply_pack_error(&pk, id, code, reason, op_index);
}

static int client_handle_message(Client *c, size_t size, bool truncated) {
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
                else if (r == 0 && c->preempted && req.type != REQUEST_HELLO && req.type != REQUEST_STATUS) {
                        /* Said once, on the next request: the client's registers were restored
                         * and whatever it measures now is not what it programmed. */
                        char reason[300], cpus[128];

                        if (cpuset_format(&c->preempted_cpus, cpus, sizeof(cpus)) < 0)
                                (void) snprintf(cpus, sizeof(cpus), "several");
                        (void) snprintf(reason, sizeof(reason),
                                        "preempted: a user's lease took CPUs %s from this monitor; its registers were restored",
                                        cpus);
                        c->preempted = false;
                        cpuset_clear(&c->preempted_cpus);
                        r = server_reply_error(s, c, &req, req.id, PROTO_E_PREEMPTED, reason, -1);
                } else if (r == 0) {
                        switch (req.type) {
                        case REQUEST_HELLO:
                                r = server_handle_hello(s, c, &req);
                                break;
                        case REQUEST_BATCH:
                                r = server_handle_batch(s, c, &req);
                                break;
                        case REQUEST_STATUS:
                                r = server_handle_status(s, c, &req);
                                break;
                        case REQUEST_LEASE:
                                r = server_handle_lease(s, c, &req);
                                break;
                        case REQUEST_RELEASE:
                                r = server_handle_release(s, c, &req);
                                break;
                        case REQUEST_GRANT:
                                r = server_handle_grant(s, c, &req);
                                break;
                        case REQUEST_REVOKE:
                                r = server_handle_revoke(s, c, &req);
                                break;
                        case REQUEST_RESET:
                                r = server_handle_reset(s, c, &req);
                                break;
                        case REQUEST_RELOAD:
                                r = server_handle_reload(s, c, &req);
                                break;
                        default:
                                r = server_reply_error(s, c, &req, req.id, PROTO_E_UNKNOWN_OP, NULL, -1);
                        }
                }
        }
        if (r < 0) {
                /* Out of memory while building a reply: tell the client without dropping it. */
                log_warning_errno(r, "Failed to handle a request from uid %u", (unsigned) c->peer.uid);
                if (server_reply_error(s, c, NULL, 0, PROTO_E_INTERNAL, NULL, -1) < 0)
                        return r;
        }
        return client_send_reply(c);
}

static int client_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Client *c = userdata;
        Server *s = c->server;
        ssize_t n;
        int r;

        if (c->pending) {
                r = client_flush_pending(c);
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
        r = client_handle_message(c, (size_t) n, (size_t) n > PMUGATE_REQUEST_SIZE_MAX);
        if (r < 0)
                goto drop;
        return 0;

drop:
        client_free(c);
        return 0;
}

static unsigned clients_of_uid(const Server *s, uid_t uid) {
        unsigned n = 0;

        for (const Client *c = s->clients; c; c = c->next)
                n += c->peer.uid == uid;
        return n;
}

static void refuse_connection(Server *s, int fd, Peer *p, const char *reason) {
        msgpack_packer pk;
        Client tmp = { .peer = *p };

        s->counters.refused_connections++;
        server_audit_denial(s, &tmp, "connect", PROTO_E_TOO_MANY_CLIENTS, reason, NULL, NULL);
        msgpack_sbuffer_clear(&s->reply);
        msgpack_packer_init(&pk, &s->reply, msgpack_sbuffer_write);
        if (reply_pack_error(&pk, 0, PROTO_E_TOO_MANY_CLIENTS, reason, -1) == 0)
                (void) send(fd, s->reply.data, s->reply.size, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void) close(fd);
        peer_done(p);
}

static int server_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        Client *c;
        Peer peer;
        char reason[160];
        int cfd, r;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
                if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                        log_warning_errno(errno, "accept() failed");
                return 0;
        }
        r = peer_from_socket(cfd, &peer);
        if (r < 0) {
                log_warning_errno(r, "Cannot read peer credentials, dropping connection");
                (void) close(cfd);
                return 0;
        }
        if (s->n_clients >= s->config.clients_max) {
                (void) snprintf(reason, sizeof(reason), "the daemon serves at most %u clients; try again later",
                                s->config.clients_max);
                refuse_connection(s, cfd, &peer, reason);
                return 0;
        }
        if (peer.uid != 0 && clients_of_uid(s, peer.uid) >= s->config.clients_per_uid_max) {
                (void) snprintf(reason, sizeof(reason), "uid %u already has %u connections, the most allowed per user",
                                (unsigned) peer.uid, s->config.clients_per_uid_max);
                refuse_connection(s, cfd, &peer, reason);
                return 0;
        }

        c = calloc(1, sizeof(*c));
        if (!c) {
                (void) close(cfd);
                peer_done(&peer);
                return 0;
        }
        *c = (Client) { .server = s, .fd = cfd, .peer = peer };
        policy_rights(&s->config, &c->peer, &c->rights);
        r = sd_event_add_io(s->event, &c->io, cfd, EPOLLIN, client_io, c);
        if (r < 0) {
                (void) close(cfd);
                peer_done(&c->peer);
                free(c);
                return 0;
        }
        c->next = s->clients;
        if (s->clients)
                s->clients->prev = c;
        s->clients = c;
        s->n_clients++;
        s->counters.connections++;
        log_debug("Client uid=%u pid=%d connected as %s", (unsigned) peer.uid, (int) peer.pid,
                  role_to_string(c->rights.role));
        return 0;
}

int server_new(const ServerOptions *o, Machine *machine, Backend *backend, Allowlist *allowlist, const Config *config,
               Audit *audit, Server **ret) {
        char grants_path[600];
        Server *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->listen_fd = -EBADF;
        msgpack_sbuffer_init(&s->reply);
        s->config = *config;
        if (o->config_path)
                (void) snprintf(s->config_path, sizeof(s->config_path), "%s", o->config_path);
        s->request_buffer = request_buffer_new();
        s->receive_buffer = malloc(PMUGATE_REQUEST_SIZE_MAX);
        s->entries = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(*s->entries));
        s->status = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(*s->status));
        s->values = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(*s->values));
        if (o->socket_path)
                s->socket_path = strdup(o->socket_path);
        if (!s->request_buffer || !s->receive_buffer || !s->entries || !s->status || !s->values ||
            (o->socket_path && !s->socket_path)) {
                server_free(s);
                return -ENOMEM;
        }
        (void) snprintf(s->cgroup_root, sizeof(s->cgroup_root), "%s", o->cgroup_root ?: "/sys/fs/cgroup");
        if (o->state_dir)
                (void) snprintf(grants_path, sizeof(grants_path), "%s/grants", o->state_dir);
        grants_init(&s->grants, o->state_dir ? grants_path : NULL, config->grants_max);

        /* Registers a crashed run left programmed go back before anything is detected or
         * served, so their enable bits are not mistaken for another PMU user's. */
        if (o->state_dir) {
                r = leases_recover(o->state_dir, backend);
                if (r < 0)
                        goto fail;
        }
        r = grants_load(&s->grants);
        if (r >= 0)
                r = leases_new(o->state_dir, backend, machine, &s->leases);
        if (r >= 0)
                r = pmu_new(backend, machine, allowlist, &s->pmu);
        if (r < 0)
                goto fail;
        pmu_detect_all(s->pmu);

        s->machine = machine;
        s->backend = backend;
        s->allowlist = allowlist;
        s->audit = audit;
        *ret = s;
        return 0;

fail:
        server_free(s);
        return r;
}

Server *server_free(Server *s) {
        if (!s)
                return NULL;
        while (s->clients)
                client_free(s->clients);
        leases_free(s->leases);
        pmu_free(s->pmu);
        grants_done(&s->grants);
        sd_event_source_disable_unref(s->listen_source);
        sd_event_source_disable_unref(s->audit_timer);
        if (s->listen_fd >= 0)
                (void) close(s->listen_fd);
        sd_event_unref(s->event);
        free(s->socket_path);
        request_buffer_free(s->request_buffer);
        free(s->receive_buffer);
        msgpack_sbuffer_destroy(&s->reply);
        free(s->entries);
        free(s->status);
        free(s->values);
        backend_free(s->backend);
        allowlist_free(s->allowlist);
        machine_free(s->machine);
        audit_free(s->audit);
        free(s);
        return NULL;
}

static int bind_socket(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "Socket path '%s' is too long", path);
        memcpy(sa.sun_path, path, strlen(path) + 1);

        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "socket() failed");
        /* A socket file left by a crashed daemon would make bind() fail. */
        if (unlink(path) < 0 && errno != ENOENT) {
                (void) close(fd);
                return log_error_errno(errno, "Cannot remove stale socket %s", path);
        }
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int e = errno;
                (void) close(fd);
                return log_error_errno(e, "Cannot bind %s", path);
        }
        /* Anyone may connect; every request is authorized in the daemon from peer credentials. */
        if (chmod(path, 0666) < 0 || listen(fd, SOMAXCONN) < 0) {
                int e = errno;
                (void) close(fd);
                return log_error_errno(e, "Cannot listen on %s", path);
        }
        return fd;
}

int server_listen(Server *s) {
        int n, r;

        n = sd_listen_fds(true);
        if (n < 0)
                return log_error_errno(n, "sd_listen_fds() failed");
        if (n > 1)
                return log_error_errno(EINVAL, "Expected one socket from systemd, got %d", n);
        if (n == 1) {
                r = sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1, NULL, 0);
                if (r < 0)
                        return log_error_errno(r, "Cannot inspect the socket passed by systemd");
                if (r == 0)
                        return log_error_errno(EINVAL, "The socket passed by systemd is not a listening SOCK_SEQPACKET unix socket");
                s->listen_fd = SD_LISTEN_FDS_START;
                (void) fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK);
                free(s->socket_path);
                s->socket_path = NULL;   /* systemd owns it */
                log_info("Using the socket passed by systemd");
                return 0;
        }
        if (!s->socket_path)
                return log_error_errno(EINVAL, "No socket path");
        s->listen_fd = bind_socket(s->socket_path);
        if (s->listen_fd < 0)
                return s->listen_fd;
        log_info("Listening on %s", s->socket_path);
        return 0;
}

static int on_audit_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Server *s = userdata;

        audit_flush(s->audit);
        return sd_event_source_set_time(source, usec + AUDIT_FLUSH_USEC);
}

int server_run(Server *s) {
        char status[256];
        sigset_t mask;
        uint64_t now;
        int r;

        /* A private loop: the default one checks the calling thread with a gettid() system
         * call on every iteration, a measurable share of a small request's round trip. */
        r = sd_event_new(&s->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop");
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "sigprocmask() failed");
        (void) signal(SIGPIPE, SIG_IGN);
        r = sd_event_add_signal(s->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(s->event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_io(s->event, &s->listen_source, s->listen_fd, EPOLLIN, server_accept, s);
        if (r >= 0)
                r = sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(s->event, &s->audit_timer, CLOCK_MONOTONIC, now + AUDIT_FLUSH_USEC, 0,
                                      on_audit_timer, s);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop");

        (void) snprintf(status, sizeof(status), "Serving %u CPUs, %u PCI units (%s backend, %s)", s->machine->n_online,
                        s->machine->n_units, s->backend->vtable->name,
                        s->machine->cpu_model ? s->machine->cpu_model->name : s->machine->model_name);
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s", status);
        log_info("%s", status);

        r = sd_event_loop(s->event);

        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down");
        if (s->socket_path)
                (void) unlink(s->socket_path);
        if (r < 0)
                return log_error_errno(r, "Event loop failed");
        return 0;
}

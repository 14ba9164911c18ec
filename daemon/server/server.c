/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Server: the listening socket, accepting sessions, the event loop
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
#include "macro.h"
#include "pmu/clean.h"
#include "pmu/journal.h"
#include "server/perf-sessions.h"
#include "server/server.h"

#define AUDIT_FLUSH_USEC (10U * 1000U * 1000U)

/* Messages of a refused client read and dropped before its connection is closed. */
#define REFUSED_MESSAGES_DRAINED 4U

/* Slots of clients_max that users and monitors may not take. */
static unsigned admin_reserve(unsigned clients_max) {
        if (clients_max >= 2 * PMUGATE_CLIENTS_ADMIN_RESERVED)
                return PMUGATE_CLIENTS_ADMIN_RESERVED;
        return clients_max / 2;
}

static void refuse_connection(Server *s, int fd, Peer *p, int code, const char *reason) {
        msgpack_packer pk;
        Session tmp = { .peer = *p };

        s->counters.refused_connections++;
        server_audit_denial(s, &tmp, "connect", code, reason, NULL, NULL);
        msgpack_sbuffer_clear(&s->reply);
        msgpack_packer_init(&pk, &s->reply, msgpack_sbuffer_write);
        if (reply_pack_error(&pk, 0, code, reason, -1) == 0)
                (void) send(fd, s->reply.data, s->reply.size, MSG_DONTWAIT | MSG_NOSIGNAL);
        /* What the client sent already is read and dropped: closing with it unread would make
         * the kernel report a reset to the client ahead of the reason. */
        for (unsigned i = 0; i < REFUSED_MESSAGES_DRAINED; i++)
                if (recv(fd, NULL, 0, MSG_DONTWAIT | MSG_TRUNC) < 0)
                        break;
        (void) close(fd);
        peer_done(p);
}

static int server_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        Session *c;
        Peer peer;
        Rights rights = {};
        char reason[sizeof(rights.reason)];
        unsigned reserve;
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
        /* Whoever the policy gives no role could do nothing with a connection but hold a slot
         * that a user or an admin needs: refused before a session is made, with the reason
         * the policy gives. */
        policy_rights(&s->config, &peer, &rights);
        if (rights.role == ROLE_NONE) {
                (void) snprintf(reason, sizeof(reason), "%s",
                                rights.reason[0] ? rights.reason : "this uid has no role in pmugate");
                refuse_connection(s, cfd, &peer, PROTO_E_NOT_AUTHORIZED, reason);
                return 0;
        }
        if (s->n_sessions >= s->config.clients_max) {
                (void) snprintf(reason, sizeof(reason), "the daemon serves at most %u clients; try again later",
                                s->config.clients_max);
                refuse_connection(s, cfd, &peer, PROTO_E_TOO_MANY_CLIENTS, reason);
                return 0;
        }
        if (peer.uid != 0 && scheduler_clients_of(&s->scheduler, peer.uid) >= s->config.clients_per_uid_max) {
                (void) snprintf(reason, sizeof(reason), "uid %u already has %u connections, the most allowed per user",
                                (unsigned) peer.uid, s->config.clients_per_uid_max);
                refuse_connection(s, cfd, &peer, PROTO_E_TOO_MANY_CLIENTS, reason);
                return 0;
        }
        /* The last slots are kept for admins: whoever else connects, and however many uids
         * they use, an admin can still connect to see and end it. */
        reserve = admin_reserve(s->config.clients_max);
        if (rights.role != ROLE_ADMIN && s->n_sessions >= s->config.clients_max - reserve) {
                (void) snprintf(reason, sizeof(reason),
                                "the daemon serves at most %u clients other than admins (%u more are "
                                "kept for admins); try again later", s->config.clients_max - reserve,
                                reserve);
                refuse_connection(s, cfd, &peer, PROTO_E_TOO_MANY_CLIENTS, reason);
                return 0;
        }

        r = session_new(s, cfd, &peer, &c);
        if (r < 0) {
                log_warning_errno(r, "Cannot set up a session, dropping connection");
                (void) close(cfd);
                peer_done(&peer);
                return 0;
        }
        s->counters.connections++;
        log_debug("Session uid=%u pid=%d connected as %s", (unsigned) peer.uid, (int) peer.pid,
                  role_to_string(c->rights.role));
        return 0;
}

int server_new(const ServerOptions *o, Machine *machine, Backend *backend, Allowlist *allowlist, const Config *config,
               Audit *audit, Server **ret) {
        CpuSet recovered;
        Server *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->dispatch = o->dispatch;
        s->config_owner = o->config_owner;
        s->listen_fd = -EBADF;
        scheduler_init(&s->scheduler, PMUGATE_BATCHES_RUNNING_MAX, PMUGATE_PENDING_BYTES_PER_UID_MAX,
                       PMUGATE_BATCH_SLICE_OPS);
        msgpack_sbuffer_init(&s->reply);
        s->config = *config;
        if (o->config_path)
                (void) snprintf(s->config_path, sizeof(s->config_path), "%s", o->config_path);
        s->request_buffer = request_buffer_new();
        s->receive_buffer = malloc(PMUGATE_REQUEST_SIZE_MAX);
        if (o->socket_path)
                s->socket_path = strdup(o->socket_path);
        if (!s->request_buffer || !s->receive_buffer || server_reserve_results(s, PMUGATE_OPS_KEPT) < 0 ||
            (o->socket_path && !s->socket_path)) {
                server_free(s);
                return -ENOMEM;
        }
        (void) snprintf(s->cgroup_root, sizeof(s->cgroup_root), "%s", o->cgroup_root ?: "/sys/fs/cgroup");
        (void) snprintf(s->root, sizeof(s->root), "%s", o->root ?: "/");
        grants_init(&s->grants, o->state, config->grants_max);

        /* Registers a crashed run left programmed go back before anything is detected or
         * served, so their enable bits are not mistaken for another PMU user's. Every entry
         * is checked like a client's write first. */
        cpuset_clear(&recovered);
        if (o->state) {
                JournalContext ctx = { .dir = o->state, .machine = machine, .allowlist = allowlist,
                                       .backend = backend, .audit = audit, .restored = &recovered };

                r = journal_recover(&ctx);
                if (r < 0)
                        goto fail;
        }
        r = grants_load(&s->grants, machine);
        if (r >= 0)
                r = leases_new(o->state, backend, machine, &s->leases);
        if (r >= 0)
                leases_set_ended_hook(s->leases, session_lease_ended, s);
        if (r >= 0)
                r = pmu_new(backend, machine, allowlist, &s->pmu);
        if (r < 0)
                goto fail;
        pmu_detect_all(s->pmu);
        leases_set_restore(s->leases, allowlist, s->pmu, audit);
        /* Overflow status a crashed run's holders left on counters that are not another PMU
         * user's goes now, as at every lease end, once the foreign ones are known. */
        CPUSET_FOREACH(cpu, &recovered)
                (void) clean_cpu_status(s->pmu, cpu);

        s->machine = machine;
        s->backend = backend;
        s->allowlist = allowlist;
        s->audit = audit;
        s->perf_opener = o->perf_opener;
        s->perf_driver = o->perf_driver;
        s->perf_catalog = o->perf_catalog;
        *ret = s;
        return 0;

fail:
        server_free(s);
        return r;
}

Server *server_free(Server *s) {
        if (!s)
                return NULL;
        while (s->sessions)
                session_free(s->sessions);
        scheduler_done(&s->scheduler);
        server_free_idle_jobs(s);
        sd_event_source_disable_unref(s->turns);
        s->perf_tick = sd_event_source_disable_unref(s->perf_tick);
        server_reply_fds_drop(s);
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
        /* The driver's open events are the sessions' and closed with them; the opener last. */
        perf_driver_free(s->perf_driver);
        perf_opener_stop(s->perf_opener);
        perf_catalog_free(s->perf_catalog);
        backend_free(s->backend);
        allowlist_free(s->allowlist);
        machine_free(s->machine);
        audit_free(s->audit);
        free(s);
        return NULL;
}

/* Only a socket, left by a daemon that crashed, is removed from the socket path: it would make
 * bind() fail. Anything else there is someone's file, and root does not delete it. */
static int remove_stale_socket(const char *path) {
        struct stat st;

        if (lstat(path, &st) < 0) {
                if (errno == ENOENT)
                        return 0;
                return log_error_errno(errno, "Cannot inspect the socket path %s", path);
        }
        if (!S_ISSOCK(st.st_mode))
                return log_error_errno(EEXIST, "Refusing to bind %s: a %s is there, not a socket; "
                                       "remove it, or choose another path with --socket", path,
                                       S_ISLNK(st.st_mode) ? "symbolic link" :
                                       S_ISDIR(st.st_mode) ? "directory" :
                                       S_ISREG(st.st_mode) ? "regular file" : "file");
        if (unlink(path) < 0 && errno != ENOENT)
                return log_error_errno(errno, "Cannot remove the stale socket %s", path);
        return 0;
}

static int bind_socket(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        mode_t old_umask;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "Socket path '%s' is too long", path);
        memcpy(sa.sun_path, path, strlen(path) + 1);

        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "socket() failed");
        r = remove_stale_socket(path);
        if (r < 0)
                return r;
        /* Anyone may connect; every request is authorized in the daemon from peer credentials.
         * bind() creates the node with the socket inode's mode (0777) less the umask, so the
         * umask alone decides it: 0666 from the start, never changed later by path. (fchmod()
         * of the socket before bind() is masked by the umask all the same.) */
        old_umask = umask(0111);
        r = bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ? -errno : 0;
        (void) umask(old_umask);
        if (r < 0)
                return log_error_errno(r, "Cannot bind %s", path);
        if (listen(fd, SOMAXCONN) < 0)
                return log_error_errno(errno, "Cannot listen on %s", path);
        return TAKE_FD(fd);
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
        struct stat st;
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
        (void) sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "sigprocmask() failed");
        (void) signal(SIGPIPE, SIG_IGN);
        r = sd_event_add_signal(s->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(s->event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(s->event, NULL, SIGHUP, server_on_sighup, s);
        if (r >= 0)
                r = sd_event_add_io(s->event, &s->listen_source, s->listen_fd, EPOLLIN, server_accept, s);
        if (r >= 0)
                r = server_turns_setup(s);
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
        /* Our socket, unless someone put something else in its place since. */
        if (s->socket_path && lstat(s->socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void) unlink(s->socket_path);
        if (r < 0)
                return log_error_errno(r, "Event loop failed");
        return 0;
}

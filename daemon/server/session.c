/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions: reading requests, answering them, and ending what a client held when it goes.
 *
 * A readable session does not read in its IO callback: it stops listening and queues itself
 * in the scheduler, and the "turns" source serves one queued session per loop iteration, at a
 * lower priority than the IO sources, so everyone who became readable meanwhile is queued
 * before the next turn is chosen. One turn reads and answers one request, or runs one slice of
 * a large batch. Only when nothing is queued and no turn ran in this iteration is a request
 * answered in its IO callback at once: the same order, without a loop iteration more.
 */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "macro.h"
#include "server/batch-job.h"
#include "server/perf-sessions.h"
#include "server/reply.h"
#include "server/revalidate.h"
#include "server/server-state.h"
#include "server/session.h"

/* A reply buffer grown past this is given back when a client leaves. */
#define REPLY_BUFFER_KEEP (16U * 1024U)

void session_lease_ended(const void *owner, uint32_t cpu, void *userdata) {
        Server *s = userdata;

        /* a batch in progress may have relied on this lease */
        s->rights_generation++;
        for (Session *c = s->sessions; c; c = c->next)
                if (c == owner) {
                        cpuset_remove(&c->leased, cpu);
                        /* perf events of hardware counters on a CPU live with its lease; why it
                         * ended (released, preempted, revoked) has its own audit record */
                        (void) session_perf_close_cpu(c, cpu, "ended", "the lease on the CPU ended");
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
        server_free_idle_jobs(s);
        (void) malloc_trim(0);
}

static void drop_pending(Session *c) {
        c->server->pending_bytes -= c->pending_size;
        scheduler_pending_give(&c->server->scheduler, &c->sched, c->pending_size);
        free(c->pending);
        c->pending = NULL;
        c->pending_size = 0;
        c->pending_offset = 0;
        c->n_pending = c->pending_next = 0;
}

Session *session_free(Session *c) {
        Server *s;

        if (!c)
                return NULL;
        s = c->server;
        server_audit_folded_writes(s, c);
        /* a perf_open in progress: what it opened closes, the leases it took go back */
        if (c->perf_job)
                c->perf_job->free(s, c, c->perf_job);
        c->perf_job = NULL;
        session_perf_close_all(c, "client disconnected");
        session_end_leases(c, "client disconnected");
        peer_done(&c->peer);
        if (c->prev)
                c->prev->next = c->next;
        else if (s->sessions == c)
                s->sessions = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_sessions--;
        s->rights_generation++;
        sd_event_source_disable_unref(c->io);
        if (c->fd >= 0)
                (void) close(c->fd);
        drop_pending(c);
        c->job = server_batch_job_done(s, c->job);
        free(c->held);
        scheduler_detach(&s->scheduler, &c->sched);
        /* a slot it gave back may have woken a waiter */
        if (s->turns && !scheduler_idle(&s->scheduler))
                (void) sd_event_source_set_enabled(s->turns, SD_EVENT_ON);
        log_debug("Session uid=%u pid=%d disconnected", (unsigned) c->peer.uid, (int) c->peer.pid);
        free(c);
        release_memory(s);
        return NULL;
}

/* Sends what is left of c's pending reply, a message at a time. Returns 1 when all of it
 * went, 0 when the socket is full again, or negative errno when the client must be dropped. */
static int session_send_pending(Session *c) {
        while (c->pending_next < c->n_pending) {
                size_t start = c->pending_next > 0 ? c->pending_ends[c->pending_next - 1] : c->pending_offset;
                ssize_t n = send(c->fd, c->pending + start, c->pending_ends[c->pending_next] - start,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n < 0)
                        return errno == EAGAIN ? 0 : -errno;
                c->pending_next++;
        }
        drop_pending(c);
        return 1;
}

/* The first message of a reply that carries fds (a perf_open's handoff), in SCM_RIGHTS. It
 * goes now or never: a client that does not read its replies while it asks for fds is dropped
 * rather than its fds held. The server's copies are closed either way. */
static int session_send_with_fds(Session *c, size_t size) {
        Server *s = c->server;
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * PMUGATE_REPLY_FDS_MAX)];
        } control = {};
        struct iovec iov = { .iov_base = s->reply.data, .iov_len = size };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                              .msg_controllen = CMSG_SPACE(sizeof(int) * s->n_reply_fds) };
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        ssize_t n;

        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * s->n_reply_fds);
        memcpy(CMSG_DATA(cmsg), s->reply_fds, sizeof(int) * s->n_reply_fds);
        n = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        server_reply_fds_drop(s);
        if (n < 0)
                return errno == EAGAIN ? -ENOBUFS : -errno;
        return 0;
}

/* Sends s->reply, one message or each of its parts. What a full socket buffer does not take is
 * kept as pending and reading from this client stops until it drains, so a client that never
 * reads cannot make us queue without bound: at most one reply per client. Returns negative
 * errno when the client must be dropped. */
static int session_send_reply(Session *c) {
        Server *s = c->server;
        /* a reply in one message is one part that ends where the reply does */
        const size_t *ends = s->n_reply_parts > 0 ? s->reply_part_ends : &s->reply.size;
        size_t n_parts = s->n_reply_parts > 0 ? s->n_reply_parts : 1, sent = 0, start = 0, held;

        if (s->n_reply_fds > 0) {
                int r = session_send_with_fds(c, ends[0]);

                if (r < 0)
                        return r;
                sent = 1;
                start = ends[0];
        }
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
        /* A large reply is kept as it is, its buffer taken over, rather than copied. */
        held = s->reply.alloc > REPLY_BUFFER_KEEP ? s->reply.alloc : s->reply.size - start;
        if (scheduler_pending_take(&s->scheduler, &c->sched, held) < 0) {
                log_warning("Dropping uid=%u pid=%d: its %zu-byte reply would take the replies held for the clients "
                            "of uid %u that do not read past %u bytes", (unsigned) c->peer.uid, (int) c->peer.pid,
                            s->reply.size - start, (unsigned) c->peer.uid, PMUGATE_PENDING_BYTES_PER_UID_MAX);
                return -ENOBUFS;
        }
        /* the ends first: a reply in one message ends at s->reply.size, which the release resets */
        c->pending_offset = s->reply.alloc > REPLY_BUFFER_KEEP ? start : 0;
        c->n_pending = n_parts - sent;
        c->pending_next = 0;
        for (size_t i = 0; i < c->n_pending; i++)
                c->pending_ends[i] = ends[sent + i] - start + c->pending_offset;
        if (s->reply.alloc > REPLY_BUFFER_KEEP)
                c->pending = msgpack_sbuffer_release(&s->reply);
        else {
                c->pending = malloc(held);
                if (!c->pending) {
                        scheduler_pending_give(&s->scheduler, &c->sched, held);
                        c->n_pending = 0;
                        return -ENOMEM;
                }
                memcpy(c->pending, s->reply.data + start, held);
        }
        c->pending_size = held;
        s->pending_bytes += c->pending_size;
        return 0;
}

/* Listens for what c needs next: the rest of its reply to go out, or its next request. */
static int session_listen(Session *c) {
        int r;

        r = sd_event_source_set_io_events(c->io, c->pending ? EPOLLOUT : EPOLLIN);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->io, SD_EVENT_ON);
        return r;
}

/* c has work for the daemon: it waits for its turn, not listening meanwhile (a socket that
 * stays readable, or a peer that hung up, would otherwise wake the loop at every iteration). */
static int session_wait_turn(Session *c) {
        Server *s = c->server;
        int r;

        r = sd_event_source_set_enabled(c->io, SD_EVENT_OFF);
        if (r < 0)
                return r;
        if (!c->sched.waits_for_slot)
                scheduler_queue(&s->scheduler, &c->sched, c->rights.may_admin, !c->job && !c->perf_job && !c->held);
        return sd_event_source_set_enabled(s->turns, SD_EVENT_ON);
}

static int session_flush_pending(Session *c) {
        int r = session_send_pending(c);

        if (r <= 0)
                return r;
        return session_listen(c);
}

/* What c's turn did next: a request waiting for a slot keeps its bytes, a job runs on in later
 * turns, and anything else has its reply sent and c listens again. */
static int session_after_turn(Session *c, const char *message, size_t size) {
        if (c->sched.waits_for_slot) {
                c->sched.admin = c->rights.may_admin;
                if (!c->held) {
                        c->held = malloc(size);
                        if (!c->held)
                                return -ENOMEM;
                        memcpy(c->held, message, size);
                        c->held_size = size;
                }
                return session_wait_turn(c);
        }
        /* answered, or become a job that owns its ops: the bytes are done with */
        free(c->held);
        c->held = NULL;
        c->held_size = 0;
        if (c->job || c->perf_job)
                return session_wait_turn(c);
        return 0;
}

static int session_handle_message(Session *c, const char *message, size_t size, bool truncated) {
        Server *s = c->server;
        DecodeError error;
        Request req;
        uint64_t cost = 1;
        int r;

        if (!c->held) {
                s->counters.requests++;
                c->requests++;
        }
        if (truncated) {
                char reason[96];

                (void) snprintf(reason, sizeof(reason), "request of %zu bytes exceeds the limit of %u bytes", size,
                                PMUGATE_REQUEST_SIZE_MAX);
                r = server_reply_unhandled(s, c, 0, PROTO_E_TOO_LARGE, reason);
        } else {
                r = request_decode(message, size, s->request_buffer, &req, &error);
                if (r > 0)
                        r = server_reply_unhandled(s, c, error.has_id ? error.id : 0, error.code, error.reason);
                else if (r == 0) {
                        r = s->dispatch(s, c, &req);
                        /* A lease, a release, a grant, a reset, a reload: whatever a batch in
                         * progress relies on may have changed with it. */
                        if (req.type != REQUEST_BATCH)
                                s->rights_generation++;
                        else if (!c->job && !c->sched.waits_for_slot)
                                cost = MAX(req.n_ops, (size_t) 1);
                        /* a timing_open opens an event per CPU (of each thread named): charged
                         * as an open in turns is, by the fds, so that a flood of them yields to
                         * others as a batch does */
                        if (req.type == REQUEST_TIMING_OPEN)
                                cost = MAX(req.n_cpus * MAX(req.n_tids, (size_t) 1), (size_t) 1);
                }
        }
        /* a slot kept for this request that it did not need after all (refused before it
         * became a job) goes to the next waiter */
        scheduler_slot_unused(&s->scheduler, &c->sched);
        scheduler_charge(&s->scheduler, &c->sched, cost);
        c->last_large = c->job || c->sched.waits_for_slot;
        if (r < 0) {
                /* Out of memory while building a reply: tell the client without dropping it. */
                log_warning_errno(r, "Failed to handle a request from uid %u", (unsigned) c->peer.uid);
                if (server_reply_unhandled(s, c, 0, PROTO_E_INTERNAL, NULL) < 0)
                        return r;
        } else if (c->job || c->perf_job || c->sched.waits_for_slot)
                return session_after_turn(c, message, size);
        r = session_after_turn(c, message, size);
        if (r < 0)
                return r;
        r = session_send_reply(c);
        if (r < 0)
                return r;
        return session_listen(c);
}

/* Reads one request of c and answers it. */
static int session_read(Session *c) {
        Server *s = c->server;
        ssize_t n;

        /* MSG_TRUNC returns the real length, so an oversized message is recognised, discarded
         * whole by the kernel, and answered, while the connection stays usable. */
        n = recv(c->fd, s->receive_buffer, PMUGATE_REQUEST_SIZE_MAX, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return session_listen(c);
                return -errno;
        }
        if (n == 0)
                return -ECONNRESET;     /* orderly shutdown (or an empty message, which is not a request) */
        /* A client whose last request was a large batch most likely sent another: while the
         * slot is taken, its request waits for it as it came, decoded once, when its turn
         * for the slot comes, and not also now. */
        if (c->last_large && (size_t) n <= PMUGATE_REQUEST_SIZE_MAX && !scheduler_slot_free(&s->scheduler)) {
                c->held = malloc((size_t) n);
                if (!c->held)
                        return -ENOMEM;
                memcpy(c->held, s->receive_buffer, (size_t) n);
                c->held_size = (size_t) n;
                s->counters.requests++;
                c->requests++;
                c->sched.admin = c->rights.may_admin;
                (void) scheduler_slot_take(&s->scheduler, &c->sched);
                return session_wait_turn(c);
        }
        return session_handle_message(c, s->receive_buffer, (size_t) n, (size_t) n > PMUGATE_REQUEST_SIZE_MAX);
}

/* Whether a source of the loop is ready: a client that became readable, a timer, a signal. */
static bool loop_has_events(Server *s) {
        struct pollfd p = { .fd = sd_event_get_fd(s->event), .events = POLLIN };

        return p.fd < 0 || poll(&p, 1, 0) != 0;
}

/* The next slice of c's batch in progress; when it was the last, its reply goes out. */
static int session_run_job(Session *c) {
        Server *s = c->server;
        Refusal refusal;
        size_t ops = 0;
        int r;

        refusal_clear(&refusal);
        /* With nobody waiting and nothing new for the loop, the next slice runs at once: a
         * batch alone costs no loop iterations, and whoever turns up is served after the
         * slice in progress. */
        for (;;) {
                r = c->job->step(s, c, c->job, &ops, &refusal);
                scheduler_charge(&s->scheduler, &c->sched, MAX(ops, (size_t) 1));
                if (r != 0 || c->job->finished)
                        break;
                if (!scheduler_idle(&s->scheduler) || loop_has_events(s))
                        return session_wait_turn(c);
        }
        /* The dispatcher has long returned: a refusal found in a later slice is packed here,
         * the same way it would have (server_reply_refusal()). */
        if (r > 0)
                r = server_reply_refusal(s, c, &c->job->req, &refusal);
        c->job = server_batch_job_done(s, c->job);
        if (r < 0) {
                log_warning_errno(r, "Failed to run a batch of uid %u", (unsigned) c->peer.uid);
                r = server_reply_unhandled(s, c, 0, PROTO_E_INTERNAL, NULL);
                if (r < 0)
                        return r;
        }
        r = session_send_reply(c);
        /* the reply buffer took a whole large reply: not kept for the small ones */
        if (s->reply.alloc > REPLY_BUFFER_KEEP) {
                msgpack_sbuffer_destroy(&s->reply);
                msgpack_sbuffer_init(&s->reply);
        }
        if (r < 0)
                return r;
        return session_listen(c);
}

/* The next turn of c's perf_open in progress; when all is open (or it was refused), its reply
 * goes out. */
static int session_run_perf_job(Session *c) {
        Server *s = c->server;
        size_t fds = 0;
        int r;

        /* As a batch's slices: at once again while nobody waits and the loop has nothing new. */
        for (;;) {
                /* Its socket is not listened to meanwhile: a client that left is found here, and
                 * what opened closes with the session rather than after the whole open. */
                struct pollfd p = { .fd = c->fd };

                if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
                        return -ECONNRESET;
                r = c->perf_job->step(s, c, c->perf_job, &fds);
                scheduler_charge(&s->scheduler, &c->sched, MAX(fds, (size_t) 1));
                if (r < 0 || c->perf_job->finished)
                        break;
                if (!scheduler_idle(&s->scheduler) || loop_has_events(s))
                        return session_wait_turn(c);
        }
        c->perf_job->free(s, c, c->perf_job);
        c->perf_job = NULL;
        if (r < 0) {
                log_warning_errno(r, "Failed to open the perf events of uid %u", (unsigned) c->peer.uid);
                server_reply_fds_drop(s);
                r = server_reply_unhandled(s, c, 0, PROTO_E_INTERNAL, NULL);
                if (r < 0)
                        return r;
        }
        r = session_send_reply(c);
        if (r < 0)
                return r;
        return session_listen(c);
}

/* One turn of c: a slice of its batch or of its perf_open, its request that waited for a
 * slot, or its next one. */
static int session_turn(Session *c) {
        if (c->job)
                return session_run_job(c);
        if (c->perf_job)
                return session_run_perf_job(c);
        if (c->held)
                return session_handle_message(c, c->held, c->held_size, false);
        return session_read(c);
}

/* Turns served in one dispatch of the turns source at most; it returns to the loop sooner as
 * soon as any of the loop's sources has something. */
#define TURNS_PER_DISPATCH 64U

static int on_turn(sd_event_source *source, void *userdata) {
        Server *s = userdata;

        /* Going back to the loop between turns only to find nothing new costs more than a
         * turn's own bookkeeping: a poll() of the loop's fd says whether anything came. */
        for (unsigned n = 0; n < TURNS_PER_DISPATCH; n++) {
                SchedEntry *e = scheduler_next(&s->scheduler);
                Session *c;

                if (!e)
                        break;
                c = (Session *) ((char *) e - offsetof(Session, sched));
                if (session_turn(c) < 0)
                        session_free(c);
                if (scheduler_idle(&s->scheduler) || loop_has_events(s))
                        break;
        }
        if (scheduler_idle(&s->scheduler))
                return sd_event_source_set_enabled(source, SD_EVENT_OFF);
        return 0;
}

int server_turns_setup(Server *s) {
        int r;

        r = sd_event_add_defer(s->event, &s->turns, on_turn, s);
        if (r < 0)
                return r;
        /* Below the sessions' IO: whoever became readable is queued before a turn is chosen. */
        r = sd_event_source_set_priority(s->turns, SD_EVENT_PRIORITY_NORMAL + 10);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->turns, SD_EVENT_OFF);
        return r;
}

static int session_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Session *c = userdata;
        Server *s = c->server;
        uint64_t iteration = 0;
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
        /* Nobody waits and nobody was served in this iteration: serving c now is what its turn
         * would do, one loop iteration sooner. */
        (void) sd_event_get_iteration(s->event, &iteration);
        if (scheduler_idle(&s->scheduler) && iteration != s->direct_iteration) {
                s->direct_iteration = iteration;
                r = session_read(c);
        } else
                r = session_wait_turn(c);
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
        r = scheduler_attach(&s->scheduler, &c->sched, c->peer.uid);
        if (r < 0) {
                free(c);
                return r;
        }
        r = sd_event_add_io(s->event, &c->io, fd, EPOLLIN, session_io, c);
        if (r < 0) {
                scheduler_detach(&s->scheduler, &c->sched);
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

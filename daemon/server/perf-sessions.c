/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's perf handles: lookup, per-uid accounting, and every way a handle ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

#include "perf-spec.h"
#include "server/perf-sessions.h"
#include "server/reply.h"

PerfHandle *session_perf_find(Session *c, uint32_t id, size_t *ret_slot) {
        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++)
                if (c->perf[i] && c->perf[i]->id == id) {
                        if (ret_slot)
                                *ret_slot = i;
                        return c->perf[i];
                }
        return NULL;
}

bool session_perf_any(const Session *c) {
        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++)
                if (c->perf[i])
                        return true;
        return false;
}

static void format_targets(const PerfHandle *h, char *buf, size_t size) {
        size_t off = 0;

        buf[0] = '\0';
        for (size_t t = 0; t < h->n_targets && off < size; t++) {
                int n = snprintf(buf + off, size - off, "%s%" PRId64, t > 0 ? "," : "", h->targets[t]);

                if (n < 0)
                        break;
                off += (size_t) n;
        }
}

static bool needed_by_other_handle(const Session *c, uint32_t cpu) {
        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++) {
                const PerfHandle *h = c->perf[i];

                if (h && h->leased && cpuset_has(&h->needs_leases, cpu))
                        return true;
        }
        return false;
}

void session_perf_release_leases(Session *c, const CpuSet *cpus, const char *why) {
        Server *s = c->server;
        uint32_t list[256];
        CpuSet releasing;
        char text[512], jobs[320];
        size_t n = 0, ended;

        if (!s->leases)
                return;
        cpuset_clear(&releasing);
        CPUSET_FOREACH(cpu, cpus)
                if (leases_held_by(s->leases, cpu, c) && !needed_by_other_handle(c, cpu) && n < ELEMENTSOF(list)) {
                        cpuset_add(&releasing, cpu);
                        list[n++] = cpu;
                }
        if (n == 0)
                return;
        if (cpuset_format(&releasing, text, sizeof(text)) < 0)
                (void) snprintf(text, sizeof(text), "%zu CPUs", n);
        /* a perf_open's leases are of one job (or none): the first CPU's says which */
        (void) snprintf(jobs, sizeof(jobs), "%s", s->leases->cpus[list[0]].job);
        ended = leases_release(s->leases, c, list, n);
        if (ended > 0)
                server_audit(s, c, "lease-end", "restored", jobs[0] ? jobs : NULL, text, why, ended);
}

void session_perf_close(Session *c, size_t slot, const char *verdict, const char *why) {
        PerfHandle *h = c->perf[slot];
        char targets[256], reason[PMUGATE_REASON_MAX];
        CpuSet acquired;
        size_t n;
        bool h_timing;

        if (!h)
                return;
        n = perf_handle_n_open(h);
        h_timing = h->timing;
        acquired = h->acquired;
        format_targets(h, targets, sizeof(targets));
        (void) snprintf(reason, sizeof(reason), "handle %" PRIu32 " %s%s%s: %s", h->id, h->timing ? "timing" : "scope ",
                        h->timing ? "" : perf_scope_to_string(h->scope), h->handed_off ? " (handed off: disabled)" : "",
                        why);
        c->perf[slot] = perf_handle_free(h);
        server_audit(c->server, c, h_timing ? "timing-close" : "perf-close", verdict, NULL, targets, reason, n);
        session_perf_release_leases(c, &acquired, "its perf handle closed");
        (void) server_perf_tick_update(c->server);
}

void session_perf_close_all(Session *c, const char *why) {
        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++)
                session_perf_close(c, i, "closed", why);
}

size_t session_perf_close_cpu(Session *c, uint32_t cpu, const char *verdict, const char *why) {
        size_t n = 0;

        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++) {
                PerfHandle *h = c->perf[i];

                if (!h || !h->leased || !cpuset_has(&h->needs_leases, cpu))
                        continue;
                session_perf_close(c, i, verdict, why);
                n++;
        }
        return n;
}

bool session_may_lbr(const Server *s, const Session *c, const Scope *scope) {
        const Grant *g;

        if (c->rights.may_lbr)
                return true;
        if (!c->rights.scoped || !scope)
                return false;
        g = grants_find(&s->grants, scope->job);
        return g && g->lbr && g->uid == c->peer.uid;
}

size_t server_timing_handles_of_uid(const Server *s, uid_t uid) {
        size_t n = 0;

        for (const Session *c = s->sessions; c; c = c->next)
                if (c->peer.uid == uid)
                        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++)
                                n += c->perf[i] && c->perf[i]->timing;
        return n;
}

static bool handle_still_allowed(Server *s, Session *c, const Scope *scope, const PerfHandle *h) {
        /* a timing handle lives with the class lbr, whatever else the session keeps */
        if (h->timing && !session_may_lbr(s, c, scope))
                return false;
        if (!c->rights.may_read || (h->needs_write && !c->rights.may_write))
                return false;
        if (!h->job[0])
                return !c->rights.scoped;
        /* a job a monitor or an admin named: while the job's grant lasts */
        if (!c->rights.scoped && h->scope == PERF_SCOPE_JOB)
                return (c->rights.role == ROLE_MONITOR || c->rights.role == ROLE_ADMIN) &&
                       grants_find(&s->grants, h->job) != NULL;
        if (!scope || strcmp(scope->job, h->job) != 0)
                return false;
        if (h->scope == PERF_SCOPE_PROCESS)
                return true;
        for (size_t t = 0; t < h->n_targets; t++)
                if (!scope_job_covers(scope, &s->grants, c->peer.uid, h->job, (uint32_t) h->targets[t]))
                        return false;
        return true;
}

size_t session_perf_revalidate(Server *s, Session *c, const Scope *scope, const char *why) {
        size_t n = 0;

        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++) {
                PerfHandle *h = c->perf[i];

                if (!h || handle_still_allowed(s, c, scope, h))
                        continue;
                /* A job a monitor or an admin named ended: its handle ends with it, which the
                 * job map tells them; no notice, which would fail their next request of
                 * anything else. */
                if (!c->rights.scoped && h->scope == PERF_SCOPE_JOB && h->job[0] && c->rights.may_read &&
                    (c->rights.role == ROLE_MONITOR || c->rights.role == ROLE_ADMIN)) {
                        session_perf_close(c, i, "ended", "the job's grant ended");
                        continue;
                }
                session_perf_close(c, i, "revoked", why);
                n++;
        }
        if (n > 0) {
                c->revoked = true;
                c->perf_revoked += n;
                if (!c->revoked_why[0])
                        (void) snprintf(c->revoked_why, sizeof(c->revoked_why), "%.390s", why);
        }
        return n;
}

size_t server_perf_events_of_uid(const Server *s, uid_t uid) {
        size_t n = 0;

        for (const Session *c = s->sessions; c; c = c->next)
                if (c->peer.uid == uid) {
                        for (size_t i = 0; i < PERF_HANDLES_PER_SESSION_MAX; i++)
                                if (c->perf[i])
                                        n += perf_handle_n_open(c->perf[i]);
                        /* an open in turns counts whole from its first turn */
                        if (c->perf_job)
                                n += c->perf_job->n_fds;
                }
        return n;
}

size_t server_perf_events_per_uid_max(const Server *s) {
        size_t per_machine = (size_t) PERF_FDS_PER_UID_PER_CPU * s->machine->n_cpus;

        return MAX(per_machine, (size_t) PERF_FDS_PER_UID_MAX);
}

static int on_perf_tick(sd_event_source *source, uint64_t usec, void *userdata) {
        Server *s = userdata;
        struct timespec ts;

        (void) usec;
        s->perf_tick_fn(s->perf_driver);
        /* The next tick a period after this one ended, not after it was due: a tick of a
         * whole node's events can take longer than the period, and one always due would be
         * the only source the loop ever dispatches (sd-event dispatches one source an iteration,
         * and the turns of a perf_open or a batch in progress rank below it). */
        if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
                return -errno;
        return sd_event_source_set_time(source, (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U +
                                                        PERF_SIM_TICK_USEC);
}

int server_perf_tick_update(Server *s) {
        bool open = false;
        uint64_t now;
        int r;

        if (!s->perf_tick_fn || !s->event)
                return 0;
        for (const Session *c = s->sessions; c && !open; c = c->next)
                open = session_perf_any(c);
        if (!open)
                return s->perf_tick ? sd_event_source_set_enabled(s->perf_tick, SD_EVENT_OFF) : 0;
        r = sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        if (!s->perf_tick) {
                r = sd_event_add_time(s->event, &s->perf_tick, CLOCK_MONOTONIC, now + PERF_SIM_TICK_USEC, 0,
                                      on_perf_tick, s);
                if (r < 0)
                        return r;
        } else if (sd_event_source_get_enabled(s->perf_tick, NULL) > 0)
                return 0;
        else
                r = sd_event_source_set_time(s->perf_tick, now + PERF_SIM_TICK_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->perf_tick, SD_EVENT_ON);
        return r;
}

void server_reply_fds_drop(Server *s) {
        for (size_t i = 0; i < s->n_reply_fds; i++)
                (void) close(s->reply_fds[i]);
        s->n_reply_fds = 0;
}

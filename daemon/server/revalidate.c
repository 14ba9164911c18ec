/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Revalidation: a lease ends as soon as the right that allowed it is gone
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "server/perf-sessions.h"
#include "server/reply.h"
#include "server/revalidate.h"
#include "server/server-state.h"

typedef struct Revalidation {
        const Server *server;
        const Session *session;
        const Scope *scope;     /* job-mode users: the scope just resolved; NULL: no grant */
        const char *why;        /* what set this off, or why the scope has no grant */
        bool rights_changed;    /* role and classes too, not only the scope */
        char last_job[PMUGATE_STRING_MAX + 1]; /* the job last found to give its CPU, and */
        const Grant *last_grant;                /* its grant: a holder's leases mostly share one */
        char reason[200];       /* why the first lease that ended did */
        char jobs[320];         /* the jobs of the leases that ended, for the audit */
} Revalidation;

_printf_(2, 3) static bool disallow(Revalidation *v, const char *fmt, ...) {
        va_list ap;

        if (!v->reason[0]) {
                va_start(ap, fmt);
                (void) vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
                va_end(ap);
        }
        return false;
}

static void append_job(char *buf, size_t size, const char *job) {
        size_t used = strlen(buf), n = strlen(job);

        if (!job[0])
                return;
        /* Each job once: the list is short, a linear look suffices. */
        for (const char *p = buf; (p = strstr(p, job)); p += n)
                if ((p == buf || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
                        return;
        if (used + (used > 0) + n + 1 > size)
                return;
        (void) snprintf(buf + used, size - used, "%s%s", used > 0 ? "," : "", job);
}

/* Whether every register the lease journaled is of a class the role may still write. */
static bool journal_classes_allowed(const Server *s, const Lease *lease, const Rights *rights,
                                    const char **ret_cls) {
        if (!rights->write_classes)
                return true;
        for (size_t i = 0; i < lease->n_journal; i++) {
                const LeaseEntry *j = &lease->journal[i];
                const AllowEntry *e = NULL;

                if (!j->pci)
                        e = allowlist_find_msr(s->allowlist, j->reg);
                else if (j->target < s->machine->n_units)
                        e = allowlist_find_pci(s->allowlist, s->machine->units[j->target].vendor,
                                               s->machine->units[j->target].device, j->reg);
                if (e && !class_set_contains(rights->write_classes, e->cls)) {
                        *ret_cls = e->cls;
                        return false;
                }
        }
        return true;
}

/* scope_job_covers(), with the grant of the job asked about last kept at hand. */
static bool job_gives_cpu(Revalidation *v, const char *job, uint32_t cpu) {
        if (!v->scope->from_cgroup && v->last_grant && strcmp(job, v->last_job) == 0)
                return cpuset_has(&v->scope->cpus, cpu) && cpuset_has(&v->last_grant->cpus, cpu);
        if (!scope_job_covers(v->scope, &v->server->grants, v->session->peer.uid, job, cpu))
                return false;
        if (!v->scope->from_cgroup) {
                (void) snprintf(v->last_job, sizeof(v->last_job), "%s", job);
                v->last_grant = grants_find(&v->server->grants, job);
        }
        return true;
}

static bool lease_still_allowed(const Lease *lease, uint32_t cpu, void *userdata) {
        Revalidation *v = userdata;
        const Rights *rights = &v->session->rights;
        unsigned uid = (unsigned) v->session->peer.uid;
        const char *cls = NULL;
        bool allowed;

        if (!rights->may_write)
                allowed = disallow(v, "uid %u may no longer program counters", uid);
        else if (rights->role < lease->role)
                allowed = disallow(v, "the lease was taken as %s, and uid %u is now %s",
                                   role_to_string(lease->role), uid, role_to_string(rights->role));
        else if (v->rights_changed && !journal_classes_allowed(v->server, lease, rights, &cls))
                allowed = disallow(v, "the %s role may no longer write registers of class '%s'",
                                   role_to_string(rights->role), cls);
        else if (!rights->scoped)
                allowed = true;
        else if (!v->scope)
                allowed = disallow(v, "%s", v->why);
        else if (!lease->job[0])
                allowed = disallow(v, "the lease on CPU %u was taken without a job grant", (unsigned) cpu);
        else if (!job_gives_cpu(v, lease->job, cpu))
                allowed = disallow(v, "job %s no longer gives CPU %u", lease->job, (unsigned) cpu);
        else
                allowed = true;
        if (!allowed)
                append_job(v->jobs, sizeof(v->jobs), lease->job);
        return allowed;
}

static size_t revalidate(Server *s, Session *c, const Scope *scope, const char *why, bool rights_changed) {
        Revalidation v = {
                .server = s, .session = c, .scope = scope, .why = why, .rights_changed = rights_changed,
        };
        char list[512];
        CpuSet ended;
        size_t n, closed;

        closed = session_perf_revalidate(s, c, scope, why);
        if (!s->leases || cpuset_is_empty(&c->leased))
                return closed;
        n = leases_end_unless(s->leases, c, &c->leased, lease_still_allowed, &v, &ended);
        /* What the holder keeps, it keeps in the role it has now: a monitor made a user is no
         * longer preemptible. */
        if (rights_changed)
                CPUSET_FOREACH(cpu, &c->leased)
                        if (cpu < s->leases->n_cpus)
                                s->leases->cpus[cpu].role = c->rights.role;
        if (n == 0)
                return closed;

        c->revoked = true;
        for (unsigned w = 0; w < PMUGATE_CPUS_MAX / 64; w++)
                c->revoked_cpus.bits[w] |= ended.bits[w];
        /* What happened, and what it meant for this holder's leases. */
        if (v.reason[0] && strcmp(v.reason, why) != 0)
                (void) snprintf(c->revoked_why, sizeof(c->revoked_why), "%.190s: %s", why, v.reason);
        else
                (void) snprintf(c->revoked_why, sizeof(c->revoked_why), "%.390s", why);
        if (cpuset_format(&ended, list, sizeof(list)) < 0)
                (void) snprintf(list, sizeof(list), "%zu CPUs", n);
        server_audit(s, c, "lease-end", "restored", v.jobs[0] ? v.jobs : NULL, list, c->revoked_why, n);
        return n + closed;
}

size_t session_revalidate_leases(Server *s, Session *c, const Scope *scope, const char *why) {
        /* The session's rights change only at a reload, which revalidates them itself. */
        return revalidate(s, c, scope, why, false);
}

size_t server_revalidate_session(Server *s, Session *c, const char *why) {
        Refusal no_scope;
        int r = 0;

        /* Rights are recomputed: a batch in progress checks its next slices again. */
        s->rights_generation++;
        if (cpuset_is_empty(&c->leased) && !session_perf_any(c))
                return 0;
        policy_rights(&s->config, &c->peer, &c->rights);
        if (c->rights.may_write && c->rights.scoped)
                r = scope_resolve(s->cgroup_root, &c->peer, &s->grants, &c->scope, &no_scope);
        return revalidate(s, c, r == 0 ? &c->scope : NULL, r == 0 ? why : no_scope.reason, true);
}

size_t server_revalidate_leases(Server *s, const char *why) {
        size_t ended = 0;

        for (Session *c = s->sessions; c; c = c->next)
                ended += server_revalidate_session(s, c, why);
        return ended;
}

size_t server_revalidate_uid(Server *s, uid_t uid, const char *why) {
        size_t ended = 0;

        for (Session *c = s->sessions; c; c = c->next)
                if (c->peer.uid == uid)
                        ended += server_revalidate_session(s, c, why);
        return ended;
}

void server_lease_jobs(const Server *s, const CpuSet *cpus, char *buf, size_t size) {
        if (size == 0)
                return;
        buf[0] = '\0';
        CPUSET_FOREACH(cpu, cpus)
                if (cpu < s->leases->n_cpus && s->leases->cpus[cpu].owner)
                        append_job(buf, size, s->leases->cpus[cpu].job);
}

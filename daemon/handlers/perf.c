/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perf_open, perf_read, perf_close: counting through the kernel's perf_event_open under the
 * same policy as the MSR path (docs/PERF.md, "Policy"). A request's events are validated into
 * attrs (perf/perf-attr.c), its targets come from its scope (CPUs with leases for hardware
 * events, the job's cgroup, or one of the caller's processes through a pidfd), and they are
 * opened all or nothing into a handle the session owns: one of more than PERF_OPEN_FDS_PER_TURN
 * fds in turns (open_in_turns()), its rights checked again between them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "handlers/handlers.h"
#include "log.h"
#include "perf/perf-attr.h"
#include "perf/perf-handles.h"
#include "perf/perf-target.h"
#include "policy/jobmap.h"
#include "server/perf-sessions.h"

/* What one perf_open resolved to before anything opens. */
typedef struct PerfOpenPlan {
        struct perf_event_attr attrs[PERF_EVENTS_PER_OPEN_MAX];
        const char *pmu_names[PERF_EVENTS_PER_OPEN_MAX];
        const PerfPmu *group_pmus[PERF_GROUPS_PER_OPEN_MAX];    /* each group's leader's */
        CpuSet needs_leases;
        bool needs_write;               /* a hardware or uncore event */
        PerfUnit *units;
        size_t n_units;
        PerfProcess process;
        CpuSet acquired;                /* leases this perf_open took: given back if it fails */
        Session *session;
        int cgroup_fd;
        char job[PMUGATE_STRING_MAX + 1];
} PerfOpenPlan;

static void plan_done(PerfOpenPlan *p) {
        if (p->session && !cpuset_is_empty(&p->acquired))
                session_perf_release_leases(p->session, &p->acquired, "its perf_open was refused");
        free(p->units);
        p->units = NULL;
        perf_process_done(&p->process);
        if (p->cgroup_fd >= 0)
                (void) close(p->cgroup_fd);
        p->cgroup_fd = -1;
}

/* PERFEVTSEL bits the kernel sets from the attr, not from config: USR, OS, PC, INT, ANY, EN;
 * and AMD's Host/Guest-only bits. */
#define EVTSEL_KERNEL_BITS ((1ULL << 16) | (1ULL << 17) | (1ULL << 19) | (1ULL << 20) | (1ULL << 21) | \
                            (1ULL << 22) | (3ULL << 40))

/* The config bits of a core event a client may set: the model's PERFEVTSEL0 write mask in the
 * allowlist, the same mask a register write of it is held to, without the bits the kernel
 * sets itself; 0 (the PMU's own format fields) when the allowlist has no such register. */
static uint64_t core_config_mask(const Server *s) {
        const AllowEntry *e = allowlist_find_msr(s->allowlist, cpu_model_is_amd(s->machine->cpu_model) ?
                                                                       BACKEND_PROBE_MSR_AMD : BACKEND_PROBE_MSR_INTEL);

        return e ? e->write_mask & ~EVTSEL_KERNEL_BITS : 0;
}

/* Every event into an attr: the PMU must be the catalogue's, its config within what the
 * caller's role may program, and hardware counters served only when the daemon counts
 * through perf. */
static int build_attrs(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, Refusal *ret_refusal) {
        static const ClassSet no_classes = {}, every_class = { .all = true };
        const PerfAttrRules rules = {
                .may_count_kernel = c->rights.may_admin || s->config.user_count_kernel,
                .write_classes = !c->rights.may_write ? &no_classes :
                                 c->rights.write_classes ? c->rights.write_classes : &every_class,
                .core_config_mask = core_config_mask(s),
        };
        size_t e = 0;

        for (size_t g = 0; g < req->n_perf_groups; g++)
                for (size_t i = 0; i < req->perf_group_sizes[g]; i++, e++) {
                        const PerfEventSpec *spec = &req->perf_events[e];
                        const PerfPmu *pmu = NULL;
                        char why[PMUGATE_REASON_MAX - 32];
                        int r;

                        r = perf_attr_build(s->perf_catalog, &rules, spec, req->perf_scope, i == 0, req->follow,
                                            req->on_exec, &plan->attrs[e], &pmu, why, sizeof(why));
                        if (r != 0)
                                return refuse(ret_refusal, r > 0 ? r : PROTO_E_INTERNAL, -1, "groups[%zu][%zu]: %s",
                                              g, i, why);
                        plan->pmu_names[e] = pmu->name;
                        if (i == 0)
                                plan->group_pmus[g] = pmu;
                        if (pmu->kind == PERF_PMU_SOFTWARE)
                                continue;
                        plan->needs_write = true;
                        if (s->choice.counters != BACKEND_COUNTERS_PERF)
                                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                                              "groups[%zu][%zu]: hardware events of PMU '%s' go through perf only when "
                                              "the daemon counts through perf (counters: %s; 'backend' under "
                                              "[counters] in pmugate.conf, or pmugated --counters=perf); software "
                                              "events are served either way",
                                              g, i, pmu->name, backend_counters_to_string(s->choice.counters));
                }
        return 0;
}

static int plan_units_of_cpus(PerfOpenPlan *plan, const uint32_t *cpus, size_t n, int cgroup_fd) {
        plan->units = calloc(n, sizeof(*plan->units));
        if (!plan->units)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                plan->units[i] = (PerfUnit) { .target = cpus[i], .pid = -1, .cpu = (int) cpus[i], .cgroup_fd = cgroup_fd };
        plan->n_units = n;
        return 0;
}

/* An uncore PMU counts its whole package, on the one CPU its cpumask names: its groups open
 * there alone, which the request must name, and only for a caller that holds every online CPU
 * of the package (as a PCI unit's registers need), so that nobody else's work is counted
 * without their CPUs being the caller's. */
static int check_uncore_groups(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, Refusal *ret_refusal) {
        for (size_t g = 0; g < req->n_perf_groups; g++) {
                const PerfPmu *pmu = plan->group_pmus[g];
                bool named = false;

                if (!pmu || pmu->kind != PERF_PMU_UNCORE)
                        continue;
                for (size_t i = 0; i < req->n_cpus; i++)
                        named |= pmu->cpu >= 0 && req->cpus[i] == (uint32_t) pmu->cpu;
                if (!named)
                        return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1,
                                      "groups[%zu]: uncore PMU '%s' counts on CPU %d (its cpumask): name it in 'cpus'",
                                      g, pmu->name, pmu->cpu);
                for (uint32_t cpu = 0; cpu < s->machine->n_cpus; cpu++) {
                        const MachineCpu *mc = &s->machine->cpus[cpu];

                        if (!mc->present || !mc->online || mc->package != pmu->package)
                                continue;
                        if (!leases_held_by(s->leases, cpu, c))
                                return refuse(ret_refusal, PROTO_E_NO_LEASE, -1,
                                              "groups[%zu]: uncore PMU '%s' counts all of package %d: hold every CPU "
                                              "of it (CPU %" PRIu32 " is not leased to this connection; name them all "
                                              "in 'cpus' or lease them first)", g, pmu->name, pmu->package, cpu);
                        cpuset_add(&plan->needs_leases, cpu);
                }
        }
        return 0;
}

/* scope cpu: the request's CPUs, within the job's in job mode, leased when hardware counts. */
static int plan_cpu(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, Refusal *ret_refusal) {
        int r = handler_check_cpus(s, req, ret_refusal);

        if (r != 0)
                return r;
        if (c->rights.scoped) {
                for (size_t i = 0; i < req->n_cpus; i++)
                        if (!scope_job_of_cpu(&c->scope, &s->grants, c->peer.uid, req->cpus[i]))
                                return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1,
                                              "CPU %" PRIu32 " is not one of job %s's CPUs", req->cpus[i], c->scope.job);
                (void) snprintf(plan->job, sizeof(plan->job), "%s", c->scope.job);
        }
        if (plan->needs_write) {
                /* The same leases as the MSR path: one holder per CPU, a monitor yields. Those
                 * the session did not hold yet are the handle's, given back when it closes. */
                for (size_t i = 0; i < req->n_cpus; i++)
                        if (!leases_held_by(s->leases, req->cpus[i], c))
                                cpuset_add(&plan->acquired, req->cpus[i]);
                r = handler_lease_cpus(s, c, req, ret_refusal);
                if (r != 0) {
                        cpuset_clear(&plan->acquired);
                        return r;
                }
                for (size_t i = 0; i < req->n_cpus; i++)
                        cpuset_add(&plan->needs_leases, req->cpus[i]);
                r = check_uncore_groups(s, c, req, plan, ret_refusal);
                if (r != 0)
                        return r;
        }
        return plan_units_of_cpus(plan, req->cpus, req->n_cpus, -1);
}

/* scope job with "job": ID, for a monitor or an admin: the named job's cgroup on its CPUs on
 * this node (the exporter's per-job series). A user counts only the job it runs in. No lease:
 * the kernel multiplexes the job's events with everyone's, and every read carries the scale. */
static int plan_named_job(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, Refusal *ret_refusal) {
        uint32_t cpus[PMUGATE_LIST_MAX];
        const Grant *g;
        CpuSet job_cpus;
        size_t n = 0;
        int r;

        if (c->rights.role != ROLE_MONITOR && c->rights.role != ROLE_ADMIN)
                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                              "'job' names another job, which only a monitor or an admin may count; scope 'job' "
                              "without it counts the job you run in");
        if (s->config.mode != ACCESS_MODE_JOB)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "scope 'job' counts a job's cgroup, which needs job mode (mode = job in pmugate.conf)");
        g = grants_find(&s->grants, req->job);
        if (!g)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1, "job %s has no grant on this node", req->job);
        r = jobmap_grant_cpus(s->cgroup_root, g, &job_cpus);
        if (r < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1, "the CPUs of job %s are not known: %s", req->job,
                              strerror(-r));
        if (req->has_cpus) {
                r = handler_check_cpus(s, req, ret_refusal);
                if (r != 0)
                        return r;
                for (size_t i = 0; i < req->n_cpus; i++) {
                        if (!cpuset_has(&job_cpus, req->cpus[i]))
                                return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1,
                                              "CPU %" PRIu32 " is not one of job %s's CPUs", req->cpus[i], req->job);
                        cpus[n++] = req->cpus[i];
                }
        } else
                CPUSET_FOREACH(cpu, &job_cpus)
                        if (n < ELEMENTSOF(cpus) && cpu < s->machine->n_cpus && s->machine->cpus[cpu].online)
                                cpus[n++] = cpu;
        if (n == 0)
                return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1, "job %s has no online CPU", req->job);
        r = perf_target_job_cgroup_of_id(s->cgroup_root, req->job, &plan->cgroup_fd, ret_refusal);
        if (r != 0)
                return r;
        (void) snprintf(plan->job, sizeof(plan->job), "%s", req->job);
        return plan_units_of_cpus(plan, cpus, n, plan->cgroup_fd);
}

/* scope job: the job's cgroup on the job's CPUs (or the request's subset of them). */
static int plan_job(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, Refusal *ret_refusal) {
        uint32_t cpus[PMUGATE_LIST_MAX];
        size_t n = 0;
        int r;

        if (req->has_job)
                return plan_named_job(s, c, req, plan, ret_refusal);
        if (!c->rights.scoped)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "scope 'job' counts a job's cgroup, which needs job mode (mode = job in pmugate.conf) "
                              "and a grant; use scope 'cpu' or 'process'");
        if (req->has_cpus) {
                r = handler_check_cpus(s, req, ret_refusal);
                if (r != 0)
                        return r;
                for (size_t i = 0; i < req->n_cpus; i++) {
                        if (!cpuset_has(&c->scope.cpus, req->cpus[i]))
                                return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1,
                                              "CPU %" PRIu32 " is not one of job %s's CPUs", req->cpus[i], c->scope.job);
                        cpus[n++] = req->cpus[i];
                }
        } else
                CPUSET_FOREACH(cpu, &c->scope.cpus)
                        if (n < ELEMENTSOF(cpus) && cpu < s->machine->n_cpus && s->machine->cpus[cpu].online)
                                cpus[n++] = cpu;
        if (n == 0)
                return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1, "job %s has no online CPU", c->scope.job);
        r = perf_target_job_cgroup(s->cgroup_root, &c->peer, c->scope.job, &plan->cgroup_fd, ret_refusal);
        if (r != 0)
                return r;
        (void) snprintf(plan->job, sizeof(plan->job), "%s", c->scope.job);
        return plan_units_of_cpus(plan, cpus, n, plan->cgroup_fd);
}

/* scope process: one of the caller's processes, every thread, children following. */
static int plan_process(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, Refusal *ret_refusal) {
        char job_path[PMUGATE_CGROUP_PATH_MAX];
        int r;

        (void) s;
        if (c->rights.scoped) {
                r = perf_target_job_path(&c->peer, c->scope.job, job_path, sizeof(job_path), ret_refusal);
                if (r != 0)
                        return r;
                (void) snprintf(plan->job, sizeof(plan->job), "%s", c->scope.job);
        }
        if (req->thread)
                r = perf_target_thread("/proc", &c->peer, (pid_t) req->pid, c->rights.scoped ? job_path : NULL,
                                       &plan->process, ret_refusal);
        else
                r = perf_target_process("/proc", &c->peer, (pid_t) req->pid, c->rights.scoped ? job_path : NULL,
                                        &plan->process, ret_refusal);
        if (r != 0)
                return r;
        if (req->handoff && plan->process.pid != c->peer.pid)
                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                              "'handoff' passes the fds to the caller's own process only; pid %d is not the caller (%d)",
                              (int) plan->process.pid, (int) c->peer.pid);
        plan->units = calloc(plan->process.n_tids, sizeof(*plan->units));
        if (!plan->units)
                return -ENOMEM;
        for (size_t i = 0; i < plan->process.n_tids; i++)
                plan->units[i] = (PerfUnit) { .target = plan->process.pid, .pid = plan->process.tids[i], .cpu = -1,
                                              .cgroup_fd = -1 };
        plan->n_units = plan->process.n_tids;
        return 0;
}

static int open_refusal_code(int error) {
        switch (-error) {
        case EACCES:
        case EPERM:
                return PROTO_E_NOT_AUTHORIZED;
        case EMFILE:
        case ENFILE:
        case ENOSPC:
                return PROTO_E_LIMIT;
        case EBUSY:
                return PROTO_E_BUSY;
        default:
                return PROTO_E_BAD_FIELD;
        }
}

static void format_events(const Request *req, const PerfOpenPlan *plan, char *buf, size_t size) {
        size_t off = 0, e = 0;

        buf[0] = '\0';
        for (size_t g = 0; g < req->n_perf_groups; g++)
                for (size_t i = 0; i < req->perf_group_sizes[g] && off < size; i++, e++) {
                        /* groups apart by ';', events by ','; "k:" counts the kernel too */
                        int n = snprintf(buf + off, size - off, "%s%s%s/0x%" PRIx64, e == 0 ? "" : i == 0 ? ";" : ",",
                                         plan->attrs[e].exclude_kernel ? "" : "k:", plan->pmu_names[e],
                                         req->perf_events[e].config);

                        if (n < 0)
                                return;
                        off += (size_t) n;
                }
}

static int reply_open(Server *s, const Request *req, const PerfHandle *h) {
        msgpack_packer pk;

        TRY(server_reply_begin(s, req, 3, &pk));
        TRY(pack_key_uint(&pk, "handle", h->id));
        TRY(pack_string(&pk, "targets"));
        TRY_PACK(msgpack_pack_array(&pk, h->n_targets));
        for (size_t t = 0; t < h->n_targets; t++)
                TRY_PACK(msgpack_pack_int64(&pk, h->targets[t]));
        return pack_key_uint(&pk, "fds", s->n_reply_fds);
}

/* Hands a new fd of every event to the reply, unit-major then event, as the reply says. */
static int export_fds(Server *s, PerfHandle *h, Refusal *ret_refusal) {
        size_t n = h->n_units * h->n_events;

        if (n > ELEMENTSOF(s->reply_fds))
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "handoff of %zu fds (%zu threads x %zu events): at most %zu per perf_open", n, h->n_units,
                              h->n_events, ELEMENTSOF(s->reply_fds));
        for (size_t i = 0; i < n; i++) {
                int fd = perf_driver_export_fd(h->driver, h->events[i]);

                if (fd < 0) {
                        server_reply_fds_drop(s);
                        if (fd == -EOPNOTSUPP)
                                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                                              "simulated events have no fd to hand off; read them with perf_read");
                        return fd;
                }
                s->reply_fds[s->n_reply_fds++] = fd;
        }
        return 0;
}

/* After every event opened: the handle goes to c (its fds to the reply when handed off), the
 * open is audited and the reply packed. Takes h: freed when refused. */
static int open_finish(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, PerfHandle *h,
                       const char *events, Refusal *ret_refusal) {
        char targets[256];
        int slot, r;

        /* The pid named at the check is the process the events count only if it still lives. */
        if (req->perf_scope == PERF_SCOPE_PROCESS && !perf_target_process_alive(&(PerfProcess) { .pidfd = h->pidfd })) {
                pid_t pid = (pid_t) h->targets[0];

                perf_handle_free(h);
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d exited while its events opened",
                              (int) pid);
        }
        /* A thread's id is not pinned by a pidfd: still listed under the process after the open,
         * it was not reused by another process's thread in between. */
        if (req->thread && !perf_target_thread_alive("/proc", &(PerfProcess) { .pidfd = h->pidfd, .pid = plan->process.pid,
                                                                               .tids = plan->process.tids, .n_tids = 1 })) {
                perf_handle_free(h);
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "thread %" PRIu32 " ended while its events opened",
                              req->pid);
        }
        /* The session reads no request while its open is in turns: the slot found free at the
         * start is free still, looked up again rather than assumed. */
        r = handler_perf_slot(s, c, &slot, ret_refusal);
        if (r != 0) {
                perf_handle_free(h);
                return r;
        }
        if (req->handoff) {
                r = export_fds(s, h, ret_refusal);
                if (r != 0) {
                        perf_handle_free(h);
                        return r;
                }
                h->handed_off = true;
        }
        h->id = ++c->perf_next_id;
        c->perf[slot] = h;
        h->acquired = plan->acquired;
        cpuset_clear(&plan->acquired);
        r = server_perf_tick_update(s);
        if (r < 0)
                log_warning_errno(r, "Cannot tick the simulator's perf driver: its counts advance at reads only");

        (void) snprintf(targets, sizeof(targets), "%s:", perf_scope_to_string(h->scope));
        for (size_t t = 0; t < h->n_targets; t++) {
                size_t len = strlen(targets);

                (void) snprintf(targets + len, sizeof(targets) - len, "%s%" PRId64, t > 0 ? "," : "", h->targets[t]);
        }
        server_audit(s, c, "perf-open", "allowed", h->job[0] ? h->job : NULL, targets, events, perf_handle_n_open(h));

        r = reply_open(s, req, h);
        if (r < 0)
                server_reply_fds_drop(s);
        return r;
}

/* A perf_open of more than PERF_OPEN_FDS_PER_TURN fds, opened that many a turn: the server
 * runs step() at each of c's turns, other clients served between (server-state.h). */
typedef struct PerfOpenTurns {
        PerfOpenJob job;                /* first: the server's view of it */
        PerfOpenPlan plan;
        PerfHandle *h;                  /* NULL once it went to the session or was freed */
        Request req;                    /* its id and scope; the events are in events */
        char events[PMUGATE_REASON_MAX];
        uint64_t generation;            /* s->rights_generation when its rights were last checked */
} PerfOpenTurns;

/* What the open relies on, checked again when anything may have changed between two turns (a
 * lease ended, a reload, a revocation): as at a perf_open, and as revalidation holds an open
 * handle to. */
static int open_recheck(Server *s, Session *c, PerfOpenTurns *t, Refusal *ret_refusal) {
        const PerfHandle *h = t->h;
        int r;

        if (!c->rights.may_read || (h->needs_write && !c->rights.may_write))
                return refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                              "the right to count these events ended while they opened");
        if (c->rights.scoped) {
                r = handler_resolve_scope(s, c, ret_refusal);
                if (r != 0)
                        return r;
                if (t->plan.job[0] && strcmp(c->scope.job, t->plan.job) != 0)
                        return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1,
                                      "job %s ended while its events opened", t->plan.job);
        }
        CPUSET_FOREACH(cpu, &h->needs_leases)
                if (!leases_held_by(s->leases, cpu, c))
                        return refuse(ret_refusal, PROTO_E_NO_LEASE, -1,
                                      "the lease on CPU %u ended while the events opened", (unsigned) cpu);
        return 0;
}

static int open_step(Server *s, Session *c, PerfOpenJob *job, size_t *ret_fds) {
        PerfOpenTurns *t = (PerfOpenTurns *) job;
        PerfOpenFailure failure;
        Refusal refusal;
        int r;

        refusal_clear(&refusal);
        *ret_fds = 0;
        if (t->generation != s->rights_generation) {
                t->generation = s->rights_generation;
                r = open_recheck(s, c, t, &refusal);
                if (r < 0)
                        return r;
        } else
                r = 0;
        if (r == 0) {
                *ret_fds = MIN((size_t) PERF_OPEN_FDS_PER_TURN, t->h->n_units * t->h->n_events);
                r = perf_handle_open_some(t->h, PERF_OPEN_FDS_PER_TURN, &failure);
                if (r == 0)
                        return 0;
                if (r < 0) {
                        char why[PMUGATE_REASON_MAX];

                        perf_open_failure_format(t->h, &failure, t->plan.pmu_names, why, sizeof(why));
                        r = refuse(&refusal, open_refusal_code(failure.error), -1, "%s", why);
                } else {
                        r = open_finish(s, c, &t->req, &t->plan, t->h, t->events, &refusal);
                        t->h = NULL;
                        if (r < 0)
                                return r;
                }
        }
        if (r > 0) {
                r = server_reply_refusal(s, c, &t->req, &refusal);
                if (r < 0)
                        return r;
        }
        job->finished = true;
        return 0;
}

static void open_free(Server *s, Session *c, PerfOpenJob *job) {
        PerfOpenTurns *t = (PerfOpenTurns *) job;

        (void) s;
        (void) c;
        perf_handle_free(t->h);
        plan_done(&t->plan);
        free(t);
}

/* Hands the open to the server as a job of c: the plan and h are its from here on. */
static int open_in_turns(Server *s, Session *c, const Request *req, PerfOpenPlan *plan, PerfHandle *h,
                         const char *events) {
        PerfOpenTurns *t = calloc(1, sizeof(*t));

        if (!t) {
                perf_handle_free(h);
                return -ENOMEM;
        }
        t->job = (PerfOpenJob) { .step = open_step, .free = open_free, .n_fds = h->n_units * h->n_events };
        t->plan = *plan;
        *plan = (PerfOpenPlan) { .cgroup_fd = -1, .process = { .pidfd = -1 } };
        t->h = h;
        t->req = *req;
        t->req.perf_events = NULL;
        t->req.cpus = NULL;
        t->req.n_cpus = 0;
        (void) snprintf(t->events, sizeof(t->events), "%s", events);
        t->generation = s->rights_generation;
        c->perf_job = &t->job;
        return 0;
}

int handle_perf_open(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        _cleanup_(plan_done) PerfOpenPlan plan = { .cgroup_fd = -1, .process = { .pidfd = -1 }, .session = c };
        PerfHandle *h = NULL;
        PerfOpenFailure failure;
        char events[PMUGATE_REASON_MAX];
        size_t held;
        int slot, r;

        r = handler_perf_slot(s, c, &slot, ret_refusal);
        if (r != 0)
                return r;
        r = handler_resolve_scope(s, c, ret_refusal);
        if (r != 0)
                return r;
        r = build_attrs(s, c, req, &plan, ret_refusal);
        if (r != 0)
                return r;

        switch (req->perf_scope) {
        case PERF_SCOPE_CPU:
                r = plan_cpu(s, c, req, &plan, ret_refusal);
                break;
        case PERF_SCOPE_JOB:
                r = plan_job(s, c, req, &plan, ret_refusal);
                break;
        case PERF_SCOPE_PROCESS:
                r = plan_process(s, c, req, &plan, ret_refusal);
                break;
        default:
                r = refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "unknown scope");
        }
        if (r != 0)
                return r;

        held = server_perf_events_of_uid(s, c->peer.uid);
        if (held + plan.n_units * req->n_perf_events > server_perf_events_per_uid_max(s))
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "uid %u holds %zu open perf events; %zu more would pass the limit of %zu per user",
                              (unsigned) c->peer.uid, held, plan.n_units * req->n_perf_events,
                              server_perf_events_per_uid_max(s));

        r = perf_handle_new(s->perf_driver, req->perf_scope, c->peer.uid, plan.attrs, req->perf_group_sizes,
                            req->n_perf_groups, plan.units, plan.n_units, &h);
        if (r < 0)
                return r;
        h->needs_write = plan.needs_write;
        h->leased = plan.needs_write && req->perf_scope == PERF_SCOPE_CPU;
        h->needs_leases = plan.needs_leases;
        for (size_t g = 0; g < req->n_perf_groups; g++)
                if (plan.group_pmus[g] && plan.group_pmus[g]->kind == PERF_PMU_UNCORE)
                        h->group_cpu[g] = plan.group_pmus[g]->cpu;
        memcpy(h->job, plan.job, sizeof(h->job));
        /* the handle keeps the pins of its target */
        h->cgroup_fd = plan.cgroup_fd;
        plan.cgroup_fd = -1;
        h->pidfd = plan.process.pidfd;
        plan.process.pidfd = -1;
        if (perf_handle_n_rows(h) > PERF_ROWS_MAX) {
                size_t n_rows = perf_handle_n_rows(h);

                perf_handle_free(h);
                return refuse(ret_refusal, PROTO_E_LIMIT, -1,
                              "%zu rows (targets times groups) to read: a perf_read reply holds %u", n_rows,
                              PERF_ROWS_MAX);
        }

        format_events(req, &plan, events, sizeof(events));
        if (h->n_units * h->n_events > PERF_OPEN_FDS_PER_TURN)
                return open_in_turns(s, c, req, &plan, h, events);
        r = perf_handle_open(h, &failure);
        if (r < 0) {
                char why[PMUGATE_REASON_MAX];

                perf_open_failure_format(h, &failure, plan.pmu_names, why, sizeof(why));
                perf_handle_free(h);
                return refuse(ret_refusal, open_refusal_code(failure.error), -1, "%s", why);
        }
        return open_finish(s, c, req, &plan, h, events, ret_refusal);
}

static int find_handle(Session *c, const Request *req, size_t *ret_slot, Refusal *ret_refusal) {
        if (!session_perf_find(c, req->handle, ret_slot))
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "no perf handle %" PRIu32 " on this connection (closed, ended, or never opened here)",
                              req->handle);
        return 0;
}

int handle_perf_read(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        msgpack_packer pk;
        size_t slot, n_rows, parts;
        int r;

        r = find_handle(c, req, &slot, ret_refusal);
        if (r != 0)
                return r;
        if (c->perf[slot]->timing)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "handle %" PRIu32 " samples (timing_open): its records are in the rings of its fds, "
                              "not read with perf_read", req->handle);
        n_rows = perf_handle_n_rows(c->perf[slot]);
        if (n_rows <= PERF_ROWS_PER_PART) {
                TRY(server_reply_begin(s, req, 1, &pk));
                TRY(pack_string(&pk, "rows"));
                return perf_handle_pack_rows(c->perf[slot], &pk);
        }
        /* In parts, as a long batch reply: each a whole reply map with "part", "parts" and the
         * next PERF_ROWS_PER_PART rows. */
        parts = (n_rows + PERF_ROWS_PER_PART - 1) / PERF_ROWS_PER_PART;
        for (size_t p = 0; p < parts; p++) {
                size_t first = p * PERF_ROWS_PER_PART;

                if (p == 0)
                        TRY(server_reply_begin(s, req, 3, &pk));
                else
                        TRY(server_reply_next_part(s, req, 3, &pk));
                TRY(pack_key_uint(&pk, "part", p));
                TRY(pack_key_uint(&pk, "parts", parts));
                TRY(pack_string(&pk, "rows"));
                TRY(perf_handle_pack_row_range(c->perf[slot], &pk, first, MIN(PERF_ROWS_PER_PART, n_rows - first)));
                TRY(server_reply_end_part(s));
        }
        return 0;
}

int handle_perf_close(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        msgpack_packer pk;
        size_t slot;
        int r;

        r = find_handle(c, req, &slot, ret_refusal);
        if (r != 0)
                return r;
        session_perf_close(c, slot, "closed", "perf_close");
        return server_reply_begin(s, req, 0, &pk);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: totals and their attribution to CPUs, jobs, sockets and the node
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "macro.h"
#include "model.h"

const TopdownTree topdown_tree_intel = {
        .vendor = "GenuineIntel",
        .n_nodes = 12,
        .nodes = {
                { "frontend_bound", 1, NULL, { "tma_frontend_bound" } },
                { "bad_speculation", 1, NULL, { "tma_bad_speculation" } },
                { "backend_bound", 1, NULL, { "tma_backend_bound" } },
                { "retiring", 1, NULL, { "tma_retiring" } },
                { "fetch_latency", 2, "frontend_bound", { "tma_fetch_latency" } },
                { "fetch_bandwidth", 2, "frontend_bound", { "tma_fetch_bandwidth" } },
                { "branch_mispredicts", 2, "bad_speculation", { "tma_branch_mispredicts" } },
                { "machine_clears", 2, "bad_speculation", { "tma_machine_clears" } },
                { "memory_bound", 2, "backend_bound", { "tma_memory_bound" } },
                { "core_bound", 2, "backend_bound", { "tma_core_bound" } },
                { "light_operations", 2, "retiring", { "tma_light_operations" } },
                { "heavy_operations", 2, "retiring", { "tma_heavy_operations" } },
        },
};

/* client/groups/zen4/ and zen5/ topdown-l1.conf and topdown-l2.conf */
const TopdownTree topdown_tree_amd = {
        .vendor = "AuthenticAMD",
        .n_nodes = 13,
        .nodes = {
                { "frontend_bound", 1, NULL, { "frontend_bound" } },
                { "bad_speculation", 1, NULL, { "bad_speculation" } },
                { "backend_bound", 1, NULL, { "backend_bound" } },
                { "smt_contention", 1, NULL, { "smt_contention" } },
                { "retiring", 1, NULL, { "retiring" } },
                { "frontend_bound_latency", 2, "frontend_bound",
                  { "frontend_bound_latency", "frontend_bound_by_latency" } },
                { "frontend_bound_bandwidth", 2, "frontend_bound",
                  { "frontend_bound_bandwidth", "frontend_bound_by_bandwidth" } },
                { "bad_speculation_mispredicts", 2, "bad_speculation",
                  { "bad_speculation_mispredicts", "bad_speculation_from_mispredicts" } },
                { "bad_speculation_pipeline_restarts", 2, "bad_speculation",
                  { "bad_speculation_pipeline_restarts", "bad_speculation_from_pipeline_restarts" } },
                { "backend_bound_memory", 2, "backend_bound",
                  { "backend_bound_memory", "backend_bound_by_memory" } },
                { "backend_bound_cpu", 2, "backend_bound", { "backend_bound_cpu", "backend_bound_by_cpu" } },
                { "retiring_fastpath", 2, "retiring", { "retiring_fastpath", "retiring_from_fastpath" } },
                { "retiring_microcode", 2, "retiring", { "retiring_microcode", "retiring_from_microcode" } },
        },
};

const TopdownTree *topdown_tree_for_vendor(const char *vendor) {
        return vendor && strcmp(vendor, topdown_tree_amd.vendor) == 0 ? &topdown_tree_amd : &topdown_tree_intel;
}

const TopdownTree *model_topdown(const Model *m) {
        return m->topdown ?: &topdown_tree_intel;
}

static const char *const cpu_reasons[_CPU_REASON_MAX] = {
        [CPU_MONITORED] = "monitored",
        [CPU_USER_LEASE] = "user_lease",
        [CPU_OTHER_MONITOR] = "other_monitor",
        [CPU_OFFLINE] = "offline",
        [CPU_DAEMON_UNAVAILABLE] = "daemon_unavailable",
        [CPU_REFUSED] = "refused",
        [CPU_STARTING] = "starting",
};

const char *cpu_reason_to_string(CpuReason r) {
        return (unsigned) r < _CPU_REASON_MAX ? cpu_reasons[r] : "unknown";
}

const char *model_cpu_job(const Model *m, const CpuTotals *c) {
        return c->job > 0 && c->job <= m->n_job_names ? m->job_names[c->job - 1] : "";
}

CpuTotals *model_cpu(Model *m, uint32_t cpu) {
        if (cpu >= m->n_cpu_index || m->cpu_index[cpu] < 0)
                return NULL;
        return &m->cpus[m->cpu_index[cpu]];
}

int model_set_cpus(Model *m, const uint32_t *cpus, const int32_t *sockets, size_t n) {
        CpuTotals *next;
        int32_t *index;
        size_t n_sockets = m->n_sockets, n_index = 0;
        double (*s)[QTY_MAX];

        for (size_t i = 0; i < n; i++)
                if ((size_t) cpus[i] + 1 > n_index)
                        n_index = (size_t) cpus[i] + 1;
        next = calloc(n ?: 1, sizeof(CpuTotals));
        index = malloc((n_index ?: 1) * sizeof(int32_t));
        if (!next || !index) {
                free(next);
                free(index);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_index; i++)
                index[i] = -1;
        for (size_t i = 0; i < n; i++) {
                const CpuTotals *old = model_cpu(m, cpus[i]);

                if (old)
                        next[i] = *old;
                else
                        next[i] = (CpuTotals) { .cpu = cpus[i], .reason = CPU_STARTING };
                next[i].socket = sockets[i];
                (void) snprintf(next[i].labels, sizeof(next[i].labels), "cpu=\"%" PRIu32 "\",socket=\"%" PRId32 "\"",
                                cpus[i], sockets[i]);
                if (sockets[i] >= 0 && (size_t) sockets[i] + 1 > n_sockets)
                        n_sockets = (size_t) sockets[i] + 1;
                index[cpus[i]] = (int32_t) i;
        }
        if (n_sockets > m->n_sockets) {
                s = realloc(m->sockets, n_sockets * sizeof(*s));
                if (!s) {
                        free(next);
                        free(index);
                        return -ENOMEM;
                }
                memset(s + m->n_sockets, 0, (n_sockets - m->n_sockets) * sizeof(*s));
                m->sockets = s;
                m->n_sockets = n_sockets;
        }
        free(m->cpus);
        free(m->cpu_index);
        m->cpus = next;
        m->n_cpus = n;
        m->cpu_index = index;
        m->n_cpu_index = n_index;
        return 0;
}

void model_done(Model *m) {
        free(m->cpus);
        free(m->cpu_index);
        free(m->sockets);
        free(m->jobs);
        free(m->job_names);
        *m = (Model) {};
}

static void *memdup_array(const void *p, size_t n, size_t size) {
        void *q = malloc((n ?: 1) * size);

        if (q && n > 0)
                memcpy(q, p, n * size);
        return q;
}

int model_copy(const Model *m, Model *ret) {
        Model c = *m;

        c.cpus = memdup_array(m->cpus, m->n_cpus, sizeof(CpuTotals));
        c.cpu_index = memdup_array(m->cpu_index, m->n_cpu_index, sizeof(int32_t));
        c.sockets = memdup_array(m->sockets, m->n_sockets, sizeof(*m->sockets));
        c.jobs = memdup_array(m->jobs, m->n_jobs, sizeof(JobTotals));
        c.max_jobs = m->n_jobs;
        c.job_names = memdup_array(m->job_names, m->n_job_names, sizeof(*m->job_names));
        if (!c.cpus || !c.cpu_index || !c.sockets || !c.jobs || !c.job_names) {
                model_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

const JobTotals *model_find_job(const Model *m, const char *job) {
        /* The newest first: a job id run again after its summary time is a new job. */
        for (size_t i = m->n_jobs; i > 0; i--)
                if (strcmp(m->jobs[i - 1].job, job) == 0)
                        return &m->jobs[i - 1];
        return NULL;
}

static JobTotals *running_job(Model *m, const char *job) {
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i].running && strcmp(m->jobs[i].job, job) == 0)
                        return &m->jobs[i];
        return NULL;
}

static JobTotals *add_job(Model *m, const char *job, time_t now) {
        JobTotals *j;

        if (m->n_jobs == m->max_jobs) {
                size_t max = m->max_jobs ? m->max_jobs * 2 : 16;
                JobTotals *p = realloc(m->jobs, max * sizeof(JobTotals));

                if (!p)
                        return NULL;
                m->jobs = p;
                m->max_jobs = max;
        }
        j = &m->jobs[m->n_jobs++];
        *j = (JobTotals) { .first_seen = now, .last_seen = now, .running = true };
        (void) snprintf(j->job, sizeof(j->job), "%s", job);
        return j;
}

/* The CPUs of m that job holds, as a CPU list ("0-3,8"), cut short with "..." when too long. */
static void format_job_cpus(const Model *m, const char *job, char *buf, size_t size) {
        size_t len = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < m->n_cpus; i++) {
                size_t e = i;
                int n;

                if (strcmp(model_cpu_job(m, &m->cpus[i]), job) != 0)
                        continue;
                while (e + 1 < m->n_cpus && m->cpus[e + 1].cpu == m->cpus[e].cpu + 1 &&
                       strcmp(model_cpu_job(m, &m->cpus[e + 1]), job) == 0)
                        e++;
                if (e > i)
                        n = snprintf(buf + len, size - len, "%s%u-%u", len ? "," : "", m->cpus[i].cpu,
                                     m->cpus[e].cpu);
                else
                        n = snprintf(buf + len, size - len, "%s%u", len ? "," : "", m->cpus[i].cpu);
                if (n < 0 || (size_t) n >= size - len) {
                        if (size >= 4)
                                memcpy(buf + size - 4, "...", 4);
                        return;
                }
                len += (size_t) n;
                i = e;
        }
}

int model_set_jobs(Model *m, const uint32_t *cpus, const char *const *jobs, const bool *has_uid,
                   const uint32_t *uids, size_t n, time_t now) {
        _cleanup_free_ size_t *row = NULL;
        _cleanup_free_ uint32_t *next = NULL;
        _cleanup_free_ char (*names)[MODEL_JOB_MAX] = NULL;
        size_t n_names = 0;

        /* the first row naming each CPU: a CPU two jobs share is labelled with the first */
        row = malloc((m->n_cpus ?: 1) * sizeof(size_t));
        if (!row)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_cpus; i++)
                row[i] = SIZE_MAX;
        for (size_t k = n; k > 0; k--) {
                const CpuTotals *c = model_cpu(m, cpus[k - 1]);

                if (c && jobs[k - 1] && jobs[k - 1][0])
                        row[c - m->cpus] = k - 1;
        }
        /* Each job holding a CPU named once; a CPU's held series starts anew where its job
         * changed. Nothing changes when this fails. */
        names = malloc((m->n_cpus ?: 1) * sizeof(*names));
        next = malloc((m->n_cpus ?: 1) * sizeof(uint32_t));
        if (!names || !next)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_cpus; i++) {
                const char *job = row[i] != SIZE_MAX ? jobs[row[i]] : "";
                size_t k;

                next[i] = 0;
                if (!job[0])
                        continue;
                /* neighbours mostly share a job: the last one named first */
                for (k = n_names; k > 0 && strcmp(names[k - 1], job) != 0; k--)
                        ;
                if (k == 0) {
                        (void) snprintf(names[n_names], sizeof(names[n_names]), "%s", job);
                        k = ++n_names;
                }
                next[i] = (uint32_t) k;
        }
        for (size_t i = 0; i < m->n_cpus; i++) {
                CpuTotals *c = &m->cpus[i];

                if (strcmp(model_cpu_job(m, c), next[i] ? names[next[i] - 1] : "") != 0)
                        memset(c->held, 0, sizeof(c->held));
                c->job = next[i];
        }
        free(m->job_names);
        m->job_names = TAKE_PTR(names);
        m->n_job_names = n_names;

        for (size_t i = 0; i < m->n_jobs; i++)
                m->jobs[i].n_cpus = m->jobs[i].n_labelled = 0;
        for (size_t i = 0; i < m->n_cpus; i++) {
                const char *job = row[i] != SIZE_MAX ? jobs[row[i]] : "";
                size_t k = row[i];

                if (job[0]) {
                        JobTotals *j = running_job(m, job);

                        if (!j)
                                j = add_job(m, job, now);
                        if (!j)
                                return -ENOMEM;
                        j->n_cpus++;
                        j->n_labelled++;
                        j->cpus_counted = true;
                        if (j->n_cpus > j->max_cpus)
                                j->max_cpus = j->n_cpus;
                        j->last_seen = now;
                        if (has_uid && uids && has_uid[k]) {
                                j->has_uid = true;
                                j->uid = uids[k];
                        }
                }
        }
        /* Jobs the map names after another on a CPU they share: they hold it too, and on a perf
         * node their cgroup events count them there. */
        for (size_t k = 0; k < n; k++) {
                const CpuTotals *c = model_cpu(m, cpus[k]);
                JobTotals *j;

                if (!c || !jobs[k] || !jobs[k][0] || row[c - m->cpus] == k)
                        continue;
                j = running_job(m, jobs[k]);
                if (!j)
                        j = add_job(m, jobs[k], now);
                if (!j)
                        return -ENOMEM;
                j->n_cpus++;
                if (j->n_cpus > j->max_cpus)
                        j->max_cpus = j->n_cpus;
                j->last_seen = now;
                if (has_uid && uids && has_uid[k]) {
                        j->has_uid = true;
                        j->uid = uids[k];
                }
        }
        for (size_t i = 0; i < m->n_jobs; i++) {
                JobTotals *j = &m->jobs[i];

                if (!j->running)
                        continue;
                if (j->n_cpus == 0) {
                        /* its CPUs stay as they were last seen, for the summary */
                        j->running = false;
                        j->ended = now;
                } else
                        format_job_cpus(m, j->job, j->cpus, sizeof(j->cpus));
        }
        return 0;
}

void model_add(Model *m, uint32_t cpu, const double delta[QTY_MAX]) {
        CpuTotals *c = model_cpu(m, cpu);
        JobTotals *j;

        if (!c)
                return;
        j = c->job ? running_job(m, model_cpu_job(m, c)) : NULL;
        for (unsigned q = 0; q < QTY_PACKAGE_FIRST; q++) {
                double d = delta[q];

                if (isfinite(d))
                        m->counted[q] = true;
                /* Totals only grow: a NaN (not measured) adds nothing. */
                if (!(d > 0) || !isfinite(d))
                        continue;
                if (c->job)
                        c->held[q] += d;
                else
                        c->idle[q] += d;
                if (j && !(j->by_cgroup && (q == QTY_INSTRUCTIONS || q == QTY_CYCLES)))
                        j->v[q] += d;
                if (c->socket >= 0 && (size_t) c->socket < m->n_sockets)
                        m->sockets[c->socket][q] += d;
                m->node[q] += d;
        }
}

void model_add_package(Model *m, int32_t socket, const double delta[QTY_MAX], const double *cycles) {
        double total = 0;

        if (socket < 0 || (size_t) socket >= m->n_sockets)
                return;
        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i].socket == socket && cycles[i] > 0 && isfinite(cycles[i]))
                        total += cycles[i];
        for (unsigned q = QTY_PACKAGE_FIRST; q < QTY_MAX; q++) {
                double d = delta[q];

                if (isfinite(d))
                        m->counted[q] = true;
                if (!(d > 0) || !isfinite(d))
                        continue;
                m->sockets[socket][q] += d;
                m->node[q] += d;
                if (!(total > 0))
                        continue;
                for (size_t i = 0; i < m->n_cpus; i++) {
                        const CpuTotals *c = &m->cpus[i];
                        JobTotals *j;

                        if (c->socket != socket || !c->job || !(cycles[i] > 0) || !isfinite(cycles[i]))
                                continue;
                        j = running_job(m, model_cpu_job(m, c));
                        if (j)
                                j->v[q] += d * cycles[i] / total;
                }
        }
}

bool model_job_counts(const JobTotals *j, unsigned q) {
        return j->cpus_counted || (j->by_cgroup && (q == QTY_INSTRUCTIONS || q == QTY_CYCLES));
}

void model_set_job_source(Model *m, const char *job, bool by_cgroup) {
        JobTotals *j = running_job(m, job);

        if (j)
                j->by_cgroup = by_cgroup;
}

static void add_positive(double *total, double d) {
        if (d > 0 && isfinite(d))
                *total += d;
}

void model_add_job_counts(Model *m, const char *job, double instructions, double cycles, double enabled_seconds,
                          double running_seconds) {
        JobTotals *j = running_job(m, job);

        if (!j || !j->by_cgroup)
                return;
        if (isfinite(instructions))
                m->counted[QTY_INSTRUCTIONS] = true;
        if (isfinite(cycles))
                m->counted[QTY_CYCLES] = true;
        add_positive(&j->v[QTY_INSTRUCTIONS], instructions);
        add_positive(&j->v[QTY_CYCLES], cycles);
        add_positive(&j->cgroup_enabled_seconds, enabled_seconds);
        add_positive(&j->cgroup_running_seconds, running_seconds);
}

void model_prune_jobs(Model *m, time_t now, time_t retention) {
        size_t k = 0;

        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i].running || now - m->jobs[i].ended <= retention)
                        m->jobs[k++] = m->jobs[i];
        m->n_jobs = k;
}

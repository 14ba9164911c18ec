/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: exposition formats and job summaries
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "cli/number-format.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "render.h"

typedef enum Scope {
        SCOPE_CPU,
        SCOPE_SOCKET,
        SCOPE_NODE,
        SCOPE_JOB,
        _SCOPE_MAX,
} Scope;

static const char *const scope_names[_SCOPE_MAX] = { "cpu", "socket", "node", "job" };
static const char *const scope_help[_SCOPE_MAX] = {
        "per CPU (with the job holding it, if any)", "per socket", "of the whole node",
        "per job, over its CPUs on this node",
};

/* One counter family per quantity below QTY_TOPDOWN_FIRST, then the TopDown one. */
static const struct {
        const char *name;
        const char *unit;
        const char *help;
} base_quantities[QTY_TOPDOWN_FIRST] = {
        [QTY_INSTRUCTIONS] = { "instructions", "", "Instructions retired" },
        [QTY_CYCLES] = { "cycles", "", "Core cycles while not halted" },
        [QTY_SLOTS] = { "slots", "", "TopDown issue slots (pipeline width times cycles)" },
        [QTY_MONITORED_SECONDS] = { "monitored_seconds", "seconds", "Time the exporter counted" },
};

/* Prometheus' accept header: "application/openmetrics-text;version=1.0.0,...;q=0.75,
 * text/plain;version=0.0.4;q=0.5,(any);q=0.1", where (any) is star slash star. */
bool accept_prefers_openmetrics(const char *accept) {
        double best_om = -1, best_text = -1;
        const char *p = accept;

        if (!accept)
                return false;
        while (*p) {
                size_t n = strcspn(p, ","), type_len;
                double q = 1;
                const char *param;
                char entry[256];

                (void) snprintf(entry, sizeof(entry), "%.*s",
                                (int) (n < sizeof(entry) ? n : sizeof(entry) - 1), p);
                p += n + (p[n] == ',');
                param = entry;
                while (*param == ' ' || *param == '\t')
                        param++;
                type_len = strcspn(param, "; \t");
                for (const char *s = strchr(param, ';'); s; s = strchr(s + 1, ';')) {
                        const char *v = s + 1;

                        while (*v == ' ' || *v == '\t')
                                v++;
                        if ((v[0] == 'q' || v[0] == 'Q') && v[1] == '=') {
                                char *end;
                                double d = strtod(v + 2, &end);

                                q = end != v + 2 && d >= 0 && d <= 1 ? d : 0;
                        }
                }
                if (q <= 0)
                        continue;
                if (type_len == 28 && strncasecmp(param, "application/openmetrics-text", 28) == 0)
                        best_om = q > best_om ? q : best_om;
                else if ((type_len == 10 && strncasecmp(param, "text/plain", 10) == 0) ||
                         (type_len == 3 && strncmp(param, "*/*", 3) == 0) ||
                         (type_len == 6 && strncasecmp(param, "text/*", 6) == 0))
                        best_text = q > best_text ? q : best_text;
        }
        return best_om >= 0 && best_om >= best_text;
}

bool label_name_valid(const char *name) {
        static const char *const taken[] = {"cpu",     "socket", "category", "level",
                                            "pmugate_cpu_state", "model", "backend",
                                            "topdown_level", "version", "node", "format", "domain",
                                            "quantity"};

        if (!name || !name[0] || strlen(name) > 64 || (name[0] >= '0' && name[0] <= '9') ||
            strncmp(name, "__", 2) == 0)
                return false;
        for (const char *c = name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '_'))
                        return false;
        for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++)
                if (strcmp(name, taken[i]) == 0)
                        return false;
        return true;
}

/* A scrape is some 10^5 series at 4096 CPUs: the writes below are stdio's unlocked ones (the
 * stream is the scrape's own) and numbers go through the integer formatter, not printf. */
static void put_text(FILE *f, const char *s) {
        fputs_unlocked(s, f);
}

/* Label values are job ids and words of the exporter's own; escape anyway. */
static void put_label(FILE *f, bool *first, const char *name, const char *value) {
        put_text(f, *first ? "{" : ",");
        put_text(f, name);
        put_text(f, "=\"");
        for (const char *c = value; *c;) {
                size_t n = strcspn(c, "\\\"\n");

                fwrite_unlocked(c, 1, n, f);
                c += n;
                if (!*c)
                        break;
                put_text(f, *c == '\n' ? "\\n" : *c == '"' ? "\\\"" : "\\\\");
                c++;
        }
        fputc_unlocked('"', f);
        *first = false;
}

static void put_value(FILE *f, bool first, double v) {
        char num[NUMBER_TEXT_MAX];
        size_t n;

        if (!first)
                fputc_unlocked('}', f);
        if (isnan(v)) {
                put_text(f, " NaN\n");
                return;
        }
        fputc_unlocked(' ', f);
        n = number_format_g17(v, num);
        num[n++] = '\n';
        fwrite_unlocked(num, 1, n, f);
}

/* HELP and TYPE of a family of any type (the text format names the sample, OpenMetrics the
 * family). */
static void family_typed(FILE *f, const RenderOptions *o, const char *name, const char *suffix,
                         const char *type, const char *help) {
        fprintf(f, "# HELP %s%s %s.\n", name, o->openmetrics ? "" : suffix, help);
        fprintf(f, "# TYPE %s%s %s\n", name, o->openmetrics ? "" : suffix, type);
}

/* HELP, TYPE and (OpenMetrics) UNIT of a family; returns the sample name's suffix. */
static const char *family(FILE *f, const RenderOptions *o, const char *name, bool counter, const char *unit,
                          const char *help) {
        const char *suffix = counter ? "_total" : "";

        family_typed(f, o, name, suffix, counter ? "counter" : "gauge", help);
        if (o->openmetrics && unit && unit[0])
                fprintf(f, "# UNIT %s %s\n", name, unit);
        return suffix;
}

typedef struct Sample {
        const CpuTotals *cpu;   /* SCOPE_CPU */
        const char *cpu_job;    /* SCOPE_CPU: the job holding it */
        bool held;              /* SCOPE_CPU: the held series, else the idle one */
        int socket;             /* SCOPE_SOCKET */
        const JobTotals *job;   /* SCOPE_JOB */
} Sample;

/* The CPU's labels were formatted once, when the model learnt the CPU (model_set_cpus()). */
static void cpu_labels(FILE *f, bool *first, const CpuTotals *c) {
        fputc_unlocked(*first ? '{' : ',', f);
        put_text(f, c->labels);
        *first = false;
}

static void scope_labels(FILE *f, bool *first, const RenderOptions *o, Scope scope, const Sample *s) {
        char num[16];

        switch (scope) {
        case SCOPE_CPU:
                cpu_labels(f, first, s->cpu);
                if (s->held)
                        put_label(f, first, o->job_label, s->cpu_job);
                break;
        case SCOPE_SOCKET:
                (void) snprintf(num, sizeof(num), "%d", s->socket);
                put_label(f, first, "socket", num);
                break;
        case SCOPE_JOB:
                put_label(f, first, o->job_label, s->job->job);
                break;
        default:
                break;
        }
}

static const double *sample_values(const Model *m, Scope scope, const Sample *s) {
        switch (scope) {
        case SCOPE_CPU:
                return s->held ? s->cpu->held : s->cpu->idle;
        case SCOPE_SOCKET:
                return m->sockets[s->socket];
        case SCOPE_JOB:
                return s->job->v;
        default:
                return m->node;
        }
}

/* Calls emit for every series of a scope: the idle series of every CPU and the held one of
 * every CPU a job holds; sockets; the node; running jobs. */
static void each_sample(const Model *m, Scope scope,
                        void (*emit)(FILE *, const Model *, const RenderOptions *, Scope, const Sample *,
                                     const void *),
                        FILE *f, const RenderOptions *o, const void *userdata) {
        Sample s = {};

        switch (scope) {
        case SCOPE_CPU:
                for (size_t i = 0; i < m->n_cpus; i++) {
                        s = (Sample) { .cpu = &m->cpus[i], .cpu_job = model_cpu_job(m, &m->cpus[i]) };
                        emit(f, m, o, scope, &s, userdata);
                        if (m->cpus[i].job) {
                                s.held = true;
                                emit(f, m, o, scope, &s, userdata);
                        }
                }
                break;
        case SCOPE_SOCKET:
                for (size_t i = 0; i < m->n_sockets; i++) {
                        s = (Sample) { .socket = (int) i };
                        emit(f, m, o, scope, &s, userdata);
                }
                break;
        case SCOPE_JOB:
                for (size_t i = 0; i < m->n_jobs; i++)
                        if (m->jobs[i].running) {
                                s = (Sample) { .job = &m->jobs[i] };
                                emit(f, m, o, scope, &s, userdata);
                        }
                break;
        default:
                emit(f, m, o, scope, &s, userdata);
        }
}

typedef struct Emit {
        const char *sample_name;
        unsigned quantity;
        unsigned level;         /* emit_topdown: the TopDown level of the family */
} Emit;

/* A job that only shares CPUs another job is named first on has no CPU counts of its own: its
 * series are absent, not 0 (model_job_counts()). */
static bool job_counts(const JobTotals *j, unsigned q) {
        return model_job_counts(j, q);
}

static void emit_base(FILE *f, const Model *m, const RenderOptions *o, Scope scope, const Sample *s,
                      const void *userdata) {
        const Emit *e = userdata;
        bool first = true;

        if (scope == SCOPE_JOB && !job_counts(s->job, e->quantity))
                return;

        fputs(e->sample_name, f);
        scope_labels(f, &first, o, scope, s);
        put_value(f, first, sample_values(m, scope, s)[e->quantity]);
}

static void emit_topdown(FILE *f, const Model *m, const RenderOptions *o, Scope scope, const Sample *s,
                         const void *userdata) {
        const Emit *e = userdata;
        const double *v = sample_values(m, scope, s);

        const TopdownTree *tree = model_topdown(m);

        if (scope == SCOPE_JOB && !job_counts(s->job, QTY_SLOTS))
                return;
        /* One family per level: a sum over a family adds up to the slots, never twice. */
        for (unsigned k = 0; k < tree->n_nodes; k++) {
                bool first = true;

                if (tree->nodes[k].level != e->level || !m->counted[QTY_TOPDOWN_FIRST + k])
                        continue;
                fputs(e->sample_name, f);
                scope_labels(f, &first, o, scope, s);
                put_label(f, &first, "category", tree->nodes[k].name);
                put_value(f, first, v[QTY_TOPDOWN_FIRST + k]);
        }
}

/* The precisions of the FLOPs family, one label each; a CPU model counts double and single, or
 * all (both together, where its event does not tell them apart), never both kinds. */
static const struct {
        unsigned quantity;
        const char *precision;
} flops_precisions[] = {
        { QTY_FLOPS_DOUBLE, "double" },
        { QTY_FLOPS_SINGLE, "single" },
        { QTY_FLOPS_ALL, "all" },
};

static bool flops_counted(const Model *m) {
        for (size_t i = 0; i < ELEMENTSOF(flops_precisions); i++)
                if (m->counted[flops_precisions[i].quantity])
                        return true;
        return false;
}

static void emit_flops(FILE *f, const Model *m, const RenderOptions *o, Scope scope, const Sample *s,
                       const void *userdata) {
        const Emit *e = userdata;
        const double *v = sample_values(m, scope, s);

        if (scope == SCOPE_JOB && !job_counts(s->job, QTY_FLOPS_DOUBLE))
                return;
        for (size_t i = 0; i < ELEMENTSOF(flops_precisions); i++) {
                bool first = true;

                if (!m->counted[flops_precisions[i].quantity])
                        continue;
                fputs(e->sample_name, f);
                scope_labels(f, &first, o, scope, s);
                put_label(f, &first, "precision", flops_precisions[i].precision);
                put_value(f, first, v[flops_precisions[i].quantity]);
        }
}

bool render_per_cpu(const Model *m, PerCpu mode) {
        return mode == PER_CPU_YES || (mode == PER_CPU_AUTO && m->n_cpus <= PMUGATE_EXPORTER_PER_CPU_AUTO_MAX);
}

/* Whether any category of the TopDown level was counted: a level the measurement has no
 * metrics for has no family. */
static bool topdown_level_counted(const Model *m, unsigned level) {
        const TopdownTree *tree = model_topdown(m);

        if (!m->counted[QTY_SLOTS])
                return false;
        for (unsigned k = 0; k < tree->n_nodes; k++)
                if (tree->nodes[k].level == level && m->counted[QTY_TOPDOWN_FIRST + k])
                        return true;
        return false;
}

static void render_counters(const Model *m, const RenderOptions *o, FILE *f) {
        for (unsigned sc = 0; sc < _SCOPE_MAX; sc++) {
                char name[128], help[256], sample[160];
                const char *suffix;
                Emit e;

                if (sc == SCOPE_CPU && !render_per_cpu(m, o->per_cpu))
                        continue;

                for (unsigned q = 0; q < QTY_TOPDOWN_FIRST; q++) {
                        if (!m->counted[q])
                                continue;
                        (void) snprintf(name, sizeof(name), "pmugate_%s_%s", scope_names[sc],
                                        base_quantities[q].name);
                        (void) snprintf(help, sizeof(help), "%s, %s", base_quantities[q].help,
                                        scope_help[sc]);
                        suffix = family(f, o, name, true, base_quantities[q].unit, help);
                        (void) snprintf(sample, sizeof(sample), "%s%s", name, suffix);
                        e = (Emit) { .sample_name = sample, .quantity = q };
                        each_sample(m, sc, emit_base, f, o, &e);
                }
                for (unsigned level = 1; level <= 2; level++) {
                        /* Per CPU, level 1 only: level 2 per CPU would multiply the series for
                         * little. */
                        if (level > 1 && (sc == SCOPE_CPU || m->topdown_level < level))
                                continue;
                        if (!topdown_level_counted(m, level))
                                continue;
                        (void) snprintf(name, sizeof(name), "pmugate_%s_topdown_level%u_slots",
                                        scope_names[sc], level);
                        (void) snprintf(help, sizeof(help),
                                        "TopDown issue slots attributed to each level-%u category (%s), %s",
                                        level,
                                        level == 1 ? "they add up to the slots"
                                                   : "each a part of its level-1 parent's",
                                        scope_help[sc]);
                        suffix = family(f, o, name, true, "", help);
                        (void) snprintf(sample, sizeof(sample), "%s%s", name, suffix);
                        e = (Emit) { .sample_name = sample, .level = level };
                        each_sample(m, sc, emit_topdown, f, o, &e);
                }
                if (flops_counted(m)) {
                        (void) snprintf(name, sizeof(name), "pmugate_%s_flops", scope_names[sc]);
                        (void) snprintf(help, sizeof(help),
                                        "Floating-point operations retired by precision (double, single; all: "
                                        "both together where the CPU model does not tell them apart), %s",
                                        scope_help[sc]);
                        suffix = family(f, o, name, true, "", help);
                        (void) snprintf(sample, sizeof(sample), "%s%s", name, suffix);
                        e = (Emit) { .sample_name = sample };
                        each_sample(m, sc, emit_flops, f, o, &e);
                }
        }
}

static void emit_package(FILE *f, const Model *m, const RenderOptions *o, Scope scope, const Sample *s,
                         const void *userdata) {
        const Emit *e = userdata;
        bool first = true;

        if (scope == SCOPE_JOB && !job_counts(s->job, e->quantity))
                return;
        if (e->quantity == QTY_PACKAGE_JOULES || e->quantity == QTY_DRAM_JOULES) {
                /* the two energies are one family with a domain label; emit the counted ones
                 * here (AMD has no DRAM domain: no series, not 0) */
                static const struct {
                        unsigned quantity;
                        const char *domain;
                } domains[] = { { QTY_PACKAGE_JOULES, "package" }, { QTY_DRAM_JOULES, "dram" } };

                for (size_t i = 0; i < ELEMENTSOF(domains); i++) {
                        if (!m->counted[domains[i].quantity])
                                continue;
                        first = true;
                        fputs(e->sample_name, f);
                        scope_labels(f, &first, o, scope, s);
                        put_label(f, &first, "domain", domains[i].domain);
                        put_value(f, first, sample_values(m, scope, s)[domains[i].quantity]);
                }
                return;
        }
        fputs(e->sample_name, f);
        scope_labels(f, &first, o, scope, s);
        put_value(f, first, sample_values(m, scope, s)[e->quantity]);
}

#define JOB_SHARE_NOTE " (estimated: each socket's by the job's share of its cycles)"

/* Memory traffic and energy: per socket, for the node, and estimated per job; only what the
 * measurement counts, so a missing quantity is absent rather than a flat 0. */
static void render_package(const Model *m, const RenderOptions *o, FILE *f) {
        static const struct {
                unsigned quantity;
                const char *name, *unit, *help;
                bool energy;
        } families[] = {
                { QTY_READ_BYTES, "memory_read_bytes", "bytes", "Bytes read from DRAM (64 per CAS)",
                  false },
                { QTY_WRITTEN_BYTES, "memory_written_bytes", "bytes", "Bytes written to DRAM (64 per CAS)",
                  false },
                { QTY_PACKAGE_JOULES, "energy_joules", "joules", "RAPL energy by domain (package, dram)",
                  true },
        };
        static const Scope scopes[] = { SCOPE_SOCKET, SCOPE_NODE, SCOPE_JOB };

        for (size_t k = 0; k < ELEMENTSOF(scopes); k++)
                for (size_t i = 0; i < ELEMENTSOF(families); i++) {
                        char name[128], help[320], sample[160];
                        const char *suffix;
                        Emit e;

                        if (families[i].energy ? !m->counted[QTY_PACKAGE_JOULES] && !m->counted[QTY_DRAM_JOULES]
                                               : !m->counted[families[i].quantity])
                                continue;
                        (void) snprintf(name, sizeof(name), "pmugate_%s_%s", scope_names[scopes[k]],
                                        families[i].name);
                        (void) snprintf(help, sizeof(help), "%s, %s%s", families[i].help,
                                        scope_help[scopes[k]],
                                        scopes[k] == SCOPE_JOB ? JOB_SHARE_NOTE : "");
                        suffix = family(f, o, name, true, families[i].unit, help);
                        (void) snprintf(sample, sizeof(sample), "%s%s", name, suffix);
                        e = (Emit) { .sample_name = sample, .quantity = families[i].quantity };
                        each_sample(m, scopes[k], emit_package, f, o, &e);
                }
}

/* The scale of the jobs' cgroup counts: the kernel multiplexes them with everyone's events on
 * the CPUs (no lease is taken), and scales them by enabled over running time; rate(running) /
 * rate(enabled) says which fraction of the time they were on the PMU. */
static void render_job_scale(const Model *m, const RenderOptions *o, FILE *f) {
        static const struct {
                const char *name, *help;
                size_t offset;
        } families[] = {
                { "pmugate_job_cgroup_enabled_seconds",
                  "Time the job's cgroup events were enabled, summed over its CPUs",
                  offsetof(JobTotals, cgroup_enabled_seconds) },
                { "pmugate_job_cgroup_running_seconds",
                  "Time the job's cgroup events were on the PMU, summed over its CPUs (running / enabled "
                  "is the multiplexing scale its instructions and cycles were scaled by)",
                  offsetof(JobTotals, cgroup_running_seconds) },
        };

        for (size_t k = 0; k < ELEMENTSOF(families); k++) {
                const char *suffix = family(f, o, families[k].name, true, "seconds", families[k].help);

                for (size_t i = 0; i < m->n_jobs; i++) {
                        const JobTotals *j = &m->jobs[i];
                        bool first = true;

                        if (!j->running || !j->by_cgroup)
                                continue;
                        fprintf(f, "%s%s", families[k].name, suffix);
                        put_label(f, &first, o->job_label, j->job);
                        put_value(f, first, *(const double *) ((const char *) j + families[k].offset));
                }
        }
}

static void render_cpu_gauges(const Model *m, const RenderOptions *o, FILE *f) {
        family(f, o, "pmugate_cpu_monitored", false, "",
               "1 while the exporter counts the CPU, 0 while it does not (pmugate_cpu_state says why)");
        for (size_t i = 0; i < m->n_cpus; i++) {
                const CpuTotals *c = &m->cpus[i];
                bool first = true;

                put_text(f, "pmugate_cpu_monitored");
                cpu_labels(f, &first, c);
                put_value(f, first, c->reason == CPU_MONITORED ? 1 : 0);
        }
        /* Every state of every CPU is a series of its own that is always there, so a state
         * changing changes values, never label sets (no series churn). */
        family_typed(f, o, "pmugate_cpu_state", "", o->openmetrics ? "stateset" : "gauge",
                     "Why the exporter counts the CPU or not: 1 for the state it is in, 0 for the others");
        for (size_t i = 0; i < m->n_cpus; i++) {
                const CpuTotals *c = &m->cpus[i];

                for (unsigned r = 0; r < _CPU_REASON_MAX; r++) {
                        bool first = true;

                        put_text(f, "pmugate_cpu_state");
                        cpu_labels(f, &first, c);
                        put_label(f, &first, "pmugate_cpu_state", cpu_reason_to_string(r));
                        put_value(f, first, c->reason == r ? 1 : 0);
                }
        }
}

/* Per socket, how many CPUs are in each state: what pmugate_cpu_state says, without a series
 * per CPU. Socket -1 counts the CPUs of no known socket (offline). */
static void render_socket_states(const Model *m, const RenderOptions *o, FILE *f) {
        family(f, o, "pmugate_socket_cpus", false, "",
               "CPUs of the socket in each state (pmugate_cpu_state: why the exporter counts them or not)");
        for (ssize_t sk = -1; sk < (ssize_t) m->n_sockets; sk++) {
                uint32_t n[_CPU_REASON_MAX] = {};
                bool any = false;
                char num[24];

                for (size_t i = 0; i < m->n_cpus; i++)
                        if (m->cpus[i].socket == sk) {
                                n[m->cpus[i].reason]++;
                                any = true;
                        }
                if (!any && sk < 0)
                        continue;
                (void) snprintf(num, sizeof(num), "%zd", sk);
                for (unsigned r = 0; r < _CPU_REASON_MAX; r++) {
                        bool first = true;

                        put_text(f, "pmugate_socket_cpus");
                        put_label(f, &first, "socket", num);
                        put_label(f, &first, "pmugate_cpu_state", cpu_reason_to_string(r));
                        put_value(f, first, n[r]);
                }
        }
}

/* What this node's exporter counts: a quantity at 0 has no series (the CPU model has no event
 * for it, or the daemon withholds it, or nothing was measured yet), and the log says why; a
 * dashboard tells "not counted here" from "counted nothing" by it. */
static void render_counted(const Model *m, const RenderOptions *o, FILE *f) {
        static const struct {
                const char *name;
                unsigned quantity;
        } quantities[] = {
                { "instructions", QTY_INSTRUCTIONS },      { "cycles", QTY_CYCLES },
                { "topdown", QTY_SLOTS },                  { "memory_read_bytes", QTY_READ_BYTES },
                { "memory_written_bytes", QTY_WRITTEN_BYTES }, { "energy_package", QTY_PACKAGE_JOULES },
                { "energy_dram", QTY_DRAM_JOULES },        { "flops_double", QTY_FLOPS_DOUBLE },
                { "flops_single", QTY_FLOPS_SINGLE },      { "flops_all", QTY_FLOPS_ALL },
        };

        family(f, o, "pmugate_exporter_quantity_counted", false, "",
               "1 for what the exporter counts on this node, 0 for what it does not (no series; the "
               "CPU model has no event for it, the daemon withholds it, or no sample yet)");
        for (size_t i = 0; i < ELEMENTSOF(quantities); i++) {
                bool first = true;

                put_text(f, "pmugate_exporter_quantity_counted");
                put_label(f, &first, "quantity", quantities[i].name);
                put_value(f, first, m->counted[quantities[i].quantity] ? 1 : 0);
        }
}

static void render_gauges(const Model *m, const RenderOptions *o, FILE *f) {
        const char *suffix;

        if (render_per_cpu(m, o->per_cpu))
                render_cpu_gauges(m, o, f);
        render_socket_states(m, o, f);
        family(f, o, "pmugate_job_cpus", false, "", "CPUs of this node the job holds");
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i].running) {
                        bool first = true;

                        fputs("pmugate_job_cpus", f);
                        put_label(f, &first, o->job_label, m->jobs[i].job);
                        put_value(f, first, m->jobs[i].n_cpus);
                }
        family(f, o, "pmugate_job_counting_info", false, "",
               "Where the job's instructions and cycles come from: source \"cgroup\" (its cgroup's events, "
               "only its own tasks, on a node counting through perf) or \"cpus\" (the CPUs it holds)");
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i].running) {
                        bool first = true;

                        fputs("pmugate_job_counting_info", f);
                        put_label(f, &first, o->job_label, m->jobs[i].job);
                        put_label(f, &first, "source", m->jobs[i].by_cgroup ? "cgroup" : "cpus");
                        put_value(f, first, 1);
                }
        if (m->export_uids) {
                family(f, o, "pmugate_job_uid", false, "", "The uid the job runs as (a value, not a label)");
                for (size_t i = 0; i < m->n_jobs; i++)
                        if (m->jobs[i].running && m->jobs[i].has_uid) {
                                bool first = true;

                                fputs("pmugate_job_uid", f);
                                put_label(f, &first, o->job_label, m->jobs[i].job);
                                put_value(f, first, m->jobs[i].uid);
                        }
        }
        family(f, o, "pmugate_exporter_info", false, "",
               "The CPU model, backend and TopDown level measured");
        {
                bool first = true;
                char level[4];

                (void) snprintf(level, sizeof(level), "%u", m->topdown_level);
                fputs("pmugate_exporter_info", f);
                put_label(f, &first, "model", m->model_key);
                put_label(f, &first, "backend", m->backend);
                put_label(f, &first, "topdown_level", level);
                put_label(f, &first, "version", o->version);
                put_value(f, first, 1);
        }
        render_counted(m, o, f);
        family(f, o, "pmugate_exporter_daemon_up", false, "", "1 while pmugated answers");
        fprintf(f, "pmugate_exporter_daemon_up %d\n", m->daemon_up ? 1 : 0);
        family(f, o, "pmugate_exporter_last_sample_timestamp_seconds", false, "seconds",
               "When the counters were last read (UNIX time; 0 before the first sample)");
        fprintf(f, "pmugate_exporter_last_sample_timestamp_seconds %.3f\n", m->last_sample);
        suffix = family(f, o, "pmugate_exporter_samples", true, "", "Samples taken");
        fprintf(f, "pmugate_exporter_samples%s %" PRIu64 "\n", suffix, m->samples);
        suffix = family(f, o, "pmugate_exporter_sample_errors", true, "",
                        "Samples that failed (daemon unavailable, lease lost)");
        fprintf(f, "pmugate_exporter_sample_errors%s %" PRIu64 "\n", suffix, m->sample_errors);
        suffix = family(f, o, "pmugate_exporter_measurement_restarts", true, "",
                        "Times a measurement started (the first, and after CPUs were yielded or resumed or "
                        "the daemon restarted)");
        fprintf(f, "pmugate_exporter_measurement_restarts%s %" PRIu64 "\n", suffix, m->restarts);
}

int render_metrics_body(const Model *m, const RenderOptions *o, FILE *out) {
        if (!m || !o || !out || !label_name_valid(o->job_label))
                return -EINVAL;
        render_counters(m, o, out);
        render_package(m, o, out);
        render_job_scale(m, o, out);
        render_gauges(m, o, out);
        return ferror(out) ? -EIO : 0;
}

int render_metrics_tail(const RenderOptions *o, FILE *out) {
        const char *suffix;

        if (!o || !out)
                return -EINVAL;
        suffix = family(out, o, "pmugate_exporter_scrapes", true, "", "Scrapes of /metrics answered, by format");
        fprintf(out, "pmugate_exporter_scrapes%s{format=\"text\"} %" PRIu64 "\n", suffix, o->scrapes_text);
        fprintf(out, "pmugate_exporter_scrapes%s{format=\"openmetrics\"} %" PRIu64 "\n", suffix,
                o->scrapes_openmetrics);
        if (o->openmetrics)
                fputs("# EOF\n", out);
        return ferror(out) ? -EIO : 0;
}

int render_metrics(const Model *m, const RenderOptions *o, FILE *out) {
        int r = render_metrics_body(m, o, out);

        return r < 0 ? r : render_metrics_tail(o, out);
}

static double ratio(double a, double b) {
        return b > 0 ? a / b : NAN;
}

/* JSON has no NaN: a quantity that was never counted is null. */
static json_object *number(double v) {
        return isfinite(v) ? json_object_new_double(v) : json_object_new_null();
}

int render_job_summary(const Model *m, const JobTotals *j, time_t now, FILE *out) {
        json_object *root = json_object_new_object(), *td = json_object_new_object(),
                    *td2 = json_object_new_object();
        const TopdownTree *tree = model_topdown(m);
        bool has_memory = m->counted[QTY_READ_BYTES] && m->counted[QTY_WRITTEN_BYTES],
             has_energy = m->counted[QTY_PACKAGE_JOULES] || m->counted[QTY_DRAM_JOULES];
        double v[QTY_MAX];
        time_t end = j->running ? now : j->ended;
        double seconds, traffic, energy, flops = 0;
        const char *text;
        int r = 0;

        if (!root || !td || !td2) {
                json_object_put(root);
                json_object_put(td);
                json_object_put(td2);
                return -ENOMEM;
        }
        /* what has no source for this job or this CPU model is null, not 0 */
        for (unsigned q = 0; q < QTY_MAX; q++)
                v[q] = m->counted[q] && model_job_counts(j, q) ? j->v[q] : NAN;
        json_object_object_add(root, "job", json_object_new_string(j->job));
        json_object_object_add(root, "host", json_object_new_string(m->hostname));
        json_object_object_add(root, "cpus", json_object_new_string(j->cpus));
        /* Which part of the job: the exporter follows the job map, which names jobs, not their
         * steps, so a summary is the whole allocation on this node. A reader of an older summary
         * without the key takes it to be that too (pmugate job). */
        json_object_object_add(root, "covers", json_object_new_string("allocation"));
        json_object_object_add(root, "running", json_object_new_boolean(j->running));
        json_object_object_add(root, "start", json_object_new_int64(j->first_seen));
        json_object_object_add(root, "end", json_object_new_int64(end));
        json_object_object_add(root, "cpu_model", json_object_new_string(m->model_key));
        json_object_object_add(root, "counted_by", json_object_new_string(j->by_cgroup ? "cgroup" : "cpus"));
        json_object_object_add(root, "monitored_cpu_seconds", number(v[QTY_MONITORED_SECONDS]));
        json_object_object_add(root, "instructions", number(v[QTY_INSTRUCTIONS]));
        json_object_object_add(root, "cycles", number(v[QTY_CYCLES]));
        json_object_object_add(root, "slots", number(v[QTY_SLOTS]));
        json_object_object_add(root, "ipc", number(ratio(v[QTY_INSTRUCTIONS], v[QTY_CYCLES])));
        /* Percent, as pmugate's own output gives TopDown (client/cli/measure-output.c). */
        for (unsigned k = 0; k < tree->n_nodes; k++) {
                if (tree->nodes[k].level > m->topdown_level || !m->counted[QTY_TOPDOWN_FIRST + k])
                        continue;
                json_object_object_add(tree->nodes[k].level == 1 ? td : td2, tree->nodes[k].name,
                                       number(100.0 * ratio(v[QTY_TOPDOWN_FIRST + k], v[QTY_SLOTS])));
        }
        json_object_object_add(root, "topdown_percent", td);
        json_object_object_add(root, "topdown_level2_percent", td2);
        /* Package quantities are the job's estimated share of its sockets'; null when the CPU
         * model or the daemon gives none, rather than a made-up 0. Bandwidth in MBytes/s (10^6)
         * and power in watts, as the MEM and ENERGY groups give them, over the time the exporter
         * counted the job's CPUs (not whole seconds of its start and end). */
        seconds = j->max_cpus > 0 ? v[QTY_MONITORED_SECONDS] / j->max_cpus : NAN;
        /* FLOPs by precision as counted, and their sum: null for a precision the CPU model
         * does not count apart (AMD's and Grace's count all together, flops_all). */
        for (size_t i = 0; i < ELEMENTSOF(flops_precisions); i++) {
                char key[32];
                double x = m->counted[flops_precisions[i].quantity] ? v[flops_precisions[i].quantity] : NAN;

                (void) snprintf(key, sizeof(key), "flops_%s", flops_precisions[i].precision);
                json_object_object_add(root, key, number(x));
                if (m->counted[flops_precisions[i].quantity])
                        flops += x;
        }
        json_object_object_add(root, "flops", flops_counted(m) ? number(flops) : NULL);
        json_object_object_add(root, "mflops_per_second",
                               flops_counted(m) ? number(1e-6 * ratio(flops, seconds)) : NULL);
        json_object_object_add(root, "memory_read_bytes",
                               has_memory ? number(v[QTY_READ_BYTES]) : NULL);
        json_object_object_add(root, "memory_written_bytes",
                               has_memory ? number(v[QTY_WRITTEN_BYTES]) : NULL);
        traffic = v[QTY_READ_BYTES] + v[QTY_WRITTEN_BYTES];
        json_object_object_add(root, "memory_bandwidth_mbytes_per_second",
                               has_memory ? number(1e-6 * ratio(traffic, seconds)) : NULL);
        /* a domain the CPU model lacks adds nothing (AMD: package only) */
        energy = (m->counted[QTY_PACKAGE_JOULES] ? v[QTY_PACKAGE_JOULES] : 0) +
                 (m->counted[QTY_DRAM_JOULES] ? v[QTY_DRAM_JOULES] : 0);
        json_object_object_add(root, "energy_joules", has_energy ? number(energy) : NULL);
        json_object_object_add(root, "power_watts", has_energy ? number(ratio(energy, seconds)) : NULL);
        json_object_object_add(root, "package_share_estimated", json_object_new_boolean(has_memory ||
                                                                                        has_energy));
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
        if (!text || fputs(text, out) < 0 || fputc('\n', out) < 0)
                r = -EIO;
        json_object_put(root);
        return r;
}

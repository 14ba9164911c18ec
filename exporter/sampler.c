/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: sampling, yielding and resuming
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "events/event-models.h"
#include "macro.h"
#include "sampler.h"

static uint64_t now_monotonic_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

/* Logged once per interval for each format, however often it happens (log-limit.h): a daemon
 * refusing the exporter every sample costs the journal one line a minute, with a count. */
_printf_(2, 3) static void problem(Sampler *s, const char *fmt, ...) {
        char text[sizeof(s->problem)];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        (void) log_limit(&s->log, fmt, text, now_monotonic_usec());
        memcpy(s->problem, text, sizeof(text));
}

static void solved(Sampler *s, const char *what) {
        if (s->problem[0]) {
                (void) log_limit(&s->log, what, what, now_monotonic_usec());
                s->problem[0] = '\0';
        }
}

static double now_unix(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Errors after which the connection is of no use: the daemon went away or speaks nonsense. */
static bool connection_lost(int r) {
        switch (-r) {
        case ECONNRESET:
        case EPIPE:
        case ENOTCONN:
        case ECONNREFUSED:
        case ENOENT:
        case EBADMSG:
        case EPROTO:
        case EMSGSIZE:
        case EPROTONOSUPPORT:
        case ESHUTDOWN:
        case ETIMEDOUT:
                return true;
        default:
                return false;
        }
}

static void end_measure(Sampler *s, bool lease_lost) {
        s->measure = pmugate_measure_close(s->measure);
        /* After a preemption the measurement leaves the CPUs the user did not take leased and
         * programmed; releasing them lets the daemon put their registers back. */
        if (lease_lost && s->connection)
                (void) pmugate_release(s->connection, NULL, 0);
        free(s->measured);
        s->measured = NULL;
        s->n_measured = 0;
        s->poll_interval_ns = 0;
}

static void disconnect(Sampler *s) {
        job_counters_close(&s->jobs, s->connection);
        end_measure(s, false);
        s->connection = pmugate_disconnect(s->connection);
        s->info = pmugate_info_free(s->info);
}

void sampler_done(Sampler *s) {
        disconnect(s);
}

uint64_t sampler_poll_interval(const Sampler *s) {
        return s->poll_interval_ns;
}

static void mark_all(Model *m, CpuReason reason) {
        for (size_t i = 0; i < m->n_cpus; i++)
                m->cpus[i].reason = reason;
}

static int connect_daemon(Sampler *s, Model *m, pthread_mutex_t *lock) {
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_free_ int32_t *sockets = NULL;
        size_t n = 0;
        int r;

        r = pmugate_connect(s->socket_path, &s->connection);
        if (r < 0)
                return r;
        r = pmugate_hello(s->connection, &s->info);
        if (r < 0) {
                s->connection = pmugate_disconnect(s->connection);
                return r;
        }
        if (strcmp(s->info->role, "monitor") != 0 && strcmp(s->info->role, "admin") != 0)
                problem(s,
                        "uid %u has the role '%s', not 'monitor': add it to monitor_users in "
                        "pmugate.conf%s%s",
                        s->info->uid, s->info->role, s->info->rights_reason[0] ? " (" : "",
                        s->info->rights_reason[0] ? s->info->rights_reason : "");
        cpus = calloc(s->info->n_cpus ?: 1, sizeof(uint32_t));
        sockets = calloc(s->info->n_cpus ?: 1, sizeof(int32_t));
        if (!cpus || !sockets)
                return -ENOMEM;
        for (size_t i = 0; i < s->info->n_cpus; i++) {
                cpus[n] = s->info->cpus[i].cpu;
                sockets[n++] = s->info->cpus[i].online ? s->info->cpus[i].package : -1;
        }
        pthread_mutex_lock(lock);
        r = model_set_cpus(m, cpus, sockets, n);
        (void) snprintf(m->model_key, sizeof(m->model_key), "%s", s->info->model_key);
        (void) snprintf(m->backend, sizeof(m->backend), "%s", s->info->backend);
        m->topdown = topdown_tree_for_vendor(s->info->vendor);
        pthread_mutex_unlock(lock);
        /* Events beyond pmugate's own table (FP_ARITH_INST_RETIRED) resolve through libpfm4,
         * which knows the host's PMU only: name the daemon's model instead, as the pmugate
         * command does, unless the admin chose one. Set before the first measurement resolves
         * a name (libpfm4 reads it once); nothing else in the exporter reads the environment. */
        if (s->info->model_key[0])
                (void) setenv("LIBPFM_FORCE_PMU", event_libpfm_pmu(s->info->model_key) ?: s->info->model_key, 0);
        return r;
}

/* The floating-point events the exporter counts, each weighted by the operations one of it
 * stands for: Intel's FP_ARITH_INST_RETIRED by its lanes as client/groups/FLOPS_DP.conf and
 * FLOPS_SP.conf weigh them, Sierra Forest's FP_FLOPS_RETIRED (client/groups/srf/), AMD's
 * fp_ret_sse_avx_ops.all (client/groups/zen4/, zen5/) and Grace's FP_*_OPS_SPEC
 * (client/groups/grace/FLOPS.conf). A model has one family or none. */
static const struct FpEvent {
        const char *name;
        unsigned quantity;
        double weight;
} fp_events[] = {
        { "FP_ARITH_INST_RETIRED.SCALAR_DOUBLE", QTY_FLOPS_DOUBLE, 1 },
        { "FP_ARITH_INST_RETIRED.128B_PACKED_DOUBLE", QTY_FLOPS_DOUBLE, 2 },
        { "FP_ARITH_INST_RETIRED.256B_PACKED_DOUBLE", QTY_FLOPS_DOUBLE, 4 },
        { "FP_ARITH_INST_RETIRED.512B_PACKED_DOUBLE", QTY_FLOPS_DOUBLE, 8 },
        { "FP_ARITH_INST_RETIRED.SCALAR_SINGLE", QTY_FLOPS_SINGLE, 1 },
        { "FP_ARITH_INST_RETIRED.128B_PACKED_SINGLE", QTY_FLOPS_SINGLE, 4 },
        { "FP_ARITH_INST_RETIRED.256B_PACKED_SINGLE", QTY_FLOPS_SINGLE, 8 },
        { "FP_ARITH_INST_RETIRED.512B_PACKED_SINGLE", QTY_FLOPS_SINGLE, 16 },
        { "FP_FLOPS_RETIRED.FP64", QTY_FLOPS_DOUBLE, 1 },
        { "FP_FLOPS_RETIRED.FP32", QTY_FLOPS_SINGLE, 1 },
        { "fp_ret_sse_avx_ops.all", QTY_FLOPS_ALL, 1 },
        { "FP_FIXED_OPS_SPEC", QTY_FLOPS_ALL, 1 },
        { "FP_SCALE_OPS_SPEC", QTY_FLOPS_ALL, 1 },
};

/* The lists of them open_measure() tries, one family each, the first that opens wins. */
static const char *const fp_event_lists[] = {
        "FP_ARITH_INST_RETIRED.SCALAR_DOUBLE,FP_ARITH_INST_RETIRED.128B_PACKED_DOUBLE,"
        "FP_ARITH_INST_RETIRED.256B_PACKED_DOUBLE,FP_ARITH_INST_RETIRED.512B_PACKED_DOUBLE,"
        "FP_ARITH_INST_RETIRED.SCALAR_SINGLE,FP_ARITH_INST_RETIRED.128B_PACKED_SINGLE,"
        "FP_ARITH_INST_RETIRED.256B_PACKED_SINGLE,FP_ARITH_INST_RETIRED.512B_PACKED_SINGLE",
        "FP_FLOPS_RETIRED.FP64,FP_FLOPS_RETIRED.FP32",
        "fp_ret_sse_avx_ops.all",
        "FP_FIXED_OPS_SPEC,FP_SCALE_OPS_SPEC",
};

typedef struct Indexes {
        int instructions, cycles, slots;
        int nodes[TOPDOWN_NODES];
        int fp[ELEMENTSOF(fp_events)];
        int cas_read, cas_write, energy_package, energy_dram;
} Indexes;

/* The first of names the result has as an event, or -ENOENT. Intel's names and AMD's (perf's
 * amdzen4/amdzen5 ones, as the Zen groups use them): a model has one or the other. */
static int event_index(const pmugate_result *res, const char *const *names, size_t n) {
        int r = -ENOENT;

        for (size_t i = 0; i < n && names[i] && r < 0; i++)
                r = pmugate_result_event_index(res, names[i]);
        return r;
}

static void find_indexes(const pmugate_result *res, const TopdownTree *tree, Indexes *ret) {
        static const char *const instructions[] = { "INST_RETIRED.ANY", "ex_ret_instr" };
        static const char *const cycles[] = { "CPU_CLK_UNHALTED.THREAD", "ls_not_halted_cyc" };
        /* on AMD the data fabric's DRAM data beats, 64 bytes each like a CAS */
        static const char *const reads[] = { "UNC_M_CAS_COUNT.RD", "local_or_remote_socket_read_data_beats_dram" };
        static const char *const writes[] = { "UNC_M_CAS_COUNT.WR",
                                              "local_or_remote_socket_write_data_beats_dram" };

        ret->instructions = event_index(res, instructions, ELEMENTSOF(instructions));
        ret->cycles = event_index(res, cycles, ELEMENTSOF(cycles));
        ret->slots = pmugate_result_event_index(res, "TOPDOWN.SLOTS");
        ret->cas_read = event_index(res, reads, ELEMENTSOF(reads));
        ret->cas_write = event_index(res, writes, ELEMENTSOF(writes));
        ret->energy_package = pmugate_result_event_index(res, "PWR_PKG_ENERGY");
        ret->energy_dram = pmugate_result_event_index(res, "PWR_DRAM_ENERGY");
        for (size_t i = 0; i < ELEMENTSOF(fp_events); i++)
                ret->fp[i] = pmugate_result_event_index(res, fp_events[i].name);
        for (unsigned k = 0; k < TOPDOWN_NODES; k++) {
                const TopdownNode *node = &tree->nodes[k];

                ret->nodes[k] = -ENOENT;
                for (size_t i = 0; k < tree->n_nodes && i < ELEMENTSOF(node->metrics) && node->metrics[i] &&
                                   ret->nodes[k] < 0;
                     i++)
                        ret->nodes[k] = pmugate_result_metric_index(res, node->metrics[i]);
        }
}

/* Says once per measurement which quantities it cannot count on this CPU model: their series
 * are absent, and pmugate_exporter_quantity_counted is 0 for them. */
static void log_uncounted(Sampler *s, const TopdownTree *tree, const Indexes *ix) {
        char text[400];
        size_t len, head;
        bool all_l1 = true, flops = false;

        if (s->uncounted_logged)
                return;
        s->uncounted_logged = true;
        for (unsigned k = 0; k < tree->n_nodes; k++)
                if (tree->nodes[k].level == 1 && ix->nodes[k] < 0)
                        all_l1 = false;
        len = head = (size_t) snprintf(text, sizeof(text), "%s: not counted on this CPU model (no series):",
                                       s->info->model_key[0] ? s->info->model_key : "unknown model");
        if (ix->instructions < 0)
                len += (size_t) snprintf(text + len, sizeof(text) - len, " instructions");
        if (len < sizeof(text) && ix->cycles < 0)
                len += (size_t) snprintf(text + len, sizeof(text) - len, " cycles");
        if (len < sizeof(text) && (!all_l1 || (ix->slots < 0 && (ix->cycles < 0 || s->info->slots_width == 0))))
                len += (size_t) snprintf(text + len, sizeof(text) - len, " topdown");
        for (size_t i = 0; i < ELEMENTSOF(fp_events); i++)
                flops = flops || ix->fp[i] >= 0;
        if (len < sizeof(text) && !flops)
                len += (size_t) snprintf(text + len, sizeof(text) - len, " flops");
        if (len < sizeof(text) && (ix->cas_read < 0 || ix->cas_write < 0))
                len += (size_t) snprintf(text + len, sizeof(text) - len, " memory_traffic");
        if (len < sizeof(text) && ix->energy_package < 0)
                len += (size_t) snprintf(text + len, sizeof(text) - len, " package_energy");
        if (len < sizeof(text) && ix->energy_dram < 0)
                len += (size_t) snprintf(text + len, sizeof(text) - len, " dram_energy");
        if (len > head)
                (void) log_limit(&s->log, "uncounted", text, now_monotonic_usec());
}

/* What one CPU counted in the interval, as the model's quantities; NaN for what the
 * measurement has no event or metric for (never counted), 0 for what it has but saw nothing of
 * in this interval. */
static void interval_deltas(const Sampler *s, const pmugate_result *res, const TopdownTree *tree,
                            const Indexes *ix, const pmugate_values *v, double delta[QTY_MAX]) {
        double slots = NAN;
        bool shares = true;

        for (unsigned q = 0; q < QTY_MAX; q++)
                delta[q] = NAN;
        if (ix->instructions >= 0)
                delta[QTY_INSTRUCTIONS] = v->counts[ix->instructions];
        if (ix->cycles >= 0)
                delta[QTY_CYCLES] = v->counts[ix->cycles];
        if (ix->slots >= 0)
                slots = v->counts[ix->slots];
        else if (ix->cycles >= 0 && s->info->slots_width > 0)
                slots = (double) s->info->slots_width * v->counts[ix->cycles];
        delta[QTY_MONITORED_SECONDS] = res->elapsed;
        /* A precision's FLOPs are the weighted sum of all its events: one of them not counted
         * in the interval (NaN) leaves the precision unknown for it, never short. */
        for (size_t i = 0; i < ELEMENTSOF(fp_events); i++)
                if (ix->fp[i] >= 0)
                        delta[fp_events[i].quantity] = 0;
        for (size_t i = 0; i < ELEMENTSOF(fp_events); i++)
                if (ix->fp[i] >= 0)
                        delta[fp_events[i].quantity] += fp_events[i].weight * v->counts[ix->fp[i]];
        /* Without slots or a level-1 class the tree is not counted at all. */
        if (ix->slots < 0 && !(ix->cycles >= 0 && s->info->slots_width > 0))
                return;
        for (unsigned k = 0; k < tree->n_nodes; k++)
                if (tree->nodes[k].level == 1 && ix->nodes[k] < 0)
                        return;
        /* Slots count only with their shares, so rate(category) / rate(slots) stays a fraction. */
        for (unsigned k = 0; k < tree->n_nodes; k++)
                if (tree->nodes[k].level == 1 && !isfinite(v->metrics[ix->nodes[k]]))
                        shares = false;
        if (!shares || !(slots > 0))
                slots = 0;
        delta[QTY_SLOTS] = slots;
        for (unsigned k = 0; k < tree->n_nodes; k++) {
                double f;

                if (ix->nodes[k] < 0)
                        continue;
                f = slots > 0 ? v->metrics[ix->nodes[k]] : 0;
                if (!isfinite(f))
                        f = 0;
                f = f < 0 ? 0 : f > 1 ? 1 : f;
                delta[QTY_TOPDOWN_FIRST + k] = f * slots;
        }
}

static double event_count(const pmugate_values *v, int index) {
        return index >= 0 ? v->counts[index] : NAN;
}

/* A socket's memory traffic and energy in the interval; what the daemon withholds is NaN. */
static void package_deltas(const Indexes *ix, const pmugate_values *v, double delta[QTY_MAX]) {
        for (unsigned q = 0; q < QTY_MAX; q++)
                delta[q] = NAN;
        delta[QTY_READ_BYTES] = 64 * event_count(v, ix->cas_read);
        delta[QTY_WRITTEN_BYTES] = 64 * event_count(v, ix->cas_write);
        delta[QTY_PACKAGE_JOULES] = event_count(v, ix->energy_package);
        delta[QTY_DRAM_JOULES] = event_count(v, ix->energy_dram);
}

static int accumulate(Sampler *s, Model *m, pthread_mutex_t *lock) {
        _cleanup_free_ double *cycles = NULL;
        const TopdownTree *tree = topdown_tree_for_vendor(s->info->vendor);
        pmugate_result *res = NULL;
        Indexes ix;
        int r;

        r = pmugate_measure_read(s->measure, PMUGATE_SPAN_INTERVAL, &res);
        if (r < 0)
                return r;
        find_indexes(res, tree, &ix);
        log_uncounted(s, tree, &ix);
        pthread_mutex_lock(lock);
        cycles = calloc(m->n_cpus ?: 1, sizeof(double));
        for (size_t i = 0; i < res->n_cpus; i++) {
                const CpuTotals *c = model_cpu(m, res->cpus[i].cpu);
                double delta[QTY_MAX];

                interval_deltas(s, res, tree, &ix, &res->cpus[i], delta);
                model_add(m, res->cpus[i].cpu, delta);
                if (cycles && c)
                        cycles[c - m->cpus] = delta[QTY_CYCLES];
        }
        for (size_t i = 0; cycles && i < res->n_packages; i++) {
                double delta[QTY_MAX];

                package_deltas(&ix, &res->packages[i], delta);
                model_add_package(m, res->packages[i].package, delta, cycles);
        }
        pthread_mutex_unlock(lock);
        pmugate_result_free(res);
        return 0;
}

/* TopDown at the level wanted (or 1 where the model has no level 2), with instructions and
 * cycles added where the recipe lacks them, and memory traffic and energy per socket where the
 * model has them: the first list of extra events that opens wins. Intel's event names, or
 * AMD's, whose package events are the data fabric's DRAM data beats (memory traffic, where the
 * daemon serves the data fabric's counters) and the package's RAPL energy. */
static int open_measure(Sampler *s, const uint32_t *cpus, size_t n) {
#define PACKAGE_EVENTS "UNC_M_CAS_COUNT.RD,UNC_M_CAS_COUNT.WR,PWR_PKG_ENERGY,PWR_DRAM_ENERGY"
#define AMD_DRAM_BEATS "local_or_remote_socket_read_data_beats_dram,local_or_remote_socket_write_data_beats_dram"
        static const char *const intel_extras[] = {
                "INST_RETIRED.ANY,CPU_CLK_UNHALTED.THREAD," PACKAGE_EVENTS,
                "INST_RETIRED.ANY," PACKAGE_EVENTS,
                "CPU_CLK_UNHALTED.THREAD," PACKAGE_EVENTS,
                PACKAGE_EVENTS,
                "INST_RETIRED.ANY,CPU_CLK_UNHALTED.THREAD",
                "INST_RETIRED.ANY",
                "CPU_CLK_UNHALTED.THREAD",
                NULL,
        };
#undef PACKAGE_EVENTS
        /* the Zen TopDown groups count ls_not_halted_cyc already (an event twice is refused) */
        static const char *const amd_extras[] = {
                "ex_ret_instr," AMD_DRAM_BEATS ",PWR_PKG_ENERGY",
                "ex_ret_instr,PWR_PKG_ENERGY",
                "ex_ret_instr,ls_not_halted_cyc,PWR_PKG_ENERGY",
                "ex_ret_instr",
                "ex_ret_instr,ls_not_halted_cyc",
                "PWR_PKG_ENERGY",
                NULL,
        };
#undef AMD_DRAM_BEATS
        bool amd = topdown_tree_for_vendor(s->info->vendor) == &topdown_tree_amd;
        const char *const *extras = amd ? amd_extras : intel_extras;
        size_t n_extras = amd ? ELEMENTSOF(amd_extras) : ELEMENTSOF(intel_extras);
        char reason[400] = "", group[32];
        pmugate_measure *probe = NULL;
        unsigned level = s->level;
        int r;

        r = pmugate_measure_open_topdown(s->connection, level, cpus, n, 0, &probe, reason, sizeof(reason));
        if (r == -EOPNOTSUPP && level > 1) {
                level = 1;
                r = pmugate_measure_open_topdown(s->connection, level, cpus, n, 0, &probe, reason,
                                                 sizeof(reason));
        }
        probe = pmugate_measure_close(probe);
        if (r < 0) {
                problem(s, "cannot measure TopDown: %s", reason[0] ? reason : pmugate_strerror(r));
                return r;
        }
        (void) snprintf(group, sizeof(group), "topdown-l%u", level);
        /* The floating-point events join each list of extras, the model's family of them first
         * and none last; where they do not fit on the counters beside TopDown the events take
         * turns (pmugate_measure_event_sets()) rather than leave TopDown out. A family whose
         * names the model does not know (-ENOENT, alone) is not tried with every list. The
         * lists are this file's: the longest joined is under 500 bytes. */
        r = -ENOENT;
        for (size_t f = 0; f <= ELEMENTSOF(fp_event_lists) && !s->measure; f++) {
                const char *fp = f < ELEMENTSOF(fp_event_lists) ? fp_event_lists[f] : NULL;

                if (fp) {
                        char ignored[PMUGATE_REASON_MAX];

                        r = pmugate_measure_open_group(s->connection, group, fp, cpus, n, 0, &probe, ignored,
                                                       sizeof(ignored));
                        probe = pmugate_measure_close(probe);
                        if (r == -ENOENT)
                                continue;
                }
                for (size_t i = 0; i < n_extras && !s->measure; i++) {
                        char events[1024];

                        if (fp && extras[i])
                                (void) snprintf(events, sizeof(events), "%s,%s", extras[i], fp);
                        else
                                (void) snprintf(events, sizeof(events), "%s", fp ?: extras[i] ?: "");
                        r = pmugate_measure_open_group(s->connection, group, events[0] ? events : NULL, cpus, n,
                                                       0, &s->measure, reason, sizeof(reason));
                        if (r < 0)
                                s->measure = NULL;
                }
        }
        if (r < 0) {
                problem(s, "cannot measure TopDown: %s", reason[0] ? reason : pmugate_strerror(r));
                return r;
        }
        /* Event sets that take turns (TopDown beside the FLOP and package events) turn once
         * per interval, not every 100 ms as an interactive measurement does: each turn is a
         * read of every CPU through the daemon, which at 4096 CPUs and ten turns a second cost
         * the exporter and the daemon a fifth of a CPU each. The exporter's counters add up
         * over minutes, so a slower turn loses no precision that matters here. */
        if (pmugate_measure_event_sets(s->measure) > 1 && s->interval_ns > 0)
                (void) pmugate_measure_set_rotate_period(
                        s->measure, MAX(s->interval_ns / pmugate_measure_event_sets(s->measure),
                                        (uint64_t) PMUGATE_EXPORTER_ROTATE_MIN_NS));
        r = pmugate_measure_start(s->measure);
        if (r < 0) {
                const char *why = pmugate_last_error(s->connection)->reason;

                if (!why[0])
                        why = pmugate_measure_last_reason(s->measure);
                problem(s, "cannot start measuring CPUs: %s%s%s", pmugate_strerror(r), why[0] ? ": " : "",
                        why);
                s->measure = pmugate_measure_close(s->measure);
                (void) pmugate_release(s->connection, NULL, 0);
                return r;
        }
        s->measured = malloc(n * sizeof(uint32_t));
        if (!s->measured) {
                end_measure(s, false);
                return -ENOMEM;
        }
        memcpy(s->measured, cpus, n * sizeof(uint32_t));
        s->n_measured = n;
        s->measured_level = level;
        s->uncounted_logged = false;
        s->pending_samples = 0;
        s->poll_interval_ns = pmugate_measure_poll_interval(s->measure);
        return 0;
}

/* Per CPU of the model (by its index): the role leasing it (NULL for none) and whether this
 * exporter's measurement has it, so the step stays linear in the CPUs. */
typedef struct CpuFacts {
        const char *role;
        bool measured;
} CpuFacts;

static CpuFacts *cpu_facts(const Sampler *s, Model *m, const pmugate_jobmap *jm) {
        CpuFacts *f = calloc(m->n_cpus ?: 1, sizeof(CpuFacts));

        if (!f)
                return NULL;
        for (size_t i = 0; jm && i < jm->n_leases; i++) {
                const CpuTotals *c = model_cpu(m, jm->leases[i].cpu);

                if (c)
                        f[c - m->cpus].role = jm->leases[i].role;
        }
        for (size_t i = 0; i < s->n_measured; i++) {
                const CpuTotals *c = model_cpu(m, s->measured[i]);

                if (c)
                        f[c - m->cpus].measured = true;
        }
        return f;
}

/* Jobs are counted by their cgroups where the daemon counts through perf in job mode; on an
 * MSR node a job's series are the counts of the CPUs it holds. */
static bool counts_jobs_by_cgroup(const Sampler *s) {
        return s->info && pmugate_info_counts_via_perf(s->info) && strcmp(s->info->mode, "job") == 0;
}

static int apply_jobmap(Model *m, const pmugate_jobmap *jm, time_t now) {
        _cleanup_free_ const char **jobs = NULL;
        _cleanup_free_ uint32_t *cpus = NULL, *uids = NULL;
        _cleanup_free_ bool *has_uid = NULL;
        size_t n = jm ? jm->n_cpus : 0;

        jobs = calloc(n ?: 1, sizeof(char *));
        cpus = calloc(n ?: 1, sizeof(uint32_t));
        uids = calloc(n ?: 1, sizeof(uint32_t));
        has_uid = calloc(n ?: 1, sizeof(bool));
        if (!jobs || !cpus || !uids || !has_uid)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                cpus[i] = jm->cpus[i].cpu;
                jobs[i] = jm->jobs[jm->cpus[i].job];
                has_uid[i] = jm->uids != NULL;
                uids[i] = jm->uids ? jm->uids[jm->cpus[i].job] : 0;
        }
        return model_set_jobs(m, cpus, jobs, has_uid, uids, n, now);
}

void sampler_step(Sampler *s, Model *m, pthread_mutex_t *lock) {
        pmugate_jobmap *jm = NULL;
        _cleanup_free_ uint32_t *wanted = NULL;
        _cleanup_free_ CpuFacts *facts = NULL;
        size_t n_wanted = 0;
        bool changed = false, sampled = false, failed = false;
        time_t now = time(NULL);
        int r;

        log_limit_flush(&s->log, now_monotonic_usec());
        if (!s->connection) {
                r = connect_daemon(s, m, lock);
                if (r < 0) {
                        problem(s, "cannot reach pmugated (%s); retrying every period", pmugate_strerror(r));
                        pthread_mutex_lock(lock);
                        m->daemon_up = false;
                        mark_all(m, CPU_DAEMON_UNAVAILABLE);
                        m->sample_errors++;
                        pthread_mutex_unlock(lock);
                        return;
                }
        }

        /* The interval just ended ran under the job map read last period. */
        if (s->measure) {
                r = pmugate_measure_sample(s->measure);
                if (r == -ECANCELED || r == -EKEYREVOKED) {
                        const char *why = pmugate_last_error(s->connection)->reason;

                        /* on the perf path the engine keeps the daemon's words */
                        if (!why[0])
                                why = pmugate_measure_last_reason(s->measure);
                        problem(s, "yielding: %s", why[0] ? why : pmugate_strerror(r));
                        end_measure(s, true);
                        changed = true;
                        failed = true;
                } else if (r < 0 && connection_lost(r)) {
                        problem(s, "lost pmugated (%s); reconnecting", pmugate_strerror(r));
                        disconnect(s);
                        pthread_mutex_lock(lock);
                        m->daemon_up = false;
                        mark_all(m, CPU_DAEMON_UNAVAILABLE);
                        m->sample_errors++;
                        pthread_mutex_unlock(lock);
                        return;
                } else {
                        /* Where the events take turns (AMD's level 2 and the instructions: three
                         * sets on six counters), an interval of fewer samples than sets lacks
                         * some events, and every metric needing them: the totals move once every
                         * set had its turn, by the counts scaled to the whole interval. A failed
                         * op on one CPU (an offline CPU) leaves the others counted. */
                        if (++s->pending_samples >= pmugate_measure_event_sets(s->measure)) {
                                sampled = accumulate(s, m, lock) == 0;
                                s->pending_samples = 0;
                        }
                        failed = r < 0;
                }
        }
        r = job_counters_read(&s->jobs, s->connection, m, lock);
        if (r < 0 && connection_lost(r)) {
                problem(s, "lost pmugated (%s); reconnecting", pmugate_strerror(r));
                disconnect(s);
                pthread_mutex_lock(lock);
                m->daemon_up = false;
                mark_all(m, CPU_DAEMON_UNAVAILABLE);
                m->sample_errors++;
                pthread_mutex_unlock(lock);
                return;
        }

        r = pmugate_jobmap_get(s->connection, &jm);
        if (r < 0 && connection_lost(r)) {
                problem(s, "lost pmugated (%s); reconnecting", pmugate_strerror(r));
                disconnect(s);
                pthread_mutex_lock(lock);
                m->daemon_up = false;
                mark_all(m, CPU_DAEMON_UNAVAILABLE);
                pthread_mutex_unlock(lock);
                return;
        }
        if (r < 0)
                problem(s, "no job map (%s): series carry no job label",
                        pmugate_last_error(s->connection)->reason);

        wanted = calloc(s->info->n_cpus ?: 1, sizeof(uint32_t));
        pthread_mutex_lock(lock);
        if (jm)
                (void) apply_jobmap(m, jm, now);
        facts = cpu_facts(s, m, jm);
        for (size_t i = 0; wanted && facts && i < s->info->n_cpus; i++) {
                const pmugate_cpu *cpu = &s->info->cpus[i];
                CpuTotals *c = model_cpu(m, cpu->cpu);
                const CpuFacts *fact = c ? &facts[c - m->cpus] : &(CpuFacts) {};
                CpuReason reason = CPU_STARTING;

                if (!cpu->online)
                        reason = CPU_OFFLINE;
                else if (fact->role && strcmp(fact->role, "monitor") != 0)
                        reason = CPU_USER_LEASE;
                else if (fact->role && !fact->measured)
                        reason = CPU_OTHER_MONITOR;
                else {
                        wanted[n_wanted++] = cpu->cpu;
                        if (s->measure && fact->measured)
                                reason = CPU_MONITORED;
                        else if (c && c->reason == CPU_REFUSED)
                                reason = CPU_REFUSED;
                }
                if (c)
                        c->reason = reason;
        }
        m->daemon_up = true;
        pthread_mutex_unlock(lock);
        if (counts_jobs_by_cgroup(s)) {
                char why[400] = "";

                if (job_counters_update(&s->jobs, s->connection, jm, m, lock, why, sizeof(why)) > 0)
                        problem(s, "counting a job by its CPUs, not its cgroup: %s", why);
        }
        jm = pmugate_jobmap_free(jm);
        if (!wanted || !facts)
                return;

        /* Yield CPUs a user took, take back those that are free again. */
        if (s->measure &&
            (n_wanted != s->n_measured || memcmp(wanted, s->measured, n_wanted * sizeof(uint32_t)))) {
                r = pmugate_measure_stop(s->measure);
                if (r == 0)
                        (void) accumulate(s, m, lock);
                end_measure(s, r == -ECANCELED || r == -EKEYREVOKED);
                changed = true;
        }
        if (!s->measure && n_wanted > 0) {
                r = open_measure(s, wanted, n_wanted);
                pthread_mutex_lock(lock);
                for (size_t i = 0; i < n_wanted; i++) {
                        CpuTotals *c = model_cpu(m, wanted[i]);

                        if (c)
                                c->reason = r == 0        ? CPU_MONITORED
                                            : r == -EBUSY ? CPU_STARTING
                                                          : CPU_REFUSED;
                }
                if (r == 0) {
                        m->restarts++;
                        m->topdown_level = s->measured_level;
                }
                pthread_mutex_unlock(lock);
                if (r == 0)
                        solved(s, changed ? "measuring again" : "measuring");
        }

        pthread_mutex_lock(lock);
        if (sampled) {
                m->samples++;
                m->last_sample = now_unix();
        }
        if (failed)
                m->sample_errors++;
        pthread_mutex_unlock(lock);
}

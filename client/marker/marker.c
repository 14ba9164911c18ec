/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Markers: per-thread region timing and counter differences, one read of the calling
 * thread's CPU per start and per stop, or of the thread's own perf events
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpulist.h"
#include "macro.h"
#include "marker/marker-state.h"
#include "pmugate-limits.h"

static _Thread_local MarkerThread *self;
static _Thread_local char last_reason[MARKER_ERROR_TEXT_MAX];

static uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

/* Remembers a misuse for the runner's report (counted, once per text) and for
 * pmugate_marker_last_reason(). */
_printf_(2, 3)
static int misuse(int error, const char *format, ...) {
        MarkerGlobal *g = &marker_global;
        va_list ap;
        size_t i;

        va_start(ap, format);
        (void) vsnprintf(last_reason, sizeof(last_reason), format, ap);
        va_end(ap);
        (void) pthread_mutex_lock(&g->lock);
        for (i = 0; i < g->n_errors; i++)
                if (strcmp(g->errors[i].text, last_reason) == 0)
                        break;
        if (i == g->n_errors && g->n_errors < MARKER_ERRORS_MAX) {
                (void) snprintf(g->errors[i].text, sizeof(g->errors[i].text), "%s", last_reason);
                g->n_errors++;
        }
        if (i < g->n_errors)
                g->errors[i].count++;
        else
                g->errors_dropped++;
        (void) pthread_mutex_unlock(&g->lock);
        return error;
}

static uint64_t name_hash(const char *name) {
        uint64_t h = UINT64_C(14695981039346656037);

        for (; *name; name++)
                h = (h ^ (unsigned char) *name) * UINT64_C(1099511628211);
        return h;
}

static int region_find(const char *name, uint64_t hash) {
        size_t n = atomic_load_explicit(&marker_global.n_regions, memory_order_acquire);

        for (size_t i = 0; i < n; i++)
                if (marker_global.regions[i].hash == hash &&
                    strcmp(marker_global.regions[i].name, name) == 0)
                        return (int) i;
        return -ENOENT;
}

/* Finds or declares a region; regions are only ever added, so lookups need no lock. */
static int region_get(const char *name, unsigned flags) {
        MarkerGlobal *g = &marker_global;
        uint64_t hash;
        size_t n;
        int id;

        if (!marker_name_valid(name))
                return misuse(-EINVAL, "region name '%.*s' is not 1 to %u printable characters without "
                              "white space", (int) PMUGATE_MARKER_NAME_MAX, name ?: "(null)",
                              PMUGATE_MARKER_NAME_MAX);
        hash = name_hash(name);
        id = region_find(name, hash);
        if (id >= 0 && (__atomic_load_n(&g->regions[id].flags, __ATOMIC_RELAXED) & flags) == flags)
                return id;
        (void) pthread_mutex_lock(&g->lock);
        id = region_find(name, hash);
        if (id >= 0) {
                (void) __atomic_fetch_or(&g->regions[id].flags, flags, __ATOMIC_RELAXED);
                (void) pthread_mutex_unlock(&g->lock);
                return id;
        }
        n = atomic_load_explicit(&g->n_regions, memory_order_relaxed);
        if (n >= PMUGATE_MARKER_REGIONS_MAX) {
                (void) pthread_mutex_unlock(&g->lock);
                return misuse(-E2BIG, "too many regions: '%s' would be region %u, at most %u are measured",
                              name, (unsigned) n + 1, PMUGATE_MARKER_REGIONS_MAX);
        }
        (void) snprintf(g->regions[n].name, sizeof(g->regions[n].name), "%s", name);
        g->regions[n].hash = hash;
        g->regions[n].flags = flags;
        atomic_store_explicit(&g->n_regions, n + 1, memory_order_release);
        (void) pthread_mutex_unlock(&g->lock);
        return (int) n;
}

/* The calling thread's state, made on its first use. */
static int thread_get(MarkerThread **ret) {
        MarkerGlobal *g = &marker_global;
        MarkerThread *t;

        if (self) {
                *ret = self;
                return 0;
        }
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->cached_cpu = UINT32_MAX;
        (void) pthread_mutex_lock(&g->lock);
        if (g->n_threads >= PMUGATE_MARKER_THREADS_MAX) {
                (void) pthread_mutex_unlock(&g->lock);
                free(t);
                return misuse(-E2BIG, "too many threads use markers: at most %u are measured",
                              PMUGATE_MARKER_THREADS_MAX);
        }
        t->index = (uint32_t) g->n_threads;
        g->threads[g->n_threads++] = t;
        (void) pthread_mutex_unlock(&g->lock);
        self = t;
        *ret = t;
        return 0;
}

static int thread_stats(MarkerThread *t, int region, MarkerStats **ret) {
        if ((size_t) region >= t->n_stats) {
                size_t n = (size_t) region + 1 < 16 ? 16 : ((size_t) region + 1) * 2;
                MarkerStats *s;

                if (n > PMUGATE_MARKER_REGIONS_MAX)
                        n = PMUGATE_MARKER_REGIONS_MAX;
                s = realloc(t->stats, n * sizeof(*s));
                if (!s)
                        return -ENOMEM;
                memset(s + t->n_stats, 0, (n - t->n_stats) * sizeof(*s));
                for (size_t i = t->n_stats; i < n; i++)
                        s[i].cpu = MARKER_CPU_UNSET;
                t->stats = s;
                t->n_stats = n;
        }
        *ret = &t->stats[region];
        return 0;
}

static bool cpu_measured(uint32_t cpu) {
        const MarkerGlobal *g = &marker_global;

        return cpu < g->cpus_bits && (g->cpus[cpu / 64] & (UINT64_C(1) << (cpu % 64)));
}

/* The values one start or stop keeps: counters as read, and the slots of each PERF_METRICS
 * field so far: what the runner published for the time before its last reset of SLOTS and
 * PERF_METRICS, plus SLOTS times the field since. */
static void to_snapshot(const uint64_t *raw, const MarkerSharedCpu *base, int64_t *snapshot) {
        const MarkerGlobal *g = &marker_global;

        for (size_t i = 0; i < g->n_regs; i++)
                snapshot[i] = (int64_t) (raw[i] & g->counter_mask);
        if (g->metrics_reg >= 0 && g->slots_reg >= 0) {
                uint64_t slots = raw[g->slots_reg] & g->counter_mask, metrics = raw[g->metrics_reg];

                snapshot[g->slots_reg] = (int64_t) (slots + base->slots);
                for (unsigned f = 0; f < MARKER_METRICS_FIELDS; f++) {
                        uint64_t byte = (metrics >> (8 * f)) & 0xFF;

                        snapshot[g->n_regs + f] = (int64_t) (base->fields[f] +
                                                             ((unsigned __int128) slots * byte) / 0xFF);
                }
        }
}

/* The CPU the thread runs on, if its counters run. */
static int current_cpu(MarkerThread *t, uint32_t *ret_cpu) {
        int cpu = sched_getcpu();

        if (cpu < 0)
                return misuse(-errno, "sched_getcpu() failed: %s", strerror(errno));
        if (!cpu_measured((uint32_t) cpu))
                return misuse(-ENXIO, "thread %u runs on CPU %d, whose counters pmugate does not run",
                              t->index, cpu);
        *ret_cpu = (uint32_t) cpu;
        return 0;
}

/* Reads the counters of cpu: with RDPMC (-EAGAIN when the thread moved to another CPU), or
 * in one round trip to the daemon. The counters are read one after another without being
 * stopped, so a read the scheduler stretched (far slower than this thread's fastest) has
 * shifted their windows apart by up to its length: with may_retry, it returns 1 to be read
 * again. */
static int read_raw(MarkerThread *t, uint32_t cpu, uint64_t *raw, bool may_retry) {
        MarkerGlobal *g = &marker_global;
        MarkerConnection *mc;
        uint64_t before, took;
        int r;

        if (g->mode == MARKER_READ_RDPMC) {
                unsigned on;

                r = marker_rdpmc_read(g->rdpmc_index, g->n_regs, raw, &on);
                if (r < 0 && r != -EAGAIN)
                        return misuse(r, "reading the counters with RDPMC failed: %s", strerror(-r));
                return r < 0 || on != cpu ? -EAGAIN : 0;
        }
        r = marker_connection_get(t, &mc);
        if (r < 0)
                return misuse(r, "cannot connect to pmugated: %s", pmugate_strerror(r));
        if (!t->batch && (r = pmugate_batch_new(&t->batch)) < 0)
                return r;
        if (t->cached_cpu != cpu) {
                pmugate_batch_clear(t->batch);
                r = pmugate_batch_read_msrs(t->batch, &cpu, 1, g->regs, g->n_regs);
                if (r < 0)
                        return r;
                t->cached_cpu = cpu;
        }
        (void) pthread_mutex_lock(&mc->lock);
        before = now_ns();
        r = pmugate_batch_run(mc->connection, t->batch);
        took = now_ns() - before;
        (void) pthread_mutex_unlock(&mc->lock);
        for (size_t i = 0; r >= 0 && i < g->n_regs; i++)
                r = pmugate_batch_result(t->batch, i, &raw[i]);
        if (r < 0)
                return misuse(r, "reading the counters of CPU %u failed: %s", cpu, pmugate_strerror(r));
        if (t->fastest_read_ns == 0 || took < t->fastest_read_ns)
                t->fastest_read_ns = took;
        if (may_retry && took > MARKER_SLOW_READ_MIN_NS &&
            took > MARKER_SLOW_READ_FACTOR * t->fastest_read_ns)
                return 1;
        return 0;
}

/* Reads the counters of the CPU the thread runs on. Where the runner resets SLOTS and
 * PERF_METRICS, a read that overlapped a reset is done again. */
static int read_counters(MarkerThread *t, int64_t *snapshot, uint32_t *ret_cpu) {
        const MarkerGlobal *g = &marker_global;
        unsigned slow = 0;

        for (unsigned attempt = 0; attempt < MARKER_READ_ATTEMPTS; attempt++) {
                MarkerSharedCpu base = {};
                const MarkerSharedCpu *shared = NULL;
                uint64_t raw[MARKER_REGS_MAX], sequence = 0;
                uint32_t cpu = 0;
                int r;

                r = current_cpu(t, &cpu);
                if (r < 0)
                        return r;
                if (g->shared) {
                        shared = &g->shared->cpus[cpu];
                        sequence = __atomic_load_n(&shared->sequence, __ATOMIC_ACQUIRE);
                        if (sequence & 1) {
                                /* a reset is under way: it takes a round trip */
                                struct timespec wait = { .tv_nsec = MARKER_RESET_WAIT_NS };

                                (void) nanosleep(&wait, NULL);
                                continue;
                        }
                }
                r = read_raw(t, cpu, raw, slow < MARKER_SLOW_READ_RETRIES);
                if (r > 0)
                        slow++;
                if (r > 0 || r == -EAGAIN)
                        continue;
                if (r < 0)
                        return r;
                if (shared) {
                        __atomic_thread_fence(__ATOMIC_ACQUIRE);
                        base.slots = __atomic_load_n(&shared->slots, __ATOMIC_RELAXED);
                        for (unsigned f = 0; f < MARKER_METRICS_FIELDS; f++)
                                base.fields[f] = __atomic_load_n(&shared->fields[f], __ATOMIC_RELAXED);
                        __atomic_thread_fence(__ATOMIC_ACQUIRE);
                        if (__atomic_load_n(&shared->sequence, __ATOMIC_RELAXED) != sequence)
                                continue;
                }
                to_snapshot(raw, &base, snapshot);
                *ret_cpu = cpu;
                return 0;
        }
        return misuse(-EAGAIN, "thread %u could not read its counters: it kept moving between CPUs, or the "
                      "counters kept being reset", t->index);
}

/* Perf read mode: the thread's own events, opened through its connection at its first use;
 * a refusal is kept, so that the region calls after it do not ask the daemon again. */
static int perf_thread_get(MarkerThread *t) {
        MarkerGlobal *g = &marker_global;
        char reason[MARKER_ERROR_TEXT_MAX] = "";
        MarkerConnection *mc;
        int r;

        if (t->perf)
                return 0;
        if (t->perf_error < 0)
                return misuse(t->perf_error, "%s", t->perf_reason);
        r = marker_connection_get(t, &mc);
        if (r < 0)
                return misuse(r, "cannot connect to pmugated: %s", pmugate_strerror(r));
        (void) pthread_mutex_lock(&mc->lock);
        r = marker_perf_thread_open(mc->connection, &g->perf_events, &t->perf, reason, sizeof(reason));
        (void) pthread_mutex_unlock(&mc->lock);
        if (r < 0) {
                t->perf_error = r;
                (void) snprintf(t->perf_reason, sizeof(t->perf_reason),
                                "thread %u could not open its perf events: %s", t->index,
                                reason[0] ? reason : pmugate_strerror(r));
                return misuse(r, "%s", t->perf_reason);
        }
        return 0;
}

/* Perf read mode: every event's count and times. The events count this thread wherever it
 * runs, so a move to another CPU loses nothing; the CPU is read for the report alone. */
static int read_perf(MarkerThread *t, PerfSelfCount *counts, uint32_t *ret_cpu) {
        int cpu, r;

        r = perf_thread_get(t);
        if (r < 0)
                return r;
        r = marker_perf_thread_read(t->perf, counts);
        if (r < 0)
                return misuse(r, "thread %u could not read its perf events: %s", t->index, strerror(-r));
        cpu = sched_getcpu();
        *ret_cpu = cpu < 0 ? UINT32_MAX : (uint32_t) cpu;
        return 0;
}

/* Perf read mode: a call's differences, each scaled as perf scales a multiplexed count. A
 * call in which an event never ran has no count to give: it is dropped and counted as such. */
static void add_perf(MarkerStats *s, const MarkerOpen *o, const PerfSelfCount *counts, uint32_t cpu) {
        const MarkerGlobal *g = &marker_global;
        uint64_t delta[MARKER_REGS_MAX];

        for (size_t c = 0; c < g->perf_events.n_events; c++)
                if (!marker_perf_delta(&o->perf[c], &counts[c], &delta[c])) {
                        s->migrated++;
                        return;
                }
        if (cpu != o->cpu || cpu == UINT32_MAX)
                s->cpu = MARKER_CPU_MIXED;
        else if (s->cpu == MARKER_CPU_UNSET)
                s->cpu = (int64_t) cpu;
        else if (s->cpu != (int64_t) cpu)
                s->cpu = MARKER_CPU_MIXED;
        for (size_t c = 0; c < g->perf_events.n_events; c++)
                s->values[c] += (int64_t) delta[c];
}

int pmugate_marker_start(const char *name) {
        MarkerGlobal *g = &marker_global;
        MarkerThread *t;
        MarkerOpen *o;
        int id, r;

        if (!atomic_load_explicit(&g->active, memory_order_relaxed))
                return 0;
        last_reason[0] = '\0';
        r = thread_get(&t);
        if (r < 0)
                return r;
        id = region_get(name, 0);
        if (id < 0)
                return id;
        for (size_t k = 0; k < t->depth; k++)
                if (t->open[k].region == (uint32_t) id)
                        return misuse(-EALREADY, "thread %u started region '%s' again before stopping it",
                                      t->index, name);
        if (t->depth > 0 && !(g->flags & PMUGATE_MARKER_NESTING) &&
            !(__atomic_load_n(&g->regions[id].flags, __ATOMIC_RELAXED) & PMUGATE_REGION_NESTED))
                return misuse(-EDEADLK, "thread %u started region '%s' inside '%s', but nesting was not "
                              "declared (register it with PMUGATE_REGION_NESTED, or init with "
                              "PMUGATE_MARKER_NESTING)", t->index, name,
                              g->regions[t->open[t->depth - 1].region].name);
        if (t->depth >= PMUGATE_MARKER_DEPTH_MAX)
                return misuse(-E2BIG, "thread %u opened more than %u nested regions", t->index,
                              PMUGATE_MARKER_DEPTH_MAX);
        o = &t->open[t->depth];
        if (g->mode == MARKER_READ_PERF)
                r = read_perf(t, o->perf, &o->cpu);
        else
                r = read_counters(t, o->values, &o->cpu);
        if (r < 0)
                return r;
        o->region = (uint32_t) id;
        o->start_ns = now_ns();
        t->depth++;
        atomic_fetch_add_explicit(&g->regions[id].open_threads, 1, memory_order_relaxed);
        return 0;
}

/* Why a stop of a region the thread has not open is wrong. */
static int stop_without_start(MarkerThread *t, const char *name, int id) {
        MarkerRegion *region = id >= 0 ? &marker_global.regions[id] : NULL;

        if (region && atomic_load_explicit(&region->open_threads, memory_order_relaxed) > 0)
                return misuse(-EXDEV, "thread %u stopped region '%s', which another thread started: a "
                              "region is stopped by the thread that started it", t->index, name);
        return misuse(-ENOENT, "thread %u stopped region '%s' without starting it", t->index, name);
}

int pmugate_marker_stop(const char *name) {
        MarkerGlobal *g = &marker_global;
        int64_t now[MARKER_COLUMNS_MAX];
        PerfSelfCount counts[MARKER_REGS_MAX];
        uint64_t end = now_ns();
        MarkerStats *s;
        MarkerThread *t;
        MarkerOpen *o;
        uint32_t cpu;
        size_t k;
        int id, r;

        if (!atomic_load_explicit(&g->active, memory_order_relaxed))
                return 0;
        last_reason[0] = '\0';
        r = thread_get(&t);
        if (r < 0)
                return r;
        if (!marker_name_valid(name))
                return region_get(name, 0);
        id = region_find(name, name_hash(name));
        for (k = 0; id >= 0 && k < t->depth; k++)
                if (t->open[k].region == (uint32_t) id)
                        break;
        if (id < 0 || k == t->depth)
                return stop_without_start(t, name, id);
        if (k != t->depth - 1)
                return misuse(-EDEADLK, "thread %u stopped region '%s' while '%s', started inside it, is "
                              "still open", t->index, name, g->regions[t->open[t->depth - 1].region].name);
        o = &t->open[k];
        r = thread_stats(t, id, &s);
        if (r < 0)
                return r;
        if (g->mode == MARKER_READ_PERF)
                r = read_perf(t, counts, &cpu);
        else
                r = read_counters(t, now, &cpu);
        /* the region ends either way: a failed read loses this call's counts, not the thread */
        t->depth--;
        atomic_fetch_sub_explicit(&g->regions[id].open_threads, 1, memory_order_relaxed);
        if (r < 0)
                return r;
        s->calls++;
        s->time_ns += end - o->start_ns;
        if (g->mode == MARKER_READ_PERF) {
                add_perf(s, o, counts, cpu);
                return 0;
        }
        if (cpu != o->cpu) {
                s->migrated++;
                return 0;
        }
        if (s->cpu == MARKER_CPU_UNSET)
                s->cpu = (int64_t) cpu;
        else if (s->cpu != (int64_t) cpu)
                s->cpu = MARKER_CPU_MIXED;
        for (size_t c = 0; c < g->n_regs; c++)
                s->values[c] += (int64_t) (((uint64_t) now[c] - (uint64_t) o->values[c]) & g->counter_mask);
        for (size_t c = g->n_regs; c < g->n_columns; c++)
                s->values[c] += now[c] - o->values[c];
        return 0;
}

int pmugate_marker_register(const char *name, unsigned flags) {
        int id;

        last_reason[0] = '\0';
        if (flags & ~PMUGATE_REGION_NESTED)
                return -EINVAL;
        if (!atomic_load_explicit(&marker_global.active, memory_order_relaxed))
                return 0;
        id = region_get(name, flags);
        return id < 0 ? id : 0;
}

int pmugate_marker_thread_init(void) {
        MarkerConnection *mc;
        MarkerThread *t;
        int r;

        last_reason[0] = '\0';
        if (!atomic_load_explicit(&marker_global.active, memory_order_relaxed))
                return 0;
        r = thread_get(&t);
        if (r < 0)
                return r;
        if (marker_global.mode == MARKER_READ_PERF)
                return perf_thread_get(t);
        r = marker_connection_get(t, &mc);
        return r < 0 ? misuse(r, "cannot connect to pmugated: %s", pmugate_strerror(r)) : 0;
}

int pmugate_marker_reset(const char *name) {
        MarkerStats *s;
        MarkerThread *t;
        int id, r;

        last_reason[0] = '\0';
        if (!atomic_load_explicit(&marker_global.active, memory_order_relaxed))
                return 0;
        r = thread_get(&t);
        if (r < 0)
                return r;
        id = region_get(name, 0);
        if (id < 0)
                return id;
        r = thread_stats(t, id, &s);
        if (r < 0)
                return r;
        *s = (MarkerStats) { .cpu = MARKER_CPU_UNSET };
        return 0;
}

int pmugate_marker_get(const char *name, int *inout_n, double *counts, double *ret_seconds, int *ret_calls) {
        const MarkerGlobal *g = &marker_global;
        MarkerStats empty = { .cpu = MARKER_CPU_UNSET }, *s = &empty;
        MarkerThread *t;
        int id, r;

        last_reason[0] = '\0';
        if (!inout_n || *inout_n < 0 || (*inout_n > 0 && !counts))
                return -EINVAL;
        if (!atomic_load_explicit(&g->active, memory_order_relaxed)) {
                *inout_n = 0;
                if (ret_seconds)
                        *ret_seconds = 0.0;
                if (ret_calls)
                        *ret_calls = 0;
                return 0;
        }
        r = thread_get(&t);
        if (r < 0)
                return r;
        id = region_get(name, 0);
        if (id < 0)
                return id;
        if ((size_t) id < t->n_stats)
                s = &t->stats[id];
        for (size_t c = 0; c < g->n_columns && c < (size_t) *inout_n; c++)
                counts[c] = (double) s->values[c];
        *inout_n = (int) g->n_columns;
        if (ret_seconds)
                *ret_seconds = (double) s->time_ns / 1e9;
        if (ret_calls)
                *ret_calls = s->calls > INT32_MAX ? INT32_MAX : (int) s->calls;
        return 0;
}

bool pmugate_marker_active(void) {
        return atomic_load_explicit(&marker_global.active, memory_order_relaxed);
}

const char *pmugate_marker_read_mode(void) {
        return marker_read_mode_name(pmugate_marker_active() ? marker_global.mode : MARKER_READ_OFF);
}

const char *pmugate_marker_last_reason(void) {
        return last_reason;
}

/* Used by marker-init.c when markers are off from then on. */
void marker_forget_thread(void) {
        self = NULL;
}

_printf_(2, 3)
int marker_fail(int error, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(last_reason, sizeof(last_reason), format, ap);
        va_end(ap);
        return error;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Marker state shared by the region bookkeeping (marker.c) and set-up, connections and the
 * results file (marker-init.c)
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "marker/marker-internal.h"
#include "marker/marker-perf.h"
#include "pmugate-limits.h"
#include "pmugate/marker.h"
#include "pmugate/pmugate.h"

/* Connections the threads of a process share: the daemon allows a user few connections, and
 * an OpenMP program may have more threads than that. Thread i uses connection i modulo this. */
#define MARKER_CONNECTIONS_MAX 16U

/* Reads tried before giving up when the thread keeps moving or resets keep coming, and how
 * long to wait for a reset under way. */
#define MARKER_READ_ATTEMPTS 64U
#define MARKER_RESET_WAIT_NS 20000L
/* A round trip longer than both of these (the factor times the thread's fastest) is taken
 * again, at most MARKER_SLOW_READ_RETRIES times per start or stop. */
#define MARKER_SLOW_READ_MIN_NS UINT64_C(100000)
#define MARKER_SLOW_READ_FACTOR 8U
#define MARKER_SLOW_READ_RETRIES 2U

#define MARKER_CPU_UNSET INT64_C(-2)
#define MARKER_CPU_MIXED INT64_C(-1)

typedef struct MarkerRegion {
        char name[PMUGATE_MARKER_NAME_MAX + 1];
        uint64_t hash;
        unsigned flags;
        atomic_uint open_threads;       /* threads that have it open: tells a stop on the wrong thread */
} MarkerRegion;

typedef struct MarkerStats {
        uint64_t calls;
        uint64_t time_ns;
        uint64_t migrated;
        int64_t cpu;                    /* MARKER_CPU_UNSET, MARKER_CPU_MIXED or the CPU */
        int64_t values[MARKER_COLUMNS_MAX];
} MarkerStats;

typedef struct MarkerOpen {
        uint32_t region;
        uint32_t cpu;
        uint64_t start_ns;
        union {
                int64_t values[MARKER_COLUMNS_MAX];
                PerfSelfCount perf[MARKER_REGS_MAX];    /* perf read mode: counts and times */
        };
} MarkerOpen;

typedef struct MarkerConnection {
        pthread_mutex_t lock;
        pmugate *connection;
} MarkerConnection;

/* Only its own thread changes a MarkerThread, until close reads them all. */
typedef struct MarkerThread {
        uint32_t index;
        MarkerOpen open[PMUGATE_MARKER_DEPTH_MAX];
        size_t depth;
        MarkerStats *stats;             /* by region id */
        size_t n_stats;
        pmugate_batch *batch;           /* the read of cached_cpu's counters, encoded once */
        uint32_t cached_cpu;
        uint64_t fastest_read_ns;       /* of this thread's round trips */
        MarkerPerfThread *perf;         /* perf read mode: its events, open from its first use */
        int perf_error;                 /* ... or why the daemon did not open them (not asked again) */
        char perf_reason[MARKER_ERROR_TEXT_MAX];
} MarkerThread;

typedef struct MarkerGlobal {
        pthread_mutex_t lock;           /* regions being added, threads, errors, connections */
        atomic_bool active;
        bool initialized;
        unsigned flags;
        MarkerReadMode mode;
        char mode_reason[128];
        char *path;
        char *socket_path;

        uint32_t regs[MARKER_REGS_MAX];
        uint32_t rdpmc_index[MARKER_REGS_MAX];
        size_t n_regs;
        size_t n_columns;
        int slots_reg, metrics_reg;     /* positions in regs, or -1 */
        uint64_t counter_mask;
        const MarkerShared *shared;     /* the runner's SLOTS/PERF_METRICS bases, or NULL */
        size_t shared_size;
        uint64_t *cpus;                 /* bitmap of the CPUs whose counters run */
        uint32_t cpus_bits;
        MarkerPerfEvents perf_events;   /* perf read mode: what every thread opens */

        MarkerRegion regions[PMUGATE_MARKER_REGIONS_MAX];
        atomic_size_t n_regions;
        MarkerThread *threads[PMUGATE_MARKER_THREADS_MAX];
        size_t n_threads;
        MarkerConnection connections[MARKER_CONNECTIONS_MAX];
        MarkerError errors[MARKER_ERRORS_MAX];
        size_t n_errors;
        uint64_t errors_dropped;
} MarkerGlobal;

extern MarkerGlobal marker_global;

/* The connection thread t shares, connected on first use (marker-base.c). */
int marker_connection_get(MarkerThread *t, MarkerConnection **ret);

/* Sets the calling thread's last reason; returns error. */
int marker_fail(int error, const char *format, ...) __attribute__((format(printf, 2, 3)));

void marker_forget_thread(void);

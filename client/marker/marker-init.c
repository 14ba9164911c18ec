/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Markers: what the runner passed, the shared connections, and the results file written at
 * close or exit
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpulist.h"
#include "macro.h"
#include "marker/marker-state.h"

/* "0xc1,0x309,..." into g->regs, each a register RDPMC could read too. */
static int parse_regs(MarkerGlobal *g, const char *text) {
        const char *p = text;

        g->n_regs = 0;
        g->slots_reg = g->metrics_reg = -1;
        while (*p) {
                unsigned long long v;
                char *end;

                errno = 0;
                v = strtoull(p, &end, 16);
                if (errno != 0 || end == p || v > UINT32_MAX || (*end != ',' && *end != '\0'))
                        return -EINVAL;
                if (g->n_regs >= MARKER_REGS_MAX ||
                    marker_rdpmc_index((uint32_t) v, &g->rdpmc_index[g->n_regs]) < 0)
                        return -EINVAL;
                if (v == MARKER_MSR_SLOTS)
                        g->slots_reg = (int) g->n_regs;
                if (v == MARKER_MSR_PERF_METRICS)
                        g->metrics_reg = (int) g->n_regs;
                g->regs[g->n_regs++] = (uint32_t) v;
                p = *end ? end + 1 : end;
        }
        if (g->n_regs == 0 || (g->metrics_reg >= 0 && g->slots_reg < 0))
                return -EINVAL;
        g->n_columns = g->n_regs + (g->metrics_reg >= 0 ? MARKER_METRICS_FIELDS : 0);
        return 0;
}

static int parse_cpus(MarkerGlobal *g, const char *text) {
        _cleanup_free_ uint32_t *cpus = NULL;
        size_t n;
        int r;

        r = cpulist_parse(text, PMUGATE_CPUS_MAX, &cpus, &n);
        if (r < 0)
                return r;
        g->cpus_bits = n > 0 ? cpus[n - 1] + 1 : 0;
        g->cpus = calloc((g->cpus_bits + 63) / 64 ?: 1, sizeof(uint64_t));
        if (!g->cpus)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                g->cpus[cpus[i] / 64] |= UINT64_C(1) << (cpus[i] % 64);
        return 0;
}

static int parse_width(MarkerGlobal *g, const char *text) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(text ?: "48", &end, 10);
        if (errno != 0 || *end != '\0' || v < 8 || v > 64)
                return -EINVAL;
        g->counter_mask = v == 64 ? UINT64_MAX : (UINT64_C(1) << v) - 1;
        return 0;
}

/* The runner's SLOTS/PERF_METRICS bases, needed exactly when PERF_METRICS is read. */
static int map_shared(MarkerGlobal *g, const char *path) {
        _cleanup_close_ int fd = -1;
        const MarkerShared *map;
        struct stat st;

        if (g->metrics_reg < 0)
                return 0;
        if (!path || !path[0])
                return -EINVAL;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) ||
            (size_t) st.st_size < sizeof(MarkerShared) + g->cpus_bits * sizeof(MarkerSharedCpu) ||
            (size_t) st.st_size > sizeof(MarkerShared) + PMUGATE_CPUS_MAX * sizeof(MarkerSharedCpu))
                return -EINVAL;
        map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        if (map->magic != MARKER_SHARED_MAGIC || map->n_cpus < g->cpus_bits ||
            sizeof(MarkerShared) + map->n_cpus * sizeof(MarkerSharedCpu) > (size_t) st.st_size) {
                (void) munmap((void *) map, (size_t) st.st_size);
                return -EINVAL;
        }
        g->shared = map;
        g->shared_size = (size_t) st.st_size;
        return 0;
}

static void choose_read_mode(MarkerGlobal *g) {
        const char *off = secure_getenv(MARKER_ENV_RDPMC), *sysfs = secure_getenv(MARKER_ENV_SYSFS);
        int value;

        if (off && strcmp(off, "0") == 0) {
                g->mode = MARKER_READ_DAEMON;
                (void) snprintf(g->mode_reason, sizeof(g->mode_reason), "RDPMC turned off by %s=0",
                                MARKER_ENV_RDPMC);
                return;
        }
        value = marker_rdpmc_sysfs(sysfs && sysfs[0] ? sysfs : MARKER_SYSFS_DEFAULT);
        /* a probe where the switch says no would only find the same */
        g->mode = marker_rdpmc_decide(value, value != 0 && marker_rdpmc_probe(g->rdpmc_index[0]),
                                      g->mode_reason, sizeof(g->mode_reason));
}

/* In a child of fork() the connections are the parent's: markers are off there. */
static void after_fork_in_child(void) {
        atomic_store(&marker_global.active, false);
}

static void at_exit(void) {
        (void) pmugate_marker_close();
}

/* Tells the runner why the markers could not start, instead of leaving it to guess. */
static void write_failure(const char *path, const char *reason) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        char text[MARKER_ERROR_TEXT_MAX + 64];
        int n;

        if (fd < 0)
                return;
        n = snprintf(text, sizeof(text), "%s\nfailed %s\n", MARKER_FILE_MAGIC,
                     reason[0] ? reason : "unknown");
        if (n > 0)
                (void) !write(fd, text, (size_t) n < sizeof(text) ? (size_t) n : sizeof(text) - 1);
}

/* Perf read mode: every thread opens the events the runner names for itself, and reads them
 * through their control pages; no registers, CPUs or widths. */
static int setup_perf(MarkerGlobal *g, const char *events) {
        int r;

        r = marker_perf_events_parse(events, &g->perf_events);
        if (r < 0)
                return marker_fail(r, "%s is not a list of perf events", MARKER_ENV_PERF);
        g->n_columns = g->perf_events.n_events;
        g->mode = MARKER_READ_PERF;
        (void) snprintf(g->mode_reason, sizeof(g->mode_reason),
                        "each thread's own perf events, read through their control pages");
        return 0;
}

static int setup_registers(MarkerGlobal *g) {
        int r;

        r = parse_regs(g, secure_getenv(MARKER_ENV_REGS) ?: "");
        if (r < 0)
                return marker_fail(r, "%s is not a list of counter registers", MARKER_ENV_REGS);
        if ((r = parse_cpus(g, secure_getenv(MARKER_ENV_CPUS) ?: "")) < 0)
                return marker_fail(r, "%s is not a CPU list", MARKER_ENV_CPUS);
        if ((r = parse_width(g, secure_getenv(MARKER_ENV_WIDTH))) < 0)
                return marker_fail(r, "%s is not a counter width", MARKER_ENV_WIDTH);
        if ((r = map_shared(g, secure_getenv(MARKER_ENV_SHARED))) < 0)
                return marker_fail(r, "%s does not name the runner's PERF_METRICS bases", MARKER_ENV_SHARED);
        return 0;
}

int pmugate_marker_init(unsigned flags) {
        MarkerGlobal *g = &marker_global;
        const char *path = secure_getenv(MARKER_ENV_FILE), *socket_path = secure_getenv("PMUGATE_SOCKET");
        const char *perf = secure_getenv(MARKER_ENV_PERF);
        int r;

        if (flags & ~PMUGATE_MARKER_NESTING)
                return marker_fail(-EINVAL, "unknown flags 0x%x", flags);
        (void) pthread_mutex_lock(&g->lock);
        if (g->initialized) {
                (void) pthread_mutex_unlock(&g->lock);
                return 0;
        }
        g->initialized = true;
        if (!path || !path[0]) {
                (void) pthread_mutex_unlock(&g->lock);
                return 0;
        }
        g->flags = flags;
        r = perf ? setup_perf(g, perf) : setup_registers(g);
        if (r >= 0 && (!(g->path = strdup(path)) || (socket_path && !(g->socket_path = strdup(socket_path)))))
                r = -ENOMEM;
        if (r >= 0) {
                for (size_t i = 0; i < MARKER_CONNECTIONS_MAX; i++)
                        (void) pthread_mutex_init(&g->connections[i].lock, NULL);
                if (!perf)
                        choose_read_mode(g);
                /* the program's own children are not measured, and must not write its results */
                (void) unsetenv(MARKER_ENV_FILE);
                (void) pthread_atfork(NULL, NULL, after_fork_in_child);
                (void) atexit(at_exit);
                atomic_store(&g->active, true);
        } else {
                write_failure(path, pmugate_marker_last_reason());
                free(g->cpus);
                free(g->path);
                g->cpus = NULL;
                g->path = NULL;
                if (g->shared)
                        (void) munmap((void *) g->shared, g->shared_size);
                g->shared = NULL;
        }
        (void) pthread_mutex_unlock(&g->lock);
        return r < 0 ? r : 0;
}

static void write_row(FILE *f, const MarkerGlobal *g, const MarkerThread *t, size_t region) {
        const MarkerStats *s = &t->stats[region];

        if (s->calls == 0)
                return;
        fprintf(f, "row %zu %" PRIu32 " %" PRId64 " %" PRIu64 " %" PRIu64 " %" PRIu64, region, t->index,
                s->cpu == MARKER_CPU_UNSET ? MARKER_CPU_MIXED : s->cpu, s->calls, s->time_ns, s->migrated);
        for (size_t c = 0; c < g->n_columns; c++)
                fprintf(f, " %" PRId64, s->values[c]);
        fputc('\n', f);
}

/* The results for the runner. The file must not exist: the runner made its directory, and
 * whatever is there already was not written by this program. */
static int write_results(MarkerGlobal *g) {
        _cleanup_close_ int fd = -1;
        _cleanup_fclose_ FILE *f = NULL;
        size_t n_regions = atomic_load(&g->n_regions);

        fd = open(g->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f)
                return -errno;
        TAKE_FD(fd);
        fprintf(f, "%s\nmode %s\ncolumns %zu\n", MARKER_FILE_MAGIC, marker_read_mode_name(g->mode),
                g->n_columns);
        for (size_t i = 0; i < n_regions; i++)
                fprintf(f, "region %zu %s\n", i, g->regions[i].name);
        for (size_t i = 0; i < g->n_threads; i++)
                for (size_t k = 0; k < g->threads[i]->n_stats && k < n_regions; k++)
                        write_row(f, g, g->threads[i], k);
        for (size_t i = 0; i < g->n_threads; i++)
                for (size_t d = 0; d < g->threads[i]->depth; d++)
                        fprintf(f, "error 1 thread %zu never stopped region '%s'\n", i,
                                g->regions[g->threads[i]->open[d].region].name);
        for (size_t i = 0; i < g->n_errors; i++)
                fprintf(f, "error %" PRIu64 " %s\n", g->errors[i].count, g->errors[i].text);
        if (g->errors_dropped > 0)
                fprintf(f, "error %" PRIu64 " other misuse, not told apart (more than %u kinds)\n",
                        g->errors_dropped, MARKER_ERRORS_MAX);
        if (fflush(f) != 0 || ferror(f))
                return -EIO;
        return fclose(TAKE_PTR(f)) == 0 ? 0 : -errno;
}

int pmugate_marker_close(void) {
        MarkerGlobal *g = &marker_global;
        int r;

        (void) pthread_mutex_lock(&g->lock);
        if (!atomic_load(&g->active)) {
                (void) pthread_mutex_unlock(&g->lock);
                return 0;
        }
        atomic_store(&g->active, false);
        r = write_results(g);
        if (r < 0)
                r = marker_fail(r, "writing the marker results to %s failed: %s", g->path, strerror(-r));
        /* each thread's perf events on the connection that opened them, before it closes */
        for (size_t i = 0; i < g->n_threads; i++)
                g->threads[i]->perf = marker_perf_thread_close(
                        g->connections[g->threads[i]->index % MARKER_CONNECTIONS_MAX].connection,
                        g->threads[i]->perf);
        for (size_t i = 0; i < MARKER_CONNECTIONS_MAX; i++)
                g->connections[i].connection = pmugate_disconnect(g->connections[i].connection);
        for (size_t i = 0; i < g->n_threads; i++) {
                pmugate_batch_free(g->threads[i]->batch);
                free(g->threads[i]->stats);
                free(g->threads[i]);
                g->threads[i] = NULL;
        }
        g->n_threads = 0;
        if (g->shared)
                (void) munmap((void *) g->shared, g->shared_size);
        g->shared = NULL;
        free(g->cpus);
        free(g->path);
        free(g->socket_path);
        g->cpus = NULL;
        g->path = g->socket_path = NULL;
        marker_forget_thread();
        (void) pthread_mutex_unlock(&g->lock);
        return r;
}

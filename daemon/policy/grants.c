/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Job grants
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "grants.h"
#include "log.h"
#include "macro.h"

void grants_init(Grants *g, const char *path, size_t max) {
        *g = (Grants) { .max = max };
        if (path)
                (void) snprintf(g->path, sizeof(g->path), "%s", path);
}

void grants_done(Grants *g) {
        free(g->items);
        g->items = NULL;
        g->n = 0;
}

const Grant *grants_find(const Grants *g, const char *job) {
        for (size_t i = 0; i < g->n; i++)
                if (strcmp(g->items[i].job, job) == 0)
                        return &g->items[i];
        return NULL;
}

bool grants_has_uid(const Grants *g, uid_t uid) {
        for (size_t i = 0; i < g->n; i++)
                if (g->items[i].uid == uid)
                        return true;
        return false;
}

/* One line per grant: "JOB UID CPUS", CPUS being a CPU list or "-". Written to a temporary
 * file and renamed, so a crash leaves the old or the new state, never half of one. */
static int grants_save(const Grants *g) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *list = NULL;
        char tmp[600];

        if (!g->path[0])
                return 0;
        (void) snprintf(tmp, sizeof(tmp), "%s.tmp", g->path);
        list = malloc(CPUSET_FORMAT_MAX);
        if (!list)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f)
                return log_error_errno(errno, "Cannot write %s", tmp);
        for (size_t i = 0; i < g->n; i++) {
                const Grant *gr = &g->items[i];

                if (!gr->has_cpus || cpuset_format(&gr->cpus, list, CPUSET_FORMAT_MAX) < 0)
                        (void) snprintf(list, CPUSET_FORMAT_MAX, "-");
                (void) fprintf(f, "%s %u %s\n", gr->job, (unsigned) gr->uid, list);
        }
        if (fflush(f) != 0 || ferror(f))
                return log_error_errno(EIO, "Cannot write %s", tmp);
        if (rename(tmp, g->path) < 0)
                return log_error_errno(errno, "Cannot rename %s", tmp);
        return 0;
}

static Grant *grants_slot(Grants *g) {
        Grant *items;

        if (g->n >= g->max)
                return NULL;
        items = reallocarray(g->items, g->n + 1, sizeof(Grant));
        if (!items)
                return NULL;
        g->items = items;
        return &g->items[g->n++];
}

int grants_put(Grants *g, const char *job, uid_t uid, const uint32_t *cpus, size_t n_cpus) {
        Grant *gr = (Grant *) grants_find(g, job);
        bool replaced = gr != NULL;

        if (!gr) {
                if (g->n >= g->max)
                        return -ENOSPC;
                gr = grants_slot(g);
                if (!gr)
                        return -ENOMEM;
        }
        *gr = (Grant) { .uid = uid, .has_cpus = n_cpus > 0 };
        (void) snprintf(gr->job, sizeof(gr->job), "%s", job);
        for (size_t i = 0; i < n_cpus; i++)
                cpuset_add(&gr->cpus, cpus[i]);
        (void) grants_save(g);
        return replaced ? 1 : 0;
}

int grants_remove(Grants *g, const char *job, Grant *ret_removed) {
        Grant *gr = (Grant *) grants_find(g, job);

        if (!gr)
                return -ENOENT;
        if (ret_removed)
                *ret_removed = *gr;
        *gr = g->items[--g->n];
        (void) grants_save(g);
        return 0;
}

int grants_load(Grants *g) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[CPUSET_FORMAT_MAX + PMUGATE_STRING_MAX + 64];
        unsigned lineno = 0;

        if (!g->path[0])
                return 0;
        f = fopen(g->path, "re");
        if (!f)
                return errno == ENOENT ? 0 : log_error_errno(errno, "Cannot read %s", g->path);
        while (fgets(line, sizeof(line), f)) {
                _cleanup_free_ uint32_t *cpus = NULL;
                char job[PMUGATE_STRING_MAX + 1], list[CPUSET_FORMAT_MAX];
                unsigned uid;
                size_t n = 0;
                Grant *gr;

                lineno++;
                if (sscanf(line, "%256s %u %24576s", job, &uid, list) != 3 ||
                    (strcmp(list, "-") != 0 && cpulist_parse(list, PMUGATE_CPUS_MAX, &cpus, &n) < 0)) {
                        log_warning("%s:%u: cannot parse grant, skipping it", g->path, lineno);
                        continue;
                }
                gr = grants_slot(g);
                if (!gr)
                        return log_error_errno(ENOSPC, "%s: too many grants", g->path);
                *gr = (Grant) { .uid = uid, .has_cpus = n > 0 };
                memcpy(gr->job, job, strlen(job) + 1);
                for (size_t i = 0; i < n; i++)
                        cpuset_add(&gr->cpus, cpus[i]);
        }
        if (g->n > 0)
                log_info("Restored %zu job grants from %s", g->n, g->path);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: metric group files (docs/GROUPS.md), which any user may write and the client
 * library reads, including the shipped groups they name on "include"
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events/groups.h"
#include "events/metrics.h"
#include "fuzz_util.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MODEL "spr"

static void assert_event_valid(const Group *g, size_t i) {
        const GroupEvent *e = &g->events[i];
        size_t len = strlen(e->name);

        fuzz_assert(len > 0 && strcspn(e->name, " \t,") == len);
        for (size_t j = 0; j < i; j++)
                fuzz_assert(strcmp(g->events[j].name, e->name) != 0 ||
                            strcmp(g->events[j].condition ?: "", e->condition ?: "") != 0);
}

static const GroupMetric *find_metric(const Group *g, const char *name) {
        for (size_t i = 0; i < g->n_metrics; i++)
                if (strcmp(g->metrics[i].name, name) == 0)
                        return &g->metrics[i];
        return NULL;
}

static void assert_metric_valid(const Group *g, size_t i) {
        const GroupMetric *m = &g->metrics[i], *parent;

        fuzz_assert(m->name[0] != '\0' && strlen(m->name) < METRIC_NAME_MAX);
        fuzz_assert(find_metric(g, m->name) == m);
        fuzz_assert(m->formula && strlen(m->formula) < METRIC_FORMULA_MAX);
        if (m->helper) {
                fuzz_assert(!m->label && !m->parent && !m->unit);
                return;
        }
        fuzz_assert(m->label && strlen(m->label) < GROUP_LABEL_MAX);
        fuzz_assert(!m->unit || strlen(m->unit) < GROUP_UNIT_MAX);
        if (m->parent) {
                parent = find_metric(g, m->parent);
                fuzz_assert(parent && !parent->helper);
        }
}

static void assert_group_valid(const Group *g) {
        fuzz_assert(strcmp(g->name, "fuzz") == 0 && strcmp(g->path, "fuzz.conf") == 0);
        fuzz_assert(!g->description || strlen(g->description) < GROUP_DESCRIPTION_MAX);
        fuzz_assert(g->n_events <= GROUP_EVENTS_MAX);
        fuzz_assert(g->n_metrics <= GROUP_METRICS_MAX);
        for (size_t i = 0; i < g->n_events; i++)
                assert_event_valid(g, i);
        for (size_t i = 0; i < g->n_metrics; i++)
                assert_metric_valid(g, i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *copy = fuzz_copy(data, size);
        _cleanup_fclose_ FILE *f = fuzz_open_stream(copy, size);
        _cleanup_(group_freep) Group *g = NULL;
        static bool initialized;
        char reason[1024];
        int r;

        /* Includes are looked up in $PMUGATE_GROUP_PATH (the shipped groups, as the test and
         * the campaign runner set it), never in the user's own directory. */
        if (!initialized) {
                (void) unsetenv("XDG_CONFIG_HOME");
                (void) unsetenv("HOME");
                initialized = true;
        }

        memset(reason, 'x', sizeof(reason));
        r = group_load_stream(f, "fuzz.conf", "fuzz", FUZZ_MODEL, &g, reason, sizeof(reason));
        fuzz_assert(r == 0 || r == -EINVAL || r == -ENOMEM || r == -EOPNOTSUPP);
        if (r == -ENOMEM) {
                fuzz_assert(!g);
                return 0;
        }
        if (r < 0) {
                fuzz_assert(!g);
                fuzz_assert(FUZZ_TERMINATED(reason));
                fuzz_assert(strncmp(reason, "fuzz.conf", strlen("fuzz.conf")) == 0);
                return 0;
        }
        fuzz_assert(g);
        assert_group_valid(g);
        return 0;
}

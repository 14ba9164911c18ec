/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TopDown drilldown, as pmu-tools' toplev --drilldown: levels 1 and 2 whole, and below them
 * only the children of one node per level (the largest of the level above, which the caller
 * found in an earlier run). The nodes left out are n/a, "not drilled into", and the events
 * only they use are not programmed, so that fewer event sets take turns on the counters.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/reason.h"
#include "macro.h"
#include "measure/measure-internal.h"
#include "measure/topdown.h"

static int find_reported(const pmugate_measure *m, const char *name) {
        for (size_t k = 0; k < m->n_metrics; k++)
                if (strcmp(m->metrics[k].info.name, name) == 0)
                        return (int) k;
        return -ENOENT;
}

/* Each drill node is a reported node of level 2 + its position, a child of the one before. */
static int check_nodes(const pmugate_measure *m, const MeasureDrill *d, int *nodes, char *reterr_reason,
                       size_t reason_size) {
        if (d->n_nodes + 2 != d->level)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "drilling down to level %u takes %u node%s (one of level 2%s), not %zu",
                                   d->level, d->level - 2, d->level == 3 ? "" : "s",
                                   d->level == 3 ? "" : " and its child at level 3", d->n_nodes);
        for (size_t j = 0; j < d->n_nodes; j++) {
                int k = d->nodes[j] ? find_reported(m, d->nodes[j]) : -ENOENT;

                if (k < 0 || m->metrics[k].info.level != j + 2)
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "'%s' is no level-%zu node of TopDown on %s", d->nodes[j] ?: "(null)",
                                           j + 2, m->model);
                if (j > 0 && m->metrics[k].info.parent != nodes[j - 1])
                        return reason_fail(reterr_reason, reason_size, -EINVAL, "'%s' is no child of '%s'",
                                           d->nodes[j], d->nodes[j - 1]);
                nodes[j] = k;
        }
        return 0;
}

static bool drilled(const pmugate_measure *m, const int *nodes, size_t k) {
        const pmugate_metric_info *mi = &m->metrics[k].info;

        return mi->level <= 2 || (mi->parent >= 0 && mi->parent == nodes[mi->level - 3]);
}

/* The variables the drilled nodes use, themselves, through other metrics or their thresholds. */
static int mark_used(const pmugate_measure *m, const int *nodes, bool *used) {
        size_t n = metric_set_n_variables(m->metric_set);
        _cleanup_free_ bool *one = calloc(n ?: 1, sizeof(bool));
        int r;

        if (!one)
                return -ENOMEM;
        for (size_t k = 0; k < m->n_metrics; k++) {
                const MeasureMetric *mm = &m->metrics[k];

                if (!drilled(m, nodes, k))
                        continue;
                for (int pass = 0; pass < 2; pass++) {
                        int formula = pass == 0 ? mm->formula : mm->threshold;

                        if (formula < 0)
                                continue;
                        r = metric_set_formula_variables(m->metric_set, (size_t) formula, one);
                        if (r < 0)
                                return r;
                        for (size_t v = 0; v < n; v++)
                                used[v] = used[v] || one[v];
                }
        }
        return 0;
}

int measure_drill(pmugate_measure *m, const MeasureDrill *d, char *reterr_reason, size_t reason_size) {
        int nodes[TOPDOWN_LEVEL_MAX] = {};
        _cleanup_free_ bool *used = NULL;
        int r;

        if (!m || !d || d->n_nodes > TOPDOWN_LEVEL_MAX - 2)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "a drilldown names 1 to %u nodes", TOPDOWN_LEVEL_MAX - 2);
        r = check_nodes(m, d, nodes, reterr_reason, reason_size);
        if (r < 0)
                return r;
        used = calloc(metric_set_n_variables(m->metric_set) ?: 1, sizeof(bool));
        if (!used)
                return -ENOMEM;
        r = mark_used(m, nodes, used);
        if (r < 0)
                return r;
        for (size_t k = 0; k < m->n_metrics; k++) {
                MeasureMetric *mm = &m->metrics[k];

                /* a node pmugate cannot compute keeps that reason: drilling into it would not help */
                if (drilled(m, nodes, k) || mm->info.unavailable[0])
                        continue;
                free((char *) mm->info.unavailable);
                mm->info.unavailable = strdup(PMUGATE_NOT_DRILLED);
                if (!mm->info.unavailable)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < m->n_events; i++) {
                MeasureEvent *e = &m->events[i];

                if ((e->variable >= 0 && used[e->variable]) || (e->core_variable >= 0 && used[e->core_variable]))
                        continue;
                e->programmed = false;
        }
        return 0;
}

int pmugate_result_largest_metric(const pmugate_result *r, unsigned level) {
        int best = -ENOENT;

        if (!r)
                return -EINVAL;
        for (size_t k = 0; k < r->n_metrics; k++) {
                double v = r->aggregate.metrics[k];

                if (r->metrics[k].level != level || isnan(v) || r->metrics[k].unavailable[0])
                        continue;
                if (best < 0 || v > r->aggregate.metrics[best])
                        best = (int) k;
        }
        return best;
}

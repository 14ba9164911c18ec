/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: a job summary as pmugate job reads it from a directory any user may write into
 * (client/cli/job-report.c), and the --nodes host lists it expands
 *
 * Input: the summary document, parsed as job "7" of node "n1"; its first line, as a string, is
 * also expanded as a Slurm host list.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/job-report.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_node(const JobNode *n) {
        JobNode copy = *n;
        JobReport r;

        fuzz_assert(strcmp(n->host, "n1") == 0);
        fuzz_assert(n->start > 0 && n->start <= n->end);
        fuzz_assert(n->covers[0] != '\0');
        fuzz_assert(isnan(n->slots) || (isfinite(n->slots) && n->slots >= 0));
        for (unsigned m = 0; m < JOB_METRICS; m++)
                fuzz_assert(isnan(n->v[m]) || (isfinite(n->v[m]) && n->v[m] >= 0));
        for (unsigned m = 0; m < JOB_METRICS; m++)
                if (job_metrics[m].topdown_level > 0)
                        fuzz_assert(isnan(n->v[m]) || n->v[m] <= 101.0);
        /* a report of this one node: totals are its values, no imbalance, no skew */
        job_report_compute(&copy, 1, 0, &r);
        fuzz_assert(r.window_start == n->start && r.window_end == n->end && r.n_skewed == 0);
        for (unsigned m = 0; m < JOB_METRICS; m++) {
                fuzz_assert(r.stat[m].n == !isnan(n->v[m]));
                if (job_metrics[m].total == JOB_TOTAL_SUM && r.stat[m].n == 1)
                        fuzz_assert(r.stat[m].total == n->v[m]);
                fuzz_assert(isnan(r.stat[m].cv) || r.stat[m].cv == 0);
        }
}

static void check_hosts(const char *list) {
        char **hosts = NULL;
        int n = job_hosts_expand(list, &hosts);

        fuzz_assert(n == -EINVAL || n == -E2BIG || n == -ENOMEM || (n > 0 && (unsigned) n <= PMUGATE_JOB_REPORT_NODES_MAX));
        for (int i = 0; i < n; i++)
                fuzz_assert(hosts[i][0] != '\0' && strlen(hosts[i]) <= PMUGATE_JOB_HOST_MAX && !strchr(hosts[i], '/') &&
                            !strchr(hosts[i], ','));
        if (n > 0)
                job_hosts_free(hosts, (size_t) n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *copy = fuzz_copy(data, size), why[JOB_REASON_MAX] = "", *nl;
        JobNode node;
        int r;

        /* the document itself, not NUL-terminated: a read past its end is an ASan report */
        r = job_node_parse((const char *) data, size, "7", "n1", &node, why, sizeof(why));
        fuzz_assert(r == 0 || r == 1 || r == -EBADMSG || r == -ENOMEM);
        if (r == -EBADMSG)
                fuzz_assert(why[0] != '\0');
        if (r == 0)
                check_node(&node);
        nl = strchr(copy, '\n');
        if (nl)
                *nl = '\0';
        if (strlen(copy) < 4096)
                check_hosts(copy);
        free(copy);
        return 0;
}

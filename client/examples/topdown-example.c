/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Example: TopDown level 2 on CPUs 0-3 for two seconds, printed as a tree
 *
 *   topdown-example [SOCKET]
 */
#include <stdio.h>
#include <time.h>

#include <pmugate/measure.h>
#include <pmugate/pmugate.h>

/* Prints metric `parent`'s children (all top-level metrics for -1), each followed by its own. */
static void print_tree(const pmugate_result *res, int parent) {
        for (size_t i = 0; i < res->n_metrics; i++) {
                if (res->metrics[i].parent != parent)
                        continue;
                printf("%*s%-24s %6.1f %%\n", 2 * (int) res->metrics[i].level, "", res->metrics[i].label,
                       100.0 * res->aggregate.metrics[i]);
                print_tree(res, (int) i);
        }
}

int main(int argc, char *argv[]) {
        const uint32_t cpus[] = { 0, 1, 2, 3 };
        pmugate *c = NULL;
        pmugate_measure *m = NULL;
        pmugate_result *res = NULL;
        char reason[512] = "";
        struct timespec step;
        uint64_t poll_ns;
        int r;

        r = pmugate_connect(argc > 1 ? argv[1] : NULL, &c);
        if (r < 0) {
                fprintf(stderr, "connect: %s\n", pmugate_strerror(r));
                return 1;
        }
        r = pmugate_measure_open_topdown(c, 2, cpus, sizeof(cpus) / sizeof(cpus[0]), 0, &m, reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "open: %s\n", reason[0] ? reason : pmugate_strerror(r));
                pmugate_disconnect(c);
                return 1;
        }
        r = pmugate_measure_start(m);
        if (r < 0) {
                fprintf(stderr, "start: %s\n", pmugate_strerror(r));
                goto finish;
        }

        /* Sample at least every poll interval: that keeps PERF_METRICS precise and lets
         * multiplexed event sets take turns. */
        poll_ns = pmugate_measure_poll_interval(m);
        step = (struct timespec) { .tv_sec = (time_t) (poll_ns / 1000000000), .tv_nsec = (long) (poll_ns % 1000000000) };
        for (uint64_t waited = 0; waited < UINT64_C(2000000000); waited += poll_ns) {
                (void) nanosleep(&step, NULL);
                r = pmugate_measure_sample(m);
                if (r < 0) {
                        fprintf(stderr, "sample: %s\n", pmugate_strerror(r));
                        goto finish;
                }
        }
        r = pmugate_measure_stop(m);
        if (r >= 0)
                r = pmugate_measure_read(m, PMUGATE_SPAN_TOTAL, &res);
        if (r < 0) {
                fprintf(stderr, "read: %s\n", pmugate_strerror(r));
                goto finish;
        }

        printf("TopDown on %s, CPUs 0-3, %.2f s, %u event set(s)\n", pmugate_measure_model(m), res->elapsed,
               res->event_sets);
        print_tree(res, -1);

finish:
        pmugate_result_free(res);
        pmugate_measure_close(m);
        pmugate_disconnect(c);
        return r < 0 ? 1 : 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor of the perf path benchmark: the groups bench-perf wrote, opened on the
 * simulator's perf driver in this process on every CPU and read N times, as the daemon's
 * perf_read reads them but without the socket, the request and the reply
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/machine.h"
#include "backend/perf-catalog.h"
#include "backend/perf-driver.h"
#include "backend/sim/backend-sim.h"
#include "backend/sim/sim-perf.h"
#include "macro.h"
#include "perf/perf-attr.h"

#define NSEC_PER_SEC 1e9
#define SAMPLES_DEFAULT 200U
#define FLOOR_EVENTS_MAX 64U

static double clock_s(clockid_t id) {
        struct timespec ts;

        (void) clock_gettime(id, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / NSEC_PER_SEC;
}

typedef struct Plan {
        PerfEventSpec specs[FLOOR_EVENTS_MAX];
        size_t group_of[FLOOR_EVENTS_MAX];
        size_t n_events;
} Plan;

/* Lines "GROUP PMU CONFIG CONFIG1 KERNEL", as bench-perf writes them. */
static int read_plan(const char *path, Plan *ret) {
        char line[256];
        FILE *f = fopen(path, "re");

        if (!f)
                return -errno;
        ret->n_events = 0;
        while (fgets(line, sizeof(line), f)) {
                PerfEventSpec *s = &ret->specs[ret->n_events];
                char pmu[PERF_PMU_NAME_MAX];
                uint64_t config, config1;
                size_t group;
                int kernel;

                if (sscanf(line, "%zu %39s %" SCNx64 " %" SCNx64 " %d", &group, pmu, &config, &config1, &kernel) != 5 ||
                    ret->n_events >= FLOOR_EVENTS_MAX) {
                        (void) fclose(f);
                        return -EBADMSG;
                }
                *s = (PerfEventSpec) { .config = config, .config1 = config1, .has_config1 = config1 != 0,
                                       .count_kernel = kernel != 0 };
                (void) snprintf(s->pmu, sizeof(s->pmu), "%s", pmu);
                ret->group_of[ret->n_events++] = group;
        }
        (void) fclose(f);
        return ret->n_events > 0 ? 0 : -EBADMSG;
}

static void usage(void) {
        printf("Usage: bench-perf-floor --sim-model=MODEL --sim-config=FILE --plan=FILE [--samples=N]\n"
               "                        [--tick-usec=N]\n"
               "\n"
               "Opens the groups of FILE (bench-perf --plan) on every CPU of the simulated machine, in\n"
               "this process on the simulator's perf driver, reads every group of every CPU N times\n"
               "and prints 'key value' lines: this process's CPU time per read of all CPUs and per CPU,\n"
               "and the time the opens took. --tick-usec ticks the driver between two reads of all\n"
               "CPUs once that long has passed, as the daemon's timer does (4000).\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "sim-model", required_argument, NULL, 'm' },
                { "sim-config", required_argument, NULL, 'c' },
                { "plan", required_argument, NULL, 'P' },
                { "samples", required_argument, NULL, 'n' },
                { "tick-usec", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *model = NULL, *config = NULL, *plan_path = NULL;
        unsigned samples = SAMPLES_DEFAULT, tick_usec = 0, ticks = 0;
        Machine *machine = NULL;
        Backend *backend = NULL;
        PerfCatalog *catalog = NULL;
        PerfDriver *kernel = NULL, *driver = NULL;
        struct perf_event_attr attrs[FLOOR_EVENTS_MAX];
        static Plan plan;
        int *handles;
        size_t n_cpus, n_leaders = 0;
        uint64_t sum = 0;
        double open0, open_wall, cpu0, cpu1, wall0, wall1, last_tick;
        char reason[512];
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (opt) {
                case 'm':
                        model = optarg;
                        break;
                case 'c':
                        config = optarg;
                        break;
                case 'P':
                        plan_path = optarg;
                        break;
                case 'n':
                        samples = (unsigned) atoi(optarg);
                        break;
                case 't':
                        tick_usec = (unsigned) atoi(optarg);
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        return 2;
                }
        if (!model || !plan_path || samples == 0) {
                usage();
                return 2;
        }
        r = read_plan(plan_path, &plan);
        if (r < 0) {
                fprintf(stderr, "bench-perf-floor: %s: %s\n", plan_path, strerror(-r));
                return 1;
        }
        r = backend_sim_new(model, config, &machine, &backend);
        if (r >= 0)
                r = sim_perf_catalog(backend, &catalog);
        /* software events would go to the kernel's driver, opened in this process */
        if (r >= 0)
                r = perf_driver_kernel_new(NULL, &kernel);
        if (r >= 0)
                r = sim_perf_driver_new(backend, kernel, &driver);
        if (r < 0) {
                fprintf(stderr, "bench-perf-floor: the simulator's perf layer: %s\n", strerror(-r));
                return 1;
        }
        for (size_t e = 0; e < plan.n_events; e++) {
                bool leader = e == 0 || plan.group_of[e] != plan.group_of[e - 1];
                const PerfPmu *pmu;

                r = perf_attr_build(catalog, &(PerfAttrRules) { .may_count_kernel = true }, &plan.specs[e],
                                    PERF_SCOPE_CPU, leader, false, false, &attrs[e], &pmu, reason, sizeof(reason));
                if (r != 0) {
                        fprintf(stderr, "bench-perf-floor: event %zu: %s\n", e, reason);
                        return 1;
                }
                n_leaders += leader;
        }

        n_cpus = machine->n_cpus;
        handles = calloc(n_cpus * plan.n_events, sizeof(int));
        if (!handles)
                return 1;
        open0 = clock_s(CLOCK_MONOTONIC);
        /* as perf-handles.c opens them: leaders disabled, members after, then every group enabled */
        for (size_t cpu = 0; cpu < n_cpus; cpu++) {
                int leader = -1;

                for (size_t e = 0; e < plan.n_events; e++) {
                        bool leads = e == 0 || plan.group_of[e] != plan.group_of[e - 1];

                        r = perf_driver_open(driver, &attrs[e], -1, -1, (int) cpu, leads ? -1 : leader, 0);
                        if (r < 0) {
                                fprintf(stderr, "bench-perf-floor: open of event %zu on CPU %zu: %s\n", e, cpu,
                                        strerror(-r));
                                return 1;
                        }
                        handles[cpu * plan.n_events + e] = r;
                        if (leads)
                                leader = r;
                }
        }
        for (size_t cpu = 0; cpu < n_cpus; cpu++)
                for (size_t e = 0; e < plan.n_events; e++)
                        if (e == 0 || plan.group_of[e] != plan.group_of[e - 1])
                                (void) perf_driver_enable(driver, handles[cpu * plan.n_events + e], true);
        open_wall = clock_s(CLOCK_MONOTONIC) - open0;

        cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        wall0 = clock_s(CLOCK_MONOTONIC);
        last_tick = wall0;
        for (unsigned k = 0; k < samples; k++) {
                /* the daemon ticks the simulator's driver every 4 ms while events are open */
                if (tick_usec > 0 && clock_s(CLOCK_MONOTONIC) - last_tick >= tick_usec / 1e6) {
                        sim_perf_driver_tick(driver);
                        last_tick = clock_s(CLOCK_MONOTONIC);
                        ticks++;
                }
                for (size_t cpu = 0; cpu < n_cpus; cpu++)
                        for (size_t e = 0; e < plan.n_events; e++) {
                                /* nr, time_enabled, time_running, then value and id per event */
                                uint64_t buf[3 + 2 * FLOOR_EVENTS_MAX];
                                ssize_t got;

                                if (e != 0 && plan.group_of[e] == plan.group_of[e - 1])
                                        continue;
                                got = perf_driver_read(driver, handles[cpu * plan.n_events + e], buf, sizeof(buf));
                                if (got < (ssize_t) (3 * sizeof(uint64_t))) {
                                        fprintf(stderr, "bench-perf-floor: read on CPU %zu: %s\n", cpu,
                                                got < 0 ? strerror((int) -got) : "short");
                                        return 1;
                                }
                                for (uint64_t i = 0; i < buf[0] && 3 + 2 * i < ELEMENTSOF(buf); i++)
                                        sum += buf[3 + 2 * i];
                        }
        }
        wall1 = clock_s(CLOCK_MONOTONIC);
        cpu1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);

        printf("floor_cpus %zu\n", n_cpus);
        printf("floor_events_per_cpu %zu\n", plan.n_events);
        printf("floor_groups_per_cpu %zu\n", n_leaders);
        printf("floor_samples %u\n", samples);
        printf("floor_ticks %u\n", ticks);
        printf("floor_open_us %.1f\n", open_wall * 1e6);
        printf("floor_open_ns_per_event %.1f\n", open_wall * 1e9 / (double) (n_cpus * plan.n_events));
        printf("floor_sample_wall_us %.2f\n", (wall1 - wall0) * 1e6 / samples);
        printf("floor_cpu_us %.2f\n", (cpu1 - cpu0) * 1e6 / samples);
        printf("floor_cpu_ns_per_cpu %.1f\n", (cpu1 - cpu0) * 1e9 / samples / (double) n_cpus);
        /* the counts are used, so that no read can be left out */
        printf("floor_checksum %" PRIu64 "\n", sum);

        for (size_t i = 0; i < n_cpus * plan.n_events; i++)
                perf_driver_close(driver, handles[i]);
        free(handles);
        perf_driver_free(driver);
        perf_catalog_free(catalog);
        backend_free(backend);
        machine_free(machine);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated uncore PMUs of the perf layer: one "uncore_imc_<n>" per memory-controller box
 * of the machine's kernel-uncore package counters
 */
#include <errno.h>
#include <string.h>

#include "backend/sim/sim-perf-pmus.h"

static int box_of_counter(const MachineCounter *mc, char *ret_box, size_t size, bool *ret_write) {
        const char *slash = strchr(mc->name, '/');
        size_t len;

        if (!slash || strncmp(mc->name, "uncore_imc_", strlen("uncore_imc_")) != 0 ||
            strncmp(mc->name, "uncore_imc_free_running_", strlen("uncore_imc_free_running_")) == 0)
                return -ENOENT;
        len = (size_t) (slash - mc->name);
        if (len >= size)
                return -ENAMETOOLONG;
        memcpy(ret_box, mc->name, len);
        ret_box[len] = '\0';
        if (strcmp(slash + 1, "cas_count_read") == 0)
                *ret_write = false;
        else if (strcmp(slash + 1, "cas_count_write") == 0)
                *ret_write = true;
        else
                return -ENOENT;
        return 0;
}

size_t sim_perf_find_boxes(const Machine *m, SimPerfBox *boxes) {
        size_t n = 0;

        for (uint32_t i = 0; i < m->n_counters; i++) {
                char name[PERF_PMU_NAME_MAX];
                bool write, seen = false;

                if (box_of_counter(&m->counters[i], name, sizeof(name), &write) < 0)
                        continue;
                for (size_t k = 0; k < n; k++)
                        seen = seen || strcmp(boxes[k].name, name) == 0;
                if (seen || n >= SIM_PERF_UNCORE_BOXES_MAX)
                        continue;
                boxes[n] = (SimPerfBox) {
                        .type = SIM_PERF_UNCORE_TYPE_FIRST + (uint32_t) n,
                        .package = m->counters[i].package,
                        .cpu = m->counters[i].cpu,
                };
                memcpy(boxes[n].name, name, sizeof(name));
                n++;
        }
        return n;
}

int sim_perf_box_counter(const Machine *m, const char *box, bool write, int32_t package, uint32_t *ret) {
        for (uint32_t i = 0; i < m->n_counters; i++) {
                char name[PERF_PMU_NAME_MAX];
                bool w;

                if (box_of_counter(&m->counters[i], name, sizeof(name), &w) < 0 || w != write ||
                    strcmp(name, box) != 0 || m->counters[i].package != package)
                        continue;
                *ret = i;
                return 0;
        }
        return -ENODEV;
}

bool sim_perf_same_box(const Machine *m, uint32_t a, uint32_t b) {
        char name_a[PERF_PMU_NAME_MAX], name_b[PERF_PMU_NAME_MAX];
        bool write;

        return box_of_counter(&m->counters[a], name_a, sizeof(name_a), &write) >= 0 &&
               box_of_counter(&m->counters[b], name_b, sizeof(name_b), &write) >= 0 &&
               strcmp(name_a, name_b) == 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated backend's place in a daemon built with -Dsimulator=false, as the distribution
 * packages build it: a root daemon on real machines has no use for 4k lines that fake a PMU.
 * main.c asks backend_sim_built() before it accepts --backend=sim, so these refusals are the
 * last line, not the message a user sees.
 */
#include <errno.h>

#include "backend/sim/backend-sim.h"
#include "backend/sim/sim-perf.h"

bool backend_sim_built(void) {
        return false;
}

int backend_sim_new(const char *model_key, const char *config_path,
                    Machine **ret_machine, Backend **ret_backend) {
        return -EOPNOTSUPP;
}

int backend_sim_advance(Backend *b, uint64_t cycles) {
        return -EINVAL;
}

int backend_sim_now_ns(Backend *b, uint64_t *ret) {
        return -EINVAL;
}

const SimModel *backend_sim_model(Backend *b) {
        return NULL;
}

const SimRates *backend_sim_cpu_rates(Backend *b, uint32_t cpu) {
        return NULL;
}

/* The driver owns software from the call on, whatever it returns. */
int backend_sim_perf_driver_new(Backend *b, PerfDriver *software, PerfDriver **ret) {
        if (software)
                software->vtable->free(software);
        return -EOPNOTSUPP;
}

void backend_sim_perf_driver_tick(PerfDriver *d) {
}

int backend_sim_perf_driver(Backend *b, PerfDriver *software, PerfDriver **ret_driver,
                            void (**ret_tick)(PerfDriver *d)) {
        perf_driver_free(software);
        return -EOPNOTSUPP;
}

int backend_sim_perf_catalog(Backend *b, PerfCatalog **ret) {
        return -EOPNOTSUPP;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated backend's place in a daemon built with -Dsimulator=false, as the distribution
 * packages build it: a root daemon on real machines has no use for 4k lines that fake a PMU.
 * main.c asks backend_sim_built() before it accepts --backend=sim, so these refusals are the
 * last line, not the message a user sees.
 */
#include <errno.h>

#include "backend/sim/backend-sim.h"

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

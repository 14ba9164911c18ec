/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unhandled PMIs of a simulated core PMU, counted and logged for the Intel and AMD PMUs alike
 */
#include <inttypes.h>

#include "backend/sim/sim-pmu-state.h"
#include "log.h"

void sim_pmu_unhandled_pmi(SimPmu *p, const char *what, uint64_t stray) {
        p->unhandled_pmis++;
        if (stray)
                log_warning("Simulated CPU %" PRIu32 ": the kernel's PMI handler (NMI watchdog) finds overflow status "
                            "0x%" PRIx64 " of counters it does not own, and warns (unhandled PMI #%" PRIu64 ")",
                            p->cpu, stray, p->unhandled_pmis);
        else
                log_warning("Simulated CPU %" PRIu32 ": %s overflowed with its interrupt enabled: a PMI no PMU user "
                            "handles (unhandled PMI #%" PRIu64 ")", p->cpu, what, p->unhandled_pmis);
}

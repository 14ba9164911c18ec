/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated time
 */
#include <math.h>
#include <time.h>

#include "backend/sim/sim-clock.h"

#define NSEC_PER_SEC UINT64_C(1000000000)
#define NSEC_PER_USEC UINT64_C(1000)

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

void sim_clock_init(SimClock *c, const SimConfig *config, unsigned mhz) {
        *c = (SimClock) {
                .mode = config->clock_mode,
                .mhz = mhz,
                .start_ns = monotonic_ns(),
                .cycles_per_access = config->cycles_per_access,
                .jitter = config->jitter,
                .random_state = config->seed,
        };
}

uint64_t sim_clock_random(SimClock *c) {
        /* splitmix64 (Steele, Lea, Flood 2014): constants from the reference implementation */
        uint64_t z = (c->random_state += UINT64_C(0x9E3779B97F4A7C15));

        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        return z ^ (z >> 31);
}

uint64_t sim_clock_now(const SimClock *c) {
        uint64_t elapsed, us;

        if (c->mode == SIM_CLOCK_DETERMINISTIC)
                return c->extra_cycles;
        elapsed = (c->inside ? c->entered_ns : monotonic_ns()) - c->start_ns - c->inside_ns;
        /* MHz are cycles per microsecond; split so that the product cannot overflow */
        us = elapsed / NSEC_PER_USEC;
        return us * c->mhz + (elapsed % NSEC_PER_USEC) * c->mhz / NSEC_PER_USEC + c->extra_cycles;
}

uint64_t sim_clock_access(SimClock *c) {
        uint64_t cost = c->cycles_per_access;

        if (cost > 0 && c->jitter > 0.0) {
                /* uniform in [1 - jitter, 1 + jitter) from the top 53 bits */
                double u = (double) (sim_clock_random(c) >> 11) * 0x1.0p-53;

                cost = (uint64_t) llround((double) cost * (1.0 + c->jitter * (2.0 * u - 1.0)));
        }
        c->extra_cycles += cost;
        if (c->mode != SIM_CLOCK_DETERMINISTIC && !c->inside) {
                c->entered_ns = monotonic_ns();
                c->inside = true;
        }
        return sim_clock_now(c);
}

void sim_clock_leave(SimClock *c) {
        if (!c->inside)
                return;
        c->inside_ns += monotonic_ns() - c->entered_ns;
        c->inside = false;
}

void sim_clock_advance(SimClock *c, uint64_t cycles) {
        c->extra_cycles += cycles;
}

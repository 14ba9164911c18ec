/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated time: wall-clock (TSC) cycles at the model's nominal frequency, following
 * CLOCK_MONOTONIC or, in deterministic mode, only register accesses and explicit advances
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/sim/sim-config.h"

typedef struct SimClock {
        SimClockMode mode;
        unsigned mhz;
        uint64_t start_ns;              /* CLOCK_MONOTONIC when the simulator started */
        uint64_t cycles_per_access;
        double jitter;
        uint64_t random_state;
        uint64_t extra_cycles;          /* access costs and explicit advances so far */
        /* Real time the simulator spent inside register accesses after timing them: not
         * simulated time, since a register takes a write at one instant, however long the
         * model takes to catch up (cold after an idle second, the first access of a batch
         * takes microseconds). */
        uint64_t inside_ns;
        uint64_t entered_ns;            /* CLOCK_MONOTONIC when the access in progress began */
        bool inside;
} SimClock;

void sim_clock_init(SimClock *c, const SimConfig *config, unsigned mhz);

/* A pseudo-random number from the configured seed (splitmix64): same seed, same sequence. */
uint64_t sim_clock_random(SimClock *c);

/* Charges one register access and returns the cycles since the simulator started: the instant
 * the access happens. Simulated time stands still until sim_clock_leave(). */
uint64_t sim_clock_access(SimClock *c);

/* Ends the access sim_clock_access() began: the time the simulator spent on it is not
 * simulated time. */
void sim_clock_leave(SimClock *c);

/* Cycles since the simulator started, without charging anything. */
uint64_t sim_clock_now(const SimClock *c);

void sim_clock_advance(SimClock *c, uint64_t cycles);

static inline double sim_clock_cycles_per_second(const SimClock *c) {
        return (double) c->mhz * 1e6;
}

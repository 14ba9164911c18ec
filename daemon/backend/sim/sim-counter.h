/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A free-running simulated counter: integer value of a given width plus a carried fraction
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct SimCounter {
        uint64_t value;
        double fraction;        /* part of a count carried to the next advance */
        double rate;            /* counts per wall-clock cycle while enabled */
} SimCounter;

/* Adds rate * cycles to c, keeping value within mask (2^width - 1). Returns true when the
 * value wrapped. When ret_exact is given it receives the unrounded increment. */
bool sim_counter_add(SimCounter *c, uint64_t cycles, uint64_t mask, double *ret_exact);

/* Sets the value (masked) and drops the carried fraction, as a register write does. */
static inline void sim_counter_set(SimCounter *c, uint64_t value, uint64_t mask) {
        c->value = value & mask;
        c->fraction = 0.0;
}

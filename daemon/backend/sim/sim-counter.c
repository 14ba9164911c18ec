/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulated counters
 */
#include <math.h>

#include "backend/sim/sim-counter.h"

/* Increments below 2^62 convert to an integer exactly enough; beyond that only the value
 * modulo the counter width matters, and no simulated counter narrower than 64 bits is wider
 * than 48 bits. */
#define COUNT_REDUCE_LIMIT 4611686018427387904.0        /* 2^62 */
#define COUNT_REDUCE_MODULUS 281474976710656.0          /* 2^48 */

bool sim_counter_add(SimCounter *c, uint64_t cycles, uint64_t mask, double *ret_exact) {
        double exact = c->rate * (double) cycles, total = exact + c->fraction, whole = floor(total);
        uint64_t increment, next;
        bool wrapped;

        if (ret_exact)
                *ret_exact = exact;
        /* nothing to add; also keeps a NaN rate from reaching the integer conversion */
        if (!(whole >= 1.0)) {
                if (total >= 0.0)
                        c->fraction = total;
                return false;
        }
        c->fraction = total - whole;
        if (whole >= COUNT_REDUCE_LIMIT)
                whole = fmod(whole, COUNT_REDUCE_MODULUS) + COUNT_REDUCE_MODULUS;
        increment = (uint64_t) whole;
        next = c->value + increment;
        /* a 64-bit counter wraps when the sum does, a narrower one when it passes its mask */
        if (mask == UINT64_MAX)
                wrapped = next < c->value;
        else
                wrapped = increment > mask || next > mask;
        c->value = next & mask;
        return wrapped;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a forwarder did with LIKWID's records (likwid-forward.h), in a header of its own so the
 * forwarder's internal state (likwid-forward-internal.h) can hold it without including the
 * forwarder's interface.
 */
#pragma once

#include <stdint.h>

typedef struct LikwidStats {
        uint64_t records, reads, writes, checks;
        uint64_t batches;               /* batch requests sent to pmugated */
        uint64_t deferred;              /* writes answered before they ran */
        uint64_t refused;               /* records answered with a refusal */
        uint64_t switch_offs;           /* writes answered without touching the CPU */
        uint64_t deferred_failures;     /* collected writes that failed after their answer */
} LikwidStats;

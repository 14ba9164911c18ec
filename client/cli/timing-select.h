/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: what a report shows, named: the hottest blocks or --block's, and IP mode's
 * samples per function and source line
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cli/timing-names.h"
#include "cli/timing-output.h"
#include "timing/timing-blocks.h"

/* Samples per name, most first after timing_tally_ips(); a hash of name and file finds an
 * item (a program has thousands of functions, and up to TIMING_BLOCKS_MAX distinct IPs). */
typedef struct TimingTally {
        TimingCount *items;
        size_t n, allocated;
        uint32_t *slots;                /* index + 1 into items, 0 free */
        size_t n_slots;                 /* a power of two, at least twice n */
} TimingTally;

typedef struct TimingShown {
        const TimingBlock **blocks;
        TimingName *names;
        char **listings;                /* with --block: each block's instructions */
        size_t n;
} TimingShown;

/* IP mode: the samples of every IP tallied per function (an IP in none by its file and
 * offset) and per source line. Returns 0 or -ENOMEM. */
int timing_tally_ips(const TimingAnalysis *an, TimingNamer *namer, TimingTally *functions,
                     TimingTally *lines);
void timing_tally_done(TimingTally *t);

/* The blocks to show, named: with block (--block's SYMBOL, SYMBOL+0xOFF or 0xADDR) those ending
 * at that branch, with their instructions; else the top hottest. Returns 0 or -ENOMEM. */
int timing_choose_blocks(const TimingAnalysis *an, TimingNamer *namer, const char *block, unsigned top,
                         TimingShown *ret);
void timing_shown_done(TimingShown *s);

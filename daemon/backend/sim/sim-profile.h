/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workload profiles: the TopDown fractions, IPC and utilization a simulated CPU runs with
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/sim/sim-model.h"

#define SIM_PROFILE_NAME_MAX 32U
#define SIM_EXTRA_EVENTS_MAX 32U
#define SIM_REASON_MAX 256U

/* An event the built-in tables do not know, counted at a fixed rate per unhalted cycle when
 * programmed on a GP counter without cmask, edge or invert. */
typedef struct SimExtraEvent {
        uint8_t event;
        uint8_t umask;
        double per_cycle;
} SimExtraEvent;

typedef struct SimProfile {
        char name[SIM_PROFILE_NAME_MAX];
        /* TopDown level 1, fractions of all slots; they sum to 1 (with smt_contention) */
        double retiring;
        double bad_speculation;
        double frontend_bound;
        double backend_bound;
        double smt_contention;          /* AMD only: slots dispatched to the SMT sibling */
        /* TopDown level 2, fractions of all slots, each within its level-1 parent */
        double heavy_operations;        /* within retiring */
        double branch_mispredicts;      /* within bad_speculation */
        double fetch_latency;           /* within frontend_bound */
        double memory_bound;            /* within backend_bound */
        double ipc;                     /* instructions per unhalted cycle */
        double utilization;             /* fraction of wall time the CPU is unhalted */
        double user_fraction;           /* fraction of unhalted time spent in ring 3 */
        SimExtraEvent extra_events[SIM_EXTRA_EVENTS_MAX];
        size_t n_extra_events;
} SimProfile;

/* Built-in profiles: "default" (an HPC code), "memory-bound", "frontend-bound", "branchy",
 * "compute". NULL for other names. */
const SimProfile *sim_profile_builtin(const char *name);
const SimProfile *sim_profile_builtin_by_index(size_t index);

bool sim_profile_name_valid(const char *name);

/* Sets one profile key ("retiring", ..., "event.0xEE.0xUU") from text and records it in
 * set_mask so that sim_profile_apply() can layer it over another profile. Returns -ENOENT for
 * a key that is not a profile key, -EINVAL with a reason for a bad value. */
int sim_profile_set(SimProfile *p, uint32_t *set_mask, const char *key, const char *value,
                    char *reterr_reason, size_t reason_size);

/* Copies the fields named in set_mask, and every extra event, from over onto p. */
void sim_profile_apply(SimProfile *p, const SimProfile *over, uint32_t set_mask);

/* Checks that the fractions are consistent, and that the model's TopDown formulas can express
 * the profile with non-negative event counts. */
int sim_profile_validate(const SimProfile *p, const SimModel *model, char *reterr_reason,
                         size_t reason_size);

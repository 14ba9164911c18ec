/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The [lbr] section of the simulator configuration: the program whose branch stacks the
 * simulated kernel samples (docs/SIMULATOR.md, "The [lbr] section")
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A cyclic branch list longer than a decoded sample's stack could not be checked whole. */
#define SIM_LBR_BRANCHES_MAX 64U
/* Normals in one branch's cycle mixture: a line of 199 characters holds about eight. */
#define SIM_LBR_MIX_MAX 8U
/* What a perf_branch_entry's 16-bit cycles field can carry. */
#define SIM_LBR_CYCLES_MAX 65535.0
/* The depth of the simulated LBR: architectural LBR and Skylake's have 32 entries, AMD's
 * LbrExtV2 (Zen 4, Zen 5) 16. `depth =` may ask for fewer. */
#define SIM_LBR_DEPTH_INTEL 32U
#define SIM_LBR_DEPTH_AMD 16U
/* Weights must sum to 1 within this. */
#define SIM_LBR_WEIGHT_EPSILON 1e-6
/* The user half of x86-64's canonical addresses (47 bits): what a user mapping can span. */
#define SIM_LBR_USER_ADDRESS_END UINT64_C(0x800000000000)
#define SIM_LBR_PAGE 4096U

typedef struct SimLbrNormal {
        double mean, sd, weight;
} SimLbrNormal;

typedef struct SimLbrBranch {
        unsigned line;                  /* where the file gave it, for errors found later */
        uint64_t from, to;
        SimLbrNormal mix[SIM_LBR_MIX_MAX];
        size_t n_mix;
} SimLbrBranch;

typedef struct SimLbrConfig {
        unsigned line;                  /* the [lbr] header */
        bool has_map;
        unsigned map_line;
        uint64_t map_start, map_len, map_pgoff;
        char *binary;                   /* an absolute path, NULL until given */
        unsigned depth;                 /* 0: the model's (SIM_LBR_DEPTH_*) */
        SimLbrBranch branches[SIM_LBR_BRANCHES_MAX];
        size_t n_branches;
} SimLbrConfig;

SimLbrConfig *sim_lbr_free(SimLbrConfig *l);

/* Sets key of an [lbr] section given on line. Returns 0; -ENOENT for an unknown key;
 * -EINVAL with the reason in reason for a bad value; -ENOMEM. */
int sim_lbr_set(SimLbrConfig *l, unsigned line, const char *key, const char *value, char *reason,
                size_t reason_size);

/* Checks the whole section once the file is read: a map, a binary and at least one branch,
 * every address inside the map. Returns 0, or -EINVAL with the reason and the line it is
 * about. */
int sim_lbr_validate(const SimLbrConfig *l, unsigned *ret_line, char *reason, size_t reason_size);

/* The stack depth the simulated LBR reports on a model. */
unsigned sim_lbr_depth(const SimLbrConfig *l, bool amd);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workload profiles: built-in set, key parsing, layering and validation
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backend/sim/sim-parse.h"
#include "backend/sim/sim-profile.h"
#include "macro.h"

/* Fractions written with a few decimals must still be accepted as summing to 1. */
#define SIM_FRACTION_TOLERANCE 1e-6

/* Sanity bounds: no simulated core retires more than 8 instructions per cycle, and no event
 * fires more than 64 times per cycle. */
#define SIM_IPC_MIN 0.001
#define SIM_IPC_MAX 8.0
#define SIM_EXTRA_RATE_MAX 64.0

#define SIM_EXTRA_EVENT_PREFIX "event."
/* Event codes and umasks are the 8-bit fields EVTSEL[7:0] and EVTSEL[15:8]. */
#define EVENT_CODE_MAX 0xFFU

/* Numbers chosen to look like codes seen on HPC systems; docs/SIMULATOR.md lists them. Every
 * profile keeps ipc >= 4 * (retiring - heavy_operations), which Skylake's heavy-operations
 * formula needs (see sim_profile_validate()). */
static const SimProfile builtin_profiles[] = {
        {
                .name = "default",      /* a stencil/CFD-like HPC code, mostly memory bound */
                .retiring = 0.35, .bad_speculation = 0.05, .frontend_bound = 0.15, .backend_bound = 0.45,
                .heavy_operations = 0.05, .branch_mispredicts = 0.03,
                .fetch_latency = 0.09, .memory_bound = 0.32,
                .ipc = 1.4, .utilization = 0.98, .user_fraction = 0.95,
        },
        {
                .name = "memory-bound", /* sparse linear algebra, STREAM-like */
                .retiring = 0.15, .bad_speculation = 0.03, .frontend_bound = 0.07, .backend_bound = 0.75,
                .heavy_operations = 0.02, .branch_mispredicts = 0.02,
                .fetch_latency = 0.04, .memory_bound = 0.65,
                .ipc = 0.55, .utilization = 0.98, .user_fraction = 0.97,
        },
        {
                .name = "frontend-bound",       /* large-code-footprint application */
                .retiring = 0.25, .bad_speculation = 0.08, .frontend_bound = 0.45, .backend_bound = 0.22,
                .heavy_operations = 0.05, .branch_mispredicts = 0.05,
                .fetch_latency = 0.30, .memory_bound = 0.10,
                .ipc = 0.9, .utilization = 0.95, .user_fraction = 0.90,
        },
        {
                .name = "branchy",      /* data-dependent control flow, e.g. tree search */
                .retiring = 0.30, .bad_speculation = 0.30, .frontend_bound = 0.20, .backend_bound = 0.20,
                .heavy_operations = 0.03, .branch_mispredicts = 0.27,
                .fetch_latency = 0.12, .memory_bound = 0.08,
                .ipc = 1.2, .utilization = 0.97, .user_fraction = 0.95,
        },
        {
                .name = "compute",      /* dense, vectorized kernel such as DGEMM */
                .retiring = 0.70, .bad_speculation = 0.02, .frontend_bound = 0.08, .backend_bound = 0.20,
                .heavy_operations = 0.05, .branch_mispredicts = 0.015,
                .fetch_latency = 0.03, .memory_bound = 0.05,
                .ipc = 2.8, .utilization = 1.0, .user_fraction = 0.99,
        },
};

typedef struct SimProfileKey {
        const char *key;
        size_t offset;
        double min, max;
} SimProfileKey;

static const SimProfileKey profile_keys[] = {
        { "retiring", offsetof(SimProfile, retiring), 0.0, 1.0 },
        { "bad_speculation", offsetof(SimProfile, bad_speculation), 0.0, 1.0 },
        { "frontend_bound", offsetof(SimProfile, frontend_bound), 0.0, 1.0 },
        { "backend_bound", offsetof(SimProfile, backend_bound), 0.0, 1.0 },
        { "heavy_operations", offsetof(SimProfile, heavy_operations), 0.0, 1.0 },
        { "branch_mispredicts", offsetof(SimProfile, branch_mispredicts), 0.0, 1.0 },
        { "fetch_latency", offsetof(SimProfile, fetch_latency), 0.0, 1.0 },
        { "memory_bound", offsetof(SimProfile, memory_bound), 0.0, 1.0 },
        { "ipc", offsetof(SimProfile, ipc), SIM_IPC_MIN, SIM_IPC_MAX },
        { "utilization", offsetof(SimProfile, utilization), 0.0, 1.0 },
        { "user_fraction", offsetof(SimProfile, user_fraction), 0.0, 1.0 },
        { "smt_contention", offsetof(SimProfile, smt_contention), 0.0, 1.0 },
};

const SimProfile *sim_profile_builtin(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(builtin_profiles); i++)
                if (strcmp(builtin_profiles[i].name, name) == 0)
                        return &builtin_profiles[i];
        return NULL;
}

const SimProfile *sim_profile_builtin_by_index(size_t index) {
        return index < ELEMENTSOF(builtin_profiles) ? &builtin_profiles[index] : NULL;
}

bool sim_profile_name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n >= SIM_PROFILE_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
                      name[i] == '-' || name[i] == '_'))
                        return false;
        return true;
}

static double *profile_field(SimProfile *p, const SimProfileKey *k) {
        return (double *) ((char *) p + k->offset);
}

static double profile_field_value(const SimProfile *p, const SimProfileKey *k) {
        return *(const double *) ((const char *) p + k->offset);
}

static int profile_add_extra_event(SimProfile *p, uint8_t event, uint8_t umask, double per_cycle) {
        for (size_t i = 0; i < p->n_extra_events; i++)
                if (p->extra_events[i].event == event && p->extra_events[i].umask == umask) {
                        p->extra_events[i].per_cycle = per_cycle;
                        return 0;
                }
        if (p->n_extra_events >= SIM_EXTRA_EVENTS_MAX)
                return -E2BIG;
        p->extra_events[p->n_extra_events++] = (SimExtraEvent) {
                .event = event, .umask = umask, .per_cycle = per_cycle,
        };
        return 0;
}

/* "event.0xEE.0xUU" */
static int parse_extra_event_key(const char *key, uint8_t *ret_event, uint8_t *ret_umask) {
        char buf[64], *dot;
        uint64_t event, umask;

        if (strncmp(key, SIM_EXTRA_EVENT_PREFIX, strlen(SIM_EXTRA_EVENT_PREFIX)) != 0)
                return -ENOENT;
        if (snprintf(buf, sizeof(buf), "%s", key + strlen(SIM_EXTRA_EVENT_PREFIX)) >= (int) sizeof(buf))
                return -EINVAL;
        dot = strchr(buf, '.');
        if (!dot)
                return -EINVAL;
        *dot = '\0';
        if (sim_parse_u64(buf, 0, EVENT_CODE_MAX, &event) < 0 ||
            sim_parse_u64(dot + 1, 0, EVENT_CODE_MAX, &umask) < 0)
                return -EINVAL;
        *ret_event = (uint8_t) event;
        *ret_umask = (uint8_t) umask;
        return 0;
}

int sim_profile_set(SimProfile *p, uint32_t *set_mask, const char *key, const char *value,
                    char *reterr_reason, size_t reason_size) {
        uint8_t event, umask;
        double v;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(profile_keys); i++) {
                const SimProfileKey *k = &profile_keys[i];

                if (strcmp(k->key, key) != 0)
                        continue;
                r = sim_parse_double(value, k->min, k->max, &v);
                if (r < 0) {
                        (void) snprintf(reterr_reason, reason_size,
                                        "%s = '%s': expected a number from %g to %g", key, value, k->min,
                                        k->max);
                        return -EINVAL;
                }
                *profile_field(p, k) = v;
                *set_mask |= UINT32_C(1) << i;
                return 0;
        }

        r = parse_extra_event_key(key, &event, &umask);
        if (r == -ENOENT)
                return -ENOENT;
        if (r < 0) {
                (void) snprintf(reterr_reason, reason_size,
                                "'%s': an extra event key is event.0xEE.0xUU (event code and umask, "
                                "0-0xff)", key);
                return -EINVAL;
        }
        if (sim_parse_double(value, 0.0, SIM_EXTRA_RATE_MAX, &v) < 0) {
                (void) snprintf(reterr_reason, reason_size,
                                "%s = '%s': expected a rate per cycle from 0 to %g", key, value,
                                SIM_EXTRA_RATE_MAX);
                return -EINVAL;
        }
        if (profile_add_extra_event(p, event, umask, v) < 0) {
                (void) snprintf(reterr_reason, reason_size, "more than %u extra events",
                                SIM_EXTRA_EVENTS_MAX);
                return -EINVAL;
        }
        return 0;
}

void sim_profile_apply(SimProfile *p, const SimProfile *over, uint32_t set_mask) {
        for (size_t i = 0; i < ELEMENTSOF(profile_keys); i++)
                if (set_mask & (UINT32_C(1) << i))
                        *profile_field(p, &profile_keys[i]) = profile_field_value(over, &profile_keys[i]);
        for (size_t i = 0; i < over->n_extra_events; i++)
                /* a full table is reported when the override itself is parsed */
                (void) profile_add_extra_event(p, over->extra_events[i].event, over->extra_events[i].umask,
                                               over->extra_events[i].per_cycle);
}

static int check_child(const char *child_name, double child, const char *parent_name, double parent,
                       char *reterr_reason, size_t reason_size) {
        if (child <= parent + SIM_FRACTION_TOLERANCE)
                return 0;
        (void) snprintf(reterr_reason, reason_size, "%s = %g exceeds its parent %s = %g",
                        child_name, child, parent_name, parent);
        return -EINVAL;
}

int sim_profile_validate(const SimProfile *p, const SimModel *model, char *reterr_reason,
                         size_t reason_size) {
        double sum = p->retiring + p->bad_speculation + p->frontend_bound + p->backend_bound +
                     p->smt_contention;
        int r;

        if (fabs(sum - 1.0) > SIM_FRACTION_TOLERANCE) {
                (void) snprintf(reterr_reason, reason_size,
                                "retiring + bad_speculation + frontend_bound + backend_bound%s = %.6g, "
                                "must be 1", p->smt_contention > 0.0 ? " + smt_contention" : "", sum);
                return -EINVAL;
        }
        /* Only AMD's pipeline utilization has a class for the slots the SMT sibling took. */
        if (model && !model->amd && p->smt_contention > 0.0) {
                (void) snprintf(reterr_reason, reason_size,
                                "smt_contention = %g: only the AMD models (zen4, zen5) have this class",
                                p->smt_contention);
                return -EINVAL;
        }
        r = check_child("heavy_operations", p->heavy_operations, "retiring", p->retiring, reterr_reason,
                        reason_size);
        if (r >= 0)
                r = check_child("branch_mispredicts", p->branch_mispredicts, "bad_speculation",
                                p->bad_speculation, reterr_reason, reason_size);
        if (r >= 0)
                r = check_child("fetch_latency", p->fetch_latency, "frontend_bound", p->frontend_bound,
                                reterr_reason, reason_size);
        if (r >= 0)
                r = check_child("memory_bound", p->memory_bound, "backend_bound", p->backend_bound,
                                reterr_reason, reason_size);
        if (r < 0)
                return r;

        /* Skylake's heavy operations are (RETIRE_SLOTS + MACRO_FUSED - INST_RETIRED) / SLOTS
         * with up to 4 slots per thread cycle; MACRO_FUSED cannot be negative. */
        if (model && model->family == SIM_FAMILY_SKYLAKE) {
                double light = p->retiring - p->heavy_operations;
                double needed = model->slots_width * light;

                if (p->ipc + SIM_FRACTION_TOLERANCE < needed) {
                        (void) snprintf(reterr_reason, reason_size,
                                        "ipc = %g is below %u * (retiring - heavy_operations) = %g, "
                                        "which %s "
                                        "needs: its heavy-operations formula would need a negative "
                                        "UOPS_RETIRED.MACRO_FUSED count",
                                        p->ipc, model->slots_width, needed, model->cpu->key);
                        return -EINVAL;
                }
        }
        return 0;
}

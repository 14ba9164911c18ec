/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulator configuration: profile inheritance and the profile of every CPU
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sim/sim-config.h"
#include "log.h"
#include "macro.h"

/* "base =" chains longer than this are loops in practice. */
#define PROFILE_BASE_DEPTH_MAX 16U

static const char *config_path(const SimConfig *c) {
        return c->path ?: "(built-in simulator configuration)";
}

static const SimProfileDef *find_def(const SimConfig *c, const char *name) {
        for (size_t i = 0; i < c->n_profiles; i++)
                if (strcmp(c->profiles[i].name, name) == 0)
                        return &c->profiles[i];
        return NULL;
}

/* A profile by name: a [profile] section layered over its base, else a built-in. ref_line is
 * the line that asked for it, for messages. */
static int resolve_profile(const SimConfig *c, const char *name, unsigned ref_line, unsigned depth,
                           SimProfile *ret) {
        const SimProfileDef *def = find_def(c, name);
        const SimProfile *builtin = sim_profile_builtin(name);
        SimProfile p;
        int r;

        if (depth > PROFILE_BASE_DEPTH_MAX)
                return sim_log_invalid("%s:%u: [profile %s] is part of a loop of 'base =' references",
                                       config_path(c), ref_line, name);
        if (!def) {
                if (!builtin)
                        return sim_log_invalid("%s:%u: unknown profile '%s' (built-in: default, "
                                               "memory-bound, frontend-bound, branchy, compute; or "
                                               "define [profile %s])",
                                               config_path(c), ref_line, name, name);
                *ret = *builtin;
                return 0;
        }

        if (def->base[0] != '\0' && strcmp(def->base, def->name) != 0)
                r = resolve_profile(c, def->base, def->line, depth + 1, &p);
        else if (builtin) {
                p = *builtin;
                r = 0;
        } else if (def->base[0] != '\0')
                r = sim_log_invalid("%s:%u: [profile %s] is based on itself, and no built-in profile "
                                    "has that name",
                                    config_path(c), def->line, name);
        else
                r = resolve_profile(c, "default", def->line, depth + 1, &p);
        if (r < 0)
                return r;

        sim_profile_apply(&p, &def->overrides, def->set_mask);
        (void) snprintf(p.name, sizeof(p.name), "%s", name);
        *ret = p;
        return 0;
}

static int check_cpus(const SimConfig *c, const uint32_t *cpus, size_t n, uint32_t n_cpus, unsigned line,
                      const char *what) {
        for (size_t i = 0; i < n; i++)
                if (cpus[i] >= n_cpus)
                        return sim_log_invalid("%s:%u: %s: CPU %u does not exist; the simulated machine "
                                               "has CPUs 0-%u",
                                               config_path(c), line, what, cpus[i], n_cpus - 1);
        return 0;
}

int sim_config_resolve_profiles(const SimConfig *c, const SimModel *m, uint32_t n_cpus,
                                SimProfile **ret_profiles, SimPhase **ret_phases) {
        _cleanup_free_ SimProfile *profiles = NULL;
        _cleanup_free_ SimPhase *phases = NULL;
        char reason[SIM_REASON_MAX];
        SimProfile base;
        int r;

        r = check_cpus(c, c->offline_cpus, c->n_offline_cpus, n_cpus, c->offline_line, "offline_cpus");
        if (r < 0)
                return r;
        if (c->n_offline_cpus >= n_cpus)
                return sim_log_invalid("%s:%u: offline_cpus takes every CPU offline", config_path(c),
                                       c->offline_line);
        r = check_cpus(c, c->eio_cpus, c->n_eio_cpus, n_cpus, c->eio_line, "eio_cpus");
        if (r < 0)
                return r;

        /* Every defined profile must make sense for this model, used or not. */
        for (size_t i = 0; i < c->n_profiles; i++) {
                const SimProfileDef *def = &c->profiles[i];

                r = resolve_profile(c, def->name, def->line, 0, &base);
                if (r < 0)
                        return r;
                if (sim_profile_validate(&base, m, reason, sizeof(reason)) < 0)
                        return sim_log_invalid("%s:%u: [profile %s]: %s", config_path(c), def->line,
                                               def->name, reason);
        }

        r = resolve_profile(c, "default", 0, 0, &base);
        if (r < 0)
                return r;
        if (sim_profile_validate(&base, m, reason, sizeof(reason)) < 0)
                return sim_log_invalid("%s: profile default: %s", config_path(c), reason);

        profiles = calloc(n_cpus, sizeof(SimProfile));
        phases = calloc(n_cpus, sizeof(SimPhase));
        if (!profiles || !phases)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < n_cpus; cpu++)
                profiles[cpu] = base;

        /* A rule with "profile =" starts its CPUs over from that profile; one without it
         * adjusts what earlier rules gave them. */
        for (size_t i = 0; i < c->n_rules; i++) {
                const SimCpuRule *rule = &c->rules[i];
                SimProfile named = {}, other = {};

                r = check_cpus(c, rule->cpus, rule->n_cpus, n_cpus, rule->line, "[cpus]");
                if (r < 0)
                        return r;
                if (rule->profile[0] != '\0' && rule->phase_ms > 0)
                        return sim_log_invalid("%s:%u: [cpus %s]: profile = and phase = both name what the "
                                               "CPUs run; use one", config_path(c), rule->line,
                                               rule->cpus_text);
                if (rule->profile[0] != '\0') {
                        r = resolve_profile(c, rule->profile, rule->line, 0, &named);
                        if (r < 0)
                                return r;
                }
                if (rule->phase_ms > 0) {
                        if (m->amd)
                                return sim_log_invalid("%s:%u: [cpus %s]: phase = is not simulated on AMD "
                                                       "models", config_path(c), rule->line, rule->cpus_text);
                        r = resolve_profile(c, rule->phase_profile[0], rule->line, 0, &named);
                        if (r < 0)
                                return r;
                        r = resolve_profile(c, rule->phase_profile[1], rule->line, 0, &other);
                        if (r < 0)
                                return r;
                }
                for (size_t k = 0; k < rule->n_cpus; k++) {
                        SimProfile *p = &profiles[rule->cpus[k]];
                        SimPhase *ph = &phases[rule->cpus[k]];

                        if (rule->profile[0] != '\0' || rule->phase_ms > 0)
                                *p = named;
                        if (rule->profile[0] != '\0')
                                ph->period_ms = 0;
                        if (rule->phase_ms > 0)
                                *ph = (SimPhase) { .other = other, .period_ms = rule->phase_ms };
                        sim_profile_apply(p, &rule->overrides, rule->set_mask);
                        if (sim_profile_validate(p, m, reason, sizeof(reason)) < 0)
                                return sim_log_invalid("%s:%u: [cpus %s]: CPU %u: %s", config_path(c),
                                                       rule->line, rule->cpus_text, rule->cpus[k], reason);
                        if (ph->period_ms == 0)
                                continue;
                        /* a rule's adjustments hold in both phases */
                        sim_profile_apply(&ph->other, &rule->overrides, rule->set_mask);
                        if (sim_profile_validate(&ph->other, m, reason, sizeof(reason)) < 0)
                                return sim_log_invalid("%s:%u: [cpus %s]: CPU %u, second phase: %s",
                                                       config_path(c), rule->line, rule->cpus_text,
                                                       rule->cpus[k], reason);
                }
        }

        *ret_profiles = TAKE_PTR(profiles);
        if (ret_phases)
                *ret_phases = TAKE_PTR(phases);
        return 0;
}

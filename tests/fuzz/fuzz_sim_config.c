/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the simulator configuration (--sim-config), parsed and then resolved into the
 * profile of every simulated CPU as the simulated backend does at start
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/sim/sim-config.h"
#include "backend/sim/sim-lbr.h"
#include "backend/sim/sim-model.h"
#include "backend/sim/sim-profile.h"
#include "fuzz_util.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void assert_cpus_sorted(const uint32_t *cpus, size_t n) {
        for (size_t i = 0; i < n; i++) {
                fuzz_assert(cpus[i] < PMUGATE_CPUS_MAX);
                if (i > 0)
                        fuzz_assert(cpus[i - 1] < cpus[i]);
        }
}

/* What the perf driver trusts of an accepted [lbr]: every address in the map, weights that
 * sum to 1, bounded counts. */
static void assert_lbr_valid(const SimLbrConfig *l) {
        fuzz_assert(l->has_map && l->map_len > 0 && l->map_start % SIM_LBR_PAGE == 0);
        fuzz_assert(l->map_len <= SIM_LBR_USER_ADDRESS_END - l->map_start);
        fuzz_assert(l->binary && l->binary[0] == '/');
        fuzz_assert(l->depth <= SIM_LBR_DEPTH_INTEL);
        fuzz_assert(sim_lbr_depth(l, false) >= 1 && sim_lbr_depth(l, true) <= SIM_LBR_DEPTH_AMD);
        fuzz_assert(l->n_branches >= 1 && l->n_branches <= SIM_LBR_BRANCHES_MAX);
        for (size_t i = 0; i < l->n_branches; i++) {
                const SimLbrBranch *b = &l->branches[i];
                double sum = 0.0;

                fuzz_assert(b->from >= l->map_start && b->from - l->map_start < l->map_len);
                fuzz_assert(b->to >= l->map_start && b->to - l->map_start < l->map_len);
                fuzz_assert(b->n_mix >= 1 && b->n_mix <= SIM_LBR_MIX_MAX);
                for (size_t k = 0; k < b->n_mix; k++) {
                        fuzz_assert(isfinite(b->mix[k].mean) && b->mix[k].mean >= 0.0 &&
                                    b->mix[k].mean <= SIM_LBR_CYCLES_MAX);
                        fuzz_assert(isfinite(b->mix[k].sd) && b->mix[k].sd >= 0.0 &&
                                    b->mix[k].sd <= SIM_LBR_CYCLES_MAX);
                        fuzz_assert(b->mix[k].weight > 0.0 && b->mix[k].weight <= 1.0);
                        sum += b->mix[k].weight;
                }
                fuzz_assert(fabs(sum - 1.0) <= SIM_LBR_WEIGHT_EPSILON);
        }
}

static void assert_config_valid(const SimConfig *c) {
        fuzz_assert(c->path && strcmp(c->path, "fuzz.conf") == 0);
        fuzz_assert(FUZZ_TERMINATED(c->model));
        fuzz_assert(c->sockets >= 1 && c->sockets <= SIM_SOCKETS_MAX);
        fuzz_assert(c->cores_per_socket >= 1 && c->cores_per_socket <= SIM_CORES_PER_SOCKET_MAX);
        fuzz_assert(c->clock_mode == SIM_CLOCK_REALTIME || c->clock_mode == SIM_CLOCK_DETERMINISTIC);
        fuzz_assert(isfinite(c->jitter) && c->jitter >= 0);
        fuzz_assert(isfinite(c->imc_read_gbps) && isfinite(c->imc_write_gbps) && isfinite(c->imc_dclk_mhz));
        fuzz_assert(c->n_eio_msrs <= SIM_EIO_MSRS_MAX);
        assert_cpus_sorted(c->offline_cpus, c->n_offline_cpus);
        assert_cpus_sorted(c->eio_cpus, c->n_eio_cpus);
        fuzz_assert(c->n_profiles <= SIM_CONFIG_SECTIONS_MAX);
        for (size_t i = 0; i < c->n_profiles; i++) {
                fuzz_assert(sim_profile_name_valid(c->profiles[i].name));
                fuzz_assert(FUZZ_TERMINATED(c->profiles[i].base));
                fuzz_assert(c->profiles[i].overrides.n_extra_events <= SIM_EXTRA_EVENTS_MAX);
                for (size_t j = 0; j < i; j++)
                        fuzz_assert(strcmp(c->profiles[i].name, c->profiles[j].name) != 0);
        }
        fuzz_assert(c->n_rules <= SIM_CONFIG_SECTIONS_MAX);
        for (size_t i = 0; i < c->n_rules; i++) {
                fuzz_assert(c->rules[i].n_cpus >= 1);
                assert_cpus_sorted(c->rules[i].cpus, c->rules[i].n_cpus);
                fuzz_assert(FUZZ_TERMINATED(c->rules[i].cpus_text));
                fuzz_assert(FUZZ_TERMINATED(c->rules[i].profile));
                fuzz_assert(c->rules[i].overrides.n_extra_events <= SIM_EXTRA_EVENTS_MAX);
        }
        if (c->lbr)
                assert_lbr_valid(c->lbr);
}

/* What the simulated backend does next: every CPU of the configured machine gets a profile,
 * and each one it gets is consistent for the model. */
static void resolve(const SimConfig *c) {
        _cleanup_free_ SimProfile *profiles = NULL;
        uint64_t n_cpus = (uint64_t) c->sockets * c->cores_per_socket * (c->smt ? 2 : 1);
        char reason[SIM_REASON_MAX];
        SimModel model;
        int r;

        fuzz_assert(sim_model_init(c->model[0] != '\0' ? c->model : "skx", c->smt, &model) == 0);
        if (n_cpus > PMUGATE_CPUS_MAX)
                return;
        r = sim_config_resolve_profiles(c, &model, (uint32_t) n_cpus, &profiles, NULL);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0) {
                fuzz_assert(!profiles);
                return;
        }
        fuzz_assert(profiles);
        for (uint32_t cpu = 0; cpu < n_cpus; cpu++) {
                fuzz_assert(sim_profile_name_valid(profiles[cpu].name));
                fuzz_assert(profiles[cpu].n_extra_events <= SIM_EXTRA_EVENTS_MAX);
                fuzz_assert(sim_profile_validate(&profiles[cpu], &model, reason, sizeof(reason)) == 0);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *copy = fuzz_copy(data, size);
        _cleanup_fclose_ FILE *f = fuzz_open_stream(copy, size);
        _cleanup_(sim_config_freep) SimConfig *c = NULL;
        int r;

        r = sim_config_load_file(f, "fuzz.conf", &c);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ENOMEM || r == -EIO);
        if (r < 0) {
                fuzz_assert(!c);
                return 0;
        }
        fuzz_assert(c);
        assert_config_valid(c);
        resolve(c);
        return 0;
}

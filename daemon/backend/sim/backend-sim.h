/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated PMU backend ('sim'): a Skylake-SP, Cascade Lake, Ice Lake-SP or Sapphire
 * Rapids machine whose core PMU, RAPL and (SKX/CLX) IMC PMON behave like the hardware and the
 * kernel, driven by workload profiles (docs/SIMULATOR.md)
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/machine.h"

typedef struct SimModel SimModel;
typedef struct SimRates SimRates;
typedef struct SimLbrConfig SimLbrConfig;

/* Whether this daemon has the simulator: false in a build with -Dsimulator=false, whose
 * backend_sim_new() returns -EOPNOTSUPP (backend-sim-absent.c). */
bool backend_sim_built(void);

/* Builds the simulated machine and its backend. model_key is "skx", "clx", "icx" or "spr"; it
 * may be NULL when the configuration file names the model, and it wins over the file when
 * both do. config_path may be NULL for the built-in defaults. Logs the reason and returns
 * negative errno on failure (unknown model, unreadable file, bad line: "FILE:LINE: reason").
 * The backend points at the machine: free the backend first. */
int backend_sim_new(const char *model_key, const char *config_path /* may be NULL */,
                    Machine **ret_machine, Backend **ret_backend);

/* Lets simulated time pass, in wall-clock (TSC) cycles at the model's nominal frequency. In
 * deterministic mode this and register accesses are the only way time moves. Returns -EINVAL
 * when b is not a simulated backend. */
int backend_sim_advance(Backend *b, uint64_t cycles);

/* For the simulator's perf driver (sim-perf.c), which imitates the kernel on top of this
 * backend's registers. Each returns NULL or -EINVAL when b is not a simulated backend. */
/* Simulated time since the simulator started, in ns of the TSC at the nominal frequency;
 * reading it charges no access. */
int backend_sim_now_ns(Backend *b, uint64_t *ret);
const SimModel *backend_sim_model(Backend *b);
/* What an online CPU's events count per wall-clock cycle; NULL for an offline or absent CPU. */
const SimRates *backend_sim_cpu_rates(Backend *b, uint32_t cpu);

/* The configuration's [lbr] section, or NULL without one (or when b is not simulated); with
 * the [clock] seed, which the driver's draws start from. */
const SimLbrConfig *backend_sim_lbr(Backend *b, uint64_t *ret_seed);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulator's perf driver: a small imitation of the kernel's x86 and AMD perf drivers on
 * top of the simulated PMU registers (docs/SIMULATOR.md, "The perf layer")
 */
#pragma once

#include "backend/backend.h"
#include "backend/perf-catalog.h"
#include "backend/perf-driver.h"

/* Hardware events (attr.type PERF_TYPE_RAW / PERF_TYPE_HARDWARE / a simulated uncore type)
 * count on the simulated PMU of b as the kernel would program it; software events
 * (PERF_TYPE_SOFTWARE) go to software (the kernel's driver: real task-clock etc.), which the
 * simulator's driver owns. Handles of simulated events are SIM_PERF_HANDLE_BASE + i. */
#define SIM_PERF_HANDLE_BASE (1 << 24)
/* The driver owns software from the call on, also when it fails. Free the driver (its
 * vtable's free) before the backend: closing its events touches the simulated registers. */
int backend_sim_perf_driver_new(Backend *b, PerfDriver *software /* owned */, PerfDriver **ret);

/* Lets the driver rotate multiplexed groups and bring every count up to now, as the kernel's
 * hrtimer does every perf_event_mux_interval_ms; the server may call it from a timer. Reads,
 * opens, enables and closes do the same lazily. */
void backend_sim_perf_driver_tick(PerfDriver *d);

/* The PMUs the simulated machine shows, as a kernel's sysfs would (for perf/perf-catalog.c). */
int backend_sim_perf_catalog(Backend *b, PerfCatalog **ret);

/* The simulator's perf layer as main() sets it up, under a name a build without the simulator
 * also has (backend-sim-absent.c: -EOPNOTSUPP), so that no simulator function is linked into
 * that build: its perf driver over the kernel's (software, owned from the call on whatever it
 * returns) with the tick the server runs while events are open. */
int backend_sim_perf_driver(Backend *b, PerfDriver *software, PerfDriver **ret_driver,
                            void (**ret_tick)(PerfDriver *d));

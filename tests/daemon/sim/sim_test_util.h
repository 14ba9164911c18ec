/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the simulator tests: building backends from config text, register
 * access that must succeed, and measuring event counts over a fixed number of cycles
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/machine.h"
#include "backend/perf-driver.h"
#include "backend/sim/backend-sim.h"

#define SIM_TEST_EVENTS_MAX 32U

typedef struct SimTest {
        Backend *backend;
        Machine *machine;
} SimTest;

/* Builds a backend from config text (NULL: built-in defaults); fails the test on error. */
SimTest sim_test_new(const char *model, const char *config_text);
void sim_test_free(SimTest *t);

/* Tries to build a backend; returns its result and, in ret_log, what it logged (caller frees). */
int sim_test_try(const char *model, const char *config_text, char **ret_log);

/* Path of a bundled config in policy/sim ($PMUGATE_SIM_CONFIG_DIR). */
void sim_test_bundled_path(const char *name, char *buf, size_t size);

uint64_t sim_rd(SimTest *t, uint32_t cpu, uint32_t reg);
void sim_wr(SimTest *t, uint32_t cpu, uint32_t reg, uint64_t value);
int sim_rd_err(SimTest *t, uint32_t cpu, uint32_t reg);
int sim_wr_err(SimTest *t, uint32_t cpu, uint32_t reg, uint64_t value);
void sim_advance(SimTest *t, uint64_t cycles);

/* Counts of one CPU over one measurement. */
typedef struct SimSample {
        double event[SIM_TEST_EVENTS_MAX];
        double fixed[4];
        uint64_t perf_metrics;
} SimSample;

/* Measures raw EVTSEL encodings (event|umask<<8|...|cmask<<24, EN/USR/OS added) on every CPU
 * of cpus[] at once, as many per round as the model has GP counters, each round `cycles`
 * long; fixed counters (all rings) and PERF_METRICS come from the first round. */
void sim_measure(SimTest *t, const uint32_t *cpus, size_t n_cpus, const uint64_t *evtsels, size_t n_events,
                 uint64_t cycles, SimSample *ret_samples);

/* Nominal cycles per second of the simulated model. */
double sim_test_hz(SimTest *t);

/* The kernel's perf driver opened in this process, for the simulator's perf driver's
 * `software` (the tests run as root, or where perf_event_paranoid allows software events). */
PerfDriver *sim_test_kernel_driver(void);

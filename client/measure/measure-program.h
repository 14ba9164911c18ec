/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Register programming: which registers a measurement owns, and the batches that start,
 * sample and stop it
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "measure/measure-internal.h"

/* Registers (Intel SDM vol. 4, architectural MSRs) */
#define MSR_TSC 0x010U
#define MSR_PMC0 0x0C1U
#define MSR_PERFEVTSEL0 0x186U
#define MSR_FIXED_CTR0 0x309U
#define MSR_PERF_METRICS 0x329U
#define MSR_FIXED_CTR_CTRL 0x38DU
#define MSR_GLOBAL_CTRL 0x38FU

/* AMD Zen 4 / Zen 5 (PerfMonV2): PerfEvtSel i at 0xC0010200 + 2i, PerfCtr i beside it, and
 * PerfCntrGlobalCtl, without which an enabled counter does not count. */
#define MSR_TSC 0x010U
#define MSR_AMD_PERF_CTL0 0xC0010200U
#define MSR_AMD_PERF_CTR0 0xC0010201U
#define MSR_AMD_GLOBAL_CTL 0xC0000301U
#define AMD_PAIR_STRIDE 2U

#define FIXED_CTRL_OS UINT64_C(0x1)
#define FIXED_CTRL_USR UINT64_C(0x2)
#define FIXED_CTRL_ENABLE UINT64_C(0x3)
#define FIXED_CTRL_FIELD UINT64_C(0xF)
#define FIXED_CTRL_FIELD_BITS 4U
#define GLOBAL_FIXED_SHIFT 32U
#define GLOBAL_PERF_METRICS_BIT 48U
#define PERF_METRICS_FIELD_BITS 8U
#define PERF_METRICS_FULL_SCALE 0xFFU

typedef enum BatchKind {
        BATCH_SAMPLE,
        BATCH_START,
        BATCH_STOP,
} BatchKind;

static inline bool mask_bit(uint64_t mask, unsigned i) {
        return mask & (UINT64_C(1) << i);
}

/* Picks the register layout of info's CPU: AMD's for AuthenticAMD, Intel's otherwise. */
void measure_set_layout(pmugate_measure *m);

static inline uint32_t measure_evtsel(const pmugate_measure *m, unsigned counter) {
        return m->reg_evtsel0 + m->reg_stride * counter;
}

static inline uint32_t measure_pmc(const pmugate_measure *m, unsigned counter) {
        return m->reg_pmc0 + m->reg_stride * counter;
}

/* Most operations one CPU runs between its counters' stop and start: EVTSEL and PMC per GP
 * counter, FIXED_CTR_CTRL, each fixed counter and PERF_METRICS. */
#define MEASURE_CPU_STEPS_MAX (2 * GP_COUNTERS_MAX + 1 + FIXED_COUNTERS_MAX + 1)

/* Whether the daemon runs a per-CPU sequence sent once for many CPUs ("each"), so that the
 * same operations on every CPU cost a CPU list entry per CPU instead of an op per CPU. */
bool measure_uses_each(const pmugate_measure *m);

/* What the measurement owns: GLOBAL_CTRL enable bits, FIXED_CTR_CTRL fields, and the
 * registers each sample reads (sweep_regs, with the position of every counter in it). */
int measure_plan_registers(pmugate_measure *m);

/* Fills b for CPUs [first, first + n) of m. Every kind first stops the CPUs' counters through
 * their GLOBAL_CTRL bits, so that all counters of a CPU cover the same window, and ends by
 * starting them (BATCH_STOP: restoring the bits). BATCH_SAMPLE and BATCH_STOP read every
 * counter in one compact op (its first result in ret_sweep) and reset SLOTS then
 * PERF_METRICS; a sample with rotate_from >= 0 programs the event set after rotate_from.
 * BATCH_START programs set 0 and zeroes the counters (and where the TSC is AMD's time base,
 * reads it after them: its first result in ret_sweep); BATCH_STOP writes back the saved
 * registers and zeroes the counters. With read_tsc (Intel, SMT window alignment), each CPU's
 * TSC is read right after its counters stop (result 2j + 1 for the j-th CPU; not in
 * BATCH_START) and right after they start (among the last 2n results; not in BATCH_STOP):
 * measure_tsc_results() finds them. */
int measure_build_batch(pmugate_batch *b, const pmugate_measure *m, size_t first, size_t n, BatchKind kind,
                        int rotate_from, int *ret_sweep);

/* Where the j-th CPU's TSC readings of a batch built for n CPUs are, or -1 when it has none. */
static inline void measure_tsc_results(const pmugate_measure *m, const pmugate_batch *b, BatchKind kind,
                                       size_t n, size_t j, int *ret_before, int *ret_after) {
        *ret_before = m->read_tsc && kind != BATCH_START ? (int) (2 * j + 1) : -1;
        *ret_after = m->read_tsc && kind != BATCH_STOP ? (int) (pmugate_batch_size(b) - 2 * n + 2 * j + 1) :
                                                         -1;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * timing_open's checks (docs/PERF.md, "Timing"): the period and the rate it gives, the CPU
 * model and its branch stack, and the one sampling attr the opener lets through.
 *
 * A timing event samples one process of the caller's with the single attr of
 * proto/timing-attr.h. Everything here decides whether that attr, with this period and on
 * this machine, is served; perf-target.c decides whose process it may be.
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/machine.h"
#include "backend/perf-catalog.h"
#include "timing-attr.h"

/* refusal.h; not included, for perf-attr.c has a refuse() of its own */
struct Refusal;

/* The bounds and the default of mode m's period (pmugate-limits.h). */
uint64_t timing_period_min(TimingMode m);
uint64_t timing_period_max(TimingMode m);
uint64_t timing_period_default(TimingMode m);

/* The kernel's perf_event_max_sample_rate (samples per second and CPU) from
 * <root>/proc/sys/kernel/perf_event_max_sample_rate, read as hostile input: a regular file of
 * one decimal from 1 to TIMING_KERNEL_SAMPLE_RATE_MAX. Returns 0, -EBADMSG for a value that
 * is none, or the open's or read's negative errno. */
int timing_kernel_max_sample_rate(const char *root, uint64_t *ret);

/* The events of mode m count per second: ns of cpu-clock in IP mode, cycles in branch mode
 * at tsc_hz (the hello "tsc_hz"), else the model's nominal rate. 0 when unknown. */
uint64_t timing_events_per_second(TimingMode m, uint64_t tsc_hz, const CpuModel *model);

/* The period of a request (0: the default) within its mode's bounds, and the rate it gives
 * (events_per_second / period) at most kernel_max_rate. Returns 0 with *ret_period, or
 * refuses (PROTO_E_BAD_FIELD) saying which bound and what to ask instead. */
int timing_check_period(TimingMode m, uint64_t period, uint64_t events_per_second, uint64_t kernel_max_rate,
                        uint64_t *ret_period, struct Refusal *ret_refusal);

/* Whether this machine can sample mode m: IP mode anywhere; branch mode needs the core PMU's
 * branch stack (catalogue "branches" above 0) whose entries carry cycles, which AMD's LbrExtV2
 * does not. Returns 0 or refuses (PROTO_E_BAD_FIELD) saying why. */
int timing_check_model(TimingMode m, const CpuModel *model, const PerfCatalog *catalog,
                       struct Refusal *ret_refusal);

/* The opener's test: attr is byte for byte timing_attr_fill() of the mode its type and config
 * name, with its own period and on_exec, and that period is inside the mode's bounds. Nothing
 * else that samples is ever opened. */
bool timing_attr_is_ours(const struct perf_event_attr *attr);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the counter registers hold: EVTSEL fields, the fixed counters, PERF_METRICS. Both the
 * event table (event-table.c) and event lookup (events.c) encode events with them.
 */
#pragma once

#include <stdint.h>

/* EVTSEL fields (Intel SDM vol. 3B, IA32_PERFEVTSELx). An event's config holds only the
 * fields that select what is counted; the measurement adds USR, OS and EN, and never INT, PC
 * or ANY. */
#define EVTSEL_EVENT_MASK UINT64_C(0xFF)
#define EVTSEL_UMASK_SHIFT 8
#define EVTSEL_UMASK_MAX 0xFFU
#define EVTSEL_USR (UINT64_C(1) << 16)
#define EVTSEL_OS (UINT64_C(1) << 17)
#define EVTSEL_EDGE (UINT64_C(1) << 18)
#define EVTSEL_ANY (UINT64_C(1) << 21)
#define EVTSEL_EN (UINT64_C(1) << 22)
#define EVTSEL_INV (UINT64_C(1) << 23)
#define EVTSEL_CMASK_SHIFT 24
#define EVTSEL_CMASK_MAX 0xFFU
#define EVENT_CONFIG_MASK UINT64_C(0xFF84FFFF)   /* event, umask, edge, inv, cmask */
/* AMD's PerfEvtSel adds event[11:8] in bits 35:32. */
#define EVENT_CONFIG_MASK_AMD UINT64_C(0xFFF84FFFF)

/* Fixed counters with an architectural meaning: INST_RETIRED.ANY, CPU_CLK_UNHALTED.THREAD,
 * CPU_CLK_UNHALTED.REF_TSC and TOPDOWN.SLOTS. */
#define FIXED_COUNTERS_MAX 4U
#define FIXED_INST_RETIRED 0
#define FIXED_CLK_UNHALTED 1
#define FIXED_REF_TSC 2
#define FIXED_SLOTS 3

/* PERF_METRICS: eight 8-bit fractions of SLOTS; bytes 0-3 are level 1, 4-7 level 2. */
#define PERF_METRICS_FIELDS 8U
#define PERF_METRICS_L1_FIELDS 4U

#define GP_COUNTERS_MAX 8U
#define GP_MASK_ALL ((UINT32_C(1) << GP_COUNTERS_MAX) - 1)

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LIKWID's core PMU programming as perf events, for nodes that count via perf
 *
 * There pmugated refuses register writes to the PMU and opens perf events instead (hello
 * "counting" via "perf"). LIKWID still programs registers: the forwarder keeps per CPU what
 * LIKWID wrote (the shadow), opens the matching events when LIKWID enables counting, and
 * answers LIKWID's counter reads from the events' counts as the registers would hold them.
 * Pure functions, so the translation can be tested without a daemon.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate/pmugate.h"

#define LIKWID_PERF_GP_MAX 8U
#define LIKWID_PERF_FIXED_MAX 4U
#define LIKWID_PERF_METRICS_MAX 8U
/* Every counter and SLOTS with every metric event */
#define LIKWID_PERF_EVENTS_MAX (LIKWID_PERF_GP_MAX + LIKWID_PERF_FIXED_MAX + LIKWID_PERF_METRICS_MAX)
/* The topdown metric events with their SLOTS leader; the counters */
#define LIKWID_PERF_GROUPS_MAX 2U

/* The fixed counters' pseudo encodings of the kernel's x86 driver, SLOTS and the topdown
 * metric events (one per PERF_METRICS byte). */
#define LIKWID_PERF_INST_RETIRED 0x00c0U
#define LIKWID_PERF_CPU_CLK_UNHALTED 0x003cU
#define LIKWID_PERF_REF_TSC 0x0300U
#define LIKWID_PERF_SLOTS 0x0400U
#define LIKWID_PERF_METRIC(byte) (0x8000U + 0x100U * (byte))

/* PERFEVTSEL bits LIKWID sets that have a perf attr equivalent. */
#define LIKWID_EVTSEL_EVENT_UMASK 0xFFFFU
#define LIKWID_EVTSEL_USR (UINT64_C(1) << 16)
#define LIKWID_EVTSEL_OS (UINT64_C(1) << 17)
#define LIKWID_EVTSEL_EDGE (UINT64_C(1) << 18)
#define LIKWID_EVTSEL_PC (UINT64_C(1) << 19)
#define LIKWID_EVTSEL_INT (UINT64_C(1) << 20)
#define LIKWID_EVTSEL_ANY (UINT64_C(1) << 21)
#define LIKWID_EVTSEL_EN (UINT64_C(1) << 22)
#define LIKWID_EVTSEL_INV (UINT64_C(1) << 23)
#define LIKWID_EVTSEL_CMASK (UINT64_C(0xFF) << 24)
#define LIKWID_GLOBAL_FIXED_SHIFT 32U
#define LIKWID_GLOBAL_METRICS_BIT 48U

/* What a core PMU register is to the forwarder on a perf node. */
typedef enum LikwidPerfRegKind {
        LIKWID_PERF_REG_NONE,           /* not the core PMU's: the daemon answers as before */
        LIKWID_PERF_REG_EVTSEL,         /* IA32_PERFEVTSELn */
        LIKWID_PERF_REG_PMC,            /* IA32_PMCn, IA32_A_PMCn */
        LIKWID_PERF_REG_FIXED_CTR,      /* IA32_FIXED_CTRn */
        LIKWID_PERF_REG_FIXED_CTRL,     /* IA32_FIXED_CTR_CTRL */
        LIKWID_PERF_REG_GLOBAL_CTRL,    /* IA32_PERF_GLOBAL_CTRL: enable = start */
        LIKWID_PERF_REG_PERF_METRICS,   /* MSR_PERF_METRICS */
        LIKWID_PERF_REG_STATUS,         /* overflow status, reset, set, in-use: nothing
                                         * overflows under perf (the kernel widens counts) */
        LIKWID_PERF_REG_REFUSED,        /* no perf equivalent: refused with the reason */
        _LIKWID_PERF_REG_MAX,
} LikwidPerfRegKind;

typedef struct LikwidPerfReg {
        LikwidPerfRegKind kind;
        unsigned index;                 /* counter number of EVTSEL, PMC, FIXED_CTR */
        const char *name;               /* the register, for messages */
        const char *why;                /* REFUSED: why */
} LikwidPerfReg;

/* What the MSR reg of an Intel ("GenuineIntel") or AMD node is; intel false means AMD. */
LikwidPerfReg likwid_perf_classify(bool intel, uint32_t reg);

/* The core PMU as the daemon's hello tells it. */
typedef struct LikwidPerfModel {
        unsigned n_gp, n_fixed;
        unsigned topdown;               /* 0 none, 1 level-1 metric events, 2 level 2 too */
        unsigned counter_width;         /* bits LIKWID's counter reads wrap at */
} LikwidPerfModel;

LikwidPerfModel likwid_perf_model(const pmugate_info *info);

/* What LIKWID programmed on one CPU. */
typedef struct LikwidCoreShadow {
        uint64_t evtsel[LIKWID_PERF_GP_MAX];
        uint64_t fixed_ctrl;
        uint64_t global_ctrl;
} LikwidCoreShadow;

/* Checks of a value LIKWID writes: 0, or -EPERM with the reason. */
int likwid_perf_check_evtsel(uint64_t value, char *reason, size_t size);
int likwid_perf_check_fixed_ctrl(const LikwidPerfModel *m, uint64_t value, char *reason, size_t size);
int likwid_perf_check_global_ctrl(const LikwidPerfModel *m, uint64_t value, char *reason, size_t size);

typedef enum LikwidPerfSlotKind {
        LIKWID_SLOT_PMC,
        LIKWID_SLOT_FIXED,
        LIKWID_SLOT_METRIC,
} LikwidPerfSlotKind;

/* The register an event's count answers. */
typedef struct LikwidPerfSlot {
        LikwidPerfSlotKind kind;
        unsigned index;
} LikwidPerfSlot;

/* The events one CPU's shadow opens: groups are consecutive runs of events. */
typedef struct LikwidPerfPlan {
        pmugate_perf_event events[LIKWID_PERF_EVENTS_MAX];
        LikwidPerfSlot slots[LIKWID_PERF_EVENTS_MAX];
        size_t n_events;
        size_t group_first[LIKWID_PERF_GROUPS_MAX], group_len[LIKWID_PERF_GROUPS_MAX];
        size_t n_groups;
        int slots_event;                /* the SLOTS event PERF_METRICS is relative to, or -1 */
} LikwidPerfPlan;

/* The events of what s enables (GLOBAL_CTRL and each counter's own enable): SLOTS leading the
 * metric events when PERF_METRICS is enabled, then one group of the fixed and general
 * counters. kernel counting where LIKWID set OS (the daemon decides whether it may). 0 (also
 * with no event: n_events 0), or -EPERM with the reason. */
int likwid_perf_plan(const LikwidPerfModel *m, const LikwidCoreShadow *s, LikwidPerfPlan *ret, char *reason,
                     size_t size);

/* A count the kernel multiplexed, scaled to the whole enabled time. */
uint64_t likwid_perf_scale(uint64_t value, uint64_t time_enabled, uint64_t time_running);

/* The counter registers of one CPU as LIKWID sees them: counts only while counting, from
 * LIKWID's last write of each register. */
typedef struct LikwidPerfCounts {
        bool counting;
        bool sampled;                   /* last[] holds the plan's counts of a read */
        uint64_t last[LIKWID_PERF_EVENTS_MAX];
        uint64_t pmc[LIKWID_PERF_GP_MAX];
        uint64_t fixed[LIKWID_PERF_FIXED_MAX];
        uint64_t metric[LIKWID_PERF_METRICS_MAX];
        uint64_t metric_slots;          /* SLOTS since PERF_METRICS was zeroed */
} LikwidPerfCounts;

/* Takes the plan's (scaled) counts of a read: adds what each counted since the last read
 * while counting. */
void likwid_perf_counts_sample(LikwidPerfCounts *c, const LikwidPerfPlan *p, const uint64_t *values);

/* A fresh plan's first read: the counts start from here. */
void likwid_perf_counts_rebase(LikwidPerfCounts *c, const LikwidPerfPlan *p, const uint64_t *values);

/* The value of a counter register (PMC, FIXED_CTR, PERF_METRICS) within the model's width. */
uint64_t likwid_perf_counts_read(const LikwidPerfCounts *c, const LikwidPerfModel *m, LikwidPerfRegKind kind,
                                 unsigned index);

/* LIKWID's write of a counter register: the counter holds value (LIKWID writes 0). */
void likwid_perf_counts_write(LikwidPerfCounts *c, LikwidPerfRegKind kind, unsigned index, uint64_t value);

/* PERF_METRICS as the register would hold it: byte i the fraction metric[i] / slots in 255ths
 * (the kernel's metric events count slots * byte / 255). */
uint64_t likwid_perf_metrics_register(const uint64_t *metric, size_t n, uint64_t slots);

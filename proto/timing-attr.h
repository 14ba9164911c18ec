/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one sampling attr pmugate ever opens: `pmugate timing` of a user's own process
 * (docs/TIMING.md). The daemon builds it, the privileged opener rebuilds it from the same
 * few words and refuses any attr that differs by a byte, the simulator's perf driver writes
 * records in its layout, and the client decodes them. Nothing here reads a peer's bytes.
 *
 * Both modes sample in user space only (exclude_kernel, exclude_hv; branch stacks with
 * PERF_SAMPLE_BRANCH_USER), inherit to the process's new threads and children, and record
 * executable mappings (MMAP2), comm, fork and exit so that the client can name each address.
 * One event per CPU: the kernel refuses mmap of an inherited event with cpu -1.
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum TimingMode {
        TIMING_MODE_BRANCHES,   /* cycles:u with the Last Branch Record (cycles per entry) */
        TIMING_MODE_IPS,        /* cpu-clock:u with the sampled IP (no LBR needed) */
        _TIMING_MODE_MAX,
        _TIMING_MODE_INVALID = -1,
} TimingMode;

/* What each sample carries, in the kernel's order: IP, TID (pid, tid), TIME, CPU (cpu, res),
 * PERIOD, and in branch mode the branch stack (nr, then nr perf_branch_entry, newest first; no
 * hw_idx since PERF_SAMPLE_BRANCH_HW_INDEX is not set). Non-sample records end with the
 * sample_id of sample_id_all: TID, TIME, CPU. */
#define TIMING_SAMPLE_TYPE_IPS                                                                   \
        (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define TIMING_SAMPLE_TYPE_BRANCHES (TIMING_SAMPLE_TYPE_IPS | PERF_SAMPLE_BRANCH_STACK)
#define TIMING_BRANCH_SAMPLE_TYPE (PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY)

/* "branches", "ips"; NULL outside the enum. */
const char *timing_mode_to_string(TimingMode m);
/* The mode named exactly by the n bytes at s, or _TIMING_MODE_INVALID. */
TimingMode timing_mode_from_string(const char *s, size_t n);

/* The sample_type of mode m's records. */
uint64_t timing_sample_type(TimingMode m);

/* Fills *attr (zeroed first) for mode m sampling every period events (cycles in branch mode,
 * ns of cpu-clock in IP mode), disabled until the target's next execve when on_exec, else
 * enabled at once. The period is not checked here: the daemon bounds it (pmugate-limits.h). */
void timing_attr_fill(struct perf_event_attr *attr, TimingMode m, uint64_t period, bool on_exec);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing's recording: the sampling events the daemon opens, one ring per CPU mapped
 * and drained, the records of all CPUs fed to the analysis in time order
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/timing-threads.h"
#include "pmugate/pmugate.h"
#include "pmugate/timing.h"
#include "timing-attr.h"
#include "timing/timing-blocks.h"
#include "timing/timing-ring.h"

/* The records of one drain round, kept until they are ordered by time. */
typedef struct TimingPending {
        uint64_t time;
        uint64_t seq;                   /* arrival: ties keep the ring's order */
        TimingRecord *rec;
} TimingPending;

typedef struct TimingRecorder {
        TimingAnalysis *analysis;
        pmugate_timing_handle **handles;
        size_t n_handles, n_handles_allocated;
        TimingRing **rings;
        size_t n_rings, n_rings_allocated;
        TimingPending *pending;
        size_t n_pending, n_pending_allocated;
        uint64_t seq;
        uint64_t malformed;
        size_t last_round;              /* records the last drain read */
        uint32_t target;                /* the process sampled */
        bool exit_seen;                 /* its EXIT record was read */
        bool detached;                  /* the process's credentials changed while it ran: the
                                         * kernel took its events away at that exec */
        char credentials[512];          /* its Uid, Gid and CapEff lines when recording began */
        bool unframed;                  /* a ring's records could no longer be framed */
        TimingThreadTally threads;      /* samples per task */
        size_t threads_gone;            /* -p: listed threads that ended before their open */
} TimingRecorder;

/* Opens mode's events for pid on every CPU of cpus, TIMING_CPUS_PER_OPEN per request, and
 * maps their rings; a refusal is said on stderr with the daemon's reason (and, where branch
 * mode lacks an LBR, that IP mode works). With tids (a running process's threads, as perf
 * record -p) each thread gets its own events, on the CPUs of its affinity at the open only
 * (cpus is then not used): the threads are grouped by affinity, and each group asked in
 * requests of up to TIMING_TIDS_PER_OPEN threads and PERF_HANDOFF_FDS_PER_MESSAGE events (a
 * program pinned one thread per CPU costs one event per thread). Per CPU one ring is mapped
 * and the other events of that CPU write into it (PERF_EVENT_IOC_SET_OUTPUT), or, where the
 * driver cannot redirect, each is mapped as a ring of its own. A listed thread that ended
 * before its open is left out (r->threads_gone). *ret_period gets the daemon's period. Returns
 * 0 or a negative errno (-E2BIG, said, when the threads need more timing handles than a user
 * holds); what was opened is r's until timing_recorder_done(). */
int timing_recorder_open(TimingRecorder *r, pmugate *c, TimingMode mode, uint64_t period, pid_t pid,
                         const pid_t *tids, size_t n_tids, bool on_exec, const uint32_t *cpus, size_t n_cpus,
                         uint64_t *ret_period);

/* Drains every ring, then feeds the round's records to the analysis in time order (the rings
 * of the CPUs interleave in time). A ring whose records cannot be framed any more is dropped
 * (r->unframed). Returns 0 or a negative errno. */
int timing_recorder_drain(TimingRecorder *r);

/* Unmaps the rings and closes the events at the daemon (c may be NULL); what the recording
 * learnt (counts, samples per thread) stays for the report until timing_recorder_free(). */
void timing_recorder_done(TimingRecorder *r, pmugate *c);
void timing_recorder_free(TimingRecorder *r, pmugate *c);

/* The r-x mappings of a running process, which the kernel reported before the recording began
 * and will not report again: parsed from /proc/PID/maps as MMAP2 records would have them. */
int timing_mappings_from_proc(TimingAnalysis *analysis, pid_t pid);

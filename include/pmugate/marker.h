/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate markers: counts, time and call count of named regions of a program
 *
 * A program marks regions with pmugate_marker_start() and pmugate_marker_stop(); run under
 * `pmugate stat -m` or `pmugate topdown -m`, which program the counters, each start and stop
 * reads the counters of the CPU the calling thread runs on (one daemon round trip, or none
 * where the kernel lets the process execute RDPMC) and the runner reports every region per
 * thread when the program ends. Run on its own, every call returns 0 at once and nothing is
 * measured. Threads measure independently (OpenMP: call start and stop inside the parallel
 * region); a region is stopped by the thread that started it.
 *
 * Every function returns 0 or a negative errno; pmugate_marker_last_reason() says in one
 * line why the calling thread's last call failed. Misuse is also written into the results,
 * so that the runner reports it even when the program ignores return values. The library
 * never logs and never exits.
 */
#pragma once

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of pmugate_marker_init(): every region may start inside another region of the same
 * thread (what LIKWID allows). Without it only regions registered PMUGATE_REGION_NESTED may. */
#define PMUGATE_MARKER_NESTING (1U << 0)

/* Flags of pmugate_marker_register(): the region may start while another region of the
 * thread is open. Nested regions stop in the reverse order of their starts. */
#define PMUGATE_REGION_NESTED (1U << 0)

/* Reads what the runner passed in the environment and connects. Call once, before other
 * threads use markers; again is a no-op. The results are written at pmugate_marker_close() or
 * at exit. Without a runner: 0, and the markers stay off. */
int pmugate_marker_init(unsigned flags);

/* Optional: makes the calling thread's connection now, so that its first start does not pay
 * for it. */
int pmugate_marker_thread_init(void);

/* Declares a region (optional; a start of an unknown name declares it). Names are 1 to 100
 * printable characters without white space. -E2BIG past 1024 regions. Registering a region
 * again may add flags. */
int pmugate_marker_register(const char *name, unsigned flags);

/* Opens region name on the calling thread: reads its CPU's counters. -EALREADY when the
 * thread has it open already; -EDEADLK when another region is open and nesting was not
 * declared; -ENXIO when the thread runs on a CPU the runner does not measure. */
int pmugate_marker_start(const char *name);

/* Closes region name on the calling thread: reads the counters again and adds the
 * difference, the time and one call to the region. -ENOENT when the thread has not started
 * it (-EXDEV when another thread has), -EDEADLK when a region started inside it is still
 * open. A thread that moved to another CPU inside the region counts the call and the time but
 * not the counts (pmugate reports such calls). */
int pmugate_marker_stop(const char *name);

/* Forgets what the calling thread measured of region name. */
int pmugate_marker_reset(const char *name);

/* What the calling thread measured of region name so far: *inout_n counter values (the
 * registers the runner reads, in its order) into counts, with the inclusive time in seconds and
 * the call count. *inout_n is set to how many there are. */
int pmugate_marker_get(const char *name, int *inout_n, double *counts, double *ret_seconds, int *ret_calls);

/* Writes the results for the runner and disconnects; markers are off afterwards. Call it once
 * the other threads are done with markers (after the parallel regions). */
int pmugate_marker_close(void);

/* Whether markers measure (a runner started the program and init succeeded). */
bool pmugate_marker_active(void);

/* "off", "daemon" (a round trip per start and stop), "rdpmc" (read in user space) or "perf"
 * (each thread's own perf events, read through their control pages). */
const char *pmugate_marker_read_mode(void);

/* Why the calling thread's last call failed; "" after a success. */
const char *pmugate_marker_last_reason(void);

#ifdef __cplusplus
}
#endif

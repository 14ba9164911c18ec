/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: sampling one's own process for `pmugate timing` (docs/TIMING.md)
 *
 * The daemon opens, for a process of the caller's own uid (in job mode inside the caller's
 * job), one sampling event per CPU with the single attr of proto/timing-attr.h: in branch mode
 * cycles in user space with the Last Branch Record (the kernel saves or wipes the LBR at every
 * context switch, so no other process's branches are seen), in IP mode cpu-clock with the
 * sampled IP. It needs the policy class "lbr" (off unless an admin grants it). The events'
 * fds come back to the caller, which maps each ring buffer (TIMING_RING_DATA_BYTES of data
 * after one metadata page) and reads the records itself; the daemon never sees a sample.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pmugate pmugate;

typedef enum pmugate_timing_mode {
        PMUGATE_TIMING_BRANCHES,        /* LBR branch stacks with cycles (Intel, Skylake on) */
        PMUGATE_TIMING_IPS,             /* sampled IPs on cpu-clock (any machine) */
        _PMUGATE_TIMING_MODE_MAX,
} pmugate_timing_mode;

typedef struct pmugate_timing_request {
        pmugate_timing_mode mode;
        pid_t pid;              /* a process of the caller's uid; 0: the caller */
        bool on_exec;           /* sample from the process's next execve (a command the CLI
                                 * forked and holds before its exec), else from the open */
        uint64_t period;        /* cycles (branches) or ns (ips) between samples; 0: the
                                 * daemon's default; out of the daemon's bounds is refused */
        const uint32_t *cpus;   /* the CPUs to open on (at most TIMING_CPUS_PER_OPEN); the
                                 * process is sampled only while it runs on them */
        size_t n_cpus;
        /* Added after the first release: new fields go at the end, so a caller built against
         * the older struct (zeroed past its end by designated initializers) keeps its meaning. */
        pid_t tid;              /* one thread of pid (not on_exec): its events follow that thread
                                 * and what it starts; 0: the process, refused by the daemon
                                 * when it already runs several threads */
        /* Added with "tids": several threads of pid in one handle, each with an event on every
         * CPU (tid-major: fd t * n_cpus + c is thread tids[t] on cpus[c]). At most
         * TIMING_TIDS_PER_OPEN (64) threads and 253 events in all (the fds one reply passes);
         * not with tid, nor on_exec. ABI: at the end, so source built against the older struct
         * (zeroed past its end by designated initializers) keeps its meaning; the struct grew,
         * so a binary built against the older header must be rebuilt (the library reads the
         * whole struct: no release has shipped the shorter one). */
        const pid_t *tids;
        size_t n_tids;
} pmugate_timing_request;

typedef struct pmugate_timing_handle pmugate_timing_handle;

/* Opens the events. reason gets the daemon's reason for a refusal as pmugate_last_error()
 * has it. On success *ret holds the daemon's handle and one fd per CPU (close-on-exec). */
int pmugate_timing_open(pmugate *c, const pmugate_timing_request *req, pmugate_timing_handle **ret,
                        char *reason, size_t size);

/* The fds, one per CPU in the request's order (with tids, thread by thread): fd i, the CPU it
 * samples and the thread it follows (pid's or tid's own without tids; -EBADF, -EINVAL past
 * them). The handle owns the fds. */
size_t pmugate_timing_n_fds(const pmugate_timing_handle *h);
int pmugate_timing_fd(const pmugate_timing_handle *h, size_t i);
int pmugate_timing_cpu(const pmugate_timing_handle *h, size_t i);
pid_t pmugate_timing_tid(const pmugate_timing_handle *h, size_t i);
/* The period the daemon used (the request's, or its default). */
uint64_t pmugate_timing_period(const pmugate_timing_handle *h);

/* Closes the events at the daemon (when c is not NULL) and the fds, and frees h. Accepts NULL. */
int pmugate_timing_close(pmugate *c, pmugate_timing_handle *h);

#ifdef __cplusplus
}
#endif

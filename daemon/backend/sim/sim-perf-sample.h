/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sampling events of the simulator's perf driver: `pmugate timing`'s branch-stack attr on a
 * task, with a ring buffer in the kernel's mmap layout (a sealed memfd) that the simulated
 * kernel fills with MMAP2, COMM, samples with LBR stacks drawn from the [lbr] section, LOST
 * and EXIT records (docs/SIMULATOR.md, "Sampling: the simulated LBR")
 */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/perf-driver.h"
#include "backend/sim/sim-lbr.h"

typedef struct SimPerfSampler SimPerfSampler;

/* Whether attr asks for samples at all (a period or a frequency). */
bool sim_perf_sampling(const struct perf_event_attr *attr);

/* Whether the simulated kernel serves this sampling open: exactly timing_attr_fill()'s
 * branch-stack attr (any period, on_exec or not), for a task (pid >= 0) on one CPU, alone in
 * its group, without PERF_FLAG_PID_CGROUP. Returns 0; -EINVAL for anything else; -EOPNOTSUPP
 * when the configuration has no [lbr] section (lbr NULL: a CPU without LBR). */
int sim_perf_sample_check(const struct perf_event_attr *attr, pid_t pid, int cpu, int group,
                          unsigned long flags, const SimLbrConfig *lbr);

typedef struct SimPerfSamplerArgs {
        PerfDriver *software;           /* opens the task clocks; not owned, outlives the sampler */
        const SimLbrConfig *lbr;        /* not owned, outlives the sampler */
        const struct perf_event_attr *attr;
        pid_t pid;
        int cpu;                        /* the simulated CPU */
        uint32_t n_sim_cpus;
        long real_cpus;                 /* the real machine's online CPUs */
        bool amd;                       /* LBR entries without cycles (LbrExtV2) */
        uint64_t seed;
        uint64_t id;                    /* the event's id, as LOST records give it */
} SimPerfSamplerArgs;

/* Opens the sampler: the real task clocks of pid on the real CPUs that map to the simulated
 * one, a pidfd to see its exit, and the ring. Returns 0 or a negative errno (the kernel's for
 * a task that is gone: -ESRCH). */
int sim_perf_sampler_new(const SimPerfSamplerArgs *args, SimPerfSampler **ret);
/* NULL-safe; returns NULL. Closes the task clocks and the ring (clients keep their dups). */
SimPerfSampler *sim_perf_sampler_free(SimPerfSampler *s);

/* Brings the ring up to now: records the exec of an enable_on_exec event, writes the MMAP2 and
 * COMM before the first sample, one sample per period of the cycles the task ran (its real run
 * time at cycles_per_ns), and EXIT once the task is gone. */
void sim_perf_sampler_tick(SimPerfSampler *s, double cycles_per_ns);
/* The cycles counted so far, and the task clocks' time enabled and running, in ns. */
void sim_perf_sampler_counts(const SimPerfSampler *s, uint64_t *ret_count, uint64_t *ret_enabled,
                             uint64_t *ret_running);
/* Whether the event is enabled: at open, by an ioctl, or by its task's exec. */
bool sim_perf_sampler_enabled(const SimPerfSampler *s);
/* PERF_EVENT_IOC_ENABLE / _DISABLE. */
int sim_perf_sampler_set_enabled(SimPerfSampler *s, bool enabled);
/* A new fd (close-on-exec) of the ring's memfd, which a client maps as it would a perf fd. */
int sim_perf_sampler_export_fd(const SimPerfSampler *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulator's perf driver. It programs the simulated PMU registers through the sim
 * Backend the way the kernel's x86 and AMD drivers program real ones (fixed-counter pseudo
 * encodings, SLOTS and PERF_METRICS, PerfEvtSel and PerfCntrGlobalCtl), schedules groups all
 * or nothing and rotates them when they do not fit, and keeps count, time_enabled and
 * time_running per event in ns of the simulated TSC. Task and cgroup events count the real
 * run time of the task or cgroup (a software task-clock through `software`) at the simulated
 * CPU's rate per unhalted ns, since the simulated machine runs no tasks of its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/sim/backend-sim.h"
#include "backend/sim/sim-events.h"
#include "backend/sim/sim-model.h"
#include "backend/sim/sim-perf-pmus.h"
#include "backend/sim/sim-perf-sample.h"
#include "backend/sim/sim-perf.h"
#include "backend/sim/sim-regs.h"
#include "macro.h"
#include "pmugate-limits.h"

/* The kernel's perf_event_mux_interval_ms default. */
#define SIM_PERF_MUX_INTERVAL_NS UINT64_C(4000000)
#define NS_PER_US 1000.0

/* Fixed-counter pseudo encodings and metric events of arch/x86/events/intel/core.c. */
#define X86_CONFIG_INST_RETIRED 0x00c0U
#define X86_CONFIG_CPU_CLK_UNHALTED 0x003cU
#define X86_CONFIG_REF_TSC 0x0300U
#define X86_CONFIG_SLOTS 0x0400U
#define X86_CONFIG_METRIC_FIRST 0x8000U
#define X86_CONFIG_METRIC_STEP 0x100U
#define X86_METRIC_L1_EVENTS 4U




#define READ_FORMAT_KNOWN                                                                       \
        (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID |              \
         PERF_FORMAT_GROUP)
#define OPEN_FLAGS_KNOWN                                                                        \
        (PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT)
#define ON_FIXED 100            /* SimPerfEvent.counter of fixed counter i: ON_FIXED + i */

typedef enum SimPerfKind {
        SIM_PERF_GP,            /* any GP counter */
        SIM_PERF_FIXED_OR_GP,   /* its fixed counter when free, else a GP counter */
        SIM_PERF_FIXED,         /* its fixed counter only (REF_TSC, SLOTS) */
        SIM_PERF_METRIC,        /* a PERF_METRICS byte of its SLOTS leader's group */
        SIM_PERF_UNCORE,        /* a package counter of the machine */
} SimPerfKind;

typedef struct SimPerfEvent {
        bool used;
        uint64_t open_seq;              /* members are read in the order they were opened */
        uint64_t sched_seq;             /* leaders: place in the round robin */
        int leader;
        int cpu;                        /* the CPU it counts on, or whose rates a task event uses */
        bool task;                      /* counts a task's or cgroup's real run time */
        pid_t pid;                      /* the task, or -1 */
        dev_t cgroup_dev;               /* the cgroup's directory, or 0 */
        ino_t cgroup_ino;
        SimPerfKind kind;
        uint64_t evtsel;                /* GP: EVTSEL without EN */
        uint64_t frontend;              /* GP: config1, perf's frontend field: MSR_PEBS_FRONTEND */
        unsigned index;                 /* fixed counter, metric byte, or machine counter */
        uint64_t fixed_field;
        uint64_t read_format;
        bool enabled;
        bool running;
        int counter;                    /* GP i or ON_FIXED + i while running, else -1 */
        uint64_t last_raw;
        uint64_t count, time_enabled, time_running, last_ns;
        int task_clock;                 /* the software handle of a task event */
        double rate_per_ns;             /* task event: counts per ns the task ran */
        uint64_t task_base_value, task_base_enabled, task_base_running;
        uint64_t task_value, task_enabled, task_running;
        SimPerfSampler *sampler;        /* a sampling task event (sim-perf-sample.c), else NULL */
} SimPerfEvent;

typedef struct SimPerfCpu {
        size_t *list;                   /* its events and the task events that use its rates */
        size_t n_list, list_size;
        unsigned n_counting;            /* its own events, which tick must bring up to now */
        bool dirty;                     /* the set of enabled groups changed: schedule again */
        uint64_t last_rotate_ns;
} SimPerfCpu;

typedef struct SimPerfDriver {
        PerfDriver driver;              /* first */
        Backend *sim;
        const SimModel *model;
        PerfDriver *software;
        SimPerfEvent *events;
        size_t n_events;                /* slots in use or freed */
        size_t *free_slots;
        size_t n_free_slots;
        uint64_t next_seq;
        SimPerfCpu *cpus;
        uint32_t n_cpus;
        int *software_handles;          /* what software opened for us, to refuse other handles */
        size_t n_software_handles;
        SimPerfBox boxes[SIM_PERF_UNCORE_BOXES_MAX];
        size_t n_boxes;
        long real_cpus;
} SimPerfDriver;

/* Every event of a group is on its leader's CPU's list, so group walks go through it. */
#define FOREACH_CPU_EVENT(s, cpu, i)                                                            \
        for (size_t i##_k = 0, i = 0;                                                           \
             i##_k < (s)->cpus[cpu].n_list && ((i) = (s)->cpus[cpu].list[i##_k], true); i##_k++)

static int cpu_list_add(SimPerfCpu *c, size_t idx) {
        if (c->n_list == c->list_size) {
                size_t n = c->list_size ? 2 * c->list_size : 8;
                size_t *l = reallocarray(c->list, n, sizeof(size_t));

                if (!l)
                        return -ENOMEM;
                c->list = l;
                c->list_size = n;
        }
        c->list[c->n_list++] = idx;
        return 0;
}

static void cpu_list_remove(SimPerfCpu *c, size_t idx) {
        for (size_t k = 0; k < c->n_list; k++)
                if (c->list[k] == idx) {
                        c->list[k] = c->list[--c->n_list];
                        return;
                }
}

static SimPerfDriver *sim_perf(PerfDriver *d) {
        return (SimPerfDriver *) d;
}

static uint64_t now_ns(SimPerfDriver *s) {
        uint64_t ns = 0;

        (void) backend_sim_now_ns(s->sim, &ns);
        return ns;
}

/* ---- Registers */

static bool watchdog_on(const SimPerfDriver *s) {
        return s->sim->machine->nmi_watchdog;
}

/* GP counters the driver may use: the AMD NMI watchdog holds counter 0 (the Intel one holds
 * fixed counter 1). */
static uint32_t gp_available(const SimPerfDriver *s) {
        uint32_t all = (UINT32_C(1) << s->model->gp_counters) - 1;

        return s->model->amd && watchdog_on(s) ? all & ~UINT32_C(1) : all;
}

static uint32_t fixed_available(const SimPerfDriver *s) {
        uint32_t all = (UINT32_C(1) << s->model->fixed_counters) - 1;

        return !s->model->amd && watchdog_on(s) ? all & ~(UINT32_C(1) << FIXED_CLK_UNHALTED) : all;
}

static uint32_t gp_ctl_reg(const SimPerfDriver *s, unsigned i) {
        if (s->model->arm)
                return ARM_PMEVTYPER_EL0(i);
        return s->model->amd ? MSR_AMD_PERF_CTL0 + 2 * i : MSR_IA32_PERFEVTSEL0 + i;
}

static uint32_t gp_ctr_reg(const SimPerfDriver *s, unsigned i) {
        if (s->model->arm)
                return ARM_PMEVCNTR_EL0(i);
        return s->model->amd ? MSR_AMD_PERF_CTL0 + 2 * i + 1 : MSR_IA32_PMC0 + i;
}

static uint32_t fixed_ctr_reg(const SimPerfDriver *s, unsigned i) {
        return s->model->arm ? ARM_PMCCNTR_EL0 : MSR_IA32_FIXED_CTR0 + i;
}

static uint32_t global_ctl_reg(const SimPerfDriver *s) {
        return s->model->amd ? MSR_AMD_GLOBAL_CTL : MSR_IA32_PERF_GLOBAL_CTRL;
}

static uint64_t raw_read(SimPerfDriver *s, const SimPerfEvent *e) {
        uint64_t v = 0;
        uint32_t reg = e->counter >= ON_FIXED ? fixed_ctr_reg(s, (unsigned) (e->counter - ON_FIXED))
                                              : gp_ctr_reg(s, (unsigned) e->counter);

        (void) backend_msr_read(s->sim, (uint32_t) e->cpu, reg, &v);
        return v & sim_model_counter_mask(s->model);
}

static bool has_metrics(const SimPerfDriver *s, int leader) {
        FOREACH_CPU_EVENT(s, s->events[leader].cpu, i)
                if (s->events[i].used && s->events[i].leader == leader &&
                    s->events[i].kind == SIM_PERF_METRIC)
                        return true;
        return false;
}

static bool is_slots(const SimPerfEvent *e) {
        return e->kind == SIM_PERF_FIXED && e->index == FIXED_SLOTS;
}

/* The kernel's icl_update_topdown_event(): the metric events get slots * byte / 0xff of the
 * slots counted since the last read, and SLOTS and PERF_METRICS start again from zero. */
static void update_topdown(SimPerfDriver *s, int leader) {
        SimPerfEvent *l = &s->events[leader];
        uint64_t slots = raw_read(s, l), metrics = 0;

        (void) backend_msr_read(s->sim, (uint32_t) l->cpu, MSR_PERF_METRICS, &metrics);
        l->count += slots;
        FOREACH_CPU_EVENT(s, l->cpu, i) {
                SimPerfEvent *e = &s->events[i];
                uint64_t byte;

                if (!e->used || e->leader != leader || e->kind != SIM_PERF_METRIC || !e->running)
                        continue;
                byte = (metrics >> (e->index * PERF_METRICS_FIELD_BITS)) & PERF_METRICS_FIELD_MASK;
                e->count += (uint64_t) ((unsigned __int128) slots * byte / PERF_METRICS_FULL_SCALE);
        }
        (void) backend_msr_write(s->sim, (uint32_t) l->cpu, MSR_IA32_FIXED_CTR0 + FIXED_SLOTS, 0);
        (void) backend_msr_write(s->sim, (uint32_t) l->cpu, MSR_PERF_METRICS, 0);
        l->last_raw = 0;
}

static uint64_t uncore_mask(const SimPerfDriver *s, const SimPerfEvent *e) {
        return (UINT64_C(1) << s->sim->machine->counters[e->index].width) - 1;
}

static void update_counts(SimPerfDriver *s, SimPerfEvent *e, size_t idx) {
        uint64_t raw;

        if (!e->running)
                return;
        if (e->kind == SIM_PERF_UNCORE) {
                if (backend_counter_read(s->sim, e->index, &raw) < 0)
                        return;
                raw &= uncore_mask(s, e);
                e->count += (raw - e->last_raw) & uncore_mask(s, e);
                e->last_raw = raw;
                return;
        }
        if (e->kind == SIM_PERF_METRIC)
                return;         /* its leader's update_topdown() counts it */
        if (is_slots(e) && (size_t) e->leader == idx && has_metrics(s, (int) idx)) {
                update_topdown(s, (int) idx);
                return;
        }
        raw = raw_read(s, e);
        e->count += (raw - e->last_raw) & sim_model_counter_mask(s->model);
        e->last_raw = raw;
}

/* armv8pmu_enable_event(): the event type (or PMCCFILTR for the cycle counter), the counter
 * from zero, its PMCNTENSET bit; and PMCR_EL0.E with 64-bit counters, as armv8pmu_start() and
 * armv8pmu_reset() leave it. */
static void program_arm(SimPerfDriver *s, SimPerfEvent *e) {
        uint32_t cpu = (uint32_t) e->cpu;

        if (e->counter >= ON_FIXED) {
                (void) backend_msr_write(s->sim, cpu, ARM_PMCCFILTR_EL0, e->evtsel & ~ARM_EVTYPER_EVENT_MASK);
                (void) backend_msr_write(s->sim, cpu, ARM_PMCCNTR_EL0, 0);
                (void) backend_msr_write(s->sim, cpu, ARM_PMCNTENSET_EL0, ARM_PMCNTEN_CYCLE);
        } else {
                unsigned i = (unsigned) e->counter;

                (void) backend_msr_write(s->sim, cpu, ARM_PMEVTYPER_EL0(i), e->evtsel);
                (void) backend_msr_write(s->sim, cpu, ARM_PMEVCNTR_EL0(i), 0);
                (void) backend_msr_write(s->sim, cpu, ARM_PMCNTENSET_EL0, SIM_BIT(i));
        }
        (void) backend_msr_write(s->sim, cpu, ARM_PMCR_EL0, ARM_PMCR_E | ARM_PMCR_LONG);
        e->last_raw = 0;
}

static void program(SimPerfDriver *s, SimPerfEvent *e) {
        uint32_t cpu = (uint32_t) e->cpu;
        uint64_t v = 0;

        if (e->kind == SIM_PERF_UNCORE) {
                (void) backend_counter_read(s->sim, e->index, &e->last_raw);
                e->last_raw &= uncore_mask(s, e);
                return;
        }
        if (e->kind == SIM_PERF_METRIC)
                return;
        if (s->model->arm) {
                program_arm(s, e);
                return;
        }
        (void) backend_msr_read(s->sim, cpu, global_ctl_reg(s), &v);
        if (e->counter >= ON_FIXED) {
                unsigned i = (unsigned) (e->counter - ON_FIXED);
                uint64_t ctrl = 0;

                (void) backend_msr_write(s->sim, cpu, MSR_IA32_FIXED_CTR0 + i, 0);
                (void) backend_msr_read(s->sim, cpu, MSR_IA32_FIXED_CTR_CTRL, &ctrl);
                ctrl &= ~(FIXED_CTRL_FIELD_MASK << (FIXED_CTRL_FIELD_BITS * i));
                ctrl |= e->fixed_field << (FIXED_CTRL_FIELD_BITS * i);
                (void) backend_msr_write(s->sim, cpu, MSR_IA32_FIXED_CTR_CTRL, ctrl);
                v |= SIM_BIT(GLOBAL_FIXED_SHIFT + i);
                if (i == FIXED_SLOTS && has_metrics(s, e->leader)) {
                        (void) backend_msr_write(s->sim, cpu, MSR_PERF_METRICS, 0);
                        v |= SIM_BIT(GLOBAL_PERF_METRICS_BIT);
                }
        } else {
                unsigned i = (unsigned) e->counter;

                (void) backend_msr_write(s->sim, cpu, gp_ctl_reg(s, i), 0);
                (void) backend_msr_write(s->sim, cpu, gp_ctr_reg(s, i), 0);
                /* the kernel's extra register for the event's frontend field */
                if (e->frontend)
                        (void) backend_msr_write(s->sim, cpu, MSR_PEBS_FRONTEND, e->frontend);
                (void) backend_msr_write(s->sim, cpu, gp_ctl_reg(s, i), e->evtsel | EVTSEL_EN);
                v |= SIM_BIT(i);
        }
        (void) backend_msr_write(s->sim, cpu, global_ctl_reg(s), v);
        e->last_raw = 0;
}

static void unprogram(SimPerfDriver *s, SimPerfEvent *e) {
        uint32_t cpu = (uint32_t) e->cpu;

        if (e->kind == SIM_PERF_UNCORE || e->kind == SIM_PERF_METRIC)
                return;
        if (s->model->arm) {
                (void) backend_msr_write(s->sim, cpu, ARM_PMCNTENCLR_EL0,
                                         e->counter >= ON_FIXED ? ARM_PMCNTEN_CYCLE : SIM_BIT(e->counter));
                return;
        }
        if (e->counter >= ON_FIXED) {
                unsigned i = (unsigned) (e->counter - ON_FIXED);
                uint64_t ctrl = 0;

                (void) backend_msr_read(s->sim, cpu, MSR_IA32_FIXED_CTR_CTRL, &ctrl);
                ctrl &= ~(FIXED_CTRL_FIELD_MASK << (FIXED_CTRL_FIELD_BITS * i));
                (void) backend_msr_write(s->sim, cpu, MSR_IA32_FIXED_CTR_CTRL, ctrl);
        } else
                (void) backend_msr_write(s->sim, cpu, gp_ctl_reg(s, (unsigned) e->counter), 0);
}

/* ---- Task and cgroup events: the task clock's run time at the CPU's rate */

static void update_task(SimPerfDriver *s, SimPerfEvent *e) {
        uint64_t buf[3];
        ssize_t n;

        if (e->sampler) {
                sim_perf_sampler_tick(e->sampler, e->rate_per_ns);
                sim_perf_sampler_counts(e->sampler, &e->count, &e->time_enabled, &e->time_running);
                /* the task's exec enables an enable_on_exec event, as the kernel does */
                e->enabled = sim_perf_sampler_enabled(e->sampler);
                return;
        }
        n = perf_driver_read(s->software, e->task_clock, buf, sizeof(buf));
        if (n != (ssize_t) sizeof(buf))
                return;
        e->task_value = buf[0] - e->task_base_value;
        e->task_enabled = buf[1] - e->task_base_enabled;
        e->task_running = buf[2] - e->task_base_running;
        e->count = (uint64_t) (e->rate_per_ns * (double) e->task_value);
        e->time_enabled = e->task_enabled;
        e->time_running = e->task_running;
}

static double task_rate_per_ns(SimPerfDriver *s, const SimPerfEvent *e) {
        const SimRates *r = backend_sim_cpu_rates(s->sim, (uint32_t) e->cpu);
        double per_cycle, unhalted, cycles_per_ns = s->model->cpu->nominal_mhz / NS_PER_US;

        if (!r)
                return 0.0;
        unhalted = r->thread[SIM_Q_REF_TSC];
        if (unhalted <= 0.0)
                return 0.0;
        switch (s->model->arm ? SIM_PERF_GP : e->kind) {
        case SIM_PERF_GP:
                per_cycle = sim_rates_event(r, s->model, e->evtsel, 0, e->frontend) *
                            (s->model->arm ? sim_rates_ring_factor(r, !(e->evtsel & ARM_EVTYPER_U),
                                                                   !(e->evtsel & ARM_EVTYPER_P))
                                           : sim_rates_ring_factor(r, e->evtsel & EVTSEL_USR, e->evtsel & EVTSEL_OS));
                break;
        case SIM_PERF_FIXED:
        case SIM_PERF_FIXED_OR_GP:
                per_cycle = sim_rates_fixed(r, e->index, false) *
                            sim_rates_ring_factor(r, e->fixed_field & FIXED_CTRL_USR,
                                                  e->fixed_field & FIXED_CTRL_OS);
                break;
        case SIM_PERF_METRIC:
                per_cycle = sim_rates_fixed(r, FIXED_SLOTS, false) * r->metrics[e->index];
                break;
        default:
                return 0.0;
        }
        return per_cycle * cycles_per_ns / unhalted;
}

/* ---- Scheduling: the kernel's flexible groups, all or nothing, rotated round robin */

static bool group_enabled(const SimPerfDriver *s, size_t leader) {
        return s->events[leader].enabled;
}

/* Tries to place leader's group on the free counters; on success marks them taken and gives
 * each enabled member its counter. */
static bool group_fit(SimPerfDriver *s, size_t leader, uint32_t *gp_free, uint32_t *fixed_free) {
        uint32_t gp = *gp_free, fixed = *fixed_free;
        bool metrics = false;

        FOREACH_CPU_EVENT(s, s->events[leader].cpu, i)
                if (s->events[i].used && (size_t) s->events[i].leader == leader)
                        s->events[i].counter = -1;
        FOREACH_CPU_EVENT(s, s->events[leader].cpu, i) {
                SimPerfEvent *e = &s->events[i];

                if (!e->used || (size_t) e->leader != leader || !e->enabled)
                        continue;
                bool fixed_kind = e->kind == SIM_PERF_FIXED || e->kind == SIM_PERF_FIXED_OR_GP;

                if (fixed_kind && (fixed >> e->index & 1)) {
                        fixed &= ~(UINT32_C(1) << e->index);
                        e->counter = ON_FIXED + (int) e->index;
                } else if (e->kind == SIM_PERF_GP || e->kind == SIM_PERF_FIXED_OR_GP) {
                        if (gp == 0)
                                return false;
                        e->counter = __builtin_ctz(gp);
                        gp &= gp - 1;
                } else if (e->kind == SIM_PERF_FIXED)
                        return false;
                else if (e->kind == SIM_PERF_METRIC)
                        metrics = true;
        }
        /* PERF_METRICS reports the slots of fixed counter 3, which the leader must hold */
        if (metrics && s->events[leader].counter != ON_FIXED + (int) FIXED_SLOTS)
                return false;
        *gp_free = gp;
        *fixed_free = fixed;
        return true;
}

static void sched_out_cpu(SimPerfDriver *s, int cpu) {
        FOREACH_CPU_EVENT(s, cpu, i) {
                SimPerfEvent *e = &s->events[i];

                if (!e->used || e->cpu != cpu || e->task || !e->running || e->kind == SIM_PERF_UNCORE)
                        continue;
                unprogram(s, e);
                e->running = false;
                e->counter = -1;
        }
}

static void sched_in_cpu(SimPerfDriver *s, int cpu) {
        uint32_t gp_free = gp_available(s), fixed_free = fixed_available(s);
        uint64_t after = 0;

        /* leaders in round-robin order; the first group that does not fit ends the pass, as
         * merge_sched_in() clears can_add_hw */
        for (;;) {
                size_t best = SIZE_MAX;

                FOREACH_CPU_EVENT(s, cpu, i) {
                        const SimPerfEvent *e = &s->events[i];

                        if (e->used && e->cpu == cpu && !e->task && e->kind != SIM_PERF_UNCORE &&
                            (size_t) e->leader == i && group_enabled(s, i) && e->sched_seq >= after &&
                            (best == SIZE_MAX || e->sched_seq < s->events[best].sched_seq))
                                best = i;
                }
                if (best == SIZE_MAX)
                        break;
                after = s->events[best].sched_seq + 1;
                if (!group_fit(s, best, &gp_free, &fixed_free))
                        break;
                FOREACH_CPU_EVENT(s, cpu, i) {
                        SimPerfEvent *e = &s->events[i];

                        if (!e->used || (size_t) e->leader != best || !e->enabled)
                                continue;
                        if (e->counter >= 0) {
                                e->running = true;
                                program(s, e);
                        } else if (e->kind == SIM_PERF_METRIC)
                                e->running = true;
                }
        }
        FOREACH_CPU_EVENT(s, cpu, i) {
                SimPerfEvent *e = &s->events[i];

                if (e->used && e->cpu == cpu && !e->task && !e->running)
                        e->counter = -1;
        }
}

/* Brings cpu's events up to now, rotates when a group waits and the interval has passed, and
 * schedules again when something changed. */
static void sync_cpu(SimPerfDriver *s, int cpu) {
        uint64_t now = now_ns(s);
        bool waiting = false;
        SimPerfCpu *c = &s->cpus[cpu];

        FOREACH_CPU_EVENT(s, cpu, i) {
                SimPerfEvent *e = &s->events[i];

                if (!e->used || e->cpu != cpu || e->task)
                        continue;
                update_counts(s, e, i);
                if (e->enabled) {
                        e->time_enabled += now - e->last_ns;
                        if (e->running)
                                e->time_running += now - e->last_ns;
                        else if (e->kind != SIM_PERF_UNCORE)
                                waiting = true;
                }
                e->last_ns = now;
                if (e->kind == SIM_PERF_UNCORE && e->enabled != e->running) {
                        e->running = e->enabled;
                        if (e->running)
                                program(s, e);
                }
        }
        if (waiting && now - c->last_rotate_ns >= SIM_PERF_MUX_INTERVAL_NS) {
                size_t first = SIZE_MAX;

                FOREACH_CPU_EVENT(s, cpu, i) {
                        const SimPerfEvent *e = &s->events[i];

                        if (e->used && e->cpu == cpu && !e->task && (size_t) e->leader == i && e->enabled &&
                            e->kind != SIM_PERF_UNCORE &&
                            (first == SIZE_MAX || e->sched_seq < s->events[first].sched_seq))
                                first = i;
                }
                if (first != SIZE_MAX)
                        s->events[first].sched_seq = s->next_seq++;
                c->last_rotate_ns = now;
                c->dirty = true;
        } else if (!waiting)
                c->last_rotate_ns = now;
        if (c->dirty) {
                sched_out_cpu(s, cpu);
                sched_in_cpu(s, cpu);
                c->dirty = false;
        }
}

void sim_perf_driver_tick(PerfDriver *d) {
        SimPerfDriver *s = sim_perf(d);

        for (uint32_t cpu = 0; cpu < s->n_cpus; cpu++)
                if (s->cpus[cpu].n_counting > 0)
                        sync_cpu(s, (int) cpu);
        for (size_t i = 0; i < s->n_events; i++)
                if (s->events[i].used && s->events[i].task)
                        update_task(s, &s->events[i]);
}

/* ---- Handles */

static SimPerfEvent *event_of(SimPerfDriver *s, int handle, size_t *ret_idx) {
        size_t i;

        if (handle < SIM_PERF_HANDLE_BASE)
                return NULL;
        i = (size_t) handle - SIM_PERF_HANDLE_BASE;
        if (i >= s->n_events || !s->events[i].used)
                return NULL;
        if (ret_idx)
                *ret_idx = i;
        return &s->events[i];
}

static ssize_t software_index(const SimPerfDriver *s, int handle) {
        for (size_t i = 0; i < s->n_software_handles; i++)
                if (s->software_handles[i] == handle)
                        return (ssize_t) i;
        return -1;
}

static int software_remember(SimPerfDriver *s, int handle) {
        int *n = reallocarray(s->software_handles, s->n_software_handles + 1, sizeof(int));

        if (!n)
                return -ENOMEM;
        s->software_handles = n;
        s->software_handles[s->n_software_handles++] = handle;
        return 0;
}

static void software_forget(SimPerfDriver *s, int handle) {
        ssize_t i = software_index(s, handle);

        if (i >= 0)
                s->software_handles[i] = s->software_handles[--s->n_software_handles];
}

static void release_slot(SimPerfDriver *s, size_t idx) {
        s->free_slots[s->n_free_slots++] = idx;
}

static int new_slot(SimPerfDriver *s, size_t *ret) {
        SimPerfEvent *n;
        size_t *f;

        if (s->n_free_slots > 0) {
                *ret = s->free_slots[--s->n_free_slots];
                return 0;
        }
        if (s->n_events >= PERF_SIM_EVENTS_MAX)
                return -EMFILE;
        /* room in the free list for every slot, so that closing never fails */
        f = reallocarray(s->free_slots, s->n_events + 1, sizeof(size_t));
        if (!f)
                return -ENOMEM;
        s->free_slots = f;
        n = reallocarray(s->events, s->n_events + 1, sizeof(SimPerfEvent));
        if (!n)
                return -ENOMEM;
        s->events = n;
        s->events[s->n_events] = (SimPerfEvent) {};
        *ret = s->n_events++;
        return 0;
}

/* ---- Decoding an attr as the kernel's x86 drivers do */

static int decode_hardware(const SimPerfDriver *s, uint64_t config, uint64_t *ret_raw) {
        static const uint64_t intel[PERF_COUNT_HW_MAX] = {
                [PERF_COUNT_HW_CPU_CYCLES] = X86_CONFIG_CPU_CLK_UNHALTED,
                [PERF_COUNT_HW_INSTRUCTIONS] = X86_CONFIG_INST_RETIRED,
                [PERF_COUNT_HW_REF_CPU_CYCLES] = X86_CONFIG_REF_TSC,
                [PERF_COUNT_HW_BRANCH_MISSES] = 0x00c5,
        };
        static const uint64_t amd[PERF_COUNT_HW_MAX] = {
                [PERF_COUNT_HW_CPU_CYCLES] = 0x0076,
                [PERF_COUNT_HW_INSTRUCTIONS] = 0x00c0,
                [PERF_COUNT_HW_BRANCH_INSTRUCTIONS] = 0x00c2,
                [PERF_COUNT_HW_BRANCH_MISSES] = 0x00c3,
        };

        /* armv8_pmuv3_perf_map: no branch-instructions (PC_WRITE_RETIRED is not counted here) */
        static const uint64_t arm[PERF_COUNT_HW_MAX] = {
                [PERF_COUNT_HW_CPU_CYCLES] = ARM_EVENT_CPU_CYCLES,
                [PERF_COUNT_HW_INSTRUCTIONS] = ARM_EVENT_INST_RETIRED,
                [PERF_COUNT_HW_CACHE_REFERENCES] = ARM_EVENT_L1D_CACHE,
                [PERF_COUNT_HW_CACHE_MISSES] = ARM_EVENT_L1D_CACHE_REFILL,
                [PERF_COUNT_HW_BRANCH_MISSES] = ARM_EVENT_BR_MIS_PRED,
                [PERF_COUNT_HW_STALLED_CYCLES_FRONTEND] = ARM_EVENT_STALL_FRONTEND,
                [PERF_COUNT_HW_STALLED_CYCLES_BACKEND] = ARM_EVENT_STALL_BACKEND,
        };

        if (config >= PERF_COUNT_HW_MAX)
                return -EINVAL;
        *ret_raw = s->model->arm ? arm[config] : s->model->amd ? amd[config] : intel[config];
        return *ret_raw != 0 ? 0 : -ENOENT;
}

/* armpmu_event_init() and armv8pmu_set_event_filter(): the event number, exclude_user as U,
 * exclude_kernel as P; CPU_CYCLES on the cycle counter while it is free
 * (armv8pmu_get_event_idx()). Event 0 is SW_INCR, which counts software writes nobody makes. */
static int decode_arm(const struct perf_event_attr *attr, uint64_t raw, SimPerfEvent *e) {
        if (raw & ~ARM_RAW_CONFIG_MASK)
                return -EINVAL;
        e->evtsel = raw | (attr->exclude_user ? ARM_EVTYPER_U : 0) | (attr->exclude_kernel ? ARM_EVTYPER_P : 0);
        e->kind = raw == ARM_EVENT_CPU_CYCLES ? SIM_PERF_FIXED_OR_GP : SIM_PERF_GP;
        e->index = 0;
        return 0;
}

#define SIM_FRONTEND_MASK UINT64_C(0xFFFFFF)

static int decode_core(const SimPerfDriver *s, const struct perf_event_attr *attr, uint64_t raw,
                       SimPerfEvent *e) {
        uint64_t mask = s->model->amd ? AMD_RAW_CONFIG_MASK : INTEL_RAW_CONFIG_MASK;
        uint64_t rings = (attr->exclude_user ? 0 : EVTSEL_USR) | (attr->exclude_kernel ? 0 : EVTSEL_OS);

        if (s->model->arm)
                return decode_arm(attr, raw, e);
        if (raw & ~mask)
                return -EINVAL;
        /* config1 is the frontend field (config1:0-23) where the model has MSR_PEBS_FRONTEND */
        if (attr->config1 && (s->model->amd || s->model->perf_metrics < 2 || (attr->config1 & ~SIM_FRONTEND_MASK)))
                return -EINVAL;
        e->frontend = attr->config1;
        e->fixed_field = (attr->exclude_user ? 0 : FIXED_CTRL_USR) |
                         (attr->exclude_kernel ? 0 : FIXED_CTRL_OS);
        e->evtsel = raw | rings;
        e->kind = SIM_PERF_GP;
        if (s->model->amd)
                return 0;
        if (raw == X86_CONFIG_INST_RETIRED || raw == X86_CONFIG_CPU_CLK_UNHALTED) {
                e->kind = SIM_PERF_FIXED_OR_GP;
                e->index = raw == X86_CONFIG_INST_RETIRED ? FIXED_INST_RETIRED : FIXED_CLK_UNHALTED;
        } else if (raw == X86_CONFIG_REF_TSC) {
                e->kind = SIM_PERF_FIXED;
                e->index = FIXED_REF_TSC;
        } else if (raw == X86_CONFIG_SLOTS) {
                if (s->model->perf_metrics == 0)
                        return -EINVAL;
                e->kind = SIM_PERF_FIXED;
                e->index = FIXED_SLOTS;
        } else if (raw >= X86_CONFIG_METRIC_FIRST &&
                   raw < X86_CONFIG_METRIC_FIRST + PERF_METRICS_FIELDS * X86_CONFIG_METRIC_STEP &&
                   raw % X86_CONFIG_METRIC_STEP == 0) {
                unsigned i = (unsigned) ((raw - X86_CONFIG_METRIC_FIRST) / X86_CONFIG_METRIC_STEP);

                if (s->model->perf_metrics == 0 || (i >= X86_METRIC_L1_EVENTS && s->model->perf_metrics < 2))
                        return -EINVAL;
                e->kind = SIM_PERF_METRIC;
                e->index = i;
        } else if ((raw & EVTSEL_EVENT_MASK) == 0)
                return -EINVAL;         /* event 0 is the kernel's pseudo-encoding space */
        return 0;
}

static int decode_uncore(SimPerfDriver *s, const struct perf_event_attr *attr, int cpu, SimPerfEvent *e) {
        const SimPerfBox *box = NULL;
        uint64_t umask = (attr->config >> EVTSEL_UMASK_SHIFT) & EVTSEL_UMASK_MASK;

        for (size_t i = 0; i < s->n_boxes; i++)
                if (s->boxes[i].type == attr->type)
                        box = &s->boxes[i];
        if (!box)
                return -ENOENT;
        /* uncore PMUs carry PERF_PMU_CAP_NO_EXCLUDE and count whole packages */
        if (attr->exclude_user || attr->exclude_kernel || attr->exclude_hv || attr->exclude_idle ||
            cpu < 0)
                return -EINVAL;
        if ((attr->config & ~UINT64_C(0xFFFF)) || (attr->config & EVTSEL_EVENT_MASK) != IMC_EVENT_CAS ||
            (umask != IMC_UMASK_READ && umask != IMC_UMASK_WRITE))
                return -EINVAL;
        e->kind = SIM_PERF_UNCORE;
        return sim_perf_box_counter(s->sim->machine, box->name, umask == IMC_UMASK_WRITE,
                                    s->sim->machine->cpus[cpu].package, &e->index);
}

static int open_task_clock(SimPerfDriver *s, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd,
                           int cpu, unsigned long flags) {
        struct perf_event_attr a = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(a),
                .config = PERF_COUNT_SW_TASK_CLOCK,
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                .disabled = attr->disabled,
                .inherit = attr->inherit,
                .exclude_hv = 1,
        };
        int real_cpu = cpu >= 0 && s->real_cpus > 0 ? (int) (cpu % s->real_cpus) : -1;

        if (flags & PERF_FLAG_PID_CGROUP)
                return perf_driver_open(s->software, &a, -1, cgroup_fd, real_cpu, -1, PERF_FLAG_PID_CGROUP);
        return perf_driver_open(s->software, &a, pid, -1, real_cpu, -1, 0);
}

static int open_sampler(SimPerfDriver *s, const struct perf_event_attr *attr, pid_t pid, int cpu, size_t idx,
                        SimPerfSampler **ret) {
        SimPerfSamplerArgs a = {
                .software = s->software,
                .attr = attr,
                .pid = pid,
                .cpu = cpu,
                .n_sim_cpus = s->n_cpus,
                .real_cpus = s->real_cpus,
                .amd = s->model->amd,
                .id = (uint64_t) SIM_PERF_HANDLE_BASE + idx,
        };

        a.lbr = backend_sim_lbr(s->sim, &a.seed);
        return sim_perf_sampler_new(&a, ret);
}

static int sim_perf_open(PerfDriver *d, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd,
                         int cpu, int group, unsigned long flags) {
        SimPerfDriver *s = sim_perf(d);
        bool cgroup = flags & PERF_FLAG_PID_CGROUP, task = cgroup || pid >= 0;
        bool sampling = sim_perf_sampling(attr);
        SimPerfEvent e = { .leader = -1, .counter = -1, .task_clock = -1 };
        const SimPerfEvent *l = NULL;
        size_t idx, lidx = 0;
        uint64_t raw;
        int r;

        if (!attr)
                return -EFAULT;
        if (flags & ~(unsigned long) OPEN_FLAGS_KNOWN || pid < -1 || (pid == -1 && cpu == -1 && !cgroup) ||
            (cgroup && (cgroup_fd < 0 || cpu < 0)))
                return -EINVAL;
        if (attr->type == PERF_TYPE_SOFTWARE) {
                if (group >= 0 && software_index(s, group) < 0)
                        return group >= SIM_PERF_HANDLE_BASE && event_of(s, group, NULL) ? -EINVAL : -EBADF;
                r = perf_driver_open(s->software, attr, pid, cgroup_fd, cpu, group, flags);
                if (r < 0)
                        return r;
                if (r >= SIM_PERF_HANDLE_BASE || software_remember(s, r) < 0) {
                        perf_driver_close(s->software, r);
                        return -EMFILE;
                }
                return r;
        }
        if (cpu < -1 || (cpu >= 0 && (uint32_t) cpu >= s->n_cpus))
                return -EINVAL;
        if (cpu >= 0 && !s->sim->machine->cpus[cpu].online)
                return -ENODEV;
        if (attr->read_format & ~(uint64_t) READ_FORMAT_KNOWN)
                return -EINVAL;
        /* of sampling attrs, only pmugate timing's branch-stack one, and only with an [lbr] */
        if (sampling) {
                r = sim_perf_sample_check(attr, pid, cpu, group, flags, backend_sim_lbr(s->sim, NULL));
                if (r < 0)
                        return r;
        }
        if (group >= 0) {
                l = event_of(s, group, &lidx);
                if (!l)
                        return software_index(s, group) >= 0 ? -EINVAL : -EBADF;
                if ((size_t) l->leader != lidx || l->cpu != (cpu >= 0 ? cpu : 0) || l->task != task)
                        return -EINVAL;
        }
        e.pid = cgroup ? -1 : pid;
        if (cgroup) {
                struct stat st;

                if (fstat(cgroup_fd, &st) < 0)
                        return -EBADF;
                if (!S_ISDIR(st.st_mode))
                        return -EINVAL;
                e.cgroup_dev = st.st_dev;
                e.cgroup_ino = st.st_ino;
        }
        if (l) {
                /* a group counts one context: the same task or cgroup as its leader */
                if (l->pid != e.pid || l->cgroup_dev != e.cgroup_dev || l->cgroup_ino != e.cgroup_ino)
                        return -EINVAL;
        }

        e.cpu = cpu >= 0 ? cpu : 0;
        e.task = task;
        if (attr->type == PERF_TYPE_HARDWARE) {
                r = decode_hardware(s, attr->config, &raw);
                if (r < 0)
                        return r;
                r = decode_core(s, attr, raw, &e);
        } else if (attr->type == PERF_TYPE_RAW || (s->model->arm && attr->type == SIM_PERF_ARM_CORE_TYPE))
                r = decode_core(s, attr, attr->config, &e);
        else if (attr->type >= SIM_PERF_UNCORE_TYPE_FIRST && !task)
                r = decode_uncore(s, attr, cpu, &e);
        else
                r = attr->type >= SIM_PERF_UNCORE_TYPE_FIRST ? -EINVAL : -ENOENT;
        if (r < 0)
                return r;

        /* one PMU per group; metric events only under their SLOTS leader */
        if (l && (l->kind == SIM_PERF_UNCORE) != (e.kind == SIM_PERF_UNCORE))
                return -EINVAL;
        if (l && e.kind == SIM_PERF_UNCORE && !sim_perf_same_box(s->sim->machine, l->index, e.index))
                return -EINVAL;
        if (e.kind == SIM_PERF_METRIC && (!l || !is_slots(l)))
                return -EINVAL;

        r = new_slot(s, &idx);
        if (r < 0)
                return r;
        r = cpu_list_add(&s->cpus[e.cpu], idx);
        if (r < 0) {
                release_slot(s, idx);
                return r;
        }
        if (sampling)
                r = open_sampler(s, attr, pid, cpu, idx, &e.sampler);
        else if (task) {
                e.task_clock = open_task_clock(s, attr, pid, cgroup_fd, cpu, flags);
                r = MIN(e.task_clock, 0);
        }
        if (r < 0) {
                cpu_list_remove(&s->cpus[e.cpu], idx);
                release_slot(s, idx);
                return r;
        }
        if (task)
                e.rate_per_ns = task_rate_per_ns(s, &e);
        e.used = true;
        e.open_seq = e.sched_seq = s->next_seq++;
        e.leader = l ? (int) lidx : (int) idx;
        e.read_format = attr->read_format;
        e.enabled = !attr->disabled;
        if (!task)
                sync_cpu(s, e.cpu);
        e.last_ns = now_ns(s);
        s->events[idx] = e;
        if (task)
                update_task(s, &s->events[idx]);
        else {
                s->cpus[e.cpu].n_counting++;
                s->cpus[e.cpu].dirty = true;
                sync_cpu(s, e.cpu);
        }
        return SIM_PERF_HANDLE_BASE + (int) idx;
}

static void sync_event(SimPerfDriver *s, size_t idx) {
        FOREACH_CPU_EVENT(s, s->events[idx].cpu, i)
                if (s->events[i].used && s->events[i].leader == s->events[idx].leader && s->events[i].task)
                        update_task(s, &s->events[i]);
        if (!s->events[idx].task)
                sync_cpu(s, s->events[idx].cpu);
}

static size_t put_u64(void *buf, size_t off, uint64_t v) {
        memcpy((uint8_t *) buf + off, &v, sizeof(v));
        return off + sizeof(v);
}

static size_t read_size(uint64_t f, size_t n_values) {
        size_t words = !!(f & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(f & PERF_FORMAT_TOTAL_TIME_RUNNING);

        if (!(f & PERF_FORMAT_GROUP))
                return sizeof(uint64_t) * (1 + words + !!(f & PERF_FORMAT_ID));
        return sizeof(uint64_t) * (1 + words + n_values * (1 + !!(f & PERF_FORMAT_ID)));
}

static size_t read_one(const SimPerfEvent *e, int handle, void *buf) {
        size_t off = put_u64(buf, 0, e->count);

        if (e->read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
                off = put_u64(buf, off, e->time_enabled);
        if (e->read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
                off = put_u64(buf, off, e->time_running);
        if (e->read_format & PERF_FORMAT_ID)
                off = put_u64(buf, off, (uint64_t) handle);
        return off;
}

/* The whole group, through its leader: nr, the leader's times, then each event's value and id
 * in the order they were opened (perf_read_group()). */
static size_t read_group(const SimPerfDriver *s, const SimPerfEvent *e, size_t n, void *buf) {
        const SimPerfEvent *l = &s->events[e->leader];
        uint64_t f = e->read_format, after = 0;
        size_t off = put_u64(buf, 0, n);

        if (f & PERF_FORMAT_TOTAL_TIME_ENABLED)
                off = put_u64(buf, off, l->time_enabled);
        if (f & PERF_FORMAT_TOTAL_TIME_RUNNING)
                off = put_u64(buf, off, l->time_running);
        for (size_t k = 0; k < n; k++) {
                size_t next = SIZE_MAX;

                FOREACH_CPU_EVENT(s, e->cpu, i) {
                        const SimPerfEvent *m = &s->events[i];

                        if (m->used && m->leader == e->leader && m->open_seq >= after &&
                            (next == SIZE_MAX || m->open_seq < s->events[next].open_seq))
                                next = i;
                }
                after = s->events[next].open_seq + 1;
                off = put_u64(buf, off, s->events[next].count);
                if (f & PERF_FORMAT_ID)
                        off = put_u64(buf, off, (uint64_t) (SIM_PERF_HANDLE_BASE + (int) next));
        }
        return off;
}

static ssize_t sim_perf_read(PerfDriver *d, int handle, void *buf, size_t size) {
        SimPerfDriver *s = sim_perf(d);
        SimPerfEvent *e;
        size_t idx, n = 0;

        if (handle < 0)
                return -EBADF;
        if (handle < SIM_PERF_HANDLE_BASE)
                return software_index(s, handle) >= 0 ? perf_driver_read(s->software, handle, buf, size)
                                                      : -EBADF;
        e = event_of(s, handle, &idx);
        if (!e)
                return -EBADF;
        if (!buf)
                return -EFAULT;
        sync_event(s, idx);
        if (!(e->read_format & PERF_FORMAT_GROUP))
                return size < read_size(e->read_format, 1) ? -ENOSPC : (ssize_t) read_one(e, handle, buf);
        FOREACH_CPU_EVENT(s, e->cpu, i)
                n += s->events[i].used && s->events[i].leader == e->leader;
        if (size < read_size(e->read_format, n))
                return -ENOSPC;
        return (ssize_t) read_group(s, e, n, buf);
}

static int set_enabled(PerfDriver *d, int handle, bool group, bool enabled) {
        SimPerfDriver *s = sim_perf(d);
        SimPerfEvent *e;
        size_t idx;

        if (handle < 0)
                return -EBADF;
        if (handle < SIM_PERF_HANDLE_BASE) {
                if (software_index(s, handle) < 0)
                        return -EBADF;
                return enabled ? perf_driver_enable(s->software, handle, group)
                               : perf_driver_disable(s->software, handle, group);
        }
        e = event_of(s, handle, &idx);
        if (!e)
                return -EBADF;
        sync_event(s, idx);
        FOREACH_CPU_EVENT(s, e->cpu, i) {
                SimPerfEvent *m = &s->events[i];

                if (!m->used || (group ? m->leader != e->leader : i != idx) || m->enabled == enabled)
                        continue;
                m->enabled = enabled;
                if (m->sampler)
                        (void) sim_perf_sampler_set_enabled(m->sampler, enabled);
                else if (m->task)
                        (void) (enabled ? perf_driver_enable(s->software, m->task_clock, false)
                                        : perf_driver_disable(s->software, m->task_clock, false));
        }
        if (!e->task) {
                s->cpus[e->cpu].dirty = true;
                sync_cpu(s, e->cpu);
        }
        return 0;
}

static int sim_perf_enable(PerfDriver *d, int handle, bool group) {
        return set_enabled(d, handle, group, true);
}

static int sim_perf_disable(PerfDriver *d, int handle, bool group) {
        return set_enabled(d, handle, group, false);
}

static int sim_perf_export_fd(PerfDriver *d, int handle) {
        SimPerfDriver *s = sim_perf(d);
        SimPerfEvent *e;
        size_t idx;

        if (handle >= 0 && handle < SIM_PERF_HANDLE_BASE && software_index(s, handle) >= 0)
                return perf_driver_export_fd(s->software, handle);
        e = event_of(s, handle, &idx);
        if (!e)
                return -EBADF;
        if (!e->sampler)
                return -EOPNOTSUPP;
        /* the ring up to now, so that a client that maps it at once finds the first records */
        sync_event(s, idx);
        return sim_perf_sampler_export_fd(e->sampler);
}

static void close_event(SimPerfDriver *s, size_t idx) {
        SimPerfEvent *e = &s->events[idx];

        if (!e->task) {
                sync_cpu(s, e->cpu);
                if (e->running)
                        unprogram(s, e);
                s->cpus[e->cpu].n_counting--;
                s->cpus[e->cpu].dirty = true;
        } else if (e->sampler)
                sim_perf_sampler_free(e->sampler);
        else
                perf_driver_close(s->software, e->task_clock);
        /* a closed leader's members go on as groups of their own, as perf_group_detach() does */
        FOREACH_CPU_EVENT(s, e->cpu, i)
                if (i != idx && s->events[i].used && (size_t) s->events[i].leader == idx) {
                        s->events[i].leader = (int) i;
                        s->events[i].sched_seq = s->next_seq++;
                }
        cpu_list_remove(&s->cpus[e->cpu], idx);
        *e = (SimPerfEvent) {};
        release_slot(s, idx);
}

static void sim_perf_close(PerfDriver *d, int handle) {
        SimPerfDriver *s = sim_perf(d);
        SimPerfEvent *e;
        size_t idx;
        int cpu;

        if (handle >= 0 && handle < SIM_PERF_HANDLE_BASE) {
                if (software_index(s, handle) >= 0) {
                        software_forget(s, handle);
                        perf_driver_close(s->software, handle);
                }
                return;
        }
        e = event_of(s, handle, &idx);
        if (!e)
                return;
        cpu = e->task ? -1 : e->cpu;
        close_event(s, idx);
        if (cpu >= 0)
                sync_cpu(s, cpu);
}

static void sim_perf_free(PerfDriver *d) {
        SimPerfDriver *s = sim_perf(d);

        for (size_t i = 0; i < s->n_events; i++)
                if (s->events[i].used)
                        close_event(s, i);
        for (size_t i = 0; i < s->n_software_handles; i++)
                perf_driver_close(s->software, s->software_handles[i]);
        if (s->software)
                s->software->vtable->free(s->software);
        free(s->software_handles);
        for (uint32_t cpu = 0; s->cpus && cpu < s->n_cpus; cpu++)
                free(s->cpus[cpu].list);
        free(s->free_slots);
        free(s->events);
        free(s->cpus);
        free(s);
}

static const PerfDriverVTable sim_perf_vtable = {
        .name = "sim",
        .open = sim_perf_open,
        .read = sim_perf_read,
        .enable = sim_perf_enable,
        .disable = sim_perf_disable,
        .export_fd = sim_perf_export_fd,
        .close = sim_perf_close,
        .free = sim_perf_free,
};

static PerfDriver *perf_driver_release(PerfDriver *d) {
        if (d)
                d->vtable->free(d);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(PerfDriver *, perf_driver_release);

int sim_perf_driver_new(Backend *b, PerfDriver *software, PerfDriver **ret) {
        _cleanup_(perf_driver_releasep) PerfDriver *owned = software;
        _cleanup_(perf_driver_releasep) PerfDriver *d = NULL;
        const SimModel *m = backend_sim_model(b);
        SimPerfDriver *s;

        if (!m || !software)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->driver.vtable = &sim_perf_vtable;
        d = &s->driver;
        s->sim = b;
        s->model = m;
        s->software = TAKE_PTR(owned);
        s->n_cpus = b->machine->n_cpus;
        s->cpus = calloc(s->n_cpus ?: 1, sizeof(SimPerfCpu));
        if (!s->cpus)
                return -ENOMEM;
        s->n_boxes = m->amd || m->arm ? 0 : sim_perf_find_boxes(b->machine, s->boxes);
        s->real_cpus = sysconf(_SC_NPROCESSORS_ONLN);
        *ret = TAKE_PTR(d);
        return 0;
}

int backend_sim_perf_catalog(Backend *b, PerfCatalog **ret) {
        return sim_perf_catalog(b, ret);
}

int backend_sim_perf_driver(Backend *b, PerfDriver *software, PerfDriver **ret_driver,
                            void (**ret_tick)(PerfDriver *d)) {
        int r = sim_perf_driver_new(b, software, ret_driver);

        if (r >= 0)
                *ret_tick = sim_perf_driver_tick;
        return r;
}

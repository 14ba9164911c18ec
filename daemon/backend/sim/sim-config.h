/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulator configuration: INI file (docs/SIMULATOR.md) with machine, clock, injection,
 * RAPL, IMC, profile and per-CPU sections
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/sim/sim-lbr.h"
#include "backend/sim/sim-model.h"
#include "backend/sim/sim-profile.h"
#include "backend/sim/sim-uncore.h"
#include "log.h"
#include "macro.h"

#define SIM_SOCKETS_MAX 8U
#define SIM_CORES_PER_SOCKET_MAX 512U     /* 8 sockets x 512 cores x 2 threads: PMUGATE_CPUS_MAX */
#define SIM_EIO_MSRS_MAX 64U
#define SIM_CONFIG_SECTIONS_MAX 1024U
#define SIM_MODEL_KEY_MAX 8U

/* Logs a configuration mistake (no errno text: the message is the reason) and evaluates to
 * -EINVAL. */
#define sim_log_invalid(...) (log_error(__VA_ARGS__), -EINVAL)

typedef enum SimClockMode {
        SIM_CLOCK_REALTIME,             /* cycles follow CLOCK_MONOTONIC */
        SIM_CLOCK_DETERMINISTIC,        /* cycles advance only per access and on request */
} SimClockMode;

/* A [profile NAME] section: fields it sets on top of its base profile. */
typedef struct SimProfileDef {
        unsigned line;
        char name[SIM_PROFILE_NAME_MAX];
        char base[SIM_PROFILE_NAME_MAX];        /* empty: the built-in of that name, else "default" */
        SimProfile overrides;
        uint32_t set_mask;
} SimProfileDef;

/* A [cpus LIST] section: the profile those CPUs run, with fields set on top of it. */
typedef struct SimCpuRule {
        unsigned line;
        char cpus_text[64];
        uint32_t *cpus;
        size_t n_cpus;
        char profile[SIM_PROFILE_NAME_MAX];     /* empty: "default" */
        /* "phase = A,B,PERIOD_MS": the CPUs run A and B in turn, each for PERIOD_MS of
         * simulated time; 0 when the rule has no phase key. */
        char phase_profile[2][SIM_PROFILE_NAME_MAX];
        uint32_t phase_ms;
        SimProfile overrides;
        uint32_t set_mask;
} SimCpuRule;

/* A phase shorter than a millisecond would switch within one of the daemon's reads; an hour
 * is longer than any test. */
#define SIM_PHASE_MS_MIN 1U
#define SIM_PHASE_MS_MAX 3600000U

/* What a CPU runs every other phase: other for PERIOD_MS, then its own profile again. */
typedef struct SimPhase {
        SimProfile other;
        uint32_t period_ms;             /* 0: no phases, the CPU's profile all the time */
} SimPhase;

typedef struct SimConfig {
        char *path;                     /* NULL for built-in defaults */
        char model[SIM_MODEL_KEY_MAX];  /* empty when the file does not name one */
        unsigned sockets;
        unsigned cores_per_socket;
        unsigned cores_per_ccx;         /* AMD: cores sharing one L3 */
        bool smt;

        SimClockMode clock_mode;
        uint64_t seed;
        uint64_t cycles_per_access;
        bool cycles_per_access_set;
        double jitter;                  /* each access costs cycles_per_access * (1 +- jitter) */

        bool nmi_watchdog;
        /* Kernel lockdown the simulated kernel is in: NULL (none), "integrity" or
         * "confidentiality". MSR and PCI config writes then fail with -EPERM; reads work. */
        const char *lockdown;
        unsigned watchdog_thresh;       /* seconds of unhalted cycles per watchdog period */
        uint32_t *offline_cpus;
        size_t n_offline_cpus;
        unsigned offline_line;
        uint32_t eio_msrs[SIM_EIO_MSRS_MAX];
        size_t n_eio_msrs;
        bool eio_writes_only;           /* the faults fail writes; reads work */
        uint32_t *eio_cpus;             /* NULL: every CPU */
        size_t n_eio_cpus;
        unsigned eio_line;
        /* Uncore counters the kernel's drivers program for a perf user other than pmugated. */
        uint32_t *kernel_imc_units;     /* skx/clx: IMC units (machine-wide index) */
        size_t n_kernel_imc_units;
        uint64_t kernel_l3_counters;    /* AMD: bit i = L3 counter i of every CCX */
        uint64_t kernel_df_counters;    /* AMD: bit i = data-fabric counter i of every package */

        SimRaplSettings rapl;
        double imc_read_gbps;           /* per socket, 10^9 bytes per second */
        double imc_write_gbps;
        double imc_dclk_mhz;
        uint64_t imc_counter_start;     /* where the package counters start (to test wraps) */
        bool imc_kernel_pmu;            /* serve the kernel's uncore PMUs as package counters */

        SimProfileDef *profiles;
        size_t n_profiles;
        SimCpuRule *rules;
        size_t n_rules;

        /* The [lbr] section: the program the simulated kernel samples branch stacks of; NULL
         * without one (branch-stack sampling is then refused, as on a CPU without LBR). */
        SimLbrConfig *lbr;
} SimConfig;

SimConfig *sim_config_free(SimConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(SimConfig *, sim_config_free);

/* The configuration used without a file. */
int sim_config_new_default(SimConfig **ret);

/* Parses path. Logs "path:line: reason" and returns -EINVAL for a bad line, or the errno of
 * a file that cannot be read. */
int sim_config_load(const char *path, SimConfig **ret);
/* The same for an open stream (the fuzz target feeds it memory); path names it in messages. */
int sim_config_load_file(FILE *f, const char *path, SimConfig **ret);

/* Whether a CPU number is listed in a sorted list. */
bool sim_cpu_listed(const uint32_t *cpus, size_t n, uint32_t cpu);

/* Gives every CPU of an n_cpus machine its profile: "default", then the [cpus] rules in file
 * order, each either replacing the profile (profile = NAME, or the first of phase = A,B,MS)
 * or adjusting it. ret_phases (may be NULL) gets each CPU's other phase. Logs and fails
 * on an unknown profile, a CPU the machine lacks, a profile loop, or a profile that is
 * inconsistent or that the model's formulas cannot express. */
int sim_config_resolve_profiles(const SimConfig *c, const SimModel *m, uint32_t n_cpus,
                                SimProfile **ret_profiles, SimPhase **ret_phases);

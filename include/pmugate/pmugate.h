/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: unprivileged access to CPU PMU registers through pmugated
 *
 * Every function returns 0 (or a non-negative count) on success and a negative errno on
 * failure; pmugate_strerror() turns it into text, and pmugate_last_error() gives the daemon's
 * own code and reason for the last refused request. The library never logs and never exits.
 * A connection is not thread-safe; use one per thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMUGATE_DEFAULT_SOCKET "/run/pmugate/pmugate.sock"

typedef struct pmugate pmugate;

/* Connects to socket_path, or when NULL to $PMUGATE_SOCKET, or to PMUGATE_DEFAULT_SOCKET. */
int pmugate_connect(const char *socket_path, pmugate **ret);
pmugate *pmugate_disconnect(pmugate *c);

/* The daemon's code, name and reason for the last request it refused on this connection. */
typedef struct pmugate_error {
        int code;             /* protocol error code (docs/PROTOCOL.md); 0 when none */
        char name[32];        /* e.g. "reg-not-allowed" */
        char reason[400];     /* one line, says what to do where it can */
        int64_t op_index;     /* refused op of a batch, or -1 */
} pmugate_error;

const pmugate_error *pmugate_last_error(const pmugate *c);

/* Text for a negative errno returned by this library. */
const char *pmugate_strerror(int error);

/* ------------------------------------------------------------------ hello / info */

typedef struct pmugate_cpu {
        uint32_t cpu;
        int32_t package;
        int32_t die;
        int32_t core;
        uint32_t thread;
        bool online;
        int32_t ccx;            /* the L3 cache the CPU uses (AMD: its core complex); -1 unknown */
} pmugate_cpu;

typedef struct pmugate_unit {
        uint32_t index;
        char bdf[16];
        uint16_t vendor;
        uint16_t device;
        int32_t package;
} pmugate_unit;

typedef struct pmugate_register {
        bool pci;
        uint32_t first, last;
        uint8_t width;
        uint64_t write_mask;   /* 0: read-only */
        char scope[16];        /* "thread", "core", "ccx", "package" */
        char cls[16];          /* "core-pmu", "rapl", "uncore-imc", ... */
        char name[40];         /* base name; ranges append the index */
        uint16_t pci_vendor, pci_device;
} pmugate_register;

/* A counter of a whole package that the daemon serves read-only (hello "counters" in
 * docs/PROTOCOL.md): the kernel's uncore memory-controller events, which the daemon opened at
 * start-up. Read one with pmugate_batch_read_counter(); package.h turns the values into bytes. */
typedef struct pmugate_counter {
        uint32_t index;         /* what pmugate_batch_read_counter() takes */
        char name[64];          /* "PMU/event": "uncore_imc_free_running_0/read" */
        int32_t package;
        uint8_t width;          /* bits before the value wraps (64: the kernel's count) */
        double scale;           /* one count is scale units */
        char unit[16];          /* "MiB" */
        char cls[16];           /* register class policy judges a read by: "uncore-imc" */
        char error[160];        /* why the daemon could not open it; "" when it is served */
} pmugate_counter;

/* A PMU the daemon opens perf events on (hello "pmus"; include/pmugate/perf.h). */
typedef struct pmugate_perf_pmu {
        char name[40];          /* as the kernel's sysfs names it: "cpu", "cpu_core", "uncore_imc_0" */
        char kind[16];          /* "core", "uncore", "software" */
        uint32_t type;          /* the kernel's attr.type */
        int32_t package;        /* uncore: its package; -1 otherwise */
        int32_t cpu;            /* uncore: the CPU its events open on; -1 otherwise */
        uint8_t topdown;        /* 0 none, 1 the level-1 metric events, 2 level 2 too */
} pmugate_perf_pmu;

typedef struct pmugate_info {
        char server[64];
        uint32_t protocol;
        char backend[16];
        bool simulated;
        /* A simulated PMU: the PERFEVTSEL encodings it counts (event, umask, edge, cmask; AMD's
         * event[11:8] in bits 35:32); other events count 0 there and are shown as not modelled.
         * NULL on hardware and from daemons that do not say. */
        uint64_t *sim_events;
        size_t n_sim_events;
        char mode[8];           /* "open" or "job" */

        char vendor[16];
        uint32_t family, model, stepping;
        char model_name[128];
        char model_key[16];     /* "skx", "clx", "icx", "spr", "emr", "gnr", "srf", "zen4", "zen5";
                                 * empty when unknown */
        char model_label[64];   /* "Sapphire Rapids" */

        bool has_pmu;
        uint32_t pmu_version, gp_counters, fixed_counters, counter_width, perf_metrics, slots_width;
        bool has_perf_capabilities;
        uint64_t perf_capabilities;

        pmugate_cpu *cpus;
        size_t n_cpus;
        pmugate_unit *units;
        size_t n_units;
        pmugate_register *registers;
        size_t n_registers;
        pmugate_counter *counters;      /* package counters, by package; none from older daemons */
        size_t n_counters;

        bool nmi_watchdog;
        /* Counters another PMU user holds (the kernel's NMI watchdog, perf): bit i of
         * foreign_fixed_mask is FIXED_CTRi, bit i of foreign_gp_mask is PMCi. Never program
         * them; the daemon refuses with EBUSY. */
        uint64_t foreign_fixed_mask;
        uint64_t foreign_gp_mask;

        uint32_t uid, gid;
        int32_t pid;
        char role[16];
        bool may_read, may_write, may_admin;
        char rights_reason[400];
        /* Job mode: the caller's job and CPUs, or why it has none. */
        bool scoped;
        char scope_job[257];
        uint32_t *scope_cpus;
        size_t n_scope_cpus;
        char scope_reason[400];

        uint32_t max_request_size, max_ops_per_batch;
        /* Steps per CPU of pmugate_batch_each_cpu(); 0: the daemon predates it. */
        uint32_t max_each_steps;

        /* AMD: PerfMonV2, and the L3 (per CCX), data-fabric and memory-controller counters
         * CPUID leaf 0x80000022 reports (cpuid_read false: the model's defaults). */
        bool perfmon_v2, cpuid_read;
        uint32_t l3_counters, df_counters, umc_counters;

        /* Uncore counters the kernel holds (its amd_uncore driver): bit i of foreign_l3_mask is
         * L3 counter i (of some CCX), of foreign_df_mask data-fabric counter i. Never program
         * them; the daemon refuses with EBUSY. 0 from daemons that predate them. */
        uint64_t foreign_l3_mask;
        uint64_t foreign_df_mask;
        /* Units (pmugate_unit.index) the kernel's uncore_imc driver programs: memory-controller
         * channels no client may program; read the package counters instead. */
        uint32_t *foreign_units;
        size_t n_foreign_units;

        /* How the node programs counters (hello "counting"): counters_via is "msr" (register
         * writes), "perf" (perf_event_open: register writes are refused, reads stay) or "none";
         * counters_wanted what the administrator asked ("auto", "msr", "perf"); counters_reason
         * why; msr_reads whether MSRs (RAPL energy) can be read. A daemon that predates the key
         * programs through MSRs: "msr", "", "", msr_reads true. */
        char counters_via[8];
        char counters_wanted[8];
        char counters_reason[400];
        bool msr_reads;
        /* The PMUs perf events open on; none from a daemon without the perf path. */
        pmugate_perf_pmu *pmus;
        size_t n_pmus;
        /* The TSC's rate in Hz (hello "tsc_hz"), which turns the TSC ticks read beside the counts
         * into the counted window's seconds; 0 when the daemon does not know it. */
        uint64_t tsc_hz;
} pmugate_info;

/* Whether measurements go through the daemon's perf path (counters_via "perf"). */
bool pmugate_info_counts_via_perf(const pmugate_info *info);
/* The topdown level (0-2) of the core PMU's perf metric events; 0 without the perf path. */
unsigned pmugate_info_perf_topdown(const pmugate_info *info);

int pmugate_hello(pmugate *c, pmugate_info **ret);

/* Whether the kernel's uncore_imc driver holds unit (a pmugate_unit.index): see foreign_units. */
bool pmugate_info_unit_is_kernels(const pmugate_info *info, uint32_t unit);
pmugate_info *pmugate_info_free(pmugate_info *info);

/* Finds a register by name ("IA32_PMC0", "IA32_PERF_GLOBAL_CTRL", "IMC_CTL1") in the
 * daemon's allowlist. Returns 0 with the MSR address or config offset, or -ENOENT. */
int pmugate_info_register_by_name(const pmugate_info *info, const char *name, bool *ret_pci, uint32_t *ret_reg);

/* Writes the display name of reg (e.g. "IA32_PERFEVTSEL2") or "" when not listed. */
void pmugate_info_register_name(const pmugate_info *info, bool pci, uint32_t reg, char *buf, size_t size);

/* ------------------------------------------------------------------ batches */

typedef struct pmugate_batch pmugate_batch;

int pmugate_batch_new(pmugate_batch **ret);
pmugate_batch *pmugate_batch_free(pmugate_batch *b);

/* Drops every op; the batch can be filled again. */
void pmugate_batch_clear(pmugate_batch *b);

/* Each add returns the index of its (first) result, or a negative errno (-E2BIG past the
 * daemon's op limit or request size). Ops run in the order added. */
int pmugate_batch_read_msr(pmugate_batch *b, uint32_t cpu, uint32_t reg);
int pmugate_batch_write_msr(pmugate_batch *b, uint32_t cpu, uint32_t reg, uint64_t value);
/* Changes only the bits in mask (further limited by the register's write mask): for shared
 * registers such as IA32_PERF_GLOBAL_CTRL where a measurement owns some bits. The daemon
 * reads and writes within one batch, so no other client's request comes in between. */
int pmugate_batch_write_msr_bits(pmugate_batch *b, uint32_t cpu, uint32_t reg, uint64_t value, uint64_t mask);
int pmugate_batch_read_pci(pmugate_batch *b, uint32_t unit, uint32_t offset);
/* Reads a package counter (pmugate_info.counters[i].index). Checked like a package register
 * read: in job mode the job must hold the whole package unless the policy shares package
 * reads (-EPERM, "out-of-scope"). A counter the daemon could not open fails alone (-ENODEV). */
int pmugate_batch_read_counter(pmugate_batch *b, uint32_t counter);
int pmugate_batch_write_pci(pmugate_batch *b, uint32_t unit, uint32_t offset, uint64_t value);

/* Reads every register on every CPU in one compact op; results are CPU-major:
 * index(first) + cpu_index * n_regs + reg_index. */
int pmugate_batch_read_msrs(pmugate_batch *b, const uint32_t *cpus, size_t n_cpus, const uint32_t *regs, size_t n_regs);

/* One step of pmugate_batch_each_cpu(): a read, a write, or a write of the bits in mask. */
typedef enum pmugate_step_kind {
        PMUGATE_STEP_READ,
        PMUGATE_STEP_WRITE,
        PMUGATE_STEP_WRITE_BITS,
} pmugate_step_kind;

typedef struct pmugate_step {
        pmugate_step_kind kind;
        uint32_t reg;
        uint64_t value;         /* writes */
        uint64_t mask;          /* PMUGATE_STEP_WRITE_BITS */
} pmugate_step;

/* Runs the same steps on every CPU in one compact op: every step on cpus[0] in order, then on
 * cpus[1], and so on; each checked and run exactly as the single op it stands for. Results are
 * CPU-major: index(first) + cpu_index * n_steps + step_index. At most 64 steps (-E2BIG); a
 * daemon whose pmugate_info.max_each_steps is 0 predates the op and refuses the batch. */
int pmugate_batch_each_cpu(pmugate_batch *b, const uint32_t *cpus, size_t n_cpus, const pmugate_step *steps,
                           size_t n_steps);

/* Number of results the batch will produce. */
size_t pmugate_batch_size(const pmugate_batch *b);

/* Runs the batch in one round trip (a reply of many results arrives in several messages).
 * Returns 0 when the daemon ran it (each op then has its own status), or a negative errno
 * when the daemon refused it as a whole (nothing ran; see pmugate_last_error) or the
 * connection failed. A batch can be run again unchanged. */
int pmugate_batch_run(pmugate *c, pmugate_batch *b);

/* Status of op i of the last run (0 or a negative errno such as -EIO), and its value: what
 * was read, or what was written after the daemon applied the register's write mask. */
int pmugate_batch_result(const pmugate_batch *b, size_t i, uint64_t *ret_value);

/* ------------------------------------------------------------------ leases */

/* A lease is the exclusive right to program the PMU of a CPU; writes need one. It ends with
 * pmugate_release() or when the connection closes, and the daemon then restores every
 * register the holder wrote and zeroes its counters. Returns -EBUSY when another client holds
 * one of the CPUs (pmugate_last_error names it). */
int pmugate_lease(pmugate *c, const uint32_t *cpus, size_t n_cpus);

/* Releases leases on cpus, or on every CPU when n_cpus is 0. Releasing what is not held is
 * not an error. */
int pmugate_release(pmugate *c, const uint32_t *cpus, size_t n_cpus);

/* ------------------------------------------------------------------ admin */

typedef struct pmugate_client_info {
        uint32_t uid;
        int32_t pid;
        char role[16];
        uint64_t requests;
} pmugate_client_info;

typedef struct pmugate_grant_info {
        char job[257];
        uint32_t uid;
        char cpus[256];         /* CPU list, or "" when the job's cgroup decides */
} pmugate_grant_info;

typedef struct pmugate_lease_info {
        uint32_t cpu;
        uint32_t uid;
        int32_t pid;
        char role[16];
        char job[257];
        uint64_t registers;     /* registers it changed, to be restored */
} pmugate_lease_info;

typedef struct pmugate_status {
        char server[64];
        char backend[16];
        char mode[8];
        pmugate_client_info *clients;
        size_t n_clients;
        pmugate_grant_info *grants;
        size_t n_grants;
        pmugate_lease_info *leases;
        size_t n_leases;
        bool nmi_watchdog;
        uint64_t foreign_fixed_mask, foreign_gp_mask;
        uint64_t connections, refused_connections, requests, ops, denials, protocol_errors;
        char audit_sink[16];
        uint64_t audit_emitted, audit_suppressed;
        /* The kernel's uncore drivers: amd_uncore's L3 and data-fabric counters (as in
         * pmugate_info), and how many memory-controller channels uncore_imc holds. */
        uint64_t foreign_l3_mask, foreign_df_mask;
        size_t n_foreign_units;
        uint64_t omitted;       /* clients, grants and leases left out of a reply too long even
                                 * in parts (PMUGATE_STATUS_PART_BYTES each) */
        char config[512];       /* the configuration file the daemon reads (its --config);
                                 * "" from a daemon that does not say */
} pmugate_status;

int pmugate_status_get(pmugate *c, pmugate_status **ret);
pmugate_status *pmugate_status_free(pmugate_status *s);

/* Lets uid use this node for job (batch prolog). Without CPUs, the job's cpuset cgroup
 * decides at each request. Granting a job again replaces its grant. */
int pmugate_grant(pmugate *c, const char *job, uint32_t uid, const uint32_t *cpus, size_t n_cpus, bool *ret_replaced);
/* The same; with lbr the grant also gives uid the class lbr for the job (pmugate timing:
 * sampling its own processes of the job, docs/PERF.md "Timing"). */
int pmugate_grant_with_lbr(pmugate *c, const char *job, uint32_t uid, const uint32_t *cpus, size_t n_cpus, bool lbr,
                           bool *ret_replaced);

/* Ends job's grant (batch epilog) and its processes' leases, restoring their registers.
 * Revoking a job without a grant is not an error: *ret_revoked tells. */
int pmugate_revoke(pmugate *c, const char *job, bool *ret_revoked);

/* Ends leases and puts the PMU of cpus (every CPU when n_cpus is 0) back to a clean state:
 * counters stopped and zeroed, their overflow status cleared, except those another PMU user
 * holds. More than one request's list of CPUs goes in several requests (up to 8192 CPUs). */
int pmugate_reset(pmugate *c, const uint32_t *cpus, size_t n_cpus);

/* Makes the daemon read its configuration again; a bad file is refused (see
 * pmugate_last_error for its line) and the old policy stays. */
int pmugate_reload(pmugate *c);

/* ------------------------------------------------------------------ job map (monitor, admin) */

typedef struct pmugate_jobmap_cpu {
        uint32_t cpu;
        uint32_t job;           /* index into pmugate_jobmap.jobs */
} pmugate_jobmap_cpu;

typedef struct pmugate_jobmap_lease {
        uint32_t cpu;
        char role[16];          /* "user", "admin", "monitor" */
} pmugate_jobmap_lease;

typedef struct pmugate_jobmap {
        char mode[8];
        char **jobs;            /* the jobs holding CPUs of this node */
        uint32_t *uids;         /* each job's uid, or NULL: only admins, and monitors where the
                                 * policy says so (jobmap_uids), are told */
        size_t n_jobs;
        pmugate_jobmap_cpu *cpus;       /* by CPU; a CPU two jobs share has two entries */
        size_t n_cpus;
        pmugate_jobmap_lease *leases;   /* CPUs whose counters someone programs now */
        size_t n_leases;
} pmugate_jobmap;

/* Which job holds which CPU (the "jobmap" request): for the monitor role and admins. */
int pmugate_jobmap_get(pmugate *c, pmugate_jobmap **ret);
pmugate_jobmap *pmugate_jobmap_free(pmugate_jobmap *m);

#ifdef __cplusplus
}
#endif

#include "perf.h"
#include "measure.h"
#include "package.h"

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The machine the daemon serves: CPU vendor and model, logical CPUs with their topology, and
 * the PCI units that carry uncore counters. Discovered from files under a root directory, so a
 * test can describe a whole machine with plain files; or built by the simulated backend.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "cpuset.h"

/* The vendor an ARM machine gets from MIDR implementer 0x41 (Arm Limited); other implementers
 * are "arm64:0xNN", which no model names. */
#define MACHINE_VENDOR_ARM "ARM"
#define MIDR_IMPLEMENTER_ARM 0x41U
/* Why an ARM machine counts through perf, and why a register request there is refused. */
#define MACHINE_NO_MSRS_REASON "no MSRs on ARM: the kernel's perf_event_open is the only way to the PMU"

/* Which CPUs share a register: each logical CPU has its own, or the threads of a core share
 * one, or every CPU of a package, or (AMD's L3 counters) every CPU of a core complex, the CPUs
 * that share one L3 cache. */
typedef enum RegScope {
        REG_SCOPE_THREAD,
        REG_SCOPE_CORE,
        REG_SCOPE_PACKAGE,
        REG_SCOPE_CCX,
        _REG_SCOPE_MAX,
} RegScope;

const char *reg_scope_to_string(RegScope s);

/* What pmugate knows about a CPU model's core PMU. */
typedef struct CpuModel {
        const char *key;         /* "skx", "clx", "icx", "spr", "emr", "gnr", "srf", "zen4", "zen5": allowlist files
                                  * name these; "grace", which has none (no MSRs on ARM) */
        const char *name;        /* "Skylake-SP" */
        const char *vendor;      /* "GenuineIntel", "AuthenticAMD", "ARM" (MIDR implementer 0x41) */
        unsigned family;         /* ARM: the MIDR architecture field (0xf: ID registers tell) */
        unsigned model;          /* ARM: the MIDR part number */
        unsigned model_last;     /* the last model of a range starting at model */
        unsigned stepping_min, stepping_max;
        unsigned pmu_version;    /* architectural perfmon version (CPUID.0AH:EAX[7:0]) */
        unsigned gp_counters;    /* per logical CPU with SMT on */
        unsigned gp_counters_smt_off; /* per logical CPU when the core runs one thread */
        unsigned fixed_counters;
        unsigned counter_width;  /* bits */
        unsigned perf_metrics;   /* 0 none, 1 PERF_METRICS L1 bytes, 2 L1 and L2 bytes */
        unsigned slots_width;    /* TopDown pipeline width (slots per cycle) */
        unsigned nominal_mhz;    /* a typical base frequency, used by the simulator */
        /* AMD: PerfMonV2 (global control and status registers), and the counters of the L3
         * (per CCX), the data fabric and the memory controllers (per package) when CPUID leaf
         * 0x80000022 cannot be read. */
        bool perfmon_v2;
        unsigned l3_counters;
        unsigned df_counters;
        unsigned umc_counters;
} CpuModel;

/* By the whole vendor string: "ARM" begins with an A too. */
static inline bool cpu_model_is_amd(const CpuModel *c) {
        return c && strcmp(c->vendor, "AuthenticAMD") == 0;
}

/* An ARM core: no MSRs exist, counters are reached through the kernel's perf_event_open only. */
static inline bool cpu_model_is_arm(const CpuModel *c) {
        return c && strcmp(c->vendor, MACHINE_VENDOR_ARM) == 0;
}

const CpuModel *cpu_model_find(const char *vendor, unsigned family, unsigned model, unsigned stepping);
const CpuModel *cpu_model_by_key(const char *key);

typedef struct MachineCpu {
        bool present;   /* listed by the machine at all */
        bool online;
        int32_t package;
        int32_t die;
        int32_t core;   /* core_id as the kernel reports it (unique within a package) */
        uint32_t thread; /* position of this CPU among its core's thread siblings */
        int32_t ccx;    /* id of the L3 cache the CPU uses (its core complex on AMD); -1 unknown */
} MachineCpu;

typedef struct MachineUnit {
        char bdf[16];   /* "0000:3a:0a.2": PCI domain, bus, device, function */
        uint16_t vendor;
        uint16_t device;
        int32_t package; /* from the kernel's NUMA node of the device; -1 when unknown */
        uint32_t config_size;
} MachineUnit;

/* A counter of the kernel's own uncore PMUs (uncore_imc_N, uncore_imc_free_running_N) that the
 * daemon opened with perf_event_open (through its perf opener) at start-up and serves read-only by index: the memory
 * traffic of one package, for models whose memory controllers live in MMIO or whose PCI
 * counters a caller may not program. The simulated backend serves the same counters. */
#define MACHINE_COUNTER_NAME_MAX 64U
typedef struct MachineCounter {
        char name[MACHINE_COUNTER_NAME_MAX];   /* "<pmu>/<event>": "uncore_imc_free_running_0/read" */
        char cls[16];           /* register class policy judges it by: "uncore-imc" */
        int32_t package;
        uint32_t cpu;           /* the CPU the kernel counts it on (the PMU's cpumask) */
        uint32_t type;          /* perf_event_attr type and config, from sysfs */
        uint64_t config;
        uint8_t width;          /* bits before the value wraps (64: the kernel's accumulated count) */
        double scale;           /* the event's .scale file: one count is scale units */
        char unit[16];          /* the event's .unit file: "MiB" */
        int fd;                 /* the perf event (dev backend); -EBADF when not (yet) open */
        char error[160];        /* why it could not be opened; empty when served */
} MachineCounter;

typedef struct Machine {
        char vendor[16];
        unsigned family, model, stepping;
        char model_name[128];       /* "model name" from /proc/cpuinfo; on ARM "MIDR 0x410fd4f0" */
        uint32_t midr;              /* ARM: MIDR_EL1 of the first online CPU; 0 elsewhere */
        const CpuModel *cpu_model;  /* NULL when pmugate does not know the model */

        MachineCpu *cpus;           /* indexed by logical CPU number */
        uint32_t n_cpus;            /* highest CPU number + 1 */
        uint32_t n_online;
        uint32_t n_packages;
        bool smt;                   /* some core has more than one online thread */

        MachineUnit *units;
        uint32_t n_units;

        MachineCounter *counters;   /* package counters, package-major */
        uint32_t n_counters;

        bool nmi_watchdog;          /* /proc/sys/kernel/nmi_watchdog says 1 */

        /* AMD PMU capabilities: CPUID leaf 0x80000022 read through dev/cpu/N/cpuid when
         * cpuid_read, otherwise the model's defaults. */
        bool cpuid_read;
        bool perfmon_v2;
        unsigned core_counters;
        unsigned df_counters;
        unsigned umc_counters;
        unsigned l3_counters;
} Machine;

/* Reads root/path, a kernel text file (sysfs, procfs) or the fake machine's copy of one, as
 * hostile input: refused when longer than size - 1 bytes (-EFBIG) or holding a NUL (-EINVAL);
 * trailing white space removed. */
int machine_read_text(const char *root, const char *path, char *buf, size_t size);

Machine *machine_new(void);
Machine *machine_free(Machine *m);

/* MIDR_EL1 as the kernel prints it in sys/devices/system/cpu/cpuN/regs/identification/midr_el1
 * ("0x00000000410fd4f0"): "0x" and 1 to 16 hex digits, the upper 32 bits zero (RES0), nothing
 * else. Returns 0, or -EINVAL for any other text. */
int machine_parse_midr(const char *text, uint32_t *ret);

/* The identity MIDR_EL1 gives: vendor ("ARM" for implementer 0x41, else "arm64:0xNN"), family
 * (the architecture field), model (the part number), stepping (variant << 4 | revision). */
void machine_set_midr(Machine *m, uint32_t midr);

/* Reads proc/cpuinfo and sys/devices/system/cpu under root. Logs what is wrong and returns
 * negative errno when the machine cannot be served. PCI units come separately, once the
 * allowlist for the CPU model is known. */
int machine_discover(const char *root, Machine **ret);

/* Whether a PCI function of vendor:device is a unit pmugate serves (the allowlist names it). */
typedef bool (*MachineUnitFilter)(uint16_t vendor, uint16_t device, const void *userdata);

/* Lists the PCI functions under root's sys/bus/pci/devices that wanted() accepts, in address
 * order, at most PMUGATE_UNITS_MAX of them (more are logged and left out). Each unit's package
 * comes from the kernel's topology: the device's numa_node, the node's cpulist, and those
 * CPUs' physical_package_id. A node whose online CPUs span several packages or none, a
 * numa_node of -1, or a missing file leave the package unknown (-1). */
int machine_discover_units(Machine *m, const char *root, MachineUnitFilter wanted, const void *userdata);

/* Decodes CPUID leaf 0x80000022 (EAX, EBX) into m's AMD PMU capabilities: PerfMonV2 in EAX[0],
 * core counters in EBX[3:0], data-fabric counters in EBX[15:10], memory-controller counters
 * in EBX[21:16]. Without PerfMonV2 the leaf says nothing and the model's defaults stay. */
void machine_set_amd_pmu_caps(Machine *m, uint32_t eax, uint32_t ebx);

/* Sets the AMD capabilities to cpu_model's defaults. */
void machine_default_pmu_caps(Machine *m);

/* Lists the kernel's uncore memory controller PMUs under root's sys/bus/event_source/devices
 * and their read and write traffic events on a CPU of each package (as root, before privileges
 * are dropped): each counter with its attr type and config, fd -EBADF and no error, to be
 * opened by machine_open_counters(). A counter whose sysfs entry cannot be read stays listed
 * with the reason in its error, and is logged: the daemon serves the rest. Returns negative
 * errno only on allocation failure. (perf-counters.c) */
int machine_discover_counters(Machine *m, const char *root);

/* Opens one CPU-wide counting event (perf_event_open(attr, -1, cpu, -1, 0) in the perf opener):
 * the fd, or a negative errno. */
struct perf_event_attr;
typedef int (*MachineCounterOpen)(const struct perf_event_attr *attr, int cpu, void *userdata);

/* The attr of a package counter: its type and config, counting, no exclude bit (uncore PMUs
 * refuse them), nothing else; what the opener's check admits. */
void machine_counter_attr(const MachineCounter *c, struct perf_event_attr *ret);

/* Opens every discovered counter that is neither open nor refused with open_event: pmugated
 * itself never calls perf_event_open (its unit's system-call filter leaves it out), the perf
 * opener does, forked or as a service. One that fails keeps the reason in its error, and is
 * logged. Returns how many were opened. (perf-counters.c) */
unsigned machine_open_counters(Machine *m, MachineCounterOpen open_event, void *userdata);

/* Recomputes n_online, n_packages and smt from cpus[]. */
void machine_update_summary(Machine *m);

/* General-purpose counters per logical CPU on this machine, with or without SMT. */
unsigned machine_gp_counters(const Machine *m);

static inline const MachineCpu *machine_cpu(const Machine *m, uint32_t cpu) {
        if (cpu >= m->n_cpus || !m->cpus[cpu].present)
                return NULL;
        return &m->cpus[cpu];
}

/* The CPUs a register is shared by: the online CPUs of the thread (the CPU itself), of its
 * core, of its CCX (where the CCX is unknown: of its package, which holds it), or of its
 * package; for a PCI unit (pci true, target a unit index) the online CPUs of
 * the unit's package, whatever scope says. Every "all CPUs of" check and every journal anchor
 * is decided from this one set, and it is never empty on success: returns 0, -ENXIO when the
 * CPU or unit does not exist or the CPU is offline, -ENOENT when the unit's package is
 * unknown or has no online CPU. */
int machine_scope_cpus(const Machine *m, RegScope scope, uint32_t target, bool pci, CpuSet *ret);

/* The first CPU of machine_scope_cpus()' set, without building it: the anchor whose lease
 * keeps the journal of a shared register. Same returns. */
int machine_scope_anchor(const Machine *m, RegScope scope, uint32_t target, bool pci, uint32_t *ret);

/* The lowest-numbered online CPU, or -ENXIO when there is none. */
int machine_first_online_cpu(const Machine *m, uint32_t *ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Marker internals: what the runner passes to the program, the results file between them,
 * and the RDPMC fast path's detection
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Environment the runner sets for the program it starts. */
#define MARKER_ENV_FILE "PMUGATE_MARKER_FILE"       /* where the program writes its results */
#define MARKER_ENV_REGS "PMUGATE_MARKER_REGS"       /* MSRs a start and a stop read: hex, "c1,309" */
#define MARKER_ENV_CPUS "PMUGATE_MARKER_CPUS"       /* CPUs whose counters run (a CPU list) */
#define MARKER_ENV_WIDTH "PMUGATE_MARKER_WIDTH"     /* counter width in bits */
#define MARKER_ENV_SHARED "PMUGATE_MARKER_SHARED"   /* SLOTS/PERF_METRICS before the last reset */
#define MARKER_ENV_RDPMC "PMUGATE_MARKER_RDPMC"     /* "0": never read in user space */
/* Perf read mode: the perf events every thread opens for itself (marker-perf.h); the
 * registers, CPUs and width are not used then. */
#define MARKER_ENV_PERF "PMUGATE_MARKER_PERF"
/* Where the rdpmc switch of the kernel's x86 PMU is looked up; tests point it at a fake tree. */
#define MARKER_ENV_SYSFS "PMUGATE_MARKER_SYSFS"
#define MARKER_SYSFS_DEFAULT "/sys"
#define MARKER_SYSFS_RDPMC "bus/event_source/devices/cpu/rdpmc"

#define MARKER_FILE_MAGIC "pmugate-markers 1"
/* Registers a start reads: every GP and fixed counter and PERF_METRICS. */
#define MARKER_REGS_MAX 16U
/* PERF_METRICS is not a counter: its columns are the slots of each of its eight fields, from
 * SLOTS times the field, after the register columns. */
#define MARKER_METRICS_FIELDS 8U
#define MARKER_COLUMNS_MAX (MARKER_REGS_MAX + MARKER_METRICS_FIELDS)
#define MARKER_ERRORS_MAX 32U
#define MARKER_ERROR_TEXT_MAX 240U

#define MARKER_MSR_PMC0 0x0C1U
#define MARKER_MSR_FIXED_CTR0 0x309U
#define MARKER_MSR_SLOTS 0x30CU
#define MARKER_MSR_PERF_METRICS 0x329U
#define MARKER_GP_MAX 8U
/* AMD Zen 4 / Zen 5: PerfCtr i at 0xC0010201 + 2i, RDPMC index i. */
#define MARKER_MSR_AMD_PERF_CTR0 0xC0010201U
#define MARKER_AMD_GP_MAX 6U
#define MARKER_FIXED_MAX 4U

/* What the runner publishes for the program, per CPU number: the runner resets SLOTS and
 * PERF_METRICS at every sample to keep the 8-bit fractions precise (as the kernel does), and
 * here keeps what they had counted before. A sequence lock: odd while a reset is under way;
 * a reader whose read saw the sequence change reads again. */
#define MARKER_SHARED_MAGIC UINT64_C(0x31306b726d67706d)        /* "pmgmrk01" */

typedef struct MarkerSharedCpu {
        uint64_t sequence;
        uint64_t slots;
        uint64_t fields[MARKER_METRICS_FIELDS];
} MarkerSharedCpu;

typedef struct MarkerShared {
        uint64_t magic;
        uint64_t n_cpus;
        MarkerSharedCpu cpus[];
} MarkerShared;

typedef enum MarkerReadMode {
        MARKER_READ_OFF,
        MARKER_READ_DAEMON,
        MARKER_READ_RDPMC,
        MARKER_READ_PERF,               /* each thread's own perf events, through their control pages */
} MarkerReadMode;

const char *marker_read_mode_name(MarkerReadMode mode);

/* RDPMC index of an MSR the runner programs (PMCn: n, FIXED_CTRn: 1 << 30 | n, PERF_METRICS:
 * 1 << 29), or -EINVAL for a register RDPMC cannot read. */
int marker_rdpmc_index(uint32_t msr, uint32_t *ret_index);

/* The kernel's rdpmc switch under sysfs_root: 0, 1 or 2, or a negative errno (-ENOENT on a
 * machine without the x86 PMU driver). */
int marker_rdpmc_sysfs(const char *sysfs_root);

/* Executes RDPMC of index once under a SIGSEGV handler: true when the CPU let this process do
 * it. Changes the process's SIGSEGV disposition for the moment it runs: call it before other
 * threads exist. */
bool marker_rdpmc_probe(uint32_t index);

/* Whether to read in user space: only when the switch is not 0 and the probe worked (a switch
 * of 1 works only with a perf event the process mapped, which the probe finds). Writes a
 * one-line reason for the choice. */
MarkerReadMode marker_rdpmc_decide(int sysfs_value, bool probe_ok, char *reason, size_t reason_size);

/* Reads n counters by RDPMC and the CPU they were read on; a thread that moved to another
 * CPU while reading reads again. -EAGAIN when it kept moving. */
int marker_rdpmc_read(const uint32_t *indexes, size_t n, uint64_t *values, unsigned *ret_cpu);

/* One region's results for one thread, as the runner reads them back. */
typedef struct MarkerRow {
        uint32_t region;
        uint32_t thread;
        int64_t cpu;                    /* -1: the thread ran the region's calls on several CPUs */
        uint64_t calls;
        uint64_t time_ns;
        uint64_t migrated;              /* calls whose counts were dropped: the thread moved */
        int64_t values[MARKER_COLUMNS_MAX];
} MarkerRow;

typedef struct MarkerError {
        uint64_t count;
        char text[MARKER_ERROR_TEXT_MAX];
} MarkerError;

typedef struct MarkerFile {
        char mode[16];
        size_t n_columns;
        char **regions;                 /* by region id */
        size_t n_regions;
        MarkerRow *rows;
        size_t n_rows;
        MarkerError *errors;
        size_t n_errors;
        uint64_t errors_dropped;        /* misuse reported beyond MARKER_FILE_ERRORS_MAX lines */
} MarkerFile;

#define MARKER_FILE_ERRORS_MAX 64U

/* Parses the results a program wrote (untrusted: every field is checked, and an unknown or
 * malformed line refuses the file with its line number in reterr_reason, -EBADMSG). A program
 * whose markers could not start says why instead: -ECANCELED, with that in reterr_reason. */
int marker_file_parse(const char *text, size_t size, size_t n_columns, MarkerFile **ret, char *reterr_reason,
                      size_t reason_size);
MarkerFile *marker_file_free(MarkerFile *f);

/* Whether name is a valid region name (1 to PMUGATE_MARKER_NAME_MAX printable characters, no
 * white space). */
bool marker_name_valid(const char *name);

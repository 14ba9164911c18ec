/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The forwarder's state, shared by likwid-forward.c (batches, leases, LIKWID's answers) and
 * likwid-forward-perf.c (nodes that count via perf). Not a public interface.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "likwid/likwid-perf.h"
#include "likwid/likwid-record.h"
#include "likwid/likwid-stats.h"
#include "pmugate-limits.h"
#include "pmugate/pmugate.h"

typedef struct LikwidForwarder LikwidForwarder;

/* Operations one forwarded batch holds: as many as fit a request at their longest encoding,
 * a "pw" with a 32-bit unit and offset and a 64-bit value (23 bytes), after the request's own
 * keys. The daemon's op limit is far higher since "R" and "each" ops expand. */
#define FORWARD_OP_BYTES_MAX 23U
#define FORWARD_OPS_MAX ((PMUGATE_REQUEST_SIZE_MAX - 64U) / FORWARD_OP_BYTES_MAX)
/* Refusals remembered per register; LIKWID asks for a few dozen distinct ones per run. */
#define REFUSED_MAX 1024U
/* Lines about collected writes that failed after LIKWID was told they succeeded. */
#define FAILURE_LINES_MAX 20U

typedef enum LeaseState {
        LEASE_NONE = 0,
        LEASE_HELD,
        LEASE_REFUSED,
} LeaseState;

typedef struct PendingOp {
        bool pci, write;
        bool counter;           /* a package counter read; target is its index */
        uint32_t target;        /* CPU, or pmugate unit index */
        uint32_t reg;
        uint64_t value;
        LikwidRecord *answer;   /* where the answer goes; NULL once LIKWID has it */
} PendingOp;

/* Where LIKWID's "zero" of a read-only counter left it: reads answer the distance from it. */
typedef struct CounterBase {
        uint32_t unit, reg;
        uint64_t base;
} CounterBase;

#define COUNTER_BASES_MAX 256U

/* A free-running DDR counter as LIKWID sees it: the bytes the daemon's package counter counted
 * since LIKWID first read it (or zeroed it), with the counter's own wraps and scale taken out. */
typedef struct FreerunState {
        uint32_t counter;
        bool frozen;            /* LIKWID froze the package's uncore: the bytes stand still */
        uint64_t last_raw;
        double bytes;
} FreerunState;

#define FREERUN_MAX 64U

/* A memory channel counter LIKWID programmed on a node that counts via perf (skx, clx). */
typedef struct CasState {
        uint32_t device, socket, ctr;
        uint64_t ctl;           /* what LIKWID wrote to its control register */
        bool mapped;            /* a CAS_COUNT event: count holds its package counter */
        FreerunState count;
} CasState;

/* Six channels of four counters on each of a few sockets. */
#define CAS_MAX 96U
#define COUNTER_MASK ((UINT64_C(1) << 48) - 1)

typedef struct RefusedReg {
        bool pci, write;
        uint32_t unit;          /* 0 for MSRs */
        uint32_t reg;
        LikwidError error;
} RefusedReg;

/* One CPU's core PMU on a node that counts via perf: what LIKWID programmed, the events
 * that count it, and the registers as LIKWID reads them. */
typedef struct PerfCpu {
        LikwidCoreShadow shadow;
        bool dirty;                     /* programmed anew since the events were opened */
        LikwidPerfPlan plan;
        pmugate_perf_handle *handle;
        LikwidPerfCounts counts;
} PerfCpu;

/* Lines about LIKWID's programming refused on a perf node. */
#define PERF_LINES_MAX 20U

struct LikwidForwarder {
        pmugate *conn;
        pmugate_info *info;
        pmugate_batch *batch;
        PendingOp *ops;
        size_t n_ops, max_ops;
        uint8_t *lease_state;   /* LeaseState per CPU number */
        uint8_t *lease_error;   /* LikwidError of a refused lease */
        size_t n_lease_slots;
        uint32_t *lease_buf;
        RefusedReg *refused;
        size_t n_refused;
        CounterBase bases[COUNTER_BASES_MAX];
        size_t n_bases;
        FreerunState freerun[FREERUN_MAX];
        size_t n_freerun;
        CasState cas[CAS_MAX];
        size_t n_cas;
        uint64_t frozen_packages;       /* bit p: LIKWID froze package p's uncore */
        bool via_perf;                  /* the node counts via perf: the core PMU is translated */
        bool intel;
        LikwidPerfModel perf_model;
        PerfCpu *perf_cpus;             /* per CPU number, with via_perf */
        unsigned perf_lines;
        FILE *log;
        const char *prog;
        bool verbose;
        bool rights_told;
        bool mmio_told;
        unsigned failure_lines;
        char void_reason[PMUGATE_LIKWID_VOID_REASON_MAX];
        LikwidStats stats;
};

void forward_counts_void(LikwidForwarder *f, const char *why);
void forward_connection_lost(LikwidForwarder *f);
/* Runs the collected ops in order, answering each. */
void forward_run_pending(LikwidForwarder *f);
/* Leases what a write needs, once per CPU for the whole run. */
LikwidError forward_ensure_leases(LikwidForwarder *f, const pmugate_cpu *target, const char *scope);
const pmugate_cpu *forward_first_cpu_of_package(const pmugate_info *info, int32_t package);
bool forward_package_frozen(const LikwidForwarder *f, int32_t package);
PendingOp *forward_queue_op(LikwidForwarder *f, bool pci, bool write, uint32_t target, uint32_t reg, uint64_t value);
void forward_freerun_advance(FreerunState *state, const pmugate_counter *c, uint64_t raw);

/* Why an uncore box other than the memory channels is refused on a node that counts via perf. */
#define UNCORE_VIA_PERF "LIKWID programs uncore boxes through PCI config space, which pmugated does not " \
        "write on a node that counts via perf, and their events are not translated to the kernel's " \
        "uncore PMUs. Memory bandwidth: 'pmugate stat -g MEM'"

/* likwid-forward-perf.c: LIKWID's access to a core PMU register, and to a Skylake-SP/Cascade
 * Lake memory channel, on a node that counts via perf; refusals there; the memory channels'
 * freeze; whether a channel's kernel counters are served. */
void forward_perf_access(LikwidForwarder *f, LikwidRecord *rec, const pmugate_cpu *cpu, LikwidPerfReg reg,
                         bool write, uint64_t value);
void forward_perf_refuse(LikwidForwarder *f, LikwidRecord *rec, const char *what, const char *why);
void forward_cas_access(LikwidForwarder *f, LikwidRecord *rec, bool write, uint64_t value);
void forward_cas_gate(LikwidForwarder *f, uint32_t socket, int32_t device, bool freeze);
bool forward_cas_channel_served(const pmugate_info *info, uint32_t device, uint32_t socket);

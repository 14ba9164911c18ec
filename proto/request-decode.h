/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format, the reading half: decoding of requests (the daemon's untrusted input, and the
 * fuzz target) and the msgpack readers both sides use on a peer's bytes. No I/O here.
 * docs/PROTOCOL.md is the reference for every key.
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf-spec.h"
#include "pmugate-limits.h"
#include "timing-attr.h"
#include "wire.h"

typedef enum RegOpKind {
        REG_OP_MSR_READ,
        REG_OP_MSR_WRITE,
        REG_OP_PCI_READ,
        REG_OP_PCI_WRITE,
        REG_OP_COUNTER_READ,    /* a package counter the daemon serves (hello's "counters") */
        _REG_OP_MAX,
} RegOpKind;

/* One register access after the compact forms are expanded. */
typedef struct RegOp {
        uint32_t target; /* CPU number for MSR ops, unit index for PCI ops, counter index */
        uint32_t reg;    /* MSR address, or PCI config offset */
        uint64_t value;  /* value to write (writes only) */
        uint64_t mask;   /* bits the client means to change; the allowlist mask still applies */
        uint8_t kind;    /* RegOpKind */
} RegOp;

static inline bool reg_op_is_write(const RegOp *op) {
        return op->kind == REG_OP_MSR_WRITE || op->kind == REG_OP_PCI_WRITE;
}

static inline bool reg_op_is_pci(const RegOp *op) {
        return op->kind == REG_OP_PCI_READ || op->kind == REG_OP_PCI_WRITE;
}

static inline bool reg_op_is_counter(const RegOp *op) {
        return op->kind == REG_OP_COUNTER_READ;
}

/* Whether target is a CPU number. */
static inline bool reg_op_names_cpu(const RegOp *op) {
        return !reg_op_is_pci(op) && !reg_op_is_counter(op);
}

/* A decoded request. The op and CPU arrays are owned by the RequestBuffer it was decoded
 * into, so decoding allocates nothing per request once the buffer exists. */
typedef struct Request {
        uint64_t id;
        RequestType type;

        RegOp *ops;
        size_t n_ops;

        uint32_t *cpus;
        size_t n_cpus;
        bool has_cpus;

        char job[PMUGATE_STRING_MAX + 1];
        bool has_job;

        uint32_t uid;
        bool has_uid;
        bool lbr;                       /* grant: the job's user gets the class lbr */

        /* perf_open, perf_read, perf_close (docs/PROTOCOL.md): the defaults filled in, and
         * each key checked against the scope it belongs to. */
        PerfScope perf_scope;
        uint32_t pid;                   /* process scope: 0 is the caller */
        bool has_pid;
        bool follow;                    /* default true */
        bool on_exec;
        bool handoff;
        bool thread;                    /* process scope: pid is one thread of the caller's, counted alone */
        uint32_t handle;
        bool has_handle;
        const PerfEventSpec *perf_events;       /* every group's events, group after group */
        size_t n_perf_events;
        const uint8_t *perf_group_sizes;        /* events in each group; the first leads it */
        size_t n_perf_groups;

        /* timing_open (docs/PROTOCOL.md): pid (required, the caller's own process or one of
         * its uid), on_exec, cpus (required, 1..TIMING_CPUS_PER_OPEN) and these */
        TimingMode timing_mode;
        uint64_t period;                /* 0: the daemon's default for the mode */
        bool has_period;
        /* threads of pid to sample (and what each starts): "tids", or "tid" as one of them;
         * n_tids 0 is the process itself. Each thread's events come on every CPU, tid-major. */
        const uint32_t *tids;
        size_t n_tids;
        bool has_tids;
} Request;

/* Storage reused across requests. The op array grows to the largest batch decoded, up to
 * PMUGATE_OPS_PER_BATCH_MAX, and request_buffer_shrink() gives back what exceeds
 * PMUGATE_OPS_KEPT. */
typedef struct RequestBuffer {
        RegOp *ops;
        size_t ops_capacity;
        uint32_t cpus[PMUGATE_LIST_MAX];
        uint32_t tids[TIMING_TIDS_PER_OPEN];
        PerfEventSpec perf_events[PERF_EVENTS_PER_OPEN_MAX];
        uint8_t perf_group_sizes[PERF_GROUPS_PER_OPEN_MAX];
        msgpack_zone zone;
        bool zone_initialized;
} RequestBuffer;

RequestBuffer *request_buffer_new(void);
RequestBuffer *request_buffer_free(RequestBuffer *b);
/* Returns the op array to PMUGATE_OPS_KEPT entries when a large batch grew it. */
void request_buffer_shrink(RequestBuffer *b);
/* Exchanges the op array (which a request decoded into it points to) with *ops of *capacity
 * entries, which the caller owns: a NULL *ops makes a new one of PMUGATE_OPS_KEPT entries.
 * Returns 0, or -ENOMEM with nothing exchanged. */
int request_buffer_swap_ops(RequestBuffer *b, RegOp **ops, size_t *capacity);

/* Why a request was refused at decode time. */
typedef struct DecodeError {
        int code;          /* ProtoError */
        bool has_id;       /* the request's id could be read, so the reply can echo it */
        uint64_t id;
        char reason[160];
} DecodeError;

/* Checks that data is exactly one msgpack object, nested at most max_depth deep, whose every
 * array and map count fits in the bytes that remain. msgpack-c sizes containers from their
 * headers before reading elements, so this runs first and bounds what decoding can allocate.
 * Returns 0 or -EBADMSG. */
int msgpack_check(const void *data, size_t size, unsigned max_depth);

/* Decodes one request. Returns 0 on success, a positive ProtoError with ret_error filled in
 * when the request is refused, or negative errno (-ENOMEM) on failure. */
int request_decode(const void *data, size_t size, RequestBuffer *buf, Request *ret,
                   DecodeError *ret_error);

/* Lookup of a key in a decoded msgpack map; NULL when absent or when obj is not a map. */
const msgpack_object *msgpack_map_get(const msgpack_object *obj, const char *key);
bool msgpack_object_is_string(const msgpack_object *o, const char *s);

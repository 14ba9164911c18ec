/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire's vocabulary, spelled once for both sides: the request types and their names, the
 * register op kinds with their names and arities, and the positions of every tuple a reply
 * carries. The daemon's decoder and packers and the client's request builders and reply
 * readers all take them from here, so a kind or a position cannot drift between the two.
 * docs/PROTOCOL.md describes each of them.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

typedef enum RequestType {
        REQUEST_HELLO,
        REQUEST_BATCH,
        REQUEST_STATUS,
        REQUEST_LEASE,
        REQUEST_RELEASE,
        REQUEST_GRANT,
        REQUEST_REVOKE,
        REQUEST_RESET,
        REQUEST_RELOAD,
        REQUEST_JOBMAP,
        REQUEST_PERF_OPEN,
        REQUEST_PERF_READ,
        REQUEST_PERF_CLOSE,
        REQUEST_TIMING_OPEN,
        _REQUEST_TYPE_MAX,
        _REQUEST_TYPE_INVALID = -EINVAL,
} RequestType;

/* The request's "op" string; NULL for a value outside the enum. */
const char *request_type_to_string(RequestType t);
/* The type whose name is exactly the n bytes at s, or -EINVAL. */
RequestType request_type_from_string(const char *s, size_t n);

/* The kinds of element in a batch's "ops" array (and, for some, in an "each" op's steps). */
typedef enum WireOp {
        WIRE_OP_READ,           /* ["r", cpu, msr]; as a step ["r", msr] */
        WIRE_OP_WRITE,          /* ["w", cpu, msr, value]; as a step ["w", msr, value] */
        WIRE_OP_WRITE_MASKED,   /* ["wm", cpu, msr, value, mask]; as a step ["wm", msr, value, mask] */
        WIRE_OP_PCI_READ,       /* ["pr", unit, offset] */
        WIRE_OP_PCI_WRITE,      /* ["pw", unit, offset, value] */
        WIRE_OP_SWEEP_READ,     /* ["R", [cpus], [msrs]] */
        WIRE_OP_SWEEP_WRITE,    /* ["W", [cpus], [msrs], [values]] */
        WIRE_OP_COUNTER_READ,   /* ["cr", counter]: an index into hello's "counters" */
        WIRE_OP_EACH,           /* ["each", [cpus], [step, ...]] */
        _WIRE_OP_MAX,
        _WIRE_OP_INVALID = -EINVAL,
} WireOp;

typedef struct WireOpInfo {
        const char *name;
        uint8_t name_len;
        uint8_t args;           /* elements after the kind in a batch's "ops" */
        uint8_t step_args;      /* elements after the kind as a step of "each"; 0: never a step */
} WireOpInfo;

extern const WireOpInfo wire_ops[_WIRE_OP_MAX];

/* The kind whose name is exactly the n bytes at s (length and every byte), or -EINVAL. */
WireOp wire_op_from_string(const char *s, size_t n);
/* The kind's wire name; NULL for a value outside the enum. */
const char *wire_op_to_string(WireOp op);

/*
 * Reply tuples: the positions of the fields of each array a reply lists, written by the
 * daemon's packers (pack_tuple() places each field at its position) and read by the client
 * by the same names. _X_FIELDS is a tuple's length as this daemon packs it; the hello and
 * status readers accept longer tuples, whose extra fields a later daemon may add at the end.
 */

/* hello "cpus", one per present CPU. Topology is -1 for an offline CPU; the CCX (the L3 the
 * CPU uses) -1 when unknown. Daemons before the CCX was known sent the fields before it. */
typedef enum HelloCpuField {
        HELLO_CPU_CPU,
        HELLO_CPU_PACKAGE,
        HELLO_CPU_DIE,
        HELLO_CPU_CORE,
        HELLO_CPU_THREAD,
        HELLO_CPU_ONLINE,
        HELLO_CPU_CCX,
        _HELLO_CPU_FIELDS,
} HelloCpuField;

/* hello "units": the PCI uncore units, by index (the target of "pr" and "pw"). */
typedef enum HelloUnitField {
        HELLO_UNIT_INDEX,
        HELLO_UNIT_BDF,
        HELLO_UNIT_VENDOR,
        HELLO_UNIT_DEVICE,
        HELLO_UNIT_PACKAGE,
        _HELLO_UNIT_FIELDS,
} HelloUnitField;

/* hello "counters": the package counters, by index (the target of "cr"). */
typedef enum HelloCounterField {
        HELLO_COUNTER_INDEX,
        HELLO_COUNTER_NAME,
        HELLO_COUNTER_PACKAGE,
        HELLO_COUNTER_WIDTH,
        HELLO_COUNTER_SCALE,
        HELLO_COUNTER_UNIT,
        HELLO_COUNTER_CLASS,
        HELLO_COUNTER_ERROR,
        _HELLO_COUNTER_FIELDS,
} HelloCounterField;

/* hello "registers": the allowlist, one range per entry; HELLO_REGISTER_KIND is one of the
 * two names below. */
typedef enum HelloRegisterField {
        HELLO_REGISTER_KIND,
        HELLO_REGISTER_FIRST,
        HELLO_REGISTER_LAST,
        HELLO_REGISTER_WIDTH,
        HELLO_REGISTER_WRITE_MASK,
        HELLO_REGISTER_SCOPE,
        HELLO_REGISTER_CLASS,
        HELLO_REGISTER_NAME,
        HELLO_REGISTER_PCI_VENDOR,
        HELLO_REGISTER_PCI_DEVICE,
        _HELLO_REGISTER_FIELDS,
} HelloRegisterField;

#define WIRE_REGISTER_KIND_MSR "msr"
#define WIRE_REGISTER_KIND_PCI "pci"

/* status "grants": the cpus field is "" when the job's cgroup decides. */
typedef enum StatusGrantField {
        STATUS_GRANT_JOB,
        STATUS_GRANT_UID,
        STATUS_GRANT_CPUS,
        _STATUS_GRANT_FIELDS,
} StatusGrantField;

/* status "leases": STATUS_LEASE_REGISTERS counts the registers journaled for the lease. */
typedef enum StatusLeaseField {
        STATUS_LEASE_CPU,
        STATUS_LEASE_UID,
        STATUS_LEASE_PID,
        STATUS_LEASE_ROLE,
        STATUS_LEASE_JOB,
        STATUS_LEASE_REGISTERS,
        _STATUS_LEASE_FIELDS,
} StatusLeaseField;

/* status "clients": the connected sessions. */
typedef enum StatusClientField {
        STATUS_CLIENT_UID,
        STATUS_CLIENT_PID,
        STATUS_CLIENT_ROLE,
        STATUS_CLIENT_REQUESTS,
        _STATUS_CLIENT_FIELDS,
} StatusClientField;

/* jobmap "cpus": a CPU and an index into the reply's "jobs"; a CPU two jobs share has two. */
typedef enum JobmapCpuField {
        JOBMAP_CPU_CPU,
        JOBMAP_CPU_JOB,
        _JOBMAP_CPU_FIELDS,
} JobmapCpuField;

/* jobmap "leases": who programs a CPU's counters now, by role, without the uid. */
typedef enum JobmapLeaseField {
        JOBMAP_LEASE_CPU,
        JOBMAP_LEASE_ROLE,
        _JOBMAP_LEASE_FIELDS,
} JobmapLeaseField;

/* perf_read "rows": one per target and group, target-major. PERF_ROW_STATUS is 0 or the
 * negative errno of the read; the times are the kernel's time_enabled and time_running (ns),
 * PERF_ROW_VALUES the group's counts in the order its events were given. */
typedef enum PerfRowField {
        PERF_ROW_TARGET,
        PERF_ROW_GROUP,
        PERF_ROW_STATUS,
        PERF_ROW_ENABLED,
        PERF_ROW_RUNNING,
        PERF_ROW_VALUES,
        _PERF_ROW_FIELDS,
} PerfRowField;

/* hello "pmus": the PMUs perf_open may name. HELLO_PMU_KIND is "core", "uncore" or
 * "software"; package and CPU are -1 but for uncore PMUs; HELLO_PMU_TOPDOWN 0 none, 1 level
 * 1, 2 level 2 metric events. */
typedef enum HelloPmuField {
        HELLO_PMU_NAME,
        HELLO_PMU_KIND,
        HELLO_PMU_TYPE,
        HELLO_PMU_PACKAGE,
        HELLO_PMU_CPU,
        HELLO_PMU_TOPDOWN,
        _HELLO_PMU_FIELDS,
} HelloPmuField;

/* perf_open "scope". */
#define WIRE_PERF_SCOPE_CPU "cpu"
#define WIRE_PERF_SCOPE_JOB "job"
#define WIRE_PERF_SCOPE_PROCESS "process"

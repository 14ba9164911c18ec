/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Forwarding LIKWID's records to pmugated
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "likwid/likwid-forward.h"
#include "likwid/likwid-map.h"
#include "likwid/likwid-perf.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "pmugate/package.h"

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

/* LIKWID shows whatever it read, zeros included, and exits 0: the first reason its counts
 * cannot be trusted is kept for whoever started it ('pmugate likwid'). */
static void counts_void(LikwidForwarder *f, const char *why) {
        if (!f->void_reason[0])
                (void) snprintf(f->void_reason, sizeof(f->void_reason), "%s", why);
}

const char *likwid_forwarder_void_reason(const LikwidForwarder *f) {
        return f->void_reason[0] ? f->void_reason : NULL;
}

static void connection_lost(LikwidForwarder *f) {
        if (!f->conn)
                return;
        counts_void(f, "the connection to pmugated was lost");
        fprintf(f->log, "%s: lost the connection to pmugated; it put back what LIKWID programmed, and "
                "LIKWID's results are void from here on\n", f->prog);
        f->conn = pmugate_disconnect(f->conn);
}

static void perf_close_all(LikwidForwarder *f) {
        for (size_t i = 0; f->perf_cpus && i < f->n_lease_slots; i++) {
                (void) pmugate_perf_close(f->conn, f->perf_cpus[i].handle);
                f->perf_cpus[i].handle = NULL;
        }
}

int likwid_forwarder_new(pmugate *c, FILE *log, const char *prog, bool verbose, LikwidForwarder **ret) {
        LikwidForwarder *f;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f) {
                pmugate_disconnect(c);
                return -ENOMEM;
        }
        f->log = log;
        f->prog = prog;
        f->verbose = verbose;
        f->conn = c;
        if (c) {
                r = pmugate_hello(c, &f->info);
                if (r < 0) {
                        const pmugate_error *e = pmugate_last_error(c);

                        fprintf(log, "%s: pmugated did not answer hello: %s\n", prog,
                                e->code > 0 ? e->reason : pmugate_strerror(r));
                        f->conn = pmugate_disconnect(c);
                }
        }
        if (f->info) {
                uint32_t max_cpu = 0;

                for (size_t i = 0; i < f->info->n_cpus; i++)
                        max_cpu = MAX(max_cpu, f->info->cpus[i].cpu);
                f->n_lease_slots = f->info->n_cpus > 0 ? (size_t) max_cpu + 1 : 0;
                f->max_ops = MIN(f->info->max_ops_per_batch ?: 1U, FORWARD_OPS_MAX);
                f->via_perf = pmugate_info_counts_via_perf(f->info);
                f->intel = strcmp(f->info->vendor, "AuthenticAMD") != 0;
                f->perf_model = likwid_perf_model(f->info);
        }
        f->ops = calloc(MAX(f->max_ops, 1U), sizeof(*f->ops));
        f->lease_state = calloc(MAX(f->n_lease_slots, 1U), 1);
        f->lease_error = calloc(MAX(f->n_lease_slots, 1U), 1);
        f->lease_buf = calloc(f->info ? MAX(f->info->n_cpus, 1U) : 1U, sizeof(uint32_t));
        f->refused = calloc(REFUSED_MAX, sizeof(*f->refused));
        f->perf_cpus = f->via_perf ? calloc(MAX(f->n_lease_slots, 1U), sizeof(*f->perf_cpus)) : NULL;
        r = pmugate_batch_new(&f->batch);
        if (r < 0 || !f->ops || !f->lease_state || !f->lease_error || !f->lease_buf || !f->refused ||
            (f->via_perf && !f->perf_cpus)) {
                likwid_forwarder_free(f);
                return r < 0 ? r : -ENOMEM;
        }
        *ret = f;
        return 0;
}

LikwidForwarder *likwid_forwarder_free(LikwidForwarder *f) {
        if (!f)
                return NULL;
        perf_close_all(f);
        free(f->perf_cpus);
        pmugate_disconnect(f->conn);
        pmugate_info_free(f->info);
        pmugate_batch_free(f->batch);
        free(f->ops);
        free(f->lease_state);
        free(f->lease_error);
        free(f->lease_buf);
        free(f->refused);
        free(f);
        return NULL;
}

const LikwidStats *likwid_forwarder_stats(const LikwidForwarder *f) {
        return &f->stats;
}

bool likwid_forwarder_has_pending(const LikwidForwarder *f) {
        return f->n_ops > 0;
}

static void describe(const PendingOp *op, char *buf, size_t size) {
        if (op->counter) {
                (void) snprintf(buf, size, "read of package counter %" PRIu32, op->target);
                return;
        }
        (void) snprintf(buf, size, "%s %s 0x%" PRIx32 " on %s %" PRIu32, op->write ? "write to" : "read of",
                        op->pci ? "offset" : "MSR", op->reg, op->pci ? "unit" : "CPU", op->target);
}

static const RefusedReg *find_refused(const LikwidForwarder *f, bool pci, uint32_t unit, uint32_t reg,
                                      bool write) {
        for (size_t i = 0; i < f->n_refused; i++) {
                const RefusedReg *x = &f->refused[i];

                if (x->pci == pci && x->unit == unit && x->reg == reg && x->write == write)
                        return x;
        }
        return NULL;
}

static void answer(LikwidForwarder *f, PendingOp *op, LikwidError error, uint64_t value, const char *why) {
        char what[96];

        if (op->answer) {
                op->answer->errorcode = error;
                op->answer->data = !op->write && error == LIKWID_ERR_NOERROR ? value : 0;
                if (error != LIKWID_ERR_NOERROR)
                        f->stats.refused++;
                op->answer = NULL;
                return;
        }
        if (error == LIKWID_ERR_NOERROR)
                return;
        /* A collected write LIKWID believes done: say so, LIKWID cannot. */
        f->stats.deferred_failures++;
        counts_void(f, "a counter setup LIKWID was told had succeeded failed");
        if (f->failure_lines++ >= FAILURE_LINES_MAX)
                return;
        describe(op, what, sizeof(what));
        fprintf(f->log, "%s: %s failed after LIKWID was told it succeeded: %s\n", f->prog, what, why);
}

static void refuse(LikwidForwarder *f, PendingOp *op, const pmugate_error *e) {
        LikwidError error = likwid_error_from_refusal(e->code);
        char what[96];

        /* A refusal about the caller's rights (job scope, role) explains LIKWID's own error:
         * say it once, LIKWID only prints "not allowed" in its debug output. */
        if (!likwid_refusal_is_permanent(e->code) && !f->rights_told) {
                f->rights_told = true;
                describe(op, what, sizeof(what));
                fprintf(f->log, "%s: pmugated refused the %s: %s\n", f->prog, what, e->reason);
        }

        if (likwid_refusal_is_permanent(e->code) && !op->counter && f->n_refused < REFUSED_MAX &&
            !find_refused(f, op->pci, op->pci ? op->target : 0, op->reg, op->write)) {
                f->refused[f->n_refused++] = (RefusedReg) {
                        .pci = op->pci, .write = op->write, .unit = op->pci ? op->target : 0, .reg = op->reg,
                        .error = error,
                };
                if (f->verbose) {
                        describe(op, what, sizeof(what));
                        fprintf(f->log, "%s: pmugated refused the %s: %s\n", f->prog, what, e->reason);
                }
        }
        answer(f, op, error, 0, e->reason);
}

static int add_op(pmugate_batch *b, const PendingOp *op) {
        if (op->counter)
                return pmugate_batch_read_counter(b, op->target);
        if (op->pci)
                return op->write ? pmugate_batch_write_pci(b, op->target, op->reg, op->value) :
                                   pmugate_batch_read_pci(b, op->target, op->reg);
        return op->write ? pmugate_batch_write_msr(b, op->target, op->reg, op->value) :
                           pmugate_batch_read_msr(b, op->target, op->reg);
}

/* Runs the collected ops in order. Nothing of a refused batch ran, so the refused op is
 * answered with the daemon's refusal and the batch runs again without it. */
static void run_pending(LikwidForwarder *f) {
        while (f->n_ops > 0) {
                const pmugate_error *e;
                int64_t k;
                int r = 0;

                if (!f->conn) {
                        for (size_t i = 0; i < f->n_ops; i++)
                                answer(f, &f->ops[i], LIKWID_ERR_LOCKED, 0, "no connection to pmugated");
                        f->n_ops = 0;
                        return;
                }
                pmugate_batch_clear(f->batch);
                for (size_t i = 0; i < f->n_ops && r >= 0; i++)
                        r = add_op(f->batch, &f->ops[i]);
                if (r >= 0) {
                        f->stats.batches++;
                        r = pmugate_batch_run(f->conn, f->batch);
                }
                if (r >= 0) {
                        for (size_t i = 0; i < f->n_ops; i++) {
                                uint64_t value = 0;
                                int st = pmugate_batch_result(f->batch, i, &value);

                                answer(f, &f->ops[i], likwid_error_from_errno(st), value,
                                       pmugate_strerror(st));
                        }
                        f->n_ops = 0;
                        return;
                }
                e = pmugate_last_error(f->conn);
                if (e->code <= 0) {
                        fprintf(f->log, "%s: batch of %zu operations failed: %s\n", f->prog, f->n_ops,
                                pmugate_strerror(r));
                        connection_lost(f);
                        continue;
                }
                k = e->op_index;
                if (k < 0 || (uint64_t) k >= f->n_ops) {
                        /* Refused as a whole (e.g. the caller's rights changed). */
                        for (size_t i = 0; i < f->n_ops; i++)
                                refuse(f, &f->ops[i], e);
                        f->n_ops = 0;
                        return;
                }
                refuse(f, &f->ops[k], e);
                memmove(&f->ops[k], &f->ops[k + 1], (f->n_ops - (size_t) k - 1) * sizeof(*f->ops));
                f->n_ops--;
        }
}

void likwid_forwarder_flush(LikwidForwarder *f) {
        run_pending(f);
}

/* Leases what a write needs, once per CPU for the whole run. */
static LikwidError ensure_leases(LikwidForwarder *f, const pmugate_cpu *target, const char *scope) {
        size_t n_missing = 0;
        int n, r;

        n = likwid_lease_cpus(f->info, target, scope, f->lease_buf, f->info->n_cpus);
        if (n < 0)
                return LIKWID_ERR_RWFAIL;
        for (int i = 0; i < n; i++) {
                uint32_t cpu = f->lease_buf[i];

                if (cpu >= f->n_lease_slots)
                        return LIKWID_ERR_OPENFAIL;
                if (f->lease_state[cpu] == LEASE_REFUSED)
                        return (LikwidError) f->lease_error[cpu];
                if (f->lease_state[cpu] == LEASE_NONE)
                        f->lease_buf[n_missing++] = cpu;
        }
        if (n_missing == 0)
                return LIKWID_ERR_NOERROR;
        r = pmugate_lease(f->conn, f->lease_buf, n_missing);
        if (r >= 0) {
                for (size_t i = 0; i < n_missing; i++)
                        f->lease_state[f->lease_buf[i]] = LEASE_HELD;
                return LIKWID_ERR_NOERROR;
        }
        if (pmugate_last_error(f->conn)->code <= 0) {
                fprintf(f->log, "%s: lease failed: %s\n", f->prog, pmugate_strerror(r));
                connection_lost(f);
                return LIKWID_ERR_LOCKED;
        }
        fprintf(f->log, "%s: pmugated refused a lease on CPU %" PRIu32 "%s: %s\n", f->prog,
                f->lease_buf[0], n_missing > 1 ? " and the rest of its core or package" : "",
                pmugate_last_error(f->conn)->reason);
        /* The daemon's reason is cut to fit the line 'pmugate likwid' shows. */
        if (!f->void_reason[0])
                (void) snprintf(f->void_reason, sizeof(f->void_reason), "pmugated refused the lease on CPU %"
                                PRIu32 ": %.300s", f->lease_buf[0], pmugate_last_error(f->conn)->reason);
        r = likwid_error_from_refusal(pmugate_last_error(f->conn)->code);
        /* One CPU is certainly the one refused; with several, the next write may need fewer. */
        if (n_missing == 1) {
                f->lease_state[f->lease_buf[0]] = LEASE_REFUSED;
                f->lease_error[f->lease_buf[0]] = (uint8_t) r;
        }
        return (LikwidError) r;
}

static const pmugate_cpu *first_cpu_of_package(const pmugate_info *info, int32_t package) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online && info->cpus[i].package == package)
                        return &info->cpus[i];
        return NULL;
}

static int32_t unit_package(const pmugate_info *info, uint32_t unit) {
        for (size_t i = 0; i < info->n_units; i++)
                if (info->units[i].index == unit)
                        return info->units[i].package;
        return -1;
}

static bool package_frozen(const LikwidForwarder *f, int32_t package) {
        return package >= 0 && package < 64 && (f->frozen_packages & (UINT64_C(1) << package));
}

static PendingOp *queue_op(LikwidForwarder *f, bool pci, bool write, uint32_t target, uint32_t reg,
                           uint64_t value) {
        if (f->n_ops >= f->max_ops)
                run_pending(f);
        f->ops[f->n_ops] = (PendingOp) {
                .pci = pci, .write = write, .target = target, .reg = reg, .value = value,
        };
        return &f->ops[f->n_ops++];
}

static FreerunState *freerun_state(LikwidForwarder *f, uint32_t counter) {
        for (size_t i = 0; i < f->n_freerun; i++)
                if (f->freerun[i].counter == counter)
                        return &f->freerun[i];
        return NULL;
}

static FreerunState *freerun_state_new(LikwidForwarder *f, uint32_t counter, uint64_t raw) {
        FreerunState *state;

        if (f->n_freerun >= FREERUN_MAX)
                return NULL;
        state = &f->freerun[f->n_freerun++];
        *state = (FreerunState) { .counter = counter, .last_raw = raw };
        return state;
}

static void freerun_advance(FreerunState *state, const pmugate_counter *c, uint64_t raw) {
        if (!state->frozen)
                state->bytes += (double) pmugate_counter_delta(state->last_raw, raw, c->width) *
                                pmugate_counter_bytes(c);
        state->last_raw = raw;
}

/* LIKWID's U-box freeze bounds what every uncore counter counts to the interval it times. The
 * free-running counters ignore it in the hardware, so LIKWID would count its own start and stop
 * records too: the forwarder takes the package's free-running counters at the freeze and the
 * unfreeze, and they count only in between. */
static void freerun_gate(LikwidForwarder *f, int32_t package, bool freeze) {
        enum { N_FREERUN = 2 * (LIKWID_DEV_MMIO_FREERUN_LAST - LIKWID_DEV_MMIO_FREERUN_FIRST + 1) };
        LikwidRecord taken[N_FREERUN] = {};
        uint32_t counters[N_FREERUN];
        size_t n = 0;

        for (uint32_t dev = LIKWID_DEV_MMIO_FREERUN_FIRST; dev <= LIKWID_DEV_MMIO_FREERUN_LAST; dev++)
                for (uint32_t reg = LIKWID_FREERUN_READ; reg <= LIKWID_FREERUN_WRITE; reg += 8) {
                        PendingOp *op;

                        if (likwid_map_freerun(f->info, dev, (uint32_t) package, reg, &counters[n]) < 0)
                                continue;
                        op = queue_op(f, false, false, counters[n], 0, 0);
                        op->counter = true;
                        op->answer = &taken[n++];
                }
        if (n == 0)
                return;
        run_pending(f);
        for (size_t i = 0; i < n; i++) {
                const pmugate_counter *c = likwid_find_counter(f->info, counters[i]);
                FreerunState *state = freerun_state(f, counters[i]);

                if (taken[i].errorcode != LIKWID_ERR_NOERROR || !c)
                        continue;
                if (!state)
                        state = freerun_state_new(f, counters[i], taken[i].data);
                if (!state)
                        continue;
                freerun_advance(state, c, taken[i].data);
                state->frozen = freeze;
        }
}

/* The U-box's freeze-all and unfreeze-all, done on the freeze bit of each memory controller
 * box of the package that pmugate serves (none on Ice Lake-SP); the write of 0 LIKWID ends
 * with changes nothing. Only for a caller who may write the whole package. */
static void cas_gate(LikwidForwarder *f, uint32_t socket, int32_t device, bool freeze);

static void uncore_freeze(LikwidForwarder *f, LikwidRecord *rec, const pmugate_cpu *cpu, uint64_t value) {
        PendingOp *last = NULL;

        rec->data = 0;
        rec->errorcode = ensure_leases(f, cpu, "package");
        if (rec->errorcode != LIKWID_ERR_NOERROR) {
                f->stats.refused++;
                return;
        }
        if (value == 0 || cpu->package < 0 || cpu->package >= 64)
                return;
        freerun_gate(f, cpu->package, value == LIKWID_UBOX_FREEZE_ALL);
        if (f->via_perf)
                cas_gate(f, (uint32_t) cpu->package, -1, value == LIKWID_UBOX_FREEZE_ALL);
        /* Via perf no box is LIKWID's to freeze: it programs none there (refused above). */
        for (size_t i = 0; !f->via_perf && i < f->info->n_units; i++) {
                const pmugate_unit *u = &f->info->units[i];
                const pmugate_register *e = likwid_find_pci(f->info, u->index, LIKWID_IMC_BOX_CTL);

                if (u->package != cpu->package || !e || !(e->write_mask & LIKWID_IMC_BOX_FREEZE))
                        continue;
                last = queue_op(f, true, true, u->index, LIKWID_IMC_BOX_CTL,
                                value == LIKWID_UBOX_FREEZE_ALL ? LIKWID_IMC_BOX_FREEZE : 0);
        }
        if (value == LIKWID_UBOX_FREEZE_ALL)
                f->frozen_packages |= UINT64_C(1) << cpu->package;
        else
                f->frozen_packages &= ~(UINT64_C(1) << cpu->package);
        if (!last)
                return;
        last->answer = rec;
        run_pending(f);
}

static CounterBase *find_base(LikwidForwarder *f, uint32_t unit, uint32_t reg) {
        for (size_t i = 0; i < f->n_bases; i++)
                if (f->bases[i].unit == unit && f->bases[i].reg == reg)
                        return &f->bases[i];
        return NULL;
}

static uint64_t counter_value(LikwidForwarder *f, uint32_t unit, uint32_t reg, uint64_t raw) {
        const CounterBase *b = find_base(f, unit, reg);

        return b ? (raw - b->base) & COUNTER_MASK : raw;
}

/* LIKWID zeroes a memory controller counter the allowlist keeps read-only (clients reset them
 * through the box): remember where it stands and count from there. */
static void zero_counter(LikwidForwarder *f, LikwidRecord *rec, uint32_t unit) {
        CounterBase *b = find_base(f, unit, rec->reg);
        PendingOp *op;

        if (!b && f->n_bases >= COUNTER_BASES_MAX) {
                rec->errorcode = LIKWID_ERR_RWFAIL;
                return;
        }
        op = queue_op(f, true, false, unit, rec->reg, 0);
        op->answer = rec;
        run_pending(f);
        if (rec->errorcode != LIKWID_ERR_NOERROR)
                return;
        if (!b) {
                b = &f->bases[f->n_bases++];
                *b = (CounterBase) { .unit = unit, .reg = rec->reg };
        }
        b->base = rec->data & COUNTER_MASK;
        rec->data = 0;
}

/* LIKWID's Ice Lake-SP free-running DDR counters, answered from the daemon's package counters:
 * LIKWID multiplies its counts by 64 bytes, so it gets the bytes counted since its first read
 * (while its uncore was not frozen) in 64-byte lines, whatever the kernel's scale and width.
 * Its zeroing write (value 0) starts that count again without touching anything; the counters
 * cannot be written, so any other value is refused. */
static void access_freerun(LikwidForwarder *f, LikwidRecord *rec, bool write, uint64_t value) {
        const pmugate_counter *c;
        FreerunState *state;
        uint32_t counter;
        uint64_t raw;
        PendingOp *op;
        int r;

        rec->data = 0;
        r = likwid_map_freerun(f->info, rec->device, rec->cpu, rec->reg, &counter);
        if (r < 0) {
                rec->errorcode = r == -EINVAL ? LIKWID_ERR_RWFAIL : LIKWID_ERR_NODEV;
                return;
        }
        if (write && value != 0) {
                rec->errorcode = LIKWID_ERR_RESTREG;
                f->stats.refused++;
                return;
        }
        c = likwid_find_counter(f->info, counter);
        state = freerun_state(f, counter);
        if (!c || (!state && f->n_freerun >= FREERUN_MAX)) {
                rec->errorcode = LIKWID_ERR_RWFAIL;
                return;
        }
        op = queue_op(f, false, false, counter, 0, 0);
        op->counter = true;
        op->answer = rec;
        run_pending(f);
        if (rec->errorcode != LIKWID_ERR_NOERROR)
                return;
        raw = rec->data;
        if (!state)
                state = freerun_state_new(f, counter, raw);
        freerun_advance(state, c, raw);
        if (write) {
                state->bytes = 0;
                f->stats.switch_offs++;
        }
        rec->data = write ? 0 : (uint64_t) (state->bytes / LIKWID_FREERUN_LINE + 0.5);
}

#define MMIO_CHANNELS_REFUSED "LIKWID's Ice Lake-SP memory channel counters (MMIO; groups MEM, MEM_DP, " \
        "MEM_SP) are not served: pmugated maps no MMIO and has no per-channel counter there. Memory " \
        "bandwidth: LIKWID's MEM_FREERUN group, or 'pmugate stat -g MEM'"

/* LIKWID programs Ice Lake-SP's memory channels to count bandwidth; answered "not allowed",
 * which LIKWID shows as a failed counter, and said once with the reason. Programming or
 * reading one voids the counts (LIKWID would print 0 MB/s); its clearing writes do not. */
static void refuse_mmio_channel(LikwidForwarder *f, LikwidRecord *rec, bool write, uint64_t value) {
        rec->errorcode = LIKWID_ERR_RESTREG;
        rec->data = 0;
        f->stats.refused++;
        if (write && value == 0)
                return;
        if (!f->mmio_told) {
                f->mmio_told = true;
                fprintf(f->log, "%s: %s\n", f->prog, MMIO_CHANNELS_REFUSED);
        }
        counts_void(f, MMIO_CHANNELS_REFUSED);
}

/* LIKWID's programming that has no perf equivalent on a node that counts via perf: answered
 * "not allowed", said on stderr with the register and why, and the counts void (LIKWID would
 * print zeros or "-" for it and exit 0). */
static void perf_refuse(LikwidForwarder *f, LikwidRecord *rec, const char *what, const char *why) {
        char line[PMUGATE_LIKWID_VOID_REASON_MAX];

        rec->errorcode = LIKWID_ERR_RESTREG;
        rec->data = 0;
        f->stats.refused++;
        (void) snprintf(line, sizeof(line), "this node counts via perf; LIKWID's %s cannot be translated: %s",
                        what, why);
        if (f->perf_lines++ < PERF_LINES_MAX)
                fprintf(f->log, "%s: %s\n", f->prog, line);
        counts_void(f, line);
}

/* The counts of every event of c's plan, scaled where the kernel multiplexed them. */
static int perf_sample(LikwidForwarder *f, PerfCpu *c, uint32_t cpu) {
        uint64_t values[LIKWID_PERF_EVENTS_MAX] = {};
        const pmugate_perf_row *rows;
        char line[160];
        size_t n_rows;
        int r;

        if (!c->handle)
                return 0;
        if (!f->conn)
                return -ENOTCONN;
        r = pmugate_perf_read(f->conn, c->handle, &rows, &n_rows);
        if (r < 0) {
                if (pmugate_last_error(f->conn)->code <= 0)
                        connection_lost(f);
                else
                        counts_void(f, "pmugated refused to read LIKWID's perf events");
                return r;
        }
        for (size_t i = 0; i < n_rows; i++) {
                const pmugate_perf_row *row = &rows[i];

                if (row->group >= c->plan.n_groups || row->n_values != c->plan.group_len[row->group]) {
                        counts_void(f, "pmugated's perf_read answer does not match the events opened");
                        return -EBADMSG;
                }
                if (row->status != 0 || (row->time_enabled > 0 && row->time_running == 0)) {
                        (void) snprintf(line, sizeof(line), "the kernel did not count LIKWID's events on CPU %"
                                        PRIu32 " (%s)", cpu, row->status != 0 ? pmugate_strerror(row->status) :
                                        "another perf user holds the counters");
                        if (!f->void_reason[0])
                                fprintf(f->log, "%s: %s\n", f->prog, line);
                        counts_void(f, line);
                        continue;
                }
                for (size_t j = 0; j < row->n_values; j++)
                        values[c->plan.group_first[row->group] + j] =
                                likwid_perf_scale(row->values[j], row->time_enabled, row->time_running);
        }
        likwid_perf_counts_sample(&c->counts, &c->plan, values);
        return 0;
}

/* LIKWID enables counting: the events of what it programmed open (again, when it programmed
 * anew) and count from here. */
static void perf_start(LikwidForwarder *f, LikwidRecord *rec, PerfCpu *c, uint32_t cpu) {
        pmugate_perf_group groups[LIKWID_PERF_GROUPS_MAX];
        char reason[PMUGATE_REASON_MAX];
        pmugate_perf_request req;
        int r;

        if (c->counts.counting)
                return;
        if (c->handle && !c->dirty) {
                (void) perf_sample(f, c, cpu);
                c->counts.counting = true;
                return;
        }
        (void) pmugate_perf_close(f->conn, c->handle);
        c->handle = NULL;
        c->counts.sampled = false;
        if (!f->conn) {
                rec->errorcode = LIKWID_ERR_LOCKED;
                return;
        }
        r = likwid_perf_plan(&f->perf_model, &c->shadow, &c->plan, reason, sizeof(reason));
        if (r < 0) {
                perf_refuse(f, rec, "IA32_PERF_GLOBAL_CTRL (start)", reason);
                return;
        }
        c->dirty = false;
        if (c->plan.n_events == 0) {
                c->counts.counting = true;
                return;
        }
        for (size_t g = 0; g < c->plan.n_groups; g++)
                groups[g] = (pmugate_perf_group) {
                        .events = &c->plan.events[c->plan.group_first[g]], .n_events = c->plan.group_len[g],
                };
        req = (pmugate_perf_request) {
                .scope = PMUGATE_PERF_SCOPE_CPU, .cpus = &cpu, .n_cpus = 1,
                .groups = groups, .n_groups = c->plan.n_groups,
        };
        r = pmugate_perf_open(f->conn, &req, &c->handle, reason, sizeof(reason));
        if (r < 0) {
                c->handle = NULL;
                if (pmugate_last_error(f->conn)->code <= 0 && r != -EINVAL) {
                        rec->errorcode = LIKWID_ERR_LOCKED;
                        connection_lost(f);
                        return;
                }
                perf_refuse(f, rec, "counter programming (the perf events pmugated was asked to open)", reason);
                return;
        }
        c->counts.counting = true;
        (void) perf_sample(f, c, cpu);
}

static void perf_stop(LikwidForwarder *f, PerfCpu *c, uint32_t cpu) {
        if (!c->counts.counting)
                return;
        (void) perf_sample(f, c, cpu);
        c->counts.counting = false;
}

/* LIKWID's access to a core PMU register on a node that counts via perf. */
static void access_perf(LikwidForwarder *f, LikwidRecord *rec, const pmugate_cpu *cpu, LikwidPerfReg reg,
                        bool write, uint64_t value) {
        char what[96], reason[PMUGATE_REASON_MAX];
        PerfCpu *c;
        int r = 0;

        bool numbered = reg.kind == LIKWID_PERF_REG_EVTSEL || reg.kind == LIKWID_PERF_REG_PMC ||
                        reg.kind == LIKWID_PERF_REG_FIXED_CTR;

        rec->data = 0;
        if (numbered)
                (void) snprintf(what, sizeof(what), "%s%u on CPU %" PRIu32, reg.name, reg.index, cpu->cpu);
        else
                (void) snprintf(what, sizeof(what), "%s (MSR 0x%" PRIx32 ") on CPU %" PRIu32, reg.name, rec->reg,
                                cpu->cpu);
        if (reg.kind == LIKWID_PERF_REG_REFUSED) {
                perf_refuse(f, rec, what, reg.why);
                return;
        }
        if (cpu->cpu >= f->n_lease_slots) {
                rec->errorcode = LIKWID_ERR_OPENFAIL;
                return;
        }
        c = &f->perf_cpus[cpu->cpu];
        if (numbered && reg.index >=
            (reg.kind == LIKWID_PERF_REG_FIXED_CTR ? f->perf_model.n_fixed : f->perf_model.n_gp)) {
                rec->errorcode = LIKWID_ERR_RWFAIL;
                return;
        }
        if (write && reg.kind != LIKWID_PERF_REG_STATUS) {
                rec->errorcode = ensure_leases(f, cpu, "thread");
                if (rec->errorcode != LIKWID_ERR_NOERROR) {
                        f->stats.refused++;
                        return;
                }
        }
        switch (reg.kind) {
        case LIKWID_PERF_REG_EVTSEL:
                if (!write) {
                        rec->data = c->shadow.evtsel[reg.index];
                        return;
                }
                r = likwid_perf_check_evtsel(value, reason, sizeof(reason));
                if (r >= 0 && c->shadow.evtsel[reg.index] != value) {
                        c->shadow.evtsel[reg.index] = value;
                        c->dirty = true;
                }
                break;
        case LIKWID_PERF_REG_FIXED_CTRL:
                if (!write) {
                        rec->data = c->shadow.fixed_ctrl;
                        return;
                }
                r = likwid_perf_check_fixed_ctrl(&f->perf_model, value, reason, sizeof(reason));
                if (r >= 0 && c->shadow.fixed_ctrl != value) {
                        c->shadow.fixed_ctrl = value;
                        c->dirty = true;
                }
                break;
        case LIKWID_PERF_REG_GLOBAL_CTRL:
                if (!write) {
                        rec->data = c->shadow.global_ctrl;
                        return;
                }
                r = likwid_perf_check_global_ctrl(&f->perf_model, value, reason, sizeof(reason));
                if (r < 0)
                        break;
                /* New enables, or new programming while counting: the events change at once,
                 * as the counters would. */
                if (value != c->shadow.global_ctrl || c->dirty) {
                        perf_stop(f, c, cpu->cpu);
                        c->dirty = true;
                }
                c->shadow.global_ctrl = value;
                if (value != 0)
                        perf_start(f, rec, c, cpu->cpu);
                else
                        perf_stop(f, c, cpu->cpu);
                return;
        case LIKWID_PERF_REG_PMC:
        case LIKWID_PERF_REG_FIXED_CTR:
        case LIKWID_PERF_REG_PERF_METRICS:
                if (c->counts.counting && perf_sample(f, c, cpu->cpu) < 0) {
                        rec->errorcode = LIKWID_ERR_RWFAIL;
                        return;
                }
                if (write)
                        likwid_perf_counts_write(&c->counts, reg.kind, reg.index, value);
                else
                        rec->data = likwid_perf_counts_read(&c->counts, &f->perf_model, reg.kind, reg.index);
                return;
        case LIKWID_PERF_REG_STATUS:
                /* The kernel keeps 64-bit counts: nothing LIKWID sees ever overflows. */
                f->stats.switch_offs++;
                return;
        default:
                rec->errorcode = LIKWID_ERR_RWFAIL;
                return;
        }
        if (r < 0)
                perf_refuse(f, rec, what, reason);
}

#define UNCORE_VIA_PERF "LIKWID programs uncore boxes through PCI config space, which pmugated does not " \
        "write on a node that counts via perf, and their events are not translated to the kernel's " \
        "uncore PMUs. Memory bandwidth: 'pmugate stat -g MEM'"

/* A memory channel counter LIKWID programmed with a CAS_COUNT event on a node that counts via
 * perf, answered from the daemon's package counter of the kernel's uncore_imc_N like the
 * free-running counters: the lines counted since LIKWID zeroed it, while not frozen. */
static bool cas_channel_served(const pmugate_info *info, uint32_t device, uint32_t socket) {
        uint32_t counter;

        return likwid_map_cas(info, device, socket, false, &counter) >= 0 &&
               likwid_map_cas(info, device, socket, true, &counter) >= 0;
}

static CasState *cas_state(LikwidForwarder *f, uint32_t device, uint32_t socket, uint32_t ctr) {
        for (size_t i = 0; i < f->n_cas; i++)
                if (f->cas[i].device == device && f->cas[i].socket == socket && f->cas[i].ctr == ctr)
                        return &f->cas[i];
        return NULL;
}

/* Reads the package counters of the given states in one batch and advances them. */
static int cas_advance(LikwidForwarder *f, CasState **states, size_t n) {
        LikwidRecord taken[CAS_MAX] = {};
        size_t queued = 0;

        for (size_t i = 0; i < n && i < CAS_MAX; i++) {
                PendingOp *op;

                if (!states[i]->mapped)
                        continue;
                op = queue_op(f, false, false, states[i]->count.counter, 0, 0);
                op->counter = true;
                op->answer = &taken[i];
                queued++;
        }
        if (queued == 0)
                return 0;
        run_pending(f);
        for (size_t i = 0; i < n && i < CAS_MAX; i++) {
                const pmugate_counter *c;

                if (!states[i]->mapped)
                        continue;
                c = likwid_find_counter(f->info, states[i]->count.counter);
                if (taken[i].errorcode != LIKWID_ERR_NOERROR || !c)
                        return -EIO;
                freerun_advance(&states[i]->count, c, taken[i].data);
        }
        return 0;
}

/* LIKWID's freeze of the package's uncore (U-box) or of one box: the counters stand still. */
static void cas_gate(LikwidForwarder *f, uint32_t socket, int32_t device, bool freeze) {
        CasState *states[CAS_MAX];
        size_t n = 0;

        for (size_t i = 0; i < f->n_cas; i++)
                if (f->cas[i].socket == socket && (device < 0 || f->cas[i].device == (uint32_t) device))
                        states[n++] = &f->cas[i];
        (void) cas_advance(f, states, n);
        for (size_t i = 0; i < n; i++)
                states[i]->count.frozen = freeze;
}

#define CAS_ONLY "only CAS_COUNT_RD (event 0x04 umask 0x03) and CAS_COUNT_WR (umask 0x0C) map to the kernel's " \
        "uncore_imc_N cas_count_read and cas_count_write"

static void access_cas(LikwidForwarder *f, LikwidRecord *rec, bool write, uint64_t value) {
        uint32_t device = rec->device, socket = rec->cpu, reg = rec->reg, counter;
        const pmugate_cpu *cpu = socket <= INT32_MAX ? first_cpu_of_package(f->info, (int32_t) socket) : NULL;
        char what[96], why[256];
        CasState *state;

        rec->data = 0;
        (void) snprintf(what, sizeof(what), "memory channel device %" PRIu32 " offset 0x%" PRIx32 " on socket %"
                        PRIu32, device, reg, socket);
        if (!cpu) {
                rec->errorcode = LIKWID_ERR_NODEV;
                return;
        }
        if (!cas_channel_served(f->info, device, socket)) {
                perf_refuse(f, rec, what, "pmugated serves no uncore_imc cas_count counter of the kernel for this "
                            "channel, and writes no PMU register on a node that counts via perf");
                return;
        }
        if (write) {
                rec->errorcode = ensure_leases(f, cpu, "package");
                if (rec->errorcode != LIKWID_ERR_NOERROR) {
                        f->stats.refused++;
                        return;
                }
        }
        if (reg == LIKWID_IMC_BOX_CTL) {
                if (write) {
                        if (value & LIKWID_IMC_BOX_RESET_CTRS)
                                for (size_t i = 0; i < f->n_cas; i++)
                                        if (f->cas[i].device == device && f->cas[i].socket == socket)
                                                f->cas[i].count.bytes = 0;
                        cas_gate(f, socket, (int32_t) device, (value & LIKWID_IMC_BOX_FREEZE) ||
                                                                      package_frozen(f, (int32_t) socket));
                }
                f->stats.switch_offs++;
                return;
        }
        if (reg >= LIKWID_IMC_CTL0 && reg < LIKWID_IMC_CTL0 + 4 * LIKWID_IMC_COUNTERS && (reg - LIKWID_IMC_CTL0) % 4 == 0) {
                uint32_t ctr = (reg - LIKWID_IMC_CTL0) / 4;
                uint32_t event = value & 0xFF, umask = (value >> 8) & 0xFF;

                state = cas_state(f, device, socket, ctr);
                if (!write) {
                        rec->data = state ? state->ctl : 0;
                        return;
                }
                if ((value & 0xFFFF) != 0 &&
                    (event != LIKWID_IMC_EVENT_CAS ||
                     (umask != LIKWID_IMC_UMASK_CAS_READ && umask != LIKWID_IMC_UMASK_CAS_WRITE))) {
                        (void) snprintf(why, sizeof(why), "event 0x%02" PRIx32 " umask 0x%02" PRIx32 ": " CAS_ONLY,
                                        event, umask);
                        perf_refuse(f, rec, what, why);
                        return;
                }
                if (!state) {
                        if (f->n_cas >= CAS_MAX) {
                                rec->errorcode = LIKWID_ERR_DAEMONBUSY;
                                return;
                        }
                        state = &f->cas[f->n_cas++];
                        *state = (CasState) { .device = device, .socket = socket, .ctr = ctr };
                }
                state->ctl = value;
                state->mapped = false;
                if ((value & 0xFFFF) == 0)
                        return;
                if (likwid_map_cas(f->info, device, socket, umask == LIKWID_IMC_UMASK_CAS_WRITE, &counter) < 0) {
                        perf_refuse(f, rec, what, "the kernel's uncore_imc counter of this channel is not served "
                                    "by pmugated here");
                        return;
                }
                state->count = (FreerunState) { .counter = counter, .frozen = package_frozen(f, (int32_t) socket) };
                state->mapped = true;
                if (cas_advance(f, &state, 1) < 0) {
                        perf_refuse(f, rec, what, "reading the kernel's uncore_imc counter failed");
                        return;
                }
                state->count.bytes = 0;
                return;
        }
        if (reg >= LIKWID_IMC_CTR0 && reg < LIKWID_IMC_CTR0 + 8 * LIKWID_IMC_COUNTERS && (reg - LIKWID_IMC_CTR0) % 8 == 0) {
                state = cas_state(f, device, socket, (reg - LIKWID_IMC_CTR0) / 8);
                if (!state || !state->mapped) {
                        if (write && value != 0)
                                perf_refuse(f, rec, what, "a counter can only be zeroed");
                        return;
                }
                if (cas_advance(f, &state, 1) < 0) {
                        rec->errorcode = LIKWID_ERR_RWFAIL;
                        counts_void(f, "reading the kernel's uncore_imc counter failed");
                        return;
                }
                if (write) {
                        if (value != 0)
                                perf_refuse(f, rec, what, "a counter can only be zeroed");
                        else
                                state->count.bytes = 0;
                        return;
                }
                rec->data = (uint64_t) (state->count.bytes / LIKWID_FREERUN_LINE + 0.5);
                return;
        }
        perf_refuse(f, rec, what, "only the four general counters of a memory channel map to perf (the DCLK "
                    "fixed counter and other box registers do not)");
}

static void access_register(LikwidForwarder *f, LikwidRecord *rec) {
        bool write = rec->type == LIKWID_WRITE, pci = rec->device != LIKWID_DEV_MSR;
        const pmugate_register *entry;
        const pmugate_cpu *cpu;
        const RefusedReg *known;
        uint32_t target;
        uint64_t value = rec->data;
        PendingOp *op;

        rec->data = write ? rec->data : 0;
        rec->errorcode = LIKWID_ERR_NOERROR;
        if (write)
                f->stats.writes++;
        else
                f->stats.reads++;
        if (!f->conn) {
                rec->errorcode = LIKWID_ERR_LOCKED;
                counts_void(f, "no connection to pmugated");
                return;
        }
        if (likwid_device_is_freerun(rec->device)) {
                access_freerun(f, rec, write, value);
                return;
        }
        if (likwid_mmio_channel_present(f->info, rec->device, rec->cpu)) {
                refuse_mmio_channel(f, rec, write, value);
                return;
        }
        if (pci && f->via_perf) {
                if (likwid_imc_channel(f->info, rec->device) >= 0)
                        access_cas(f, rec, write, value);
                else
                        perf_refuse(f, rec, "uncore device programming", UNCORE_VIA_PERF);
                return;
        }
        if (pci) {
                if (likwid_map_unit(f->info, rec->device, rec->cpu, &target) < 0) {
                        rec->errorcode = LIKWID_ERR_NODEV;
                        return;
                }
                cpu = first_cpu_of_package(f->info, unit_package(f->info, target));
                entry = likwid_find_pci(f->info, target, rec->reg);
                if (entry && entry->width == 4)
                        value &= UINT32_MAX;
        } else {
                target = rec->cpu;
                cpu = likwid_map_cpu(f->info, target);
                entry = likwid_find_msr(f->info, rec->reg);
        }
        if (!cpu) {
                rec->errorcode = pci ? LIKWID_ERR_NODEV : LIKWID_ERR_OPENFAIL;
                return;
        }
        if (write && !pci && rec->reg == LIKWID_MSR_UBOX_GLOBAL_CTL &&
            likwid_model_answers_ubox_freeze(f->info) &&
            (value == LIKWID_UBOX_FREEZE_ALL || value == LIKWID_UBOX_UNFREEZE_ALL || value == 0)) {
                uncore_freeze(f, rec, cpu, value);
                return;
        }
        if (!write && !pci && likwid_read_is_placeholder(f->info, rec->reg)) {
                rec->data = 0;
                f->stats.switch_offs++;
                return;
        }
        if (write && pci && value == 0 && likwid_register_is_readonly_counter(entry)) {
                zero_counter(f, rec, target);
                return;
        }
        if (write && pci && rec->reg == LIKWID_IMC_BOX_CTL && package_frozen(f, cpu->package))
                value |= LIKWID_IMC_BOX_FREEZE;
        if (write && !pci && likwid_write_is_switch_off(rec->reg, value)) {
                /* Nothing to switch off, but only where the user could write at all. */
                rec->errorcode = ensure_leases(f, cpu, "thread");
                rec->data = 0;
                if (rec->errorcode == LIKWID_ERR_NOERROR)
                        f->stats.switch_offs++;
                else
                        f->stats.refused++;
                return;
        }
        if (!pci && f->via_perf) {
                LikwidPerfReg pr = likwid_perf_classify(f->intel, rec->reg);

                if (pr.kind != LIKWID_PERF_REG_NONE) {
                        access_perf(f, rec, cpu, pr, write, value);
                        return;
                }
        }
        /* After the answers above: a refused value (PEBS_ENABLE = 1) must not make the
         * harmless one (0) refused too. */
        known = find_refused(f, pci, pci ? target : 0, rec->reg, write);
        if (known) {
                rec->errorcode = known->error;
                rec->data = 0;
                f->stats.refused++;
                return;
        }
        if (write && entry) {
                rec->errorcode = ensure_leases(f, cpu, pci ? "package" : entry->scope);
                if (rec->errorcode != LIKWID_ERR_NOERROR) {
                        rec->data = 0;
                        f->stats.refused++;
                        return;
                }
        }
        if (f->n_ops >= f->max_ops)
                run_pending(f);
        op = &f->ops[f->n_ops++];
        *op = (PendingOp) { .pci = pci, .write = write, .target = target, .reg = rec->reg, .value = value };
        rec->data = 0;
        if (write && entry && entry->write_mask != 0 && !likwid_write_is_gate(pci, rec->reg)) {
                f->stats.deferred++;
                return;
        }
        op->answer = rec;
        run_pending(f);
        if (pci && !write && rec->errorcode == LIKWID_ERR_NOERROR)
                rec->data = counter_value(f, target, rec->reg, rec->data);
}

static LikwidError check_device(const LikwidForwarder *f, const LikwidRecord *rec) {
        uint32_t unit;

        if (!f->info)
                return LIKWID_ERR_LOCKED;
        if (rec->device == LIKWID_DEV_MSR)
                return likwid_map_cpu(f->info, rec->cpu) ? LIKWID_ERR_NOERROR : LIKWID_ERR_NODEV;
        if (likwid_device_is_freerun(rec->device))
                return likwid_freerun_present(f->info, rec->device, rec->cpu) ? LIKWID_ERR_NOERROR :
                                                                                 LIKWID_ERR_NODEV;
        /* Present where either serves it: a channel whose kernel counters are missing is then
         * refused with the reason rather than left out of LIKWID's table unsaid. */
        if (f->via_perf && likwid_imc_channel(f->info, rec->device) >= 0)
                return cas_channel_served(f->info, rec->device, rec->cpu) ||
                       likwid_map_unit(f->info, rec->device, rec->cpu, &unit) >= 0 ? LIKWID_ERR_NOERROR :
                                                                                      LIKWID_ERR_NODEV;
        if (likwid_device_is_mmio_channel(rec->device))
                return likwid_mmio_channel_present(f->info, rec->device, rec->cpu) ? LIKWID_ERR_NOERROR :
                                                                                       LIKWID_ERR_NODEV;
        return likwid_map_unit(f->info, rec->device, rec->cpu, &unit) < 0 ? LIKWID_ERR_NODEV :
                                                                               LIKWID_ERR_NOERROR;
}

int likwid_forwarder_handle(LikwidForwarder *f, LikwidRecord *rec) {
        f->stats.records++;
        switch (rec->type) {
        case LIKWID_EXIT:
                run_pending(f);
                perf_close_all(f);
                return 0;
        case LIKWID_CHECK:
                f->stats.checks++;
                rec->errorcode = check_device(f, rec);
                rec->data = 0;
                return 1;
        case LIKWID_READ:
        case LIKWID_WRITE:
                access_register(f, rec);
                return 1;
        default:
                rec->errorcode = LIKWID_ERR_UNKNOWN;
                rec->data = 0;
                return 1;
        }
}

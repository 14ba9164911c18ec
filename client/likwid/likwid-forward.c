/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Forwarding LIKWID's records to pmugated
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "likwid/likwid-forward-internal.h"
#include "likwid/likwid-forward.h"
#include "likwid/likwid-map.h"
#include "likwid/likwid-perf.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "pmugate/package.h"

/* LIKWID shows whatever it read, zeros included, and exits 0: the first reason its counts
 * cannot be trusted is kept for whoever started it ('pmugate likwid'). */
void forward_counts_void(LikwidForwarder *f, const char *why) {
        if (!f->void_reason[0])
                (void) snprintf(f->void_reason, sizeof(f->void_reason), "%s", why);
}

const char *likwid_forwarder_void_reason(const LikwidForwarder *f) {
        return f->void_reason[0] ? f->void_reason : NULL;
}

void forward_connection_lost(LikwidForwarder *f) {
        if (!f->conn)
                return;
        forward_counts_void(f, "the connection to pmugated was lost");
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
        forward_counts_void(f, "a counter setup LIKWID was told had succeeded failed");
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
void forward_run_pending(LikwidForwarder *f) {
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
                        forward_connection_lost(f);
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
        forward_run_pending(f);
}

/* Leases what a write needs, once per CPU for the whole run. */
LikwidError forward_ensure_leases(LikwidForwarder *f, const pmugate_cpu *target, const char *scope) {
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
                forward_connection_lost(f);
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

const pmugate_cpu *forward_first_cpu_of_package(const pmugate_info *info, int32_t package) {
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

bool forward_package_frozen(const LikwidForwarder *f, int32_t package) {
        return package >= 0 && package < 64 && (f->frozen_packages & (UINT64_C(1) << package));
}

PendingOp *forward_queue_op(LikwidForwarder *f, bool pci, bool write, uint32_t target, uint32_t reg,
                           uint64_t value) {
        if (f->n_ops >= f->max_ops)
                forward_run_pending(f);
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

void forward_freerun_advance(FreerunState *state, const pmugate_counter *c, uint64_t raw) {
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
                        op = forward_queue_op(f, false, false, counters[n], 0, 0);
                        op->counter = true;
                        op->answer = &taken[n++];
                }
        if (n == 0)
                return;
        forward_run_pending(f);
        for (size_t i = 0; i < n; i++) {
                const pmugate_counter *c = likwid_find_counter(f->info, counters[i]);
                FreerunState *state = freerun_state(f, counters[i]);

                if (taken[i].errorcode != LIKWID_ERR_NOERROR || !c)
                        continue;
                if (!state)
                        state = freerun_state_new(f, counters[i], taken[i].data);
                if (!state)
                        continue;
                forward_freerun_advance(state, c, taken[i].data);
                state->frozen = freeze;
        }
}

/* The U-box's freeze-all and unfreeze-all, done on the freeze bit of each memory controller
 * box of the package that pmugate serves (none on Ice Lake-SP); the write of 0 LIKWID ends
 * with changes nothing. Only for a caller who may write the whole package. */
static void uncore_freeze(LikwidForwarder *f, LikwidRecord *rec, const pmugate_cpu *cpu, uint64_t value) {
        PendingOp *last = NULL;

        rec->data = 0;
        rec->errorcode = forward_ensure_leases(f, cpu, "package");
        if (rec->errorcode != LIKWID_ERR_NOERROR) {
                f->stats.refused++;
                return;
        }
        if (value == 0 || cpu->package < 0 || cpu->package >= 64)
                return;
        freerun_gate(f, cpu->package, value == LIKWID_UBOX_FREEZE_ALL);
        if (f->via_perf)
                forward_cas_gate(f, (uint32_t) cpu->package, -1, value == LIKWID_UBOX_FREEZE_ALL);
        /* Via perf no box is LIKWID's to freeze: it programs none there (refused above). */
        for (size_t i = 0; !f->via_perf && i < f->info->n_units; i++) {
                const pmugate_unit *u = &f->info->units[i];
                const pmugate_register *e = likwid_find_pci(f->info, u->index, LIKWID_IMC_BOX_CTL);

                if (u->package != cpu->package || !e || !(e->write_mask & LIKWID_IMC_BOX_FREEZE))
                        continue;
                last = forward_queue_op(f, true, true, u->index, LIKWID_IMC_BOX_CTL,
                                value == LIKWID_UBOX_FREEZE_ALL ? LIKWID_IMC_BOX_FREEZE : 0);
        }
        if (value == LIKWID_UBOX_FREEZE_ALL)
                f->frozen_packages |= UINT64_C(1) << cpu->package;
        else
                f->frozen_packages &= ~(UINT64_C(1) << cpu->package);
        if (!last)
                return;
        last->answer = rec;
        forward_run_pending(f);
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
        op = forward_queue_op(f, true, false, unit, rec->reg, 0);
        op->answer = rec;
        forward_run_pending(f);
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
        op = forward_queue_op(f, false, false, counter, 0, 0);
        op->counter = true;
        op->answer = rec;
        forward_run_pending(f);
        if (rec->errorcode != LIKWID_ERR_NOERROR)
                return;
        raw = rec->data;
        if (!state)
                state = freerun_state_new(f, counter, raw);
        forward_freerun_advance(state, c, raw);
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
        forward_counts_void(f, MMIO_CHANNELS_REFUSED);
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
                forward_counts_void(f, "no connection to pmugated");
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
                        forward_cas_access(f, rec, write, value);
                else
                        forward_perf_refuse(f, rec, "uncore device programming", UNCORE_VIA_PERF);
                return;
        }
        if (pci) {
                if (likwid_map_unit(f->info, rec->device, rec->cpu, &target) < 0) {
                        rec->errorcode = LIKWID_ERR_NODEV;
                        return;
                }
                cpu = forward_first_cpu_of_package(f->info, unit_package(f->info, target));
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
        if (write && pci && rec->reg == LIKWID_IMC_BOX_CTL && forward_package_frozen(f, cpu->package))
                value |= LIKWID_IMC_BOX_FREEZE;
        if (write && !pci && likwid_write_is_switch_off(rec->reg, value)) {
                /* Nothing to switch off, but only where the user could write at all. */
                rec->errorcode = forward_ensure_leases(f, cpu, "thread");
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
                        forward_perf_access(f, rec, cpu, pr, write, value);
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
                rec->errorcode = forward_ensure_leases(f, cpu, pci ? "package" : entry->scope);
                if (rec->errorcode != LIKWID_ERR_NOERROR) {
                        rec->data = 0;
                        f->stats.refused++;
                        return;
                }
        }
        if (f->n_ops >= f->max_ops)
                forward_run_pending(f);
        op = &f->ops[f->n_ops++];
        *op = (PendingOp) { .pci = pci, .write = write, .target = target, .reg = rec->reg, .value = value };
        rec->data = 0;
        if (write && entry && entry->write_mask != 0 && !likwid_write_is_gate(pci, rec->reg)) {
                f->stats.deferred++;
                return;
        }
        op->answer = rec;
        forward_run_pending(f);
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
                return forward_cas_channel_served(f->info, rec->device, rec->cpu) ||
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
                forward_run_pending(f);
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

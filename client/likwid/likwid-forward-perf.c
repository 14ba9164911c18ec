/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Forwarding LIKWID's records on a node that counts via perf: the core PMU's programming as
 * perf events (likwid-perf.h), Skylake-SP/Cascade Lake memory channels from the kernel's
 * uncore_imc counters, and the refusals of what has no perf equivalent
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "likwid/likwid-forward-internal.h"
#include "likwid/likwid-map.h"
#include "likwid/likwid-perf.h"
#include "macro.h"

/* LIKWID's programming that has no perf equivalent on a node that counts via perf: answered
 * "not allowed", said on stderr with the register and why, and the counts void (LIKWID would
 * print zeros or "-" for it and exit 0). */
void forward_perf_refuse(LikwidForwarder *f, LikwidRecord *rec, const char *what, const char *why) {
        char line[PMUGATE_LIKWID_VOID_REASON_MAX];

        rec->errorcode = LIKWID_ERR_RESTREG;
        rec->data = 0;
        f->stats.refused++;
        (void) snprintf(line, sizeof(line), "this node counts via perf; LIKWID's %s cannot be translated: %s",
                        what, why);
        if (f->perf_lines++ < PERF_LINES_MAX)
                fprintf(f->log, "%s: %s\n", f->prog, line);
        forward_counts_void(f, line);
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
                        forward_connection_lost(f);
                else
                        forward_counts_void(f, "pmugated refused to read LIKWID's perf events");
                return r;
        }
        for (size_t i = 0; i < n_rows; i++) {
                const pmugate_perf_row *row = &rows[i];

                if (row->group >= c->plan.n_groups || row->n_values != c->plan.group_len[row->group]) {
                        forward_counts_void(f, "pmugated's perf_read answer does not match the events opened");
                        return -EBADMSG;
                }
                if (row->status != 0 || (row->time_enabled > 0 && row->time_running == 0)) {
                        (void) snprintf(line, sizeof(line), "the kernel did not count LIKWID's events on CPU %"
                                        PRIu32 " (%s)", cpu, row->status != 0 ? pmugate_strerror(row->status) :
                                        "another perf user holds the counters");
                        if (!f->void_reason[0])
                                fprintf(f->log, "%s: %s\n", f->prog, line);
                        forward_counts_void(f, line);
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
                forward_perf_refuse(f, rec, "IA32_PERF_GLOBAL_CTRL (start)", reason);
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
                        forward_connection_lost(f);
                        return;
                }
                forward_perf_refuse(f, rec, "counter programming (the perf events pmugated was asked to open)", reason);
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
void forward_perf_access(LikwidForwarder *f, LikwidRecord *rec, const pmugate_cpu *cpu, LikwidPerfReg reg,
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
                forward_perf_refuse(f, rec, what, reg.why);
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
                rec->errorcode = forward_ensure_leases(f, cpu, "thread");
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
                forward_perf_refuse(f, rec, what, reason);
}

/* A memory channel counter LIKWID programmed with a CAS_COUNT event on a node that counts via
 * perf, answered from the daemon's package counter of the kernel's uncore_imc_N like the
 * free-running counters: the lines counted since LIKWID zeroed it, while not frozen. */
bool forward_cas_channel_served(const pmugate_info *info, uint32_t device, uint32_t socket) {
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
                op = forward_queue_op(f, false, false, states[i]->count.counter, 0, 0);
                op->counter = true;
                op->answer = &taken[i];
                queued++;
        }
        if (queued == 0)
                return 0;
        forward_run_pending(f);
        for (size_t i = 0; i < n && i < CAS_MAX; i++) {
                const pmugate_counter *c;

                if (!states[i]->mapped)
                        continue;
                c = likwid_find_counter(f->info, states[i]->count.counter);
                if (taken[i].errorcode != LIKWID_ERR_NOERROR || !c)
                        return -EIO;
                forward_freerun_advance(&states[i]->count, c, taken[i].data);
        }
        return 0;
}

/* LIKWID's freeze of the package's uncore (U-box) or of one box: the counters stand still. */
void forward_cas_gate(LikwidForwarder *f, uint32_t socket, int32_t device, bool freeze) {
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

void forward_cas_access(LikwidForwarder *f, LikwidRecord *rec, bool write, uint64_t value) {
        uint32_t device = rec->device, socket = rec->cpu, reg = rec->reg, counter;
        const pmugate_cpu *cpu = socket <= INT32_MAX ? forward_first_cpu_of_package(f->info, (int32_t) socket) : NULL;
        char what[96], why[256];
        CasState *state;

        rec->data = 0;
        (void) snprintf(what, sizeof(what), "memory channel device %" PRIu32 " offset 0x%" PRIx32 " on socket %"
                        PRIu32, device, reg, socket);
        if (!cpu) {
                rec->errorcode = LIKWID_ERR_NODEV;
                return;
        }
        if (!forward_cas_channel_served(f->info, device, socket)) {
                forward_perf_refuse(f, rec, what, "pmugated serves no uncore_imc cas_count counter of the kernel for this "
                            "channel, and writes no PMU register on a node that counts via perf");
                return;
        }
        if (write) {
                rec->errorcode = forward_ensure_leases(f, cpu, "package");
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
                        forward_cas_gate(f, socket, (int32_t) device, (value & LIKWID_IMC_BOX_FREEZE) ||
                                                                      forward_package_frozen(f, (int32_t) socket));
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
                        forward_perf_refuse(f, rec, what, why);
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
                        forward_perf_refuse(f, rec, what, "the kernel's uncore_imc counter of this channel is not served "
                                    "by pmugated here");
                        return;
                }
                state->count = (FreerunState) { .counter = counter, .frozen = forward_package_frozen(f, (int32_t) socket) };
                state->mapped = true;
                if (cas_advance(f, &state, 1) < 0) {
                        forward_perf_refuse(f, rec, what, "reading the kernel's uncore_imc counter failed");
                        return;
                }
                state->count.bytes = 0;
                return;
        }
        if (reg >= LIKWID_IMC_CTR0 && reg < LIKWID_IMC_CTR0 + 8 * LIKWID_IMC_COUNTERS && (reg - LIKWID_IMC_CTR0) % 8 == 0) {
                state = cas_state(f, device, socket, (reg - LIKWID_IMC_CTR0) / 8);
                if (!state || !state->mapped) {
                        if (write && value != 0)
                                forward_perf_refuse(f, rec, what, "a counter can only be zeroed");
                        return;
                }
                if (cas_advance(f, &state, 1) < 0) {
                        rec->errorcode = LIKWID_ERR_RWFAIL;
                        forward_counts_void(f, "reading the kernel's uncore_imc counter failed");
                        return;
                }
                if (write) {
                        if (value != 0)
                                forward_perf_refuse(f, rec, what, "a counter can only be zeroed");
                        else
                                state->count.bytes = 0;
                        return;
                }
                rec->data = (uint64_t) (state->count.bytes / LIKWID_FREERUN_LINE + 0.5);
                return;
        }
        forward_perf_refuse(f, rec, what, "only the four general counters of a memory channel map to perf (the DCLK "
                    "fixed counter and other box registers do not)");
}

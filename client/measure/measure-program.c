/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Register programming: GLOBAL_CTRL bits and FIXED_CTR_CTRL fields owned, EVTSEL values, and
 * the start, sample and stop batches (Intel SDM vol. 3B "Performance Monitoring"; the kernel's
 * arch/x86/events/intel/core.c for SLOTS and PERF_METRICS)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure-program.h"

static uint64_t ring_bits_fixed(bool usr, bool os) {
        return (usr ? FIXED_CTRL_USR : 0) | (os ? FIXED_CTRL_OS : 0);
}

static uint64_t evtsel_value(const pmugate_measure *m, unsigned set, unsigned counter) {
        int e = m->schedule->set_counters[set][counter];
        const EventDesc *d;

        if (e < 0)
                return 0;
        d = &m->programmed_descs[e];
        return d->config | EVTSEL_EN | (d->usr ? EVTSEL_USR : 0) | (d->os ? EVTSEL_OS : 0);
}

static bool any_sibling_measured(const pmugate_measure *m) {
        for (size_t i = 0; m->n_siblings && i < m->n_cpus; i++)
                if (m->n_siblings[i] > 1)
                        return true;
        return false;
}

void measure_set_layout(pmugate_measure *m) {
        if (m->info && strcmp(m->info->vendor, "AuthenticAMD") == 0) {
                m->reg_evtsel0 = MSR_AMD_PERF_CTL0;
                m->reg_pmc0 = MSR_AMD_PERF_CTR0;
                m->reg_stride = AMD_PAIR_STRIDE;
                m->reg_global_ctrl = MSR_AMD_GLOBAL_CTL;
                m->has_fixed_ctrl = false;
                return;
        }
        m->reg_evtsel0 = MSR_PERFEVTSEL0;
        m->reg_pmc0 = MSR_PMC0;
        m->reg_stride = 1;
        m->reg_global_ctrl = MSR_GLOBAL_CTRL;
        m->has_fixed_ctrl = true;
}

int measure_plan_registers(pmugate_measure *m) {
        const Schedule *s = m->schedule;
        bool usr = !(m->flags & (PMUGATE_MEASURE_USER | PMUGATE_MEASURE_KERNEL)) || (m->flags & PMUGATE_MEASURE_USER);
        bool os = !(m->flags & (PMUGATE_MEASURE_USER | PMUGATE_MEASURE_KERNEL)) || (m->flags & PMUGATE_MEASURE_KERNEL);
        size_t n = 0;
        uint32_t tsc;
        bool pci, tsc_readable;

        m->owned_global = (uint64_t) s->gp_used | (uint64_t) s->fixed_used << GLOBAL_FIXED_SHIFT;
        if (s->perf_metrics)
                m->owned_global |= UINT64_C(1) << GLOBAL_PERF_METRICS_BIT;
        for (unsigned f = 0; f < FIXED_COUNTERS_MAX; f++) {
                uint64_t rings = ring_bits_fixed(usr, os);

                if (!mask_bit(s->fixed_used, f))
                        continue;
                /* an event placed here brings its own rings; SLOTS for PERF_METRICS and the
                 * time base count what the measurement counts */
                for (size_t p = 0; p < m->n_programmed; p++)
                        if (s->placements[p].kind == PLACE_FIXED && s->placements[p].counter == f)
                                rings = ring_bits_fixed(m->programmed_descs[p].usr, m->programmed_descs[p].os);
                m->fixed_ctrl_fields |= rings << (FIXED_CTRL_FIELD_BITS * f);
                m->fixed_ctrl_mask |= FIXED_CTRL_FIELD << (FIXED_CTRL_FIELD_BITS * f);
        }

        m->sweep_regs = calloc(GP_COUNTERS_MAX + FIXED_COUNTERS_MAX + 2, sizeof(uint32_t));
        if (!m->sweep_regs)
                return -ENOMEM;
        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++) {
                m->gp_slot[c] = -1;
                if (mask_bit(s->gp_used, c)) {
                        m->gp_slot[c] = (int) n;
                        m->sweep_regs[n++] = measure_pmc(m, c);
                }
        }
        for (unsigned f = 0; f < FIXED_COUNTERS_MAX; f++) {
                m->fixed_slot[f] = -1;
                if (mask_bit(s->fixed_used, f)) {
                        m->fixed_slot[f] = (int) n;
                        m->sweep_regs[n++] = MSR_FIXED_CTR0 + f;
                }
        }
        m->metrics_slot = -1;
        if (s->perf_metrics) {
                m->metrics_slot = (int) n;
                m->sweep_regs[n++] = MSR_PERF_METRICS;
        }
        /* Each CPU's wall-clock window, for aligning a sibling's counts in core sums: REF_TSC
         * stops while the CPU is halted, so it cannot compare the windows of SMT siblings with
         * unequal load. Read only where a formula sums a core's threads and a sibling is
         * measured, so that other measurements keep their operations (and CPUs per batch). */
        tsc_readable = pmugate_info_register_by_name(m->info, "IA32_TIME_STAMP_COUNTER", &pci, &tsc) >= 0 &&
                       !pci && tsc == MSR_TSC;
        m->read_tsc = m->has_fixed_ctrl && tsc_readable &&
                      ((m->uses_core_sums && any_sibling_measured(m)) || m->info->tsc_hz > 0);
        /* Without fixed counters (AMD) the time each event set counted is the TSC's advance
         * between the batches, read in the same batch as the counters: the client's clock
         * would add the latency of every round trip. Only sets taking turns need it. */
        m->tsc_slot = -1;
        if (!m->has_fixed_ctrl && s->timebase_fixed < 0 &&
            (s->n_sets > 1 || (m->info->tsc_hz > 0 && !m->registers_for_markers))) {
                m->tsc_slot = (int) n;
                m->sweep_regs[n++] = MSR_TSC;
        }
        /* Every "/s" metric divides by the windows the counters counted, timed by the TSC in the
         * same operation as the counts, not by the client's clock between replies (which adds
         * the latency of the start's and the stop's round trips). */
        m->wall_in_tsc = m->info->tsc_hz > 0 && (m->read_tsc || m->tsc_slot >= 0);
        m->n_sweep_regs = n;
        return 0;
}

bool measure_uses_each(const pmugate_measure *m) {
        return m->info && m->info->max_each_steps >= MEASURE_CPU_STEPS_MAX;
}

/* Daemons before "each" get the same operations one by one, in the same order. */
static bool use_each(const pmugate_measure *m, size_t n_steps) {
        return n_steps > 0 && measure_uses_each(m);
}

/* The steps as single ops, CPU by CPU: what "each" expands to in the daemon. */
static int add_steps(pmugate_batch *b, const pmugate_measure *m, size_t first, size_t n, const pmugate_step *steps,
                     size_t n_steps) {
        int r = 0;

        if (use_each(m, n_steps))
                return pmugate_batch_each_cpu(b, m->cpus + first, n, steps, n_steps);
        for (size_t i = first; i < first + n; i++)
                for (size_t k = 0; k < n_steps && r >= 0; k++) {
                        const pmugate_step *st = &steps[k];

                        uint32_t cpu = m->cpus[i];

                        if (st->kind == PMUGATE_STEP_READ)
                                r = pmugate_batch_read_msr(b, cpu, st->reg);
                        else if (st->kind == PMUGATE_STEP_WRITE)
                                r = pmugate_batch_write_msr(b, cpu, st->reg, st->value);
                        else
                                r = pmugate_batch_write_msr_bits(b, cpu, st->reg, st->value, st->mask);
                }
        return r;
}

/* GLOBAL_CTRL of each CPU, with (tsc) its TSC read right after: the same one operation from
 * the edge of the CPU's counting window when the counters stop and when they start, whatever
 * the position of the CPU in the batch, so that the readings time the window itself. */
static int add_global(pmugate_batch *b, const pmugate_measure *m, size_t first, size_t n, uint64_t value,
                      bool tsc) {
        const pmugate_step steps[] = {
                { .kind = PMUGATE_STEP_WRITE_BITS, .reg = m->reg_global_ctrl, .value = value, .mask = m->owned_global },
                { .kind = PMUGATE_STEP_READ, .reg = MSR_TSC },
        };

        return add_steps(b, m, first, n, steps, tsc && m->read_tsc ? 2 : 1);
}

static void push_write(pmugate_step *steps, size_t *n, uint32_t reg, uint64_t value) {
        steps[(*n)++] = (pmugate_step) { .kind = PMUGATE_STEP_WRITE, .reg = reg, .value = value };
}

/* SLOTS first, then the other fixed counters, then PERF_METRICS: "the fixed counter 3 has to
 * be written before the PERF_METRICS" (the kernel, intel_update_topdown_event()). */
static void zero_fixed_steps(const pmugate_measure *m, bool all, pmugate_step *steps, size_t *n) {
        /* a sample resets SLOTS only together with PERF_METRICS; otherwise it counts on */
        if (mask_bit(m->schedule->fixed_used, FIXED_SLOTS) && (all || m->schedule->perf_metrics))
                push_write(steps, n, MSR_FIXED_CTR0 + FIXED_SLOTS, 0);
        for (unsigned f = 0; all && f < FIXED_SLOTS; f++)
                if (mask_bit(m->schedule->fixed_used, f))
                        push_write(steps, n, MSR_FIXED_CTR0 + f, 0);
        if (m->schedule->perf_metrics)
                push_write(steps, n, MSR_PERF_METRICS, 0);
}

/* What each CPU runs between its counters' stop and start. Start and sample: the same on
 * every CPU. Stop: what CPU i held before, so st is that CPU's state. */
static size_t cpu_steps(const pmugate_measure *m, const CpuState *st, BatchKind kind, int rotate_from,
                        pmugate_step *steps) {
        size_t n = 0;

        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++) {
                if (!mask_bit(m->schedule->gp_used, c))
                        continue;
                if (kind == BATCH_START)
                        push_write(steps, &n, measure_evtsel(m, c), evtsel_value(m, 0, c));
                else if (kind == BATCH_STOP)
                        push_write(steps, &n, measure_evtsel(m, c), st->saved_evtsel[c]);
                else if (rotate_from >= 0) {
                        unsigned next = ((unsigned) rotate_from + 1) % m->schedule->n_sets;

                        push_write(steps, &n, measure_evtsel(m, c), evtsel_value(m, next, c));
                }
                if (kind != BATCH_SAMPLE)
                        push_write(steps, &n, measure_pmc(m, c), 0);
        }
        if (kind != BATCH_SAMPLE && m->fixed_ctrl_mask != 0)
                steps[n++] = (pmugate_step) {
                        .kind = PMUGATE_STEP_WRITE_BITS,
                        .reg = MSR_FIXED_CTR_CTRL,
                        .value = kind == BATCH_START ? m->fixed_ctrl_fields : st->saved_fixed_ctrl,
                        .mask = m->fixed_ctrl_mask,
                };
        zero_fixed_steps(m, kind != BATCH_SAMPLE, steps, &n);
        return n;
}

static int add_cpu_ops(pmugate_batch *b, const pmugate_measure *m, size_t first, size_t n, BatchKind kind,
                       int rotate_from) {
        pmugate_step steps[MEASURE_CPU_STEPS_MAX];
        size_t n_steps;
        int r = 0;

        if (kind != BATCH_STOP) {
                n_steps = cpu_steps(m, NULL, kind, rotate_from, steps);
                return add_steps(b, m, first, n, steps, n_steps);
        }
        for (size_t i = first; i < first + n && r >= 0; i++) {
                n_steps = cpu_steps(m, &m->state[i], kind, rotate_from, steps);
                r = add_steps(b, m, i, 1, steps, n_steps);
        }
        return r;
}

int measure_build_batch(pmugate_batch *b, const pmugate_measure *m, size_t first, size_t n, BatchKind kind,
                       int rotate_from, int *ret_sweep) {
        int r;

        pmugate_batch_clear(b);
        *ret_sweep = -1;
        r = add_global(b, m, first, n, 0, kind != BATCH_START);
        if (r < 0)
                return r;
        if (kind != BATCH_START) {
                r = pmugate_batch_read_msrs(b, m->cpus + first, n, m->sweep_regs, m->n_sweep_regs);
                if (r < 0)
                        return r;
                *ret_sweep = r;
        }
        r = add_cpu_ops(b, m, first, n, kind, rotate_from);
        if (r < 0)
                return r;
        if (kind == BATCH_START && m->tsc_slot >= 0) {
                uint32_t tsc = MSR_TSC;

                r = pmugate_batch_read_msrs(b, m->cpus + first, n, &tsc, 1);
                if (r < 0)
                        return r;
                *ret_sweep = r;
        }
        if (kind == BATCH_STOP) {
                for (size_t i = first; i < first + n; i++) {
                        r = pmugate_batch_write_msr_bits(b, m->cpus[i], m->reg_global_ctrl,
                                                         m->state[i].saved_global_ctrl, m->owned_global);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        return add_global(b, m, first, n, m->owned_global, true);
}


/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measurements: programming the counters through the daemon, sampling with read-and-reset of
 * SLOTS/PERF_METRICS, multiplexing, accumulation and the restore on stop
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/register-batch.h"
#include "macro.h"
#include "measure/measure-internal.h"
#include "measure/measure-program.h"
#include "pmugate-limits.h"

#define NSEC_PER_SEC 1e9

_printf_(3, 4)
static int fail(pmugate_measure *m, int error, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(m->reason, sizeof(m->reason), format, ap);
        va_end(ap);
        return error;
}

uint64_t measure_metrics_slots(uint64_t slots, uint64_t perf_metrics, unsigned field) {
        uint64_t byte = (perf_metrics >> (PERF_METRICS_FIELD_BITS * field)) & PERF_METRICS_FULL_SCALE;

        return (uint64_t) (((unsigned __int128) slots * byte) / PERF_METRICS_FULL_SCALE);
}

/* The wall-clock length of the window CPU i's counters just closed: the TSC's advance from
 * just after they started to just before they stopped where the TSC can be read, else the time
 * since the last batch. */
static double wall_window(const pmugate_measure *m, const CpuState *st, uint64_t tsc_stopped) {
        if (!m->read_tsc)
                return (double) m->wall_delta_ns;
        /* a TSC reading that failed: the client's time, in the TSC's ticks where the rate is known */
        if (st->tsc_started == 0 || tsc_stopped <= st->tsc_started)
                return m->info->tsc_hz > 0 ? (double) m->wall_delta_ns * (double) m->info->tsc_hz / NSEC_PER_SEC :
                                             (double) m->wall_delta_ns;
        return (double) (tsc_stopped - st->tsc_started);
}

/* Adds one sample's readings of CPU i to its accumulators; set is the event set that counted. */
static void accumulate(pmugate_measure *m, size_t i, const uint64_t *values, uint64_t tsc, unsigned set) {
        const Schedule *s = m->schedule;
        CpuState *st = &m->state[i];
        CpuAccum *a = &m->accum[i];
        uint64_t slots = 0, metrics = 0;
        double timebase;

        if (s->timebase_fixed >= 0)
                timebase = (double) counter_delta(values[m->fixed_slot[s->timebase_fixed]],
                                                  st->fixed_last[s->timebase_fixed], m->counter_mask);
        else if (m->tsc_slot >= 0)
                timebase = (double) (values[m->tsc_slot] - st->tsc_last);
        else
                timebase = (double) m->wall_delta_ns;
        a->total += timebase;
        /* AMD's counters run on through the batch: the window is the TSC's advance between
         * the reads beside the counts */
        if (m->tsc_slot >= 0) {
                a->wall += (double) (values[m->tsc_slot] - st->tsc_last);
                st->tsc_last = values[m->tsc_slot];
        } else
                a->wall += wall_window(m, st, tsc);
        if (s->perf_metrics) {
                /* SLOTS was zeroed with PERF_METRICS at the last reset, so this is the window
                 * the fractions describe */
                slots = counter_delta(values[m->fixed_slot[FIXED_SLOTS]], st->fixed_last[FIXED_SLOTS], m->counter_mask);
                metrics = values[m->metrics_slot];
        }
        for (size_t p = 0; p < m->n_programmed; p++) {
                const Placement *pl = &s->placements[p];

                switch (pl->kind) {
                case PLACE_FIXED:
                        a->raw[p] += counter_delta(values[m->fixed_slot[pl->counter]], st->fixed_last[pl->counter],
                                                   m->counter_mask);
                        break;
                case PLACE_GP: {
                        unsigned c = pl->pinned ? (unsigned) pl->set_counter[set] : pl->counter;

                        if (!pl->pinned && pl->set != set)
                                continue;
                        a->raw[p] += counter_delta(values[m->gp_slot[c]], st->gp_last[c], m->counter_mask);
                        break;
                }
                case PLACE_PERF_METRICS:
                        a->raw[p] += measure_metrics_slots(slots, metrics, pl->counter);
                        break;
                case PLACE_SOFTWARE:
                        /* counted only through perf (measure-perf.c) */
                        continue;
                }
                a->enabled[p] += timebase;
        }
        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++)
                if (m->gp_slot[c] >= 0)
                        st->gp_last[c] = values[m->gp_slot[c]];
        for (unsigned f = 0; f < FIXED_COUNTERS_MAX; f++)
                if (m->fixed_slot[f] >= 0)
                        st->fixed_last[f] = values[m->fixed_slot[f]];
        /* the same batch resets SLOTS and PERF_METRICS */
        if (s->perf_metrics) {
                st->fixed_last[FIXED_SLOTS] = 0;
                st->slots_base += slots;
                for (unsigned f = 0; f < PERF_METRICS_FIELDS; f++)
                        st->fields_base[f] += measure_metrics_slots(slots, metrics, f);
        }
}

static int run_batch(pmugate_measure *m, pmugate_batch *b, size_t first, size_t n, BatchKind kind, int sweep,
                     unsigned set) {
        uint64_t values[GP_COUNTERS_MAX + FIXED_COUNTERS_MAX + 2];
        int r, first_error = 0;

        r = pmugate_batch_run(m->connection, b);
        if (r == -EKEYREVOKED || r == -ECANCELED)
                m->lease_lost = true;
        if (r < 0)
                return r;
        /* a CPU whose op failed (EIO, offline) keeps what it counted so far and stops */
        for (size_t k = 0; k < pmugate_batch_size(b); k++) {
                int st = pmugate_batch_result(b, k, NULL);

                if (st < 0 && first_error == 0)
                        first_error = st;
        }
        for (size_t j = 0; j < n; j++) {
                CpuState *cs = &m->state[first + j];
                uint64_t tsc_stopped = 0, tsc_started = 0;
                int before, after;
                bool ok = true;

                measure_tsc_results(m, b, kind, n, j, &before, &after);
                if (before >= 0 && pmugate_batch_result(b, (size_t) before, &tsc_stopped) < 0)
                        tsc_stopped = 0;
                if (after >= 0 && pmugate_batch_result(b, (size_t) after, &tsc_started) < 0)
                        tsc_started = 0;
                if (sweep < 0) {
                        cs->tsc_started = tsc_started;
                        continue;
                }
                for (size_t k = 0; k < m->n_sweep_regs; k++) {
                        int st = pmugate_batch_result(b, (size_t) sweep + j * m->n_sweep_regs + k, &values[k]);

                        if (st < 0) {
                                ok = false;
                                if (cs->error == 0)
                                        cs->error = st;
                        }
                }
                if (ok && cs->error == 0)
                        accumulate(m, first + j, values, tsc_stopped, set);
                cs->tsc_started = tsc_started;
        }
        /* Read: a sample batch runs again only next sample, so its results go until then
         * rather than stay resident beside every other chunk's and event set's (the start's
         * are read on by the caller; its batch is freed after). */
        if (kind == BATCH_SAMPLE)
                batch_results_release(b);
        if (first_error < 0)
                return fail(m, first_error, "a register operation failed: %s", pmugate_strerror(first_error));
        return 0;
}

static void free_batches(pmugate_measure *m) {
        for (size_t k = 0; m->batches && k < m->n_sample_chunks * m->variants; k++)
                pmugate_batch_free(m->batches[k]);
        free(m->batches);
        free(m->sweep_index);
        m->batches = NULL;
        m->sweep_index = NULL;
}

/* The sample batches, encoded once: per chunk of CPUs, one that stays on the event set and
 * one per set that rotates to the next. */
static int build_sample_batches(pmugate_measure *m) {
        for (size_t k = 0; k < m->n_sample_chunks * m->variants; k++) {
                size_t chunk = k / m->variants, variant = k % m->variants, per = m->sample_cpus_per_batch;
                size_t first = chunk * per, n = MIN(per, m->n_cpus - first);
                int r = pmugate_batch_new(&m->batches[k]);

                if (r < 0)
                        return r;
                r = measure_build_batch(m->batches[k], m, first, n, BATCH_SAMPLE, variant == 0 ? -1 : (int) variant - 1,
                                        &m->sweep_index[k]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Ops one CPU needs in the largest batch, the stop: GLOBAL_CTRL twice, the TSC twice, the sweep,
 * EVTSEL and PMC per GP counter, FIXED_CTR_CTRL, each fixed counter and PERF_METRICS. */
static size_t ops_per_cpu(const pmugate_measure *m) {
        const Schedule *s = m->schedule;

        return 2 + (m->read_tsc ? 2 : 0) + m->n_sweep_regs + 2 * (size_t) __builtin_popcount(s->gp_used) +
               1 + (size_t) __builtin_popcount(s->fixed_used) + (s->perf_metrics ? 1 : 0);
}

/* Most bytes one CPU adds to a sample's request when each of its operations is a single op:
 * GLOBAL_CTRL twice as "wm", the TSC twice as "r", SLOTS and PERF_METRICS zeroed and the
 * rotation's EVTSELs as "w", each at its longest msgpack encoding, and its entry in the
 * compact read's CPU list. */
#define SAMPLE_WM_BYTES 32U
#define SAMPLE_W_BYTES 22U
#define SAMPLE_R_BYTES 13U
#define SAMPLE_CPU_ENTRY_BYTES 5U
/* Room in a request for everything but the CPUs' own ops or list entries: header, the compact
 * read's registers, and the steps of the "each" ops. */
#define SAMPLE_REQUEST_HEAD_BYTES 2048U

/* Bytes msgpack takes for an unsigned integer in its smallest form. */
static size_t uint_bytes(uint64_t v) {
        return v < 128 ? 1 : v <= UINT8_MAX ? 2 : v <= UINT16_MAX ? 3 : v <= UINT32_MAX ? 5 : 9;
}

static size_t sample_ops_per_cpu(const pmugate_measure *m, size_t *ret_bytes) {
        const Schedule *s = m->schedule;
        size_t rotate = s->n_sets > 1 ? (size_t) __builtin_popcount(s->gp_used) : 0;
        size_t resets = s->perf_metrics ? 2 : 0;
        size_t tsc = m->read_tsc ? 2 : 0;

        if (measure_uses_each(m)) {
                uint32_t max_cpu = 0;

                /* a CPU list entry in the stop, the read, the resets and rotation, the start */
                for (size_t i = 0; i < m->n_cpus; i++)
                        max_cpu = MAX(max_cpu, m->cpus[i]);
                *ret_bytes = (3 + (resets + rotate > 0 ? 1 : 0)) * uint_bytes(max_cpu);
        } else
                *ret_bytes = 2 * SAMPLE_WM_BYTES + tsc * SAMPLE_R_BYTES + (resets + rotate) * SAMPLE_W_BYTES +
                             SAMPLE_CPU_ENTRY_BYTES;
        return 2 + tsc + m->n_sweep_regs + resets + rotate;
}

static int allocate_batches(pmugate_measure *m) {
        size_t max_ops = m->info->max_ops_per_batch > 0 && m->info->max_ops_per_batch < PMUGATE_OPS_PER_BATCH_MAX ?
                         m->info->max_ops_per_batch : PMUGATE_OPS_PER_BATCH_MAX;
        size_t ops, bytes;
        int r;

        /* Start and stop, as many CPUs per round trip as the daemon's op limit allows and their
         * operations fit a request at their longest encoding: they run once, so this is no
         * more than a few round trips on the largest machines. */
        ops = ops_per_cpu(m);
        m->cpus_per_batch = MIN(MIN(max_ops / ops, (size_t) PMUGATE_LIST_MAX),
                                (PMUGATE_REQUEST_SIZE_MAX - SAMPLE_REQUEST_HEAD_BYTES) / (ops * SAMPLE_WM_BYTES));
        if (m->cpus_per_batch == 0)
                return -E2BIG;
        m->n_chunks = (m->n_cpus + m->cpus_per_batch - 1) / m->cpus_per_batch;
        /* A sample, every sampling interval, does less per CPU and sends the same operations
         * for every CPU once: as many CPUs as its ops and bytes allow, 4096 in one round trip. */
        ops = sample_ops_per_cpu(m, &bytes);
        m->sample_cpus_per_batch = MIN(MIN(max_ops / ops, (size_t) PMUGATE_LIST_MAX),
                                       (PMUGATE_REQUEST_SIZE_MAX - SAMPLE_REQUEST_HEAD_BYTES) / bytes);
        m->sample_cpus_per_batch = MAX(m->sample_cpus_per_batch, m->cpus_per_batch);
        m->n_sample_chunks = (m->n_cpus + m->sample_cpus_per_batch - 1) / m->sample_cpus_per_batch;
        m->variants = 1 + (m->schedule->n_sets > 1 ? m->schedule->n_sets : 0);
        m->batches = calloc(m->n_sample_chunks * m->variants, sizeof(pmugate_batch *));
        m->sweep_index = calloc(m->n_sample_chunks * m->variants, sizeof(int));
        r = m->batches && m->sweep_index ? build_sample_batches(m) : -ENOMEM;
        if (r < 0)
                free_batches(m);
        return r;
}

/* Runs one batch kind over every chunk; for start and stop the batch is built on the spot. */
static int run_once(pmugate_measure *m, BatchKind kind) {
        _cleanup_(measure_batch_freep) pmugate_batch *b = NULL;
        int r, first_error = 0;

        r = pmugate_batch_new(&b);
        if (r < 0)
                return r;
        for (size_t chunk = 0; chunk < m->n_chunks; chunk++) {
                size_t first = chunk * m->cpus_per_batch, n = MIN(m->cpus_per_batch, m->n_cpus - first);
                int sweep;

                r = measure_build_batch(b, m, first, n, kind, -1, &sweep);
                if (r < 0)
                        return r;
                r = run_batch(m, b, first, n, kind, kind == BATCH_START ? -1 : sweep, m->current_set);
                /* the start's TSC reading opens every CPU's first window (AMD's time base) */
                for (size_t j = 0; r >= 0 && kind == BATCH_START && sweep >= 0 && j < n; j++)
                        (void) pmugate_batch_result(b, (size_t) sweep + j, &m->state[first + j].tsc_last);
                if (r < 0 && first_error == 0)
                        first_error = r;
        }
        return first_error;
}

/* Keeps what a CPU's registers held before start (v: the EVTSELs used, FIXED_CTR_CTRL,
 * GLOBAL_CTRL) and refuses counters someone is already counting with. */
static int keep_saved(pmugate_measure *m, size_t i, const uint64_t *v) {
        CpuState *st = &m->state[i];
        size_t k = 0;

        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++) {
                if (!mask_bit(m->schedule->gp_used, c))
                        continue;
                st->saved_evtsel[c] = v[k++];
                if (st->saved_evtsel[c] & EVTSEL_EN)
                        return fail(m, -EBUSY,
                                    "PMC%u of CPU %u is already counting (%s%u = 0x%" PRIx64 ")", c,
                                    m->cpus[i], m->has_fixed_ctrl ? "IA32_PERFEVTSEL" : "AMD_PERF_CTL", c,
                                    st->saved_evtsel[c]);
        }
        if (m->has_fixed_ctrl)
                st->saved_fixed_ctrl = v[k++];
        st->saved_global_ctrl = v[k];
        for (unsigned f = 0; f < FIXED_COUNTERS_MAX; f++)
                if (mask_bit(m->schedule->fixed_used, f) &&
                    ((st->saved_fixed_ctrl >> (FIXED_CTRL_FIELD_BITS * f)) & FIXED_CTRL_ENABLE))
                        return fail(m, -EBUSY, "fixed counter %u of CPU %u is already counting "
                                    "(IA32_FIXED_CTR_CTRL = 0x%" PRIx64 ")", f, m->cpus[i], st->saved_fixed_ctrl);
        return 0;
}

static int read_saved(pmugate_measure *m) {
        _cleanup_(measure_batch_freep) pmugate_batch *b = NULL;
        uint32_t regs[GP_COUNTERS_MAX + 2];
        size_t n_regs = 0;
        int r;

        for (unsigned c = 0; c < GP_COUNTERS_MAX; c++)
                if (mask_bit(m->schedule->gp_used, c))
                        regs[n_regs++] = measure_evtsel(m, c);
        if (m->has_fixed_ctrl)
                regs[n_regs++] = MSR_FIXED_CTR_CTRL;
        regs[n_regs++] = m->reg_global_ctrl;
        r = pmugate_batch_new(&b);
        if (r < 0)
                return r;
        for (size_t first = 0; first < m->n_cpus; first += m->cpus_per_batch) {
                size_t n = MIN(m->cpus_per_batch, m->n_cpus - first);
                int base;

                pmugate_batch_clear(b);
                base = pmugate_batch_read_msrs(b, m->cpus + first, n, regs, n_regs);
                if (base < 0)
                        return base;
                r = pmugate_batch_run(m->connection, b);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < n; j++) {
                        uint64_t v[GP_COUNTERS_MAX + 2];

                        for (size_t x = 0; x < n_regs; x++) {
                                r = pmugate_batch_result(b, (size_t) base + j * n_regs + x, &v[x]);
                                if (r < 0)
                                        return fail(m, r, "reading the PMU configuration of CPU %u failed: %s",
                                                    m->cpus[first + j], pmugate_strerror(r));
                        }
                        r = keep_saved(m, first + j, v);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Everything start needs that does not talk to the daemon; done once, so that a start that
 * failed (a CPU busy, say) can be tried again. */
static int prepare(pmugate_measure *m) {
        int r;

        if (m->prepared)
                return 0;
        if (!m->sweep_regs) {
                r = measure_plan_registers(m);
                if (r < 0)
                        return r;
        }
        if (!m->state) {
                m->state = calloc(m->n_cpus, sizeof(CpuState));
                if (!m->state)
                        return -ENOMEM;
        }
        if (!m->accum && (r = measure_accum_new(m, &m->accum)) < 0)
                return r;
        if (!m->mark.cpus && (r = measure_accum_new(m, &m->mark.cpus)) < 0)
                return r;
        /* a measurement of package events alone samples no CPU */
        r = m->n_programmed > 0 ? allocate_batches(m) : 0;
        if (r < 0)
                return r;
        m->prepared = true;
        return 0;
}

int pmugate_measure_start(pmugate_measure *m) {
        int r;

        if (!m || m->started)
                return -EINVAL;
        m->reason[0] = '\0';
        if (m->via_perf)
                return measure_perf_start(m);
        r = prepare(m);
        if (r < 0)
                return r;

        /* Writes need a lease where the daemon has leases; an older daemon answers that it
         * does not know the request, and then there is nothing to take. */
        r = m->n_programmed > 0 ? pmugate_lease(m->connection, m->cpus, m->n_cpus) : -EOPNOTSUPP;
        if (r < 0 && r != -EOPNOTSUPP)
                return r;
        m->leased = r >= 0;

        r = m->n_programmed > 0 ? read_saved(m) : 0;
        if (r >= 0)
                r = run_once(m, BATCH_START);
        if (r >= 0 && m->package)
                r = package_events_start(m->package, m->connection, m->info);
        if (r < 0) {
                if (m->package)
                        (void) package_events_stop(m->package, m->connection);
                if (m->leased)
                        (void) pmugate_release(m->connection, m->cpus, m->n_cpus);
                m->leased = false;
                return r;
        }
        m->started = true;
        m->start_ns = m->last_sample_ns = m->set_started_ns = m->last_batch_ns = m->mark.ns = measure_now_ns();
        return 0;
}

int pmugate_measure_sample(pmugate_measure *m) {
        uint64_t before;
        bool rotate;
        int r, first_error = 0;

        if (!m || !m->started || m->stopped)
                return -EINVAL;
        if (m->via_perf)
                return measure_perf_sample(m);
        before = measure_now_ns();
        m->wall_delta_ns = before - m->last_batch_ns;
        m->last_batch_ns = before;
        rotate = m->schedule->n_sets > 1 && (before - m->set_started_ns) * 2 >= m->rotate_period_ns;
        if (m->sample_hook)
                m->sample_hook(m, true, m->sample_hook_data);
        for (size_t chunk = 0; chunk < m->n_sample_chunks; chunk++) {
                size_t k = chunk * m->variants + (rotate ? 1 + m->current_set : 0);
                size_t first = chunk * m->sample_cpus_per_batch;
                size_t n = MIN(m->sample_cpus_per_batch, m->n_cpus - first);

                r = run_batch(m, m->batches[k], first, n, BATCH_SAMPLE, m->sweep_index[k], m->current_set);
                if (r < 0 && first_error == 0)
                        first_error = r;
        }
        r = m->package ? package_events_sample(m->package, m->connection) : 0;
        if (r < 0 && first_error == 0)
                first_error = r;
        if (m->sample_hook)
                m->sample_hook(m, false, m->sample_hook_data);
        m->last_sample_ns = measure_now_ns();
        m->samples++;
        if (m->schedule->perf_metrics)
                m->resets++;
        if (rotate) {
                m->current_set = (m->current_set + 1) % m->schedule->n_sets;
                m->set_started_ns = before;
        }
        return first_error;
}

int pmugate_measure_stop(pmugate_measure *m) {
        uint64_t before;
        int r, q = 0;

        if (!m || !m->started)
                return -EINVAL;
        if (m->stopped)
                return 0;
        if (m->via_perf)
                return measure_perf_stop(m);
        if (m->lease_lost) {
                /* Writing the registers back would only be refused: the daemon did it. */
                m->stopped = true;
                m->leased = false;
                return 0;
        }
        before = measure_now_ns();
        m->wall_delta_ns = before - m->last_batch_ns;
        m->last_batch_ns = before;
        r = run_once(m, BATCH_STOP);
        q = m->package ? package_events_sample(m->package, m->connection) : 0;
        if (q < 0 && r >= 0)
                r = q;
        q = 0;
        m->last_sample_ns = measure_now_ns();
        m->samples++;
        if (m->schedule->perf_metrics)
                m->resets++;
        m->stopped = true;
        if (m->package) {
                int k = package_events_stop(m->package, m->connection);

                if (k < 0 && r >= 0)
                        r = k;
        }
        if (m->leased) {
                q = pmugate_release(m->connection, m->cpus, m->n_cpus);
                m->leased = false;
        }
        return r < 0 ? r : q;
}

pmugate_measure *pmugate_measure_close(pmugate_measure *m) {
        if (!m)
                return NULL;
        if (m->started && !m->stopped)
                (void) pmugate_measure_stop(m);
        if (m->sample_hook_free)
                m->sample_hook_free(m->sample_hook_data);
        measure_perf_free(m);
        free_batches(m);
        measure_accum_free(m->accum, m->n_cpus);
        measure_accum_free(m->mark.cpus, m->n_cpus);
        free(m->state);
        free(m->sweep_regs);
        for (size_t i = 0; m->siblings && i < m->n_cpus; i++)
                free(m->siblings[i]);
        free(m->siblings);
        free(m->n_siblings);
        free(m->cpu_smt_on);
        free(m->cpus);
        for (size_t i = 0; m->metrics && i < m->n_metrics; i++) {
                free((char *) m->metrics[i].info.name);
                free((char *) m->metrics[i].info.label);
                free((char *) m->metrics[i].info.unit);
                free((char *) m->metrics[i].info.estimate);
                free((char *) m->metrics[i].info.unavailable);
                free(m->metrics[i].programmed);
        }
        free(m->metrics);
        metric_set_free(m->metric_set);
        schedule_free(m->schedule);
        free(m->programmed);
        free(m->programmed_descs);
        free(m->events);
        package_events_free(m->package);
        free(m->group_name);
        free(m->description);
        pmugate_info_free(m->info);
        free(m);
        return NULL;
}

int pmugate_measure_set_reset_period(pmugate_measure *m, uint64_t nsec) {
        if (!m || m->started || nsec < MEASURE_PERIOD_MIN_NS || nsec > MEASURE_PERIOD_MAX_NS)
                return -EINVAL;
        m->reset_period_ns = nsec;
        return 0;
}

int pmugate_measure_set_rotate_period(pmugate_measure *m, uint64_t nsec) {
        if (!m || m->started || nsec < MEASURE_PERIOD_MIN_NS || nsec > MEASURE_PERIOD_MAX_NS)
                return -EINVAL;
        m->rotate_period_ns = nsec;
        return 0;
}

uint64_t pmugate_measure_poll_interval(const pmugate_measure *m) {
        if (!m)
                return MEASURE_RESET_PERIOD_DEFAULT_NS;
        if (m->schedule && m->schedule->n_sets > 1)
                return MIN(m->reset_period_ns, m->rotate_period_ns);
        return m->reset_period_ns;
}

unsigned pmugate_measure_event_sets(const pmugate_measure *m) {
        return m && m->schedule ? MAX(m->schedule->n_sets, 1U) : 0;
}

const char *pmugate_measure_model(const pmugate_measure *m) {
        return m ? m->model : NULL;
}

const char *pmugate_measure_group(const pmugate_measure *m) {
        return m ? m->group_name ?: "" : NULL;
}

const char *pmugate_measure_description(const pmugate_measure *m) {
        return m ? m->description ?: "" : NULL;
}

const char *pmugate_measure_withheld(const pmugate_measure *m) {
        return measure_withheld_note(m);
}

const char *pmugate_measure_last_reason(const pmugate_measure *m) {
        return m ? m->reason : "";
}

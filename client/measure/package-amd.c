/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Package events on AMD Zen 4 and Zen 5: DRAM traffic from the data-fabric counters and L3
 * lookups from each CCX's L3 counters, programmed by the client under leases
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "measure/package-events.h"

/* Data fabric (pmu-registers.md §3.3, PerfMonV2 layout): DF_PERF_CTL at 0xC0010240 + 2i, the
 * counter at +1, 48 bits; event [7:0] and [13:8] at 37:32, umask [7:0] and [11:8] at 27:24,
 * EN bit 22. Events from perf's amdzen4 data-fabric.json, which Zen 5 keeps:
 * local_or_remote_socket_{read,write}_data_beats_dram_N, event 0x1F + 0x40 N, umask 0x7FE
 * (read) and 0x7FF (write), for the 12 DRAM channels of Genoa and Turin; a beat is 64 bytes. */
#define DF_CTL0 0xC0010240U
#define AMD_UNCORE_EN (UINT64_C(1) << 22)
#define DF_EVENT_DRAM_BEATS 0x1FU
#define DF_EVENT_CHANNEL_STRIDE 0x40U
#define DF_UMASK_READ 0x7FEU
#define DF_UMASK_WRITE 0x7FFU
#define DF_DRAM_CHANNELS 12U
/* L3 (pmu-registers.md §3.3, F19h+): L3_PERF_CTL at 0xC0010230 + 2i; l3_lookup_state, event
 * 0x04, umask 0xFF every coherent access and 0x01 misses (perf's amdzen4 cache.json), counted
 * for every slice and core of the CCX and both threads as the kernel defaults them
 * (EnAllSlices bit 46, EnAllCores bit 47, ThreadMask 57:56). */
#define L3_CTL0 0xC0010230U
#define L3_EVENT_LOOKUP 0x04U
#define L3_UMASK_ALL 0xFFU
#define L3_UMASK_MISS 0x01U
#define L3_ALL_CCX (UINT64_C(1) << 46 | UINT64_C(1) << 47 | UINT64_C(3) << 56)
#define AMD_COUNTER_WIDTH 48U

bool package_amd_kind(PackageEventKind kind) {
        return kind == PACKAGE_EVENT_DF_READ || kind == PACKAGE_EVENT_DF_WRITE ||
               kind == PACKAGE_EVENT_L3_ACCESS || kind == PACKAGE_EVENT_L3_MISS;
}

static bool is_l3(PackageEventKind kind) {
        return kind == PACKAGE_EVENT_L3_ACCESS || kind == PACKAGE_EVENT_L3_MISS;
}

static bool is_amd_model(const pmugate_info *info) {
        return strcmp(info->model_key, "zen4") == 0 || strcmp(info->model_key, "zen5") == 0;
}

/* How many events of the same unit (L3 or data fabric) come before e: its first counter. */
static unsigned rank_of(const PackageEvents *pe, size_t e, unsigned *ret_of) {
        unsigned rank = 0, of = 0;

        for (size_t i = 0; i < pe->n_events; i++) {
                if (!package_amd_kind(pe->kinds[i]) || is_l3(pe->kinds[i]) != is_l3(pe->kinds[e]))
                        continue;
                if (i < e)
                        rank++;
                of++;
        }
        *ret_of = of;
        return rank;
}

/* How many of count counters the kernel leaves free (held: the ones its amd_uncore driver
 * enabled), and the index of the nth free one (-1 when there is none). */
static unsigned free_counters(uint64_t held, unsigned count) {
        unsigned n = 0;

        for (unsigned i = 0; i < count && i < 64; i++)
                n += !((held >> i) & 1);
        return n;
}

static int nth_free_counter(uint64_t held, unsigned count, unsigned nth) {
        for (unsigned i = 0; i < count && i < 64; i++)
                if (!((held >> i) & 1) && nth-- == 0)
                        return (int) i;
        return -1;
}

static uint64_t df_ctl_value(PackageEventKind kind, unsigned channel) {
        uint64_t event = DF_EVENT_DRAM_BEATS + DF_EVENT_CHANNEL_STRIDE * channel;
        uint64_t umask = kind == PACKAGE_EVENT_DF_READ ? DF_UMASK_READ : DF_UMASK_WRITE;

        return (event & 0xFF) | (event >> 8) << 32 | (umask & 0xFF) << 8 | (umask >> 8) << 24 |
               AMD_UNCORE_EN;
}

/* The data fabric of package p: one counter per DRAM channel. Where the counters are fewer than
 * channels times events (16 counters on Genoa and Turin for 2 x 12), each event counts the
 * first channels the counters allow and is scaled to all 12, as LIKWID's Zen MEM groups do:
 * exact while the memory interleave spreads traffic evenly over the channels. */
static int plan_df(PackageEvents *pe, const pmugate_info *info, size_t p, size_t e) {
        unsigned of, rank = rank_of(pe, e, &of);
        unsigned usable = free_counters(info->foreign_df_mask, info->df_counters);
        unsigned channels = of ? usable / of : 0;

        if (channels > DF_DRAM_CHANNELS)
                channels = DF_DRAM_CHANNELS;
        if (channels == 0) {
                char reason[300];

                if (usable < info->df_counters)
                        (void) snprintf(reason, sizeof(reason), "package %d has %u data-fabric counters the "
                                        "kernel's amd_uncore driver does not hold, too few for %u events",
                                        pe->packages[p], usable, of);
                else
                        (void) snprintf(reason, sizeof(reason), "package %d has %u data-fabric counters, "
                                        "too few for %u events", pe->packages[p], info->df_counters, of);
                return package_events_withhold(pe, p, e, reason);
        }
        for (unsigned ch = 0; ch < channels; ch++) {
                /* Counters the kernel holds are skipped: the daemon refuses them. */
                unsigned index = (unsigned) nth_free_counter(info->foreign_df_mask, info->df_counters,
                                                             rank * channels + ch);
                int r = package_events_add_source(pe, &(PackageSource) {
                        .package = p,
                        .event = e,
                        .is_programmed = true,
                        .ccx = -1,
                        .target = pe->package_cpu[p],
                        .msr = DF_CTL0 + 2 * index + 1,
                        .ctl = DF_CTL0 + 2 * index,
                        .ctl_value = df_ctl_value(pe->kinds[e], ch),
                        .width = AMD_COUNTER_WIDTH,
                        .factor = (double) DF_DRAM_CHANNELS / channels,
                });
                if (r < 0)
                        return r;
        }
        return 0;
}

static int ccx_of(const pmugate_info *info, uint32_t cpu) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].cpu == cpu)
                        return info->cpus[i].ccx;
        return -1;
}

static int package_of(const pmugate_info *info, uint32_t cpu) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].cpu == cpu)
                        return info->cpus[i].package;
        return -1;
}

/* The L3 of every CCX of package p that holds a measured CPU, read on the first such CPU. */
static int plan_l3(PackageEvents *pe, const pmugate_info *info, const uint32_t *cpus, size_t n_cpus,
                   size_t p, size_t e) {
        unsigned of, rank = rank_of(pe, e, &of);
        int index = nth_free_counter(info->foreign_l3_mask, info->l3_counters, rank);
        char reason[300];

        if (index < 0 && info->foreign_l3_mask) {
                (void) snprintf(reason, sizeof(reason), "a CCX has %u L3 counters the kernel's amd_uncore "
                                "driver does not hold (it holds 0x%llx), too few for %u events",
                                free_counters(info->foreign_l3_mask, info->l3_counters),
                                (unsigned long long) info->foreign_l3_mask, of);
                return package_events_withhold(pe, p, e, reason);
        }
        if (index < 0) {
                (void) snprintf(reason, sizeof(reason), "a CCX has %u L3 counters, too few for %u events",
                                info->l3_counters, of);
                return package_events_withhold(pe, p, e, reason);
        }
        for (size_t i = 0; i < n_cpus; i++) {
                int ccx = ccx_of(info, cpus[i]);
                bool seen = false;
                int r;

                if (package_of(info, cpus[i]) != pe->packages[p])
                        continue;
                if (ccx < 0) {
                        (void) snprintf(reason, sizeof(reason), "the daemon does not know the CCX of CPU %u",
                                        cpus[i]);
                        return package_events_withhold(pe, p, e, reason);
                }
                for (size_t k = 0; k < pe->n_sources; k++)
                        seen = seen || (pe->sources[k].event == e && pe->sources[k].ccx == ccx);
                if (seen)
                        continue;
                r = package_events_add_source(pe, &(PackageSource) {
                        .package = p,
                        .event = e,
                        .is_programmed = true,
                        .ccx = ccx,
                        .target = cpus[i],
                        .msr = L3_CTL0 + 2 * (unsigned) index + 1,
                        .ctl = L3_CTL0 + 2 * (unsigned) index,
                        .ctl_value = L3_EVENT_LOOKUP | AMD_UNCORE_EN | L3_ALL_CCX |
                                     (uint64_t) (pe->kinds[e] == PACKAGE_EVENT_L3_MISS ? L3_UMASK_MISS
                                                                                       : L3_UMASK_ALL) << 8,
                        .width = AMD_COUNTER_WIDTH,
                        .factor = 1.0,
                });
                if (r < 0)
                        return r;
        }
        return 0;
}

int package_amd_plan(PackageEvents *pe, const pmugate_info *info, const uint32_t *cpus, size_t n_cpus,
                     size_t p, size_t e) {
        char reason[200];

        if (!is_amd_model(info)) {
                (void) snprintf(reason, sizeof(reason), "%s is an AMD Zen 4 or Zen 5 event",
                                pe->names[e]);
                return package_events_withhold(pe, p, e, reason);
        }
        return is_l3(pe->kinds[e]) ? plan_l3(pe, info, cpus, n_cpus, p, e) : plan_df(pe, info, p, e);
}

/* Withholds every event with a source of package p in domain ccx (-1: the data fabric). */
static void withhold_domain(PackageEvents *pe, size_t p, int32_t ccx, const char *reason) {
        for (size_t e = 0; e < pe->n_events; e++)
                for (size_t i = 0; i < pe->n_sources; i++)
                        if (pe->sources[i].is_programmed && pe->sources[i].package == p &&
                            pe->sources[i].ccx == ccx && pe->sources[i].event == e) {
                                (void) package_events_withhold(pe, p, e, reason);
                                break;
                        }
}

/* Leases every online CPU of the domain (the CCX, or the package for its data fabric) and
 * writes its control registers; the daemon journals them and puts them back when the leases
 * end. What it refuses is withheld with its reason. */
static int program_domain(PackageEvents *pe, pmugate *c, const pmugate_info *info, size_t p, int32_t ccx) {
        _cleanup_free_ uint32_t *cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
        pmugate_batch *b = pe->batch;
        const char *what = ccx < 0 ? "data fabric" : "L3";
        char reason[600], where[40];
        size_t n = 0;
        int r;

        if (!cpus)
                return -ENOMEM;
        if (ccx < 0)
                (void) snprintf(where, sizeof(where), "package %d", pe->packages[p]);
        else
                (void) snprintf(where, sizeof(where), "CCX %d", ccx);
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online && info->cpus[i].package == pe->packages[p] &&
                    (ccx < 0 || info->cpus[i].ccx == ccx))
                        cpus[n++] = info->cpus[i].cpu;
        r = package_events_lease(pe, c, cpus, n);
        if (r < 0 && (r == -ENOMEM || pmugate_last_error(c)->code <= 0))
                return r;
        if (r < 0) {
                (void) snprintf(reason, sizeof(reason), "programming the %s counters of %s needs leases on "
                                "all of its CPUs: %s", what, where, package_events_daemon_reason(c));
                withhold_domain(pe, p, ccx, reason);
                return 0;
        }
        pmugate_batch_clear(b);
        for (size_t i = 0; i < pe->n_sources; i++) {
                const PackageSource *s = &pe->sources[i];

                if (!s->is_programmed || s->package != p || s->ccx != ccx)
                        continue;
                r = pmugate_batch_write_msr(b, s->target, s->ctl, s->ctl_value);
                if (r < 0)
                        return r;
        }
        r = pmugate_batch_run(c, b);
        if (r < 0 && pmugate_last_error(c)->code <= 0)
                return r;
        for (size_t k = 0; r >= 0 && k < pmugate_batch_size(b); k++)
                if (pmugate_batch_result(b, k, NULL) < 0)
                        r = pmugate_batch_result(b, k, NULL);
        if (r < 0) {
                (void) snprintf(reason, sizeof(reason), "programming the %s counters of %s failed: %s", what,
                                where, pmugate_last_error(c)->code > 0 ? package_events_daemon_reason(c)
                                                                       : pmugate_strerror(r));
                withhold_domain(pe, p, ccx, reason);
        }
        return 0;
}

int package_amd_program(PackageEvents *pe, pmugate *c, const pmugate_info *info) {
        for (size_t p = 0; p < pe->n_packages; p++) {
                bool df = false;
                int r;

                for (size_t i = 0; i < pe->n_sources; i++)
                        df = df || (pe->sources[i].is_programmed && pe->sources[i].package == p &&
                                    pe->sources[i].ccx < 0);
                if (df) {
                        r = program_domain(pe, c, info, p, -1);
                        if (r < 0)
                                return r;
                }
                for (size_t i = 0; i < pe->n_sources; i++) {
                        const PackageSource *s = &pe->sources[i];
                        bool first = true;

                        if (!s->is_programmed || s->package != p || s->ccx < 0)
                                continue;
                        for (size_t k = 0; k < i; k++)
                                first = first && !(pe->sources[k].is_programmed &&
                                                   pe->sources[k].ccx == s->ccx);
                        if (!first)
                                continue;
                        r = program_domain(pe, c, info, p, s->ccx);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Package events: what to read per package, what the daemon withholds, and accumulation
 * across counter wraps
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "measure/package-events.h"
#include "pmugate/package.h"

#define BYTES_PER_LINE 64.0

/* Skylake-SP and Cascade Lake IMC channels in PCI config space (pmu-registers.md §6.1): the
 * fallback when the daemon serves no counter of the kernel's uncore driver. Counter 0 counts
 * CAS_COUNT.RD (event 0x04, umask 0x03), counter 1 CAS_COUNT.WR (umask 0x0C); EN is bit 22. */
#define IMC_VENDOR 0x8086U
#define IMC_CTR0 0xA0U
#define IMC_CTR_STRIDE 8U
#define IMC_CTL0 0xD8U
#define IMC_CTL_STRIDE 4U
#define IMC_CTL_EN (1U << 22)
#define IMC_CAS_READ (0x04U | 0x03U << 8 | IMC_CTL_EN)
#define IMC_CAS_WRITE (0x04U | 0x0CU << 8 | IMC_CTL_EN)
#define IMC_COUNTER_WIDTH 48U
static const uint16_t imc_devices[] = { 0x2042, 0x2046, 0x204a };

static const struct {
        const char *name;
        PackageEventKind kind;
} package_event_names[] = {
        { "UNC_M_CAS_COUNT.RD", PACKAGE_EVENT_CAS_READ },
        { "UNC_M_CAS_COUNT.WR", PACKAGE_EVENT_CAS_WRITE },
        { "local_or_remote_socket_read_data_beats_dram", PACKAGE_EVENT_DF_READ },
        { "local_or_remote_socket_write_data_beats_dram", PACKAGE_EVENT_DF_WRITE },
        { "l3_lookup_state.all_coherent_accesses_to_l3", PACKAGE_EVENT_L3_ACCESS },
        { "l3_lookup_state.l3_miss", PACKAGE_EVENT_L3_MISS },
        { "PWR_PKG_ENERGY", PACKAGE_EVENT_ENERGY_PACKAGE },
        { "PWR_DRAM_ENERGY", PACKAGE_EVENT_ENERGY_DRAM },
        { "PWR_PP0_ENERGY", PACKAGE_EVENT_ENERGY_PP0 },
        { "PWR_PLATFORM_ENERGY", PACKAGE_EVENT_ENERGY_PLATFORM },
};

static const pmugate_rapl_domain energy_domains[_PACKAGE_EVENT_KIND_MAX] = {
        [PACKAGE_EVENT_ENERGY_PACKAGE] = PMUGATE_RAPL_PACKAGE,
        [PACKAGE_EVENT_ENERGY_DRAM] = PMUGATE_RAPL_DRAM,
        [PACKAGE_EVENT_ENERGY_PP0] = PMUGATE_RAPL_PP0,
        [PACKAGE_EVENT_ENERGY_PLATFORM] = PMUGATE_RAPL_PLATFORM,
};

static bool is_energy(PackageEventKind kind) {
        return kind >= PACKAGE_EVENT_ENERGY_PACKAGE && kind < _PACKAGE_EVENT_KIND_MAX;
}

bool package_event_lookup(const char *name, PackageEventKind *ret_kind) {
        for (size_t i = 0; name && i < ELEMENTSOF(package_event_names); i++)
                if (strcmp(name, package_event_names[i].name) == 0) {
                        if (ret_kind)
                                *ret_kind = package_event_names[i].kind;
                        return true;
                }
        return false;
}

const char *package_event_unit(PackageEventKind kind) {
        return is_energy(kind) ? "J" : "";
}

PackageEvents *package_events_free(PackageEvents *pe) {
        if (!pe)
                return NULL;
        for (size_t e = 0; e < pe->n_events; e++)
                free(pe->names[e]);
        for (size_t i = 0; pe->withheld && i < pe->n_packages * pe->n_events; i++)
                free(pe->withheld[i]);
        free(pe->withheld);
        free(pe->packages);
        free(pe->package_cpu);
        free(pe->sources);
        free(pe->result_index);
        free(pe->leased);
        free(pe->tsc_index);
        free(pe->tsc_last);
        free(pe->tsc_ticks);
        free(pe->tsc_mark);
        pmugate_batch_free(pe->batch);
        free(pe);
        return NULL;
}

int package_events_add(PackageEvents **pe, const char *name) {
        PackageEventKind kind;

        if (!package_event_lookup(name, &kind))
                return -ENOENT;
        if (!*pe) {
                *pe = calloc(1, sizeof(PackageEvents));
                if (!*pe)
                        return -ENOMEM;
        }
        for (size_t e = 0; e < (*pe)->n_events; e++)
                if (strcmp((*pe)->names[e], name) == 0)
                        return -EEXIST;
        if ((*pe)->n_events >= PACKAGE_EVENTS_MAX)
                return -E2BIG;
        (*pe)->names[(*pe)->n_events] = strdup(name);
        if (!(*pe)->names[(*pe)->n_events])
                return -ENOMEM;
        (*pe)->kinds[(*pe)->n_events] = kind;
        (*pe)->variables[(*pe)->n_events] = -1;
        return (int) (*pe)->n_events++;
}

static bool is_imc_unit(const pmugate_unit *u) {
        for (size_t i = 0; i < ELEMENTSOF(imc_devices); i++)
                if (u->vendor == IMC_VENDOR && u->device == imc_devices[i])
                        return true;
        return false;
}

/* Without the kernel's counters, the IMC channels of the package in PCI config space. A package
 * with a channel the kernel's uncore_imc driver programs is not counted at all: the daemon
 * refuses to let a client program it, and the other channels alone would undercount. */
static int plan_imc_units(PackageEvents *pe, const pmugate_info *info, size_t p, size_t e, size_t *found) {
        unsigned slot = pe->kinds[e] == PACKAGE_EVENT_CAS_READ ? 0 : 1;
        int r;

        for (size_t i = 0; i < info->n_units; i++)
                if (info->units[i].package == pe->packages[p] && is_imc_unit(&info->units[i]) &&
                    pmugate_info_unit_is_kernels(info, info->units[i].index))
                        return package_events_withholdf(pe, p, e, "the kernel's uncore_imc driver programs "
                                        "memory-controller channel %s (unit %u) of package %d for a "
                                        "perf user, and the daemon serves no counter of it; no client may "
                                        "program that channel",
                                        info->units[i].bdf, info->units[i].index, pe->packages[p]);
        for (size_t i = 0; i < info->n_units; i++) {
                if (info->units[i].package != pe->packages[p] || !is_imc_unit(&info->units[i]))
                        continue;
                r = package_events_add_source(pe, &(PackageSource) {
                        .package = p,
                        .event = e,
                        .is_pci = true,
                        .target = info->units[i].index,
                        .msr = IMC_CTR0 + IMC_CTR_STRIDE * slot,
                        .width = IMC_COUNTER_WIDTH,
                        .factor = 1.0,
                });
                if (r < 0)
                        return r;
                (*found)++;
        }
        return 0;
}

static int plan_memory(PackageEvents *pe, const pmugate_info *info, size_t p, size_t e) {
        pmugate_counter_kind want = pe->kinds[e] == PACKAGE_EVENT_CAS_READ ? PMUGATE_COUNTER_DRAM_READ
                                                                         : PMUGATE_COUNTER_DRAM_WRITE;
        const char *error = NULL;
        size_t found = 0;
        int r;

        for (size_t i = 0; i < info->n_counters; i++) {
                const pmugate_counter *c = &info->counters[i];
                double bytes = pmugate_counter_bytes(c);

                if (c->package != pe->packages[p] || pmugate_counter_kind_of(c) != want)
                        continue;
                if (c->error[0] || bytes <= 0) {
                        error = c->error[0] ? c->error : "its unit is not a size";
                        continue;
                }
                r = package_events_add_source(pe, &(PackageSource) {
                        .package = p,
                        .event = e,
                        .is_counter = true,
                        .target = c->index,
                        .width = c->width,
                        .factor = bytes / BYTES_PER_LINE,
                });
                if (r < 0)
                        return r;
                found++;
        }
        if (found > 0)
                return 0;
        r = plan_imc_units(pe, info, p, e, &found);
        if (r < 0 || found > 0)
                return r;
        if (error)
                return package_events_withholdf(pe, p, e, "the daemon could not open the memory-controller counters of "
                                "package %d (%s)", pe->packages[p], error);
        return package_events_withholdf(pe, p, e, "the daemon serves no memory-controller counter of package %d (a "
                        "daemon without package counters, or the kernel's uncore driver is not loaded)",
                        pe->packages[p]);
}

static int plan_energy(PackageEvents *pe, const pmugate_info *info, size_t p, size_t e) {
        pmugate_rapl_domain d = energy_domains[pe->kinds[e]];
        double joules;

        if (pmugate_rapl_joules_per_count(info->model_key, d, 0, &joules) < 0)
                return package_events_withholdf(pe, p, e, "%s has no %s energy domain",
                                info->model_label[0] ? info->model_label : info->model_key,
                                pmugate_rapl_domain_name(d));
        return package_events_add_source(pe, &(PackageSource) {
                .package = p,
                .event = e,
                .target = pe->package_cpu[p],
                .msr = pmugate_rapl_energy_msr_for(info->model_key, d),
                .width = PMUGATE_RAPL_ENERGY_WIDTH,
        });
}

static int package_of(const pmugate_info *info, uint32_t cpu) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].cpu == cpu)
                        return info->cpus[i].package;
        return -1;
}

int package_events_plan(PackageEvents *pe, const pmugate_info *info, const uint32_t *cpus, size_t n_cpus) {
        int r;

        pe->packages = calloc(n_cpus ?: 1, sizeof(int32_t));
        pe->package_cpu = calloc(n_cpus ?: 1, sizeof(uint32_t));
        if (!pe->packages || !pe->package_cpu)
                return -ENOMEM;
        for (size_t i = 0; i < n_cpus; i++) {
                int pkg = package_of(info, cpus[i]);
                size_t at = 0;

                if (pkg < 0)
                        continue;
                while (at < pe->n_packages && pe->packages[at] < pkg)
                        at++;
                if (at < pe->n_packages && pe->packages[at] == pkg)
                        continue;
                memmove(pe->packages + at + 1, pe->packages + at, (pe->n_packages - at) * sizeof(int32_t));
                memmove(pe->package_cpu + at + 1, pe->package_cpu + at,
                        (pe->n_packages - at) * sizeof(uint32_t));
                pe->packages[at] = pkg;
                pe->package_cpu[at] = cpus[i];
                pe->n_packages++;
        }
        pe->withheld = calloc(pe->n_packages * pe->n_events ?: 1, sizeof(char *));
        if (!pe->withheld)
                return -ENOMEM;
        for (size_t p = 0; p < pe->n_packages; p++)
                for (size_t e = 0; e < pe->n_events; e++) {
                        if (package_amd_kind(pe->kinds[e]))
                                r = package_amd_plan(pe, info, cpus, n_cpus, p, e);
                        else
                                r = is_energy(pe->kinds[e]) ? plan_energy(pe, info, p, e)
                                                            : plan_memory(pe, info, p, e);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* IA32_TIME_STAMP_COUNTER, read per package where the daemon allows it. */
#define PACKAGE_MSR_TSC 0x010U

static bool tsc_readable(const pmugate_info *info) {
        uint32_t reg;
        bool pci;

        return pmugate_info_register_by_name(info, "IA32_TIME_STAMP_COUNTER", &pci, &reg) >= 0 && !pci &&
               reg == PACKAGE_MSR_TSC;
}

static int add_read(pmugate_batch *b, const PackageSource *s) {
        if (s->is_pci)
                return pmugate_batch_read_pci(b, s->target, s->msr);
        if (s->is_counter)
                return pmugate_batch_read_counter(b, s->target);
        return pmugate_batch_read_msr(b, s->target, s->msr);
}

/* The batch of the kept sources, package by package; with read_tsc, each package's sources
 * between two readings of its first measured CPU's TSC, whose midpoint is when they were read. */
static int build_reads(PackageEvents *pe) {
        int r;

        pmugate_batch_clear(pe->batch);
        for (size_t q = 0; q < pe->n_packages; q++) {
                if (pe->read_tsc) {
                        r = pmugate_batch_read_msr(pe->batch, pe->package_cpu[q], PACKAGE_MSR_TSC);
                        if (r < 0)
                                return r;
                        pe->tsc_index[2 * q] = r;
                }
                for (size_t i = 0; i < pe->n_sources; i++) {
                        if (pe->sources[i].package != q)
                                continue;
                        r = add_read(pe->batch, &pe->sources[i]);
                        if (r < 0)
                                return r;
                        pe->result_index[i] = r;
                }
                if (pe->read_tsc) {
                        r = pmugate_batch_read_msr(pe->batch, pe->package_cpu[q], PACKAGE_MSR_TSC);
                        if (r < 0)
                                return r;
                        pe->tsc_index[2 * q + 1] = r;
                }
        }
        return 0;
}

/* When package q's sources were read in the batch just run: the midpoint of its two TSC
 * readings; -ERANGE when the TSC went back. */
static int package_tsc(const PackageEvents *pe, size_t q, uint64_t *ret) {
        uint64_t before, after;
        int r;

        r = pmugate_batch_result(pe->batch, (size_t) pe->tsc_index[2 * q], &before);
        if (r >= 0)
                r = pmugate_batch_result(pe->batch, (size_t) pe->tsc_index[2 * q + 1], &after);
        if (r < 0)
                return r;
        if (after < before)
                return -ERANGE;
        *ret = before + (after - before) / 2;
        return 0;
}

/* Builds the sample batch of the kept sources, runs it, and drops what the daemon refuses or
 * fails, until it runs. */
static int run_dropping(PackageEvents *pe, pmugate *c, uint64_t *values) {
        int r;

        for (;;) {
                size_t refused = SIZE_MAX;

                if (pe->n_sources == 0)
                        return 0;
                r = build_reads(pe);
                if (r < 0)
                        return r;
                r = pmugate_batch_run(c, pe->batch);
                if (r < 0) {
                        const pmugate_error *err = pmugate_last_error(c);
                        bool tsc_refused = false;

                        /* a refused TSC read leaves the package events on the core window */
                        for (size_t k = 0; err && err->code > 0 && pe->read_tsc && k < 2 * pe->n_packages; k++)
                                tsc_refused = tsc_refused || pe->tsc_index[k] == err->op_index;
                        if (tsc_refused) {
                                pe->read_tsc = false;
                                continue;
                        }
                        for (size_t i = 0; err && err->code > 0 && i < pe->n_sources; i++)
                                if (pe->result_index[i] == err->op_index)
                                        refused = i;
                        if (refused == SIZE_MAX)
                                return r;
                        r = package_events_withhold(pe, pe->sources[refused].package, pe->sources[refused].event,
                                             package_events_daemon_reason(c));
                        if (r < 0)
                                return r;
                        continue;
                }
                for (size_t i = pe->n_sources; i > 0; i--) {
                        const PackageSource *s = &pe->sources[i - 1];

                        r = pmugate_batch_result(pe->batch, (size_t) pe->result_index[i - 1],
                                                 &values[i - 1]);
                        if (r >= 0)
                                continue;
                        r = package_events_withholdf(pe, s->package, s->event, "reading it failed: %s", pmugate_strerror(r));
                        if (r < 0)
                                return r;
                        refused = 0;
                }
                for (size_t q = 0; pe->read_tsc && q < pe->n_packages; q++)
                        if (package_tsc(pe, q, &pe->tsc_last[q]) < 0)
                                pe->read_tsc = false;
                if (refused == SIZE_MAX)
                        return 0;
                /* a failed reading leaves its event incomplete: drop the event's other sources too */
                for (size_t i = pe->n_sources; i > 0; i--) {
                        const PackageSource *s = &pe->sources[i - 1];

                        if (pe->withheld[s->package * pe->n_events + s->event])
                                package_events_drop_source(pe, i - 1);
                }
        }
}

/* Joules per count of every energy source, from MSR_RAPL_POWER_UNIT of its package: one
 * round trip per package at start, so that a package the daemon refuses names its own reason. */
static int read_rapl_units(PackageEvents *pe, pmugate *c, const char *model) {
        for (size_t p = 0; p < pe->n_packages; p++) {
                const char *reason = NULL;
                bool wanted = false;
                uint64_t unit = 0;
                int r, index;

                for (size_t i = 0; i < pe->n_sources; i++)
                        wanted = wanted || (pe->sources[i].package == p && !pe->sources[i].is_counter &&
                                            !pe->sources[i].is_pci && !pe->sources[i].is_programmed);
                if (!wanted)
                        continue;
                pmugate_batch_clear(pe->batch);
                index = pmugate_batch_read_msr(pe->batch, pe->package_cpu[p],
                                               pmugate_rapl_power_unit_msr(model));
                if (index < 0)
                        return index;
                r = pmugate_batch_run(c, pe->batch);
                if (r < 0 && pmugate_last_error(c)->code <= 0)
                        return r;
                if (r < 0)
                        reason = package_events_daemon_reason(c);
                else if (pmugate_batch_result(pe->batch, (size_t) index, &unit) < 0)
                        reason = "reading MSR_RAPL_POWER_UNIT failed";
                for (size_t e = 0; reason && e < pe->n_events; e++)
                        if (is_energy(pe->kinds[e])) {
                                r = package_events_withhold(pe, p, e, reason);
                                if (r < 0)
                                        return r;
                        }
                for (size_t i = 0; !reason && i < pe->n_sources; i++) {
                        PackageSource *s = &pe->sources[i];

                        if (s->package == p && !s->is_counter && !s->is_pci && !s->is_programmed &&
                            pmugate_rapl_joules_per_count(model, energy_domains[pe->kinds[s->event]], unit,
                                                          &s->factor) < 0)
                                s->factor = NAN;
                }
        }
        return 0;
}

static void withhold_pci(PackageEvents *pe, size_t p, const char *reason) {
        for (size_t e = 0; e < pe->n_events; e++)
                for (size_t i = 0; i < pe->n_sources; i++)
                        if (pe->sources[i].package == p && pe->sources[i].event == e &&
                            pe->sources[i].is_pci) {
                                (void) package_events_withhold(pe, p, e, reason);
                                break;
                        }
}

/* Programming a memory controller is a write to a register of the whole package: it needs
 * leases on every online CPU of the package, which the daemon journals and puts back when they
 * end. What it refuses is withheld with its reason. */
static int program_imc_units(PackageEvents *pe, pmugate *c, const pmugate_info *info) {
        int r;

        for (size_t p = 0; p < pe->n_packages; p++) {
                _cleanup_free_ uint32_t *cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
                uint32_t *grown;
                size_t n = 0;
                bool any = false;
                char reason[600];

                if (!cpus)
                        return -ENOMEM;
                for (size_t i = 0; i < pe->n_sources; i++)
                        any = any || (pe->sources[i].package == p && pe->sources[i].is_pci);
                if (!any)
                        continue;
                for (size_t i = 0; i < info->n_cpus; i++)
                        if (info->cpus[i].online && info->cpus[i].package == pe->packages[p])
                                cpus[n++] = info->cpus[i].cpu;
                r = pmugate_lease(c, cpus, n);
                if (r < 0 && pmugate_last_error(c)->code <= 0)
                        return r;
                if (r < 0) {
                        (void) snprintf(reason, sizeof(reason), "programming the memory controller of "
                                        "package %d needs leases on all of its CPUs: %s", pe->packages[p],
                                        package_events_daemon_reason(c));
                        withhold_pci(pe, p, reason);
                        continue;
                }
                grown = reallocarray(pe->leased, pe->n_leased + n, sizeof(uint32_t));
                if (!grown)
                        return -ENOMEM;
                pe->leased = grown;
                memcpy(pe->leased + pe->n_leased, cpus, n * sizeof(uint32_t));
                pe->n_leased += n;

                pmugate_batch_clear(pe->batch);
                for (size_t i = 0; i < pe->n_sources; i++) {
                        const PackageSource *s = &pe->sources[i];
                        uint32_t ctl = IMC_CTL0 + IMC_CTL_STRIDE * ((s->msr - IMC_CTR0) / IMC_CTR_STRIDE);

                        if (s->package != p || !s->is_pci)
                                continue;
                        r = pmugate_batch_write_pci(pe->batch, s->target, ctl,
                                                    pe->kinds[s->event] == PACKAGE_EVENT_CAS_READ ?
                                                    IMC_CAS_READ : IMC_CAS_WRITE);
                        if (r < 0)
                                return r;
                }
                r = pmugate_batch_run(c, pe->batch);
                if (r < 0 && pmugate_last_error(c)->code <= 0)
                        return r;
                for (size_t k = 0; r >= 0 && k < pmugate_batch_size(pe->batch); k++)
                        if (pmugate_batch_result(pe->batch, k, NULL) < 0)
                                r = pmugate_batch_result(pe->batch, k, NULL);
                if (r < 0) {
                        (void) snprintf(reason, sizeof(reason), "programming the memory controller of "
                                        "package %d failed: %s", pe->packages[p],
                                        pmugate_last_error(c)->code > 0 ? package_events_daemon_reason(c)
                                                                        : pmugate_strerror(r));
                        withhold_pci(pe, p, reason);
                }
        }
        return 0;
}

int package_events_stop(PackageEvents *pe, pmugate *c) {
        int r = 0;

        if (pe->n_leased > 0)
                r = pmugate_release(c, pe->leased, pe->n_leased);
        pe->n_leased = 0;
        return r;
}

int package_events_start(PackageEvents *pe, pmugate *c, const pmugate_info *info) {
        const char *model = info->model_key;
        _cleanup_free_ uint64_t *values = NULL;
        size_t used = 0;
        int r;

        if (!pe->batch) {
                r = pmugate_batch_new(&pe->batch);
                if (r < 0)
                        return r;
        }
        pe->result_index = calloc(pe->n_sources ?: 1, sizeof(int));
        values = calloc(pe->n_sources ?: 1, sizeof(uint64_t));
        pe->tsc_index = calloc(2 * pe->n_packages ?: 1, sizeof(int));
        pe->tsc_last = calloc(pe->n_packages ?: 1, sizeof(uint64_t));
        pe->tsc_ticks = calloc(pe->n_packages ?: 1, sizeof(uint64_t));
        pe->tsc_mark = calloc(pe->n_packages ?: 1, sizeof(uint64_t));
        if (!pe->result_index || !values || !pe->tsc_index || !pe->tsc_last || !pe->tsc_ticks || !pe->tsc_mark)
                return -ENOMEM;
        pe->read_tsc = info->tsc_hz > 0 && tsc_readable(info);
        r = read_rapl_units(pe, c, model);
        if (r < 0)
                return r;
        r = program_imc_units(pe, c, info);
        if (r < 0)
                return r;
        r = package_amd_program(pe, c, info);
        if (r < 0)
                return r;
        r = run_dropping(pe, c, values);
        if (r < 0)
                return r;
        for (size_t i = 0; i < pe->n_sources; i++)
                pe->sources[i].last = values[i];

        /* "A, B on package 1: why; C on package 0: why", events sharing a reason named together */
        pe->note[0] = '\0';
        for (size_t p = 0; p < pe->n_packages; p++)
                for (size_t e = 0; e < pe->n_events; e++) {
                        const char *why = pe->withheld[p * pe->n_events + e], *next;
                        int k;

                        if (!why || used >= sizeof(pe->note))
                                continue;
                        next = e + 1 < pe->n_events ? pe->withheld[p * pe->n_events + e + 1] : NULL;
                        if (next && strcmp(next, why) == 0)
                                k = snprintf(pe->note + used, sizeof(pe->note) - used, "%s%s, ",
                                             used && pe->note[used - 2] != ',' ? "; " : "", pe->names[e]);
                        else
                                k = snprintf(pe->note + used, sizeof(pe->note) - used,
                                             "%s%s on package %d: %s",
                                             used && pe->note[used - 2] != ',' ? "; " : "", pe->names[e],
                                             pe->packages[p], why);
                        used = k < 0 ? sizeof(pe->note) : MIN(used + (size_t) k, sizeof(pe->note));
                }
        return 0;
}

int package_events_sample(PackageEvents *pe, pmugate *c) {
        int r;

        if (pe->n_sources == 0)
                return 0;
        r = pmugate_batch_run(c, pe->batch);
        if (r < 0)
                return r;
        for (size_t q = 0; pe->read_tsc && q < pe->n_packages; q++) {
                uint64_t now;

                if (package_tsc(pe, q, &now) < 0 || now < pe->tsc_last[q]) {
                        /* a window that cannot be timed is timed by none: back to the core's */
                        pe->read_tsc = false;
                        break;
                }
                pe->tsc_ticks[q] += now - pe->tsc_last[q];
                pe->tsc_last[q] = now;
        }
        for (size_t i = 0; i < pe->n_sources; i++) {
                PackageSource *s = &pe->sources[i];
                uint64_t v, delta;

                if (pmugate_batch_result(pe->batch, (size_t) pe->result_index[i], &v) < 0)
                        continue;
                delta = pmugate_counter_delta(s->last, v, s->width);
                s->raw += delta;
                s->total += (double) delta * s->factor;
                s->last = v;
        }
        return 0;
}

double package_events_value(const PackageEvents *pe, size_t p, size_t e, bool interval) {
        double sum = 0.0;

        if (pe->withheld[p * pe->n_events + e])
                return NAN;
        for (size_t i = 0; i < pe->n_sources; i++)
                if (pe->sources[i].package == p && pe->sources[i].event == e)
                        sum += pe->sources[i].total - (interval ? pe->sources[i].mark : 0.0);
        return sum;
}

uint64_t package_events_raw(const PackageEvents *pe, size_t p, size_t e, bool interval) {
        uint64_t sum = 0;

        for (size_t i = 0; i < pe->n_sources; i++)
                if (pe->sources[i].package == p && pe->sources[i].event == e)
                        sum += pe->sources[i].raw - (interval ? pe->sources[i].raw_mark : 0);
        return sum;
}

uint64_t package_events_ticks(const PackageEvents *pe, size_t p, bool interval) {
        if (!pe->read_tsc || p >= pe->n_packages)
                return 0;
        return pe->tsc_ticks[p] - (interval ? pe->tsc_mark[p] : 0);
}

void package_events_mark(PackageEvents *pe) {
        for (size_t q = 0; pe->tsc_mark && q < pe->n_packages; q++)
                pe->tsc_mark[q] = pe->tsc_ticks[q];
        for (size_t i = 0; i < pe->n_sources; i++) {
                pe->sources[i].mark = pe->sources[i].total;
                pe->sources[i].raw_mark = pe->sources[i].raw;
        }
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Package events of a measurement: memory-controller traffic from the daemon's package
 * counters and RAPL energy, counted per package beside the core events (docs/GROUPS.md)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate/pmugate.h"

typedef enum PackageEventKind {
        PACKAGE_EVENT_CAS_READ,         /* UNC_M_CAS_COUNT.RD: 64-byte lines read from DRAM */
        PACKAGE_EVENT_CAS_WRITE,        /* UNC_M_CAS_COUNT.WR */
        PACKAGE_EVENT_DF_READ,          /* AMD data fabric: 64-byte DRAM read beats, all channels */
        PACKAGE_EVENT_DF_WRITE,         /* AMD data fabric: DRAM write beats */
        PACKAGE_EVENT_L3_ACCESS,        /* AMD L3: every coherent lookup, summed over the CCXs */
        PACKAGE_EVENT_L3_MISS,          /* AMD L3: lookups that missed */
        PACKAGE_EVENT_ENERGY_PACKAGE,   /* PWR_PKG_ENERGY: joules */
        PACKAGE_EVENT_ENERGY_DRAM,      /* PWR_DRAM_ENERGY */
        PACKAGE_EVENT_ENERGY_PP0,       /* PWR_PP0_ENERGY */
        PACKAGE_EVENT_ENERGY_PLATFORM,  /* PWR_PLATFORM_ENERGY */
        _PACKAGE_EVENT_KIND_MAX,
} PackageEventKind;

#define PACKAGE_EVENTS_MAX 16U

/* One reading a sample takes: a package counter, or a RAPL energy MSR on a CPU of the package. */
typedef struct PackageSource {
        size_t package;                 /* index into PackageEvents.packages */
        size_t event;
        bool is_counter;
        bool is_pci;                    /* a Skylake-SP IMC channel programmed through PCI */
        bool is_programmed;             /* an AMD L3 or data-fabric counter this client programs */
        int32_t ccx;                    /* its L3's CCX; -1 for the package's data fabric */
        uint32_t ctl;                   /* its control MSR */
        uint64_t ctl_value;             /* what is written there */
        uint32_t target;                /* counter index, the CPU an MSR is read on, or a unit */
        uint32_t msr;                   /* MSR, or the unit's counter offset */
        unsigned width;
        double factor;                  /* event units per count */
        uint64_t raw;                   /* counts since start */
        uint64_t raw_mark;
        uint64_t last;
        double total;                   /* event units since start */
        double mark;                    /* total at the start of the current interval */
} PackageSource;

typedef struct PackageEvents {
        char *names[PACKAGE_EVENTS_MAX];
        PackageEventKind kinds[PACKAGE_EVENTS_MAX];
        int variables[PACKAGE_EVENTS_MAX];      /* formula variables, set by the caller */
        size_t n_events;

        int32_t *packages;              /* the packages of the measured CPUs, ascending */
        uint32_t *package_cpu;          /* per package: the first measured CPU in it */
        size_t n_packages;

        PackageSource *sources;
        size_t n_sources;
        char **withheld;                /* per package x event: why it is not counted, or NULL */
        char note[1024];                /* one line naming what is withheld and why; "" for nothing */
        pmugate_batch *batch;
        int *result_index;              /* per source: its op in batch */
        uint32_t *leased;               /* CPUs leased to program memory controllers */
        size_t n_leased;
        /* The TSC of each package's first measured CPU, read in the same batch as its package
         * events: their own counted window, which differs from the core counters' by the round
         * trip between the two batches. Off when the TSC's rate is unknown or the read refused. */
        bool read_tsc;
        int *tsc_index;                 /* per package: its TSC reads before and after its sources */
        uint64_t *tsc_last;             /* per package: when its sources were last read (TSC) */
        uint64_t *tsc_ticks;            /* per package: TSC ticks of its windows since start */
        uint64_t *tsc_mark;             /* per package: tsc_ticks at the start of the interval */
} PackageEvents;

/* Whether name is a package event; its kind in ret_kind (may be NULL). */
bool package_event_lookup(const char *name, PackageEventKind *ret_kind);

/* The unit its count is in: "J" for energy, "" for memory lines. */
const char *package_event_unit(PackageEventKind kind);

PackageEvents *package_events_free(PackageEvents *pe);

/* Adds an event by name (package_event_lookup() must know it); -EEXIST when listed twice. */
int package_events_add(PackageEvents **pe, const char *name);

/* Decides what to read for every event on every package of the measured CPUs: the daemon's
 * memory-controller counters of that package, or its RAPL MSR. What the machine cannot give
 * is withheld with a reason; nothing here talks to the daemon. */
int package_events_plan(PackageEvents *pe, const pmugate_info *info, const uint32_t *cpus, size_t n_cpus);

/* Reads the RAPL units, programs the memory controllers' PCI units where the daemon serves no
 * counters (leasing their packages' CPUs), then tries every reading: a reading the daemon
 * refuses (job scope, class) or fails is withheld with the daemon's reason and the rest are
 * kept. Takes the first values. Returns negative errno only when the connection fails. */
int package_events_start(PackageEvents *pe, pmugate *c, const pmugate_info *info);

/* Releases the leases taken to program memory controllers; the daemon then puts their
 * registers back. */
int package_events_stop(PackageEvents *pe, pmugate *c);

/* One round trip reading every kept source; accumulates across wraps. */
int package_events_sample(PackageEvents *pe, pmugate *c);

/* Sum of event e on package p since the start (interval: since the mark), NaN when withheld. */
double package_events_value(const PackageEvents *pe, size_t p, size_t e, bool interval);

/* Counts the sources of event e on package p counted (interval: since the mark). */
uint64_t package_events_raw(const PackageEvents *pe, size_t p, size_t e, bool interval);

/* Shared by package-events.c and package-amd.c (package-sources.c): records why event e is not
 * counted on package p (the f form formats it, keeping the sources; the other drops event e's
 * sources on p first); adds or drops a source; leases CPUs for programming and remembers them
 * for package_events_stop(); the daemon's last refusal without its "op N: " prefix. */
int package_events_withholdf(PackageEvents *pe, size_t p, size_t e, const char *format, ...)
        __attribute__((format(printf, 4, 5)));
int package_events_withhold(PackageEvents *pe, size_t p, size_t e, const char *reason);
void package_events_drop_source(PackageEvents *pe, size_t i);
int package_events_add_source(PackageEvents *pe, const PackageSource *s);
int package_events_lease(PackageEvents *pe, pmugate *c, const uint32_t *cpus, size_t n);
const char *package_events_daemon_reason(pmugate *c);

/* AMD L3 and data-fabric events (package-amd.c). */
bool package_amd_kind(PackageEventKind kind);
int package_amd_plan(PackageEvents *pe, const pmugate_info *info, const uint32_t *cpus, size_t n_cpus,
                     size_t p, size_t e);
int package_amd_program(PackageEvents *pe, pmugate *c, const pmugate_info *info);

/* TSC ticks package p's events counted (interval: since the mark); 0 when not timed. */
uint64_t package_events_ticks(const PackageEvents *pe, size_t p, bool interval);

/* Moves the interval mark to now. */
void package_events_mark(PackageEvents *pe);

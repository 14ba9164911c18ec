/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How this node programs the PMU: with MSR and PCI writes (the dev or sim backend), or through
 * the kernel's perf_event_open, and why. 'auto' takes MSRs where they can be written and perf
 * where not, as Intel PCM decides: kernel lockdown, the msr driver absent, or a write of a
 * counter's own value refused.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "pmugate-limits.h"

typedef enum BackendCounters {
        BACKEND_COUNTERS_MSR,
        BACKEND_COUNTERS_PERF,
        BACKEND_COUNTERS_NONE,
        _BACKEND_COUNTERS_MAX,
} BackendCounters;

typedef enum BackendWanted {
        BACKEND_WANTED_AUTO,
        BACKEND_WANTED_MSR,
        BACKEND_WANTED_PERF,
        _BACKEND_WANTED_MAX,
} BackendWanted;

typedef struct BackendChoice {
        BackendCounters counters;
        BackendWanted wanted;           /* what the administrator asked, for hello */
        char reason[PMUGATE_REASON_MAX];
        bool msr_reads;                 /* the msr files are open: RAPL and the like stay readable */
} BackendChoice;

/* The register backend_choose() writes with its own value: PERFEVTSEL0, or AMD's PerfEvtSel0
 * of the extended core PMU. */
#define BACKEND_PROBE_MSR_INTEL 0x186U
#define BACKEND_PROBE_MSR_AMD 0xC0010200U

typedef struct BackendProbe {
        uint32_t cpu;                   /* the first online CPU */
        uint32_t reg;                   /* BACKEND_PROBE_MSR_INTEL or _AMD */
        const char *reg_name;           /* for the reason: "PERFEVTSEL0" */
        /* Where the choice came from, for the reason: "pmugate.conf" or "--counters". */
        const char *wanted_by;
        /* NULL when perf_event_open can serve; else why not ("none" results when MSRs cannot
         * be written either). */
        const char *perf_unusable;
        /* Set on a machine that has no MSRs at all (ARM), saying so: auto and perf take perf
         * with it as the reason, msr is refused with it; nothing is probed. */
        const char *no_msrs;
} BackendProbe;

/* Decides how counters are programmed. root is where /sys is (lockdown is read from
 * <root>/sys/kernel/security/lockdown unless the backend is simulated: a simulator says its
 * own lockdown in msr_backend->lockdown). msr_backend may be NULL (no register backend at all).
 * Under BACKEND_WANTED_MSR the choice is msr whatever the probe finds; 1 is returned when the
 * probe found MSR writes refused (the caller warns with ret->reason), else 0. Returns a
 * negative errno only when the msr driver is needed (wanted msr) and absent, or the machine has
 * no MSRs (probe->no_msrs), ret->reason saying which. */
int backend_choose(const char *root, Backend *msr_backend, const BackendProbe *probe, BackendWanted wanted,
                   BackendChoice *ret);

const char *backend_counters_to_string(BackendCounters c);
const char *backend_wanted_to_string(BackendWanted w);
/* Returns the enum value, or -EINVAL for a word that names none. */
int backend_wanted_from_string(const char *s);

/* Reads the kernel's lockdown file at path and puts its bracketed word ("none", "integrity",
 * "confidentiality") into ret. Returns 0, -ENOENT when there is no such file (no lockdown
 * support: no lockdown), or another negative errno for a file that is not the kernel's (not
 * regular, a symbolic link, too long, no single bracketed word): its state is then unknown. */
int backend_lockdown_read(const char *path, char ret[static PMUGATE_LOCKDOWN_WORD_MAX]);

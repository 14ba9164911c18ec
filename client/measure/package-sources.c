/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Package events' sources and withheld events: what the Intel planning (package-events.c)
 * and the AMD L3 and data-fabric planning (package-amd.c) both record, so that neither
 * calls the other's helpers
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "measure/package-events.h"

_printf_(4, 5)
int package_events_withholdf(PackageEvents *pe, size_t p, size_t e, const char *format, ...) {
        char **slot = &pe->withheld[p * pe->n_events + e];
        va_list ap;
        int r;

        if (*slot)
                return 0;
        va_start(ap, format);
        r = vasprintf(slot, format, ap);
        va_end(ap);
        if (r < 0) {
                *slot = NULL;
                return -ENOMEM;
        }
        return 0;
}

int package_events_add_source(PackageEvents *pe, const PackageSource *s) {
        PackageSource *n = reallocarray(pe->sources, pe->n_sources + 1, sizeof(PackageSource));

        if (!n)
                return -ENOMEM;
        pe->sources = n;
        pe->sources[pe->n_sources++] = *s;
        return 0;
}

/* The daemon's reason without its "op N: " prefix, which means nothing to the user. */
const char *package_events_daemon_reason(pmugate *c) {
        const pmugate_error *err = pmugate_last_error(c);
        const char *colon;

        if (!err || !err->reason[0])
                return "refused";
        colon = strncmp(err->reason, "op ", 3) == 0 ? strstr(err->reason, ": ") : NULL;
        return colon ? colon + 2 : err->reason;
}

void package_events_drop_source(PackageEvents *pe, size_t i) {
        memmove(pe->sources + i, pe->sources + i + 1, (pe->n_sources - i - 1) * sizeof(PackageSource));
        pe->n_sources--;
}

/* Drops every source of event e on package p (one of them was refused: the event is not whole). */
int package_events_withhold(PackageEvents *pe, size_t p, size_t e, const char *reason) {
        for (size_t i = pe->n_sources; i > 0; i--)
                if (pe->sources[i - 1].package == p && pe->sources[i - 1].event == e)
                        package_events_drop_source(pe, i - 1);
        return package_events_withholdf(pe, p, e, "%s", reason);
}

int package_events_lease(PackageEvents *pe, pmugate *c, const uint32_t *cpus, size_t n) {
        uint32_t *grown;
        int r = pmugate_lease(c, cpus, n);

        if (r < 0)
                return r;
        grown = reallocarray(pe->leased, pe->n_leased + n ?: 1, sizeof(uint32_t));
        if (!grown)
                return -ENOMEM;
        pe->leased = grown;
        memcpy(pe->leased + pe->n_leased, cpus, n * sizeof(uint32_t));
        pe->n_leased += n;
        return 0;
}

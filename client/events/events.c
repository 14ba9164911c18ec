/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events: resolution through pmugate's table (the events its recipes use, with counter
 * restrictions) and libpfm4 (every other event of the model), plus modifiers and raw codes
 */
#include <ctype.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/reason.h"
#include "events/event-list.h"
#include "events/event-models.h"
#include "events/event-table.h"
#include "events/events.h"
#include "macro.h"

#define RAW_HEX_DIGITS_MAX 16U
#define LIBPFM_CODES_MAX 4U

static bool model_is_amd(const char *model) {
        return (event_table_model(model) & EVENT_MODEL_AMD) != 0;
}

/* The model's event for a generic alias; NULL when alias is not generic or the model has none. */
static const char *generic_name(const char *model, const char *alias) {
        const char *name, *unused;
        ssize_t i = event_generic_index(alias);

        if (i < 0 || !event_generic_alias(model, (size_t) i, &unused, &name))
                return NULL;
        return name;
}

static bool model_is_arm(const char *model) {
        return (event_table_model(model) & EVENT_MODEL_GRACE) != 0;
}

/* The EVTSEL bits an event's config may hold on model; on ARM the event number alone. */
static uint64_t config_mask(const char *model) {
        if (model_is_arm(model))
                return EVENT_CONFIG_MASK_ARM;
        return model_is_amd(model) ? EVENT_CONFIG_MASK_AMD : EVENT_CONFIG_MASK;
}

bool event_model_known(const char *model) {
        return event_table_model(model) != 0;
}

int event_variable_name(const char *event, char *buf, size_t size) {
        size_t n = strlen(event);

        if (n + 1 > size)
                return -ENOBUFS;
        for (size_t i = 0; i < n; i++) {
                char ch = event[i];
                bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                            ch == '_' || ch == '.';

                buf[i] = keep ? ch : '_';
        }
        buf[n] = '\0';
        return 0;
}

/* "UOPS_DECODED.DEC0" -> "spr::UOPS_DECODED:DEC0"; libpfm4 joins the parts after the first
 * dot with '_' ("IDQ_UOPS_NOT_DELIVERED:CYCLES_0_UOPS_DELIV_CORE"). */
static int libpfm_name(const char *pmu, const char *name, char *buf, size_t size) {
        char *p;
        int n;

        n = snprintf(buf, size, "%s::%s", pmu, name);
        if (n < 0 || (size_t) n >= size)
                return -ENOBUFS;
        p = strchr(buf + strlen(pmu) + 2, '.');
        if (p) {
                *p = ':';
                for (p++; *p; p++)
                        if (*p == '.')
                                *p = '_';
        }
        return 0;
}

/* name is the upper-case spelling looked up; shown is the user's, for reasons. */
static int resolve_libpfm(const char *model, const char *name, const char *shown, EventDesc *d,
                          char *reterr_reason, size_t reason_size) {
        const char *pmu = event_libpfm_pmu(model);
        char spec[EVENT_NAME_MAX + 16];
        uint64_t codes[LIBPFM_CODES_MAX] = {};
        pfm_pmu_encode_arg_t arg = {
                .codes = codes,
                .count = LIBPFM_CODES_MAX,
                .size = sizeof(arg),
        };
        int r;

        char hint[EVENT_SUGGESTIONS_MAX];

        if (model_is_arm(model)) {
                event_suggest(model, shown, hint, sizeof(hint));
                return reason_fail(reterr_reason, reason_size, -ENOENT,
                                   "unknown event '%s' for %s%s (pmugate's table has the Arm common events the "
                                   "core implements; give another by its number, as r%s)",
                                   shown, model, hint, "NNNN");
        }
        if (!event_libpfm_ready(model)) {
                event_suggest(model, shown, hint, sizeof(hint));
                return reason_fail(reterr_reason, reason_size, -ENOENT,
                                   "unknown event '%s' for %s%s (pmugate's table does not list it, and "
                                   "libpfm4 has no active %s PMU: set LIBPFM_FORCE_PMU=%s to use its "
                                   "event list)",
                                   shown, model, hint, model, pmu ?: model);
        }
        if (libpfm_name(pmu, name, spec, sizeof(spec)) < 0)
                return reason_fail(reterr_reason, reason_size, -EINVAL, "event name '%s' is too long",
                                   shown);
        r = pfm_get_os_event_encoding(spec, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
        if (r != PFM_SUCCESS) {
                event_suggest(model, shown, hint, sizeof(hint));
                return reason_fail(reterr_reason, reason_size, -ENOENT,
                                   "unknown event '%s' for %s%s; 'pmugate list events' shows them all",
                                   shown, model, hint);
        }
        if (arg.count != 1)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "event '%s' needs extra registers (offcore response, ...), "
                                   "which pmugate does not program", shown);
        if (codes[0] & EVTSEL_ANY)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "event '%s' counts for both SMT threads (AnyThread), "
                                   "which pmugate's allowlist does not permit", shown);
        d->source = EVENT_SOURCE_LIBPFM;
        d->config = codes[0] & config_mask(model);
        d->gp_ok = true;
        return 0;
}

static int parse_hex(const char *s, uint64_t *ret) {
        size_t n = strlen(s);
        char *end;

        if (n == 0 || n > RAW_HEX_DIGITS_MAX || strspn(s, "0123456789abcdefABCDEF") != n)
                return -EINVAL;
        *ret = strtoull(s, &end, 16);
        return 0;
}

/* Counter restrictions of a table event with the same encoding apply to a libpfm4 or raw one. */
static void inherit_restrictions(const char *model, EventDesc *d) {
        unsigned bit = event_table_model(model);
        const EventTableEntry *table;
        size_t n;

        table = event_table_entries(&n);
        for (size_t i = 0; i < n; i++)
                if ((table[i].models & bit) && table[i].gp_ok && table[i].fixed < 0 && table[i].config == d->config) {
                        d->gp_mask = table[i].gp_mask;
                        return;
                }
}

static int apply_modifier(EventDesc *d, const char *mod, bool *ret_filtered, char *reterr_reason, size_t reason_size) {
        uint64_t cmask;
        char *end;

        if (d->kind == EVENT_PERF_METRICS)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "'%s': PERF_METRICS counts take no modifiers; they follow TOPDOWN.SLOTS", d->name);
        if (strcasecmp(mod, "u") == 0) {
                d->usr = true;
                d->os = false;
                return 0;
        }
        if (strcasecmp(mod, "k") == 0) {
                d->usr = false;
                d->os = true;
                return 0;
        }
        *ret_filtered = true;
        if (strcasecmp(mod, "e") == 0) {
                d->config |= EVTSEL_EDGE;
                return 0;
        }
        if (strcasecmp(mod, "i") == 0) {
                d->config |= EVTSEL_INV;
                return 0;
        }
        if (strncasecmp(mod, "c=", 2) == 0) {
                errno = 0;
                cmask = strtoull(mod + 2, &end, 0);
                if (errno != 0 || end == mod + 2 || *end != '\0' || cmask > EVTSEL_CMASK_MAX)
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "'%s': c= needs a counter mask from 0 to 255",
                                           d->name);
                d->config = (d->config & ~((uint64_t) EVTSEL_CMASK_MAX << EVTSEL_CMASK_SHIFT)) |
                            cmask << EVTSEL_CMASK_SHIFT;
                return 0;
        }
        if (strncasecmp(mod, "umask=", 6) == 0) {
                uint64_t umask;

                /* perf's cpu@EVENT,umask=N@: the event's code with another unit mask, which
                 * TopDown formulas use (EXE_ACTIVITY.3_PORTS_UTIL,umask=0x80 on Ice Lake) */
                errno = 0;
                umask = strtoull(mod + 6, &end, 0);
                if (errno != 0 || end == mod + 6 || *end != '\0' || umask > EVTSEL_UMASK_MAX)
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "'%s': umask= needs a unit mask from 0 to 255", d->name);
                d->config = (d->config & ~((uint64_t) EVTSEL_UMASK_MAX << EVTSEL_UMASK_SHIFT)) |
                            umask << EVTSEL_UMASK_SHIFT;
                return 0;
        }
        return reason_fail(reterr_reason, reason_size, -EINVAL,
                           "'%s': unknown modifier '%s' (known: c=N, e, i, umask=N, u, k)", d->name, mod);
}

/* Resolves the event part of a name, case-insensitively and with perf's generic names, and
 * writes its one spelling to canonical (EVENT_NAME_MAX): the table's, libpfm4's upper case, or
 * "r" and lower-case hex. */
static int resolve_base(const char *model, const char *base, EventDesc *d, char *canonical,
                        char *reterr_reason, size_t reason_size) {
        const EventTableEntry *e;
        uint64_t raw;
        int r;

        if (base[0] == 'r' && parse_hex(base + 1, &raw) == 0) {
                for (size_t i = 0; base[i]; i++)
                        canonical[i] = (char) tolower((unsigned char) base[i]);
                canonical[strlen(base)] = '\0';
                if (raw & ~config_mask(model))
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           model_is_arm(model) ?
                                           "raw event '%s' is more than a 16-bit Arm event number" :
                                           "raw event '%s' sets bits other than event, umask, edge, inv and cmask",
                                           base);
                d->source = EVENT_SOURCE_RAW;
                d->config = raw;
                d->gp_ok = true;
                inherit_restrictions(model, d);
                return 0;
        }
        e = event_table_lookup(model, generic_name(model, base) ?: base);
        if (e) {
                (void) snprintf(canonical, EVENT_NAME_MAX, "%s", e->name);
                d->source = EVENT_SOURCE_TABLE;
                d->config = e->config;
                d->fixed = e->fixed;
                d->gp_ok = e->gp_ok;
                d->gp_mask = e->gp_mask;
                d->frontend = e->frontend;
                if (e->metrics_field >= 0) {
                        d->kind = EVENT_PERF_METRICS;
                        d->metrics_field = (unsigned) e->metrics_field;
                }
                return 0;
        }
        if (strncasecmp(base, "topdown-", strlen("topdown-")) == 0)
                return reason_fail(reterr_reason, reason_size, -ENOENT,
                                   "%s has no PERF_METRICS count '%s'", model, base);
        if (event_generic_index(base) >= 0) {
                /* perf's names for events outside pmugate's table (cache-misses) come from libpfm4 */
                if (!generic_name(model, base))
                        return reason_fail(reterr_reason, reason_size, -ENOENT, "%s has no event for '%s'",
                                           model, base);
                (void) snprintf(canonical, EVENT_NAME_MAX, "%s", generic_name(model, base));
                r = resolve_libpfm(model, canonical, base, d, reterr_reason, reason_size);
                if (r == -ENOENT && event_generic_older_name(model, base)) {
                        (void) snprintf(canonical, EVENT_NAME_MAX, "%s", event_generic_older_name(model, base));
                        r = resolve_libpfm(model, canonical, base, d, reterr_reason, reason_size);
                }
                return r;
        }
        for (size_t i = 0; base[i]; i++)
                canonical[i] = (char) toupper((unsigned char) base[i]);
        canonical[strlen(base)] = '\0';
        r = resolve_libpfm(model, canonical, base, d, reterr_reason, reason_size);
        return r;
}

int event_resolve_software(const char *text, EventDesc *ret) {
        static const struct {
                const char *name;
                const char *alias;
                uint64_t config;
        } software[] = {
                { "cpu-clock", NULL, PERF_COUNT_SW_CPU_CLOCK },
                { "task-clock", NULL, PERF_COUNT_SW_TASK_CLOCK },
                { "page-faults", "faults", PERF_COUNT_SW_PAGE_FAULTS },
                { "context-switches", "cs", PERF_COUNT_SW_CONTEXT_SWITCHES },
                { "cpu-migrations", "migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
                { "minor-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MIN },
                { "major-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
        };

        if (!text || !ret)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(software); i++)
                if (strcasecmp(text, software[i].name) == 0 ||
                    (software[i].alias && strcasecmp(text, software[i].alias) == 0)) {
                        *ret = (EventDesc) {
                                .kind = EVENT_SOFTWARE,
                                .fixed = -1,
                                .config = software[i].config,
                                .usr = true,
                                .os = true,
                        };
                        (void) snprintf(ret->name, sizeof(ret->name), "%s", software[i].name);
                        return 0;
                }
        return -ENOENT;
}

int event_resolve(const char *model, const char *text, EventDesc *ret, char *reterr_reason, size_t reason_size) {
        char buf[EVENT_NAME_MAX], canonical[EVENT_NAME_MAX], *saveptr = NULL, *base, *mod;
        bool filtered = false;
        EventDesc d = {
                .kind = EVENT_COUNTER,
                .fixed = -1,
                .gp_mask = GP_MASK_ALL,
                .usr = true,
                .os = true,
        };
        int r;

        if (!model || !text || !ret)
                return -EINVAL;
        if (!event_model_known(model))
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "pmugate knows no events of CPU model '%s'", model);
        if (text[0] == '\0' || strlen(text) >= EVENT_NAME_MAX)
                return reason_fail(reterr_reason, reason_size, -EINVAL, "event names are 1 to %u characters",
                                   EVENT_NAME_MAX - 1);
        (void) snprintf(d.name, sizeof(d.name), "%s", text);
        (void) snprintf(buf, sizeof(buf), "%s", text);

        base = strtok_r(buf, ":", &saveptr);
        if (!base)
                return reason_fail(reterr_reason, reason_size, -EINVAL, "'%s' names no event", text);
        r = resolve_base(model, base, &d, canonical, reterr_reason, reason_size);
        if (r < 0)
                return r;
        while ((mod = strtok_r(NULL, ":", &saveptr))) {
                size_t n = strlen(canonical);

                /* an Arm event is its number: only the exception levels filter it */
                if (model_is_arm(model) && strcasecmp(mod, "u") != 0 && strcasecmp(mod, "k") != 0)
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "'%s': an Arm event takes only the modifiers u and k", text);

                r = apply_modifier(&d, mod, &filtered, reterr_reason, reason_size);
                if (r < 0)
                        return r;
                if (n + 1 + strlen(mod) >= sizeof(canonical))
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "event name '%s' is too long", text);
                canonical[n++] = ':';
                for (size_t i = 0; mod[i]; i++)
                        canonical[n++] = (char) tolower((unsigned char) mod[i]);
                canonical[n] = '\0';
        }
        /* one spelling whatever the case or alias, so that an event is listed and shown once */
        (void) snprintf(d.name, sizeof(d.name), "%s", canonical);
        if (filtered && d.fixed >= 0) {
                /* a fixed counter has no cmask, edge or invert: use the GP encoding */
                if (!d.gp_ok)
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "'%s' counts only on fixed counter %d, which takes no c=, e or i",
                                           text, d.fixed);
                d.fixed = -1;
        }
        *ret = d;
        return 0;
}

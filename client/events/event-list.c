/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event listing and suggestions: perf's generic names, pmugate's table and libpfm4's list
 */
#include <ctype.h>
#include <errno.h>
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "events/event-list.h"
#include "events/event-models.h"
#include "events/event-table.h"
#include "macro.h"

#define DESCRIPTION_MAX 512U

/* Events of the table whose meaning libpfm4 does not describe under the same name. */
static const struct {
        const char *name;
        const char *description;
} table_descriptions[] = {
        { "topdown-retiring", "Slots that retired a uop (PERF_METRICS byte 0 times TOPDOWN.SLOTS)" },
        { "topdown-bad-spec", "Slots wasted by bad speculation (PERF_METRICS byte 1 times TOPDOWN.SLOTS)" },
        { "topdown-fe-bound", "Slots the frontend left empty (PERF_METRICS byte 2 times TOPDOWN.SLOTS)" },
        { "topdown-be-bound", "Slots stalled by the backend (PERF_METRICS byte 3 times TOPDOWN.SLOTS)" },
        { "topdown-heavy-ops", "Slots retiring heavy operations (PERF_METRICS byte 4 times TOPDOWN.SLOTS)" },
        { "topdown-br-mispredict",
         "Slots wasted by branch mispredictions (PERF_METRICS byte 5 times TOPDOWN.SLOTS)" },
        { "topdown-fetch-lat", "Slots lost to fetch latency (PERF_METRICS byte 6 times TOPDOWN.SLOTS)" },
        { "topdown-mem-bound", "Slots stalled on memory (PERF_METRICS byte 7 times TOPDOWN.SLOTS)" },
        { "INST_RETIRED.ANY", "Instructions retired (fixed counter 0)" },
        { "CPU_CLK_UNHALTED.THREAD", "Core cycles while the thread is not halted (fixed counter 1)" },
        { "CPU_CLK_UNHALTED.REF_TSC", "Reference cycles at the TSC rate while the thread is not halted "
                                      "(fixed counter 2)" },
        { "TOPDOWN.SLOTS", "Issue slots of the core available to the thread (fixed counter 3)" },
};

static const char *table_description(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(table_descriptions); i++)
                if (strcmp(table_descriptions[i].name, name) == 0)
                        return table_descriptions[i].description;
        return NULL;
}

static int libpfm_pmu_of(const char *model, pfm_pmu_info_t *ret) {
        const char *name = event_libpfm_pmu(model);

        if (!name || !event_libpfm_ready(model))
                return -ENOENT;
        for (int p = 0; p < PFM_PMU_MAX; p++) {
                pfm_pmu_info_t info = { .size = sizeof(info) };

                if (pfm_get_pmu_info((pfm_pmu_t) p, &info) == PFM_SUCCESS && info.name && info.is_present &&
                    strcmp(info.name, name) == 0) {
                        *ret = info;
                        return 0;
                }
        }
        return -ENOENT;
}

/* libpfm4's description of "EVENT.UMASK" (the umask's own, else the event's), or NULL. */
static const char *libpfm_description(const char *model, const char *name) {
        pfm_pmu_info_t pmu;
        pfm_event_info_t info = { .size = sizeof(info) };
        char spec[EVENT_NAME_MAX + 16], umask[EVENT_NAME_MAX];
        const char *dot = strchr(name, '.');
        int idx;

        if (!dot || libpfm_pmu_of(model, &pmu) < 0)
                return NULL;
        (void) snprintf(spec, sizeof(spec), "%s::%.*s", pmu.name, (int) (dot - name), name);
        (void) snprintf(umask, sizeof(umask), "%s", dot + 1);
        for (char *p = umask; *p; p++)
                if (*p == '.')
                        *p = '_';
        idx = pfm_find_event(spec);
        if (idx < 0 || pfm_get_event_info(idx, PFM_OS_NONE, &info) != PFM_SUCCESS)
                return NULL;
        for (int a = 0; a < info.nattrs; a++) {
                pfm_event_attr_info_t attr = { .size = sizeof(attr) };

                if (pfm_get_event_attr_info(idx, a, PFM_OS_NONE,
                                            &attr) == PFM_SUCCESS && attr.type == PFM_ATTR_UMASK &&
                    attr.name && strcasecmp(attr.name, umask) == 0)
                        return attr.desc ?: info.desc;
        }
        return info.desc;
}

static int list_libpfm(const char *model, EventListFunc fn, void *userdata) {
        pfm_pmu_info_t pmu;

        if (libpfm_pmu_of(model, &pmu) < 0)
                return 0;
        for (int idx = pmu.first_event; idx >= 0; idx = pfm_get_event_next(idx)) {
                pfm_event_info_t info = { .size = sizeof(info) };

                if (pfm_get_event_info(idx, PFM_OS_NONE, &info) != PFM_SUCCESS || info.pmu != pmu.pmu)
                        continue;
                for (int a = 0; a < info.nattrs; a++) {
                        pfm_event_attr_info_t attr = { .size = sizeof(attr) };
                        char name[EVENT_NAME_MAX], description[DESCRIPTION_MAX];
                        int r;

                        if (pfm_get_event_attr_info(idx, a, PFM_OS_NONE, &attr) != PFM_SUCCESS ||
                            attr.type != PFM_ATTR_UMASK || !attr.name)
                                continue;
                        r = snprintf(name, sizeof(name), "%s.%s", info.name, attr.name);
                        if (r < 0 || (size_t) r >= sizeof(name) || event_table_lookup(model, name))
                                continue;
                        (void) snprintf(description, sizeof(description), "%s%s%s", info.desc ?: "",
                                        attr.desc ? ": " : "", attr.desc ?: "");
                        r = fn(name, description, EVENT_LIST_LIBPFM, userdata);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int event_list(const char *model, EventListFunc fn, void *userdata) {
        unsigned bit = event_table_model(model);
        const EventTableEntry *table;
        const char *alias, *name;
        size_t n;
        int r;

        if (bit == 0)
                return -EOPNOTSUPP;
        for (size_t i = 0; event_generic_alias(model, i, &alias, &name); i++) {
                char description[DESCRIPTION_MAX];

                if (!name || !event_table_lookup(model, name))
                        continue;
                (void) snprintf(description, sizeof(description), "perf's name for %s", name);
                r = fn(alias, description, EVENT_LIST_GENERIC, userdata);
                if (r < 0)
                        return r;
        }
        table = event_table_entries(&n);
        for (size_t i = 0; i < n; i++) {
                const char *description;

                if (!(table[i].models & bit))
                        continue;
                description = table_description(table[i].name) ?: libpfm_description(model,
                                                                                     table[i].name) ?: "";
                r = fn(table[i].name, description, EVENT_LIST_TABLE, userdata);
                if (r < 0)
                        return r;
        }
        return list_libpfm(model, fn, userdata);
}

size_t event_name_distance(const char *a, const char *b) {
        size_t row[EVENT_NAME_MAX + 1];
        size_t n = strnlen(a, EVENT_NAME_MAX), m = strnlen(b, EVENT_NAME_MAX);

        for (size_t j = 0; j <= m; j++)
                row[j] = j;
        for (size_t i = 1; i <= n; i++) {
                size_t diagonal = row[0];

                row[0] = i;
                for (size_t j = 1; j <= m; j++) {
                        size_t above = row[j];
                        bool same = tolower((unsigned char) a[i - 1]) == tolower((unsigned char) b[j - 1]);
                        size_t cost = same ? 0 : 1;
                        size_t best = diagonal + cost;

                        if (above + 1 < best)
                                best = above + 1;
                        if (row[j - 1] + 1 < best)
                                best = row[j - 1] + 1;
                        row[j] = best;
                        diagonal = above;
                }
        }
        return row[m];
}

typedef struct Suggestions {
        const char *wanted;
        char names[EVENT_SUGGESTIONS_COUNT][EVENT_NAME_MAX];
        size_t distances[EVENT_SUGGESTIONS_COUNT];
        size_t n;
} Suggestions;

static int consider(const char *name, const char *description, EventListSource source, void *userdata) {
        Suggestions *s = userdata;
        size_t d = event_name_distance(s->wanted, name), at;

        (void) description;
        (void) source;
        for (size_t k = 0; k < s->n; k++)
                if (strcmp(s->names[k], name) == 0)
                        return 0;
        /* keep the closest few, sorted; ties keep the earlier (generic names, then the table) */
        for (at = s->n; at > 0 && s->distances[at - 1] > d; at--)
                ;
        if (at >= EVENT_SUGGESTIONS_COUNT)
                return 0;
        if (s->n < EVENT_SUGGESTIONS_COUNT)
                s->n++;
        for (size_t k = s->n - 1; k > at; k--) {
                memcpy(s->names[k], s->names[k - 1], sizeof(s->names[k]));
                s->distances[k] = s->distances[k - 1];
        }
        (void) snprintf(s->names[at], sizeof(s->names[at]), "%s", name);
        s->distances[at] = d;
        return 0;
}

void event_suggest(const char *model, const char *name, char *buf, size_t size) {
        Suggestions s = { .wanted = name };
        size_t limit = strlen(name) / 2 > 3 ? strlen(name) / 2 : 3, shown = 0;
        int n = 0;

        if (size == 0)
                return;
        buf[0] = '\0';
        if (event_list(model, consider, &s) < 0)
                return;
        for (size_t k = 0; k < s.n; k++) {
                int w;

                if (s.distances[k] > limit)
                        break;
                w = snprintf(buf + n, size - (size_t) n, "%s%s", shown == 0 ? " (did you mean " : ", ",
                             s.names[k]);
                if (w < 0 || (size_t) w >= size - (size_t) n)
                        break;
                n += w;
                shown++;
        }
        if (shown > 0 && (size_t) n + 2 < size)
                (void) snprintf(buf + n, size - (size_t) n, "?)");
        else
                buf[0] = '\0';
}

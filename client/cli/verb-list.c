/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate list [events|groups|metrics] [PATTERN], like perf list and likwid-perfctr -e / -a
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli-util.h"
#include "cli/verb-list.h"
#include "events/event-list.h"
#include "events/event-models.h"
#include "events/group-list.h"
#include "macro.h"

#define NAME_COLUMN 40

typedef struct ListContext {
        const char *pattern;    /* NULL: everything */
        size_t shown;
} ListContext;

static void help(void) {
        printf("Usage: pmugate list [events|groups|metrics] [PATTERN]\n"
               "\n"
               "What the connected machine's CPU model can measure: events (perf's generic names,\n"
               "pmugate's own table and libpfm4's list, with descriptions), groups for 'pmugate stat\n"
               "-g' and the metrics each group computes. PATTERN selects entries whose name or\n"
               "description contains it, or matches it as a shell pattern (*, ?, [...]); case is\n"
               "ignored in both.\n"
               "\n"
               "  -h --help    Show this help\n");
}

static bool matches(const ListContext *l, const char *name, const char *description) {
        if (!l->pattern)
                return true;
        if (strpbrk(l->pattern, "*?["))
                return fnmatch(l->pattern, name, FNM_CASEFOLD) == 0 ||
                       fnmatch(l->pattern, description, FNM_CASEFOLD) == 0;
        return strcasestr(name, l->pattern) || strcasestr(description, l->pattern);
}

static void row(ListContext *l, const char *name, const char *description) {
        if (!matches(l, name, description))
                return;
        printf("  %-*s %s\n", NAME_COLUMN - 3, name, description);
        l->shown++;
}

static int show_event(const char *name, const char *description, EventListSource source, void *userdata) {
        (void) source;
        row(userdata, name, description);
        return 0;
}

static int show_group(const Group *g, void *userdata) {
        row(userdata, g->name, g->description ?: "");
        return 0;
}

static int show_metrics(const Group *g, void *userdata) {
        for (size_t i = 0; i < g->n_metrics; i++) {
                const GroupMetric *m = &g->metrics[i];
                char name[GROUP_NAME_MAX * 2 + 2], description[GROUP_LABEL_MAX + GROUP_UNIT_MAX + 16];

                if (m->helper)
                        continue;
                (void) snprintf(name, sizeof(name), "%s/%s", g->name, m->name);
                (void) snprintf(description, sizeof(description), "%s%s%s%s", m->label ?: "",
                                m->unit ? " [" : "", m->unit ?: "", m->unit ? "]" : "");
                row(userdata, name, description);
        }
        return 0;
}

static void show_bad(const char *path, const char *reason, void *userdata) {
        (void) userdata;
        fprintf(stderr, "pmugate: skipping %s: %s\n", path, reason);
}

static int list_kind(const char *kind, const pmugate_info *info, ListContext *l) {
        const char *model = info->model_key;
        int r = 0;

        const char *title = strcmp(kind, "events") == 0 ? "Events" :
                            strcmp(kind, "groups") == 0 ? "Groups" : "Metrics (GROUP/NAME)";

        printf("%s%s for %s (%s):\n", l->shown > 0 ? "\n" : "", title,
               info->model_label[0] ? info->model_label : model, model);
        if (strcmp(kind, "events") == 0)
                r = event_list(model, show_event, l);
        else
                r = group_list(model, strcmp(kind, "groups") == 0 ? show_group : show_metrics, show_bad, l);
        return r;
}

int verb_list(int argc, char *argv[], const char *socket_path) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' }, {} };
        static const char *const kinds[] = { "events", "groups", "metrics" };
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        pmugate_info *info = NULL;
        ListContext l = {};
        const char *kind = NULL;
        int opt, r = 0;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, "+h", options, NULL)) >= 0) {
                if (opt == 'h') {
                        help();
                        return 0;
                }
                (void) cli_unknown_option("pmugate", "list", argv, opt);
                return 2;
        }
        for (size_t i = 0; optind < argc && i < ELEMENTSOF(kinds); i++)
                if (strcmp(argv[optind], kinds[i]) == 0) {
                        kind = kinds[i];
                        optind++;
                        break;
                }
        if (optind < argc)
                l.pattern = argv[optind++];
        if (optind < argc) {
                fprintf(stderr,
                        "pmugate: list takes [events|groups|metrics] [PATTERN] (see 'pmugate list "
                        "--help')\n");
                return 2;
        }
        if (cli_connect(socket_path, &c) < 0)
                return 1;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return cli_report("pmugate", c, r, "hello");
        if (!info->model_key[0]) {
                fprintf(stderr, "pmugate: pmugate knows no events of this CPU model (%s)\n",
                        info->model_name);
                pmugate_info_free(info);
                return 1;
        }
        /* libpfm4 activates the host's PMU; describe the daemon's model instead */
        (void) setenv("LIBPFM_FORCE_PMU", event_libpfm_pmu(info->model_key) ?: info->model_key, 0);
        for (size_t i = 0; i < ELEMENTSOF(kinds) && r >= 0; i++)
                if (!kind || kind == kinds[i])
                        r = list_kind(kinds[i], info, &l);
        pmugate_info_free(info);
        if (r < 0) {
                fprintf(stderr, "pmugate: listing failed: %s\n", strerror(-r));
                return 1;
        }
        if (l.pattern && l.shown == 0) {
                fprintf(stderr, "pmugate: nothing matches '%s'\n", l.pattern);
                return 1;
        }
        return 0;
}

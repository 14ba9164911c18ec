/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate list groups: the groups a model can run, from every group directory
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-util.h"
#include "groups.h"
#include "macro.h"
#include "verb-list.h"

#define LISTED_GROUPS_MAX 256U

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

typedef struct Listed {
        char name[GROUP_NAME_MAX + 1];
} Listed;

static int compare_listed(const void *a, const void *b) {
        return strcmp(((const Listed *) a)->name, ((const Listed *) b)->name);
}

/* Adds the names of dir's *.conf files that are valid group names, once each. */
static void collect(const char *dir, Listed *listed, size_t *n) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;

        while (d && (de = readdir(d))) {
                size_t len = strlen(de->d_name);
                char name[GROUP_NAME_MAX + 1];
                bool seen = false;

                if (len <= 5 || len - 5 > GROUP_NAME_MAX || strcmp(de->d_name + len - 5, ".conf") != 0)
                        continue;
                (void) snprintf(name, sizeof(name), "%.*s", (int) (len - 5), de->d_name);
                if (!group_name_valid(name))
                        continue;
                for (size_t i = 0; i < *n; i++)
                        seen = seen || strcmp(listed[i].name, name) == 0;
                if (!seen && *n < LISTED_GROUPS_MAX)
                        (void) snprintf(listed[(*n)++].name, sizeof(listed->name), "%s", name);
        }
}

int verb_list(int argc, char *argv[], const char *socket_path) {
        static const struct option options[] = { { "model", required_argument, NULL, 'm' }, {} };
        char dirs[GROUP_SEARCH_DIRS_MAX][GROUP_PATH_MAX], model[32] = "";
        _cleanup_free_ Listed *listed = calloc(LISTED_GROUPS_MAX, sizeof(Listed));
        size_t n = 0;
        int opt, n_dirs;

        if (!listed)
                return 1;
        while ((opt = getopt_long(argc, argv, "m:", options, NULL)) >= 0)
                if (opt == 'm')
                        (void) snprintf(model, sizeof(model), "%s", optarg);
                else
                        return 2;
        if (optind + 1 != argc || strcmp(argv[optind], "groups") != 0) {
                fprintf(stderr, "pmugate: usage: pmugate list [--model=KEY] groups\n");
                return 2;
        }
        if (!model[0]) {
                _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
                pmugate_info *info = NULL;
                int r = cli_connect(socket_path, &c);

                if (r < 0)
                        return 1;
                r = pmugate_hello(c, &info);
                if (r < 0)
                        return cli_report("pmugate", c, r, "list");
                (void) snprintf(model, sizeof(model), "%s", info->model_key);
                pmugate_info_free(info);
                if (!model[0]) {
                        fprintf(stderr, "pmugate: the daemon's CPU model is unknown: no group runs on it\n");
                        return 1;
                }
        }
        n_dirs = group_search_dirs(dirs, GROUP_SEARCH_DIRS_MAX);
        for (int i = 0; i < n_dirs; i++) {
                char sub[GROUP_PATH_MAX + 40];
                int k = snprintf(sub, sizeof(sub), "%s/%s", dirs[i], model);

                if (k > 0 && (size_t) k < sizeof(sub))
                        collect(sub, listed, &n);
                collect(dirs[i], listed, &n);
        }
        qsort(listed, n, sizeof(Listed), compare_listed);
        /* a group is listed when it loads for the model: its models line names it */
        for (size_t i = 0; i < n; i++) {
                _cleanup_(group_freep) Group *g = NULL;
                char reason[512];

                if (group_load(listed[i].name, model, &g, reason, sizeof(reason)) < 0)
                        continue;
                printf("%-20s %s\n", g->name, g->description ? g->description : "");
        }
        return 0;
}

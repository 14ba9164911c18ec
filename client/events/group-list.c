/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group listing: every group file on the search path that loads for a model
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "events/event-list.h"
#include "events/group-list.h"
#include "macro.h"
#include "pmugate-limits.h"

#define LISTED_MAX 1024U

typedef struct Listed {
        char (*names)[GROUP_NAME_MAX];
        size_t n;
} Listed;

static bool listed(const Listed *l, const char *name) {
        for (size_t i = 0; i < l->n; i++)
                if (strcasecmp(l->names[i], name) == 0)
                        return true;
        return false;
}

static int compare_names(const void *a, const void *b) {
        return strcasecmp(*(const char *const *) a, *(const char *const *) b);
}

static void free_names(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* The group names of the *.conf files in dir, sorted. */
static int dir_groups(const char *dir, char ***ret, size_t *ret_n) {
        DIR *d = opendir(dir);
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;

        *ret = NULL;
        *ret_n = 0;
        if (!d)
                return 0;
        while ((de = readdir(d)) && n < LISTED_MAX) {
                size_t len = strlen(de->d_name);
                char name[GROUP_NAME_MAX], **grown;

                if (len <= strlen(".conf") || strcmp(de->d_name + len - strlen(".conf"), ".conf") != 0 ||
                    len - strlen(".conf") >= sizeof(name))
                        continue;
                (void) snprintf(name, sizeof(name), "%.*s", (int) (len - strlen(".conf")), de->d_name);
                if (!group_name_valid(name))
                        continue;
                grown = realloc(names, (n + 1) * sizeof(char *));
                if (!grown || !(grown[n] = strdup(name))) {
                        free_names(grown ?: names, n);
                        (void) closedir(d);
                        return -ENOMEM;
                }
                names = grown;
                n++;
        }
        (void) closedir(d);
        if (n > 0)
                qsort(names, n, sizeof(char *), compare_names);
        *ret = names;
        *ret_n = n;
        return 0;
}

static int list_dir(const char *dir, const char *model, Listed *l, GroupListFunc fn,
                    void (*bad)(const char *path, const char *reason, void *userdata), void *userdata) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = dir_groups(dir, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                char path[GROUP_PATH_MAX + GROUP_NAME_MAX + 64], reason[PMUGATE_REASON_MAX] = "";
                Group *g = NULL;
                int q;

                if (listed(l, names[i]) || l->n >= LISTED_MAX)
                        continue;
                (void) snprintf(path, sizeof(path), "%s/%s.conf", dir, names[i]);
                q = group_load_file(path, names[i], model, &g, reason, sizeof(reason));
                if (q == -EOPNOTSUPP)
                        continue;
                (void) snprintf(l->names[l->n++], GROUP_NAME_MAX, "%s", names[i]);
                if (q < 0) {
                        if (bad)
                                bad(path, reason[0] ? reason : strerror(-q), userdata);
                        continue;
                }
                r = fn(g, userdata);
                group_free(g);
        }
        free_names(names, n);
        return r < 0 ? r : 0;
}

int group_list(const char *model, GroupListFunc fn, void (*bad)(const char *path, const char *reason,
                                                                void *userdata),
               void *userdata) {
        char dirs[GROUP_SEARCH_DIRS_MAX][GROUP_PATH_MAX];
        _cleanup_free_ char (*names)[GROUP_NAME_MAX] = calloc(LISTED_MAX, GROUP_NAME_MAX);
        Listed l = { .names = names };
        int n, r;

        if (!model || !fn)
                return -EINVAL;
        if (!names)
                return -ENOMEM;
        n = group_search_dirs(dirs, GROUP_SEARCH_DIRS_MAX);
        for (int i = 0; i < n; i++) {
                char model_dir[GROUP_PATH_MAX + 32];

                (void) snprintf(model_dir, sizeof(model_dir), "%.4095s/%.31s", dirs[i], model);
                r = list_dir(model_dir, model, &l, fn, bad, userdata);
                if (r >= 0)
                        r = list_dir(dirs[i], model, &l, fn, bad, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

#define GROUP_SUGGESTIONS_COUNT 3

typedef struct GroupSuggestions {
        const char *wanted;
        char names[GROUP_SUGGESTIONS_COUNT][GROUP_NAME_MAX];
        size_t distances[GROUP_SUGGESTIONS_COUNT];
        size_t n;
} GroupSuggestions;

static int consider_group(const Group *g, void *userdata) {
        GroupSuggestions *s = userdata;
        size_t d = event_name_distance(s->wanted, g->name), at;

        /* the closest few, sorted; ties keep the one found first */
        for (at = s->n; at > 0 && s->distances[at - 1] > d; at--)
                ;
        if (at >= GROUP_SUGGESTIONS_COUNT)
                return 0;
        if (s->n < GROUP_SUGGESTIONS_COUNT)
                s->n++;
        for (size_t k = s->n - 1; k > at; k--) {
                memcpy(s->names[k], s->names[k - 1], sizeof(s->names[k]));
                s->distances[k] = s->distances[k - 1];
        }
        (void) snprintf(s->names[at], sizeof(s->names[at]), "%s", g->name);
        s->distances[at] = d;
        return 0;
}

void group_suggest(const char *model, const char *name, char *buf, size_t size) {
        /* LIKWID's performance groups whose measurement pmugate names otherwise */
        static const struct {
                const char *likwid;
                const char *hint;
        } likwid[] = {
                { "TMA", " (LIKWID's TMA is 'pmugate topdown', or -g topdown-l1 and -g topdown-l2 here)" },
                { "CACHES", " (LIKWID's CACHES: -g L2 and -g L3 here, their bandwidths and volumes)" },
                { "TOPDOWN", " (LIKWID's TOPDOWN is 'pmugate topdown', or -g topdown-l1 here)" },
        };
        GroupSuggestions s = { .wanted = name };
        size_t limit = MAX(strlen(name) / 3, (size_t) 1), shown = 0;
        int n = 0;

        if (size == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(likwid); i++)
                if (strcasecmp(name, likwid[i].likwid) == 0) {
                        (void) snprintf(buf, size, "%s", likwid[i].hint);
                        return;
                }
        if (group_list(model, consider_group, NULL, &s) < 0)
                return;
        for (size_t k = 0; k < s.n; k++) {
                int w;

                if (s.distances[k] > limit)
                        break;
                w = snprintf(buf + n, size - (size_t) n, "%s%s", shown == 0 ? " (did you mean " : ", ", s.names[k]);
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

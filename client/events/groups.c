/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group files, parsed with inih
 */
#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "build-config.h"
#include "core/reason.h"
#include "events/groups.h"
#include "events/metrics.h"
#include "macro.h"

/* A group file is small data; anything larger is a mistake. */
#define GROUP_FILE_SIZE_MAX (256U * 1024U)
#define WORD_SEPARATORS " \t,"
#define EVENTS_IF_PREFIX "events if "
#define METRIC_PREFIX "metric "
#define HELPER_PREFIX "helper "

typedef struct GroupParser {
        Group *group;
        const char *path;
        const char *model;
        unsigned depth;
        bool model_matches;
        bool models_given;
        int error;
        char reason[512];
        GroupMetric *current;           /* metric of the section being read */
        bool promoted;                  /* current is an included helper this file reports */
        char section[METRIC_NAME_MAX + 16];
} GroupParser;

static int load_named(const char *name, const char *model, unsigned depth, Group *into, char *reterr_reason,
                      size_t reason_size);

_printf_(3, 4)
static int parser_fail(GroupParser *p, int error, const char *format, ...) {
        va_list ap;

        /* inih goes on after an error; the first one is the one worth reporting */
        if (p->error == 0) {
                p->error = error;
                va_start(ap, format);
                (void) vsnprintf(p->reason, sizeof(p->reason), format, ap);
                va_end(ap);
        }
        return 0;
}

bool group_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;

        if (n == 0 || n >= GROUP_NAME_MAX || name[0] == '.')
                return false;
        return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

Group *group_free(Group *g) {
        if (!g)
                return NULL;
        for (size_t i = 0; i < g->n_events; i++) {
                free(g->events[i].name);
                free(g->events[i].condition);
        }
        for (size_t i = 0; i < g->n_metrics; i++) {
                free(g->metrics[i].name);
                free(g->metrics[i].label);
                free(g->metrics[i].parent);
                free(g->metrics[i].unit);
                free(g->metrics[i].formula);
                free(g->metrics[i].threshold);
                free(g->metrics[i].estimate);
                free(g->metrics[i].unavailable);
        }
        free(g->events);
        free(g->metrics);
        free(g->name);
        free(g->path);
        free(g->description);
        free(g);
        return NULL;
}

/* Appends text to *s, separated by a space: multi-line values arrive one line at a time. */
static int append_text(char **s, const char *text, size_t max) {
        size_t old = *s ? strlen(*s) : 0, add = strlen(text);
        char *n;

        if (old + add + 2 > max)
                return -E2BIG;
        n = realloc(*s, old + add + 2);
        if (!n)
                return -ENOMEM;
        if (old > 0)
                n[old++] = ' ';
        memcpy(n + old, text, add + 1);
        *s = n;
        return 0;
}

static int add_event(Group *g, const char *name, const char *condition, bool included) {
        GroupEvent *events;

        for (size_t i = 0; i < g->n_events; i++)
                if (strcmp(g->events[i].name, name) == 0 &&
                    strcmp(g->events[i].condition ?: "", condition ?: "") == 0)
                        return 0;
        if (g->n_events >= GROUP_EVENTS_MAX)
                return -E2BIG;
        events = realloc(g->events, (g->n_events + 1) * sizeof(GroupEvent));
        if (!events)
                return -ENOMEM;
        g->events = events;
        g->events[g->n_events] = (GroupEvent) {
                .name = strdup(name),
                .condition = condition ? strdup(condition) : NULL,
                .included = included,
        };
        if (!g->events[g->n_events].name || (condition && !g->events[g->n_events].condition)) {
                free(g->events[g->n_events].name);
                free(g->events[g->n_events].condition);
                return -ENOMEM;
        }
        g->n_events++;
        return 0;
}

static int add_events(GroupParser *p, const char *list, const char *condition) {
        char buf[INI_MAX_LINE + 1], *saveptr = NULL;
        int r;

        (void) snprintf(buf, sizeof(buf), "%s", list);
        for (char *w = strtok_r(buf, WORD_SEPARATORS, &saveptr); w;
                     w = strtok_r(NULL, WORD_SEPARATORS, &saveptr)) {
                r = add_event(p->group, w, condition, p->depth > 0);
                if (r == -E2BIG)
                        return parser_fail(p, r, "more than %u events", GROUP_EVENTS_MAX);
                if (r < 0)
                        return parser_fail(p, r, "%s", strerror(-r));
        }
        return 1;
}

static GroupMetric *find_metric(Group *g, const char *name) {
        for (size_t i = 0; i < g->n_metrics; i++)
                if (strcmp(g->metrics[i].name, name) == 0)
                        return &g->metrics[i];
        return NULL;
}

static int begin_metric(GroupParser *p, const char *name, bool helper) {
        Group *g = p->group;
        GroupMetric *metrics;

        GroupMetric *found = find_metric(g, name);

        if (found && found->helper && !helper && found->depth > p->depth) {
                /* an included group's helper reported here: [metric NAME] without a formula
                 * gives it a label, unit, parent and threshold (the TopDown level-3 file on Ice
                 * Lake-SP reports level 2's helper tma_microcode_sequencer) */
                found->helper = false;
                found->depth = p->depth;
                p->current = found;
                p->promoted = true;
                return 1;
        }
        if (found)
                return parser_fail(p, -EINVAL, "[%s%s] is defined twice (or also by an included group)",
                                   helper ? HELPER_PREFIX : METRIC_PREFIX, name);
        if (g->n_metrics >= GROUP_METRICS_MAX)
                return parser_fail(p, -E2BIG, "more than %u metrics", GROUP_METRICS_MAX);
        metrics = realloc(g->metrics, (g->n_metrics + 1) * sizeof(GroupMetric));
        if (!metrics)
                return parser_fail(p, -ENOMEM, "out of memory");
        g->metrics = metrics;
        g->metrics[g->n_metrics] = (GroupMetric) { .name = strdup(name), .helper = helper, .depth = p->depth };
        if (!g->metrics[g->n_metrics].name)
                return parser_fail(p, -ENOMEM, "out of memory");
        p->current = &g->metrics[g->n_metrics++];
        p->promoted = false;
        return 1;
}

static int handle_group_key(GroupParser *p, const char *key, const char *value) {
        char buf[INI_MAX_LINE + 1], *saveptr = NULL;
        int r;

        if (strcmp(key, "events") == 0)
                return add_events(p, value, NULL);
        if (strcmp(key, "description") == 0) {
                /* an included group's description is its own, not the includer's */
                if (p->depth > 0)
                        return 1;
                r = append_text(&p->group->description, value, GROUP_DESCRIPTION_MAX);
                return r < 0 ? parser_fail(p, r, "description longer than %u characters", GROUP_DESCRIPTION_MAX) : 1;
        }
        if (strcmp(key, "models") == 0) {
                p->models_given = true;
                (void) snprintf(buf, sizeof(buf), "%s", value);
                for (char *w = strtok_r(buf, WORD_SEPARATORS, &saveptr); w;
                     w = strtok_r(NULL, WORD_SEPARATORS, &saveptr))
                        if (strcmp(w, p->model) == 0)
                                p->model_matches = true;
                return 1;
        }
        if (strcmp(key, "include") == 0) {
                (void) snprintf(buf, sizeof(buf), "%s", value);
                for (char *w = strtok_r(buf, WORD_SEPARATORS, &saveptr); w;
                     w = strtok_r(NULL, WORD_SEPARATORS, &saveptr)) {
                        char reason[sizeof(p->reason)];

                        if (p->depth + 1 >= GROUP_INCLUDE_DEPTH_MAX)
                                return parser_fail(p, -ELOOP, "includes nest deeper than %u (a loop?)",
                                                   GROUP_INCLUDE_DEPTH_MAX);
                        r = load_named(w, p->model, p->depth + 1, p->group, reason, sizeof(reason));
                        if (r < 0)
                                return parser_fail(p, r, "include %s: %s", w, reason);
                }
                return 1;
        }
        return parser_fail(p, -EINVAL, "unknown key '%s' in [group] (known: description, models, include, events)",
                           key);
}

static int handle_metric_key(GroupParser *p, const char *key, const char *value) {
        GroupMetric *m = p->current;
        int r;

        if (strcmp(key, "formula") == 0) {
                if (p->promoted)
                        return parser_fail(p, -EINVAL, "'%s' has its formula in the group that defines it",
                                           m->name);
                r = append_text(&m->formula, value, METRIC_FORMULA_MAX);
                return r < 0 ? parser_fail(p, r, "formula of '%s' is longer than %u characters", m->name,
                                           METRIC_FORMULA_MAX - 1) : 1;
        }
        if (strcmp(key, "unavailable") == 0) {
                r = append_text(&m->unavailable, value, GROUP_REASON_MAX);
                return r < 0 ? parser_fail(p, r, "unavailable of '%s' is longer than %u characters", m->name,
                                           GROUP_REASON_MAX - 1) : 1;
        }
        if (m->helper)
                return parser_fail(p, -EINVAL,
                                   "unknown key '%s' in [%s] (a helper has only a formula or unavailable)",
                                   key, p->section);
        if (strcmp(key, "threshold") == 0) {
                r = append_text(&m->threshold, value, METRIC_FORMULA_MAX);
                return r < 0 ? parser_fail(p, r, "threshold of '%s' is longer than %u characters", m->name,
                                           METRIC_FORMULA_MAX - 1) : 1;
        }
        if (strcmp(key, "estimate") == 0) {
                if (m->estimate || strlen(value) >= GROUP_UNIT_MAX * 2)
                        return parser_fail(p, -EINVAL, "estimate of '%s': one word of up to %u characters",
                                           m->name, GROUP_UNIT_MAX * 2 - 1);
                m->estimate = strdup(value);
                return m->estimate ? 1 : parser_fail(p, -ENOMEM, "out of memory");
        }
        if (strcmp(key, "label") == 0) {
                r = append_text(&m->label, value, GROUP_LABEL_MAX);
                return r < 0 ? parser_fail(p, r, "label of '%s' is longer than %u characters", m->name,
                                           GROUP_LABEL_MAX - 1) : 1;
        }
        if (strcmp(key, "unit") == 0) {
                if (m->unit || strlen(value) >= GROUP_UNIT_MAX)
                        return parser_fail(p, -EINVAL, "unit of '%s': one value of up to %u characters", m->name,
                                           GROUP_UNIT_MAX - 1);
                m->unit = strdup(value);
                return m->unit ? 1 : parser_fail(p, -ENOMEM, "out of memory");
        }
        if (strcmp(key, "parent") == 0) {
                if (m->parent)
                        return parser_fail(p, -EINVAL, "'%s' has more than one parent", m->name);
                m->parent = strdup(value);
                return m->parent ? 1 : parser_fail(p, -ENOMEM, "out of memory");
        }
        return parser_fail(p, -EINVAL,
                           "unknown key '%s' in [%s] (known: label, parent, unit, formula, threshold, estimate, "
                           "unavailable)",
                           key, p->section);
}

static int begin_section(GroupParser *p, const char *section) {
        const char *arg;

        (void) snprintf(p->section, sizeof(p->section), "%s", section);
        p->current = NULL;
        if (strncmp(section, METRIC_PREFIX, strlen(METRIC_PREFIX)) == 0 ||
            strncmp(section, HELPER_PREFIX, strlen(HELPER_PREFIX)) == 0) {
                bool helper = section[0] == 'h';

                arg = section + strlen(helper ? HELPER_PREFIX : METRIC_PREFIX);
                if (arg[0] == '\0' || strlen(arg) >= METRIC_NAME_MAX || strspn(arg, " \t") > 0)
                        return parser_fail(p, -EINVAL, "[%s]: expected a metric name", section);
                return begin_metric(p, arg, helper);
        }
        return 1;
}

static int handle(void *userdata, const char *section, const char *key, const char *value) {
        GroupParser *p = userdata;

        if (p->error != 0)
                return 0;
        if (strcmp(section, p->section) != 0 || section[0] == '\0') {
                if (section[0] == '\0')
                        return parser_fail(p, -EINVAL, "'%s' outside a section", key);
                if (begin_section(p, section) == 0)
                        return 0;
        }
        if (strcmp(section, "group") == 0)
                return handle_group_key(p, key, value);
        if (strncmp(section, EVENTS_IF_PREFIX, strlen(EVENTS_IF_PREFIX)) == 0) {
                if (strcmp(key, "events") != 0)
                        return parser_fail(p, -EINVAL, "unknown key '%s' in [%s] (known: events)", key, section);
                return add_events(p, value, section + strlen(EVENTS_IF_PREFIX));
        }
        if (p->current)
                return handle_metric_key(p, key, value);
        return parser_fail(p, -EINVAL,
                           "unknown section [%s] (known: group, events if CONDITION, metric NAME, helper NAME)",
                           section);
}

static int check_group(Group *g, char *reterr_reason, size_t reason_size) {
        for (size_t i = 0; i < g->n_metrics; i++) {
                GroupMetric *m = &g->metrics[i];

                if (!m->formula == !m->unavailable)
                        return reason_fail(reterr_reason, reason_size, -EINVAL,
                                           "%s: metric '%s' needs a formula or, if pmugate cannot compute it, "
                                           "unavailable = REASON (not both)",
                                           g->path, m->name);
                if (m->unavailable) {
                        /* NaN, shown as n/a with the reason: never a number */
                        m->formula = strdup("0 / 0");
                        if (!m->formula)
                                return -ENOMEM;
                }
                if (m->parent && (!find_metric(g, m->parent) || find_metric(g, m->parent)->helper))
                        return reason_fail(reterr_reason, reason_size, -EINVAL, "%s: parent '%s' of '%s' is no metric",
                                           g->path, m->parent, m->name);
                if (!m->helper && !m->label) {
                        m->label = strdup(m->name);
                        if (!m->label)
                                return -ENOMEM;
                }
        }
        return 0;
}

static int open_group_file(const char *path, FILE **ret, char *reterr_reason, size_t reason_size) {
        _cleanup_fclose_ FILE *f = NULL;
        struct stat st;

        f = fopen(path, "re");
        if (!f)
                return reason_fail(reterr_reason, reason_size, -errno, "%s: %s", path, strerror(errno));
        if (fstat(fileno(f), &st) < 0)
                return reason_fail(reterr_reason, reason_size, -errno, "%s: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode) || st.st_size > (off_t) GROUP_FILE_SIZE_MAX)
                return reason_fail(reterr_reason, reason_size, -EFBIG,
                                   "%s: not a regular file of at most %u bytes", path,
                                   GROUP_FILE_SIZE_MAX);
        *ret = TAKE_PTR(f);
        return 0;
}

static int parse_stream(FILE *f, const char *path, const char *model, unsigned depth, Group *g,
                        char *reterr_reason, size_t reason_size) {
        GroupParser p = { .group = g, .path = path, .model = model, .depth = depth };
        int line;

        line = ini_parse_file(f, handle, &p);
        if (p.error != 0)
                return reason_fail(reterr_reason, reason_size, p.error == -ENOMEM ? -ENOMEM : -EINVAL,
                                   "%s:%d: %s", path,
                                   line > 0 ? line : 0, p.reason);
        if (line != 0)
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "%s:%d: not 'key = value', '[section]' or a comment",
                                   path, line);
        if (p.models_given && !p.model_matches)
                return reason_fail(reterr_reason, reason_size, -EOPNOTSUPP,
                                   "%s is not for CPU model %s (see its 'models')",
                                   path, model);
        return 0;
}

static int parse_into(const char *path, const char *model, unsigned depth, Group *g, char *reterr_reason,
                      size_t reason_size) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        r = open_group_file(path, &f, reterr_reason, reason_size);
        if (r < 0)
                return r;
        return parse_stream(f, path, model, depth, g, reterr_reason, reason_size);
}

/* The installed groups, or $PMUGATE_GROUP_DIR instead of them: the test suite points it at the
 * source tree so that it never reads an installed pmugate's groups. */
static const char *installed_group_dir(void) {
        const char *env = secure_getenv("PMUGATE_GROUP_DIR");

        return env && env[0] == '/' ? env : PMUGATE_GROUP_DIR;
}

int group_search_dirs(char dirs[][GROUP_PATH_MAX], size_t max) {
        const char *env = secure_getenv("PMUGATE_GROUP_PATH"), *xdg = secure_getenv("XDG_CONFIG_HOME");
        const char *home = secure_getenv("HOME");
        size_t n = 0;

        if (env) {
                char buf[GROUP_PATH_MAX], *saveptr = NULL;

                (void) snprintf(buf, sizeof(buf), "%s", env);
                for (char *d = strtok_r(buf, ":", &saveptr); d && n < max; d = strtok_r(NULL, ":", &saveptr))
                        (void) snprintf(dirs[n++], GROUP_PATH_MAX, "%s", d);
        }
        if (n < max && xdg && xdg[0] == '/')
                (void) snprintf(dirs[n++], GROUP_PATH_MAX, "%s/pmugate/groups", xdg);
        else if (n < max && home && home[0] == '/')
                (void) snprintf(dirs[n++], GROUP_PATH_MAX, "%s/.config/pmugate/groups", home);
        if (n < max)
                (void) snprintf(dirs[n++], GROUP_PATH_MAX, "%s", installed_group_dir());
        return (int) n;
}

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* dir/name.conf, or a file in dir whose name matches it case-insensitively. */
static bool find_in_dir(const char *dir, const char *name, char *buf, size_t size) {
        _cleanup_(closedirp) DIR *d = NULL;
        char wanted[GROUP_NAME_MAX + 8];
        struct dirent *de;
        int k = snprintf(buf, size, "%s/%s.conf", dir, name);

        if (k > 0 && (size_t) k < size && access(buf, F_OK) == 0)
                return true;
        (void) snprintf(wanted, sizeof(wanted), "%s.conf", name);
        d = opendir(dir);
        while (d && (de = readdir(d)))
                if (strcasecmp(de->d_name, wanted) == 0) {
                        k = snprintf(buf, size, "%s/%s", dir, de->d_name);
                        if (k > 0 && (size_t) k < size && access(buf, F_OK) == 0)
                                return true;
                }
        return false;
}

/* Group names are case-insensitive ("IPC" finds ipc.conf); an exact match comes first. */
static int find_file(const char *name, const char *model, char *buf, size_t size) {
        char dirs[GROUP_SEARCH_DIRS_MAX][GROUP_PATH_MAX], model_dir[GROUP_PATH_MAX + 32];
        int n = group_search_dirs(dirs, GROUP_SEARCH_DIRS_MAX);

        for (int i = 0; i < n; i++) {
                (void) snprintf(model_dir, sizeof(model_dir), "%.4095s/%.31s", dirs[i], model);
                if (find_in_dir(model_dir, name, buf, size) || find_in_dir(dirs[i], name, buf, size))
                        return 0;
        }
        return -ENOENT;
}

/* The group name a found file spells: its file name without ".conf". */
static void name_of_file(const char *path, char *buf, size_t size) {
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        size_t n = strlen(base) > strlen(".conf") ? strlen(base) - strlen(".conf") : strlen(base);

        (void) snprintf(buf, size, "%.*s", (int) n, base);
}

static int load_named(const char *name, const char *model, unsigned depth, Group *into, char *reterr_reason,
                      size_t reason_size) {
        char path[GROUP_PATH_MAX + GROUP_NAME_MAX + 32];

        if (!group_name_valid(name))
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "'%s' is not a group name (letters, digits, '-', '_' and '.')", name);
        if (find_file(name, model, path, sizeof(path)) < 0)
                return reason_fail(reterr_reason, reason_size, -ENOENT,
                                   "no group '%s' for %s (looked in $PMUGATE_GROUP_PATH, ~/.config/pmugate/groups and "
                                   "%s)",
                                   name, model, installed_group_dir());
        return parse_into(path, model, depth, into, reterr_reason, reason_size);
}

static int group_new(const char *name, const char *path, Group **ret) {
        _cleanup_(group_freep) Group *g = calloc(1, sizeof(Group));

        if (!g)
                return -ENOMEM;
        g->name = strdup(name);
        g->path = strdup(path);
        if (!g->name || !g->path)
                return -ENOMEM;
        *ret = TAKE_PTR(g);
        return 0;
}

int group_load_stream(FILE *f, const char *path, const char *name, const char *model, Group **ret,
                      char *reterr_reason, size_t reason_size) {
        _cleanup_(group_freep) Group *g = NULL;
        int r;

        if (!f || !path || !name || !model || !ret)
                return -EINVAL;
        r = group_new(name, path, &g);
        if (r < 0)
                return r;
        r = parse_stream(f, path, model, 0, g, reterr_reason, reason_size);
        if (r < 0)
                return r;
        r = check_group(g, reterr_reason, reason_size);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(g);
        return 0;
}

int group_load_file(const char *path, const char *name, const char *model, Group **ret, char *reterr_reason,
                    size_t reason_size) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        if (!path || !name || !model || !ret)
                return -EINVAL;
        r = open_group_file(path, &f, reterr_reason, reason_size);
        if (r < 0)
                return r;
        return group_load_stream(f, path, name, model, ret, reterr_reason, reason_size);
}

int group_load(const char *name, const char *model, Group **ret, char *reterr_reason, size_t reason_size) {
        char path[GROUP_PATH_MAX + GROUP_NAME_MAX + 32], spelled[GROUP_PATH_MAX];

        if (!name || !model || !ret)
                return -EINVAL;
        if (!group_name_valid(name))
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "'%s' is not a group name (letters, digits, '-', '_' and '.')", name);
        if (find_file(name, model, path, sizeof(path)) < 0)
                return reason_fail(reterr_reason, reason_size, -ENOENT,
                                   "no group '%s' for %s (looked in $PMUGATE_GROUP_PATH, ~/.config/pmugate/groups "
                                   "and %s; 'pmugate list groups' shows them)",
                                   name, model, installed_group_dir());
        name_of_file(path, spelled, sizeof(spelled));
        return group_load_file(path, spelled, model, ret, reterr_reason, reason_size);
}

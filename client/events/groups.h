/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group files: the events and formulas of a measurement as data (docs/GROUPS.md). Groups are
 * looked up by name in $PMUGATE_GROUP_PATH, the user's ~/.config/pmugate/groups and the
 * installed PMUGATE_GROUP_DIR (or $PMUGATE_GROUP_DIR), first under <model>/ and then at the top
 * of each directory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

#define GROUP_NAME_MAX 64U
#define GROUP_INCLUDE_DEPTH_MAX 4U
#define GROUP_EVENTS_MAX 128U
#define GROUP_METRICS_MAX 256U
#define GROUP_LABEL_MAX 64U
#define GROUP_UNIT_MAX 16U
#define GROUP_REASON_MAX 256U
#define GROUP_DESCRIPTION_MAX 512U
#define GROUP_SEARCH_DIRS_MAX 16U
#define GROUP_PATH_MAX 4096U

typedef struct GroupEvent {
        char *name;
        char *condition;        /* muparser expression over the constants, or NULL: always counted */
        bool included;          /* from an included group: the base the including group refines */
} GroupEvent;

typedef struct GroupMetric {
        char *name;
        char *label;            /* shown in tables; NULL for a helper */
        char *parent;           /* metric this one refines, or NULL at the top level */
        char *unit;             /* "%" for a fraction shown as a percentage, or NULL */
        char *formula;
        char *threshold;        /* formula that is not 0 when the value deserves attention
                                 * (perf's MetricThreshold), or NULL */
        char *estimate;         /* why the value is an estimate ("retire-latency"), or NULL */
        char *unavailable;      /* why pmugate cannot compute it (then formula is NULL), or NULL */
        unsigned depth;         /* 0 in the file loaded, 1 in a group it includes, ... */
        bool helper;            /* used by other formulas, not reported */
} GroupMetric;

typedef struct Group {
        char *name;
        char *path;             /* file the group came from */
        char *description;
        GroupEvent *events;
        size_t n_events;
        GroupMetric *metrics;
        size_t n_metrics;
} Group;

Group *group_free(Group *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(Group *, group_free);

/* Finds and loads the group called name for a model (key such as "spr"). -ENOENT when no
 * directory has it; -EINVAL with "file:line: reason" for a bad file. */
int group_load(const char *name, const char *model, Group **ret, char *reterr_reason, size_t reason_size);

/* Loads one file; includes are looked up as group_load() does. */
int group_load_file(const char *path, const char *name, const char *model, Group **ret, char *reterr_reason,
                    size_t reason_size);
/* The same for an open stream (the fuzz target feeds it memory); path names it in reasons. */
int group_load_stream(FILE *f, const char *path, const char *name, const char *model, Group **ret,
                      char *reterr_reason, size_t reason_size);

/* Fills dirs with the directories searched, in order; returns how many. */
int group_search_dirs(char dirs[][GROUP_PATH_MAX], size_t max);

/* Whether name is a valid group name: 1-63 of letters, digits, '-', '_' and '.', no leading dot. */
bool group_name_valid(const char *name);

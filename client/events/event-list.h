/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The events a model knows, with descriptions: for listing them and for suggesting the
 * closest names when one is not known
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Room for the suggestion text event_suggest() writes. */
#define EVENT_SUGGESTIONS_MAX 256U
#define EVENT_SUGGESTIONS_COUNT 3U

typedef enum EventListSource {
        EVENT_LIST_GENERIC,     /* perf's generic name for an event */
        EVENT_LIST_TABLE,       /* pmugate's table: counter restrictions known */
        EVENT_LIST_LIBPFM,      /* libpfm4's list for the model */
} EventListSource;

/* Called once per event; a negative return stops the walk and is returned. */
typedef int (*EventListFunc)(const char *name, const char *description, EventListSource source,
                             void *userdata);

/* Walks the model's events: perf's generic names, pmugate's table, then libpfm4's events as
 * EVENT.UMASK (when libpfm4 has the model's PMU active) that the table does not already name. */
int event_list(const char *model, EventListFunc fn, void *userdata);

/* Writes " (did you mean A, B or C?)" for the known names closest to name (case-insensitive
 * edit distance), or "" when none is close. */
void event_suggest(const char *model, const char *name, char *buf, size_t size);

/* Case-insensitive edit distance (Levenshtein), at most EVENT_NAME_MAX characters of each. */
size_t event_name_distance(const char *a, const char *b);

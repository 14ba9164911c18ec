/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A model's libpfm4 PMU and perf's generic event names (event-models.c)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Longest event text accepted, modifiers included. */
#define EVENT_NAME_MAX 128U

/* The i-th of perf's generic event names ("instructions", "cycles", ...) and the model's event it
 * stands for (NULL where the model has none, as ref-cycles on AMD); false past the last. */
bool event_generic_alias(const char *model, size_t i, const char **ret_alias, const char **ret_name);

/* Whether libpfm4 is initialized with the model's PMU active (its event list can be used). */
bool event_libpfm_ready(const char *model);

/* libpfm4's PMU name for a model key, or NULL. */
const char *event_libpfm_pmu(const char *model);

/* The index of perf's generic event name alias (case-insensitive), or -1 when it is none. */
ssize_t event_generic_index(const char *alias);

/* Another spelling of a generic alias's Intel event in older models' lists (Skylake-SP's
 * LONGEST_LAT_CACHE.REFERENCE for cache-references), or NULL. */
const char *event_generic_older_name(const char *model, const char *alias);

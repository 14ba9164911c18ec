/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Listing the groups a model can use, in the order and with the precedence group_load()
 * finds them
 */
#pragma once

#include "events/groups.h"

/* Called once per group; a negative return stops the walk and is returned. */
typedef int (*GroupListFunc)(const Group *g, void *userdata);

/* Walks every group of the search path that loads for model: per directory its MODEL/ files,
 * then its top-level ones, a name (case-insensitive) counted where it is first found, as
 * group_load() would. Files for other models are left out; a file that does not parse is
 * passed to bad (may be NULL) with its reason. Returns 0 or the first negative fn return. */
int group_list(const char *model, GroupListFunc fn, void (*bad)(const char *path, const char *reason,
                                                                void *userdata),
               void *userdata);

/* Writes " (did you mean A or B?)" for the model's groups closest to name (case-insensitive
 * edit distance), or for LIKWID's group names that pmugate spells otherwise (TMA, CACHES)
 * what to use instead; "" when nothing is close. */
void group_suggest(const char *model, const char *name, char *buf, size_t size);

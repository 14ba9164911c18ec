/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Metrics: named formulas over named variables (event counts, constants), evaluated with
 * muparser. Formulas may use each other; they are evaluated in dependency order.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

#define METRIC_NAME_MAX 128U
#define METRIC_FORMULA_MAX 4096U
#define METRIC_VARIABLES_MAX 1024U
#define METRIC_FORMULAS_MAX 256U

typedef struct MetricSet MetricSet;

int metric_set_new(MetricSet **ret);
MetricSet *metric_set_free(MetricSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricSet *, metric_set_free);

/* Declares a variable; returns its index for metric_set_set(). Names are letters, digits, '_'
 * and '.', not starting with a digit. -EEXIST when the name is taken. */
int metric_set_add_variable(MetricSet *s, const char *name);

/* Adds a formula in muparser syntax; returns its index. */
int metric_set_add_formula(MetricSet *s, const char *name, const char *formula, char *reterr_reason,
                           size_t reason_size);

/* Parses every formula, checks that each name it uses is a variable or a formula, and orders
 * them so that a formula is evaluated after those it uses. -EINVAL with a reason for a syntax
 * error, an unknown name or a cycle. No formula or variable can be added afterwards. */
int metric_set_compile(MetricSet *s, char *reterr_reason, size_t reason_size);

void metric_set_set(MetricSet *s, size_t variable, double value);
/* The value last set, NaN for an unknown index. */
double metric_set_get(const MetricSet *s, size_t variable);

/* Evaluates every formula with the current variable values; values[i] is formula i, NaN where
 * muparser reports an error and where the value depends on a NaN (unknown) variable or formula,
 * through any operator or function: min, max, d_ratio, comparisons and ?: included. */
int metric_set_evaluate(MetricSet *s, double *values, size_t n_values);

size_t metric_set_n_formulas(const MetricSet *s);
size_t metric_set_n_variables(const MetricSet *s);

/* Index of a formula or variable by name, or -ENOENT. */
int metric_set_formula_index(const MetricSet *s, const char *name);
int metric_set_variable_index(const MetricSet *s, const char *name);

/* Sets used[v] (one per variable) for every variable the formula uses, itself or through the
 * formulas it uses. Only after metric_set_compile(). */
int metric_set_formula_variables(const MetricSet *s, size_t formula, bool *used);

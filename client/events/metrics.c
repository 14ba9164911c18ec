/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Metrics: formula text compiled and evaluated by muparser's C API
 */
#include <errno.h>
#include <math.h>
#include <muParserDLL.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reason.h"
#include "events/metrics.h"
#include "macro.h"

/* muparser's own identifier characters plus '.', which Intel's event names use. */
#define NAME_CHARS "0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ."

typedef struct Formula {
        char *name;
        char *text;
        muParserHandle_t parser;
        size_t *uses;           /* formulas it uses */
        size_t n_uses;
        size_t *variables;      /* variables it uses */
        size_t n_variables;
} Formula;

struct MetricSet {
        char **variable_names;
        double *variables;
        size_t n_variables;
        Formula *formulas;
        size_t n_formulas;
        double *formula_values;         /* muparser reads formulas used by others from here */
        size_t *order;                  /* evaluation order */
        bool compiled;
};

static bool name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n >= METRIC_NAME_MAX || (name[0] >= '0' && name[0] <= '9') || name[0] == '.')
                return false;
        return strspn(name, NAME_CHARS) == n;
}

int metric_set_new(MetricSet **ret) {
        MetricSet *s;

        if (!ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->variable_names = calloc(METRIC_VARIABLES_MAX, sizeof(char *));
        s->variables = calloc(METRIC_VARIABLES_MAX, sizeof(double));
        s->formulas = calloc(METRIC_FORMULAS_MAX, sizeof(Formula));
        s->formula_values = calloc(METRIC_FORMULAS_MAX, sizeof(double));
        s->order = calloc(METRIC_FORMULAS_MAX, sizeof(size_t));
        if (!s->variable_names || !s->variables || !s->formulas || !s->formula_values || !s->order) {
                metric_set_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

MetricSet *metric_set_free(MetricSet *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; s->variable_names && i < s->n_variables; i++)
                free(s->variable_names[i]);
        for (size_t i = 0; s->formulas && i < s->n_formulas; i++) {
                if (s->formulas[i].parser)
                        mupRelease(s->formulas[i].parser);
                free(s->formulas[i].name);
                free(s->formulas[i].text);
                free(s->formulas[i].uses);
                free(s->formulas[i].variables);
        }
        free(s->variable_names);
        free(s->variables);
        free(s->formulas);
        free(s->formula_values);
        free(s->order);
        free(s);
        return NULL;
}

int metric_set_variable_index(const MetricSet *s, const char *name) {
        for (size_t i = 0; i < s->n_variables; i++)
                if (strcmp(s->variable_names[i], name) == 0)
                        return (int) i;
        return -ENOENT;
}

int metric_set_formula_index(const MetricSet *s, const char *name) {
        for (size_t i = 0; i < s->n_formulas; i++)
                if (strcmp(s->formulas[i].name, name) == 0)
                        return (int) i;
        return -ENOENT;
}

int metric_set_add_variable(MetricSet *s, const char *name) {
        if (!s || !name || s->compiled || !name_valid(name))
                return -EINVAL;
        if (metric_set_variable_index(s, name) >= 0 || metric_set_formula_index(s, name) >= 0)
                return -EEXIST;
        if (s->n_variables >= METRIC_VARIABLES_MAX)
                return -E2BIG;
        s->variable_names[s->n_variables] = strdup(name);
        if (!s->variable_names[s->n_variables])
                return -ENOMEM;
        s->variables[s->n_variables] = NAN;
        return (int) s->n_variables++;
}

int metric_set_add_formula(MetricSet *s, const char *name, const char *formula, char *reterr_reason,
                           size_t reason_size) {
        Formula *f;

        if (!s || !name || !formula || s->compiled)
                return -EINVAL;
        if (!name_valid(name))
                return reason_fail(reterr_reason, reason_size, -EINVAL,
                                   "'%s' is not a metric name (letters, digits, '_' and '.', up to %u characters)",
                                   name,
                                   METRIC_NAME_MAX - 1);
        if (metric_set_variable_index(s, name) >= 0 || metric_set_formula_index(s, name) >= 0)
                return reason_fail(reterr_reason, reason_size, -EEXIST, "'%s' is defined twice", name);
        if (strlen(formula) >= METRIC_FORMULA_MAX)
                return reason_fail(reterr_reason, reason_size, -E2BIG,
                                   "formula of '%s' is longer than %u characters", name,
                                   METRIC_FORMULA_MAX - 1);
        if (s->n_formulas >= METRIC_FORMULAS_MAX)
                return reason_fail(reterr_reason, reason_size, -E2BIG, "more than %u formulas", METRIC_FORMULAS_MAX);
        f = &s->formulas[s->n_formulas];
        *f = (Formula) { .name = strdup(name), .text = strdup(formula) };
        if (!f->name || !f->text) {
                free(f->name);
                free(f->text);
                *f = (Formula) {};
                return -ENOMEM;
        }
        return (int) s->n_formulas++;
}

static int parser_error(Formula *f, char *reterr_reason, size_t reason_size) {
        int r = reason_fail(reterr_reason, reason_size, -EINVAL,
                            "formula of '%s': %s", f->name, mupGetErrorMsg(f->parser));

        mupErrorReset(f->parser);
        return r;
}

/* Defines for f's parser exactly the names its text uses, and records the formulas among them. */
static int bind_names(MetricSet *s, Formula *f, char *reterr_reason, size_t reason_size) {
        _cleanup_free_ char **names = NULL;
        int n;

        mupSetExpr(f->parser, f->text);
        n = mupGetExprVarNum(f->parser);
        if (mupError(f->parser))
                return parser_error(f, reterr_reason, reason_size);
        if (n <= 0)
                return 0;
        names = calloc((size_t) n, sizeof(char *));
        f->uses = calloc((size_t) n, sizeof(size_t));
        f->variables = calloc((size_t) n, sizeof(size_t));
        if (!names || !f->uses || !f->variables)
                return -ENOMEM;
        for (int k = 0; k < n; k++) {
                const muChar_t *name = NULL;
                muFloat_t *ignored = NULL;

                mupGetExprVar(f->parser, (unsigned) k, &name, &ignored);
                names[k] = strdup(name ?: "");
                if (!names[k]) {
                        for (int j = 0; j < k; j++)
                                free(names[j]);
                        return -ENOMEM;
                }
        }
        /* muparser may move its list of used names when variables are defined, so the names
         * are copied first. */
        for (int k = 0; k < n; k++) {
                int v = metric_set_variable_index(s, names[k]), g = metric_set_formula_index(s, names[k]);
                int r = 0;

                if (v >= 0) {
                        mupDefineVar(f->parser, names[k], &s->variables[v]);
                        f->variables[f->n_variables++] = (size_t) v;
                } else if (g >= 0) {
                        mupDefineVar(f->parser, names[k], &s->formula_values[g]);
                        f->uses[f->n_uses++] = (size_t) g;
                } else
                        r = reason_fail(reterr_reason, reason_size, -EINVAL,
                                        "formula of '%s' uses '%s', "
                                        "which is no event, constant or metric of this group",
                                        f->name, names[k]);
                if (r == 0 && mupError(f->parser))
                        r = parser_error(f, reterr_reason, reason_size);
                if (r < 0) {
                        for (int j = 0; j < n; j++)
                                free(names[j]);
                        return r;
                }
        }
        for (int j = 0; j < n; j++)
                free(names[j]);
        return 0;
}

/* Depth-first: a formula goes into the order after everything it uses. */
static int order_visit(MetricSet *s, size_t i, unsigned char *state, size_t *n_ordered, char *reterr_reason,
                       size_t reason_size) {
        enum { UNSEEN, VISITING, DONE };
        Formula *f = &s->formulas[i];

        if (state[i] == DONE)
                return 0;
        if (state[i] == VISITING)
                return reason_fail(reterr_reason, reason_size, -EINVAL, "metric '%s' depends on itself", f->name);
        state[i] = VISITING;
        for (size_t k = 0; k < f->n_uses; k++) {
                int r = order_visit(s, f->uses[k], state, n_ordered, reterr_reason, reason_size);

                if (r < 0)
                        return r;
        }
        state[i] = DONE;
        s->order[(*n_ordered)++] = i;
        return 0;
}

/* perf's d_ratio(a, b): a / b, and 0 when b is 0 (perf's metrics use it where a zero
 * denominator means nothing happened, not an unknown). An unknown a or b is unknown. */
static muFloat_t d_ratio(muFloat_t a, muFloat_t b) {
        if (isnan(a) || isnan(b))
                return NAN;
        return b == 0 ? 0 : a / b;
}

/* muparser's own min and max return 0 for max(0, NaN) (a comparison with NaN is false), which
 * would print an unknown as 0; these replace them and give NaN when any argument is NaN. */
static muFloat_t nan_min(const muFloat_t *args, int n) {
        muFloat_t v = INFINITY;

        for (int i = 0; i < n; i++) {
                if (isnan(args[i]))
                        return NAN;
                v = fmin(v, args[i]);
        }
        return v;
}

static muFloat_t nan_max(const muFloat_t *args, int n) {
        muFloat_t v = -INFINITY;

        for (int i = 0; i < n; i++) {
                if (isnan(args[i]))
                        return NAN;
                v = fmax(v, args[i]);
        }
        return v;
}

int metric_set_compile(MetricSet *s, char *reterr_reason, size_t reason_size) {
        _cleanup_free_ unsigned char *state = NULL;
        size_t n_ordered = 0;
        int r;

        if (!s || s->compiled)
                return -EINVAL;
        for (size_t i = 0; i < s->n_formulas; i++) {
                Formula *f = &s->formulas[i];

                f->parser = mupCreate(muBASETYPE_FLOAT);
                if (!f->parser)
                        return -ENOMEM;
                mupDefineNameChars(f->parser, NAME_CHARS);
                mupDefineFun2(f->parser, "d_ratio", d_ratio, true);
                mupDefineMultFun(f->parser, "min", nan_min, true);
                mupDefineMultFun(f->parser, "max", nan_max, true);
                r = bind_names(s, f, reterr_reason, reason_size);
                if (r < 0)
                        return r;
                (void) mupEval(f->parser);
                if (mupError(f->parser))
                        return parser_error(f, reterr_reason, reason_size);
        }
        state = calloc(s->n_formulas ?: 1, 1);
        if (!state)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_formulas; i++) {
                r = order_visit(s, i, state, &n_ordered, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        s->compiled = true;
        return 0;
}

void metric_set_set(MetricSet *s, size_t variable, double value) {
        if (s && variable < s->n_variables)
                s->variables[variable] = value;
}

double metric_set_get(const MetricSet *s, size_t variable) {
        return s && variable < s->n_variables ? s->variables[variable] : NAN;
}

static double eval_one(Formula *f) {
        double v = mupEval(f->parser);

        if (mupError(f->parser)) {
                mupErrorReset(f->parser);
                return NAN;
        }
        return v;
}

/* Stand-ins for unknown inputs: zero, both signs, small and large magnitudes. */
static const double unknown_probes[] = { 0.0, 0.37, 1.0, -1.0, 1e6, -1e6, 1e-6 };

/* Sets every NaN input of f (its variables and the formulas it uses) to a finite stand-in,
 * different for each input and probe, or back to NaN (probe < 0). */
static void set_unknown_inputs(MetricSet *s, const Formula *f, const bool *unknown, int probe) {
        size_t n = 0;

        for (size_t k = 0; k < f->n_variables + f->n_uses; k++) {
                double *slot = k < f->n_variables ? &s->variables[f->variables[k]]
                                                  : &s->formula_values[f->uses[k - f->n_variables]];

                if (!unknown[k])
                        continue;
                *slot = probe < 0 ? NAN : unknown_probes[probe] * (1.0 + 0.618 * (double) n) + 1e-3 * (double) n;
                n++;
        }
}

static double input_value(const MetricSet *s, const Formula *f, size_t k) {
        return k < f->n_variables ? s->variables[f->variables[k]] : s->formula_values[f->uses[k - f->n_variables]];
}

/* A formula whose inputs include an unknown (NaN) is unknown unless its value does not depend
 * on that input at all: perf's formulas have branches like "SMT_on ? A : B" or "0 > 0 ? A : B"
 * whose unused side may name an event not counted here. muparser's comparisons and its
 * ternary treat NaN as false, so a finite result alone does not show that the unknown did not
 * count: the formula is evaluated again with the unknowns replaced by several different finite
 * values, and is NaN when any of these changes its value; when none does, that value is
 * the formula's. */
static double eval_with_unknowns(MetricSet *s, Formula *f) {
        _cleanup_free_ bool *unknown = NULL;
        size_t n_inputs = f->n_variables + f->n_uses;
        double v = eval_one(f), first = NAN;
        bool any = false;

        if (isnan(v))
                return v;
        for (size_t k = 0; k < n_inputs && !any; k++)
                any = isnan(input_value(s, f, k));
        if (!any)
                return v;
        unknown = calloc(n_inputs, sizeof(bool));
        if (!unknown)
                return NAN;
        for (size_t k = 0; k < n_inputs; k++)
                unknown[k] = isnan(input_value(s, f, k));
        for (size_t probe = 0; probe < ELEMENTSOF(unknown_probes); probe++) {
                double w;

                set_unknown_inputs(s, f, unknown, (int) probe);
                w = eval_one(f);
                if (probe == 0)
                        first = w;
                if (!(w == first || (isnan(w) && isnan(first)))) {
                        first = NAN;
                        break;
                }
        }
        set_unknown_inputs(s, f, unknown, -1);
        return first;
}

int metric_set_evaluate(MetricSet *s, double *values, size_t n_values) {
        if (!s || !s->compiled || (n_values > 0 && !values))
                return -EINVAL;
        for (size_t k = 0; k < s->n_formulas; k++) {
                size_t i = s->order[k];

                s->formula_values[i] = eval_with_unknowns(s, &s->formulas[i]);
        }
        for (size_t i = 0; i < n_values && i < s->n_formulas; i++)
                values[i] = s->formula_values[i];
        return 0;
}

size_t metric_set_n_formulas(const MetricSet *s) {
        return s ? s->n_formulas : 0;
}

size_t metric_set_n_variables(const MetricSet *s) {
        return s ? s->n_variables : 0;
}

static void mark_variables(const MetricSet *s, size_t i, bool *formula_seen, bool *used) {
        const Formula *f = &s->formulas[i];

        if (formula_seen[i])
                return;
        formula_seen[i] = true;
        for (size_t k = 0; k < f->n_variables; k++)
                used[f->variables[k]] = true;
        for (size_t k = 0; k < f->n_uses; k++)
                mark_variables(s, f->uses[k], formula_seen, used);
}

int metric_set_formula_variables(const MetricSet *s, size_t formula, bool *used) {
        _cleanup_free_ bool *seen = NULL;

        if (!s || !s->compiled || formula >= s->n_formulas || !used)
                return -EINVAL;
        seen = calloc(s->n_formulas, sizeof(bool));
        if (!seen)
                return -ENOMEM;
        memset(used, 0, s->n_variables * sizeof(bool));
        mark_variables(s, formula, seen, used);
        return 0;
}

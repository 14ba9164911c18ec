/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The [lbr] section of the simulator configuration: every value is checked and bounded here,
 * since the driver trusts what this lets through (addresses inside the map, weights that sum
 * to 1, a stack no deeper than the model's LBR)
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sim/sim-lbr.h"
#include "backend/sim/sim-parse.h"
#include "macro.h"

/* The longest value inih hands over is a line's length; a copy to split must hold it. */
#define SIM_LBR_VALUE_MAX 256U
#define SIM_LBR_PATH_MAX 4096U

SimLbrConfig *sim_lbr_free(SimLbrConfig *l) {
        if (!l)
                return NULL;
        free(l->binary);
        free(l);
        return NULL;
}

_printf_(3, 4) static int fail(char *reason, size_t reason_size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, reason_size, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* Splits a copy of value at blanks into at most max tokens; returns how many, or -E2BIG. */
static int split(const char *value, char *copy, size_t copy_size, char **tokens, size_t max) {
        char *save = NULL;
        size_t n = 0;

        if (strlen(value) >= copy_size)
                return -E2BIG;
        (void) snprintf(copy, copy_size, "%s", value);
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (n == max)
                        return -E2BIG;
                tokens[n++] = t;
        }
        return (int) n;
}

static int set_map(SimLbrConfig *l, unsigned line, const char *value, char *reason, size_t reason_size) {
        char copy[SIM_LBR_VALUE_MAX], *t[3];
        uint64_t start, len, pgoff;

        if (l->has_map)
                return fail(reason, reason_size, "map is given twice in [lbr] (first at line %u)",
                            l->map_line);
        if (split(value, copy, sizeof(copy), t, ELEMENTSOF(t)) != 3 ||
            sim_parse_u64(t[0], 0, SIM_LBR_USER_ADDRESS_END - 1, &start) < 0 ||
            sim_parse_u64(t[1], 1, SIM_LBR_USER_ADDRESS_END, &len) < 0 ||
            sim_parse_u64(t[2], 0, UINT64_MAX - SIM_LBR_PAGE, &pgoff) < 0)
                return fail(reason, reason_size,
                            "map = '%s': expected START LEN PGOFF of a user-space mapping, such as "
                            "0x555555555000 0x1000 0x1000", value);
        if (start % SIM_LBR_PAGE || len % SIM_LBR_PAGE || pgoff % SIM_LBR_PAGE)
                return fail(reason, reason_size,
                            "map = '%s': START, LEN and PGOFF are multiples of the page (%u)", value,
                            SIM_LBR_PAGE);
        if (len > SIM_LBR_USER_ADDRESS_END - start)
                return fail(reason, reason_size,
                            "map = '%s': the mapping ends above user space (0x%" PRIx64 ")", value,
                            SIM_LBR_USER_ADDRESS_END);
        l->has_map = true;
        l->map_line = line;
        l->map_start = start;
        l->map_len = len;
        l->map_pgoff = pgoff;
        return 0;
}

/* An absolute path as the kernel would report it: no empty, "." or ".." component, no control
 * characters (the name goes into a record a client prints). */
static bool path_canonical(const char *p) {
        size_t n = strlen(p);

        if (n < 2 || n >= SIM_LBR_PATH_MAX || p[0] != '/' || p[n - 1] == '/')
                return false;
        for (const char *c = p; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return false;
        for (const char *c = p; c; c = strchr(c + 1, '/')) {
                const char *next = strchr(c + 1, '/');
                size_t len = next ? (size_t) (next - c - 1) : strlen(c + 1);

                if (len == 0 || (len == 1 && c[1] == '.') || (len == 2 && c[1] == '.' && c[2] == '.'))
                        return false;
        }
        return true;
}

static int set_binary(SimLbrConfig *l, const char *value, char *reason, size_t reason_size) {
        char *copy;

        if (l->binary)
                return fail(reason, reason_size, "binary is given twice in [lbr]");
        if (!path_canonical(value))
                return fail(reason, reason_size,
                            "binary = '%s': expected an absolute path without '.', '..' or empty components",
                            value);
        copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        l->binary = copy;
        return 0;
}

/* MEAN:SD@WEIGHT, or MEAN:SD alone for a single normal (weight 1). */
static int parse_normal(const char *token, bool alone, SimLbrNormal *ret) {
        char copy[SIM_LBR_VALUE_MAX], *sd, *weight;

        if (strlen(token) >= sizeof(copy))
                return -EINVAL;
        (void) snprintf(copy, sizeof(copy), "%s", token);
        sd = strchr(copy, ':');
        if (!sd)
                return -EINVAL;
        *sd++ = '\0';
        weight = strchr(sd, '@');
        if (weight)
                *weight++ = '\0';
        else if (!alone)
                return -EINVAL;
        if (sim_parse_double(copy, 0.0, SIM_LBR_CYCLES_MAX, &ret->mean) < 0 ||
            sim_parse_double(sd, 0.0, SIM_LBR_CYCLES_MAX, &ret->sd) < 0)
                return -EINVAL;
        if (!weight) {
                ret->weight = 1.0;
                return 0;
        }
        if (sim_parse_double(weight, 0.0, 1.0, &ret->weight) < 0 || ret->weight <= 0.0)
                return -EINVAL;
        return 0;
}

static int add_branch(SimLbrConfig *l, unsigned line, const char *value, char *reason, size_t reason_size) {
        char copy[SIM_LBR_VALUE_MAX], *t[2 + SIM_LBR_MIX_MAX];
        SimLbrBranch b = { .line = line };
        double sum = 0.0;
        int n;

        if (l->n_branches >= SIM_LBR_BRANCHES_MAX)
                return fail(reason, reason_size, "more than %u branches in [lbr]", SIM_LBR_BRANCHES_MAX);
        n = split(value, copy, sizeof(copy), t, ELEMENTSOF(t));
        if (n == -E2BIG)
                return fail(reason, reason_size, "branch = '%s': at most %u normals MEAN:SD@WEIGHT", value,
                            SIM_LBR_MIX_MAX);
        if (n < 3 || sim_parse_u64(t[0], 0, SIM_LBR_USER_ADDRESS_END - 1, &b.from) < 0 ||
            sim_parse_u64(t[1], 0, SIM_LBR_USER_ADDRESS_END - 1, &b.to) < 0)
                return fail(reason, reason_size,
                            "branch = '%s': expected FROM TO MEAN:SD@WEIGHT..., user-space addresses and "
                            "at least one normal", value);
        b.n_mix = (size_t) n - 2;
        for (size_t i = 0; i < b.n_mix; i++) {
                if (parse_normal(t[2 + i], b.n_mix == 1, &b.mix[i]) < 0)
                        return fail(reason, reason_size,
                                    "branch: '%s' is no normal MEAN:SD@WEIGHT (MEAN and SD from 0 to %g, "
                                    "WEIGHT above 0 and at most 1; '@WEIGHT' only left out of a single "
                                    "normal)",
                                    t[2 + i], SIM_LBR_CYCLES_MAX);
                sum += b.mix[i].weight;
        }
        if (fabs(sum - 1.0) > SIM_LBR_WEIGHT_EPSILON)
                return fail(reason, reason_size, "branch = '%s': the weights sum to %.9g, not 1", value,
                            sum);
        l->branches[l->n_branches++] = b;
        return 0;
}

int sim_lbr_set(SimLbrConfig *l, unsigned line, const char *key, const char *value, char *reason,
                size_t reason_size) {
        uint64_t depth;

        if (!l || !key || !value || !reason || reason_size == 0)
                return -EINVAL;
        if (strcmp(key, "map") == 0)
                return set_map(l, line, value, reason, reason_size);
        if (strcmp(key, "binary") == 0)
                return set_binary(l, value, reason, reason_size);
        if (strcmp(key, "branch") == 0)
                return add_branch(l, line, value, reason, reason_size);
        if (strcmp(key, "depth") == 0) {
                if (l->depth != 0)
                        return fail(reason, reason_size, "depth is given twice in [lbr]");
                if (sim_parse_u64(value, 1, SIM_LBR_DEPTH_INTEL, &depth) < 0)
                        return fail(reason, reason_size, "depth = '%s': expected 1 to %u entries", value,
                                    SIM_LBR_DEPTH_INTEL);
                l->depth = (unsigned) depth;
                return 0;
        }
        return -ENOENT;
}

int sim_lbr_validate(const SimLbrConfig *l, unsigned *ret_line, char *reason, size_t reason_size) {
        *ret_line = l->line;
        if (!l->has_map)
                return fail(reason, reason_size, "[lbr] has no map = START LEN PGOFF");
        if (!l->binary)
                return fail(reason, reason_size, "[lbr] has no binary = /absolute/path");
        if (l->n_branches == 0)
                return fail(reason, reason_size, "[lbr] has no branch = FROM TO MEAN:SD@WEIGHT...");
        for (size_t i = 0; i < l->n_branches; i++) {
                const SimLbrBranch *b = &l->branches[i];

                if (b->from - l->map_start >= l->map_len || b->to - l->map_start >= l->map_len ||
                    b->from < l->map_start || b->to < l->map_start) {
                        *ret_line = b->line;
                        return fail(reason, reason_size,
                                    "branch 0x%" PRIx64 " -> 0x%" PRIx64 " lies outside the map 0x%" PRIx64
                                    "-0x%" PRIx64 " (line %u)", b->from, b->to, l->map_start,
                                    l->map_start + l->map_len, l->map_line);
                }
        }
        return 0;
}

unsigned sim_lbr_depth(const SimLbrConfig *l, bool amd) {
        unsigned model = amd ? SIM_LBR_DEPTH_AMD : SIM_LBR_DEPTH_INTEL;

        return l && l->depth != 0 ? MIN(l->depth, model) : model;
}

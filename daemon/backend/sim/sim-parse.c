/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict value parsers for the simulator configuration
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/sim/sim-parse.h"
#include "macro.h"

int sim_parse_double(const char *text, double min, double max, double *ret) {
        char *end;
        double v;

        if (!text || *text == '\0')
                return -EINVAL;
        errno = 0;
        v = strtod(text, &end);
        if (errno != 0 || end == text || *end != '\0' || !isfinite(v))
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int sim_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *ret) {
        unsigned long long v;
        char *end;

        /* strtoull accepts a sign and negates; a counter or address never has one */
        if (!text || *text == '\0' || *text == '-' || *text == '+')
                return -EINVAL;
        errno = 0;
        v = strtoull(text, &end, 0);
        if (errno != 0 || end == text || *end != '\0')
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = (uint64_t) v;
        return 0;
}

int sim_parse_bool(const char *text, bool *ret) {
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        if (!text)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(text, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(text, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

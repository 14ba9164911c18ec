/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU lists
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"
#include "macro.h"

static int parse_number(const char **p, uint32_t *ret) {
        char *end;
        unsigned long v;

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        errno = 0;
        v = strtoul(*p, &end, 10);
        if (errno != 0 || v > UINT32_MAX)
                return -ERANGE;
        *p = end;
        *ret = (uint32_t) v;
        return 0;
}

int cpulist_parse(const char *text, uint32_t max_cpu, uint32_t **ret_cpus, size_t *ret_n) {
        _cleanup_free_ uint8_t *seen = NULL;
        _cleanup_free_ uint32_t *cpus = NULL;
        const char *p = text;
        size_t n = 0;
        int r;

        if (!text || max_cpu == 0)
                return -EINVAL;
        while (isspace((unsigned char) *p))
                p++;
        if (*p == '\0')
                return -EINVAL;

        seen = calloc(max_cpu, 1);
        if (!seen)
                return -ENOMEM;

        for (;;) {
                uint32_t first, last;

                while (isspace((unsigned char) *p))
                        p++;
                r = parse_number(&p, &first);
                if (r < 0)
                        return r;
                last = first;
                if (*p == '-') {
                        p++;
                        r = parse_number(&p, &last);
                        if (r < 0)
                                return r;
                        if (last < first)
                                return -EINVAL;
                }
                if (last >= max_cpu)
                        return -ERANGE;
                for (uint32_t c = first; c <= last; c++)
                        seen[c] = 1;
                while (isspace((unsigned char) *p))
                        p++;
                if (*p == '\0')
                        break;
                if (*p != ',')
                        return -EINVAL;
                p++;
        }

        for (uint32_t c = 0; c < max_cpu; c++)
                n += seen[c];
        cpus = malloc(n * sizeof(*cpus));
        if (!cpus)
                return -ENOMEM;
        n = 0;
        for (uint32_t c = 0; c < max_cpu; c++)
                if (seen[c])
                        cpus[n++] = c;

        *ret_cpus = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

static int compare_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

int cpulist_format(const uint32_t *cpus, size_t n, char *buf, size_t size) {
        _cleanup_free_ uint32_t *sorted = NULL;
        size_t used = 0;

        if (size == 0)
                return -ENOBUFS;
        buf[0] = '\0';
        if (n == 0)
                return 0;
        sorted = malloc(n * sizeof(*sorted));
        if (!sorted)
                return -ENOMEM;
        memcpy(sorted, cpus, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), compare_u32);

        for (size_t i = 0; i < n;) {
                size_t j = i;
                int k;

                while (j + 1 < n && sorted[j + 1] <= sorted[j] + 1)
                        j++;
                if (sorted[j] == sorted[i])
                        k = snprintf(buf + used, size - used, "%s%" PRIu32, used ? "," : "", sorted[i]);
                else
                        k = snprintf(buf + used, size - used, "%s%" PRIu32 "-%" PRIu32, used ? "," : "",
                                     sorted[i], sorted[j]);
                if (k < 0 || (size_t) k >= size - used)
                        return -ENOBUFS;
                used += (size_t) k;
                i = j + 1;
        }
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU bitmaps as text
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "cpuset.h"

int cpuset_format(const CpuSet *s, char *buf, size_t size) {
        size_t used = 0;

        if (size == 0)
                return -ENOBUFS;
        buf[0] = '\0';
        for (uint32_t first = cpuset_next(s, 0); first < PMUGATE_CPUS_MAX;) {
                uint32_t last = first;
                int k;

                while (last + 1 < PMUGATE_CPUS_MAX && cpuset_has(s, last + 1))
                        last++;
                if (last == first)
                        k = snprintf(buf + used, size - used, "%s%" PRIu32, used ? "," : "", first);
                else
                        k = snprintf(buf + used, size - used, "%s%" PRIu32 "-%" PRIu32, used ? "," : "", first, last);
                if (k < 0 || (size_t) k >= size - used)
                        return -ENOBUFS;
                used += (size_t) k;
                first = cpuset_next(s, last + 1);
        }
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the parser of /proc/PID/cgroup, whose paths become file names under the cgroup
 * mount point
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "policy/scope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *path, size_t size) {
        char job[PMUGATE_STRING_MAX + 1];
        size_t n = strnlen(path, size), stop;

        assert(n < size);
        if (n == 0)
                return;
        /* Absolute, and nothing that climbs out of the mount point. */
        assert(path[0] == '/');
        assert(!strstr(path, "/../") && !strstr(path, "/./") && !strstr(path, "//"));
        assert(n < 3 || strcmp(path + n - 3, "/..") != 0);
        stop = scope_find_job(path, job, sizeof(job));
        assert(stop <= n);
        assert(stop == 0 || (job[0] && (path[stop] == '\0' || path[stop] == '/')));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* Small outputs too, so the "does not fit" path is taken. */
        static const size_t path_sizes[] = { 2048, 16 };

        for (size_t i = 0; i < sizeof(path_sizes) / sizeof(path_sizes[0]); i++) {
                char v2[2048], v1[2048];
                int r;

                r = scope_parse_proc_cgroup((const char *) data, size, v2, v1, path_sizes[i]);
                assert(r == 0 || r == -EINVAL || r == -ENAMETOOLONG);
                if (r < 0) {
                        assert(v2[0] == '\0' && v1[0] == '\0');
                        continue;
                }
                check_path(v2, path_sizes[i]);
                check_path(v1, path_sizes[i]);
        }
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the kernel's perf event descriptions the daemon reads from sysfs under --root
 * (daemon/backend/perf-counters.c), the event file and the format files it names
 *
 * and perf_format_parse_mask() on every format line (the perf_event path's catalogue,
 * perf-catalog-sysfs.c)
 *
 * Input: the event file's text on the first line, then one format file per line as "TERM TEXT"
 * ("umask config:8-15"). A term without a line has no format file (-ENOENT).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/perf-format.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Formats {
        char *lines;            /* the format lines, NUL-separated "TERM TEXT" */
        size_t size;
        uint64_t placed;        /* bits of the terms the parser looked up, as their formats say */
} Formats;

static void check_format(const char *text) {
        unsigned lo = 1000, hi = 1000, lo2, hi2, word = 1000;
        uint64_t mask = 42;
        char again[32];
        int r = perf_format_parse(text, &lo, &hi), r_mask = perf_format_parse_mask(text, &word, &mask);

        /* the catalogue's parser: any config word, comma-joined ranges; untouched on refusal */
        fuzz_assert(r_mask == 0 || r_mask == -EINVAL);
        if (r_mask < 0)
                fuzz_assert(word == 1000 && mask == 42);
        else
                fuzz_assert(word <= 2 && mask != 0 && strncmp(text, "config", 6) == 0);
        /* where both accept (the older one also takes "+7" and " 7"), they read the same bits */
        if (r == 0 && r_mask == 0)
                fuzz_assert(word == 0 &&
                            mask == (hi - lo == 63 ? UINT64_MAX : ((UINT64_C(1) << (hi - lo + 1)) - 1) << lo));

        fuzz_assert(r == 0 || r == -EINVAL || r == -EOPNOTSUPP);
        if (r < 0) {
                fuzz_assert(lo == 1000 && hi == 1000);
                return;
        }
        fuzz_assert(strncmp(text, "config:", 7) == 0);
        fuzz_assert(lo <= hi && hi <= 63);
        /* what it means prints back into a format that means the same */
        (void) snprintf(again, sizeof(again), "config:%u-%u", lo, hi);
        fuzz_assert(perf_format_parse(again, &lo2, &hi2) == 0 && lo2 == lo && hi2 == hi);
}

static int lookup(const char *term, char *buf, size_t size, void *userdata) {
        Formats *f = userdata;
        size_t n = strlen(term);

        fuzz_assert(n > 0 && n < 32);
        for (const char *p = term; *p; p++)
                fuzz_assert((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
        for (char *line = f->lines; line && line < f->lines + f->size; line += strlen(line) + 1) {
                unsigned lo, hi;

                if (strncmp(line, term, n) != 0 || line[n] != ' ')
                        continue;
                if (strlen(line + n + 1) >= size)
                        return -EFBIG;
                memcpy(buf, line + n + 1, strlen(line + n + 1) + 1);
                if (perf_format_parse(buf, &lo, &hi) == 0)
                        f->placed |= (hi - lo == 63 ? UINT64_MAX : (UINT64_C(1) << (hi - lo + 1)) - 1) << lo;
                return 0;
        }
        return -ENOENT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *copy = fuzz_copy(data, size), *nl;
        Formats f = {};
        uint64_t config = UINT64_C(0xdeadbeef);
        int r;

        /* a text file reads up to its first NUL, as machine_read_text() refuses the rest */
        size = strlen(copy);
        nl = strchr(copy, '\n');
        if (nl) {
                *nl = '\0';
                f.lines = nl + 1;
                f.size = size - (size_t) (f.lines - copy);
                for (char *p = f.lines; p < f.lines + f.size; p++)
                        if (*p == '\n')
                                *p = '\0';
                for (char *line = f.lines; line < f.lines + f.size; line += strlen(line) + 1) {
                        char *space = strchr(line, ' ');

                        check_format(space ? space + 1 : line);
                }
        }
        check_format(copy);

        r = perf_event_parse(copy, lookup, &f, &config);
        fuzz_assert(r == 0 || r == -EINVAL || r == -ERANGE || r == -EOPNOTSUPP || r == -ENOENT ||
                    r == -EFBIG);
        if (r < 0)
                fuzz_assert(config == UINT64_C(0xdeadbeef));
        else
                /* a value lands only in bits its term's format names */
                fuzz_assert((config & ~f.placed) == 0);
        free(copy);
        return 0;
}

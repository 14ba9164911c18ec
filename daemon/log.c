/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Daemon logging
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internal(int level, int error, const char *fmt, ...) {
        int saved = errno, e = abs(error);
        char buf[1024];
        va_list ap;

        if (level > max_level)
                return -e;
        va_start(ap, fmt);
        (void) vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (e > 0)
                (void) fprintf(stderr, "<%d>%s: %s\n", level, buf, strerror(e));
        else
                (void) fprintf(stderr, "<%d>%s\n", level, buf);
        errno = saved;
        return -e;
}

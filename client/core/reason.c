/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One-line reasons
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/reason.h"

int reason_fail(char *buf, size_t size, int error, const char *format, ...) {
        va_list ap;

        if (buf && size > 0) {
                va_start(ap, format);
                (void) vsnprintf(buf, size, format, ap);
                va_end(ap);
        }
        return error;
}

void reason_set(char *buf, size_t size, const char *format, ...) {
        va_list ap;

        if (buf && size > 0) {
                va_start(ap, format);
                (void) vsnprintf(buf, size, format, ap);
                va_end(ap);
        }
}

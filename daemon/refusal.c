/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Refusals, filled by checks and packed only by the dispatcher
 */
#include <stdio.h>

#include "refusal.h"

int refuse_v(Refusal *ret, int code, int64_t op_index, const char *fmt, va_list ap) {
        ret->code = code;
        ret->op_index = op_index;
        (void) vsnprintf(ret->reason, sizeof(ret->reason), fmt, ap);
        return code;
}

int refuse(Refusal *ret, int code, int64_t op_index, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = refuse_v(ret, code, op_index, fmt, ap);
        va_end(ap);
        return r;
}

void refusal_clear(Refusal *ret) {
        *ret = (Refusal) { .op_index = -1 };
}

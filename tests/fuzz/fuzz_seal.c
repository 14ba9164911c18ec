/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sealing fuzz inputs of state files
 */
#include <string.h>

#include "fuzz_seal.h"

int fuzz_seal_lines(const uint8_t **data, size_t *size, StateBuffer *b) {
        const char *p = (const char *) *data + 1, *end = (const char *) *data + *size;

        if (*size == 0 || (*data)[0] != '!')
                return 0;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t len = nl ? (size_t) (nl - p) : (size_t) (end - p);

                state_buffer_record(b, "%.*s", (int) len, p);
                p += len + 1;
        }
        if (b->error < 0)
                return b->error;
        *data = (const uint8_t *) b->data;
        *size = b->size;
        return 0;
}

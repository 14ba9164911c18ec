/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by the fuzz targets: the input as a stream or as a string
 */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A private copy of the input, so that a parser reading past its end is an ASan report
 * instead of a read of whatever follows in the fuzzer's buffer. The copy is NUL-terminated for
 * targets that take a string; a stream over it still ends at size. */
static inline char *fuzz_copy(const uint8_t *data, size_t size) {
        char *copy = malloc(size + 1);

        if (!copy)
                abort();
        if (size > 0)
                memcpy(copy, data, size);
        copy[size] = '\0';
        return copy;
}

/* A read-only stream over copy's first size bytes, as a parser sees a file. Close it before
 * freeing copy. */
static inline FILE *fuzz_open_stream(char *copy, size_t size) {
        FILE *f = fmemopen(copy, size, "r");

        if (!f)
                abort();
        return f;
}

/* An invariant the target checks: unlike assert(), never compiled out. */
#define fuzz_assert(expr)                                                                       \
        do {                                                                                    \
                if (!(expr)) {                                                                  \
                        fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                \
                }                                                                               \
        } while (0)

/* Whether a fixed-size field holds a terminated string. */
#define FUZZ_TERMINATED(field) (strnlen((field), sizeof(field)) < sizeof(field))

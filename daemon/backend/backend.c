/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backends: what every backend shares
 */
#include <stddef.h>

#include "backend/backend.h"

Backend *backend_free(Backend *b) {
        if (b)
                b->vtable->free(b);
        return NULL;
}

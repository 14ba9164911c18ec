/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: package counters (hello's "counters") and what their counts mean
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/connection.h"
#include "core/package-counters.h"
#include "macro.h"
#include "message.h"
#include "pmugate/package.h"
#include "wire.h"


static bool get_double(const msgpack_object *o, double *ret) {
        int64_t i;

        if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) {
                *ret = o->via.f64;
                return true;
        }
        if (object_get_int(o, &i)) {
                *ret = (double) i;
                return true;
        }
        return false;
}

int package_counters_decode(const msgpack_object *reply, pmugate_counter **ret_counters, size_t *ret_n) {
        const msgpack_object *a = msgpack_map_get(reply, "counters");
        _cleanup_free_ pmugate_counter *counters = NULL;

        if (!a) {
                *ret_counters = NULL;
                *ret_n = 0;
                return 0;
        }
        if (a->type != MSGPACK_OBJECT_ARRAY)
                return -EBADMSG;
        counters = calloc(a->via.array.size ?: 1, sizeof(pmugate_counter));
        if (!counters)
                return -ENOMEM;
        for (uint32_t i = 0; i < a->via.array.size; i++) {
                const msgpack_object *t = &a->via.array.ptr[i];
                pmugate_counter *c = &counters[i];
                int64_t index, package, width;

                if (t->type != MSGPACK_OBJECT_ARRAY || t->via.array.size < _HELLO_COUNTER_FIELDS)
                        return -EBADMSG;
                if (!object_get_int(&t->via.array.ptr[HELLO_COUNTER_INDEX], &index) || index < 0 ||
                    index > UINT32_MAX ||
                    !object_get_int(&t->via.array.ptr[HELLO_COUNTER_PACKAGE], &package) ||
                    package < INT32_MIN || package > INT32_MAX ||
                    !object_get_int(&t->via.array.ptr[HELLO_COUNTER_WIDTH], &width) || width < 1 ||
                    width > 64 ||
                    !get_double(&t->via.array.ptr[HELLO_COUNTER_SCALE], &c->scale))
                        return -EBADMSG;
                c->index = (uint32_t) index;
                c->package = (int32_t) package;
                c->width = (uint8_t) width;
                object_copy_string(&t->via.array.ptr[HELLO_COUNTER_NAME], c->name, sizeof(c->name));
                object_copy_string(&t->via.array.ptr[HELLO_COUNTER_UNIT], c->unit, sizeof(c->unit));
                object_copy_string(&t->via.array.ptr[HELLO_COUNTER_CLASS], c->cls, sizeof(c->cls));
                object_copy_string(&t->via.array.ptr[HELLO_COUNTER_ERROR], c->error, sizeof(c->error));
        }
        *ret_n = a->via.array.size;
        *ret_counters = TAKE_PTR(counters);
        return 0;
}

uint64_t pmugate_counter_delta(uint64_t before, uint64_t after, unsigned width) {
        uint64_t mask = width >= 64 || width == 0 ? UINT64_MAX : (UINT64_C(1) << width) - 1;

        return (after - before) & mask;
}

static const char *event_of(const pmugate_counter *c) {
        const char *slash = strrchr(c->name, '/');

        return slash ? slash + 1 : c->name;
}

pmugate_counter_kind pmugate_counter_kind_of(const pmugate_counter *c) {
        const char *event;

        if (!c || strcmp(c->cls, "uncore-imc") != 0)
                return PMUGATE_COUNTER_OTHER;
        event = event_of(c);
        if (strcmp(event, "cas_count_read") == 0 || strcmp(event, "read") == 0)
                return PMUGATE_COUNTER_DRAM_READ;
        if (strcmp(event, "cas_count_write") == 0 || strcmp(event, "write") == 0)
                return PMUGATE_COUNTER_DRAM_WRITE;
        return PMUGATE_COUNTER_OTHER;
}

double pmugate_counter_bytes(const pmugate_counter *c) {
        static const struct {
                const char *unit;
                double bytes;
        } units[] = {
                { "B", 1.0 }, { "Bytes", 1.0 }, { "KiB", 1024.0 }, { "MiB", 1048576.0 },
                { "GiB", 1073741824.0 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 },
        };

        if (!c || !isfinite(c->scale) || c->scale <= 0)
                return 0.0;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(c->unit, units[i].unit) == 0)
                        return c->scale * units[i].bytes;
        return 0.0;
}

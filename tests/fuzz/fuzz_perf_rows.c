/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the rows of a perf_read reply as libpmugate checks them (client/core/perf-wire.h)
 * against the groups it opened: two targets, groups of 3 and 1 events
 */
#include <errno.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/perf-wire.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const int64_t targets[] = { 0, 7 };
        static const size_t sizes[] = { 3, 1 };
        PerfRowLayout layout = { targets, 2, sizes, 2 };
        char *copy = fuzz_copy(data, size);
        pmugate_perf_row rows[4];
        uint64_t values[8];
        msgpack_zone zone;
        msgpack_object o;
        size_t off = 0, at = 0;

        fuzz_assert(perf_layout_values(&layout) == 8);
        if (!msgpack_zone_init(&zone, 4096))
                abort();
        if (msgpack_unpack(copy, size, &off, &zone, &o) == MSGPACK_UNPACK_SUCCESS && o.type == MSGPACK_OBJECT_MAP) {
                /* a reply in two parts: the same bytes twice, as the second part */
                for (int part = 0; part < 2; part++) {
                        size_t before = at;
                        int r = perf_rows_decode(&o, &layout, rows, values, &at);

                        fuzz_assert(r == 0 || r == -EBADMSG);
                        fuzz_assert(at <= 4 && at >= before);
                        if (r < 0)
                                break;
                        for (size_t k = before; k < at; k++) {
                                fuzz_assert(rows[k].target == targets[k / 2]);
                                fuzz_assert(rows[k].group == k % 2);
                                fuzz_assert(rows[k].n_values == sizes[k % 2]);
                                fuzz_assert(rows[k].time_running <= rows[k].time_enabled);
                                fuzz_assert(rows[k].status <= 0);
                                fuzz_assert(rows[k].values >= values && rows[k].values + rows[k].n_values <= values + 8);
                        }
                }
        }
        msgpack_zone_destroy(&zone);
        free(copy);
        return 0;
}

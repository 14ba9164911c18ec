/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf requests' wire, without I/O (client/core/perf.c sends them): what a perf_open
 * request holds and what a perf_read reply must hold, so both can be tested alone
 */
#pragma once

#include <msgpack.h>

#include "pmugate/perf.h"

/* Checks req against the wire's rules and limits before anything is sent: reason says why
 * not. Returns 0 or -EINVAL / -E2BIG. */
int perf_request_check(const pmugate_perf_request *req, char *reason, size_t size);

/* The keys a perf_open request carries after "v", "id" and "op". */
size_t perf_request_keys(const pmugate_perf_request *req);

/* Packs those keys (docs/PROTOCOL.md, perf_open). */
int perf_request_pack(msgpack_packer *pk, const pmugate_perf_request *req);

/* What a perf_read reply must hold: for each of n_targets targets (in this order) one row per
 * group, each with group_sizes[g] values (a row whose status is an error may carry fewer). */
typedef struct PerfRowLayout {
        const int64_t *targets;
        size_t n_targets;
        const size_t *group_sizes;
        size_t n_groups;
} PerfRowLayout;

/* Decodes the rows of one reply part (the array under "rows") into rows[*at...], values into
 * the row's own slots (values + the row's offset, zero-filled), advancing *at. A row out of
 * order, of a foreign target or group, with more values than its group, or past the layout
 * is -EBADMSG; a time_running above time_enabled is taken as time_enabled. */
int perf_rows_decode(const msgpack_object *reply, const PerfRowLayout *layout, pmugate_perf_row *rows,
                     uint64_t *values, size_t *at);

/* The number of value slots a layout needs, and where row k's start. */
size_t perf_layout_values(const PerfRowLayout *layout);
size_t perf_layout_value_offset(const PerfRowLayout *layout, size_t row);

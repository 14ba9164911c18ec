/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One event of a perf_open request as the client asked for it, and its decoder: proto's
 * request decoder calls it for every EVENT of "groups", and perf/perf-attr.c turns the result
 * into a validated struct perf_event_attr. Here, not in perf/, because proto includes no
 * daemon header and the request fuzz target reaches it this way. docs/PROTOCOL.md, "perf_open".
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate-limits.h"

typedef struct PerfEventSpec {
        char pmu[PERF_PMU_NAME_MAX];
        uint64_t config, config1, config2;
        bool has_config1, has_config2;
        bool count_kernel;              /* "kernel": true */
        char name[PERF_EVENT_NAME_MAX + 1];
} PerfEventSpec;

typedef enum PerfScope {
        PERF_SCOPE_CPU,
        PERF_SCOPE_JOB,
        PERF_SCOPE_PROCESS,
        _PERF_SCOPE_MAX,
        _PERF_SCOPE_INVALID = -1,
} PerfScope;

/* The scope's wire name ("cpu", "job", "process"), NULL outside the enum. */
const char *perf_scope_to_string(PerfScope s);
/* The scope whose name is exactly the n bytes at s, or _PERF_SCOPE_INVALID. */
PerfScope perf_scope_from_string(const char *s, size_t n);

/* Decodes one EVENT map into ret. Returns 0, or a positive ProtoError with reason filled
 * ("field 'sample_period' is not accepted: pmugate counts, it does not sample"); ret is then
 * unspecified. */
int perf_event_spec_decode(const msgpack_object *map, PerfEventSpec *ret, char *reason, size_t reason_size);

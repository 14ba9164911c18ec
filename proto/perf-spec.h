/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format of the perf_event path: one EVENT of a perf_open request as a client asked for it
 * (docs/PROTOCOL.md), decoded from a peer's bytes. daemon/perf/perf-attr.c turns it into a
 * validated struct perf_event_attr; nothing here knows the machine or the policy.
 */
#pragma once

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmugate-limits.h"

typedef struct PerfEventSpec {
        char pmu[PERF_PMU_NAME_MAX];    /* "cpu", "hardware", "software", an uncore PMU: [a-z0-9_] */
        uint64_t config, config1, config2;
        bool has_config1, has_config2;
        bool count_kernel;              /* "kernel": true */
        char name[PERF_EVENT_NAME_MAX + 1]; /* "" when the client gave none */
} PerfEventSpec;

/* perf_open's "scope": what its events count (docs/PERF.md). */
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

/* Decodes one EVENT map: "pmu" and "config" required, "config1", "config2", "kernel" and "name"
 * optional, each at most once. Any other key is refused naming it; a key that is a field of
 * the kernel's struct perf_event_attr gets the reason pmugate never sets it from a client's word
 * ("field 'sample_period' is not accepted: pmugate counts, it does not sample"). Returns 0, or
 * PROTO_E_BAD_FIELD with a printable reason; ret is written only on success. */
int perf_event_spec_decode(const msgpack_object *map, PerfEventSpec *ret, char *reason, size_t reason_size);

/* Why the kernel's attr field name is not accepted in an EVENT, or NULL for a name that is no
 * such field (or one EVENT carries under its own key: config, config1, config2). */
const char *perf_attr_field_refusal(const char *name);

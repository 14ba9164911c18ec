/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Decoding of one perf_open EVENT (perf-spec.h): client bytes, read as hostile input. Every
 * key is known or refused by name; the names of the kernel's perf_event_attr fields a client
 * might try get the reason they are not served.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "macro.h"
#include "perf-spec.h"

static const char *const perf_scope_names[_PERF_SCOPE_MAX] = {
        [PERF_SCOPE_CPU] = "cpu",
        [PERF_SCOPE_JOB] = "job",
        [PERF_SCOPE_PROCESS] = "process",
};

const char *perf_scope_to_string(PerfScope s) {
        if ((unsigned) s >= _PERF_SCOPE_MAX)
                return NULL;
        return perf_scope_names[s];
}

PerfScope perf_scope_from_string(const char *s, size_t n) {
        for (unsigned i = 0; i < _PERF_SCOPE_MAX; i++)
                if (n == strlen(perf_scope_names[i]) && memcmp(s, perf_scope_names[i], n) == 0)
                        return (PerfScope) i;
        return _PERF_SCOPE_INVALID;
}

/* Fields of struct perf_event_attr (and perf's own spellings) a client may know, with why
 * pmugate does not take them: the daemon builds the attr, counting only. */
static const struct {
        const char *field;
        const char *why;
} refused_fields[] = {
        { "type", "the daemon sets the type from 'pmu'" },
        { "size", "the daemon sets the attr's size" },
        { "sample_period", "pmugate counts, it does not sample" },
        { "sample_freq", "pmugate counts, it does not sample" },
        { "sample_type", "pmugate counts, it does not sample" },
        { "freq", "pmugate counts, it does not sample" },
        { "wakeup_events", "pmugate counts, it does not sample" },
        { "wakeup_watermark", "pmugate counts, it does not sample" },
        { "precise_ip", "pmugate counts, it does not sample" },
        { "mmap", "pmugate counts, it does not record" },
        { "comm", "pmugate counts, it does not record" },
        { "task", "pmugate counts, it does not record" },
        { "sample_regs_user", "registers are never sampled through pmugate" },
        { "sample_regs_intr", "registers are never sampled through pmugate" },
        { "sample_stack_user", "stacks are never sampled through pmugate" },
        { "branch_sample_type", "branches are never sampled through pmugate" },
        { "bp_type", "breakpoints are not served" },
        { "bp_addr", "breakpoints are not served" },
        { "bp_len", "breakpoints are not served" },
        { "kprobe_func", "kprobes are not served" },
        { "uprobe_path", "uprobes are not served" },
        { "config3", "no PMU pmugate serves has a config3" },
        { "read_format", "the daemon sets read_format: every read carries the times and the group" },
        { "disabled", "the daemon opens leaders disabled and enables them; use 'on_exec' of the request" },
        { "enable_on_exec", "use 'on_exec' of the request" },
        { "inherit", "use 'follow' of the request" },
        { "pinned", "pinned events are not served: the kernel multiplexes, reads carry the scale" },
        { "exclusive", "exclusive events are not served" },
        { "exclude_user", "the daemon sets the exclude bits; ask 'kernel' to count the kernel too" },
        { "exclude_kernel", "the daemon sets the exclude bits; ask 'kernel' to count the kernel too" },
        { "exclude_hv", "hypervisor counting is never served" },
        { "exclude_idle", "the daemon sets the exclude bits" },
        { "exclude_host", "the daemon sets the exclude bits" },
        { "exclude_guest", "the daemon sets the exclude bits" },
        { "aux_output", "aux output is not served" },
        { "sigtrap", "signals on overflow are not served" },
        { "bpf", "BPF programs are not attached through pmugate" },
        { "cgroup", "use 'scope': 'job'" },
        { "pid", "give 'pid' in the request, not in an event" },
        { "cpu", "give 'cpus' in the request, not in an event" },
};

_printf_(3, 4) static int refuse_spec(char *reason, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, size, fmt, ap);
        va_end(ap);
        for (char *p = reason; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p > 0x7e)
                        *p = '?';
        return PROTO_E_BAD_FIELD;
}

static bool key_is(const msgpack_object *k, const char *s) {
        size_t n = strlen(s);

        return k->via.str.size == n && memcmp(k->via.str.ptr, s, n) == 0;
}

/* Names as sysfs spells them: letters, digits, '_' and '-'. */
static bool copy_name(const msgpack_object *o, char *out, size_t out_size, bool pmu) {
        if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= out_size || (pmu && o->via.str.size == 0))
                return false;
        for (uint32_t i = 0; i < o->via.str.size; i++) {
                char c = o->via.str.ptr[i];

                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || (!pmu && (c == '.' || c == ':'))))
                        return false;
        }
        memcpy(out, o->via.str.ptr, o->via.str.size);
        out[o->via.str.size] = '\0';
        return true;
}

int perf_event_spec_decode(const msgpack_object *map, PerfEventSpec *ret, char *reason, size_t reason_size) {
        enum { SEEN_PMU = 1, SEEN_CONFIG = 2, SEEN_CONFIG1 = 4, SEEN_CONFIG2 = 8, SEEN_KERNEL = 16, SEEN_NAME = 32 };
        PerfEventSpec spec = {};
        unsigned seen = 0;

        if (!map || map->type != MSGPACK_OBJECT_MAP)
                return refuse_spec(reason, reason_size, "an event must be a map {\"pmu\": ..., \"config\": ...}");

        for (uint32_t i = 0; i < map->via.map.size; i++) {
                const msgpack_object *k = &map->via.map.ptr[i].key, *v = &map->via.map.ptr[i].val;
                unsigned bit;

                if (k->type != MSGPACK_OBJECT_STR)
                        return refuse_spec(reason, reason_size, "an event's keys must be strings");
                bit = key_is(k, "pmu") ? SEEN_PMU : key_is(k, "config") ? SEEN_CONFIG :
                      key_is(k, "config1") ? SEEN_CONFIG1 : key_is(k, "config2") ? SEEN_CONFIG2 :
                      key_is(k, "kernel") ? SEEN_KERNEL : key_is(k, "name") ? SEEN_NAME : 0;
                if (bit == 0) {
                        for (size_t f = 0; f < ELEMENTSOF(refused_fields); f++)
                                if (key_is(k, refused_fields[f].field))
                                        return refuse_spec(reason, reason_size, "field '%s' is not accepted: %s",
                                                           refused_fields[f].field, refused_fields[f].why);
                        return refuse_spec(reason, reason_size,
                                           "unknown event field '%.*s' (an event has pmu, config, config1, config2, kernel, name)",
                                           (int) MIN(k->via.str.size, 32U), k->via.str.ptr);
                }
                if (seen & bit)
                        return refuse_spec(reason, reason_size, "duplicate event field '%.*s'", (int) k->via.str.size,
                                           k->via.str.ptr);
                seen |= bit;

                switch (bit) {
                case SEEN_PMU:
                        if (!copy_name(v, spec.pmu, sizeof(spec.pmu), true))
                                return refuse_spec(reason, reason_size,
                                                   "'pmu' must be a PMU's name of 1 to %u letters, digits, '_' or '-'",
                                                   PERF_PMU_NAME_MAX - 1);
                        break;
                case SEEN_CONFIG:
                case SEEN_CONFIG1:
                case SEEN_CONFIG2: {
                        uint64_t *out = bit == SEEN_CONFIG ? &spec.config : bit == SEEN_CONFIG1 ? &spec.config1 : &spec.config2;

                        if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                                return refuse_spec(reason, reason_size, "'%.*s' must be an unsigned 64-bit integer",
                                                   (int) k->via.str.size, k->via.str.ptr);
                        *out = v->via.u64;
                        spec.has_config1 |= bit == SEEN_CONFIG1;
                        spec.has_config2 |= bit == SEEN_CONFIG2;
                        break;
                }
                case SEEN_KERNEL:
                        if (v->type != MSGPACK_OBJECT_BOOLEAN)
                                return refuse_spec(reason, reason_size, "'kernel' must be true or false");
                        spec.count_kernel = v->via.boolean;
                        break;
                case SEEN_NAME:
                        if (!copy_name(v, spec.name, sizeof(spec.name), false))
                                return refuse_spec(reason, reason_size,
                                                   "'name' must be at most %u letters, digits, '_', '-', '.' or ':'",
                                                   PERF_EVENT_NAME_MAX);
                        break;
                }
        }
        if (!(seen & SEEN_PMU) || !(seen & SEEN_CONFIG))
                return refuse_spec(reason, reason_size, "an event needs 'pmu' and 'config'");
        *ret = spec;
        return 0;
}

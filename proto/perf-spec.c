/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format: the decoder of one perf_open EVENT, untrusted input like every request
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "macro.h"
#include "perf-spec.h"

#define SAMPLING "pmugate counts, it does not sample"
#define SET_BY_DAEMON "the daemon sets it"
#define SET_BY_SCOPE "the daemon sets it from the request's scope, 'follow' and 'on_exec'"
#define SIDE_BAND "side-band records belong to sampling; pmugate counts, it does not sample"

/* Every field of the kernel's struct perf_event_attr (linux/perf_event.h, up to
 * PERF_ATTR_SIZE_VER8 and its aux_action bits) but those an EVENT carries itself. */
static const struct {
        const char *name;
        const char *why;
} attr_fields[] = {
        { "type", "name the PMU with 'pmu'" },
        { "size", SET_BY_DAEMON },
        { "sample_period", SAMPLING },
        { "sample_freq", SAMPLING },
        { "sample_type", SAMPLING },
        { "read_format", "the daemon reads every event with its group, time enabled and time running" },
        { "disabled", SET_BY_SCOPE },
        { "inherit", SET_BY_SCOPE },
        { "pinned", "the kernel schedules the daemon's events; they are never pinned" },
        { "exclusive", "the kernel schedules the daemon's events; they are never exclusive" },
        { "exclude_user", "user space is always counted" },
        { "exclude_kernel", "ask for kernel counting with 'kernel'" },
        { "exclude_hv", "the hypervisor is never counted" },
        { "exclude_idle", SET_BY_DAEMON },
        { "mmap", SIDE_BAND },
        { "comm", SIDE_BAND },
        { "freq", SAMPLING },
        { "inherit_stat", SAMPLING },
        { "enable_on_exec", SET_BY_SCOPE },
        { "task", SIDE_BAND },
        { "watermark", SAMPLING },
        { "precise_ip", SAMPLING },
        { "mmap_data", SIDE_BAND },
        { "sample_id_all", SAMPLING },
        { "exclude_host", SET_BY_DAEMON },
        { "exclude_guest", SET_BY_DAEMON },
        { "exclude_callchain_kernel", SAMPLING },
        { "exclude_callchain_user", SAMPLING },
        { "mmap2", SIDE_BAND },
        { "comm_exec", SIDE_BAND },
        { "use_clockid", SAMPLING },
        { "context_switch", SIDE_BAND },
        { "write_backward", SAMPLING },
        { "namespaces", SIDE_BAND },
        { "ksymbol", SIDE_BAND },
        { "bpf_event", SIDE_BAND },
        { "aux_output", "AUX area tracing is never opened" },
        { "cgroup", SIDE_BAND },
        { "text_poke", SIDE_BAND },
        { "build_id", SIDE_BAND },
        { "inherit_thread", SET_BY_SCOPE },
        { "remove_on_exec", SET_BY_SCOPE },
        { "sigtrap", "events never send signals" },
        { "wakeup_events", SAMPLING },
        { "wakeup_watermark", SAMPLING },
        { "bp_type", "breakpoints are never opened" },
        { "bp_addr", "breakpoints are never opened" },
        { "bp_len", "breakpoints are never opened" },
        { "kprobe_func", "kprobes are never opened" },
        { "kprobe_addr", "kprobes are never opened" },
        { "uprobe_path", "uprobes are never opened" },
        { "probe_offset", "kprobes and uprobes are never opened" },
        { "branch_sample_type", "branch sampling is not on this path; pmugate counts, it does not sample" },
        { "sample_regs_user", "registers are never sampled" },
        { "sample_stack_user", "stacks are never sampled" },
        { "clockid", SAMPLING },
        { "sample_regs_intr", "registers are never sampled" },
        { "aux_watermark", "AUX area tracing is never opened" },
        { "sample_max_stack", SAMPLING },
        { "aux_sample_size", "AUX area tracing is never opened" },
        { "aux_action", "AUX area tracing is never opened" },
        { "aux_start_paused", "AUX area tracing is never opened" },
        { "aux_pause", "AUX area tracing is never opened" },
        { "aux_resume", "AUX area tracing is never opened" },
        { "sig_data", "events never send signals" },
        { "config3", "no PMU pmugate serves has a config3 field" },
};

const char *perf_attr_field_refusal(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(attr_fields); i++)
                if (strcmp(attr_fields[i].name, name) == 0)
                        return attr_fields[i].why;
        return NULL;
}

_printf_(3, 4) static int refuse(char *reason, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, size, fmt, ap);
        va_end(ap);
        /* reasons quote client bytes: printable ASCII only, valid UTF-8 and safe in a log */
        for (char *p = reason; *p; p++)
                if ((unsigned char) *p < 0x20 || (unsigned char) *p > 0x7e)
                        *p = '?';
        return PROTO_E_BAD_FIELD;
}

enum {
        KEY_PMU = 1 << 0,
        KEY_CONFIG = 1 << 1,
        KEY_CONFIG1 = 1 << 2,
        KEY_CONFIG2 = 1 << 3,
        KEY_KERNEL = 1 << 4,
        KEY_NAME = 1 << 5,
};

static const struct {
        const char *name;
        unsigned key;
} event_keys[] = {
        { "pmu", KEY_PMU },
        { "config", KEY_CONFIG },
        { "config1", KEY_CONFIG1 },
        { "config2", KEY_CONFIG2 },
        { "kernel", KEY_KERNEL },
        { "name", KEY_NAME },
};

static bool pmu_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int decode_pmu(const msgpack_object *o, PerfEventSpec *s, char *reason, size_t size) {
        if (o->type != MSGPACK_OBJECT_STR || o->via.str.size == 0 || o->via.str.size >= PERF_PMU_NAME_MAX)
                return refuse(reason, size, "'pmu' must be a PMU's name of 1 to %u characters",
                              PERF_PMU_NAME_MAX - 1);
        for (uint32_t i = 0; i < o->via.str.size; i++)
                if (!pmu_char(o->via.str.ptr[i]))
                        return refuse(reason, size, "'pmu' may hold only a-z, 0-9 and _");
        memcpy(s->pmu, o->via.str.ptr, o->via.str.size);
        s->pmu[o->via.str.size] = '\0';
        return 0;
}

static int decode_name(const msgpack_object *o, PerfEventSpec *s, char *reason, size_t size) {
        if (o->type != MSGPACK_OBJECT_STR || o->via.str.size == 0 || o->via.str.size > PERF_EVENT_NAME_MAX)
                return refuse(reason, size, "'name' must be a string of 1 to %u characters", PERF_EVENT_NAME_MAX);
        for (uint32_t i = 0; i < o->via.str.size; i++)
                if ((unsigned char) o->via.str.ptr[i] < 0x20 || (unsigned char) o->via.str.ptr[i] > 0x7e)
                        return refuse(reason, size, "'name' may hold only printable ASCII");
        memcpy(s->name, o->via.str.ptr, o->via.str.size);
        s->name[o->via.str.size] = '\0';
        return 0;
}

static int decode_u64(const msgpack_object *o, const char *key, uint64_t *ret, char *reason, size_t size) {
        if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                return refuse(reason, size, "'%s' must be an unsigned 64-bit integer", key);
        *ret = o->via.u64;
        return 0;
}

/* The key's name, quoted in a reason: at most PMUGATE_STRING_MAX bytes of it. */
static void key_text(const msgpack_object *key, char *buf, size_t size) {
        size_t n = key->via.str.size < size - 1 ? key->via.str.size : size - 1;

        /* an empty key's pointer may be NULL, which memcpy() must not see even for 0 bytes */
        if (n > 0)
                memcpy(buf, key->via.str.ptr, n);
        buf[n] = '\0';
        /* a NUL inside would hide the rest of the key from a reader of the reason */
        for (size_t i = 0; i < n; i++)
                if (buf[i] == '\0')
                        buf[i] = '?';
}

int perf_event_spec_decode(const msgpack_object *map, PerfEventSpec *ret, char *reason, size_t reason_size) {
        PerfEventSpec s = {};
        unsigned seen = 0;
        int r = 0;

        if (map->type != MSGPACK_OBJECT_MAP)
                return refuse(reason, reason_size, "an event must be a map");
        for (uint32_t i = 0; i < map->via.map.size; i++) {
                const msgpack_object *key = &map->via.map.ptr[i].key, *val = &map->via.map.ptr[i].val;
                char text[PMUGATE_STRING_MAX + 1];
                unsigned k = 0;
                const char *why;

                if (key->type != MSGPACK_OBJECT_STR)
                        return refuse(reason, reason_size, "an event's keys must be strings");
                key_text(key, text, sizeof(text));
                for (size_t j = 0; j < ELEMENTSOF(event_keys); j++)
                        if (key->via.str.size == strlen(event_keys[j].name) &&
                            memcmp(key->via.str.ptr, event_keys[j].name, key->via.str.size) == 0)
                                k = event_keys[j].key;
                if (k == 0) {
                        why = key->via.str.size == strlen(text) ? perf_attr_field_refusal(text) : NULL;
                        if (why)
                                return refuse(reason, reason_size, "field '%s' is not accepted: %s", text, why);
                        return refuse(reason, reason_size, "unknown field '%s' in an event", text);
                }
                if (seen & k)
                        return refuse(reason, reason_size, "field '%s' is given twice in an event", text);
                seen |= k;
                switch (k) {
                case KEY_PMU:
                        r = decode_pmu(val, &s, reason, reason_size);
                        break;
                case KEY_CONFIG:
                        r = decode_u64(val, "config", &s.config, reason, reason_size);
                        break;
                case KEY_CONFIG1:
                        r = decode_u64(val, "config1", &s.config1, reason, reason_size);
                        s.has_config1 = true;
                        break;
                case KEY_CONFIG2:
                        r = decode_u64(val, "config2", &s.config2, reason, reason_size);
                        s.has_config2 = true;
                        break;
                case KEY_KERNEL:
                        if (val->type != MSGPACK_OBJECT_BOOLEAN)
                                return refuse(reason, reason_size, "'kernel' must be true or false");
                        s.count_kernel = val->via.boolean;
                        break;
                case KEY_NAME:
                        r = decode_name(val, &s, reason, reason_size);
                        break;
                }
                if (r != 0)
                        return r;
        }
        if (!(seen & KEY_PMU))
                return refuse(reason, reason_size, "an event needs 'pmu'");
        if (!(seen & KEY_CONFIG))
                return refuse(reason, reason_size, "an event needs 'config'");
        *ret = s;
        return 0;
}

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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * timing_open's checks (perf-timing.h)
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "kernel-file.h"
#include "macro.h"
#include "perf/perf-timing.h"
#include "pmugate-limits.h"
#include "refusal.h"

uint64_t timing_period_min(TimingMode m) {
        return m == TIMING_MODE_BRANCHES ? TIMING_PERIOD_BRANCHES_MIN : TIMING_PERIOD_IPS_MIN;
}

uint64_t timing_period_max(TimingMode m) {
        return m == TIMING_MODE_BRANCHES ? TIMING_PERIOD_BRANCHES_MAX : TIMING_PERIOD_IPS_MAX;
}

uint64_t timing_period_default(TimingMode m) {
        return m == TIMING_MODE_BRANCHES ? TIMING_PERIOD_BRANCHES_DEFAULT : TIMING_PERIOD_IPS_DEFAULT;
}

/* The file holds a short decimal and a newline; anything longer is not the kernel's. */
#define SAMPLE_RATE_FILE_MAX 32U

int timing_kernel_max_sample_rate(const char *root, uint64_t *ret) {
        char path[600], text[SAMPLE_RATE_FILE_MAX + 1];
        uint64_t v = 0;
        size_t n, i = 0;
        ssize_t k;

        if ((size_t) snprintf(path, sizeof(path), "%s/proc/sys/kernel/perf_event_max_sample_rate",
                              root && strcmp(root, "/") != 0 ? root : "") >= sizeof(path))
                return -ENAMETOOLONG;
        k = kernel_file_read(AT_FDCWD, path, text, sizeof(text));
        if (k == -EBADFD || k == -EFBIG || k == -EINVAL)
                return -EBADMSG;
        if (k < 0)
                return (int) k;
        n = (size_t) k;
        while (n > 0 && isspace((unsigned char) text[n - 1]))
                n--;
        if (n == 0)
                return -EBADMSG;
        for (; i < n; i++) {
                if (!isdigit((unsigned char) text[i]))
                        return -EBADMSG;
                v = v * 10 + (uint64_t) (text[i] - '0');
                if (v > TIMING_KERNEL_SAMPLE_RATE_MAX)
                        return -EBADMSG;
        }
        if (v == 0)
                return -EBADMSG;
        *ret = v;
        return 0;
}

uint64_t timing_events_per_second(TimingMode m, uint64_t tsc_hz, const CpuModel *model) {
        if (m == TIMING_MODE_IPS)
                return 1000000000ULL;
        if (tsc_hz > 0)
                return tsc_hz;
        return model && model->nominal_mhz > 0 ? (uint64_t) model->nominal_mhz * 1000000ULL : 0;
}

int timing_check_period(TimingMode m, uint64_t period, uint64_t events_per_second, uint64_t kernel_max_rate,
                        uint64_t *ret_period, Refusal *ret_refusal) {
        const char *unit = m == TIMING_MODE_BRANCHES ? "cycles" : "ns";
        uint64_t p = period == 0 ? timing_period_default(m) : period;

        if (p < timing_period_min(m) || p > timing_period_max(m))
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "period %" PRIu64 " %s is outside %" PRIu64 "..%" PRIu64 " for mode %s (leave it out "
                              "for %" PRIu64 ")", p, unit, timing_period_min(m), timing_period_max(m),
                              timing_mode_to_string(m), timing_period_default(m));
        if (events_per_second == 0)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "the CPU's cycle rate is not known (no TSC rate, no model): the sample rate of a "
                              "period in cycles cannot be bounded");
        /* rate = events_per_second / p, compared without a division's rounding down */
        if (events_per_second > kernel_max_rate * p)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "period %" PRIu64 " %s gives %" PRIu64 " samples per second, above the kernel's "
                              "perf_event_max_sample_rate of %" PRIu64 ": ask for a period of at least %" PRIu64,
                              p, unit, events_per_second / p, kernel_max_rate,
                              (events_per_second + kernel_max_rate - 1) / kernel_max_rate);
        *ret_period = p;
        return 0;
}

int timing_check_model(TimingMode m, const CpuModel *model, const PerfCatalog *catalog, Refusal *ret_refusal) {
        const PerfPmu *core;

        if (m != TIMING_MODE_BRANCHES)
                return 0;
        if (cpu_model_is_amd(model))
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "mode branches: this CPU's (%s) Last Branch Record records no cycles (AMD LbrExtV2); "
                              "mode ips samples IPs on any CPU", model->key);
        core = catalog ? perf_catalog_core(catalog) : NULL;
        if (!core || core->branches == 0)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "mode branches: this CPU's PMU has no branch stack (no caps/branches under its "
                              "perf event source%s); mode ips samples IPs on any CPU",
                              core ? "" : ", and no core PMU at all");
        return 0;
}

bool timing_attr_is_ours(const struct perf_event_attr *attr) {
        struct perf_event_attr want;
        TimingMode m;

        if (attr->size != sizeof(struct perf_event_attr))
                return false;
        if (attr->type == PERF_TYPE_HARDWARE && attr->config == PERF_COUNT_HW_CPU_CYCLES)
                m = TIMING_MODE_BRANCHES;
        else if (attr->type == PERF_TYPE_SOFTWARE && attr->config == PERF_COUNT_SW_CPU_CLOCK)
                m = TIMING_MODE_IPS;
        else
                return false;
        if (attr->sample_period < timing_period_min(m) || attr->sample_period > timing_period_max(m))
                return false;
        timing_attr_fill(&want, m, attr->sample_period, attr->enable_on_exec);
        return memcmp(&want, attr, sizeof(want)) == 0;
}

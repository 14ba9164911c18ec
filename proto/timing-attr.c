/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "pmugate-limits.h"
#include "timing-attr.h"

static const char *const mode_names[_TIMING_MODE_MAX] = {
        [TIMING_MODE_BRANCHES] = "branches",
        [TIMING_MODE_IPS] = "ips",
};

const char *timing_mode_to_string(TimingMode m) {
        if (m < 0 || m >= _TIMING_MODE_MAX)
                return NULL;
        return mode_names[m];
}

TimingMode timing_mode_from_string(const char *s, size_t n) {
        if (!s)
                return _TIMING_MODE_INVALID;
        for (int m = 0; m < _TIMING_MODE_MAX; m++)
                if (strlen(mode_names[m]) == n && memcmp(mode_names[m], s, n) == 0)
                        return (TimingMode) m;
        return _TIMING_MODE_INVALID;
}

uint64_t timing_sample_type(TimingMode m) {
        return m == TIMING_MODE_BRANCHES ? TIMING_SAMPLE_TYPE_BRANCHES : TIMING_SAMPLE_TYPE_IPS;
}

void timing_attr_fill(struct perf_event_attr *attr, TimingMode m, uint64_t period, bool on_exec) {
        memset(attr, 0, sizeof(*attr));
        attr->size = sizeof(*attr);
        if (m == TIMING_MODE_BRANCHES) {
                attr->type = PERF_TYPE_HARDWARE;
                attr->config = PERF_COUNT_HW_CPU_CYCLES;
                attr->branch_sample_type = TIMING_BRANCH_SAMPLE_TYPE;
        } else {
                attr->type = PERF_TYPE_SOFTWARE;
                attr->config = PERF_COUNT_SW_CPU_CLOCK;
        }
        attr->sample_period = period;
        attr->sample_type = timing_sample_type(m);
        attr->exclude_kernel = 1;
        attr->exclude_hv = 1;
        attr->exclude_callchain_kernel = 1;
        attr->inherit = 1;
        attr->mmap = 1;
        attr->mmap2 = 1;
        attr->comm = 1;
        attr->task = 1;
        attr->sample_id_all = 1;
        /* Wake a poller when a quarter of the ring is full, not per sample. */
        attr->watermark = 1;
        attr->wakeup_watermark = TIMING_RING_DATA_BYTES / 4U;
        attr->disabled = on_exec;
        attr->enable_on_exec = on_exec;
}

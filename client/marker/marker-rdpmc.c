/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Markers: reading counters in user space with RDPMC where the kernel allows it, and finding
 * out whether it does
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "marker/marker-internal.h"

#define RDPMC_FIXED_FLAG (UINT32_C(1) << 30)
#define RDPMC_METRICS_FLAG (UINT32_C(1) << 29)
#define RDPMC_MIGRATION_RETRIES 8
#define SYSFS_PATH_MAX 4096U

const char *marker_read_mode_name(MarkerReadMode mode) {
        switch (mode) {
        case MARKER_READ_DAEMON:
                return "daemon";
        case MARKER_READ_RDPMC:
                return "rdpmc";
        case MARKER_READ_PERF:
                return "perf";
        default:
                return "off";
        }
}

int marker_rdpmc_index(uint32_t msr, uint32_t *ret_index) {
        if (msr >= MARKER_MSR_PMC0 && msr < MARKER_MSR_PMC0 + MARKER_GP_MAX)
                *ret_index = msr - MARKER_MSR_PMC0;
        else if (msr >= MARKER_MSR_FIXED_CTR0 && msr < MARKER_MSR_FIXED_CTR0 + MARKER_FIXED_MAX)
                *ret_index = RDPMC_FIXED_FLAG | (msr - MARKER_MSR_FIXED_CTR0);
        else if (msr == MARKER_MSR_PERF_METRICS)
                *ret_index = RDPMC_METRICS_FLAG;
        else if (msr >= MARKER_MSR_AMD_PERF_CTR0 && msr < MARKER_MSR_AMD_PERF_CTR0 + 2 * MARKER_AMD_GP_MAX &&
                 (msr - MARKER_MSR_AMD_PERF_CTR0) % 2 == 0)
                *ret_index = (msr - MARKER_MSR_AMD_PERF_CTR0) / 2;
        else
                return -EINVAL;
        return 0;
}

int marker_rdpmc_sysfs(const char *sysfs_root) {
        char path[SYSFS_PATH_MAX], text[8] = "";
        _cleanup_close_ int fd = -1;
        ssize_t n;

        if ((size_t) snprintf(path, sizeof(path), "%s/%s", sysfs_root, MARKER_SYSFS_RDPMC) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        n = read(fd, text, sizeof(text) - 1);
        if (n < 0)
                return -errno;
        text[n] = '\0';
        if ((text[0] == '0' || text[0] == '1' || text[0] == '2') && (text[1] == '\n' || text[1] == '\0'))
                return text[0] - '0';
        return -EINVAL;
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t rdpmc(uint32_t index) {
        uint32_t lo, hi;

        __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(index));
        return (uint64_t) hi << 32 | lo;
}

static sigjmp_buf probe_jump;

static void probe_fault(int signo) {
        siglongjmp(probe_jump, signo);
}

bool marker_rdpmc_probe(uint32_t index) {
        struct sigaction fault = { .sa_handler = probe_fault }, old_segv, old_bus;
        volatile bool ok = false;

        (void) sigemptyset(&fault.sa_mask);
        if (sigaction(SIGSEGV, &fault, &old_segv) < 0)
                return false;
        if (sigaction(SIGBUS, &fault, &old_bus) < 0) {
                (void) sigaction(SIGSEGV, &old_segv, NULL);
                return false;
        }
        if (sigsetjmp(probe_jump, 1) == 0) {
                (void) rdpmc(index);
                ok = true;
        }
        (void) sigaction(SIGBUS, &old_bus, NULL);
        (void) sigaction(SIGSEGV, &old_segv, NULL);
        return ok;
}

int marker_rdpmc_read(const uint32_t *indexes, size_t n, uint64_t *values, unsigned *ret_cpu) {
        /* A thread moved between the two CPU numbers read counters of two CPUs: read again. */
        for (int attempt = 0; attempt < RDPMC_MIGRATION_RETRIES; attempt++) {
                int before = sched_getcpu(), after;

                for (size_t i = 0; i < n; i++)
                        values[i] = rdpmc(indexes[i]);
                after = sched_getcpu();
                if (before < 0 || after < 0)
                        return -errno;
                if (before == after) {
                        *ret_cpu = (unsigned) after;
                        return 0;
                }
        }
        return -EAGAIN;
}
#else
bool marker_rdpmc_probe(uint32_t index) {
        (void) index;
        return false;
}

int marker_rdpmc_read(const uint32_t *indexes, size_t n, uint64_t *values, unsigned *ret_cpu) {
        (void) indexes;
        (void) n;
        (void) values;
        (void) ret_cpu;
        return -EOPNOTSUPP;
}
#endif

MarkerReadMode marker_rdpmc_decide(int sysfs_value, bool probe_ok, char *reason, size_t reason_size) {
        const char *why;
        MarkerReadMode mode = MARKER_READ_DAEMON;

        if (sysfs_value == 0)
                why = "the kernel's rdpmc switch is 0 (RDPMC disabled)";
        else if (probe_ok) {
                mode = MARKER_READ_RDPMC;
                why = sysfs_value == 2 ? "the kernel's rdpmc switch is 2 (RDPMC for every process)" :
                                         "RDPMC works in this process (a perf event it mapped)";
        } else if (sysfs_value == 2)
                why = "the kernel's rdpmc switch is 2 but RDPMC faulted";
        else if (sysfs_value == 1)
                why = "the kernel's rdpmc switch is 1 and this process has no perf event mapped";
        else if (sysfs_value == -ENOENT)
                why = "no x86 PMU driver (no rdpmc switch in sysfs)";
        else
                why = "the kernel's rdpmc switch could not be read";
        (void) snprintf(reason, reason_size, "%s", why);
        return mode;
}

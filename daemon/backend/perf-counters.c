/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Package counters from the kernel's uncore memory controller PMUs: found in sysfs, opened with
 * perf_event_open through the perf opener
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/machine.h"
#include "backend/perf-format.h"
#include "cpulist.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"

#define EVENT_SOURCE_DIR "sys/bus/event_source/devices"
#define IMC_PMU_PREFIX "uncore_imc_"
#define IMC_FREE_RUNNING_PREFIX "uncore_imc_free_running_"
#define PMU_NAME_MAX 40U
#define SYSFS_TEXT_MAX PERF_EVENT_TEXT_MAX
#define SCALE_MAX 1e6

/* Ice Lake-SP's free-running DDR read and write counters; Skylake-SP, Cascade Lake and Sapphire
 * Rapids have the fixed CAS events of their programmable counters (next-features.md §2.3). */
static const char *const free_running_events[] = { "read", "write" };
static const char *const cas_events[] = { "cas_count_read", "cas_count_write" };

static bool name_ok(const char *s, size_t max) {
        size_t n = strlen(s);

        if (n == 0 || n >= max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!islower((unsigned char) s[i]) && !isdigit((unsigned char) s[i]) && s[i] != '_')
                        return false;
        return true;
}

/* A format file reads "config:LO-HI" or "config:BIT": where a term's value goes. */
int perf_format_parse(const char *text, unsigned *ret_lo, unsigned *ret_hi) {
        unsigned lo, hi;
        int n = 0;

        if (strncmp(text, "config:", 7) != 0)
                return -EOPNOTSUPP;
        if (sscanf(text + 7, "%u-%u%n", &lo, &hi, &n) == 2 && text[7 + n] == '\0')
                ;
        else if (sscanf(text + 7, "%u%n", &lo, &n) == 1 && text[7 + n] == '\0')
                hi = lo;
        else
                return -EINVAL;
        if (lo > hi || hi > 63)
                return -EINVAL;
        *ret_lo = lo;
        *ret_hi = hi;
        return 0;
}

static uint64_t range_mask(unsigned lo, unsigned hi) {
        return (hi - lo == 63 ? UINT64_MAX : (UINT64_C(1) << (hi - lo + 1)) - 1) << lo;
}

/* Decimal bit numbers only, as the kernel prints them: no sign, no base prefix, no spaces. */
static int parse_bit(const char **p, unsigned *ret) {
        unsigned v = 0;
        size_t n = 0;

        while (isdigit((unsigned char) (*p)[n])) {
                v = v * 10 + (unsigned) ((*p)[n] - '0');
                if (++n > 2 || v > 63)
                        return -EINVAL;
        }
        if (n == 0)
                return -EINVAL;
        *p += n;
        *ret = v;
        return 0;
}

int perf_format_parse_mask(const char *text, unsigned *ret_word, uint64_t *ret_mask) {
        static const char *const words[] = { "config:", "config1:", "config2:" };
        const char *p = NULL;
        uint64_t mask = 0;
        unsigned word, previous_hi = 0;
        bool first = true;

        for (word = 0; word < ELEMENTSOF(words); word++)
                if (strncmp(text, words[word], strlen(words[word])) == 0) {
                        p = text + strlen(words[word]);
                        break;
                }
        if (!p)
                return -EINVAL;
        for (;;) {
                unsigned lo, hi;

                if (parse_bit(&p, &lo) < 0)
                        return -EINVAL;
                hi = lo;
                if (*p == '-') {
                        p++;
                        if (parse_bit(&p, &hi) < 0 || hi < lo)
                                return -EINVAL;
                }
                /* ranges in ascending order and apart, as the kernel writes them */
                if (!first && lo <= previous_hi)
                        return -EINVAL;
                mask |= range_mask(lo, hi);
                previous_hi = hi;
                first = false;
                if (*p == '\0')
                        break;
                if (*p != ',')
                        return -EINVAL;
                p++;
        }
        *ret_word = word;
        *ret_mask = mask;
        return 0;
}

/* An event file reads "event=0x04,umask=0x03": each term placed as its format file says. */
int perf_event_parse(const char *text, PerfFormatLookup lookup, void *userdata, uint64_t *ret_config) {
        char copy[SYSFS_TEXT_MAX], *save = NULL;
        uint64_t config = 0;

        (void) snprintf(copy, sizeof(copy), "%s", text);
        for (char *term = strtok_r(copy, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(term, '='), *end, format[SYSFS_TEXT_MAX];
                unsigned lo, hi;
                uint64_t v, field;
                int r;

                if (!eq)
                        return -EINVAL;
                *eq = '\0';
                if (!name_ok(term, 32))
                        return -EINVAL;
                errno = 0;
                v = strtoull(eq + 1, &end, 0);
                if (errno != 0 || end == eq + 1 || *end != '\0' || eq[1] == '-')
                        return -EINVAL;
                r = lookup(term, format, sizeof(format), userdata);
                if (r < 0)
                        return r;
                r = perf_format_parse(format, &lo, &hi);
                if (r < 0)
                        return r;
                field = hi - lo == 63 ? UINT64_MAX : (UINT64_C(1) << (hi - lo + 1)) - 1;
                if (v > field)
                        return -ERANGE;
                config |= v << lo;
        }
        *ret_config = config;
        return 0;
}

typedef struct SysfsPmu {
        const char *root;
        const char *dir;
} SysfsPmu;

/* The format files of a PMU under root. */
static int sysfs_format(const char *term, char *buf, size_t size, void *userdata) {
        const SysfsPmu *pmu = userdata;
        char path[512];

        (void) snprintf(path, sizeof(path), "%s/format/%s", pmu->dir, term);
        return machine_read_text(pmu->root, path, buf, size);
}

static int parse_u32(const char *text, uint32_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

/* The PMU's cpumask: one CPU per package, where the kernel counts that package's box. */
static int pmu_cpus(const char *root, const Machine *m, const char *pmu_dir, uint32_t **ret_cpus,
                    size_t *ret_n) {
        char path[512], text[SYSFS_TEXT_MAX];
        int r;

        (void) snprintf(path, sizeof(path), "%s/cpumask", pmu_dir);
        r = machine_read_text(root, path, text, sizeof(text));
        if (r < 0)
                return r;
        return cpulist_parse(text, m->n_cpus, ret_cpus, ret_n);
}

static void read_event_scale(const char *root, const char *pmu_dir, const char *event, MachineCounter *c) {
        char path[512], text[SYSFS_TEXT_MAX], *end;
        double scale;

        c->scale = 1.0;
        c->unit[0] = '\0';
        (void) snprintf(path, sizeof(path), "%s/events/%s.scale", pmu_dir, event);
        if (machine_read_text(root, path, text, sizeof(text)) == 0) {
                scale = strtod(text, &end);
                if (end != text && *end == '\0' && isfinite(scale) && scale > 0 && scale < SCALE_MAX)
                        c->scale = scale;
        }
        (void) snprintf(path, sizeof(path), "%s/events/%s.unit", pmu_dir, event);
        if (machine_read_text(root, path, text, sizeof(text)) == 0 && strlen(text) < sizeof(c->unit)) {
                bool printable = true;

                for (const char *p = text; *p; p++)
                        printable = printable && isgraph((unsigned char) *p);
                if (printable)
                        (void) snprintf(c->unit, sizeof(c->unit), "%s", text);
        }
}

static int add_counter(Machine *m, size_t *allocated, const MachineCounter *c) {
        if (m->n_counters >= PMUGATE_COUNTERS_MAX) {
                log_warning("More than %u uncore counters; %s and later ones are not served",
                            PMUGATE_COUNTERS_MAX, c->name);
                return 0;
        }
        if (m->n_counters == *allocated) {
                size_t n = *allocated ? *allocated * 2 : 16;
                MachineCounter *p = reallocarray(m->counters, n, sizeof(MachineCounter));

                if (!p)
                        return -ENOMEM;
                m->counters = p;
                *allocated = n;
        }
        m->counters[m->n_counters++] = *c;
        return 0;
}

static const char *open_hint(int error) {
        switch (error) {
        case ENOENT:
        case ENODEV:
        case EINVAL:
                return "the kernel has no such uncore PMU or event (is the uncore driver loaded?)";
        case EACCES:
        case EPERM:
                return "refused: the perf opener needs CAP_PERFMON, and its check and system-call filter "
                       "must admit the event";
        case EPIPE:
        case ENOTCONN:
                return "the perf opener cannot be reached (pmugate-perf-opener.socket)";
        case ENOSYS:
                return "the kernel has no perf events";
        default:
                return "see perf_event_open(2)";
        }
}

void machine_counter_attr(const MachineCounter *c, struct perf_event_attr *ret) {
        /* A CPU-wide counting event with no exclude bit: uncore PMUs refuse every exclude_* flag
         * (the counts are the package's, whoever ran). */
        *ret = (struct perf_event_attr) {
                .type = c->type,
                .size = sizeof(struct perf_event_attr),
                .config = c->config,
        };
}

static void open_counter(MachineCounter *c, MachineCounterOpen open_event, void *userdata) {
        struct perf_event_attr attr;
        int fd;

        machine_counter_attr(c, &attr);
        fd = open_event(&attr, (int) c->cpu, userdata);
        if (fd < 0) {
                (void) snprintf(c->error, sizeof(c->error), "perf_event_open: %s: %s", strerror(-fd),
                                open_hint(-fd));
                log_warning("Cannot open package counter %s on CPU %" PRIu32 ": %s", c->name, c->cpu,
                            c->error);
                return;
        }
        c->fd = fd;
}

unsigned machine_open_counters(Machine *m, MachineCounterOpen open_event, void *userdata) {
        unsigned opened = 0;

        for (uint32_t i = 0; i < m->n_counters; i++) {
                MachineCounter *c = &m->counters[i];

                /* discovered and not refused already (a broken sysfs entry), nor open */
                if (c->fd >= 0 || c->error[0])
                        continue;
                open_counter(c, open_event, userdata);
                if (c->fd >= 0)
                        opened++;
        }
        return opened;
}

static int add_pmu_event(Machine *m, const char *root, const char *dir, const char *pmu, const char *event,
                         uint32_t type, uint32_t cpu, size_t *allocated) {
        MachineCounter c = {
                .package = m->cpus[cpu].package,
                .cpu = cpu,
                .type = type,
                .width = 64,
                .fd = -EBADF,
        };
        char path[512], text[SYSFS_TEXT_MAX];
        int r;

        (void) snprintf(path, sizeof(path), "%s/events/%s", dir, event);
        r = machine_read_text(root, path, text, sizeof(text));
        if (r == -ENOENT)
                return 0;
        (void) snprintf(c.name, sizeof(c.name), "%.40s/%.20s", pmu, event);
        (void) snprintf(c.cls, sizeof(c.cls), "uncore-imc");
        if (r >= 0)
                r = perf_event_parse(text, sysfs_format, &(SysfsPmu) { .root = root, .dir = dir },
                                     &c.config);
        if (r < 0) {
                (void) snprintf(c.error, sizeof(c.error), "cannot read its event from sysfs: %s",
                                strerror(-r));
                log_warning("Package counter %s of package %" PRIi32 ": %s", c.name, c.package, c.error);
        } else
                read_event_scale(root, dir, event, &c);
        return add_counter(m, allocated, &c);
}

static int discover_pmu(Machine *m, const char *root, const char *pmu, size_t *allocated) {
        bool free_running = strncmp(pmu, IMC_FREE_RUNNING_PREFIX, strlen(IMC_FREE_RUNNING_PREFIX)) == 0;
        const char *const *events = free_running ? free_running_events : cas_events;
        _cleanup_free_ uint32_t *cpus = NULL;
        char dir[128], path[512], text[SYSFS_TEXT_MAX];
        size_t n_cpus = 0;
        uint32_t type;
        int r;

        (void) snprintf(dir, sizeof(dir), EVENT_SOURCE_DIR "/%.40s", pmu);
        (void) snprintf(path, sizeof(path), "%s/type", dir);
        r = machine_read_text(root, path, text, sizeof(text));
        if (r >= 0)
                r = parse_u32(text, &type);
        if (r < 0) {
                log_warning("Ignoring uncore PMU %s: cannot read its type: %s", pmu, strerror(-r));
                return 0;
        }
        r = pmu_cpus(root, m, dir, &cpus, &n_cpus);
        if (r < 0) {
                log_warning("Ignoring uncore PMU %s: cannot read its cpumask: %s", pmu, strerror(-r));
                return 0;
        }
        for (size_t k = 0; k < n_cpus; k++) {
                if (!m->cpus[cpus[k]].present || !m->cpus[cpus[k]].online || m->cpus[cpus[k]].package < 0) {
                        log_warning("Ignoring CPU %" PRIu32 " of uncore PMU %s: it is not online", cpus[k],
                                    pmu);
                        continue;
                }
                for (size_t i = 0; i < 2; i++) {
                        r = add_pmu_event(m, root, dir, pmu, events[i], type, cpus[k], allocated);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int compare_counters(const void *a, const void *b) {
        const MachineCounter *x = a, *y = b;

        if (x->package != y->package)
                return x->package < y->package ? -1 : 1;
        return strverscmp(x->name, y->name);
}

static int pmu_filter(const struct dirent *d) {
        return strncmp(d->d_name, IMC_PMU_PREFIX, strlen(IMC_PMU_PREFIX)) == 0;
}

int machine_discover_counters(Machine *m, const char *root) {
        struct dirent **entries = NULL;
        char dir[4096];
        size_t allocated = m->n_counters;
        int n, r = 0;

        (void) snprintf(dir, sizeof(dir), "%s/" EVENT_SOURCE_DIR, root);
        n = scandir(dir, &entries, pmu_filter, versionsort);
        if (n < 0) {
                log_info("No perf event sources under %s (%s): no package counters", dir, strerror(errno));
                return 0;
        }
        for (int i = 0; i < n; i++) {
                if (r >= 0 && name_ok(entries[i]->d_name, PMU_NAME_MAX))
                        r = discover_pmu(m, root, entries[i]->d_name, &allocated);
                free(entries[i]);
        }
        free(entries);
        if (r < 0)
                return r;
        /* no IMC PMU among the event sources (a core PMU alone): no array to sort, and qsort()
         * must not be given NULL */
        if (m->n_counters > 1)
                qsort(m->counters, m->n_counters, sizeof(MachineCounter), compare_counters);
        return 0;
}

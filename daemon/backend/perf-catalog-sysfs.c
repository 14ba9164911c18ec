/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf_event path's catalogue from the kernel's sysfs under --root: the core PMU, the
 * uncore PMUs pmugate has a register class for, and the kernel's generic "software" and
 * "hardware" types. Every file is hostile input: read through directory fds, never through a
 * symbolic link but the bus's own links into sys/devices (of the kernel's shape only),
 * size-limited, and a PMU whose files do not parse is left out with a log line.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/perf-catalog.h"
#include "backend/perf-format.h"
#include "cpulist.h"
#include "kernel-file.h"
#include "log.h"
#include "macro.h"

static bool pmu_name_ok(const char *s, size_t max) {
        size_t n = strnlen(s, max);

        if (n == 0 || n >= max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!islower((unsigned char) s[i]) && !isdigit((unsigned char) s[i]) && s[i] != '_')
                        return false;
        return true;
}

static bool has_prefix(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A regular file in dir_fd, not a link, read whole into buf or refused: -EFBIG when it has more
 * than size - 1 bytes, -EINVAL with a NUL inside, -EBADFD when not a regular file. Trailing
 * white space is cut. */
static int read_small_file(int dir_fd, const char *name, char *buf, size_t size) {
        ssize_t n = kernel_file_read(dir_fd, name, buf, size);

        if (n < 0)
                return (int) n;
        while (n > 0 && isspace((unsigned char) buf[n - 1]))
                n--;
        buf[n] = '\0';
        return 0;
}

static int open_subdir(int dir_fd, const char *name) {
        int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        return fd < 0 ? negative_errno() : fd;
}

/* A component of a sysfs path the kernel's links name ("devices", "platform", "ARMHF000:00"):
 * not empty, not "." or "..", nothing a path could turn on. */
static bool component_ok(const char *c, size_t n) {
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) c[i]) && !strchr("_-.:", c[i]))
                        return false;
        return true;
}

/* Opens the directory path names beneath dir_fd one component at a time, never through a link. */
static int open_path_nofollow(int dir_fd, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        const char *p = path;

        while (*p) {
                size_t n = strcspn(p, "/");
                char component[NAME_MAX + 1];
                int next;

                if (!component_ok(p, n) || n > NAME_MAX)
                        return -EINVAL;
                memcpy(component, p, n);
                component[n] = '\0';
                next = openat(fd >= 0 ? fd : dir_fd, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return negative_errno();
                if (fd >= 0)
                        (void) close(fd);
                fd = next;
                p += n;
                if (*p == '/')
                        p++;
        }
        return fd >= 0 ? TAKE_FD(fd) : -EINVAL;
}

/* sys/bus/event_source/devices/NAME is a directory, or the kernel's link to
 * ../../../devices/PATH: that shape exactly, opened from <root>/sys without following anything,
 * so that no link leads out of the tree --root names. */
static int open_pmu_dir(int sys_fd, int devices_fd, const char *name) {
        static const char prefix[] = "../../../devices/";
        char target[PATH_MAX], path[PATH_MAX];
        ssize_t n;
        int fd;

        fd = openat(devices_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
                return fd;
        if (errno != ELOOP && errno != ENOTDIR)
                return negative_errno();
        n = readlinkat(devices_fd, name, target, sizeof(target) - 1);
        if (n < 0)
                return negative_errno();
        target[n] = '\0';
        if (strncmp(target, prefix, strlen(prefix)) != 0)
                return -EXDEV;
        (void) snprintf(path, sizeof(path), "devices/%s", target + strlen(prefix));
        return open_path_nofollow(sys_fd, path);
}

static int parse_type(const char *text, uint32_t *ret) {
        unsigned long long v;
        char *end;

        if (!isdigit((unsigned char) text[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno != 0 || *end != '\0' || v > UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

static int compare_formats(const void *a, const void *b) {
        return strcmp(((const PerfFormatField *) a)->name, ((const PerfFormatField *) b)->name);
}

/* The PMU's format/ files: each a name of [a-z0-9_] and a text perf_format_parse_mask() takes. */
static int read_formats(int pmu_fd, PerfPmu *p) {
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;
        int r = 0;

        fd = open_subdir(pmu_fd, "format");
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        d = fdopendir(fd);
        if (!d)
                return negative_errno();
        fd = -EBADF; /* the DIR owns it now */
        while (r >= 0 && (errno = 0, de = readdir(d))) {
                char text[PERF_SYSFS_SMALL_FILE_MAX];
                PerfFormatField *f;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (!pmu_name_ok(de->d_name, PERF_PMU_NAME_MAX)) {
                        r = -EINVAL;
                        break;
                }
                /* a field of a name longer than the catalogue keeps: its bits stay refused */
                if (strlen(de->d_name) >= sizeof(f->name)) {
                        log_info("Perf event source %s: format field %s is longer than %zu characters; its bits are not allowed",
                                 p->name, de->d_name, sizeof(f->name) - 1);
                        continue;
                }
                if (p->n_formats >= PERF_PMU_FORMATS_MAX) {
                        r = -E2BIG;
                        break;
                }
                f = &p->formats[p->n_formats];
                r = read_small_file(dirfd(d), de->d_name, text, sizeof(text));
                if (r >= 0)
                        r = perf_format_parse_mask(text, &f->config_word, &f->mask);
                if (r < 0)
                        break;
                memcpy(f->name, de->d_name, strlen(de->d_name) + 1); /* shorter: pmu_name_ok() */
                p->config_mask[f->config_word] |= f->mask;
                p->n_formats++;
        }
        if (r >= 0 && errno != 0)
                r = negative_errno();
        (void) closedir(d);
        if (r < 0)
                return r;
        qsort(p->formats, p->n_formats, sizeof(PerfFormatField), compare_formats);
        return 0;
}

static bool has_event_file(int pmu_fd, const char *event) {
        _cleanup_close_ int events_fd = open_subdir(pmu_fd, "events");
        struct stat st;

        return events_fd >= 0 && fstatat(events_fd, event, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* caps/slots of an ARM core PMU, as the kernel prints PMMIR_EL1.SLOTS ("0x00000008"): hex, 1 to
 * PERF_PMU_SLOTS_MAX; 0 when there is no such file, which is no error (x86 has none). A file
 * that says anything else leaves the PMU out. */
static int read_slots(int pmu_fd, uint8_t *ret) {
        _cleanup_close_ int caps_fd = -EBADF;
        char text[PERF_SYSFS_SMALL_FILE_MAX];
        unsigned long v;
        char *end;
        int r;

        *ret = 0;
        caps_fd = open_subdir(pmu_fd, "caps");
        if (caps_fd == -ENOENT)
                return 0;
        if (caps_fd < 0)
                return caps_fd;
        r = read_small_file(caps_fd, "slots", text, sizeof(text));
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (text[0] != '0' || (text[1] != 'x' && text[1] != 'X') || !isxdigit((unsigned char) text[2]))
                return -EINVAL;
        errno = 0;
        v = strtoul(text + 2, &end, 16);
        if (errno != 0 || *end != '\0' || v == 0 || v > PERF_PMU_SLOTS_MAX)
                return -EINVAL;
        *ret = (uint8_t) v;
        return 0;
}

/* The CPU the kernel counts an uncore PMU on: the first of its cpumask, and that CPU's package. */
static int read_uncore_cpu(int pmu_fd, const Machine *m, PerfPmu *p) {
        _cleanup_free_ uint32_t *cpus = NULL;
        char text[PERF_SYSFS_FILE_MAX];
        size_t n = 0;
        int r;

        r = read_small_file(pmu_fd, "cpumask", text, sizeof(text));
        if (r < 0)
                return r;
        r = cpulist_parse(text, m->n_cpus, &cpus, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return -EINVAL;
        if (cpus[0] >= m->n_cpus || !m->cpus[cpus[0]].present || !m->cpus[cpus[0]].online ||
            m->cpus[cpus[0]].package < 0)
                return -ENXIO;
        p->cpu = (int) cpus[0];
        p->package = m->cpus[cpus[0]].package;
        return 0;
}

typedef enum Candidate {
        CANDIDATE_NONE,
        CANDIDATE_CORE,
        CANDIDATE_UNCORE,
} Candidate;

/* The core PMU x86 calls "cpu" ("cpu_core" on a hybrid CPU), ARM "armv8_pmuv3_N" or
 * "armv8_<core>"; the uncore PMUs pmugate has a class for. Everything else (breakpoint,
 * tracepoint, kprobe, uprobe, msr, power, the kernel's own software) stays out. */
static Candidate classify(const char *name, char *ret_class, size_t class_size) {
        if (!pmu_name_ok(name, PERF_PMU_NAME_MAX))
                return CANDIDATE_NONE;
        if (strcmp(name, "cpu") == 0 || strcmp(name, "cpu_core") == 0 || has_prefix(name, "armv8_")) {
                (void) snprintf(ret_class, class_size, "core-pmu");
                return CANDIDATE_CORE;
        }
        if (has_prefix(name, "uncore_imc"))
                (void) snprintf(ret_class, class_size, "uncore-imc");
        else if (strcmp(name, "amd_l3") == 0)
                (void) snprintf(ret_class, class_size, "uncore-l3");
        else if (strcmp(name, "amd_df") == 0)
                (void) snprintf(ret_class, class_size, "uncore-df");
        else if (has_prefix(name, "uncore_"))
                (void) snprintf(ret_class, class_size, "uncore");
        else
                return CANDIDATE_NONE;
        return CANDIDATE_UNCORE;
}

/* The core PMU's LBR depth: caps/branches, a decimal of at most TIMING_BRANCHES_MAX. Absent
 * (no LBR, or a kernel without the file) is 0; anything else that does not parse is 0 with a
 * log line, never a depth guessed: branch sampling is refused without one. */
static uint32_t read_branches(int pmu_fd, const char *name) {
        _cleanup_close_ int caps_fd = -EBADF;
        char text[PERF_SYSFS_SMALL_FILE_MAX], *end;
        unsigned long v;
        int r;

        caps_fd = open_subdir(pmu_fd, "caps");
        if (caps_fd < 0)
                return 0;
        r = read_small_file(caps_fd, "branches", text, sizeof(text));
        if (r == -ENOENT)
                return 0;
        if (r >= 0 && isdigit((unsigned char) text[0]) && strlen(text) <= 3) {
                errno = 0;
                v = strtoul(text, &end, 10);
                if (errno == 0 && *end == '\0' && v <= TIMING_BRANCHES_MAX)
                        return (uint32_t) v;
        }
        log_warning("Perf event source %s: caps/branches is not a branch stack depth of at most %u: "
                    "no branch sampling", name, TIMING_BRANCHES_MAX);
        return 0;
}

/* Reads one PMU's directory; a refusal is the reason it is left out. */
static int read_pmu(int sys_fd, int devices_fd, const Machine *m, const char *name, Candidate kind, PerfPmu *p) {
        _cleanup_close_ int fd = -EBADF;
        char text[PERF_SYSFS_SMALL_FILE_MAX];
        int r;

        fd = open_pmu_dir(sys_fd, devices_fd, name);
        if (fd < 0)
                return fd;
        r = read_small_file(fd, "type", text, sizeof(text));
        if (r < 0)
                return r;
        r = parse_type(text, &p->type);
        if (r < 0)
                return r;
        /* The kernel's fixed types are its own PMUs (a "cpu" of type 2 would open tracepoints);
         * only the x86 core PMU has one of them, PERF_TYPE_RAW. Others get a dynamic type. */
        if (p->type < PERF_TYPE_MAX && !(kind == CANDIDATE_CORE && p->type == PERF_TYPE_RAW))
                return -EPROTOTYPE;
        (void) snprintf(p->name, sizeof(p->name), "%s", name);
        p->package = -1;
        p->cpu = -1;
        r = read_formats(fd, p);
        if (r < 0)
                return r;
        if (kind == CANDIDATE_CORE) {
                p->kind = PERF_PMU_CORE;
                if (has_event_file(fd, "topdown-retiring"))
                        p->topdown = has_event_file(fd, "topdown-heavy-ops") ? 2 : 1;
                p->branches = read_branches(fd, name);
                return read_slots(fd, &p->slots);
        }
        p->kind = PERF_PMU_UNCORE;
        return read_uncore_cpu(fd, m, p);
}

static int compare_names(const void *a, const void *b) {
        return strverscmp(*(char *const *) a, *(char *const *) b);
}

static void free_names(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* The names under the devices directory, in version order, at most PERF_SYSFS_ENTRIES_MAX. */
static int list_pmus(int devices_fd, char ***ret, size_t *ret_n) {
        _cleanup_close_ int fd = -EBADF;
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        DIR *d;
        int r = 0;

        fd = fcntl(devices_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d)
                return negative_errno();
        fd = -EBADF;
        names = calloc(PERF_SYSFS_ENTRIES_MAX, sizeof(char *));
        if (!names) {
                (void) closedir(d);
                return -ENOMEM;
        }
        while ((errno = 0, de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (n >= PERF_SYSFS_ENTRIES_MAX) {
                        log_warning("More than %u perf event sources; the rest are not read",
                                    PERF_SYSFS_ENTRIES_MAX);
                        break;
                }
                names[n] = strdup(de->d_name);
                if (!names[n]) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        if (r >= 0 && errno != 0)
                r = negative_errno();
        (void) closedir(d);
        if (r < 0) {
                free_names(names, n);
                return r;
        }
        qsort(names, n, sizeof(char *), compare_names);
        *ret = names;
        *ret_n = n;
        return 0;
}

static const char *core_preference[] = { "cpu", "cpu_core" };

/* The core PMU: "cpu", else "cpu_core", else the first "armv8_*" in version order. */
static ssize_t pick_core(char **names, size_t n) {
        char cls[16];

        for (size_t k = 0; k < ELEMENTSOF(core_preference); k++)
                for (size_t i = 0; i < n; i++)
                        if (strcmp(names[i], core_preference[k]) == 0)
                                return (ssize_t) i;
        for (size_t i = 0; i < n; i++)
                if (classify(names[i], cls, sizeof(cls)) == CANDIDATE_CORE)
                        return (ssize_t) i;
        return -1;
}

static int add_hardware(PerfCatalog *c) {
        PerfPmu hw = {
                .name = "hardware",
                .type = PERF_TYPE_HARDWARE,
                .kind = PERF_PMU_CORE,
                .package = -1,
                .cpu = -1,
                .config_mask = { 0xff },
                .write_class = "core-pmu",
        };

        return perf_catalog_add(c, &hw);
}

static int try_pmu(PerfCatalog *c, int sys_fd, int devices_fd, const Machine *m, const char *name,
                   Candidate kind, const char *cls) {
        PerfPmu p = {};
        int r;

        r = read_pmu(sys_fd, devices_fd, m, name, kind, &p);
        if (r < 0) {
                log_warning("Perf event source %s is left out: %s", name,
                            r == -EPROTOTYPE ? "its type is one of the kernel's own PMUs" : strerror(-r));
                return 0;
        }
        (void) snprintf(p.write_class, sizeof(p.write_class), "%s", cls);
        r = perf_catalog_add(c, &p);
        if (r == -EEXIST || r == -E2BIG) {
                log_warning("Perf event source %s (type %" PRIu32 ") is left out: %s", name, p.type,
                            r == -EEXIST ? "its type is another's" : "too many PMUs");
                return 0;
        }
        return r;
}

int perf_catalog_read_sysfs(const char *root, const Machine *m, PerfCatalog **ret) {
        _cleanup_close_ int root_fd = -EBADF, sys_fd = -EBADF, devices_fd = -EBADF;
        PerfCatalog *c = NULL;
        char **names = NULL;
        size_t n = 0;
        ssize_t core;
        bool core_added = false;
        int r;

        r = perf_catalog_new(&c);
        if (r < 0)
                return r;
        root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd >= 0)
                sys_fd = open_subdir(root_fd, "sys");
        if (sys_fd >= 0)
                devices_fd = open_path_nofollow(sys_fd, "bus/event_source/devices");
        if (devices_fd < 0 || list_pmus(devices_fd, &names, &n) < 0) {
                log_info("No perf event sources under %s/sys/bus/event_source/devices: software events only",
                         root);
                *ret = c;
                return 0;
        }
        core = pick_core(names, n);
        if (core >= 0) {
                size_t before = c->n_pmus;

                r = try_pmu(c, sys_fd, devices_fd, m, names[core], CANDIDATE_CORE, "core-pmu");
                core_added = c->n_pmus > before;
                if (r >= 0 && core_added)
                        r = add_hardware(c);
                if (r < 0)
                        goto fail;
        }
        for (size_t i = 0; i < n; i++) {
                char cls[16];
                Candidate kind;

                if ((ssize_t) i == core)
                        continue;
                kind = classify(names[i], cls, sizeof(cls));
                if (kind == CANDIDATE_NONE)
                        continue;
                if (kind == CANDIDATE_CORE) {
                        log_info("Perf event source %s is left out: one core PMU is served, %s%s", names[i],
                                 names[core], core_added ? "" : " (itself left out)");
                        continue;
                }
                r = try_pmu(c, sys_fd, devices_fd, m, names[i], kind, cls);
                if (r < 0)
                        goto fail;
        }
        free_names(names, n);
        *ret = c;
        return 0;
fail:
        free_names(names, n);
        perf_catalog_free(c);
        return r;
}

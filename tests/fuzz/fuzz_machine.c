/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the daemon's readers of sysfs and procfs under --root (daemon/backend/machine.c):
 * proc/cpuinfo, the CPU lists and topology files, the PCI functions and their NUMA nodes
 *
 * Input: a file tree. A line "> PATH" starts a file, whose content runs to the next such line
 * (its last newline belongs to the separator); PATH is relative, of A-Z a-z 0-9 . _ - : /,
 * without "." or ".." components. The tree is written to a fresh directory and read back as
 * the daemon reads a fake machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/machine.h"
#include "cpuset.h"
#include "fuzz_util.h"
#include "pmugate-limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TREE_FILES_MAX 128U
#define TREE_PATH_MAX 200U

static bool path_ok(const char *path, size_t n) {
        if (n == 0 || n > TREE_PATH_MAX || path[0] == '/' || path[n - 1] == '/')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = path[i];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-' || c == ':' || c == '/'))
                        return false;
                /* no empty, "." or ".." component */
                if ((i == 0 || path[i - 1] == '/') &&
                    (c == '/' || (c == '.' && (i + 1 == n || path[i + 1] == '/' ||
                                               (path[i + 1] == '.' && (i + 2 == n || path[i + 2] == '/'))))))
                        return false;
        }
        return true;
}

/* Creates root/path with its parent directories and the given content; a path that collides
 * with a file or directory already there is skipped. */
static void write_file(const char *root, const char *path, size_t path_len, const char *content,
                       size_t size) {
        char full[4096];
        size_t base = strlen(root) + 1;
        int fd;

        (void) snprintf(full, sizeof(full), "%s/%.*s", root, (int) path_len, path);
        for (char *p = full + base; (p = strchr(p, '/')); p++) {
                *p = '\0';
                if (mkdir(full, 0755) < 0 && errno != EEXIST) {
                        *p = '/';
                        return;
                }
                *p = '/';
        }
        fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        while (size > 0) {
                ssize_t k = write(fd, content, size);

                if (k <= 0)
                        break;
                content += k;
                size -= (size_t) k;
        }
        (void) close(fd);
}

static void write_tree(const char *root, const char *data, size_t size) {
        const char *p = data, *end = data + size;
        unsigned files = 0;

        /* up to the first "> " line nothing is a file */
        if (!(size >= 2 && p[0] == '>' && p[1] == ' ')) {
                p = memmem(data, size, "\n> ", 3);
                if (!p)
                        return;
                p++;
        }
        while (p && p < end && files < TREE_FILES_MAX) {
                const char *path = p + 2, *eol = memchr(path, '\n', (size_t) (end - path)), *content, *next;
                size_t path_len = (size_t) ((eol ? eol : end) - path);

                content = eol ? eol + 1 : end;
                next = content < end ? memmem(content, (size_t) (end - content), "\n> ", 3) : NULL;
                if (path_ok(path, path_len)) {
                        write_file(root, path, path_len, content, (size_t) ((next ? next : end) - content));
                        files++;
                }
                p = next ? next + 1 : NULL;
        }
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) remove(path);
        return 0;
}

static char base[256];

static void remove_base(void) {
        (void) rmdir(base);
}

static bool accept_every_function(uint16_t vendor, uint16_t device, const void *userdata) {
        return true;
}

static void check_machine(const Machine *m) {
        uint32_t online = 0, first;
        int32_t max_package = -1;
        bool smt = false;

        fuzz_assert(FUZZ_TERMINATED(m->vendor) && m->vendor[0] != '\0');
        fuzz_assert(FUZZ_TERMINATED(m->model_name));
        fuzz_assert(m->n_cpus >= 1 && m->n_cpus <= PMUGATE_CPUS_MAX);
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                const MachineCpu *c = &m->cpus[cpu];

                fuzz_assert(!c->online || c->present);
                if (!c->online)
                        continue;
                online++;
                fuzz_assert(c->package >= 0 && c->core >= 0 && c->ccx >= -1);
                max_package = c->package > max_package ? c->package : max_package;
                smt = smt || c->thread > 0;
        }
        fuzz_assert(m->cpus[m->n_cpus - 1].present);
        fuzz_assert(m->n_online == online && m->smt == smt);
        fuzz_assert(m->n_packages == (uint32_t) max_package + 1U);
        fuzz_assert((machine_first_online_cpu(m, &first) == 0) == (online > 0));
}

static void check_units(const Machine *m) {
        fuzz_assert(m->n_units <= PMUGATE_UNITS_MAX);
        for (uint32_t i = 0; i < m->n_units; i++) {
                const MachineUnit *u = &m->units[i];
                CpuSet set;
                uint32_t anchor;
                bool package_has_cpu = false;
                int r;

                fuzz_assert(FUZZ_TERMINATED(u->bdf) && strlen(u->bdf) >= 12);
                fuzz_assert(i == 0 || strcmp(m->units[i - 1].bdf, u->bdf) < 0);
                /* a unit's package is one whose online CPUs the kernel named, or unknown */
                for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                        package_has_cpu = package_has_cpu ||
                                          (m->cpus[cpu].online && m->cpus[cpu].package == u->package);
                fuzz_assert(u->package == -1 || (u->package >= 0 && package_has_cpu));
                r = machine_scope_cpus(m, REG_SCOPE_THREAD, i, true, &set);
                fuzz_assert(r == 0 || (r == -ENOENT && u->package < 0));
                fuzz_assert((machine_scope_anchor(m, REG_SCOPE_THREAD, i, true, &anchor) == 0) == (r == 0));
                if (r == 0)
                        fuzz_assert(cpuset_has(&set, anchor) && m->cpus[anchor].package == u->package);
        }
}

static void check_scopes(const Machine *m) {
        for (uint32_t cpu = 0; cpu < m->n_cpus && cpu < 16; cpu++)
                for (RegScope s = 0; s < _REG_SCOPE_MAX; s++) {
                        CpuSet set;
                        uint32_t anchor;
                        int r = machine_scope_cpus(m, s, cpu, false, &set);

                        fuzz_assert(r == 0 || r == -ENXIO);
                        fuzz_assert((r == 0) == m->cpus[cpu].online);
                        if (r < 0)
                                continue;
                        /* the CPU itself is in every set of its own, and the anchor is the first */
                        fuzz_assert(cpuset_has(&set, cpu));
                        fuzz_assert(machine_scope_anchor(m, s, cpu, false, &anchor) == 0);
                        fuzz_assert(anchor <= cpu && cpuset_has(&set, anchor));
                }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char root[512];
        Machine *m = NULL;
        int r;

        if (!base[0]) {
                const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ?: "/tmp";

                (void) snprintf(base, sizeof(base), "%s/pmugate-fuzz-machine-XXXXXX", tmp);
                if (!mkdtemp(base))
                        abort();
                (void) atexit(remove_base);
        }
        (void) snprintf(root, sizeof(root), "%s/root", base);
        if (mkdir(root, 0755) < 0)
                abort();
        write_tree(root, (const char *) data, size);

        r = machine_discover(root, &m);
        fuzz_assert((r == 0) == (m != NULL));
        if (m) {
                check_machine(m);
                check_scopes(m);
                r = machine_discover_units(m, root, accept_every_function, NULL);
                fuzz_assert(r == 0 || r == -ENOMEM);
                check_units(m);
        }
        machine_free(m);
        (void) nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

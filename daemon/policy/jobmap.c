/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Job map: the CPUs of each granted job on this node
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"
#include "policy/jobmap.h"
#include "policy/scope.h"

/* A cgroup top directory holds few entries; a hostile or odd tree must not make a monitor's
 * request walk without end. */
#define JOBMAP_DIR_ENTRIES_MAX 256U

typedef struct PathList {
        char *buf;
        size_t size, used;
        int n;
} PathList;

static int path_list_add(PathList *l, const char *fmt_base, const char *middle, const char *job) {
        int n = snprintf(l->buf + l->used, l->size - l->used, "%s%s/job_%s", fmt_base, middle, job);

        if (n < 0 || (size_t) n >= l->size - l->used)
                return -ENAMETOOLONG;
        l->used += (size_t) n + 1;
        l->n++;
        return 0;
}

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* Entries of dir whose names begin with prefix and end with suffix, each added as
 * base/NAME[/between]/job_ID. */
static int add_matching(PathList *l, const char *cgroup_root, const char *base, const char *prefix,
                        const char *suffix, const char *between, const char *job) {
        char dir[1024];
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        unsigned seen = 0;
        int n;

        n = snprintf(dir, sizeof(dir), "%s%s", cgroup_root, base);
        if (n < 0 || (size_t) n >= sizeof(dir))
                return -ENAMETOOLONG;
        d = opendir(dir);
        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        while ((de = readdir(d)) && seen++ < JOBMAP_DIR_ENTRIES_MAX) {
                size_t len = strlen(de->d_name), lp = strlen(prefix), ls = strlen(suffix);
                char middle[512];

                if (de->d_name[0] == '.' || len < lp + ls || strncmp(de->d_name, prefix, lp) != 0 ||
                    strcmp(de->d_name + len - ls, suffix) != 0)
                        continue;
                n = snprintf(middle, sizeof(middle), "%s/%s%s", base, de->d_name, between);
                if (n < 0 || (size_t) n >= sizeof(middle))
                        continue;
                n = path_list_add(l, "", middle, job);
                if (n < 0)
                        return n;
        }
        return 0;
}

int jobmap_candidate_paths(const char *cgroup_root, const char *job, uid_t uid, char *buf, size_t size) {
        PathList l = { .buf = buf, .size = size };
        char uid_dir[32];
        int r;

        if (!cgroup_root || !job || !buf || size == 0)
                return -EINVAL;
        /* cgroup v2: slurmstepd.scope, or NODE_slurmstepd.scope with several slurmd per host */
        r = add_matching(&l, cgroup_root, "/system.slice", "", "slurmstepd.scope", "", job);
        if (r < 0)
                return r;
        r = add_matching(&l, cgroup_root, "/unified/system.slice", "", "slurmstepd.scope", "", job);
        if (r < 0)
                return r;
        /* cgroup v1: cpuset/slurm/uid_U/job_J or cpuset/slurm_NODE/uid_U/job_J */
        (void) snprintf(uid_dir, sizeof(uid_dir), "/uid_%u", (unsigned) uid);
        r = add_matching(&l, cgroup_root, "/cpuset", "slurm", "", uid_dir, job);
        if (r < 0)
                return r;
        return l.n;
}

/* Whether dir is a directory of root's, itself and not through a symbolic link. */
static bool dir_of_root(const char *dir) {
        struct stat st;

        return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0;
}

int jobmap_grant_cpus(const char *cgroup_root, const Grant *g, CpuSet *ret) {
        static const char *const v2_files[] = { "cpuset.cpus.effective", NULL };
        static const char *const v1_files[] = { "cpuset.effective_cpus", "cpuset.cpus", NULL };
        _cleanup_free_ char *paths = NULL;
        const size_t size = 16384;
        const char *p;
        int n;

        if (!g || !ret)
                return -EINVAL;
        if (g->has_cpus) {
                *ret = g->cpus;
                return 0;
        }
        if (!cgroup_root)
                return -ENOENT;
        paths = malloc(size);
        if (!paths)
                return -ENOMEM;
        n = jobmap_candidate_paths(cgroup_root, g->job, g->uid, paths, size);
        if (n < 0)
                return n;
        p = paths;
        for (int i = 0; i < n; i++, p += strlen(p) + 1) {
                bool v1 = strncmp(p, "/cpuset/", 8) == 0;
                char full[2048];
                CpuSet cpus;
                int k, r;

                k = snprintf(full, sizeof(full), "%s%s", cgroup_root, p);
                if (k < 0 || (size_t) k >= sizeof(full) || !dir_of_root(full))
                        continue;
                /* Read in the job's own directory only: a job's CPUs are never its parent's. */
                r = scope_read_cpuset(cgroup_root, p, strlen(p), v1 ? v1_files : v2_files, &cpus);
                if (r == -ENOENT || r == -ENODATA || r == -EINVAL)
                        continue;
                if (r < 0)
                        return r;
                *ret = cpus;
                return 0;
        }
        return -ENOENT;
}

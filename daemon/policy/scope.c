/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Job scope from grants and cgroups
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpulist.h"
#include "error.h"
#include "macro.h"
#include "scope.h"

#define CGROUP_PATH_MAX 2048
#define CGROUP_FILE_MAX (16U * 1024U)   /* /proc/PID/cgroup: one line per hierarchy */

/* Returns the length of path up to the end of its "job_<ID>" component (0 when there is none)
 * and the ID in job. */
static size_t find_job(const char *path, char *job, size_t size) {
        const char *p = path;

        job[0] = '\0';
        /* Slurm: cgroup v1 .../slurm/uid_U/job_J/step_S, v2 .../slurmstepd.scope/job_J/step_S */
        while ((p = strstr(p, "job_"))) {
                size_t n;

                if (p != path && p[-1] != '/') {
                        p += 4;
                        continue;
                }
                p += 4;
                n = strcspn(p, "/\n");
                if (n == 0 || n >= size)
                        return 0;
                memcpy(job, p, n);
                job[n] = '\0';
                return (size_t) (p + n - path);
        }
        return 0;
}

/* Whether the job's cgroup directory belongs to root. The batch system (slurmstepd, as root)
 * creates it; with cgroup v2 delegation a user may create cgroups of their own, and one named
 * job_<ID> with a cpuset of their choosing must not stand for the job. */
static bool job_cgroup_trusted(const char *cgroup_root, const char *path, size_t job_end, bool v2) {
        static const char *const v2_bases[] = { "", "/unified" }, *const v1_bases[] = { "/cpuset" };
        const char *const *bases = v2 ? v2_bases : v1_bases;
        size_t n_bases = v2 ? ELEMENTSOF(v2_bases) : ELEMENTSOF(v1_bases);

        for (size_t i = 0; i < n_bases; i++) {
                char dir[CGROUP_PATH_MAX + 600];
                struct stat st;

                (void) snprintf(dir, sizeof(dir), "%s%s%.*s", cgroup_root, bases[i], (int) job_end, path);
                if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
                        return st.st_uid == 0;
        }
        return false;
}

/* The cgroup paths of pid: the v2 path ("0::") and the v1 cpuset path, as far as present. */
/* Whether the process behind pidfd still exists. Checked after reading /proc/PID: a pid is
 * not reused while its process (or zombie) exists, so what was read belonged to the peer.
 * The daemon may lack the right to signal the caller (EPERM): that process is alive too. */
static bool pidfd_alive(int pidfd) {
        return pidfd_send_signal(pidfd, 0, NULL, 0) == 0 || errno == EPERM;
}

/* The peer's /proc/PID/cgroup stays open for the connection: the open file belongs to that
 * process (a pid reused later gets a new proc entry, and reads of this one fail), so it is
 * opened once, checked against the pidfd once, and read again at every request. */
static int open_proc_cgroup(Peer *peer) {
        char path[64];
        int fd;

        if (peer->cgroup_fd >= 0)
                return 0;
        if (peer->pidfd < 0)
                return -ESRCH;
        (void) snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) peer->pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (!pidfd_alive(peer->pidfd)) {
                (void) close(fd);
                return -ESRCH;
        }
        peer->cgroup_fd = fd;
        return 0;
}

static int read_proc_cgroup(int fd, char *v2, char *v1_cpuset, size_t size) {
        _cleanup_free_ char *text = malloc(CGROUP_FILE_MAX + 1);
        char *lines = NULL;
        ssize_t length;

        if (!text)
                return -ENOMEM;
        v2[0] = v1_cpuset[0] = '\0';
        length = pread(fd, text, CGROUP_FILE_MAX, 0);
        if (length < 0)
                return -errno;
        text[length] = '\0';
        for (char *line = strtok_r(text, "\n", &lines); line; line = strtok_r(NULL, "\n", &lines)) {
                char *first = strchr(line, ':'), *second;

                if (!first || !(second = strchr(first + 1, ':')))
                        continue;
                if (strncmp(line, "0::", 3) == 0)
                        (void) snprintf(v2, size, "%s", second + 1);
                else {
                        char controllers[256];
                        size_t n = (size_t) (second - first - 1);

                        if (n >= sizeof(controllers))
                                continue;
                        memcpy(controllers, first + 1, n);
                        controllers[n] = '\0';
                        for (char *save = NULL, *c = strtok_r(controllers, ",", &save); c; c = strtok_r(NULL, ",", &save))
                                if (strcmp(c, "cpuset") == 0)
                                        (void) snprintf(v1_cpuset, size, "%s", second + 1);
                }
        }
        return 0;
}

/* Reads the effective CPUs of a cgroup, walking up to the nearest ancestor that has them. */
static int read_cpuset(const char *dir_root, const char *cgroup, const char *const *files, CpuSet *ret) {
        char path[CGROUP_PATH_MAX];

        (void) snprintf(path, sizeof(path), "%s", cgroup);
        for (;;) {
                for (const char *const *file = files; *file; file++) {
                        _cleanup_fclose_ FILE *f = NULL;
                        _cleanup_free_ uint32_t *cpus = NULL;
                        char full[CGROUP_PATH_MAX + 512], text[65536];
                        size_t n;

                        (void) snprintf(full, sizeof(full), "%s%s/%s", dir_root, path, *file);
                        f = fopen(full, "re");
                        if (!f)
                                continue;
                        if (!fgets(text, sizeof(text), f))
                                continue;
                        text[strcspn(text, "\n")] = '\0';
                        if (text[0] == '\0' || cpulist_parse(text, PMUGATE_CPUS_MAX, &cpus, &n) < 0)
                                continue;
                        cpuset_clear(ret);
                        for (size_t i = 0; i < n; i++)
                                cpuset_add(ret, cpus[i]);
                        return 0;
                }
                char *slash = strrchr(path, '/');
                if (!slash || slash == path)
                        return -ENOENT;
                *slash = '\0';
        }
}

static int cgroup_cpus(const char *cgroup_root, const char *v2, const char *v1_cpuset, CpuSet *ret) {
        static const char *const v2_files[] = { "cpuset.cpus.effective", NULL };
        static const char *const v1_files[] = { "cpuset.effective_cpus", "cpuset.cpus", NULL };
        char dir[1024];

        if (v2[0] && strcmp(v2, "/") != 0) {
                (void) snprintf(dir, sizeof(dir), "%s", cgroup_root);
                if (read_cpuset(dir, v2, v2_files, ret) == 0)
                        return 0;
                (void) snprintf(dir, sizeof(dir), "%s/unified", cgroup_root);
                if (read_cpuset(dir, v2, v2_files, ret) == 0)
                        return 0;
        }
        if (v1_cpuset[0]) {
                (void) snprintf(dir, sizeof(dir), "%s/cpuset", cgroup_root);
                if (read_cpuset(dir, v1_cpuset, v1_files, ret) == 0)
                        return 0;
        }
        return -ENOENT;
}

_printf_(4, 5) static int no_grant(char *reason, size_t size, int code, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, size, fmt, ap);
        va_end(ap);
        return code;
}

int scope_resolve(const char *cgroup_root, Peer *peer, const Grants *grants, Scope *ret, char *reason,
                  size_t reason_size) {
        char v2[CGROUP_PATH_MAX], v1[CGROUP_PATH_MAX], job[PMUGATE_STRING_MAX + 1];
        const Grant *grant;
        size_t job_end;
        bool job_v2;
        Scope s = {};

        if (!grants_has_uid(grants, peer->uid))
                return no_grant(reason, reason_size, PROTO_E_NO_GRANT,
                                "no job grant for uid %u on this node: run inside your job, or ask your admin",
                                (unsigned) peer->uid);
        /* /proc/PID/cgroup is only the peer's while its pidfd shows the process still lives. */
        if (peer->pidfd < 0)
                return no_grant(reason, reason_size, PROTO_E_NO_GRANT,
                                "the kernel gave no pidfd for this connection (SO_PEERPIDFD needs "
                                "Linux 6.5 or later), so which job pid %d belongs to cannot be verified",
                                (int) peer->pid);
        if (open_proc_cgroup(peer) < 0 || read_proc_cgroup(peer->cgroup_fd, v2, v1, sizeof(v2)) < 0)
                return no_grant(reason, reason_size, PROTO_E_NO_GRANT,
                                "cannot tell which job pid %d belongs to (has it exited?)", (int) peer->pid);

        job_end = find_job(v2, job, sizeof(job));
        job_v2 = job_end > 0;
        if (!job_v2)
                job_end = find_job(v1, job, sizeof(job));

        if (job[0]) {
                if (!job_cgroup_trusted(cgroup_root, job_v2 ? v2 : v1, job_end, job_v2))
                        return no_grant(reason, reason_size, PROTO_E_NO_GRANT,
                                        "the cgroup of job %s is not the batch system's (not owned by root); "
                                        "run inside your job", job);
                grant = grants_find(grants, job);
                if (!grant || grant->uid != peer->uid)
                        return no_grant(reason, reason_size, PROTO_E_NO_GRANT,
                                        "no grant for job %s of uid %u on this node: ask your admin", job,
                                        (unsigned) peer->uid);
                (void) snprintf(s.job, sizeof(s.job), "%s", job);
                if (grant->has_cpus)
                        s.cpus = grant->cpus;
                else if (cgroup_cpus(cgroup_root, v2, v1, &s.cpus) < 0)
                        return no_grant(reason, reason_size, PROTO_E_NO_GRANT,
                                        "cannot read the CPUs of job %s from its cgroup", job);
                *ret = s;
                return 0;
        }

        /* Outside any job's cgroup (e.g. logged in by ssh), only grants that name their CPUs
         * apply: the cgroup cannot tell which CPUs are the job's. */
        for (size_t i = 0; i < grants->n; i++) {
                grant = &grants->items[i];
                if (grant->uid != peer->uid || !grant->has_cpus)
                        continue;
                for (unsigned w = 0; w < PMUGATE_CPUS_MAX / 64; w++)
                        s.cpus.bits[w] |= grant->cpus.bits[w];
                if (!s.job[0])
                        (void) snprintf(s.job, sizeof(s.job), "%s", grant->job);
        }
        if (cpuset_is_empty(&s.cpus))
                return no_grant(reason, reason_size, PROTO_E_NO_GRANT,
                                "pid %d is not inside a job's cgroup: run the command inside your job (srun), "
                                "or ask your admin for a grant with --cpus", (int) peer->pid);
        *ret = s;
        return 0;
}

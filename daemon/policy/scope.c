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
#include "policy/scope.h"

#define CGROUP_FILE_MAX (16U * 1024U)   /* /proc/PID/cgroup: one line per hierarchy */
#define CPUSET_TEXT_MAX (64U * 1024U)    /* a cpuset file: every other CPU of PMUGATE_CPUS_MAX fits */

size_t scope_find_job(const char *path, char *ret_job, size_t job_size) {
        const char *p = path;

        ret_job[0] = '\0';
        /* Slurm: cgroup v1 .../slurm/uid_U/job_J/step_S, v2 .../slurmstepd.scope/job_J/step_S */
        while ((p = strstr(p, "job_"))) {
                size_t n;

                if (p != path && p[-1] != '/') {
                        p += 4;
                        continue;
                }
                p += 4;
                n = strcspn(p, "/\n");
                if (n == 0 || n >= job_size)
                        return 0;
                memcpy(ret_job, p, n);
                ret_job[n] = '\0';
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
                char dir[PMUGATE_CGROUP_PATH_MAX + 600];
                struct stat st;
                int n;

                n = snprintf(dir, sizeof(dir), "%s%s%.*s", cgroup_root, bases[i], (int) job_end, path);
                if (n < 0 || (size_t) n >= sizeof(dir))
                        return false;
                if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
                        return st.st_uid == 0;
        }
        return false;
}

/* Checked after opening or reading /proc/PID: a pid is not reused while its process (or zombie)
 * exists, so what was read belonged to the process of the pidfd. The daemon may lack the right
 * to signal the process (EPERM): that process is alive too. */
bool scope_pidfd_alive(int pidfd) {
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
        if (!scope_pidfd_alive(peer->pidfd)) {
                (void) close(fd);
                return -ESRCH;
        }
        peer->cgroup_fd = fd;
        return 0;
}

/* An absolute cgroup path with no empty, "." or ".." component: it is appended to the
 * cgroup mount point, and must not lead anywhere else. */
static bool cgroup_path_valid(const char *path, size_t n) {
        if (n == 0 || path[0] != '/')
                return false;
        if (n == 1)
                return true;
        for (size_t i = 1, start = 1; i <= n; i++) {
                size_t len;

                if (i < n && path[i] != '/') {
                        if (path[i] == '\0')
                                return false;
                        continue;
                }
                len = i - start;
                if (len == 0 || (len == 1 && path[start] == '.') ||
                    (len == 2 && path[start] == '.' && path[start + 1] == '.'))
                        return false;
                start = i + 1;
        }
        return true;
}

static int take_path(const char *path, size_t n, char *ret, size_t size) {
        if (ret[0])
                return -EINVAL;         /* the same hierarchy twice: which one holds? */
        if (!cgroup_path_valid(path, n))
                return -EINVAL;
        if (n >= size)
                return -ENAMETOOLONG;
        memcpy(ret, path, n);
        ret[n] = '\0';
        return 0;
}

static bool controllers_have_cpuset(const char *list, size_t n) {
        for (size_t i = 0; i < n;) {
                const char *comma = memchr(list + i, ',', n - i);
                size_t len = comma ? (size_t) (comma - (list + i)) : n - i;

                if (len == 6 && memcmp(list + i, "cpuset", 6) == 0)
                        return true;
                i += len + 1;
        }
        return false;
}

int scope_parse_proc_cgroup(const char *text, size_t size, char *ret_v2, char *ret_v1_cpuset,
                            size_t path_size) {
        if (path_size == 0)
                return -ENAMETOOLONG;
        ret_v2[0] = ret_v1_cpuset[0] = '\0';
        for (size_t at = 0; at < size;) {
                const char *line = text + at, *newline = memchr(line, '\n', size - at);
                size_t n = newline ? (size_t) (newline - line) : size - at, path_length;
                const char *first, *second, *path;
                int r = 0;

                at += n + 1;
                /* "ID:controllers:path"; a line without both colons names no hierarchy. */
                first = memchr(line, ':', n);
                second = first ? memchr(first + 1, ':', n - (size_t) (first + 1 - line)) : NULL;
                if (!second)
                        continue;
                path = second + 1;
                path_length = n - (size_t) (path - line);
                if (first - line == 1 && line[0] == '0' && second == first + 1)
                        r = take_path(path, path_length, ret_v2, path_size);
                else if (controllers_have_cpuset(first + 1, (size_t) (second - first - 1)))
                        r = take_path(path, path_length, ret_v1_cpuset, path_size);
                if (r < 0) {
                        ret_v2[0] = ret_v1_cpuset[0] = '\0';
                        return r;
                }
        }
        return 0;
}

int scope_read_proc_cgroup(int fd, char *v2, char *v1_cpuset, size_t size) {
        _cleanup_free_ char *text = malloc(CGROUP_FILE_MAX + 1);
        ssize_t length;

        if (!text)
                return -ENOMEM;
        length = pread(fd, text, CGROUP_FILE_MAX + 1, 0);
        if (length < 0)
                return -errno;
        if ((size_t) length > CGROUP_FILE_MAX)
                return -EFBIG;
        return scope_parse_proc_cgroup(text, (size_t) length, v2, v1_cpuset, size);
}

int scope_peer_cgroup(Peer *peer, char *ret_v2, char *ret_v1_cpuset, size_t path_size) {
        int r;

        r = open_proc_cgroup(peer);
        if (r < 0)
                return r;
        return scope_read_proc_cgroup(peer->cgroup_fd, ret_v2, ret_v1_cpuset, path_size);
}

/* The first line of a cpuset file as CPUs; a file too long to read whole is refused. */
static int read_cpu_list_file(const char *path, CpuSet *ret) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n;

        f = fopen(path, "re");
        if (!f)
                return -errno;
        text = malloc(CPUSET_TEXT_MAX + 1);
        if (!text)
                return -ENOMEM;
        n = fread(text, 1, CPUSET_TEXT_MAX + 1, f);
        if (ferror(f))
                return -EIO;
        if (n > CPUSET_TEXT_MAX)
                return -EFBIG;
        text[n] = '\0';
        text[strcspn(text, "\n")] = '\0';
        if (text[0] == '\0')
                return -ENODATA;
        if (cpulist_parse(text, PMUGATE_CPUS_MAX, &cpus, &n) < 0)
                return -EINVAL;
        cpuset_clear(ret);
        for (size_t i = 0; i < n; i++)
                cpuset_add(ret, cpus[i]);
        return 0;
}

int scope_read_cpuset(const char *dir_root, const char *path, size_t stop, const char *const *files,
                      CpuSet *ret) {
        size_t length = strlen(path);

        if (stop == 0 || stop > length)
                return -EINVAL;
        for (;;) {
                for (const char *const *file = files; *file; file++) {
                        char full[PMUGATE_CGROUP_PATH_MAX + 1024];
                        int n, r;

                        n = snprintf(full, sizeof(full), "%s%.*s/%s", dir_root, (int) length, path, *file);
                        if (n < 0 || (size_t) n >= sizeof(full))
                                return -ENAMETOOLONG;
                        r = read_cpu_list_file(full, ret);
                        if (r == 0)
                                return 0;
                        if (r != -ENOENT && r != -ENODATA)
                                return r;
                }
                /* Up one directory, but never above the job's own. */
                while (length > stop && path[length - 1] != '/')
                        length--;
                if (length <= stop)
                        return -ENOENT;
                length--;       /* the slash */
        }
}

static int cgroup_cpus(const char *cgroup_root, const char *v2, const char *v1_cpuset, const char *job,
                       CpuSet *ret) {
        static const char *const v2_files[] = { "cpuset.cpus.effective", NULL };
        static const char *const v1_files[] = { "cpuset.effective_cpus", "cpuset.cpus", NULL };
        char dir[1024], found[PMUGATE_STRING_MAX + 1];
        size_t stop;
        int r = -ENOENT;

        /* Each hierarchy is read only where its own path names this job, in a directory of
         * root's. */
        stop = scope_find_job(v2, found, sizeof(found));
        if (stop > 0 && strcmp(found, job) == 0 && job_cgroup_trusted(cgroup_root, v2, stop, true)) {
                (void) snprintf(dir, sizeof(dir), "%s", cgroup_root);
                r = scope_read_cpuset(dir, v2, stop, v2_files, ret);
                if (r == -ENOENT) {
                        (void) snprintf(dir, sizeof(dir), "%s/unified", cgroup_root);
                        r = scope_read_cpuset(dir, v2, stop, v2_files, ret);
                }
                if (r != -ENOENT)
                        return r;
        }
        stop = scope_find_job(v1_cpuset, found, sizeof(found));
        if (stop > 0 && strcmp(found, job) == 0 && job_cgroup_trusted(cgroup_root, v1_cpuset, stop, false)) {
                (void) snprintf(dir, sizeof(dir), "%s/cpuset", cgroup_root);
                r = scope_read_cpuset(dir, v1_cpuset, stop, v1_files, ret);
        }
        return r;
}

int scope_resolve(const char *cgroup_root, Peer *peer, const Grants *grants, Scope *ret, Refusal *ret_refusal) {
        char v2[PMUGATE_CGROUP_PATH_MAX], v1[PMUGATE_CGROUP_PATH_MAX], job[PMUGATE_STRING_MAX + 1];
        const Grant *grant;
        size_t job_end;
        bool job_v2;
        Scope s = {};

        if (!grants_has_uid(grants, peer->uid))
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "no job grant for uid %u on this node: run inside your job, or ask your admin",
                              (unsigned) peer->uid);
        /* /proc/PID/cgroup is only the peer's while its pidfd shows the process still lives. */
        if (peer->pidfd < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "the kernel gave no pidfd for this connection (SO_PEERPIDFD needs "
                              "Linux 6.5 or later), so which job pid %d belongs to cannot be verified",
                              (int) peer->pid);
        if (scope_peer_cgroup(peer, v2, v1, sizeof(v2)) < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "cannot tell which job pid %d belongs to (has it exited?)", (int) peer->pid);

        job_end = scope_find_job(v2, job, sizeof(job));
        job_v2 = job_end > 0;
        if (!job_v2)
                job_end = scope_find_job(v1, job, sizeof(job));

        if (job[0]) {
                if (!job_cgroup_trusted(cgroup_root, job_v2 ? v2 : v1, job_end, job_v2))
                        return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                                      "the cgroup of job %s is not the batch system's (not owned by root); "
                                      "run inside your job", job);
                grant = grants_find(grants, job);
                if (!grant || grant->uid != peer->uid)
                        return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                                      "no grant for job %s of uid %u on this node: ask your admin", job,
                                      (unsigned) peer->uid);
                (void) snprintf(s.job, sizeof(s.job), "%s", job);
                s.from_cgroup = true;
                if (grant->has_cpus)
                        s.cpus = grant->cpus;
                else if (cgroup_cpus(cgroup_root, v2, v1, job, &s.cpus) < 0)
                        return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
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
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "pid %d is not inside a job's cgroup: run the command inside your job (srun), "
                              "or ask your admin for a grant with --cpus", (int) peer->pid);
        *ret = s;
        return 0;
}

const char *scope_job_of_cpu(const Scope *s, const Grants *grants, uid_t uid, uint32_t cpu) {
        if (!cpuset_has(&s->cpus, cpu))
                return NULL;
        if (s->from_cgroup)
                return s->job;
        for (size_t i = 0; i < grants->n; i++) {
                const Grant *g = &grants->items[i];

                if (g->uid == uid && g->has_cpus && cpuset_has(&g->cpus, cpu))
                        return g->job;
        }
        return NULL;
}

bool scope_job_covers(const Scope *s, const Grants *grants, uid_t uid, const char *job, uint32_t cpu) {
        const Grant *g;

        if (!job || !job[0] || !cpuset_has(&s->cpus, cpu))
                return false;
        if (s->from_cgroup)
                return strcmp(job, s->job) == 0;
        g = grants_find(grants, job);
        return g && g->uid == uid && g->has_cpus && cpuset_has(&g->cpus, cpu);
}

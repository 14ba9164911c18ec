/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scopes of the perf_event path: the job's cgroup directory, and a process of the caller's
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "error.h"
#include "macro.h"
#include "perf/perf-target.h"
#include "pmugate-limits.h"
#include "policy/jobmap.h"
#include "policy/scope.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* /proc/PID/task/TID/status is about 1.5 KiB; a longer one is not believed. */
#define PROC_STATUS_SIZE_MAX (16U * 1024U)

static bool is_cgroup2(int fd) {
        struct statfs sfs;

        return fstatfs(fd, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

/* The v2 hierarchy: cgroup_root itself on a unified host, cgroup_root/unified on a hybrid one.
 * Returns 0 with its fd, -ENOMEDIUM when neither is cgroup2, or another negative errno. */
static int open_v2_mount(const char *cgroup_root, int *ret_fd) {
        _cleanup_close_ int root = -EBADF, unified = -EBADF;

        root = open(cgroup_root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (root < 0)
                return errno == ENOENT ? -ENOMEDIUM : -errno;
        if (is_cgroup2(root)) {
                *ret_fd = TAKE_FD(root);
                return 0;
        }
        unified = openat(root, "unified", O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (unified < 0)
                return errno == ENOENT ? -ENOMEDIUM : -errno;
        if (!is_cgroup2(unified))
                return -ENOMEDIUM;
        *ret_fd = TAKE_FD(unified);
        return 0;
}

/* Opens the directory path (absolute, n bytes, no empty, "." or ".." component: as
 * scope_parse_proc_cgroup() passes it) beneath dir one component at a time, following no
 * symlink on the way. */
static int open_beneath(int dir, const char *path, size_t n, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;

        fd = fcntl(dir, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        for (size_t at = 0; at < n;) {
                char name[NAME_MAX + 1];
                size_t len;
                int next;

                while (at < n && path[at] == '/')
                        at++;
                len = 0;
                while (at + len < n && path[at + len] != '/')
                        len++;
                if (len == 0)
                        break;
                if (len > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(name, path + at, len);
                name[len] = '\0';
                next = openat(fd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (next < 0)
                        return -errno;
                (void) close(fd);
                fd = next;
                at += len;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int perf_target_job_path(Peer *peer, const char *job, char *ret_path, size_t path_size, Refusal *ret_refusal) {
        char v2[PMUGATE_CGROUP_PATH_MAX], v1[PMUGATE_CGROUP_PATH_MAX], found[PMUGATE_STRING_MAX + 1];
        size_t end;

        if (peer->pidfd < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "the kernel gave no pidfd for this connection (SO_PEERPIDFD needs "
                              "Linux 6.5 or later), so which job pid %d belongs to cannot be verified",
                              (int) peer->pid);
        if (scope_peer_cgroup(peer, v2, v1, sizeof(v2)) < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "cannot tell which job pid %d belongs to (has it exited?)", (int) peer->pid);
        end = scope_find_job(v2, found, sizeof(found));
        if (end == 0) {
                if (scope_find_job(v1, found, sizeof(found)) > 0)
                        return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                                      "pid %d is in the cgroup of job %s only in the cgroup v1 hierarchy; "
                                      "per-job counting needs the job's cgroup in the v2 hierarchy: ask "
                                      "your admin, or count with scope cpu or process",
                                      (int) peer->pid, found);
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "pid %d is not inside a job's cgroup: run the command inside your job "
                              "(srun), or count with scope cpu or process", (int) peer->pid);
        }
        if (strcmp(found, job) != 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "pid %d runs in the cgroup of job %s, not of job %s: count the job you run in",
                              (int) peer->pid, found, job);
        if (end >= path_size)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "the cgroup path of job %s is longer than %zu bytes", job, path_size - 1);
        memcpy(ret_path, v2, end);
        ret_path[end] = '\0';
        return 0;
}

int perf_target_job_cgroup(const char *cgroup_root, Peer *peer, const char *job, int *ret_fd, Refusal *ret_refusal) {
        _cleanup_close_ int mount = -EBADF, dir = -EBADF;
        char path[PMUGATE_CGROUP_PATH_MAX];
        struct stat st;
        int r;

        r = perf_target_job_path(peer, job, path, sizeof(path), ret_refusal);
        if (r != 0)
                return r;
        r = open_v2_mount(cgroup_root, &mount);
        if (r == -ENOMEDIUM)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "per-job counting needs the cgroup v2 hierarchy (mounted at %s or %s/unified), "
                              "which this node does not have: count with scope cpu or process",
                              cgroup_root, cgroup_root);
        if (r < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1, "cannot open the cgroup hierarchy at %s: %s",
                              cgroup_root, strerror(-r));
        r = open_beneath(mount, path, strlen(path), &dir);
        if (r == -ELOOP || r == -ENOTDIR)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "the job's cgroup %s has a component that is not a directory (a symlink?), "
                              "which is never followed: the job's cgroup cannot be trusted", path);
        if (r == -ENOENT)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "the job's cgroup %s is gone (has job %s ended?)", path, job);
        if (r < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1, "cannot open the job's cgroup %s: %s", path,
                              strerror(-r));
        if (fstat(dir, &st) < 0)
                return -errno;
        if (!is_cgroup2(dir) || st.st_uid != 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                              "the job's cgroup %s is not root's: a user-made cgroup cannot stand for a job; "
                              "run inside your job (srun)", path);
        *ret_fd = TAKE_FD(dir);
        return 0;
}

/* The candidate paths of a job are short: a few per slurmstepd scope of the node. */
#define JOB_CANDIDATES_SIZE 16384U

int perf_target_job_cgroup_of_id(const char *cgroup_root, const char *job, int *ret_fd, Refusal *ret_refusal) {
        _cleanup_free_ char *paths = NULL;
        _cleanup_close_ int root = -EBADF;
        const char *p;
        int n;

        paths = malloc(JOB_CANDIDATES_SIZE);
        if (!paths)
                return -ENOMEM;
        /* the uid only names cgroup v1 candidates, which perf cannot use */
        n = jobmap_candidate_paths(cgroup_root, job, 0, paths, JOB_CANDIDATES_SIZE);
        if (n < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1, "cannot look for the cgroup of job %s under %s: %s",
                              job, cgroup_root, strerror(-n));
        root = open(cgroup_root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (root < 0)
                return refuse(ret_refusal, PROTO_E_NO_GRANT, -1, "cannot open the cgroup hierarchy at %s: %s",
                              cgroup_root, strerror(errno));
        p = paths;
        for (int i = 0; i < n; i++, p += strlen(p) + 1) {
                _cleanup_close_ int dir = -EBADF;
                struct stat st;

                if (strncmp(p, "/cpuset/", 8) == 0)
                        continue;
                if (open_beneath(root, p, strlen(p), &dir) < 0)
                        continue;
                if (fstat(dir, &st) < 0 || !is_cgroup2(dir) || st.st_uid != 0)
                        continue;
                *ret_fd = TAKE_FD(dir);
                return 0;
        }
        return refuse(ret_refusal, PROTO_E_NO_GRANT, -1,
                      "job %s has no cgroup of root's in the v2 hierarchy (system.slice/[NODE_]slurmstepd.scope/job_%s "
                      "under %s or %s/unified): it cannot be counted per job", job, job, cgroup_root, cgroup_root);
}

/* What one thread's status says: whether it still runs (not a zombie or dead), its uids, and
 * who owns its /proc entry: root, not the process's uid, when the process is not dumpable (a
 * setuid program, or one that asked the kernel to keep others out), which ptrace and perf
 * refuse to an unprivileged user, as pmugate must: its opener's CAP_PERFMON skips the kernel's
 * own ptrace check. */
typedef struct ThreadStatus {
        bool live;
        uid_t real_uid, effective_uid, saved_uid, fs_uid;
        uid_t owner;
} ThreadStatus;

/* text begins with a newline, so every field starts one. The only field the process chooses,
 * its name (the first line), comes escaped by the kernel (a newline as a backslash and "n"), so it
 * cannot forge a State or Uid line. */
static int parse_status(const char *text, ThreadStatus *ret) {
        const char *state = strstr(text, "\nState:"), *uids = strstr(text, "\nUid:");
        unsigned long u[4];
        char c;

        if (!state || !uids)
                return -EBADMSG;
        if (sscanf(state, "\nState: %c", &c) != 1)
                return -EBADMSG;
        if (sscanf(uids, "\nUid: %lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
                return -EBADMSG;
        for (size_t i = 0; i < ELEMENTSOF(u); i++)
                if (u[i] > (uid_t) -2)
                        return -EBADMSG;
        *ret = (ThreadStatus) { .live = c != 'Z' && c != 'X' && c != 'x',
                                .real_uid = (uid_t) u[0], .effective_uid = (uid_t) u[1],
                                .saved_uid = (uid_t) u[2], .fs_uid = (uid_t) u[3] };
        return 0;
}

/* -ENOENT or -ESRCH: the thread has gone since its directory was listed. */
static int read_thread_status(int task_dir, const char *tid, ThreadStatus *ret) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        char path[64];
        ssize_t n;
        int r;

        if ((size_t) snprintf(path, sizeof(path), "%s/status", tid) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = openat(task_dir, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        text = malloc(PROC_STATUS_SIZE_MAX + 2);
        if (!text)
                return -ENOMEM;
        text[0] = '\n';         /* every field, the first too, then starts a line */
        n = read(fd, text + 1, PROC_STATUS_SIZE_MAX + 1);
        if (n < 0)
                return -errno;
        if ((size_t) n > PROC_STATUS_SIZE_MAX)
                return -EFBIG;
        text[n + 1] = '\0';
        r = parse_status(text, ret);
        if (r < 0)
                return r;
        ret->owner = st.st_uid;
        return 0;
}

static bool parse_tid(const char *name, pid_t *ret) {
        char *end;
        long v;

        if (name[0] < '1' || name[0] > '9')
                return false;
        errno = 0;
        v = strtol(name, &end, 10);
        if (errno != 0 || *end != '\0' || v <= 0 || v > INT_MAX)
                return false;
        *ret = (pid_t) v;
        return true;
}

/* Lists the live threads of the process at proc_dir into ret (whose tids it owns), refusing
 * when one runs as another uid than the caller's (root's callers may count anyone's). */
static int collect_threads(int proc_dir, const Peer *peer, PerfProcess *ret, Refusal *ret_refusal) {
        _cleanup_close_ int task_fd = -EBADF;
        DIR *d;
        struct dirent *de;
        int r = 0;

        task_fd = openat(proc_dir, "task", O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (task_fd < 0)
                return errno == ENOENT || errno == ESRCH ? 0 : -errno;
        d = fdopendir(task_fd);
        if (!d)
                return -errno;
        task_fd = -EBADF;       /* the DIR owns it now */
        while ((errno = 0, de = readdir(d))) {
                ThreadStatus ts = {};
                pid_t tid, *grown;

                if (!parse_tid(de->d_name, &tid))
                        continue;
                r = read_thread_status(dirfd(d), de->d_name, &ts);
                if (r == -ENOENT || r == -ESRCH) {
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                if (!ts.live)
                        continue;
                if (peer->uid != 0 && (ts.real_uid != peer->uid || ts.effective_uid != peer->uid ||
                                       ts.saved_uid != peer->uid || ts.fs_uid != peer->uid)) {
                        r = refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                                   "process %d is not yours: its thread %d runs as uid %u (effective %u, "
                                   "saved %u, filesystem %u), you are uid %u; pmugate counts your own "
                                   "processes only (another user's, also for admins, only when asked as root)",
                                   (int) ret->pid, (int) tid, (unsigned) ts.real_uid,
                                   (unsigned) ts.effective_uid, (unsigned) ts.saved_uid,
                                   (unsigned) ts.fs_uid, (unsigned) peer->uid);
                        break;
                }
                if (peer->uid != 0 && ts.owner != peer->uid) {
                        r = refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                                   "process %d is not dumpable (a setuid program, or one that keeps "
                                   "others out): as with perf and ptrace, only root may count it",
                                   (int) ret->pid);
                        break;
                }
                if (ret->n_tids >= PERF_PROCESS_THREADS_MAX) {
                        r = refuse(ret_refusal, PROTO_E_LIMIT, -1,
                                   "process %d has more than %u threads, the most pmugate counts in one "
                                   "process: count it with scope cpu or job instead",
                                   (int) ret->pid, PERF_PROCESS_THREADS_MAX);
                        break;
                }
                grown = realloc(ret->tids, (ret->n_tids + 1) * sizeof(pid_t));
                if (!grown) {
                        r = -ENOMEM;
                        break;
                }
                ret->tids = grown;
                ret->tids[ret->n_tids++] = tid;
        }
        if (r == 0 && errno != 0)
                r = -errno;
        (void) closedir(d);
        return r;
}

/* Whether path lies at or beneath dir, both cgroup paths: a prefix ending at a component. */
static bool cgroup_path_within(const char *path, const char *dir) {
        size_t n = strlen(dir);

        while (n > 0 && dir[n - 1] == '/')
                n--;
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int check_in_job(int proc_dir, pid_t pid, const char *job_cgroup, Refusal *ret_refusal) {
        char v2[PMUGATE_CGROUP_PATH_MAX], v1[PMUGATE_CGROUP_PATH_MAX];
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat(proc_dir, "cgroup", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT || errno == ESRCH ?
                        refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d has exited", (int) pid) : -errno;
        r = scope_read_proc_cgroup(fd, v2, v1, sizeof(v2));
        if (r == -ESRCH)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d has exited", (int) pid);
        if (r < 0 || !v2[0] || !cgroup_path_within(v2, job_cgroup))
                return refuse(ret_refusal, PROTO_E_OUT_OF_SCOPE, -1,
                              "process %d is not inside your job's cgroup %s: count the processes of your job",
                              (int) pid, job_cgroup);
        return 0;
}

int perf_target_process(const char *proc_root, Peer *peer, pid_t pid, const char *job_cgroup,
                        PerfProcess *ret, Refusal *ret_refusal) {
        _cleanup_close_ int proc_dir = -EBADF;
        PerfProcess p = { .pidfd = -EBADF, .pid = pid };
        char path[PATH_MAX];
        int r;

        if (pid < 0)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "pid %d is not a process id", (int) pid);
        if (pid == 0) {
                if (peer->pidfd < 0)
                        return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                                      "the kernel gave no pidfd for this connection (SO_PEERPIDFD needs "
                                      "Linux 6.5 or later), so the calling process cannot be pinned: "
                                      "name it by its pid");
                p.pid = peer->pid;
                p.pidfd = fcntl(peer->pidfd, F_DUPFD_CLOEXEC, 3);
                if (p.pidfd < 0)
                        return -errno;
        } else {
                p.pidfd = pidfd_open(pid, 0);
                if (p.pidfd < 0) {
                        if (errno == ESRCH)
                                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                                              "process %d has exited (or never was)", (int) pid);
                        if (errno == EINVAL)
                                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                                              "%d is a thread, not a process: name its process (Tgid in "
                                              "/proc/%d/status)", (int) pid, (int) pid);
                        return -errno;
                }
        }

        /* /proc/PID opened, then the pidfd found alive: the directory is that process's, and what
         * is read through it stays that process's even if the pid is reused later. */
        if ((size_t) snprintf(path, sizeof(path), "%s/%d", proc_root, (int) p.pid) >= sizeof(path)) {
                perf_process_done(&p);
                return -ENAMETOOLONG;
        }
        proc_dir = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (proc_dir < 0 || !scope_pidfd_alive(p.pidfd)) {
                r = proc_dir < 0 && errno != ENOENT ? -errno : 0;
                perf_process_done(&p);
                return r < 0 ? r : refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d has exited", (int) pid);
        }

        r = collect_threads(proc_dir, peer, &p, ret_refusal);
        if (r == 0 && p.n_tids == 0)
                r = refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d has exited", (int) p.pid);
        if (r == 0 && job_cgroup)
                r = check_in_job(proc_dir, p.pid, job_cgroup, ret_refusal);
        if (r == 0 && !scope_pidfd_alive(p.pidfd))
                r = refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d has exited", (int) p.pid);
        if (r != 0) {
                perf_process_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

/* /proc/PID of the caller's process, believed only while the connection's pidfd lives. */
static int open_caller_proc(const char *proc_root, const Peer *peer, int pidfd, int *ret_fd) {
        char path[PATH_MAX];
        int fd;

        if ((size_t) snprintf(path, sizeof(path), "%s/%d", proc_root, (int) peer->pid) >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
        if (!scope_pidfd_alive(pidfd)) {
                (void) close(fd);
                return -ESRCH;
        }
        *ret_fd = fd;
        return 0;
}

/* Whether tid is a live thread listed under the process at proc_dir. */
static int thread_listed(int proc_dir, pid_t tid) {
        char name[32];
        ThreadStatus ts = {};
        _cleanup_close_ int task_fd = -EBADF;
        int r;

        task_fd = openat(proc_dir, "task", O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (task_fd < 0)
                return errno == ENOENT || errno == ESRCH ? 0 : -errno;
        (void) snprintf(name, sizeof(name), "%d", (int) tid);
        r = read_thread_status(task_fd, name, &ts);
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        return ts.live;
}

int perf_target_thread(const char *proc_root, Peer *peer, pid_t tid, const char *job_cgroup, PerfProcess *ret,
                       Refusal *ret_refusal) {
        _cleanup_close_ int proc_dir = -EBADF;
        PerfProcess p = { .pidfd = -EBADF, .pid = peer->pid };
        bool found = false;
        int r;

        if (tid < 0)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "pid %d is not a thread id", (int) tid);
        if (tid == 0)
                tid = peer->pid;
        if (peer->pidfd < 0)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                              "the kernel gave no pidfd for this connection (SO_PEERPIDFD needs Linux 6.5 or "
                              "later), so the calling process cannot be pinned to count one of its threads");
        p.pidfd = fcntl(peer->pidfd, F_DUPFD_CLOEXEC, 3);
        if (p.pidfd < 0)
                return -errno;
        r = open_caller_proc(proc_root, peer, p.pidfd, &proc_dir);
        if (r == -ESRCH)
                r = refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d has exited", (int) peer->pid);
        /* every thread of the process, with the uid and dumpable checks of the process scope */
        if (r == 0)
                r = collect_threads(proc_dir, peer, &p, ret_refusal);
        for (size_t i = 0; r == 0 && i < p.n_tids; i++)
                found = found || p.tids[i] == tid;
        if (r == 0 && !found)
                r = refuse(ret_refusal, PROTO_E_NOT_AUTHORIZED, -1,
                           "%d is not a thread of your process %d: 'thread' counts a thread of the caller's own "
                           "process", (int) tid, (int) peer->pid);
        if (r == 0 && job_cgroup)
                r = check_in_job(proc_dir, p.pid, job_cgroup, ret_refusal);
        if (r == 0 && !scope_pidfd_alive(p.pidfd))
                r = refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "process %d has exited", (int) p.pid);
        if (r != 0) {
                perf_process_done(&p);
                return r;
        }
        p.tids[0] = tid;
        p.n_tids = 1;
        *ret = p;
        return 0;
}

bool perf_target_thread_alive(const char *proc_root, const PerfProcess *p) {
        Peer peer = { .pid = p->pid };
        _cleanup_close_ int proc_dir = -EBADF;

        if (p->pidfd < 0 || p->n_tids == 0 || open_caller_proc(proc_root, &peer, p->pidfd, &proc_dir) < 0)
                return false;
        /* each listed after the open and the process still the one pinned: the events are its threads' */
        for (size_t i = 0; i < p->n_tids; i++)
                if (thread_listed(proc_dir, p->tids[i]) <= 0)
                        return false;
        return scope_pidfd_alive(p->pidfd);
}

int perf_target_process_threads(const char *proc_root, Peer *peer, pid_t pid, const pid_t *tids, size_t n_tids,
                                const char *job_cgroup, PerfProcess *ret, Refusal *ret_refusal) {
        PerfProcess p = { .pidfd = -EBADF };
        pid_t *named;
        int r;

        if (n_tids == 0 || n_tids > TIMING_TIDS_PER_OPEN)
                return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "%zu threads: name 1 to %u", n_tids,
                              TIMING_TIDS_PER_OPEN);
        for (size_t i = 0; i < n_tids; i++)
                if (tids[i] <= 0)
                        return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1, "%d is not a thread id", (int) tids[i]);
        named = calloc(n_tids, sizeof(pid_t));
        if (!named)
                return -ENOMEM;
        r = perf_target_process(proc_root, peer, pid, job_cgroup, &p, ret_refusal);
        if (r != 0) {
                free(named);
                return r;
        }
        /* the listing was read through the directory of the process the pidfd pins */
        for (size_t i = 0; i < n_tids; i++) {
                bool found = false;

                for (size_t j = 0; j < p.n_tids; j++)
                        found = found || p.tids[j] == tids[i];
                if (!found) {
                        free(named);
                        perf_process_done(&p);
                        return refuse(ret_refusal, PROTO_E_BAD_FIELD, -1,
                                      "%d is not a thread of process %d (not under /proc/%d/task): it ended, or "
                                      "belongs to another process", (int) tids[i], (int) pid, (int) pid);
                }
                named[i] = tids[i];
        }
        free(p.tids);
        p.tids = named;
        p.n_tids = n_tids;
        *ret = p;
        return 0;
}

int perf_target_process_thread(const char *proc_root, Peer *peer, pid_t pid, pid_t tid, const char *job_cgroup,
                               PerfProcess *ret, Refusal *ret_refusal) {
        return perf_target_process_threads(proc_root, peer, pid, &tid, 1, job_cgroup, ret, ret_refusal);
}

bool perf_target_process_alive(const PerfProcess *p) {
        return p->pidfd >= 0 && scope_pidfd_alive(p->pidfd);
}

void perf_process_done(PerfProcess *p) {
        if (p->pidfd >= 0)
                (void) close(p->pidfd);
        free(p->tids);
        *p = (PerfProcess) { .pidfd = -EBADF };
}

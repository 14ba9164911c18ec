/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Output file names
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/output-file.h"
#include "macro.h"

#define HOST_MAX 256U
/* An existing file that disappears between the two opens is looked at again this often: a
 * name someone keeps creating and removing is refused, not raced forever. */
#define OUTPUT_OPEN_TRIES 8U

/* The first variable set and not empty of names, or fallback. */
static const char *first_env(const char *const *names, size_t n, const char *fallback) {
        for (size_t i = 0; i < n; i++) {
                const char *v = getenv(names[i]);

                if (v && v[0])
                        return v;
        }
        return fallback;
}

static const char *job_id(void) {
        static const char *const names[] = { "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID" };

        return first_env(names, ELEMENTSOF(names), "nojob");
}

static const char *rank(void) {
        static const char *const names[] = {
                "SLURM_PROCID", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
        };

        return first_env(names, ELEMENTSOF(names), "0");
}

/* Text from the environment becomes part of a file name: keep it to one path component. */
static int append(char *buf, size_t size, size_t *at, const char *text, bool sanitize) {
        for (size_t i = 0; text[i]; i++) {
                char ch = text[i];

                if (*at + 1 >= size)
                        return -ENAMETOOLONG;
                buf[(*at)++] = sanitize && (ch == '/' || ch == '\0') ? '_' : ch;
        }
        buf[*at] = '\0';
        return 0;
}

int output_path_expand(const char *pattern, char *buf, size_t size, char *reterr_reason,
                       size_t reason_size) {
        char host[HOST_MAX], pid[32];
        size_t at = 0;
        int r = 0;

        if (size == 0)
                return -ENAMETOOLONG;
        buf[0] = '\0';
        for (const char *p = pattern; *p && r >= 0; p++) {
                char one[2] = { *p, '\0' };

                if (*p != '%') {
                        r = append(buf, size, &at, one, false);
                        continue;
                }
                switch (*++p) {
                case 'h':
                        if (gethostname(host, sizeof(host)) < 0)
                                (void) snprintf(host, sizeof(host), "localhost");
                        host[sizeof(host) - 1] = '\0';
                        host[strcspn(host, ".")] = '\0';
                        r = append(buf, size, &at, host, true);
                        break;
                case 'p':
                        (void) snprintf(pid, sizeof(pid), "%d", (int) getpid());
                        r = append(buf, size, &at, pid, false);
                        break;
                case 'j':
                        r = append(buf, size, &at, job_id(), true);
                        break;
                case 'r':
                        r = append(buf, size, &at, rank(), true);
                        break;
                case '%':
                        r = append(buf, size, &at, "%", false);
                        break;
                default:
                        if (reterr_reason && reason_size > 0)
                                (void) snprintf(reterr_reason, reason_size,
                                                "-o %s: '%%%.1s' is not %%h (host), %%p (pid), %%j (job), "
                                                "%%r (rank) or %%%%", pattern, *p ? p : "");
                        return -EINVAL;
                }
        }
        if (r < 0 && reterr_reason && reason_size > 0)
                (void) snprintf(reterr_reason, reason_size, "-o %s: the expanded name is too long", pattern);
        return r;
}

bool output_format_from_path(const char *path, OutputFormat *ret) {
        static const struct {
                const char *suffix;
                OutputFormat format;
        } suffixes[] = {
                { ".csv", OUTPUT_CSV }, { ".json", OUTPUT_JSON_DOCUMENT }, { ".jsonl", OUTPUT_JSONL },
                { ".txt", OUTPUT_TABLE },
        };
        const char *dot = strrchr(path, '.');

        if (!dot || strchr(dot, '/'))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                if (strcasecmp(dot, suffixes[i].suffix) == 0) {
                        *ret = suffixes[i].format;
                        return true;
                }
        return false;
}

/* An existing file at path, opened without following a symbolic link and kept only if writing
 * it gives nothing to another user. */
static int open_existing(const char *path, int *ret_fd, char *reterr_reason, size_t reason_size) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int flags;

        /* O_NONBLOCK: a FIFO someone put there must not block the open; it is refused below */
        fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int r = negative_errno();

                if (r == -ELOOP)
                        (void) snprintf(reterr_reason, reason_size,
                                        "-o %s: is a symbolic link; not following it (name the file itself)",
                                        path);
                else if (r != -ENOENT)
                        (void) snprintf(reterr_reason, reason_size, "cannot write %s: %s", path,
                                        strerror(-r));
                return r;
        }
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISREG(st.st_mode)) {
                if (st.st_uid != geteuid()) {
                        (void) snprintf(reterr_reason, reason_size,
                                        "-o %s: the file exists and belongs to uid %u, not to you; not "
                                        "writing into it (remove it or choose another name)",
                                        path, (unsigned) st.st_uid);
                        return -EPERM;
                }
                if (ftruncate(fd, 0) < 0) {
                        int r = negative_errno();

                        (void) snprintf(reterr_reason, reason_size, "cannot truncate %s: %s", path,
                                        strerror(-r));
                        return r;
                }
        } else if (!S_ISCHR(st.st_mode)) {
                (void) snprintf(reterr_reason, reason_size,
                                "-o %s: exists and is not a regular file (a directory, FIFO or socket)",
                                path);
                return -EINVAL;
        }
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int output_file_open(const char *path, FILE **ret, char *reterr_reason, size_t reason_size) {
        _cleanup_close_ int fd = -EBADF;
        FILE *f;
        int r = -ENOENT;

        for (unsigned i = 0; i < OUTPUT_OPEN_TRIES && r == -ENOENT; i++) {
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
                if (fd >= 0) {
                        r = 0;
                        break;
                }
                r = negative_errno();
                if (r != -EEXIST) {
                        (void) snprintf(reterr_reason, reason_size, "cannot write %s: %s", path,
                                        strerror(-r));
                        return r;
                }
                /* it exists (or is a symbolic link, dangling or not): look at what it is */
                r = open_existing(path, &fd, reterr_reason, reason_size);
        }
        if (r == -ENOENT)
                (void) snprintf(reterr_reason, reason_size,
                                "cannot write %s: it keeps appearing and disappearing", path);
        if (r < 0)
                return r;
        f = fdopen(fd, "w");
        if (!f)
                return negative_errno();
        TAKE_FD(fd);
        *ret = f;
        return 0;
}

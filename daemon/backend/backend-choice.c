/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend choice: msr, perf or none, and the reason, in the order PCM checks: the kernel's
 * lockdown, the msr driver, then a write of a counter's own value.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend-choice.h"
#include "kernel-file.h"
#include "log.h"
#include "macro.h"

static const char *const counters_names[_BACKEND_COUNTERS_MAX] = {
        [BACKEND_COUNTERS_MSR] = "msr",
        [BACKEND_COUNTERS_PERF] = "perf",
        [BACKEND_COUNTERS_NONE] = "none",
};

static const char *const wanted_names[_BACKEND_WANTED_MAX] = {
        [BACKEND_WANTED_AUTO] = "auto",
        [BACKEND_WANTED_MSR] = "msr",
        [BACKEND_WANTED_PERF] = "perf",
};

const char *backend_counters_to_string(BackendCounters c) {
        return (unsigned) c < _BACKEND_COUNTERS_MAX ? counters_names[c] : "invalid";
}

const char *backend_wanted_to_string(BackendWanted w) {
        return (unsigned) w < _BACKEND_WANTED_MAX ? wanted_names[w] : "invalid";
}

int backend_wanted_from_string(const char *s) {
        for (unsigned w = 0; w < _BACKEND_WANTED_MAX; w++)
                if (strcmp(s, wanted_names[w]) == 0)
                        return (int) w;
        return -EINVAL;
}

/* The kernel writes "none [integrity] confidentiality\n": exactly one word in brackets, of
 * lower-case letters. */
static int lockdown_parse(const char *text, char ret[static PMUGATE_LOCKDOWN_WORD_MAX]) {
        const char *word = strchr(text, '[');
        size_t len;

        if (!word)
                return -EBADMSG;
        word++;
        len = strcspn(word, "[]");
        if (word[len] != ']' || strpbrk(word + len + 1, "[]"))
                return -EBADMSG;
        if (len == 0 || len >= PMUGATE_LOCKDOWN_WORD_MAX ||
            strspn(word, "abcdefghijklmnopqrstuvwxyz") != len)
                return -EBADMSG;
        memcpy(ret, word, len);
        ret[len] = '\0';
        return 0;
}

int backend_lockdown_read(const char *path, char ret[static PMUGATE_LOCKDOWN_WORD_MAX]) {
        char text[PMUGATE_LOCKDOWN_FILE_MAX];
        ssize_t n = kernel_file_read(AT_FDCWD, path, text, sizeof(text));

        if (n == -EBADFD || n == -EINVAL)
                return -EBADMSG;
        if (n < 0)
                return (int) n;
        return lockdown_parse(text, ret);
}

static const char *errno_name(int error) {
        switch (error) {
        case EPERM:
                return "EPERM";
        case EIO:
                return "EIO";
        case ENODEV:
                return "ENODEV";
        case ENXIO:
                return "ENXIO";
        case EACCES:
                return "EACCES";
        default:
                return strerror(error);
        }
}

/* Lockdown from the simulator, or from the kernel's file. Fills ret_reason and returns 1 when
 * lockdown is on; 0 when it is off or unknown (a file that is not the kernel's is logged and
 * left to the write probe, which tells for certain). */
static int lockdown_check(const char *root, const Backend *b, char *ret_reason, size_t size) {
        char path[4096], word[PMUGATE_LOCKDOWN_WORD_MAX];
        int r;

        if (b && b->simulated) {
                if (!b->lockdown)
                        return 0;
                (void) snprintf(ret_reason, size, "kernel lockdown: %s", b->lockdown);
                return 1;
        }
        (void) snprintf(path, sizeof(path), "%s/sys/kernel/security/lockdown",
                        strcmp(root, "/") == 0 ? "" : root);
        r = backend_lockdown_read(path, word);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                log_warning("Cannot tell the kernel's lockdown from %s (%s): a write probe decides", path,
                            r == -EBADMSG ? "not one bracketed word" :
                            r == -EFBIG ? "longer than the kernel writes it" : strerror(-r));
                return 0;
        }
        if (strcmp(word, "none") == 0)
                return 0;
        (void) snprintf(ret_reason, size, "kernel lockdown: %s", word);
        return 1;
}

/* Writes the probe register with the value it holds, as PCM does: the counter is not running
 * yet at start-up, and writing its own value changes nothing where the write is allowed.
 * Returns 0 when MSR writes work, 1 with ret_reason when they do not. */
static int write_probe(Backend *b, const BackendProbe *probe, bool *ret_reads, char *ret_reason,
                       size_t size) {
        uint64_t value;
        int r;

        if (!b) {
                *ret_reads = false;
                (void) snprintf(ret_reason, size, "no MSR backend");
                return 1;
        }
        if (b->msr_absent) {
                *ret_reads = false;
                (void) snprintf(ret_reason, size, "no msr driver (/dev/cpu/%u/msr missing)", probe->cpu);
                return 1;
        }
        r = backend_msr_read(b, probe->cpu, probe->reg, &value);
        if (r < 0) {
                *ret_reads = false;
                (void) snprintf(ret_reason, size, "a read of %s on CPU %u failed (%s)", probe->reg_name,
                                probe->cpu, errno_name(-r));
                return 1;
        }
        *ret_reads = true;
        r = backend_msr_write(b, probe->cpu, probe->reg, value);
        if (r == 0)
                return 0;
        if (r == -EPERM || r == -EIO)
                (void) snprintf(ret_reason, size,
                                "a write of %s with its own value was refused (%s): "
                                "msr.allow_writes=off or lockdown", probe->reg_name, errno_name(-r));
        else
                (void) snprintf(ret_reason, size, "a write of %s with its own value failed (%s)",
                                probe->reg_name, errno_name(-r));
        return 1;
}

static const char *wanted_by_text(const BackendProbe *probe, char *buf, size_t size, const char *value) {
        if (strcmp(probe->wanted_by, "--counters") == 0)
                (void) snprintf(buf, size, "--counters=%s", value);
        else
                (void) snprintf(buf, size, "chosen in %s", probe->wanted_by);
        return buf;
}

int backend_choose(const char *root, Backend *msr_backend, const BackendProbe *probe, BackendWanted wanted,
                   BackendChoice *ret) {
        char why[PMUGATE_REASON_MAX] = "", by[64];
        bool reads = msr_backend && !msr_backend->msr_absent;
        int refused;

        *ret = (BackendChoice) { .wanted = wanted, .msr_reads = reads };
        if (probe->no_msrs) {
                ret->msr_reads = false;
                (void) snprintf(ret->reason, sizeof(ret->reason), "%s", probe->no_msrs);
                if (wanted == BACKEND_WANTED_MSR)
                        return -ENODEV;
                if ((unsigned) wanted >= _BACKEND_WANTED_MAX)
                        return -EINVAL;
                ret->counters = probe->perf_unusable ? BACKEND_COUNTERS_NONE : BACKEND_COUNTERS_PERF;
                if (probe->perf_unusable)
                        (void) snprintf(ret->reason, sizeof(ret->reason), "%s; and perf: %s", probe->no_msrs,
                                        probe->perf_unusable);
                return 0;
        }
        switch (wanted) {
        case BACKEND_WANTED_PERF:
                ret->counters = BACKEND_COUNTERS_PERF;
                (void) snprintf(ret->reason, sizeof(ret->reason), "%s",
                                wanted_by_text(probe, by, sizeof(by), "perf"));
                return 0;

        case BACKEND_WANTED_MSR:
                if (!msr_backend || msr_backend->msr_absent) {
                        (void) snprintf(ret->reason, sizeof(ret->reason),
                                        "no msr driver (/dev/cpu/%u/msr missing)", probe->cpu);
                        return -ENODEV;
                }
                ret->counters = BACKEND_COUNTERS_MSR;
                refused = lockdown_check(root, msr_backend, why, sizeof(why));
                if (!refused)
                        refused = write_probe(msr_backend, probe, &ret->msr_reads, why, sizeof(why));
                if (refused)
                        (void) snprintf(ret->reason, sizeof(ret->reason), "%s, but %s",
                                        wanted_by_text(probe, by, sizeof(by), "msr"), why);
                else
                        (void) snprintf(ret->reason, sizeof(ret->reason), "%s",
                                        wanted_by_text(probe, by, sizeof(by), "msr"));
                return refused ? 1 : 0;

        case BACKEND_WANTED_AUTO:
                refused = lockdown_check(root, msr_backend, why, sizeof(why));
                if (!refused)
                        refused = write_probe(msr_backend, probe, &ret->msr_reads, why, sizeof(why));
                if (!refused) {
                        ret->counters = BACKEND_COUNTERS_MSR;
                        (void) snprintf(ret->reason, sizeof(ret->reason),
                                        "a write of %s with its own value works", probe->reg_name);
                        return 0;
                }
                if (probe->perf_unusable) {
                        ret->counters = BACKEND_COUNTERS_NONE;
                        (void) snprintf(ret->reason, sizeof(ret->reason), "%s; and perf: %s", why,
                                        probe->perf_unusable);
                        return 0;
                }
                ret->counters = BACKEND_COUNTERS_PERF;
                (void) snprintf(ret->reason, sizeof(ret->reason), "%s", why);
                return 0;

        default:
                return -EINVAL;
        }
}

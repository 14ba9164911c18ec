/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dropping privileges: after every device fd is open, nothing the daemon does needs a
 * capability (the msr driver and PCI config files judge the opener, not the reader).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "privileges.h"
#include "state-dir.h"

static void cap_freep(cap_t *c) {
        if (*c)
                (void) cap_free(*c);
}

static bool have_effective(cap_value_t cap) {
        _cleanup_(cap_freep) cap_t now = cap_get_proc();
        cap_flag_value_t v = CAP_CLEAR;

        return now && cap_get_flag(now, cap, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
}

static int drop_bounding_set(void) {
        /* Loop to the kernel's last capability, which may be newer than libcap's headers. */
        for (cap_value_t cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
                if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 0)
                        continue;
                if (cap_drop_bound(cap) < 0)
                        return log_error_errno(errno, "Cannot drop capability %d from the bounding set", (int) cap);
        }
        return 0;
}

static int verify_no_capabilities(bool check_bounding) {
        _cleanup_(cap_freep) cap_t now = cap_get_proc(), empty = cap_init();

        if (!now || !empty)
                return -ENOMEM;
        if (cap_compare(now, empty) != 0)
                return log_error_errno(EPERM, "Capabilities are still held after dropping them");
        for (cap_value_t cap = 0; check_bounding && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
                if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) > 0)
                        return log_error_errno(EPERM, "Capability %d is still in the bounding set", (int) cap);
        return 0;
}

int privileges_drop(const char *user) {
        _cleanup_(cap_freep) cap_t empty = NULL;
        struct passwd *pw = NULL;
        bool bounding;
        int r;

        if (geteuid() == 0) {
                errno = 0;
                pw = getpwnam(user);
                if (!pw)
                        return log_error_errno(errno ?: ENOENT,
                                               "User '%s' to run as does not exist (create it with systemd-sysusers, or pass --user)",
                                               user);
                if (pw->pw_uid == 0)
                        return log_error_errno(EINVAL, "Refusing to run as '%s': it is root", user);
        }

        if (cap_reset_ambient() < 0 && errno != EINVAL)
                return log_error_errno(errno, "Cannot clear the ambient capability set");
        /* Only a process with CAP_SETPCAP can shrink the bounding set. Root must (and fails
         * without it); a daemon started without privilege has nothing to drop there, and
         * no_new_privs keeps it from gaining any. */
        bounding = pw || have_effective(CAP_SETPCAP);
        if (bounding) {
                r = drop_bounding_set();
                if (r < 0)
                        return r;
        }

        if (pw) {
                if (setgroups(0, NULL) < 0)
                        return log_error_errno(errno, "setgroups() failed");
                if (setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0)
                        return log_error_errno(errno, "setresgid(%u) failed", (unsigned) pw->pw_gid);
                if (setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
                        return log_error_errno(errno, "setresuid(%u) failed", (unsigned) pw->pw_uid);
        }

        empty = cap_init();
        if (!empty || cap_set_proc(empty) < 0)
                return log_error_errno(errno ?: ENOMEM, "Cannot clear the capability sets");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(errno, "Cannot set no_new_privs");

        r = verify_no_capabilities(bounding);
        if (r < 0)
                return r;
        if (pw && (setuid(0) == 0 || geteuid() == 0))
                return log_error_errno(EPERM, "Could regain root after dropping privileges");
        return 0;
}

int privileges_user_ids(const char *user, uid_t *ret_uid, gid_t *ret_gid) {
        struct passwd *pw;

        if (geteuid() != 0) {
                *ret_uid = geteuid();
                *ret_gid = getegid();
                return 0;
        }
        errno = 0;
        pw = getpwnam(user);
        if (!pw)
                return log_error_errno(errno ?: ENOENT, "User '%s' to run as does not exist (create it with "
                                       "systemd-sysusers, or pass --user)", user);
        if (pw->pw_uid == 0)
                return log_error_errno(EINVAL, "Refusing to run as '%s': it is root", user);
        *ret_uid = pw->pw_uid;
        *ret_gid = pw->pw_gid;
        return 0;
}

/* Checks what an O_PATH fd of the runtime or state directory refers to. Only root and the
 * daemon's user may own either: anyone who can write the runtime directory can swap state/,
 * and anyone who can write state/ can plant journals and grants. */
static int check_dir(int fd, const char *path, bool state, uid_t daemon_uid, struct stat *ret) {
        const char *what = state ? "State directory" : "Runtime directory";
        struct stat st;

        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Cannot inspect %s", path);
        if (S_ISLNK(st.st_mode))
                return log_error_errno(ELOOP, "%s %s is a symbolic link: remove it%s", what, path,
                                       state ? "; pmugated creates the directory itself"
                                             : " and give the real path");
        if (!S_ISDIR(st.st_mode))
                return log_error_errno(ENOTDIR, "%s %s is not a directory: remove it", what, path);
        if (st.st_uid != 0 && st.st_uid != daemon_uid)
                return log_error_errno(EPERM, "%s %s belongs to uid %u; it must belong to root or to the "
                                       "daemon's user (uid %u): remove it%s, or chown it", what, path,
                                       (unsigned) st.st_uid, (unsigned) daemon_uid,
                                       state ? " (pmugated creates it)" : "");
        if (state && (st.st_mode & 07777) != 0700)
                return log_error_errno(EPERM, "%s %s has mode %04o; it must be 0700: chmod 0700 it, or "
                                       "remove it (pmugated creates it)", what, path,
                                       (unsigned) (st.st_mode & 07777));
        if (!state && (st.st_mode & (S_IWGRP | S_IWOTH)))
                return log_error_errno(EPERM, "%s %s has mode %04o: whoever may write it can replace state/ "
                                       "in it; chmod go-w it", what, path, (unsigned) (st.st_mode & 07777));
        *ret = st;
        return 0;
}

typedef struct Chown {
        uid_t from;
        uid_t uid;
        gid_t gid;
        char failed[256];       /* the file that could not be given, for the one log line */
} Chown;

/* Gives one of the daemon's files from one owner to another, through an O_PATH fd: nothing is
 * opened (a FIFO cannot block, a device is not touched), and root without CAP_DAC_OVERRIDE
 * needs no read permission on the daemon user's 0600 files. A symlink, anything but a
 * regular file with one link, or a file of another owner keeps its owner: the readers refuse
 * it, and a hard link to a file elsewhere is never handed to anyone. */
static int chown_file(int dir_fd, const char *name, void *userdata) {
        Chown *c = userdata;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (!state_name_is_ours(name))
                return 0;
        fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = -errno;

                (void) snprintf(c->failed, sizeof(c->failed), "%s", name);
                return r;
        }
        if (st.st_uid == c->uid)
                return 0;
        if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != c->from) {
                log_debug("State file %s is not a regular file of uid %u with one link; its owner stays",
                          name, (unsigned) c->from);
                return 0;
        }
        if (fchownat(fd, "", c->uid, c->gid, AT_EMPTY_PATH) < 0) {
                int r = -errno;

                (void) snprintf(c->failed, sizeof(c->failed), "%s", name);
                return r;
        }
        return 0;
}

/* Switches the file system identity (setfsuid(2), setfsgid(2)) and checks that it took: the
 * calls report no error, only the previous value. */
static int set_fs_identity(uid_t uid, gid_t gid) {
        (void) setfsgid(gid);
        (void) setfsuid(uid);
        if ((uid_t) setfsuid((uid_t) -1) != uid || (gid_t) setfsgid((gid_t) -1) != gid)
                return log_error_errno(EPERM, "Cannot act on files as uid %u gid %u", (unsigned) uid,
                                       (unsigned) gid);
        return 0;
}

int privileges_prepare_state_dir(const char *runtime_dir, uid_t daemon_uid, gid_t daemon_gid, int *ret_fd) {
        _cleanup_close_ int runtime_fd = -EBADF, path_fd = -EBADF, fd = -EBADF;
        char state_path[4096];
        struct stat runtime_st, st, opened;
        mode_t umask_was;
        int r;

        (void) snprintf(state_path, sizeof(state_path), "%s/state", runtime_dir);
        if (mkdir(runtime_dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create %s", runtime_dir);
        runtime_fd = open(runtime_dir, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (runtime_fd < 0)
                return log_error_errno(errno, "Cannot open runtime directory %s", runtime_dir);
        r = check_dir(runtime_fd, runtime_dir, false, daemon_uid, &runtime_st);
        if (r < 0)
                return r;

        umask_was = umask(0077);
        r = mkdirat(runtime_fd, "state", 0700) < 0 && errno != EEXIST ? -errno : 0;
        (void) umask(umask_was);
        if (r < 0)
                return log_error_errno(r, "Cannot create state directory %s", state_path);
        path_fd = openat(runtime_fd, "state", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (path_fd < 0)
                return log_error_errno(errno, "Cannot open state directory %s", state_path);
        r = check_dir(path_fd, state_path, true, daemon_uid, &st);
        if (r < 0)
                return r;

        if (geteuid() == 0 && st.st_uid != daemon_uid) {
                /* state/ belongs to the daemon's user for good. Root gives it a directory it just
                 * made (or one an older version left as root's) and root's files in it, through
                 * fds of what was checked; this needs CAP_CHOWN, which the shipped unit does not
                 * grant: there tmpfiles.d creates state/ for the user. */
                Chown c = { .from = 0, .uid = daemon_uid, .gid = daemon_gid };

                fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                r = fd < 0 ? -errno : state_dir_foreach(fd, chown_file, &c);
                if (r < 0)
                        return log_error_errno(r, "Cannot give %s in %s to uid %u",
                                               c.failed[0] ? c.failed : "the files", state_path,
                                               (unsigned) daemon_uid);
                (void) close(TAKE_FD(fd));
                if (fchownat(path_fd, "", daemon_uid, daemon_gid, AT_EMPTY_PATH) < 0)
                        return log_error_errno(errno, "Cannot give state directory %s to uid %u%s",
                                               state_path, (unsigned) daemon_uid,
                                               errno == EPERM ? ": create it for that user "
                                               "(systemd-tmpfiles --create, pmugate.conf in tmpfiles.d)" : "");
        }
        if (geteuid() == 0) {
                /* Root recovers the last run's journals and grants before anything else, as the
                 * daemon's user on the file system: it needs no CAP_DAC_OVERRIDE to read them,
                 * and whatever it creates there is the user's. privileges_hand_over_state_dir()
                 * gives root its own identity back. */
                r = set_fs_identity(daemon_uid, daemon_gid);
                if (r < 0)
                        return r;
        }
        /* Through the checked inode itself: the daemon's user may not search the runtime
         * directory (0700 root's is allowed). */
        fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open state directory %s", state_path);
        if (fstat(fd, &opened) < 0)
                return log_error_errno(errno, "Cannot inspect %s", state_path);
        if (opened.st_dev != st.st_dev || opened.st_ino != st.st_ino)
                return log_error_errno(ESTALE, "State directory %s was replaced during start-up",
                                       state_path);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int privileges_hand_over_state_dir(void) {
        if (geteuid() != 0)
                return 0;
        return set_fs_identity(0, 0);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dropping privileges: after every device fd is open, nothing the daemon does needs a
 * capability (the msr driver and PCI config files judge the opener, not the reader).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "privileges.h"

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

/* Gives dir and the regular files directly in it to uid:gid, without following symlinks. Root
 * without CAP_DAC_OVERRIDE cannot list a 0700 directory another user owns: taking it back,
 * the directory changes owner first (by path); handing it over, it changes owner last. */
static int chown_dir_and_files(const char *dir, uid_t uid, gid_t gid) {
        _cleanup_close_ int fd = -EBADF;
        bool dir_first = uid == geteuid();
        DIR *d;
        struct dirent *de;

        if (dir_first && fchownat(AT_FDCWD, dir, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
                return log_error_errno(errno, "Cannot change the owner of %s", dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open state directory %s", dir);
        d = fdopendir(fcntl(fd, F_DUPFD_CLOEXEC, 3));
        if (!d)
                return log_error_errno(errno, "Cannot list %s", dir);
        while ((de = readdir(d)))
                if (de->d_type == DT_REG && fchownat(dirfd(d), de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
                        int e = errno;
                        closedir(d);
                        return log_error_errno(e, "Cannot change the owner of %s/%s", dir, de->d_name);
                }
        closedir(d);
        if (!dir_first && fchown(fd, uid, gid) < 0)
                return log_error_errno(errno, "Cannot change the owner of %s", dir);
        return 0;
}

int privileges_prepare_state_dir(const char *dir) {
        struct stat st;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create state directory %s", dir);
        if (lstat(dir, &st) < 0)
                return log_error_errno(errno, "Cannot stat %s", dir);
        if (!S_ISDIR(st.st_mode))
                return log_error_errno(ENOTDIR, "State directory %s is not a directory", dir);
        /* Root recovers the last run's journals and grants in it before anything else; the
         * daemon's user owned them. Taking them back needs CAP_CHOWN, not CAP_DAC_OVERRIDE. */
        if (geteuid() == 0 && chown_dir_and_files(dir, 0, 0) < 0)
                return -EPERM;
        if (chmod(dir, 0700) < 0)
                return log_error_errno(errno, "Cannot set the mode of %s", dir);
        return 0;
}

int privileges_hand_over_state_dir(const char *dir, const char *user) {
        struct passwd *pw;

        if (geteuid() != 0)
                return 0;
        pw = getpwnam(user);
        if (!pw)
                return log_error_errno(ENOENT, "User '%s' does not exist", user);
        return chown_dir_and_files(dir, pw->pw_uid, pw->pw_gid);
}

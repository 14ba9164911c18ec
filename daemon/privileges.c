/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dropping privileges: after every device fd is open, nothing the daemon does needs a
 * capability (the msr driver and PCI config files judge the opener, not the reader).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "privileges.h"

static void cap_freep(cap_t *c) {
        if (*c)
                (void) cap_free(*c);
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

static int verify_no_capabilities(void) {
        _cleanup_(cap_freep) cap_t now = cap_get_proc(), empty = cap_init();

        if (!now || !empty)
                return -ENOMEM;
        if (cap_compare(now, empty) != 0)
                return log_error_errno(EPERM, "Capabilities are still held after dropping them");
        for (cap_value_t cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
                if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) > 0)
                        return log_error_errno(EPERM, "Capability %d is still in the bounding set", (int) cap);
        return 0;
}

int privileges_drop(const char *user) {
        _cleanup_(cap_freep) cap_t empty = NULL;
        struct passwd *pw = NULL;
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
        r = drop_bounding_set();
        if (r < 0)
                return r;

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

        r = verify_no_capabilities();
        if (r < 0)
                return r;
        if (pw && (setuid(0) == 0 || geteuid() == 0))
                return log_error_errno(EPERM, "Could regain root after dropping privileges");
        return 0;
}

int privileges_prepare_state_dir(const char *dir, const char *user) {
        struct passwd *pw = NULL;
        struct stat st;
        int fd;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create state directory %s", dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open state directory %s", dir);
        if (fstat(fd, &st) < 0) {
                int e = errno;
                (void) close(fd);
                return log_error_errno(e, "Cannot stat %s", dir);
        }
        if (geteuid() == 0) {
                pw = getpwnam(user);
                if (pw && (st.st_uid == 0 || st.st_uid == pw->pw_uid) && fchown(fd, pw->pw_uid, pw->pw_gid) < 0) {
                        int e = errno;
                        (void) close(fd);
                        return log_error_errno(e, "Cannot give %s to '%s'", dir, user);
                }
                if (pw && st.st_uid != 0 && st.st_uid != pw->pw_uid) {
                        (void) close(fd);
                        return log_error_errno(EPERM, "State directory %s belongs to uid %u, not to '%s' or root", dir,
                                               (unsigned) st.st_uid, user);
                }
        }
        (void) fchmod(fd, 0700);
        (void) close(fd);
        return 0;
}

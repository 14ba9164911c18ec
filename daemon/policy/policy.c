/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Identity and rights. Identity comes only from the kernel: SO_PEERCRED gives uid, gid and pid
 * at connect time, SO_PEERGROUPS the supplementary groups, SO_PEERPIDFD a handle on the process
 * itself; nothing in a message is believed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/policy.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static const char *const role_names[_ROLE_MAX] = {
        [ROLE_NONE] = "none",
        [ROLE_MONITOR] = "monitor",
        [ROLE_USER] = "user",
        [ROLE_ADMIN] = "admin",
};

const char *role_to_string(Role r) {
        return (unsigned) r < _ROLE_MAX ? role_names[r] : "invalid";
}

int peer_from_socket(int fd, Peer *ret) {
        struct ucred uc;
        socklen_t len = sizeof(uc);
        Peer p = { .pidfd = -EBADF, .cgroup_fd = -EBADF };
        int pidfd;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return -errno;
        p.uid = uc.uid;
        p.gid = uc.gid;
        p.pid = uc.pid;

        len = sizeof(p.groups);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, p.groups, &len) < 0) {
                /* ERANGE: more groups than we keep; the primary gid still counts, and a
                 * missing supplementary group can only take rights away. */
                if (errno != ERANGE && errno != ENOPROTOOPT)
                        return -errno;
                len = 0;
        }
        p.n_groups = len / sizeof(gid_t);

        /* The socket's own pidfd refers to the process that connected even if it has died
         * since. Without it (kernels before 6.5) the peer has none: pidfd_open() by pid could
         * pin whatever process got the pid after the client exited, the very race the pidfd
         * exists to close. Whatever needs the pidfd (job scope) then refuses with a reason. */
        len = sizeof(pidfd);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && len == sizeof(pidfd) &&
            pidfd >= 0)
                p.pidfd = pidfd;

        *ret = p;
        return 0;
}

void peer_done(Peer *p) {
        if (p->pidfd >= 0)
                (void) close(p->pidfd);
        if (p->cgroup_fd >= 0)
                (void) close(p->cgroup_fd);
        p->pidfd = p->cgroup_fd = -EBADF;
}

static bool in_gids(const Peer *p, const gid_t *gids, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (p->gid == gids[i] && !p->gid_revoked)
                        return true;
                for (size_t j = 0; j < p->n_groups; j++)
                        if (p->groups[j] == gids[i])
                                return true;
        }
        return false;
}

static bool in_uids(uid_t uid, const uid_t *uids, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (uids[i] == uid)
                        return true;
        return false;
}

void policy_rights(const Config *c, const Peer *p, Rights *ret) {
        Rights r = {};

        if (p->uid == 0 || in_gids(p, c->admin_gids, c->n_admin_gids)) {
                r.role = ROLE_ADMIN;
                r.may_read = r.may_write = r.may_admin = true;
        } else if (in_uids(p->uid, c->monitor_uids, c->n_monitor_uids) ||
                   in_gids(p, c->monitor_gids, c->n_monitor_gids)) {
                r.role = ROLE_MONITOR;
                r.may_read = true;
                r.may_write = true;
                r.read_classes = &c->monitor_read;
                r.write_classes = &c->monitor_write;
        } else if (!c->user_groups_set || in_gids(p, c->user_gids, c->n_user_gids)) {
                r.role = ROLE_USER;
                r.may_read = r.may_write = true;
                r.read_classes = &c->user_read;
                r.write_classes = &c->user_write;
                r.scoped = c->mode == ACCESS_MODE_JOB;
        } else {
                r.role = ROLE_NONE;
                (void) snprintf(r.reason, sizeof(r.reason),
                                "uid %u is not in a group allowed to use pmugate (user_groups: %s); ask your admin",
                                (unsigned) p->uid, c->user_groups[0] ? c->user_groups : "none configured");
        }
        /* Sampling a process is a user's or an admin's: a monitor samples nobody. */
        r.may_lbr = r.role == ROLE_ADMIN || (r.role == ROLE_USER && in_gids(p, c->lbr_gids, c->n_lbr_gids));
        *ret = r;
}

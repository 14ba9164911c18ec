/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Identity and rights. Identity comes only from the kernel: SO_PEERCRED gives uid, gid and pid
 * at connect time, SO_PEERGROUPS the supplementary groups; nothing in a message is believed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "policy.h"

static const char *const role_names[_ROLE_MAX] = {
        [ROLE_NONE] = "none",
        [ROLE_USER] = "user",
        [ROLE_ADMIN] = "admin",
};

const char *role_to_string(Role r) {
        return (unsigned) r < _ROLE_MAX ? role_names[r] : "invalid";
}

int peer_from_socket(int fd, Peer *ret) {
        struct ucred uc;
        socklen_t len = sizeof(uc);
        Peer p = {};

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

        *ret = p;
        return 0;
}

static bool peer_in_groups(const Peer *p, const gid_t *gids, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (p->gid == gids[i])
                        return true;
                for (size_t j = 0; j < p->n_groups; j++)
                        if (p->groups[j] == gids[i])
                                return true;
        }
        return false;
}

void policy_rights(const Config *c, const Peer *p, Rights *ret) {
        Rights r = {};

        if (p->uid == 0 || peer_in_groups(p, c->admin_gids, c->n_admin_gids)) {
                r.role = ROLE_ADMIN;
                r.may_read = r.may_write = r.may_admin = true;
        } else if (peer_in_groups(p, c->user_gids, c->n_user_gids)) {
                r.role = ROLE_USER;
                r.may_read = true;
                (void) snprintf(r.reason, sizeof(r.reason),
                                "uid %u may read but not write: writing needs root or a group in admin_groups (%s)",
                                (unsigned) p->uid, c->admin_groups[0] ? c->admin_groups : "none configured");
        } else {
                r.role = ROLE_NONE;
                (void) snprintf(r.reason, sizeof(r.reason),
                                "uid %u is not in a group allowed to use pmugate (user_groups: %s); ask your admin",
                                (unsigned) p->uid, c->user_groups[0] ? c->user_groups : "none configured");
        }
        *ret = r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who the caller is (from the kernel) and what that allows
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy/config.h"

#define PEER_GROUPS_MAX 256

typedef struct Peer {
        uid_t uid;
        gid_t gid;
        pid_t pid;
        int pidfd;      /* pins the process, so a recycled pid is never mistaken for it; -EBADF
                         * when the kernel has no SO_PEERPIDFD (never opened by pid) */
        int cgroup_fd;  /* its /proc/PID/cgroup, opened at the first job-scope look-up */
        gid_t groups[PEER_GROUPS_MAX];
        size_t n_groups;
        bool gid_revoked;       /* the group database no longer puts uid in gid: a reload
                                 * narrowed it away (membership.c), and it grants nothing */
} Peer;

/* Ordered by privilege; a monitor's lease yields to a user's or an admin's. */
typedef enum Role {
        ROLE_NONE,
        ROLE_MONITOR,
        ROLE_USER,
        ROLE_ADMIN,
        _ROLE_MAX,
} Role;

const char *role_to_string(Role r);

typedef struct Rights {
        Role role;
        bool may_read;
        bool may_write;
        bool may_admin;
        bool scoped;                    /* CPUs limited to the caller's job (job mode users) */
        bool may_lbr;                   /* the class lbr from pmugate.conf (lbr_groups, or an
                                         * admin); a job grant can give it too (grants.h) */
        const ClassSet *read_classes;   /* NULL: every class */
        const ClassSet *write_classes;
        char reason[320];               /* why not, when a right is missing */
} Rights;

/* Fills peer from SO_PEERCRED, SO_PEERGROUPS and the peer's pidfd of a connected socket. */
int peer_from_socket(int fd, Peer *ret);
void peer_done(Peer *p);

void policy_rights(const Config *c, const Peer *p, Rights *ret);

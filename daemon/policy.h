/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who the caller is (from the kernel) and what that allows
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

#define PEER_GROUPS_MAX 256

typedef struct Peer {
        uid_t uid;
        gid_t gid;
        pid_t pid;
        gid_t groups[PEER_GROUPS_MAX];
        size_t n_groups;
} Peer;

typedef enum Role {
        ROLE_NONE,
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
        char reason[320]; /* why not, when a right is missing */
} Rights;

/* Fills peer from SO_PEERCRED and SO_PEERGROUPS of a connected socket. */
int peer_from_socket(int fd, Peer *ret);

void policy_rights(const Config *c, const Peer *p, Rights *ret);

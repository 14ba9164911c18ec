/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group membership from the group database, to narrow what a connection's credentials said
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "policy/policy.h"

enum {
        _MEMBERSHIP_E_SUCCESS,
        MEMBERSHIP_E_NO_USER,   /* the database has no such uid: it is in no group at all */
};

/* The groups the database puts uid in now: its passwd entry's primary group and every group
 * that lists its name. With root "/" the system's database is asked (NSS: files, LDAP, sssd,
 * systemd-userdb); with any other root, as for the rest of a fake machine, the plain files
 * root/etc/passwd and root/etc/group. Returns 0 with a malloc()ed list, MEMBERSHIP_E_NO_USER
 * with an empty one, or a negative errno when the database could not be read. */
int membership_read(const char *root, uid_t uid, gid_t **ret_gids, size_t *ret_n);

/* Keeps of p's groups only those in gids: the supplementary groups the socket reported at
 * connect time, and the primary gid (which then no longer counts, see Peer.gid_revoked).
 * Never adds one. Returns how many groups p lost. */
size_t peer_narrow_groups(Peer *p, const gid_t *gids, size_t n);

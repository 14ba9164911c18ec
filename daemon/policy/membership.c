/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group membership from the group database. The kernel's word (SO_PEERCRED, SO_PEERGROUPS) is
 * what a connection starts with; an admin who then takes a user out of a pmugate group and
 * reloads must be able to take that right from connections already open. The database can only
 * narrow the kernel's word, never widen it.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "policy/membership.h"

static bool gid_in(gid_t gid, const gid_t *gids, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (gids[i] == gid)
                        return true;
        return false;
}

static int add_gid(gid_t gid, gid_t **gids, size_t *n) {
        gid_t *grown;

        if (gid_in(gid, *gids, *n))
                return 0;
        /* The kernel's own bound on a process's groups: a database that lists more for one
         * user is not believed. */
        if (*n >= NGROUPS_MAX)
                return -E2BIG;
        grown = reallocarray(*gids, *n + 1, sizeof(gid_t));
        if (!grown)
                return -ENOMEM;
        grown[(*n)++] = gid;
        *gids = grown;
        return 0;
}

/* The files of a fake machine: read, never trusted beyond what they say about this uid. */
static int membership_from_files(const char *root, uid_t uid, gid_t **ret_gids, size_t *ret_n) {
        _cleanup_(fclosep) FILE *pw = NULL, *gr = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        char path[PATH_MAX], name[256] = "";
        struct passwd *p;
        struct group *g;
        size_t n = 0;
        int r;

        (void) snprintf(path, sizeof(path), "%s/etc/passwd", root);
        pw = fopen(path, "re");
        if (!pw && errno != ENOENT)
                return -errno;
        while (pw && (p = fgetpwent(pw)))
                if (p->pw_uid == uid) {
                        (void) snprintf(name, sizeof(name), "%s", p->pw_name);
                        r = add_gid(p->pw_gid, &gids, &n);
                        if (r < 0)
                                return r;
                        break;
                }
        if (!name[0]) {
                *ret_gids = NULL;
                *ret_n = 0;
                return MEMBERSHIP_E_NO_USER;
        }
        (void) snprintf(path, sizeof(path), "%s/etc/group", root);
        gr = fopen(path, "re");
        if (!gr && errno != ENOENT)
                return -errno;
        while (gr && (g = fgetgrent(gr)))
                for (char **m = g->gr_mem; m && *m; m++)
                        if (strcmp(*m, name) == 0) {
                                r = add_gid(g->gr_gid, &gids, &n);
                                if (r < 0)
                                        return r;
                                break;
                        }
        *ret_gids = TAKE_PTR(gids);
        *ret_n = n;
        return 0;
}

static int membership_from_nss(uid_t uid, gid_t **ret_gids, size_t *ret_n) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ gid_t *gids = NULL;
        struct passwd pw, *found = NULL;
        long size = sysconf(_SC_GETPW_R_SIZE_MAX);
        int n, r;

        if (size <= 0)
                size = 16384;
        for (;;) {
                buf = malloc((size_t) size);
                if (!buf)
                        return -ENOMEM;
                r = getpwuid_r(uid, &pw, buf, (size_t) size, &found);
                if (r != ERANGE)
                        break;
                if (size >= 1024 * 1024)
                        return -E2BIG;
                size *= 2;
                free(TAKE_PTR(buf));
        }
        if (r != 0)
                return -r;
        if (!found) {
                *ret_gids = NULL;
                *ret_n = 0;
                return MEMBERSHIP_E_NO_USER;
        }
        /* getgrouplist() says how many it would have needed when the list was too short. */
        n = 64;
        for (;;) {
                int want = n;
                gid_t *grown = reallocarray(gids, (size_t) n, sizeof(gid_t));

                if (!grown)
                        return -ENOMEM;
                gids = grown;
                if (getgrouplist(pw.pw_name, pw.pw_gid, gids, &n) >= 0)
                        break;
                if (n <= want)
                        n = want * 2;
                if (n > NGROUPS_MAX)
                        return -E2BIG;
        }
        *ret_gids = TAKE_PTR(gids);
        *ret_n = (size_t) n;
        return 0;
}

int membership_read(const char *root, uid_t uid, gid_t **ret_gids, size_t *ret_n) {
        if (!root || strcmp(root, "/") == 0)
                return membership_from_nss(uid, ret_gids, ret_n);
        return membership_from_files(root, uid, ret_gids, ret_n);
}

size_t peer_narrow_groups(Peer *p, const gid_t *gids, size_t n) {
        size_t kept = 0, lost = 0;

        for (size_t i = 0; i < p->n_groups; i++)
                if (gid_in(p->groups[i], gids, n))
                        p->groups[kept++] = p->groups[i];
                else
                        lost++;
        p->n_groups = kept;
        if (!p->gid_revoked && !gid_in(p->gid, gids, n)) {
                p->gid_revoked = true;
                lost++;
        }
        return lost;
}

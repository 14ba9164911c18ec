/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate.conf: who may do what. Parsed with inih; a file with any error is refused whole,
 * with its line and reason, so a typo never widens or narrows access by accident.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CONFIG_GROUPS_MAX 32

typedef struct Config {
        gid_t admin_gids[CONFIG_GROUPS_MAX];   /* members may read, write and administer */
        size_t n_admin_gids;
        gid_t user_gids[CONFIG_GROUPS_MAX];    /* members may read */
        size_t n_user_gids;
        char admin_groups[128];                /* as written, for messages */
        char user_groups[128];

        unsigned clients_max;
        unsigned clients_per_uid_max;
} Config;

void config_init_defaults(Config *c);

/* Parses path into ret. A missing file is not an error when missing_ok (the defaults stand).
 * On a bad file returns -EINVAL and writes "FILE:LINE: reason" into reason. */
int config_load(const char *path, bool missing_ok, Config *ret, char *reason, size_t reason_size);

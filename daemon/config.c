/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate.conf parsing
 */
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "pmugate-limits.h"

typedef struct ConfigParser {
        Config config;
        bool failed;
        char reason[200];
} ConfigParser;

void config_init_defaults(Config *c) {
        *c = (Config) {
                .clients_max = PMUGATE_CLIENTS_MAX,
                .clients_per_uid_max = PMUGATE_CLIENTS_PER_UID_MAX,
        };
}

static int parse_groups(const char *value, gid_t *gids, size_t *n, char *names, size_t names_size,
                        char *reason, size_t reason_size) {
        char buf[1024], *save = NULL;

        if (strlen(value) >= sizeof(buf)) {
                (void) snprintf(reason, reason_size, "group list too long");
                return -EINVAL;
        }
        /* Kept (possibly shortened) only to name the groups in messages. */
        memcpy(names, value, strnlen(value, names_size - 1));
        names[strnlen(value, names_size - 1)] = '\0';
        memcpy(buf, value, strlen(value) + 1);
        *n = 0;
        for (char *name = strtok_r(buf, " ,", &save); name; name = strtok_r(NULL, " ,", &save)) {
                struct group *g = getgrnam(name);
                char *end;
                unsigned long numeric = strtoul(name, &end, 10);

                /* A number is a gid, so a site can name groups its NSS does not resolve. */
                if (!g && *end == '\0' && end != name && numeric < (gid_t) -1) {
                        if (*n >= CONFIG_GROUPS_MAX) {
                                (void) snprintf(reason, reason_size, "more than %d groups", CONFIG_GROUPS_MAX);
                                return -EINVAL;
                        }
                        gids[(*n)++] = (gid_t) numeric;
                        continue;
                }
                if (!g) {
                        /* A group that does not exist (yet) grants nothing; refusing the file
                         * would keep the daemon from starting before sysusers ran. */
                        log_warning("Config: group '%s' does not exist, ignoring it", name);
                        continue;
                }
                if (*n >= CONFIG_GROUPS_MAX) {
                        (void) snprintf(reason, reason_size, "more than %d groups", CONFIG_GROUPS_MAX);
                        return -EINVAL;
                }
                gids[(*n)++] = g->gr_gid;
        }
        return 0;
}

static int parse_unsigned(const char *value, unsigned max, unsigned *ret, char *reason, size_t reason_size) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(value, &end, 10);
        if (errno != 0 || end == value || *end != '\0' || v == 0 || v > max) {
                (void) snprintf(reason, reason_size, "'%s' is not a number between 1 and %u", value, max);
                return -EINVAL;
        }
        *ret = (unsigned) v;
        return 0;
}

/* Returning 0 makes ini_parse_file() report this line as the first error. */
static int config_handler(void *userdata, const char *section, const char *name, const char *value) {
        ConfigParser *p = userdata;
        Config *c = &p->config;
        int r;

        if (p->failed)
                return 1;

        if (strcmp(section, "access") == 0 && strcmp(name, "admin_groups") == 0)
                r = parse_groups(value, c->admin_gids, &c->n_admin_gids, c->admin_groups, sizeof(c->admin_groups),
                                 p->reason, sizeof(p->reason));
        else if (strcmp(section, "access") == 0 && strcmp(name, "user_groups") == 0)
                r = parse_groups(value, c->user_gids, &c->n_user_gids, c->user_groups, sizeof(c->user_groups),
                                 p->reason, sizeof(p->reason));
        else if (strcmp(section, "limits") == 0 && strcmp(name, "clients") == 0)
                r = parse_unsigned(value, PMUGATE_CLIENTS_MAX, &c->clients_max, p->reason, sizeof(p->reason));
        else if (strcmp(section, "limits") == 0 && strcmp(name, "clients_per_uid") == 0)
                r = parse_unsigned(value, PMUGATE_CLIENTS_PER_UID_MAX, &c->clients_per_uid_max, p->reason,
                                   sizeof(p->reason));
        else {
                (void) snprintf(p->reason, sizeof(p->reason), "unknown key '%s' in section [%s]", name, section);
                r = -EINVAL;
        }
        if (r < 0) {
                p->failed = true;
                return 0;
        }
        return 1;
}

int config_load(const char *path, bool missing_ok, Config *ret, char *reason, size_t reason_size) {
        ConfigParser p = {};
        FILE *f;
        int r;

        config_init_defaults(&p.config);
        f = fopen(path, "re");
        if (!f) {
                if (errno == ENOENT && missing_ok) {
                        *ret = p.config;
                        return 0;
                }
                r = -errno;
                (void) snprintf(reason, reason_size, "%s: %s", path, strerror(errno));
                return r;
        }
        r = ini_parse_file(f, config_handler, &p);
        (void) fclose(f);
        if (r != 0) {
                (void) snprintf(reason, reason_size, "%s:%d: %s", path, r, p.failed ? p.reason : "syntax error");
                return -EINVAL;
        }
        *ret = p.config;
        return 0;
}

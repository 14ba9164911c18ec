/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate.conf parsing
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "policy/config.h"

typedef struct ConfigParser {
        Config config;
        bool failed;
        bool quiet;             /* no warnings: resolving the built-in defaults */
        bool admin_groups_set;  /* the file names them; otherwise the defaults stand */
        bool user_groups_set;
        char reason[200];
} ConfigParser;

static const char *const access_mode_names[_ACCESS_MODE_MAX] = {
        [ACCESS_MODE_OPEN] = "open",
        [ACCESS_MODE_JOB] = "job",
};

const char *access_mode_to_string(AccessMode m) {
        return (unsigned) m < _ACCESS_MODE_MAX ? access_mode_names[m] : "invalid";
}

bool class_set_contains(const ClassSet *s, const char *cls) {
        if (s->all)
                return true;
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->classes[i], cls) == 0)
                        return true;
        return false;
}

static void class_set_parse_static(ClassSet *s, const char *text) {
        char buf[256], *save = NULL;

        *s = (ClassSet) {};
        (void) snprintf(buf, sizeof(buf), "%s", text);
        for (char *t = strtok_r(buf, " ,", &save); t && s->n < CONFIG_CLASSES_MAX; t = strtok_r(NULL, " ,", &save)) {
                if (strcmp(t, "all") == 0)
                        s->all = true;
                else
                        (void) snprintf(s->classes[s->n++], CONFIG_CLASS_LEN, "%s", t);
        }
}

_printf_(2, 3) static int fail(ConfigParser *p, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
        va_end(ap);
        p->failed = true;
        return -EINVAL;
}

/* A list of group (or user) names or numeric ids. A name that does not resolve grants nothing
 * and is only warned about: refusing the file would keep the daemon from starting before
 * systemd-sysusers created the groups. */
static int parse_ids(ConfigParser *p, const char *value, bool users, unsigned *ids, size_t *n, char *names,
                     size_t names_size) {
        char buf[1024], *save = NULL;

        if (strlen(value) >= sizeof(buf))
                return fail(p, "list too long");
        if (names) {
                memcpy(names, value, strnlen(value, names_size - 1));
                names[strnlen(value, names_size - 1)] = '\0';
        }
        memcpy(buf, value, strlen(value) + 1);
        *n = 0;
        for (char *name = strtok_r(buf, " ,", &save); name; name = strtok_r(NULL, " ,", &save)) {
                char *end;
                unsigned long numeric = strtoul(name, &end, 10);
                bool is_number = *end == '\0' && end != name && numeric < (unsigned) -1;
                unsigned id;

                if (*n >= CONFIG_IDS_MAX)
                        return fail(p, "more than %d entries", CONFIG_IDS_MAX);
                if (users) {
                        struct passwd *pw = getpwnam(name);

                        if (!pw && !is_number) {
                                if (!p->quiet)
                                        log_warning("Config: user '%s' does not exist, ignoring it", name);
                                continue;
                        }
                        id = pw ? pw->pw_uid : (unsigned) numeric;
                } else {
                        struct group *g = getgrnam(name);

                        if (!g && !is_number) {
                                if (!p->quiet)
                                        log_warning("Config: group '%s' does not exist, ignoring it", name);
                                continue;
                        }
                        id = g ? g->gr_gid : (unsigned) numeric;
                }
                ids[(*n)++] = id;
        }
        return 0;
}

/* The defaults are those of the shipped policy/pmugate.conf, groups included: without a file
 * only members of pmugate-users are users, never everybody (tests/daemon/test_config.c compares
 * the two). A group that does not exist (yet) admits nobody. */
static void set_default_groups(ConfigParser *p, bool admin, bool user) {
        Config *c = &p->config;

        if (admin)
                (void) parse_ids(p, CONFIG_DEFAULT_ADMIN_GROUPS, false, c->admin_gids, &c->n_admin_gids,
                                 c->admin_groups, sizeof(c->admin_groups));
        if (user) {
                c->user_groups_set = true;
                (void) parse_ids(p, CONFIG_DEFAULT_USER_GROUPS, false, c->user_gids, &c->n_user_gids,
                                 c->user_groups, sizeof(c->user_groups));
        }
}

void config_init_defaults(Config *c) {
        ConfigParser p = { .quiet = true };

        p.config = (Config) {
                .mode = ACCESS_MODE_OPEN,
                .counters_backend = BACKEND_WANTED_AUTO,
                .clients_max = PMUGATE_CLIENTS_MAX,
                .clients_per_uid_max = PMUGATE_CLIENTS_PER_UID_MAX,
                .grants_max = PMUGATE_GRANTS_MAX,
                .leases_per_uid_max = PMUGATE_CPUS_MAX,
        };
        class_set_parse_static(&p.config.user_read, CONFIG_DEFAULT_READ_CLASSES);
        class_set_parse_static(&p.config.user_write, CONFIG_DEFAULT_WRITE_CLASSES);
        class_set_parse_static(&p.config.monitor_read, CONFIG_DEFAULT_READ_CLASSES);
        class_set_parse_static(&p.config.monitor_write, CONFIG_DEFAULT_WRITE_CLASSES);
        set_default_groups(&p, true, true);
        /* Quietly: a node without the exporter's user (built from source, the exporter not
         * installed) has no monitor by default, and no warning about one it never asked for. */
        (void) parse_ids(&p, CONFIG_DEFAULT_MONITOR_USERS, true, p.config.monitor_uids,
                         &p.config.n_monitor_uids, NULL, 0);
        *c = p.config;
}

static int parse_classes(ConfigParser *p, const char *value, ClassSet *s) {
        char buf[512], *save = NULL;

        if (strlen(value) >= sizeof(buf))
                return fail(p, "class list too long");
        *s = (ClassSet) {};
        memcpy(buf, value, strlen(value) + 1);
        for (char *t = strtok_r(buf, " ,", &save); t; t = strtok_r(NULL, " ,", &save)) {
                if (strcmp(t, "all") == 0) {
                        s->all = true;
                        continue;
                }
                if (strcmp(t, "none") == 0)
                        continue;
                if (strlen(t) >= CONFIG_CLASS_LEN || t[strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789-")] != '\0')
                        return fail(p, "bad class '%.32s'", t);
                if (s->n >= CONFIG_CLASSES_MAX)
                        return fail(p, "more than %d classes", CONFIG_CLASSES_MAX);
                memcpy(s->classes[s->n++], t, strlen(t) + 1);
        }
        return 0;
}

static int parse_bool(ConfigParser *p, const char *value, bool *ret) {
        if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
                *ret = true;
        else if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
                *ret = false;
        else
                return fail(p, "'%.32s' is not yes or no", value);
        return 0;
}

static int parse_unsigned(ConfigParser *p, const char *value, unsigned max, unsigned *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(value, &end, 10);
        if (errno != 0 || end == value || *end != '\0' || v == 0 || v > max)
                return fail(p, "'%.32s' is not a number between 1 and %u", value, max);
        *ret = (unsigned) v;
        return 0;
}

static int handle_access(ConfigParser *p, const char *name, const char *value) {
        Config *c = &p->config;

        if (strcmp(name, "mode") == 0) {
                for (unsigned m = 0; m < _ACCESS_MODE_MAX; m++)
                        if (strcmp(value, access_mode_names[m]) == 0) {
                                c->mode = m;
                                return 0;
                        }
                return fail(p, "unknown mode '%.32s' (expected open or job)", value);
        }
        if (strcmp(name, "admin_groups") == 0) {
                p->admin_groups_set = true;
                return parse_ids(p, value, false, c->admin_gids, &c->n_admin_gids, c->admin_groups,
                                 sizeof(c->admin_groups));
        }
        if (strcmp(name, "user_groups") == 0) {
                /* Set but resolving to no group means nobody, never everybody: a group that
                 * does not exist yet must not open the daemon to all users. Only an empty
                 * value, written out, opens it to everybody. */
                p->user_groups_set = true;
                c->user_groups_set = value[0] != '\0';
                return parse_ids(p, value, false, c->user_gids, &c->n_user_gids, c->user_groups,
                                 sizeof(c->user_groups));
        }
        if (strcmp(name, "monitor_users") == 0) {
                /* A user that does not exist is ignored with a warning: it admits nobody, and the
                 * daemon starts. */
                return parse_ids(p, value, true, c->monitor_uids, &c->n_monitor_uids, NULL, 0);
        }
        if (strcmp(name, "monitor_groups") == 0)
                return parse_ids(p, value, false, c->monitor_gids, &c->n_monitor_gids, NULL, 0);
        return fail(p, "unknown key '%.32s' in section [access]", name);
}

static int handle_rights(ConfigParser *p, const char *name, const char *value) {
        Config *c = &p->config;

        if (strcmp(name, "user_read") == 0)
                return parse_classes(p, value, &c->user_read);
        if (strcmp(name, "user_write") == 0)
                return parse_classes(p, value, &c->user_write);
        if (strcmp(name, "monitor_read") == 0)
                return parse_classes(p, value, &c->monitor_read);
        if (strcmp(name, "monitor_write") == 0)
                return parse_classes(p, value, &c->monitor_write);
        if (strcmp(name, "lbr_groups") == 0)
                return parse_ids(p, value, false, c->lbr_gids, &c->n_lbr_gids, c->lbr_groups,
                                 sizeof(c->lbr_groups));
        if (strcmp(name, "package_read_shared") == 0)
                return parse_bool(p, value, &c->package_read_shared);
        if (strcmp(name, "energy_read_shared") == 0)
                return parse_bool(p, value, &c->energy_read_shared);
        if (strcmp(name, "jobmap_uids") == 0)
                return parse_bool(p, value, &c->jobmap_uids);
        return fail(p, "unknown key '%.32s' in section [rights]", name);
}

static int handle_limits(ConfigParser *p, const char *name, const char *value) {
        Config *c = &p->config;

        if (strcmp(name, "clients") == 0)
                return parse_unsigned(p, value, PMUGATE_CLIENTS_MAX, &c->clients_max);
        if (strcmp(name, "clients_per_uid") == 0)
                return parse_unsigned(p, value, PMUGATE_CLIENTS_PER_UID_MAX, &c->clients_per_uid_max);
        if (strcmp(name, "grants") == 0)
                return parse_unsigned(p, value, PMUGATE_GRANTS_MAX, &c->grants_max);
        if (strcmp(name, "leases_per_uid") == 0)
                return parse_unsigned(p, value, PMUGATE_CPUS_MAX, &c->leases_per_uid_max);
        return fail(p, "unknown key '%.32s' in section [limits]", name);
}

static int handle_counters(ConfigParser *p, const char *name, const char *value) {
        Config *c = &p->config;
        int w;

        if (strcmp(name, "backend") == 0) {
                w = backend_wanted_from_string(value);
                if (w < 0)
                        return fail(p, "unknown backend '%.32s' (expected auto, msr or perf)", value);
                c->counters_backend = (BackendWanted) w;
                return 0;
        }
        if (strcmp(name, "user_count_kernel") == 0)
                return parse_bool(p, value, &c->user_count_kernel);
        return fail(p, "unknown key '%.32s' in section [counters]", name);
}

/* Returning 0 makes ini_parse_file() report this line as the first error. */
static int config_handler(void *userdata, const char *section, const char *name, const char *value) {
        ConfigParser *p = userdata;
        int r;

        if (p->failed)
                return 1;
        if (strcmp(section, "access") == 0)
                r = handle_access(p, name, value);
        else if (strcmp(section, "rights") == 0)
                r = handle_rights(p, name, value);
        else if (strcmp(section, "limits") == 0)
                r = handle_limits(p, name, value);
        else if (strcmp(section, "counters") == 0)
                r = handle_counters(p, name, value);
        else
                r = fail(p, "unknown section [%.32s]", section);
        return r < 0 ? 0 : 1;
}

int config_load_file(FILE *f, const char *name, Config *ret, char *reason, size_t reason_size) {
        ConfigParser p = {};
        int r;

        config_init_defaults(&p.config);
        r = ini_parse_file(f, config_handler, &p);
        if (r != 0) {
                (void) snprintf(reason, reason_size, "%s:%d: %s", name, r,
                                p.failed ? p.reason : "syntax error");
                return -EINVAL;
        }
        /* Groups the file leaves out are the defaults', resolved again aloud: a default group
         * that does not exist is worth a warning. */
        set_default_groups(&p, !p.admin_groups_set, !p.user_groups_set);
        *ret = p.config;
        return 0;
}

/* The file decides who may do what: whoever can change it can widen access. It must be a
 * regular file owned by root (or by owner, the user that started the daemon) and writable by
 * nobody else. Symbolic links are followed: where the file lives is the administrator's choice,
 * what it says must be root's. */
static int check_file(int fd, const char *path, uid_t owner, char *reason, size_t reason_size) {
        struct stat st;

        if (fstat(fd, &st) < 0) {
                int r = -errno;

                (void) snprintf(reason, reason_size, "%s: %s", path, strerror(-r));
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                (void) snprintf(reason, reason_size, "%s is not a regular file", path);
                return -EPERM;
        }
        if (owner != CONFIG_ANY_OWNER && st.st_uid != 0 && st.st_uid != owner) {
                (void) snprintf(reason, reason_size,
                                "%s belongs to uid %u; it decides who may do what, so only root may own it "
                                "(chown root %s)", path, (unsigned) st.st_uid, path);
                return -EPERM;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                (void) snprintf(reason, reason_size,
                                "%s is writable by %s; it decides who may do what, so only its owner may "
                                "write it (chmod go-w %s)", path,
                                st.st_mode & S_IWOTH ? "everybody" : "its group", path);
                return -EPERM;
        }
        return 0;
}

int config_load(const char *path, bool missing_ok, uid_t owner, Config *ret, char *reason,
                size_t reason_size) {
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        /* Not blocking on a FIFO planted at the path: that is refused below as not a file. */
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT && missing_ok) {
                        ConfigParser p = {};

                        config_init_defaults(&p.config);
                        set_default_groups(&p, true, true);
                        *ret = p.config;
                        return 1;
                }
                r = -errno;
                (void) snprintf(reason, reason_size, "%s: %s", path, strerror(-r));
                return r;
        }
        r = check_file(fd, path, owner, reason, reason_size);
        if (r < 0) {
                (void) close(fd);
                return r;
        }
        f = fdopen(fd, "r");
        if (!f) {
                r = -errno;
                (void) close(fd);
                (void) snprintf(reason, reason_size, "%s: %s", path, strerror(-r));
                return r;
        }
        return config_load_file(f, path, ret, reason, reason_size);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: pmugate.conf, the administrator's file that decides who may do what
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "policy/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* User and group names resolve from this table, not through NSS: what a file means must not
 * depend on the machine the target runs on, and NSS (with its systemd module) costs about half a
 * millisecond a lookup, a hundred times the parser's own work. These definitions take the place
 * of libc's for this executable. */
static struct passwd fake_users[] = {
        { .pw_name = (char *) "root", .pw_uid = 0, .pw_gid = 0 },
        { .pw_name = (char *) "pmugate", .pw_uid = 990, .pw_gid = 990 },
        { .pw_name = (char *) "monitor", .pw_uid = 1500, .pw_gid = 1500 },
        { .pw_name = (char *) "nobody", .pw_uid = 65534, .pw_gid = 65534 },
};
static struct group fake_groups[] = {
        { .gr_name = (char *) "root", .gr_gid = 0 },
        { .gr_name = (char *) "wheel", .gr_gid = 10 },
        { .gr_name = (char *) "pmugate", .gr_gid = 990 },
        { .gr_name = (char *) "pmu-users", .gr_gid = 1001 },
        { .gr_name = (char *) "nogroup", .gr_gid = 65534 },
};

struct passwd *getpwnam(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(fake_users); i++)
                if (strcmp(fake_users[i].pw_name, name) == 0)
                        return &fake_users[i];
        errno = 0;
        return NULL;
}

struct group *getgrnam(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(fake_groups); i++)
                if (strcmp(fake_groups[i].gr_name, name) == 0)
                        return &fake_groups[i];
        errno = 0;
        return NULL;
}

static void assert_class_set_valid(const ClassSet *s) {
        fuzz_assert(s->n <= CONFIG_CLASSES_MAX);
        for (size_t i = 0; i < s->n; i++) {
                size_t len = strnlen(s->classes[i], CONFIG_CLASS_LEN);

                fuzz_assert(len > 0 && len < CONFIG_CLASS_LEN);
                fuzz_assert(strspn(s->classes[i], "abcdefghijklmnopqrstuvwxyz0123456789-") == len);
                fuzz_assert(class_set_contains(s, s->classes[i]));
        }
}

static void assert_config_valid(const Config *c) {
        fuzz_assert((unsigned) c->mode < _ACCESS_MODE_MAX);
        fuzz_assert(strcmp(access_mode_to_string(c->mode), "invalid") != 0);
        fuzz_assert(c->n_admin_gids <= CONFIG_IDS_MAX);
        fuzz_assert(c->n_user_gids <= CONFIG_IDS_MAX);
        fuzz_assert(c->n_monitor_uids <= CONFIG_IDS_MAX);
        fuzz_assert(c->n_monitor_gids <= CONFIG_IDS_MAX);
        fuzz_assert(FUZZ_TERMINATED(c->admin_groups));
        fuzz_assert(FUZZ_TERMINATED(c->user_groups));
        /* An id list is kept only for a key that was set: no group, no ids. */
        fuzz_assert(c->user_groups_set || c->n_user_gids == 0);
        assert_class_set_valid(&c->user_read);
        assert_class_set_valid(&c->user_write);
        assert_class_set_valid(&c->monitor_read);
        assert_class_set_valid(&c->monitor_write);
        fuzz_assert(c->clients_max >= 1 && c->clients_max <= PMUGATE_CLIENTS_MAX);
        fuzz_assert(c->clients_per_uid_max >= 1 && c->clients_per_uid_max <= PMUGATE_CLIENTS_PER_UID_MAX);
        fuzz_assert(c->grants_max >= 1 && c->grants_max <= PMUGATE_GRANTS_MAX);
        fuzz_assert(c->leases_per_uid_max >= 1 && c->leases_per_uid_max <= PMUGATE_CPUS_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *copy = fuzz_copy(data, size);
        _cleanup_fclose_ FILE *f = fuzz_open_stream(copy, size);
        Config config, untouched;
        char reason[256];
        int r;

        memset(&config, 0xa5, sizeof(config));
        untouched = config;
        memset(reason, 'x', sizeof(reason));

        r = config_load_file(f, "fuzz.conf", &config, reason, sizeof(reason));
        fuzz_assert(r == 0 || r == -EINVAL);
        if (r < 0) {
                /* Refused whole: nothing of the file leaks into the caller's Config, and the
                 * reason names the file and a line. */
                fuzz_assert(memcmp(&config, &untouched, sizeof(config)) == 0);
                fuzz_assert(FUZZ_TERMINATED(reason));
                fuzz_assert(strncmp(reason, "fuzz.conf:", strlen("fuzz.conf:")) == 0);
                return 0;
        }
        assert_config_valid(&config);
        return 0;
}

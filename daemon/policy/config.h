/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate.conf: who may do what. Parsed with inih; a file with any error is refused whole,
 * with its line and reason, so a typo never widens or narrows access by accident.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "backend/backend-choice.h"

#define CONFIG_IDS_MAX 32
#define CONFIG_CLASSES_MAX 16
#define CONFIG_CLASS_LEN 16

typedef enum AccessMode {
        ACCESS_MODE_OPEN,  /* users may use every CPU */
        ACCESS_MODE_JOB,   /* users need a job grant and are held to their job's CPUs */
        _ACCESS_MODE_MAX,
} AccessMode;

const char *access_mode_to_string(AccessMode m);

/* A set of register classes ("core-pmu", "rapl", ...); all = every class. */
typedef struct ClassSet {
        bool all;
        char classes[CONFIG_CLASSES_MAX][CONFIG_CLASS_LEN];
        size_t n;
} ClassSet;

bool class_set_contains(const ClassSet *s, const char *cls);

typedef struct Config {
        AccessMode mode;

        gid_t admin_gids[CONFIG_IDS_MAX];     /* members (and root) administer, read, write */
        size_t n_admin_gids;
        gid_t user_gids[CONFIG_IDS_MAX];      /* who is a user */
        size_t n_user_gids;
        bool user_groups_set;                 /* false: everyone is a user ("user_groups =") */
        uid_t monitor_uids[CONFIG_IDS_MAX];   /* monitoring agents: everywhere, yield to users */
        size_t n_monitor_uids;
        gid_t monitor_gids[CONFIG_IDS_MAX];
        size_t n_monitor_gids;
        char admin_groups[128];               /* as written, for messages */
        char user_groups[128];

        ClassSet user_read, user_write;
        ClassSet monitor_read, monitor_write;

        /* The class lbr (`pmugate timing`: sampling one's own process, with the Last Branch
         * Record or IPs): users in these groups hold it, admins always; nobody else unless a
         * job grant gives it (grants.h). Empty, the shipped default: nobody. */
        gid_t lbr_gids[CONFIG_IDS_MAX];
        size_t n_lbr_gids;
        char lbr_groups[128];                 /* as written, for messages */

        /* Package-scope registers (uncore, RAPL) see every user of the package. Without this,
         * a user reads them only when holding every CPU of the package. */
        bool package_read_shared;

        /* Energy registers (the built-in energy list: RAPL, AMD core energy) are a power side
         * channel on everyone running on the CPUs they count for. Without this, a user reads
         * one only holding every one of those CPUs (leases on them, or in job mode the job's
         * CPUs); admins and monitors always read them. Yes gives them to every user. */
        bool energy_read_shared;

        /* The job map ("jobmap") names each job's uid to monitors too, not only to admins. */
        bool jobmap_uids;

        /* [counters]: how the PMU is programmed (decided once, at start-up: a reload keeps the
         * start-up choice), and whether users may count kernel mode on the perf path (admins
         * always may). */
        BackendWanted counters_backend;
        bool user_count_kernel;

        unsigned clients_max;
        unsigned clients_per_uid_max;
        unsigned grants_max;
        unsigned leases_per_uid_max;    /* CPUs one user (other than root) may hold leases on */
} Config;

/* The defaults: those of the shipped policy/pmugate.conf, for a missing file and for every
 * key a file leaves out. Users are members of pmugate-users, admins of pmugate-admin (and
 * root), the monitor is the user pmugate-exporter.service runs as; a group or user that does
 * not exist admits nobody. */
#define CONFIG_DEFAULT_ADMIN_GROUPS "pmugate-admin"
#define CONFIG_DEFAULT_USER_GROUPS "pmugate-users"
#define CONFIG_DEFAULT_MONITOR_USERS "pmugate-exporter"
#define CONFIG_DEFAULT_READ_CLASSES "all"
#define CONFIG_DEFAULT_WRITE_CLASSES "core-pmu offcore uncore-imc uncore-l3 uncore-df"

void config_init_defaults(Config *c);

/* Tests that read the source tree's files, whoever checked it out. */
#define CONFIG_ANY_OWNER ((uid_t) -1)

/* Parses path into ret. A missing file is not an error when missing_ok: the defaults stand and
 * 1 is returned, 0 when the file was read. The file must be a regular file owned by root or by
 * owner (the uid that started the daemon) and not writable by group or others; otherwise
 * -EPERM. On a bad file returns -EINVAL. Either way reason says what is wrong ("FILE:LINE:
 * reason" for a bad line) and what to do. */
int config_load(const char *path, bool missing_ok, uid_t owner, Config *ret, char *reason,
                size_t reason_size);

/* Parses an open stream (config_load() without the open; the fuzz target feeds it memory);
 * name stands for the file in reason. */
int config_load_file(FILE *f, const char *name, Config *ret, char *reason, size_t reason_size);

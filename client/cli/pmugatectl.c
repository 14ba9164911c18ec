/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugatectl: the admin command line (and the batch system's prolog and epilog)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-config.h"
#include "cli/cli-util.h"
#include "cli/trusted-dir.h"
#include "cpulist.h"
#include "macro.h"
#include "pmugate-limits.h"

static const char *arg_socket;

static void help(void) {
        printf("Usage: pmugatectl [--socket=PATH] COMMAND [OPTIONS]\n"
               "\n"
               "Administer pmugated (needs root or a group in admin_groups).\n"
               "\n"
               "Commands:\n"
               "  status                              Clients, grants, leases, foreign counters, audit\n"
               "  grant --job ID --uid UID [--cpus LIST] [--lbr]\n"
               "                                      Let UID use this node for job ID (prolog); without\n"
               "                                      --cpus the job's cpuset cgroup decides; --lbr also\n"
               "                                      gives the class lbr (pmugate timing)\n"
               "  revoke --job ID                     End job ID's grant and leases, restoring registers\n"
               "                                      (epilog); exit 0 also when there is nothing to revoke\n"
               "  reset [-c CPUS]                     Put the PMU of CPUS (default: all) back to a clean state\n"
               "  reload                              Read the configuration again; a bad file is refused\n"
               "  jobmap                              Which job holds which CPU, and who leases CPUs\n"
               "                                      (also for monitor_users)\n"
               "  save-summary --dir DIR --name NAME  Write standard input as DIR/NAME, safely as root\n"
               "                                      (the epilog's job summary; needs no daemon)\n"
               "\n"
               "'pmugatectl COMMAND --help' describes each command.\n"
               "\n"
               "Options:\n"
               "  -h --help          Show this help\n"
               "     --version       Show the version\n"
               "     --socket=PATH   Daemon socket (default: $PMUGATE_SOCKET or %s)\n",
               PMUGATE_DEFAULT_SOCKET);
}

static void help_verb(const char *verb) {
        static const struct {
                const char *verb, *usage, *text;
        } verbs[] = {
                { "status", "status",
                  "Clients, job grants, leases, counters another PMU user holds, and the audit\n"
                  "log's recent refusals." },
                { "grant", "grant --job ID --uid UID [--cpus LIST] [--lbr]",
                  "Let UID measure on this node for job ID (a Slurm prolog does this). Without\n"
                  "--cpus the job's cpuset cgroup decides which CPUs. --lbr also gives UID the class\n"
                  "lbr for the job: sampling its own processes of the job (pmugate timing). A new\n"
                  "grant for the same job replaces the old one." },
                { "revoke", "revoke --job ID",
                  "End job ID's grant and its leases; the daemon restores every register they\n"
                  "changed (a Slurm epilog does this). Exits 0 also when there is nothing to revoke." },
                { "reset", "reset [-c CPUS]",
                  "Put the PMU of CPUS (default: all) back to a clean state: counters stopped and\n"
                  "zeroed, except those another PMU user holds." },
                { "reload", "reload",
                  "Read the configuration and allowlists again; a bad file is refused and the old\n"
                  "ones stay." },
                { "jobmap", "jobmap",
                  "Which job holds which CPU, and who leases CPUs (what pmugate-exporter labels its\n"
                  "samples with)." },
                { "save-summary", "save-summary --dir DIR --name NAME",
                  "Write standard input (at most 1 MiB) as DIR/NAME, mode 0644, for the Slurm\n"
                  "epilog's job summary. Every directory of DIR must be root's and writable by\n"
                  "nobody else unless sticky, and no symbolic link is followed; the file is created\n"
                  "new and renamed over NAME, so nothing another user put there is written\n"
                  "through. Needs no daemon." },
        };

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i].verb, verb) == 0)
                        printf("Usage: pmugatectl %s\n\n%s\n\n  -h --help    Show this help\n",
                               verbs[i].usage, verbs[i].text);
}

/* "uid 1000 (alice)": the number, which the daemon and its audit use, and the name an admin
 * knows; the number alone for a uid with no passwd entry. */
static const char *user_text(uint32_t uid, char *buf, size_t size) {
        struct passwd *pw = getpwuid((uid_t) uid);

        if (pw && pw->pw_name)
                (void) snprintf(buf, size, "uid %" PRIu32 " (%s)", uid, pw->pw_name);
        else
                (void) snprintf(buf, size, "uid %" PRIu32, uid);
        return buf;
}

/* The word before a CPU list as the user typed it: "CPU 3", "CPUs 0-3", never a bare number. */
static const char *cpus_word(const char *list, size_t n) {
        return !list ? "" : n == 1 ? "CPU " : "CPUs ";
}

/* The daemon's mode ("open" or "job"), or "" when its status cannot be read. */
static void daemon_mode(pmugate *c, char *buf, size_t size) {
        pmugate_status *s = NULL;

        buf[0] = '\0';
        if (pmugate_status_get(c, &s) < 0)
                return;
        (void) snprintf(buf, size, "%s", s->mode);
        pmugate_status_free(s);
}

/* Names the file the daemon read and the mode it now runs in, from its status; a daemon that
 * does not name its file is said to have read its --config (by default the packaged path). */
static int report_reload(pmugate *c) {
        pmugate_status *s = NULL;

        if (pmugate_status_get(c, &s) < 0) {
                printf("configuration reloaded: pmugated read its configuration file (its --config, by default %s) "
                       "again\n", PMUGATE_CONFIG_FILE);
                return 0;
        }
        if (s->config[0])
                printf("configuration reloaded from %s: pmugated runs in %s mode\n", s->config, s->mode);
        else
                printf("configuration reloaded: pmugated read its configuration file (its --config, by default %s) "
                       "again and runs in %s mode\n", PMUGATE_CONFIG_FILE, s->mode);
        pmugate_status_free(s);
        return 0;
}

static int verb_status(pmugate *c) {
        pmugate_status *s = NULL;
        char user[64 + 32];
        int r;

        r = pmugate_status_get(c, &s);
        if (r < 0)
                return cli_report("pmugatectl", c, r, "status");

        printf("Server:    %s (%s backend, %s mode)\n", s->server, s->backend, s->mode);
        if (s->config[0])
                printf("Config:    %s\n", s->config);
        printf("Clients:   %zu connected\n", s->n_clients);
        for (size_t i = 0; i < s->n_clients; i++)
                printf("  %-22s pid %-8" PRId32 " role %-7s requests %" PRIu64 "\n",
                       user_text(s->clients[i].uid, user, sizeof(user)), s->clients[i].pid, s->clients[i].role,
                       s->clients[i].requests);
        printf("Grants:    %zu\n", s->n_grants);
        for (size_t i = 0; i < s->n_grants; i++)
                printf("  job %-12s %-22s CPUs %s\n", s->grants[i].job, user_text(s->grants[i].uid, user, sizeof(user)),
                       s->grants[i].cpus[0] ? s->grants[i].cpus : "(from the job's cgroup)");
        printf("Leases:    %zu\n", s->n_leases);
        for (size_t i = 0; i < s->n_leases; i++)
                printf("  cpu %-4" PRIu32 " %-22s pid %-8" PRId32 " role %-7s job %-10s %" PRIu64
                       " registers to restore\n",
                       s->leases[i].cpu, user_text(s->leases[i].uid, user, sizeof(user)), s->leases[i].pid,
                       s->leases[i].role, s->leases[i].job[0] ? s->leases[i].job : "-", s->leases[i].registers);
        if (s->omitted > 0)
                printf("Omitted:   %" PRIu64 " more clients, grants or leases than one status reply holds\n",
                       s->omitted);
        printf("Foreign:   %s; fixed counters 0x%" PRIx64 ", general-purpose counters 0x%" PRIx64 "\n",
               s->nmi_watchdog ? "NMI watchdog on" : "NMI watchdog off", s->foreign_fixed_mask, s->foreign_gp_mask);
        if (s->foreign_l3_mask || s->foreign_df_mask || s->n_foreign_units > 0)
                printf("           kernel uncore: L3 counters 0x%" PRIx64 ", data-fabric counters 0x%" PRIx64
                       ", %zu memory-controller channels\n", s->foreign_l3_mask, s->foreign_df_mask,
                       s->n_foreign_units);
        printf("Requests:  %" PRIu64 " (%" PRIu64 " register ops), %" PRIu64 " denials, %" PRIu64 " protocol errors\n",
               s->requests, s->ops, s->denials, s->protocol_errors);
        printf("Connections: %" PRIu64 " accepted, %" PRIu64 " refused\n", s->connections, s->refused_connections);
        printf("Audit:     %s, %" PRIu64 " records, %" PRIu64 " held back by the rate limit\n", s->audit_sink,
               s->audit_emitted, s->audit_suppressed);
        pmugate_status_free(s);
        return 0;
}

static int verb_jobmap(pmugate *c) {
        pmugate_jobmap *m = NULL;
        int r;

        r = pmugate_jobmap_get(c, &m);
        if (r < 0)
                return cli_report("pmugatectl", c, r, "jobmap");
        printf("Jobs:      %zu holding CPUs (%s mode)\n", m->n_jobs, m->mode);
        for (size_t i = 0; i < m->n_cpus; i++) {
                uint32_t k = m->cpus[i].job;

                printf("  cpu %-4" PRIu32 " job %s", m->cpus[i].cpu, m->jobs[k]);
                if (m->uids)
                        printf(" uid %" PRIu32, m->uids[k]);
                putchar('\n');
        }
        printf("Leases:    %zu\n", m->n_leases);
        for (size_t i = 0; i < m->n_leases; i++)
                printf("  cpu %-4" PRIu32 " role %s\n", m->leases[i].cpu, m->leases[i].role);
        pmugate_jobmap_free(m);
        return 0;
}

static int parse_uid(const char *s, uint32_t *ret) {
        struct passwd *pw;
        uint64_t v;

        if (cli_parse_u64(s, &v) == 0) {
                if (v >= UINT32_MAX)
                        return -ERANGE;
                *ret = (uint32_t) v;
                return 0;
        }
        pw = getpwnam(s);
        if (!pw)
                return -ENOENT;
        *ret = pw->pw_uid;
        return 0;
}

typedef struct Args {
        const char *job;
        const char *uid;
        const char *cpus;
        const char *dir;
        const char *name;
        bool lbr;
} Args;

#define ARGS_DONE 1     /* --help was shown */

static int parse_args(int argc, char *argv[], Args *ret) {
        static const struct option options[] = {
                { "job", required_argument, NULL, 'j' },
                { "uid", required_argument, NULL, 'u' },
                { "cpus", required_argument, NULL, 'c' },
                { "dir", required_argument, NULL, 'd' },
                { "name", required_argument, NULL, 'n' },
                { "lbr", no_argument, NULL, 'L' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        Args a = {};
        int opt;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, "j:u:c:d:n:h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help_verb(argv[0]);
                        return ARGS_DONE;
                case 'j':
                        a.job = optarg;
                        break;
                case 'u':
                        a.uid = optarg;
                        break;
                case 'c':
                        a.cpus = optarg;
                        break;
                case 'd':
                        a.dir = optarg;
                        break;
                case 'n':
                        a.name = optarg;
                        break;
                case 'L':
                        a.lbr = true;
                        break;
                default:
                        return cli_unknown_option("pmugatectl", argv[0], argv, opt);
                }
        if (optind < argc) {
                fprintf(stderr, "pmugatectl: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        *ret = a;
        return 0;
}

static int parse_cpus_arg(const char *text, uint32_t **ret, size_t *ret_n) {
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (!text)
                return 0;
        r = cpulist_parse(text, PMUGATE_CPUS_MAX, ret, ret_n);
        if (r < 0)
                fprintf(stderr, "pmugatectl: bad CPU list '%s'\n", text);
        return r;
}

static int verb_grant(pmugate *c, const Args *a) {
        _cleanup_free_ uint32_t *cpus = NULL;
        size_t n;
        char user[64 + 32], mode[16];
        uint32_t uid;
        bool replaced;
        int r;

        if (!a->job || !a->uid) {
                fprintf(stderr, "pmugatectl: grant needs --job ID and --uid UID\n");
                return 2;
        }
        if (parse_uid(a->uid, &uid) < 0) {
                fprintf(stderr, "pmugatectl: unknown user '%s'\n", a->uid);
                return 2;
        }
        if (parse_cpus_arg(a->cpus, &cpus, &n) < 0)
                return 2;
        r = pmugate_grant_with_lbr(c, a->job, uid, cpus, n, a->lbr, &replaced);
        if (r < 0)
                return cli_report("pmugatectl", c, r, "grant");
        printf("granted job %s to %s on %s%s%s%s\n", a->job, user_text(uid, user, sizeof(user)),
               cpus_word(a->cpus, n), a->cpus ? a->cpus : "the job's CPUs", a->lbr ? " with class lbr" : "",
               replaced ? " (replaced the earlier grant)" : "");
        daemon_mode(c, mode, sizeof(mode));
        if (strcmp(mode, "open") == 0)
                fprintf(stderr,
                        "pmugatectl: note: pmugated runs in open mode, where grants have no effect: every user "
                        "may already measure; it is kept for when mode = job\n");
        return 0;
}

static int verb_revoke(pmugate *c, const Args *a) {
        bool revoked;
        int r;

        if (!a->job) {
                fprintf(stderr, "pmugatectl: revoke needs --job ID, the job whose grant ends ('pmugatectl status' "
                        "lists the grants)\n");
                return 2;
        }
        if (a->uid || a->cpus) {
                fprintf(stderr, "pmugatectl: revoke takes only --job ID: a job's grant ends whole\n");
                return 2;
        }
        r = pmugate_revoke(c, a->job, &revoked);
        if (r < 0)
                return cli_report("pmugatectl", c, r, "revoke");
        printf(revoked ? "revoked job %s\n" : "job %s had no grant; nothing to revoke\n", a->job);
        return 0;
}

static int verb_reset(pmugate *c, const Args *a) {
        _cleanup_free_ uint32_t *cpus = NULL;
        size_t n;
        int r;

        if (a->job || a->uid) {
                fprintf(stderr, "pmugatectl: reset takes only -c CPUS\n");
                return 2;
        }
        if (parse_cpus_arg(a->cpus, &cpus, &n) < 0)
                return 2;
        r = pmugate_reset(c, cpus, n);
        if (r < 0)
                return cli_report("pmugatectl", c, r, "reset");
        printf("reset the PMU of %s%s\n", cpus_word(a->cpus, n), a->cpus ? a->cpus : "every CPU");
        return 0;
}

/* Standard input, whole, up to PMUGATE_JOB_SUMMARY_SIZE_MAX bytes. */
static int read_input(char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;

        buf = malloc(PMUGATE_JOB_SUMMARY_SIZE_MAX + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf + size, PMUGATE_JOB_SUMMARY_SIZE_MAX + 1 - size);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > PMUGATE_JOB_SUMMARY_SIZE_MAX)
                        return -EFBIG;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/* Root writes the file in a directory users may be able to write into: through the checked
 * directory's fd, never following or reusing what another user put there. */
static int verb_save_summary(const Args *a) {
        _cleanup_close_ int dir_fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        char reason[512] = "";
        size_t size;
        int r;

        if (!a->dir || !a->name || a->job || a->uid || a->cpus) {
                fprintf(stderr, "pmugatectl: save-summary takes --dir DIR and --name NAME\n");
                return 2;
        }
        r = read_input(&data, &size);
        if (r == -EFBIG) {
                fprintf(stderr, "pmugatectl: save-summary: the input is larger than %u bytes; not written\n",
                        PMUGATE_JOB_SUMMARY_SIZE_MAX);
                return 1;
        }
        if (r < 0) {
                fprintf(stderr, "pmugatectl: save-summary: reading standard input: %s\n", strerror(-r));
                return 1;
        }
        if (size == 0) {
                fprintf(stderr, "pmugatectl: save-summary: the input is empty; not written\n");
                return 1;
        }
        r = trusted_dir_open(a->dir, &dir_fd, reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugatectl: save-summary: refusing %s: %s\n", a->dir,
                        reason[0] ? reason : strerror(-r));
                return 1;
        }
        r = file_replace_at(dir_fd, a->name, data, size, 0644, reason, sizeof(reason));
        if (r < 0) {
                fprintf(stderr, "pmugatectl: save-summary: %s: %s\n", a->dir,
                        reason[0] ? reason : strerror(-r));
                return 1;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "socket", required_argument, NULL, 's' },
                {}
        };
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        const char *verb;
        Args a = {};
        int opt, r;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("pmugatectl %s\n", PMUGATE_VERSION);
                        return 0;
                case 's':
                        arg_socket = optarg;
                        break;
                default:
                        (void) cli_unknown_option("pmugatectl", NULL, argv, opt);
                        return 2;
                }
        if (optind >= argc) {
                help();
                return 2;
        }
        verb = argv[optind];
        if (strcmp(verb, "status") != 0 && strcmp(verb, "grant") != 0 && strcmp(verb, "revoke") != 0 &&
            strcmp(verb, "reset") != 0 && strcmp(verb, "reload") != 0 && strcmp(verb, "jobmap") != 0 &&
            strcmp(verb, "save-summary") != 0) {
                fprintf(stderr, "pmugatectl: unknown command '%s' (see 'pmugatectl --help')\n", verb);
                return 2;
        }
        argc -= optind;
        argv += optind;
        optind = 0;
        r = parse_args(argc, argv, &a);
        if (r != 0)
                return r == ARGS_DONE ? 0 : 2;
        if ((strcmp(verb, "status") == 0 || strcmp(verb, "reload") == 0 || strcmp(verb, "jobmap") == 0) &&
            (a.job || a.uid || a.cpus || a.dir || a.name)) {
                fprintf(stderr, "pmugatectl: %s takes no options\n", verb);
                return 2;
        }
        if (strcmp(verb, "save-summary") == 0)
                return verb_save_summary(&a);
        if (a.dir || a.name) {
                fprintf(stderr, "pmugatectl: --dir and --name are for save-summary\n");
                return 2;
        }

        r = cli_connect(arg_socket, &c);
        if (r < 0)
                return 1;
        if (strcmp(verb, "status") == 0)
                return verb_status(c);
        if (strcmp(verb, "grant") == 0)
                return verb_grant(c, &a);
        if (strcmp(verb, "revoke") == 0)
                return verb_revoke(c, &a);
        if (strcmp(verb, "reset") == 0)
                return verb_reset(c, &a);
        if (strcmp(verb, "jobmap") == 0)
                return verb_jobmap(c);
        r = pmugate_reload(c);
        if (r < 0)
                return cli_report("pmugatectl", c, r, "reload");
        return report_reload(c);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-perf-opener: the perf opener as a service of its own. pmugated's system-call filter
 * leaves perf_event_open out; this program's unit (pmugate-perf-opener.service) admits it, and
 * runs it as the daemon's user with CAP_PERFMON alone. It serves one connection at a time on
 * the socket systemd passes it, only from its own user, with the forked opener's messages.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "backend/machine.h"
#include "backend/perf-catalog.h"
#include "backend/perf-opener.h"
#include "build-config.h"
#include "log.h"
#include "perf/perf-attr.h"

static void help(void) {
        printf("Usage: pmugate-perf-opener [OPTIONS]\n"
               "\n"
               "Open perf events for pmugated on the socket systemd passes (pmugate-perf-opener.socket).\n"
               "Run as pmugated's user with CAP_PERFMON alone; serves only that user.\n"
               "\n"
               "  -h --help                 Show this help\n"
               "     --version              Show the version\n"
               "  -v --verbose              Log debug messages\n");
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "verbose", no_argument, NULL, 'v' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("pmugate-perf-opener %s\n", PMUGATE_VERSION);
                        return 0;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument '%s'", argv[optind]);
        return 1;
}

/* The attr types this kernel's catalogue has, read here rather than taken from the daemon: the
 * opener's check must not depend on what its client says. Without the CPU topology the uncore
 * PMUs (whose package comes from it) are left out and the rest is still read. */
static int read_allowed_types(uint32_t **ret, size_t *ret_n) {
        Machine *m = NULL;
        PerfCatalog *c = NULL;
        uint32_t *types;
        int r;

        r = machine_discover("/", &m);
        if (r < 0) {
                log_warning_errno(r, "Cannot read this machine's CPU topology: uncore perf events are not admitted");
                m = machine_new();
                if (!m)
                        return log_error_errno(ENOMEM, "Cannot allocate the machine");
        }
        r = perf_catalog_read_sysfs("/", m, &c);
        machine_free(m);
        if (r < 0)
                return log_error_errno(r, "Cannot read the kernel's PMUs from /sys/bus/event_source/devices");
        types = calloc(c->n_pmus ? c->n_pmus : 1, sizeof(*types));
        if (!types) {
                perf_catalog_free(c);
                return log_error_errno(ENOMEM, "Cannot allocate the PMU types");
        }
        for (size_t i = 0; i < c->n_pmus; i++) {
                types[i] = c->pmus[i].type;
                log_debug("Admitting events of PMU %s (type %u)", c->pmus[i].name, c->pmus[i].type);
        }
        *ret_n = c->n_pmus;
        *ret = types;
        perf_catalog_free(c);
        return 0;
}

/* systemd's User= gives the service its user's groups from the group database (initgroups(3)),
 * its own group among them, and the opener holds no CAP_SETGID to clear them. Its own group adds
 * nothing to its gid; any other would be access nobody asked for, so it refuses to start. */
static int check_groups(gid_t own) {
        _cleanup_free_ gid_t *groups = NULL;
        int n;

        n = getgroups(0, NULL);
        if (n < 0)
                return log_error_errno(errno, "Cannot read the supplementary groups");
        if (n == 0)
                return 0;
        groups = calloc((size_t) n, sizeof(*groups));
        if (!groups)
                return log_error_errno(ENOMEM, "Cannot allocate the supplementary groups");
        n = getgroups(n, groups);
        if (n < 0)
                return log_error_errno(errno, "Cannot read the supplementary groups");
        for (int i = 0; i < n; i++)
                if (groups[i] != own)
                        return log_error_errno(EPERM, "Refusing to run with supplementary group %u: the "
                                               "opener's user must be in no group but its own (gid %u)",
                                               (unsigned) groups[i], (unsigned) own);
        return 0;
}

static int listen_fd(void) {
        int n, r;

        n = sd_listen_fds(true);
        if (n < 0)
                return log_error_errno(n, "sd_listen_fds() failed");
        if (n != 1)
                return log_error_errno(EINVAL, "Expected one socket from systemd, got %d: pmugate-perf-opener runs "
                                       "under pmugate-perf-opener.socket", n);
        r = sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_SEQPACKET, 1, NULL, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot inspect the socket passed by systemd");
        if (r == 0)
                return log_error_errno(EINVAL, "The socket passed by systemd is not a listening SOCK_SEQPACKET unix socket");
        return SD_LISTEN_FDS_START;
}

/* One connection at a time: pmugated holds one for its lifetime, and a second one waits in the
 * listen backlog until the first ends. */
static int serve(int listen, const uint32_t *types, size_t n_types) {
        uid_t self = geteuid();

        for (;;) {
                struct ucred cred;
                socklen_t len = sizeof(cred);
                int fd, r;

                fd = accept4(listen, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        return log_error_errno(errno, "Cannot accept a connection");
                }
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                        log_warning_errno(errno, "Refusing a connection whose peer is unknown");
                        (void) close(fd);
                        continue;
                }
                if (cred.uid != self) {
                        log_warning("Refusing a connection from uid %u (process %d): only pmugated's user, uid %u, "
                                    "is served", (unsigned) cred.uid, (int) cred.pid, (unsigned) self);
                        (void) close(fd);
                        continue;
                }
                log_info("Serving pmugated (process %d)", (int) cred.pid);
                r = perf_opener_serve(fd, perf_attr_verify, types, n_types);
                (void) close(fd);
                if (r < 0)
                        log_warning_errno(r, "The connection of process %d ended", (int) cred.pid);
                else
                        log_info("pmugated (process %d) closed its connection", (int) cred.pid);
        }
}

static int run(int argc, char *argv[]) {
        _cleanup_free_ uint32_t *types = NULL;
        size_t n_types = 0;
        uint64_t keep = 0;
        bool bounded;
        int fd, r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        if (geteuid() == 0 || getuid() == 0)
                return log_error_errno(EPERM, "Refusing to run as root: run as pmugated's user with CAP_PERFMON, as "
                                       "pmugate-perf-opener.service does");
        r = check_groups(getegid());
        if (r < 0)
                return r;
        fd = listen_fd();
        if (fd < 0)
                return fd;
        /* Read before the drop: a capability missing from the bounding set was withheld by
         * whatever started the unit's manager (a container, as systemd-nspawn's defaults do). */
        bounded = prctl(PR_CAPBSET_READ, CAP_PERFMON, 0, 0, 0) > 0;
        r = perf_opener_drop_privileges(geteuid(), getegid(), &keep);
        if (r < 0)
                return r;
        if (keep == 0)
                log_notice("Perf opener runs without CAP_PERFMON%s: it opens only what "
                           "/proc/sys/kernel/perf_event_paranoid allows its user",
                           bounded ? "" : " (not in its bounding set: what started it, or the "
                                          "container it runs in, withholds it)");
        r = read_allowed_types(&types, &n_types);
        if (r < 0)
                return r;
        log_info("Perf opener ready (uid %u, %s, %zu PMU types)", (unsigned) geteuid(),
                 keep ? "CAP_PERFMON alone" : "no capability", n_types);
        return serve(fd, types, n_types);
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

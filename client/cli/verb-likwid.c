/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate likwid: runs a LIKWID command with pmugate's access daemon in its place
 *
 * LIKWID 5.2 finds its access daemon as the first likwid-accessD on PATH (it ignores the
 * daemon_path of its configuration file). The command runs with a private directory in front
 * of PATH whose likwid-accessD is pmugate's forwarder; the forwarder reads PMUGATE_SOCKET
 * from the environment of the LIKWID process that starts it.
 *
 * The directory is also the run's (PMUGATE_LIKWID_RUN, likwid/likwid-share.h): in marker mode
 * the measured program's liblikwid starts a second forwarder, which joins the first one's
 * session there, and a forwarder that could not count leaves the reason there, so that a run
 * whose counts are void fails instead of exiting 0 with LIKWID's zeros.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build-config.h"
#include "cli/verb-likwid.h"
#include "likwid/likwid-share.h"
#include "macro.h"
#include "pmugate-limits.h"

#define FORWARDER_NAME "pmugate-likwid-accessD"

static void help(void) {
        printf("Usage: pmugate likwid [--forwarder=PATH] -- LIKWID-COMMAND [ARGS...]\n"
               "\n"
               "Runs a LIKWID tool (likwid-perfctr, likwid-powermeter, ...) with every register access\n"
               "going through pmugated under your own rights, for example:\n"
               "  pmugate likwid -- likwid-perfctr -C 0-3 -g FLOPS_DP -- ./app\n"
               "Everything LIKWID programmed is put back when it ends, even when it is killed.\n"
               "\n"
               "  --forwarder=PATH   The access daemon to use (default: %s)\n"
               "  PMUGATE_LIKWID_VERBOSE=1 in the environment reports every register pmugated refused.\n"
               "  PMUGATE_LIKWID_VERSION=5.x names LIKWID's release when its library name does not.\n"
               "Marker mode (likwid-perfctr -m) works: the program's own access daemon joins the run's.\n"
               "Exits 1 when LIKWID exited 0 but its counts are void (a lease refused, an unknown\n"
               "LIKWID release, counters not served), saying why.\n",
               PMUGATE_LIKWID_ACCESSD);
}

static void remove_dir(char *dir, char *link) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (link[0])
                (void) unlink(link);
        if (fd >= 0) {
                (void) unlinkat(fd, LIKWID_SHARE_NAME, 0);
                (void) unlinkat(fd, LIKWID_VOID_NAME, 0);
        }
        (void) rmdir(dir);
}

/* LIKWID prints the counts it read and exits 0 even when its access daemon could not program
 * them: the forwarders' reason makes the run fail. */
static int check_void(const char *dir, int status) {
        char reason[PMUGATE_LIKWID_VOID_REASON_MAX + 1];
        _cleanup_close_ int fd = -1;

        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || likwid_run_void_reason(fd, reason, sizeof(reason)) <= 0)
                return status;
        fprintf(stderr, "pmugate: likwid: LIKWID's counts are void: %s\n", reason[0] ? reason : "(no reason given)");
        return status != 0 ? status : 1;
}

int verb_likwid(int argc, char *argv[], const char *socket_path) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "forwarder", required_argument, NULL, 'f' },
                {}
        };
        const char *forwarder = getenv("PMUGATE_LIKWID_ACCESSD");
        _cleanup_free_ char *path = NULL;
        char dir[] = "/tmp/pmugate-likwid-XXXXXX", link[sizeof(dir) + 32] = "";
        const char *old_path = getenv("PATH");
        int opt, status;
        pid_t pid;

        while ((opt = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case 'f':
                        forwarder = optarg;
                        break;
                default:
                        return 2;
                }
        if (optind >= argc) {
                fprintf(stderr, "pmugate: likwid: give the LIKWID command after --\n");
                return 2;
        }
        if (!forwarder || !forwarder[0])
                forwarder = PMUGATE_LIKWID_ACCESSD;
        if (forwarder[0] != '/' || access(forwarder, X_OK) < 0) {
                fprintf(stderr, "pmugate: likwid: the access daemon %s is not an executable absolute "
                        "path: %s\n", forwarder, forwarder[0] == '/' ? strerror(errno) : "relative path");
                return 1;
        }
        if (!mkdtemp(dir)) {
                fprintf(stderr, "pmugate: likwid: cannot create a directory in /tmp: %s\n", strerror(errno));
                return 1;
        }
        (void) snprintf(link, sizeof(link), "%s/likwid-accessD", dir);
        if (symlink(forwarder, link) < 0) {
                fprintf(stderr, "pmugate: likwid: %s: %s\n", link, strerror(errno));
                link[0] = '\0';
                remove_dir(dir, link);
                return 1;
        }
        if (asprintf(&path, "%s%s%s", dir, old_path && old_path[0] ? ":" : "", old_path ?: "") < 0) {
                path = NULL;
                remove_dir(dir, link);
                return 1;
        }
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "pmugate: likwid: fork: %s\n", strerror(errno));
                remove_dir(dir, link);
                return 1;
        }
        if (pid == 0) {
                if (setenv("PATH", path, 1) < 0 || setenv(LIKWID_RUN_ENV, dir, 1) < 0 ||
                    (socket_path && setenv("PMUGATE_SOCKET", socket_path, 1) < 0))
                        _exit(127);
                execvp(argv[optind], argv + optind);
                fprintf(stderr, "pmugate: likwid: %s: %s\n", argv[optind], strerror(errno));
                _exit(errno == ENOENT ? 127 : 126);
        }
        /* The terminal's signals reach LIKWID directly; wait for it and keep its status. */
        (void) signal(SIGINT, SIG_IGN);
        (void) signal(SIGQUIT, SIG_IGN);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        remove_dir(dir, link);
                        return 1;
                }
        status = check_void(dir, WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
        remove_dir(dir, link);
        return status;
}

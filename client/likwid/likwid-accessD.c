/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-likwid-accessD: LIKWID's access daemon, forwarding to pmugated as the calling user
 *
 * LIKWID starts its access daemon with fork() and execve() of the program it finds as
 * likwid-accessD, with no arguments and an empty environment, then connects to
 * /tmp/likwid-<daemon pid>. This program listens there, serves the one connection and exits
 * when LIKWID sends EXIT or goes away. It holds no privilege: every register access is a
 * request to pmugated under the user's own rights, and closing that connection (however this
 * program ends) makes pmugated put back everything LIKWID programmed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "build-config.h"
#include "likwid/likwid-forward.h"
#include "macro.h"

#define PROG "pmugate-likwid-accessD"
/* LIKWID's LIKWIDSOCKETBASE, compiled into its library. */
#define LIKWID_SOCKET_FORMAT "/tmp/likwid-%d"
/* LIKWID's own daemon gives up after 15 s without a client. */
#define ACCEPT_TIMEOUT_MS_DEFAULT 15000
/* How long collected writes wait for LIKWID's next record before they run on their own. */
#define COALESCE_MS 2
/* The largest parent environment read; LIKWID's is far smaller. */
#define PARENT_ENVIRON_MAX (1U << 20)

static char socket_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];

static void help(void) {
        printf("Usage: %s [--socket=PATH] [--verbose] [--accept-timeout=MS]\n"
               "\n"
               "LIKWID's access daemon, forwarding every register access to pmugated under the\n"
               "caller's own rights. LIKWID starts it; run LIKWID with 'pmugate likwid -- CMD' or see\n"
               "the README section \"Using LIKWID's tools\" for a site-wide set-up.\n"
               "\n"
               "The pmugated socket is --socket, else $PMUGATE_SOCKET of this program or, since LIKWID\n"
               "starts it with an empty environment, of the LIKWID process that started it, else %s.\n"
               "PMUGATE_LIKWID_VERBOSE=1 there (or --verbose) reports every refused register.\n",
               PROG, PMUGATE_DEFAULT_SOCKET);
}

/* Looks name up in the environment LIKWID itself was started with: LIKWID hands its daemon an
 * empty one. The parent is the user's own process; the value is still checked by its user. */
static char *parent_environment(const char *name) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -1;
        char path[64];
        size_t len = 0, n = strlen(name);
        ssize_t k;

        (void) snprintf(path, sizeof(path), "/proc/%d/environ", (int) getppid());
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return NULL;
        buf = malloc(PARENT_ENVIRON_MAX + 1);
        if (!buf)
                return NULL;
        while (len < PARENT_ENVIRON_MAX && (k = read(fd, buf + len, PARENT_ENVIRON_MAX - len)) > 0)
                len += (size_t) k;
        buf[len] = '\0';
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
                if (strncmp(buf + i, name, n) == 0 && buf[i + n] == '=')
                        return strdup(buf + i + n + 1);
        return NULL;
}

static char *setting(const char *name) {
        const char *v = getenv(name);

        return v ? strdup(v) : parent_environment(name);
}

static int listen_socket(int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        (void) snprintf(socket_path, sizeof(socket_path), LIKWID_SOCKET_FORMAT, (int) getpid());
        memcpy(sa.sun_path, socket_path, sizeof(sa.sun_path));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* Only the user who started LIKWID may connect: the socket is born 0600. */
        (void) umask(0077);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                socket_path[0] = '\0'; /* not ours to remove */
                return -errno;
        }
        /* As LIKWID's own daemon leaves it: read and write for the owner only. */
        if (listen(fd, 1) < 0 || chmod(socket_path, 0600) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static void remove_socket(void) {
        if (socket_path[0])
                (void) unlink(socket_path);
        socket_path[0] = '\0';
}

static int accept_client(int listen_fd, int timeout_ms, int *ret_fd) {
        struct pollfd p = { .fd = listen_fd, .events = POLLIN };
        struct ucred cred;
        socklen_t len = sizeof(cred);
        _cleanup_close_ int fd = -1;
        int r;

        do
                r = poll(&p, 1, timeout_ms);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        if (r == 0)
                return -ETIMEDOUT;
        fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return -errno;
        if (cred.uid != getuid())
                return -EPERM;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* 1 with a record, 0 at a clean end of the stream, negative on error or a partial record. */
static int read_record(int fd, LikwidRecord *rec) {
        size_t got = 0;

        while (got < sizeof(*rec)) {
                ssize_t k = read(fd, (char *) rec + got, sizeof(*rec) - got);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return got == 0 ? 0 : -EBADMSG;
                got += (size_t) k;
        }
        return 1;
}

static int write_record(int fd, const LikwidRecord *rec) {
        size_t put = 0;

        while (put < sizeof(*rec)) {
                ssize_t k = write(fd, (const char *) rec + put, sizeof(*rec) - put);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                put += (size_t) k;
        }
        return 0;
}

/* True when LIKWID sent nothing within the coalescing window. */
static bool client_idle(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, COALESCE_MS) == 0;
}

static int serve(LikwidForwarder *f, int fd) {
        LikwidRecord rec;
        int r;

        for (;;) {
                r = read_record(fd, &rec);
                if (r == -EBADMSG)
                        fprintf(stderr, PROG ": LIKWID sent a partial record; ending the session\n");
                if (r <= 0)
                        return r;
                r = likwid_forwarder_handle(f, &rec);
                if (r <= 0)
                        return r;
                r = write_record(fd, &rec);
                if (r < 0)
                        return r;
                if (likwid_forwarder_has_pending(f) && client_idle(fd))
                        likwid_forwarder_flush(f);
        }
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "socket", required_argument, NULL, 's' },
                { "verbose", no_argument, NULL, 'v' },
                { "accept-timeout", required_argument, NULL, 't' },
                {}
        };
        _cleanup_free_ char *pmugate_socket = NULL, *verbose_setting = NULL;
        _cleanup_close_ int listen_fd = -1, fd = -1;
        LikwidForwarder *f = NULL;
        int timeout_ms = ACCEPT_TIMEOUT_MS_DEFAULT, opt, r;
        bool verbose = false;
        pmugate *c = NULL;
        char *end;

        /* LIKWID passes no arguments at all, not even a program name. */
        while (argc > 1 && (opt = getopt_long(argc, argv, "hv", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("%s %s\n", PROG, PMUGATE_VERSION);
                        return 0;
                case 's':
                        free(pmugate_socket);
                        pmugate_socket = strdup(optarg);
                        if (!pmugate_socket)
                                return 1;
                        break;
                case 'v':
                        verbose = true;
                        break;
                case 't':
                        errno = 0;
                        long v = strtol(optarg, &end, 10);
                        if (errno || *end || end == optarg || v < 1 || v > 3600000) {
                                fprintf(stderr, PROG ": --accept-timeout: milliseconds, 1-3600000\n");
                                return 2;
                        }
                        timeout_ms = (int) v;
                        break;
                default:
                        return 2;
                }
        if (argc > 1 && optind < argc) {
                fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
                return 2;
        }
        (void) signal(SIGPIPE, SIG_IGN);
        if (!pmugate_socket)
                pmugate_socket = setting("PMUGATE_SOCKET");
        verbose_setting = setting("PMUGATE_LIKWID_VERBOSE");
        verbose = verbose || (verbose_setting && strcmp(verbose_setting, "1") == 0);

        /* The socket comes first: LIKWID waits for it to appear. */
        r = listen_socket(&listen_fd);
        if (r < 0) {
                fprintf(stderr, PROG ": cannot listen on %s: %s\n",
                        socket_path[0] ? socket_path : "/tmp/likwid-PID", strerror(-r));
                remove_socket();
                return 1;
        }
        r = pmugate_connect(pmugate_socket && pmugate_socket[0] ? pmugate_socket : NULL, &c);
        if (r < 0) {
                fprintf(stderr, PROG ": cannot reach pmugated at %s: %s; every register access will be "
                        "refused\n",
                        pmugate_socket && pmugate_socket[0] ? pmugate_socket : PMUGATE_DEFAULT_SOCKET,
                        pmugate_strerror(r));
                c = NULL;
        }
        r = likwid_forwarder_new(c, stderr, PROG, verbose, &f);
        if (r < 0) {
                remove_socket();
                fprintf(stderr, PROG ": %s\n", strerror(-r));
                return 1;
        }
        r = accept_client(listen_fd, timeout_ms, &fd);
        remove_socket();
        if (r < 0) {
                fprintf(stderr, PROG ": %s\n", r == -ETIMEDOUT ? "no client connected in time" :
                        r == -EPERM ? "refused a client of another user" : strerror(-r));
                likwid_forwarder_free(f);
                return 1;
        }
        r = serve(f, fd);
        likwid_forwarder_flush(f);
        if (verbose) {
                const LikwidStats *st = likwid_forwarder_stats(f);

                fprintf(stderr, PROG ": %" PRIu64 " records (%" PRIu64 " reads, %" PRIu64 " writes, %"
                        PRIu64 " checks) in %" PRIu64 " batches; %" PRIu64 " writes collected, %" PRIu64
                        " refused, %" PRIu64 " answered without the hardware\n", st->records, st->reads,
                        st->writes, st->checks, st->batches, st->deferred, st->refused, st->switch_offs);
        }
        /* Closing the connection ends the lease: pmugated restores what LIKWID wrote. */
        likwid_forwarder_free(f);
        if (r < 0 && r != -ECONNRESET) {
                fprintf(stderr, PROG ": %s\n", strerror(-r));
                return 1;
        }
        return 0;
}

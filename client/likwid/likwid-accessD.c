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
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "build-config.h"
#include "likwid/likwid-forward.h"
#include "likwid/likwid-map.h"
#include "likwid/likwid-share.h"
#include "macro.h"
#include "pmugate-limits.h"

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
/* The LIKWID process that started this forwarder, taken at start: should it die, the parent
 * becomes some reaper, whose descendants are not the measurement's. */
static pid_t likwid_pid;

static void help(void) {
        printf("Usage: %s [--socket=PATH] [--verbose] [--accept-timeout=MS]\n"
               "\n"
               "LIKWID's access daemon, forwarding every register access to pmugated under the\n"
               "caller's own rights. LIKWID starts it; run LIKWID with 'pmugate likwid -- CMD' or see\n"
               "the README section \"Using LIKWID's tools\" for a site-wide set-up.\n"
               "\n"
               "The pmugated socket is --socket, else $PMUGATE_SOCKET of this program or, since LIKWID\n"
               "starts it with an empty environment, of the LIKWID process that started it, else %s.\n"
               "PMUGATE_LIKWID_VERBOSE=1 there (or --verbose) reports every refused register.\n"
               "LIKWID's release (5.2, 5.3, 5.4: their device numbers differ) is that of the liblikwid.so.X.Y\n"
               "the starting process mapped, or $PMUGATE_LIKWID_VERSION; another release is refused.\n"
               "In a run of 'pmugate likwid' ($PMUGATE_LIKWID_RUN) a later forwarder joins the first one's\n"
               "session (LIKWID's marker mode).\n",
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

static char *setting(const char *name);

/* The LIKWID release of the process that started this forwarder: PMUGATE_LIKWID_VERSION when
 * set (for a LIKWID run from its build tree, whose library name has no version), else the
 * version in the name of the liblikwid it mapped. found gets what was seen, for messages. */
static LikwidVersion client_version(char *found, size_t size) {
        _cleanup_free_ char *forced = setting("PMUGATE_LIKWID_VERSION"), *buf = NULL;
        _cleanup_close_ int fd = -1;
        char path[64], seen[40];
        LikwidVersion v;
        size_t len = 0;
        ssize_t k;

        if (forced && forced[0]) {
                (void) snprintf(found, size, "PMUGATE_LIKWID_VERSION=%.32s", forced);
                return likwid_version_parse(forced);
        }
        (void) snprintf(found, size, "no liblikwid.so.X.Y in its memory map");
        (void) snprintf(path, sizeof(path), "/proc/%d/maps", (int) likwid_pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        buf = malloc(PMUGATE_LIKWID_MAPS_MAX + 1);
        if (fd < 0 || !buf)
                return LIKWID_VERSION_UNKNOWN;
        while (len < PMUGATE_LIKWID_MAPS_MAX && (k = read(fd, buf + len, PMUGATE_LIKWID_MAPS_MAX - len)) > 0)
                len += (size_t) k;
        buf[len] = '\0';
        v = likwid_version_from_maps(buf, seen, sizeof(seen));
        if (seen[0])
                (void) snprintf(found, size, "liblikwid.so.%s", seen);
        return v;
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

/* The share socket this forwarder listens on, when it is the run's first: nobody joins once
 * its LIKWID is done. */
static void remove_share(int run_fd, int share_fd) {
        if (run_fd >= 0 && share_fd >= 0)
                (void) unlinkat(run_fd, LIKWID_SHARE_NAME, 0);
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

/* The LIKWID processes one forwarder serves: the one that started it, and in marker mode the
 * measured programs' own liblikwid, each through the forwarder its program started (joined). */
typedef struct Clients {
        struct pollfd fds[2 + PMUGATE_LIKWID_JOINED_MAX];
        size_t n;
} Clients;

enum { CLIENT_LIKWID = 0, CLIENT_SHARE = 1, CLIENT_JOINED = 2 };

static void join(Clients *cl, int share_fd) {
        /* A joined forwarder relays one record at a time and waits for its answer; one that
         * stalls mid-record is dropped rather than stall the measurement. */
        struct timeval tv = { .tv_sec = 1 };
        _cleanup_close_ int fd = -1;

        fd = accept4(share_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return;
        if (!likwid_peer_joins(fd, likwid_pid)) {
                fprintf(stderr, PROG ": refused a forwarder that is not of this measurement (another uid, or "
                        "not a descendant of the LIKWID process that started this one)\n");
                return;
        }
        if (cl->n >= ELEMENTSOF(cl->fds)) {
                fprintf(stderr, PROG ": LIKWID started more than %u access daemons in one measurement; refused one, "
                        "its thread's counts are void\n", PMUGATE_LIKWID_JOINED_MAX);
                return;
        }
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        cl->fds[cl->n++] = (struct pollfd) { .fd = TAKE_FD(fd), .events = POLLIN };
}

static void leave(Clients *cl, size_t i) {
        (void) close(cl->fds[i].fd);
        cl->fds[i] = cl->fds[--cl->n];
}

/* Puts the device of LIKWID's record in 5.2's numbers, which the forwarder and a joined
 * forwarder's records use. False for a LIKWID release whose numbers are unknown: a device
 * number could then mean any unit, so nothing is answered but "locked". */
static bool to_forwarder_numbers(LikwidVersion version, LikwidRecord *rec) {
        uint32_t device;
        int r;

        if (rec->type == LIKWID_EXIT)
                return true;
        r = likwid_device_from_version(version, rec->device, &device);
        if (r == -EINVAL)
                return false;
        rec->device = r < 0 ? LIKWID_DEV_UNSERVED : device;
        return true;
}

static void answer_locked(LikwidRecord *rec) {
        rec->errorcode = LIKWID_ERR_LOCKED;
        rec->data = 0;
}

/* Serves one record of the client on fd, whose device numbers are version's: 1 when served, 0
 * when that client is done, negative on error. */
static int serve_one(LikwidForwarder *f, int fd, LikwidVersion version) {
        LikwidRecord rec;
        uint32_t device;
        int r;

        r = read_record(fd, &rec);
        if (r == -EBADMSG)
                fprintf(stderr, PROG ": LIKWID sent a partial record; ending its session\n");
        if (r <= 0)
                return r;
        device = rec.device;
        if (!to_forwarder_numbers(version, &rec))
                answer_locked(&rec);
        else {
                r = likwid_forwarder_handle(f, &rec);
                if (r <= 0)
                        return r;
        }
        rec.device = device;
        r = write_record(fd, &rec);
        return r < 0 ? r : 1;
}

/* Serves LIKWID until it sends EXIT or goes away; the programs that join meanwhile share the
 * session, their EXIT ends only their part. Collected writes run when nobody sent anything
 * within the coalescing window. */
static int serve(LikwidForwarder *f, int fd, int share_fd, LikwidVersion version) {
        Clients cl = {
                .fds = { { .fd = fd, .events = POLLIN }, { .fd = share_fd, .events = POLLIN } },
                .n = 2,
        };
        int r = 0;

        for (;;) {
                int k = poll(cl.fds, cl.n, likwid_forwarder_has_pending(f) ? COALESCE_MS : -1);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                if (k == 0) {
                        likwid_forwarder_flush(f);
                        continue;
                }
                if (cl.fds[CLIENT_LIKWID].revents) {
                        r = serve_one(f, fd, version);
                        if (r <= 0)
                                break;
                }
                if (cl.fds[CLIENT_SHARE].fd >= 0 && cl.fds[CLIENT_SHARE].revents)
                        join(&cl, share_fd);
                for (size_t i = CLIENT_JOINED; i < cl.n; i++)
                        if (cl.fds[i].revents && serve_one(f, cl.fds[i].fd, LIKWID_VERSION_5_2) <= 0)
                                leave(&cl, i--);
        }
        while (cl.n > CLIENT_JOINED)
                leave(&cl, cl.n - 1);
        return r;
}

/* A forwarder that joined the run's first one: LIKWID's records go there unchanged, and its
 * answers come back. Without it every access is "locked", and the counts are void. */
static int relay(int fd, int share_fd, int run_fd, LikwidVersion version) {
        bool lost = false;
        LikwidRecord rec;
        int r;

        for (;;) {
                uint32_t type, device;

                r = read_record(fd, &rec);
                if (r <= 0)
                        break;
                type = rec.type;
                device = rec.device;
                if (!to_forwarder_numbers(version, &rec)) {
                        answer_locked(&rec);
                        rec.device = device;
                        if (type == LIKWID_EXIT || write_record(fd, &rec) < 0)
                                break;
                        continue;
                }
                if (!lost && (write_record(share_fd, &rec) < 0 ||
                              (type != LIKWID_EXIT && read_record(share_fd, &rec) <= 0))) {
                        lost = true;
                        fprintf(stderr, PROG ": lost the access daemon of this measurement's likwid-perfctr; "
                                "LIKWID's counts are void\n");
                        (void) likwid_run_void(run_fd, "the access daemon of the measurement ended before the "
                                               "measured program");
                }
                if (type == LIKWID_EXIT)
                        break;
                if (lost)
                        answer_locked(&rec);
                rec.device = device;
                r = write_record(fd, &rec);
                if (r < 0)
                        break;
        }
        return r == -ECONNRESET ? 0 : r;
}

/* In a run of 'pmugate likwid': joins the run's first forwarder (1 with *ret_share_fd
 * connected to it), or becomes it (0 with *ret_share_fd listening). 0 with -1 outside a run or
 * when the first forwarder is gone (then this one works alone, as outside a run). */
static int share_session(const char *run_dir, int *ret_share_fd) {
        int r;

        *ret_share_fd = -1;
        if (!run_dir)
                return 0;
        for (unsigned attempt = 0; attempt < 2; attempt++) {
                r = likwid_share_connect(run_dir, ret_share_fd);
                if (r >= 0)
                        return 1;
                if (r != -ENOENT)
                        break;
                r = likwid_share_listen(run_dir, ret_share_fd);
                if (r >= 0)
                        return 0;
                if (r != -EADDRINUSE)
                        break;
        }
        fprintf(stderr, PROG ": cannot share the measurement's session (%s); this LIKWID process works alone\n",
                strerror(-r));
        return 0;
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
        _cleanup_free_ char *pmugate_socket = NULL, *verbose_setting = NULL, *run_dir = NULL;
        _cleanup_close_ int listen_fd = -1, fd = -1, run_fd = -1, share_fd = -1;
        LikwidForwarder *f = NULL;
        int timeout_ms = ACCEPT_TIMEOUT_MS_DEFAULT, opt, r;
        bool verbose = false, joined = false;
        char version_seen[PMUGATE_LIKWID_VOID_REASON_MAX / 2], why[PMUGATE_LIKWID_VOID_REASON_MAX];
        LikwidVersion version;
        const char *void_reason;
        pmugate *c = NULL;
        char *end;

        likwid_pid = getppid();
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
        run_dir = setting(LIKWID_RUN_ENV);
        if (run_dir && run_dir[0]) {
                r = likwid_run_dir_open(run_dir, &run_fd);
                if (r < 0)
                        fprintf(stderr, PROG ": ignoring the run directory %s: %s\n", run_dir,
                                r == -EPERM ? "not the caller's own private directory" : strerror(-r));
        }
        if (run_fd < 0) {
                free(run_dir);
                run_dir = NULL;
        }
        version = client_version(version_seen, sizeof(version_seen));
        if (version == LIKWID_VERSION_UNKNOWN) {
                (void) snprintf(why, sizeof(why), "unknown LIKWID release (%s): its device numbers could mean "
                                "any unit, so every access is refused; known: 5.2, 5.3, 5.4 (set "
                                "PMUGATE_LIKWID_VERSION for a LIKWID run from its build tree)", version_seen);
                fprintf(stderr, PROG ": %s\n", why);
                if (run_fd >= 0)
                        (void) likwid_run_void(run_fd, why);
        }
        joined = share_session(run_dir, &share_fd) > 0;
        if (joined) {
                r = accept_client(listen_fd, timeout_ms, &fd);
                remove_socket();
                if (r < 0) {
                        fprintf(stderr, PROG ": %s\n", r == -ETIMEDOUT ? "no client connected in time" :
                                r == -EPERM ? "refused a client of another user" : strerror(-r));
                        return 1;
                }
                r = relay(fd, share_fd, run_fd, version);
                return r < 0 ? 1 : 0;
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
                remove_share(run_fd, share_fd);
                fprintf(stderr, PROG ": %s\n", strerror(-r));
                return 1;
        }
        r = accept_client(listen_fd, timeout_ms, &fd);
        remove_socket();
        if (r < 0) {
                fprintf(stderr, PROG ": %s\n", r == -ETIMEDOUT ? "no client connected in time" :
                        r == -EPERM ? "refused a client of another user" : strerror(-r));
                remove_share(run_fd, share_fd);
                likwid_forwarder_free(f);
                return 1;
        }
        r = serve(f, fd, share_fd, version);
        remove_share(run_fd, share_fd);
        likwid_forwarder_flush(f);
        if (verbose) {
                const LikwidStats *st = likwid_forwarder_stats(f);

                fprintf(stderr, PROG ": %" PRIu64 " records (%" PRIu64 " reads, %" PRIu64 " writes, %"
                        PRIu64 " checks) in %" PRIu64 " batches; %" PRIu64 " writes collected, %" PRIu64
                        " refused, %" PRIu64 " answered without the hardware\n", st->records, st->reads,
                        st->writes, st->checks, st->batches, st->deferred, st->refused, st->switch_offs);
        }
        void_reason = likwid_forwarder_void_reason(f);
        if (void_reason && run_fd >= 0)
                (void) likwid_run_void(run_fd, void_reason);
        /* Closing the connection ends the lease: pmugated restores what LIKWID wrote. */
        likwid_forwarder_free(f);
        if (r < 0 && r != -ECONNRESET) {
                fprintf(stderr, PROG ": %s\n", strerror(-r));
                return 1;
        }
        return 0;
}

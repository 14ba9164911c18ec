/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-marker: what a marker region costs (a start and a stop) against a bare echo of the
 * same request, and what markers cost when no runner started the program
 *
 * Run by bench/run-bench-marker.py against a real pmugated; prints a table, judges nothing.
 * The start and stop each read the counters of the calling thread's CPU through the daemon
 * (the fallback path; RDPMC needs a PMU, and this benchmark runs where there may be none).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "marker/marker-internal.h"
#include "message.h"
#include "pmugate-limits.h"
#include "pmugate/marker.h"
#include "pmugate/pmugate.h"
#include "wire.h"

/* What LIKWID's Skylake-SP TMA group reads: 3 fixed counters and 4 PMCs. */
#define DEFAULT_REGS "c1,c2,c3,c4,309,30a,30b"
#define WARMUP 200U

static uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static int compare_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static void report(const char *row, uint64_t *ns, size_t n, double *ret_median) {
        qsort(ns, n, sizeof(*ns), compare_u64);
        *ret_median = (double) ns[n / 2] / 1000.0;
        printf("| %-52s | %9.3f | %9.3f |\n", row, *ret_median, (double) ns[n * 9 / 10] / 1000.0);
}

static int echo_serve(int fd) {
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
        _cleanup_free_ char *buf = malloc(PMUGATE_REQUEST_SIZE_MAX);
        _cleanup_close_ int efd = epoll_create1(EPOLL_CLOEXEC);

        if (!buf || efd < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -1;
        for (;;) {
                struct epoll_event events[8];
                int n = epoll_wait(efd, events, 8, -1);

                if (n < 0 && errno != EINTR)
                        return -1;
                for (int i = 0; i < n; i++) {
                        ssize_t k = recv(fd, buf, PMUGATE_REQUEST_SIZE_MAX, MSG_DONTWAIT);

                        if (k == 0)
                                return 0;
                        if (k > 0 && send(fd, buf, (size_t) k, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                                return -1;
                }
        }
}

static int echo_start(pid_t *ret_pid) {
        int sv[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        (void) fflush(stdout);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                (void) close(sv[0]);
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
                (void) fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
                _exit(echo_serve(sv[1]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        (void) close(sv[1]);
        *ret_pid = pid;
        return sv[0];
}

/* The bytes a marker's read sends: one compact read of the registers on one CPU. */
static int read_request(msgpack_sbuffer *sb, uint32_t cpu, const uint32_t *regs, size_t n) {
        msgpack_packer pk;

        msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
        if (request_pack_begin(&pk, 1000, request_type_to_string(REQUEST_BATCH), 1) < 0 ||
            pack_string(&pk, "ops") < 0 || msgpack_pack_array(&pk, 1) < 0 ||
            msgpack_pack_array(&pk, 1 + wire_ops[WIRE_OP_SWEEP_READ].args) < 0 ||
            pack_string(&pk, wire_ops[WIRE_OP_SWEEP_READ].name) < 0 ||
            msgpack_pack_array(&pk, 1) < 0 || msgpack_pack_uint32(&pk, cpu) < 0 ||
            msgpack_pack_array(&pk, n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (msgpack_pack_uint32(&pk, regs[i]) < 0)
                        return -ENOMEM;
        return 0;
}

static int parse_regs(const char *text, uint32_t *regs, size_t *ret_n) {
        _cleanup_free_ char *copy = strdup(text);
        char *save = NULL;
        size_t n = 0;

        if (!copy)
                return -ENOMEM;
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                if (n >= MARKER_REGS_MAX)
                        return -E2BIG;
                regs[n++] = (uint32_t) strtoul(p, NULL, 16);
        }
        *ret_n = n;
        return n > 0 ? 0 : -EINVAL;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "cpu", required_argument, NULL, 'c' },
                { "iterations", required_argument, NULL, 'n' },
                { "regs", required_argument, NULL, 'r' },
                {}
        };
        const char *socket_path = NULL, *regs_text = DEFAULT_REGS;
        unsigned cpu = 0, iterations = 20000;
        uint32_t regs[MARKER_REGS_MAX];
        size_t n_regs;
        char dir[] = "/tmp/bench-marker.XXXXXX", file[64], cpu_text[16];
        _cleanup_free_ uint64_t *ns = NULL;
        msgpack_sbuffer request;
        double echo_us, pair_us, read_us, off_us;
        pmugate_batch *b = NULL;
        pmugate *c = NULL;
        cpu_set_t set;
        pid_t echo_pid = -1;
        int opt, fd, r;
        char buf[4096];

        while ((opt = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (opt) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'c':
                        cpu = (unsigned) atoi(optarg);
                        break;
                case 'n':
                        iterations = (unsigned) atoi(optarg);
                        break;
                case 'r':
                        regs_text = optarg;
                        break;
                default:
                        fprintf(stderr, "usage: bench-marker --socket=PATH [--cpu=N] [--iterations=N] "
                                "[--regs=HEX,...]\n");
                        return 2;
                }
        if (!socket_path || iterations < 10 || parse_regs(regs_text, regs, &n_regs) < 0) {
                fprintf(stderr, "bench-marker: give --socket, at least 10 iterations and hex registers\n");
                return 2;
        }
        ns = calloc(iterations, sizeof(*ns));
        if (!ns)
                return 1;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                fprintf(stderr, "bench-marker: cannot run on CPU %u: %s\n", cpu, strerror(errno));
                return 1;
        }
        fd = echo_start(&echo_pid);
        if (fd < 0)
                return 1;

        printf("| %-52s | %9s | %9s |\n|---|---:|---:|\n", "row (per iteration)", "median us", "p90 us");

        /* Markers before init, as in a program no runner started. */
        for (unsigned i = 0; i < iterations; i++) {
                uint64_t t0 = now_ns();

                for (unsigned k = 0; k < 1000; k++) {
                        (void) pmugate_marker_start("region");
                        (void) pmugate_marker_stop("region");
                }
                ns[i] = (now_ns() - t0) / 1000;
        }
        report("marker start+stop, no runner (markers off)", ns, iterations, &off_us);

        msgpack_sbuffer_init(&request);
        if (read_request(&request, cpu, regs, n_regs) < 0)
                return 1;
        for (unsigned i = 0; i < WARMUP + iterations; i++) {
                uint64_t t0 = now_ns();

                if (send(fd, request.data, request.size, 0) < 0 || recv(fd, buf, sizeof(buf), 0) <= 0)
                        return 1;
                if (i >= WARMUP)
                        ns[i - WARMUP] = now_ns() - t0;
        }
        (void) snprintf(buf, sizeof(buf), "bare SEQPACKET echo of the read request (%zu bytes)",
                        request.size);
        report(buf, ns, iterations, &echo_us);
        msgpack_sbuffer_destroy(&request);

        r = pmugate_connect(socket_path, &c);
        if (r >= 0)
                r = pmugate_batch_new(&b);
        if (r >= 0)
                r = pmugate_batch_read_msrs(b, &cpu, 1, regs, n_regs);
        for (unsigned i = 0; r >= 0 && i < WARMUP + iterations; i++) {
                uint64_t t0 = now_ns();

                r = pmugate_batch_run(c, b);
                if (i >= WARMUP)
                        ns[i - WARMUP] = now_ns() - t0;
        }
        if (r < 0) {
                fprintf(stderr, "bench-marker: reading through the daemon failed: %s\n",
                        pmugate_strerror(r));
                return 1;
        }
        (void) snprintf(buf, sizeof(buf), "daemon: one compact read of %zu registers, 1 CPU", n_regs);
        report(buf, ns, iterations, &read_us);
        pmugate_batch_free(b);
        pmugate_disconnect(c);

        /* What a runner would pass; the daemon serves reads without a lease. */
        if (!mkdtemp(dir))
                return 1;
        (void) snprintf(file, sizeof(file), "%s/results", dir);
        (void) snprintf(cpu_text, sizeof(cpu_text), "%u", cpu);
        (void) setenv(MARKER_ENV_FILE, file, 1);
        (void) setenv(MARKER_ENV_REGS, regs_text, 1);
        (void) setenv(MARKER_ENV_CPUS, cpu_text, 1);
        (void) setenv(MARKER_ENV_RDPMC, "0", 1);
        (void) setenv("PMUGATE_SOCKET", socket_path, 1);
        r = pmugate_marker_init(0);
        for (unsigned i = 0; r >= 0 && i < WARMUP + iterations; i++) {
                uint64_t t0 = now_ns();

                r = pmugate_marker_start("region");
                if (r >= 0)
                        r = pmugate_marker_stop("region");
                if (i >= WARMUP)
                        ns[i - WARMUP] = now_ns() - t0;
        }
        if (r < 0) {
                fprintf(stderr, "bench-marker: markers failed: %s\n", pmugate_marker_last_reason());
                return 1;
        }
        report("marker start+stop pair through the daemon", ns, iterations, &pair_us);
        (void) pmugate_marker_close();
        (void) unlink(file);
        (void) rmdir(dir);

        printf("\npair / echo: %.2f (2 round trips: %.2f echoes each); pair / (2 x compact read): %.2f\n",
               pair_us / echo_us, pair_us / echo_us / 2, pair_us / (2 * read_us));
        printf("markers off: %.1f ns per start+stop pair\n", off_us * 1000.0);
        (void) close(fd);
        (void) waitpid(echo_pid, NULL, 0);
        return 0;
}

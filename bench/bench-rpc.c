/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-rpc: cost of a pmugated round trip against an in-process pread floor and a bare echo
 *
 * Everything is measured in one process and one run. Series that are compared with each other
 * are interleaved in short blocks, so that a noisy neighbour or a frequency change hits both
 * sides of a ratio alike. Where the three processes (this one, the echo server, the daemon)
 * run decides most of a round trip, so the suite runs once per CPU placement. Each placement
 * also times the admin operations (grant, revoke, lease, release, and a lease that writes and
 * is restored at release) against the echo. bench/README.md explains each number;
 * bench/run-bench.py prepares the fake machine and the daemon.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "message.h"
#include "pmugate-limits.h"
#include "pmugate/pmugate.h"
#include "wire.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(pmugate_info *, pmugate_info_free);

/* The register set every batch and the floor draw from: what a sampling tool reads on Sapphire
 * Rapids (counters, their controls, global state, clocks) plus RAPL. All are on the allowlist;
 * 32 registers on 32 CPUs make the 1024-op batch one full sweep of the fake machine. */
static const uint32_t bench_regs[] = {
        0x0C1, 0x0C2, 0x0C3, 0x0C4, 0x0C5, 0x0C6, 0x0C7, 0x0C8,         /* IA32_PMC0-7 */
        0x186, 0x187, 0x188, 0x189, 0x18A, 0x18B, 0x18C, 0x18D,         /* IA32_PERFEVTSEL0-7 */
        0x309, 0x30A, 0x30B, 0x30C,                                     /* IA32_FIXED_CTR0-3 */
        0x329, 0x38D, 0x38E, 0x38F, 0x392,                              /* PERF_METRICS, fixed and global control */
        0x345, 0x010, 0x0E7, 0x0E8,                                     /* PERF_CAPABILITIES, TSC, MPERF, APERF */
        0x606, 0x611, 0x619,                                            /* RAPL unit, package and DRAM energy */
};
#define N_REGS ELEMENTSOF(bench_regs)

/* DS_AREA: on the daemon's built-in never-list, so a read of it is refused before any I/O. */
#define REFUSED_MSR 0x600U

static const size_t batch_sizes[] = { 1, 16, 256, 1024, 4096 };
#define N_SIZES ELEMENTSOF(batch_sizes)
/* Timed iterations per series at --scale=1, chosen so that both default placements together
 * stay under a minute on two cores. */
static const unsigned batch_iterations[N_SIZES] = { 20000, 20000, 4000, 1200, 300 };
#define SINGLE_ITERATIONS 40000U
/* Interleaved rounds per measurement; each series runs iterations/ROUNDS times per round. */
#define ROUNDS 50U

#define TARGET_BATCH_SIZE 1024U
#define TARGET_BATCH_RATIO 1.15
#define TARGET_SINGLE_RATIO 1.10
#define TARGET_REFUSED_RATIO 1.00

/* Admin operations. Grants already held when grant and revoke are timed: the daemon rewrites
 * its grants file on every change, so their cost grows with this number. Grants name their
 * CPUs (the Prolog variant that lists the job's CPUs) or none (the job's cgroup decides, the
 * default Prolog); the last level converts the grants of the one before, which is cheaper than
 * making them again. Timed cycles at --scale=1 (each: echo, grant, grant again, revoke, revoke
 * again) are fewer where each grant rewrites a longer file. */
typedef struct GrantLevelSpec {
        unsigned n;
        bool cpu_lists;
        unsigned iterations;
} GrantLevelSpec;

static const GrantLevelSpec grant_levels[] = {
        { 0, true, 2000 },
        { 100, true, 1000 },
        { 1000, true, 150 },
        { 1000, false, 500 },
};
#define N_LEVELS ELEMENTSOF(grant_levels)
#define LEASE_ITERATIONS 2000U
#define WRITE_ITERATIONS 1000U
/* The job whose grant is timed, its uid, and the CPUs of the existing grants (4 each). */
#define BENCH_JOB "bench-job"
#define BENCH_UID 4242U
#define EXISTING_UID_BASE 10000U
#define EXISTING_CPUS 4U
/* PERFEVTSEL0-7: what a measurement programs first. The value counts unhalted core cycles in
 * user and kernel mode with the enable bit set; the daemon keeps bits outside the write mask. */
#define MSR_PERFEVTSEL0 0x186U
#define EVTSEL_PER_CPU 8U
#define EVTSEL_VALUE UINT64_C(0x43003C)
/* Daemon side of a grant or revoke: at most a few milliseconds. */
#define TARGET_ADMIN_USEC 2000.0

typedef enum Placement {
        PLACEMENT_SAME,         /* all three processes on one CPU */
        PLACEMENT_SPLIT,        /* this process on one CPU, echo server and daemon on another */
        PLACEMENT_FREE,         /* wherever the scheduler puts them */
        _PLACEMENT_MAX,
} Placement;

static const char *const placement_names[_PLACEMENT_MAX] = {
        [PLACEMENT_SAME] = "same",
        [PLACEMENT_SPLIT] = "split",
        [PLACEMENT_FREE] = "free",
};

typedef struct Options {
        const char *socket_path;
        const char *root;
        unsigned n_cpus;
        pid_t daemon_pid;
        bool placements[_PLACEMENT_MAX];
        bool placements_set;
        double scale;
        const char *runtime_dir;
        bool admin;
} Options;

typedef struct Series {
        const char *label;
        int (*step)(void *userdata);
        void *userdata;
        double *samples;        /* microseconds, one per timed iteration */
        size_t n_samples;
        double median, p90;
        double round_median[ROUNDS];    /* median of each interleaved round */
} Series;

typedef struct SizeResult {
        size_t n;
        Series floor, ops, sweep;
        bool has_sweep;
} SizeResult;

/* Grant and revoke with a number of grants already held; echo is timed in the same cycles. */
typedef struct GrantLevel {
        unsigned n_existing;
        bool cpu_lists;         /* the existing grants and the timed one name their CPUs */
        Series echo, grant_new, grant_again, revoke, revoke_unknown;
        int64_t file_size;      /* bytes in the grants file, -1 when unknown */
} GrantLevel;

/* One lease, one batch of writes, one release that restores what the batch wrote. */
typedef struct WriteCycle {
        size_t n_cpus, per_cpu;
        uint64_t journaled;     /* registers the release restores */
        Series echo, lease, write, release, total;
        char labels[3][64];
} WriteCycle;

typedef struct AdminSuite {
        bool ran, leases_ran;
        GrantLevel levels[N_LEVELS];
        Series echo, lease_one, release_one, lease_all, release_all;
        char labels[2][64];
        WriteCycle cycles[2];
} AdminSuite;

/* Everything measured under one placement. */
typedef struct Suite {
        Placement placement;
        bool ran;
        Series echo, allowed, denied;
        SizeResult sizes[N_SIZES];
        AdminSuite admin;
} Suite;

typedef struct FloorBench {
        const int *fds;         /* msr file by CPU number */
        const uint32_t *cpu, *reg;
        size_t n;
        uint64_t *values;
} FloorBench;

typedef struct BatchBench {
        pmugate *conn;
        pmugate_batch *batch;
        size_t n;
        uint64_t *values;
        int expect;             /* 0, or the errno a refused batch must fail with */
} BatchBench;

typedef struct GrantBench {
        pmugate *conn;
        const char *job;
        uint32_t uid;
        const uint32_t *cpus;
        size_t n_cpus;
        bool expect;            /* whether the reply must say "replaced" or "revoked" */
} GrantBench;

typedef struct LeaseBench {
        pmugate *conn;
        const uint32_t *cpus;
        size_t n_cpus;
} LeaseBench;

typedef struct EchoBench {
        int fd;
        const void *message;
        size_t size;
        char *reply;
} EchoBench;

/* State shared by every placement: connections, open files, and the batches, each built and
 * checked once. */
typedef struct Bench {
        Options o;
        pmugate *conn;
        int *fds;
        int echo_fd;
        pid_t echo_pid;
        cpu_set_t self_mask, daemon_mask;
        bool have_daemon_mask;
        int cpu_a, cpu_b;       /* the first two CPUs this process may use; cpu_b < 0 when alone */
        msgpack_sbuffer request;
        char *reply;
        uint64_t *values;
        uint32_t *cpu[N_SIZES], *reg[N_SIZES];  /* floor and "r" order per size */
        pmugate_batch *single, *refused, *ops[N_SIZES], *sweep[N_SIZES];
        int refused_errno;
        bool may_write;
        unsigned n_grants;      /* grants this process made and has not revoked */
        bool grant_lists;       /* whether they name their CPUs */
        uint32_t *all_cpus;     /* 0 .. n_cpus - 1 */
        pmugate_batch *writes[2];       /* one per write cycle */
        uint64_t journaled[2];  /* registers the leases of each write cycle had to restore */
} Bench;

static uint64_t now_nsec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static double percentile(const double *sorted, size_t n, double p) {
        size_t rank = (size_t) ceil(p * (double) n);

        if (n == 0)
                return NAN;
        return sorted[rank == 0 ? 0 : rank - 1];
}

/* Iterations at this scale: a whole number of rounds, at least one iteration per round. */
static unsigned scaled(unsigned n, double scale) {
        double v = (double) n * scale;

        return v < (double) ROUNDS ? ROUNDS : (unsigned) v / ROUNDS * ROUNDS;
}

/* ------------------------------------------------------------------ steps */

static int step_floor(void *userdata) {
        FloorBench *f = userdata;

        for (size_t i = 0; i < f->n; i++) {
                ssize_t k = pread(f->fds[f->cpu[i]], &f->values[i], sizeof(uint64_t), (off_t) f->reg[i]);

                if (k != (ssize_t) sizeof(uint64_t))
                        return k < 0 ? -errno : -EIO;
        }
        return 0;
}

/* A client uses what it read, so the results are fetched as part of each iteration. */
static int step_batch(void *userdata) {
        BatchBench *b = userdata;
        int r;

        r = pmugate_batch_run(b->conn, b->batch);
        if (b->expect != 0)
                return r == b->expect ? 0 : r < 0 ? r : -EPROTO;
        if (r < 0)
                return r;
        for (size_t i = 0; i < b->n; i++) {
                r = pmugate_batch_result(b->batch, i, &b->values[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Mirrors the library's own I/O: one blocking send, one blocking receive into a buffer as
 * large as the largest reply, with MSG_TRUNC so an oversized message would be noticed. */
static int step_echo(void *userdata) {
        EchoBench *e = userdata;
        ssize_t n;

        n = send(e->fd, e->message, e->size, MSG_NOSIGNAL);
        if (n < 0)
                return -errno;
        n = recv(e->fd, e->reply, PMUGATE_REPLY_SIZE_MAX, MSG_TRUNC);
        if (n < 0)
                return -errno;
        return (size_t) n == e->size ? 0 : -EBADMSG;
}

/* The grant and revoke reply flags are checked, so a cycle that went wrong (a grant that did
 * not replace, a revoke that found nothing) fails the run instead of timing something else. */
static int step_grant(void *userdata) {
        GrantBench *g = userdata;
        bool replaced = !g->expect;
        int r;

        r = pmugate_grant(g->conn, g->job, g->uid, g->cpus, g->n_cpus, &replaced);
        if (r < 0)
                return r;
        return replaced == g->expect ? 0 : -EPROTO;
}

static int step_revoke(void *userdata) {
        GrantBench *g = userdata;
        bool revoked = !g->expect;
        int r;

        r = pmugate_revoke(g->conn, g->job, &revoked);
        if (r < 0)
                return r;
        return revoked == g->expect ? 0 : -EPROTO;
}

static int step_lease(void *userdata) {
        LeaseBench *l = userdata;

        return pmugate_lease(l->conn, l->cpus, l->n_cpus);
}

static int step_release(void *userdata) {
        LeaseBench *l = userdata;

        return pmugate_release(l->conn, l->cpus, l->n_cpus);
}

static int series_alloc(Series *x, size_t n) {
        free(x->samples);
        x->samples = calloc(n, sizeof(double));
        x->n_samples = 0;
        return x->samples ? 0 : -ENOMEM;
}

/* Median and p90 of all samples, and the median of each round of block samples. */
static void series_finish(Series *x, unsigned block) {
        for (unsigned round = 0; round < ROUNDS; round++) {
                double *first = x->samples + (size_t) round * block;

                qsort(first, block, sizeof(double), cmp_double);
                x->round_median[round] = percentile(first, block, 0.5);
        }
        qsort(x->samples, x->n_samples, sizeof(double), cmp_double);
        x->median = percentile(x->samples, x->n_samples, 0.5);
        x->p90 = percentile(x->samples, x->n_samples, 0.9);
}

/* Runs the series in turn, each for iterations/ROUNDS iterations per round, so that whatever
 * else the machine does during the run is spread evenly over everything compared. */
static int measure(Series *const *series, size_t n_series, unsigned iterations) {
        unsigned block = iterations / ROUNDS;
        int r;

        for (size_t s = 0; s < n_series; s++) {
                r = series_alloc(series[s], (size_t) block * ROUNDS);
                if (r < 0)
                        return r;
        }
        /* One untimed block each: faults in buffers, fills caches, settles the scheduler. */
        for (size_t s = 0; s < n_series; s++)
                for (unsigned i = 0; i < block; i++) {
                        r = series[s]->step(series[s]->userdata);
                        if (r < 0)
                                return r;
                }
        for (unsigned round = 0; round < ROUNDS; round++)
                for (size_t s = 0; s < n_series; s++) {
                        Series *x = series[s];

                        for (unsigned i = 0; i < block; i++) {
                                uint64_t t0 = now_nsec(), t1;

                                r = x->step(x->userdata);
                                t1 = now_nsec();
                                if (r < 0)
                                        return r;
                                x->samples[x->n_samples++] = (double) (t1 - t0) / 1000.0;
                        }
                }
        for (size_t s = 0; s < n_series; s++)
                series_finish(series[s], block);
        return 0;
}

/* For steps that depend on each other (grant, grant again, revoke, revoke again): every
 * iteration runs the whole cycle once, in order, and times each step on its own, so every
 * series in it, the echo included, sees the same stretch of the run. When total is not NULL
 * it gets, per iteration, the sum of the samples of series[total_from] onwards. */
static int measure_cycle(Series *const *series, size_t n_series, unsigned iterations, Series *total,
                         size_t total_from) {
        unsigned block = iterations / ROUNDS;
        double sample[8];
        int r;

        assert(n_series <= ELEMENTSOF(sample));
        for (size_t s = 0; s < n_series; s++) {
                r = series_alloc(series[s], (size_t) block * ROUNDS);
                if (r < 0)
                        return r;
        }
        if (total) {
                r = series_alloc(total, (size_t) block * ROUNDS);
                if (r < 0)
                        return r;
        }
        for (unsigned i = 0; i < block; i++)
                for (size_t s = 0; s < n_series; s++) {
                        r = series[s]->step(series[s]->userdata);
                        if (r < 0)
                                return r;
                }
        for (unsigned i = 0; i < block * ROUNDS; i++) {
                double sum = 0.0;

                for (size_t s = 0; s < n_series; s++) {
                        uint64_t t0 = now_nsec(), t1;

                        r = series[s]->step(series[s]->userdata);
                        t1 = now_nsec();
                        if (r < 0)
                                return r;
                        sample[s] = (double) (t1 - t0) / 1000.0;
                }
                for (size_t s = 0; s < n_series; s++) {
                        series[s]->samples[series[s]->n_samples++] = sample[s];
                        if (s >= total_from)
                                sum += sample[s];
                }
                if (total)
                        total->samples[total->n_samples++] = sum;
        }
        for (size_t s = 0; s < n_series; s++)
                series_finish(series[s], block);
        if (total)
                series_finish(total, block);
        return 0;
}

/* ------------------------------------------------------------------ echo server */

/* The bare transport: the same epoll wait, non-blocking receive into a request-sized buffer
 * and non-blocking send that the daemon's event loop does, with no decoding at all. */
static int echo_serve(int fd) {
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
        _cleanup_free_ char *buf = malloc(PMUGATE_REQUEST_SIZE_MAX);
        _cleanup_close_ int efd = epoll_create1(EPOLL_CLOEXEC);

        if (!buf)
                return -ENOMEM;
        if (efd < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -errno;
        for (;;) {
                struct epoll_event events[8];
                int n = epoll_wait(efd, events, ELEMENTSOF(events), -1);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (int i = 0; i < n; i++) {
                        ssize_t k = recv(fd, buf, PMUGATE_REQUEST_SIZE_MAX, MSG_DONTWAIT | MSG_TRUNC);

                        if (k < 0) {
                                if (errno == EAGAIN || errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        if (k == 0)
                                return 0;       /* the benchmark closed its end */
                        if (send(fd, buf, (size_t) k, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                                return -errno;
                }
        }
}

/* Forks the echo server before anything else is opened, so it holds no other descriptor. */
static int echo_start(pid_t *ret_pid) {
        int sv[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        (void) fflush(stdout);
        (void) fflush(stderr);
        pid = fork();
        if (pid < 0) {
                int e = -errno;
                (void) close(sv[0]);
                (void) close(sv[1]);
                return e;
        }
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

/* The bytes libpmugate sends for a one-op batch, so the echo moves a message of that size.
 * The id is one the benchmark reaches during its run, which sets its encoded width. */
static int single_request(msgpack_sbuffer *sb) {
        msgpack_packer pk;

        msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
        if (request_pack_begin(&pk, 1000, request_type_to_string(REQUEST_BATCH), 1) < 0 ||
            pack_string(&pk, "ops") < 0 || msgpack_pack_array(&pk, 1) < 0 ||
            msgpack_pack_array(&pk, 1 + wire_ops[WIRE_OP_READ].args) < 0 ||
            pack_string(&pk, wire_ops[WIRE_OP_READ].name) < 0 ||
            msgpack_pack_uint32(&pk, 0) < 0 || msgpack_pack_uint32(&pk, bench_regs[0]) < 0)
                return -ENOMEM;
        return 0;
}

/* ------------------------------------------------------------------ batches */

/* Op i reads register (i / n_cpus) on CPU (i % n_cpus): every CPU once per register, then the
 * next register, wrapping around the register set for batches larger than one full sweep. */
static void op_list(size_t n, unsigned n_cpus, uint32_t *cpu, uint32_t *reg) {
        for (size_t i = 0; i < n; i++) {
                cpu[i] = (uint32_t) (i % n_cpus);
                reg[i] = bench_regs[(i / n_cpus) % N_REGS];
        }
}

static int batch_of_reads(size_t n, const uint32_t *cpu, const uint32_t *reg, pmugate_batch **ret) {
        pmugate_batch *b = NULL;
        int r;

        r = pmugate_batch_new(&b);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = pmugate_batch_read_msr(b, cpu[i], reg[i]);
                if (r < 0) {
                        pmugate_batch_free(b);
                        return r;
                }
        }
        *ret = b;
        return 0;
}

/* The same reads as op_list() in compact form: n <= n_cpus is one register on the first n
 * CPUs; a multiple of n_cpus is all CPUs times the next registers, one sweep per pass over the
 * register set. Sweep results are CPU-major, which ret_cpu and ret_reg record for checking.
 * Returns 0, or -EDOM when n has no compact form on this many CPUs. */
static int batch_of_sweeps(size_t n, unsigned n_cpus, pmugate_batch **ret, uint32_t *ret_cpu, uint32_t *ret_reg) {
        _cleanup_free_ uint32_t *cpus = NULL;
        pmugate_batch *b = NULL;
        size_t used = 0;
        int r;

        if (n > n_cpus && n % n_cpus != 0)
                return -EDOM;
        cpus = calloc(n_cpus, sizeof(uint32_t));
        if (!cpus)
                return -ENOMEM;
        for (unsigned c = 0; c < n_cpus; c++)
                cpus[c] = c;
        r = pmugate_batch_new(&b);
        if (r < 0)
                return r;

        if (n <= n_cpus) {
                r = pmugate_batch_read_msrs(b, cpus, n, bench_regs, 1);
                for (size_t i = 0; i < n; i++) {
                        ret_cpu[i] = (uint32_t) i;
                        ret_reg[i] = bench_regs[0];
                }
        } else
                for (size_t left = n / n_cpus; left > 0 && r >= 0;) {
                        size_t k = left < N_REGS ? left : N_REGS;

                        r = pmugate_batch_read_msrs(b, cpus, n_cpus, bench_regs, k);
                        for (unsigned c = 0; c < n_cpus; c++)
                                for (size_t j = 0; j < k; j++, used++) {
                                        ret_cpu[used] = c;
                                        ret_reg[used] = bench_regs[j];
                                }
                        left -= k;
                }
        if (r < 0) {
                pmugate_batch_free(b);
                return r;
        }
        *ret = b;
        return 0;
}

/* Runs a batch once, untimed, and checks every result against the file the daemon read. */
static int verify_batch(pmugate *c, pmugate_batch *b, size_t n, const int *fds, const uint32_t *cpu,
                        const uint32_t *reg, const char *what) {
        int r;

        r = pmugate_batch_run(c, b);
        if (r < 0) {
                fprintf(stderr, "%s: batch failed: %s (%s)\n", what, pmugate_strerror(r), pmugate_last_error(c)->reason);
                return r;
        }
        if (pmugate_batch_size(b) != n) {
                fprintf(stderr, "%s: batch has %zu results, expected %zu\n", what, pmugate_batch_size(b), n);
                return -EBADMSG;
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t got = 0, want = 0;

                r = pmugate_batch_result(b, i, &got);
                if (r < 0) {
                        fprintf(stderr, "%s: op %zu (CPU %" PRIu32 " MSR 0x%" PRIx32 ") failed: %s\n", what, i, cpu[i],
                                reg[i], pmugate_strerror(r));
                        return r;
                }
                if (pread(fds[cpu[i]], &want, sizeof(want), (off_t) reg[i]) != (ssize_t) sizeof(want))
                        return -EIO;
                if (got != want) {
                        fprintf(stderr, "%s: op %zu (CPU %" PRIu32 " MSR 0x%" PRIx32 ") read 0x%" PRIx64
                                ", the file holds 0x%" PRIx64 "\n", what, i, cpu[i], reg[i], got, want);
                        return -EBADMSG;
                }
        }
        return 0;
}

/* Builds every batch and checks each once against the files, before anything is timed. */
static int bench_prepare_batches(Bench *b) {
        _cleanup_free_ uint32_t *sweep_cpu = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(uint32_t));
        _cleanup_free_ uint32_t *sweep_reg = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(uint32_t));
        uint32_t cpu0 = 0, reg0 = bench_regs[0], refused_reg = REFUSED_MSR;
        int r;

        if (!sweep_cpu || !sweep_reg)
                return -ENOMEM;
        r = batch_of_reads(1, &cpu0, &reg0, &b->single);
        if (r >= 0)
                r = verify_batch(b->conn, b->single, 1, b->fds, &cpu0, &reg0, "single op");
        if (r >= 0)
                r = batch_of_reads(1, &cpu0, &refused_reg, &b->refused);
        if (r < 0)
                return r;
        r = pmugate_batch_run(b->conn, b->refused);
        if (r >= 0 || strcmp(pmugate_last_error(b->conn)->name, "reg-forbidden") != 0) {
                fprintf(stderr, "A read of MSR 0x%x was not refused as reg-forbidden (%d, '%s')\n", REFUSED_MSR, r,
                        pmugate_last_error(b->conn)->name);
                return -EPROTO;
        }
        b->refused_errno = r;

        for (size_t k = 0; k < N_SIZES; k++) {
                size_t n = batch_sizes[k];

                b->cpu[k] = calloc(n, sizeof(uint32_t));
                b->reg[k] = calloc(n, sizeof(uint32_t));
                if (!b->cpu[k] || !b->reg[k])
                        return -ENOMEM;
                op_list(n, b->o.n_cpus, b->cpu[k], b->reg[k]);
                r = batch_of_reads(n, b->cpu[k], b->reg[k], &b->ops[k]);
                if (r >= 0)
                        r = verify_batch(b->conn, b->ops[k], n, b->fds, b->cpu[k], b->reg[k], "batch of r ops");
                if (r < 0)
                        return r;
                r = batch_of_sweeps(n, b->o.n_cpus, &b->sweep[k], sweep_cpu, sweep_reg);
                if (r >= 0)
                        r = verify_batch(b->conn, b->sweep[k], n, b->fds, sweep_cpu, sweep_reg, "compact sweep");
                if (r < 0 && r != -EDOM)
                        return r;
        }
        return 0;
}

/* ------------------------------------------------------------------ placement */

static int set_affinity(pid_t pid, const cpu_set_t *mask) {
        return sched_setaffinity(pid, sizeof(cpu_set_t), mask) < 0 ? -errno : 0;
}

static int pin(pid_t pid, int cpu) {
        cpu_set_t mask;

        CPU_ZERO(&mask);
        CPU_SET(cpu, &mask);
        return set_affinity(pid, &mask);
}

/* Restores the masks everything had at start-up. */
static void unpin_all(Bench *b) {
        (void) set_affinity(0, &b->self_mask);
        (void) set_affinity(b->echo_pid, &b->self_mask);
        if (b->have_daemon_mask)
                (void) set_affinity(b->o.daemon_pid, &b->daemon_mask);
}

/* The echo server always shares the daemon's placement: the comparison between them is only
 * fair when both are woken the same way. */
static int place(Bench *b, Placement p) {
        int server_cpu, r;

        unpin_all(b);
        if (p == PLACEMENT_FREE)
                return 0;
        server_cpu = p == PLACEMENT_SAME ? b->cpu_a : b->cpu_b;
        r = pin(0, b->cpu_a);
        if (r >= 0)
                r = pin(b->echo_pid, server_cpu);
        if (r >= 0)
                r = pin(b->o.daemon_pid, server_cpu);
        if (r < 0)
                fprintf(stderr, "Cannot pin for placement '%s': %s\n", placement_names[p], strerror(-r));
        return r;
}

static void placement_describe(const Bench *b, Placement p, char *buf, size_t size) {
        switch (p) {
        case PLACEMENT_SAME:
                (void) snprintf(buf, size, "same CPU: benchmark, echo server and daemon all on CPU %d", b->cpu_a);
                break;
        case PLACEMENT_SPLIT:
                (void) snprintf(buf, size, "split: benchmark on CPU %d, echo server and daemon on CPU %d", b->cpu_a,
                                b->cpu_b);
                break;
        default:
                (void) snprintf(buf, size, "free: no pinning, the scheduler places all three");
        }
}

/* ------------------------------------------------------------------ admin operations */

static void report_failure(const Bench *b, const char *what, int r) {
        if (r == -EPROTO)
                fprintf(stderr, "%s: the daemon's reply did not say what the cycle expects\n", what);
        else
                fprintf(stderr, "%s failed: %s (%s)\n", what, pmugate_strerror(r), pmugate_last_error(b->conn)->reason);
}

static int grant_existing(Bench *b, unsigned i, bool cpu_lists) {
        uint32_t cpus[EXISTING_CPUS];
        char job[64];
        int r;

        for (unsigned k = 0; k < EXISTING_CPUS; k++)
                cpus[k] = (i * EXISTING_CPUS + k) % b->o.n_cpus;
        (void) snprintf(job, sizeof(job), "bench-existing-%u", i);
        r = pmugate_grant(b->conn, job, EXISTING_UID_BASE + i, cpus, cpu_lists ? EXISTING_CPUS : 0, NULL);
        if (r < 0)
                report_failure(b, "Granting an existing job", r);
        return r;
}

/* Revokes, converts and makes existing grants until n are held, all with or all without a
 * CPU list: job bench-existing-I for uid EXISTING_UID_BASE + I, on EXISTING_CPUS CPUs. */
static int grants_set_count(Bench *b, unsigned n, bool cpu_lists) {
        char job[64];
        int r;

        while (b->n_grants > n) {
                (void) snprintf(job, sizeof(job), "bench-existing-%u", b->n_grants - 1);
                r = pmugate_revoke(b->conn, job, NULL);
                if (r < 0) {
                        report_failure(b, "Revoking an existing job", r);
                        return r;
                }
                b->n_grants--;
        }
        if (b->grant_lists != cpu_lists)
                for (unsigned i = 0; i < b->n_grants; i++) {
                        r = grant_existing(b, i, cpu_lists);
                        if (r < 0)
                                return r;
                }
        b->grant_lists = cpu_lists;
        while (b->n_grants < n) {
                r = grant_existing(b, b->n_grants, cpu_lists);
                if (r < 0)
                        return r;
                b->n_grants++;
        }
        return 0;
}

/* Asks the daemon how many grants it holds, so each level is timed with what it claims. */
static int grants_check_count(Bench *b, unsigned n) {
        pmugate_status *st = NULL;
        int r;

        r = pmugate_status_get(b->conn, &st);
        if (r < 0) {
                report_failure(b, "status", r);
                return r;
        }
        if (st->n_grants != n) {
                fprintf(stderr, "The daemon holds %zu grants, the benchmark expected %u\n", st->n_grants, n);
                r = -EPROTO;
        }
        pmugate_status_free(st);
        return r;
}

/* Size of the daemon's grants file, or -1 when the benchmark was not told where it is. */
static int64_t grants_file_size(const Bench *b) {
        char path[4096];
        struct stat st;

        if (!b->o.runtime_dir)
                return -1;
        (void) snprintf(path, sizeof(path), "%s/state/grants", b->o.runtime_dir);
        if (stat(path, &st) < 0)
                return errno == ENOENT ? 0 : -1;
        return (int64_t) st.st_size;
}

/* A write cycle's batch: PERFEVTSEL0 .. PERFEVTSEL(per_cpu - 1) on each of the first n_cpus
 * CPUs, CPU by CPU. */
static int batch_of_writes(size_t n_cpus, size_t per_cpu, pmugate_batch **ret) {
        pmugate_batch *w = NULL;
        int r;

        r = pmugate_batch_new(&w);
        if (r < 0)
                return r;
        for (size_t c = 0; c < n_cpus && r >= 0; c++)
                for (size_t j = 0; j < per_cpu && r >= 0; j++)
                        r = pmugate_batch_write_msr(w, (uint32_t) c, MSR_PERFEVTSEL0 + (uint32_t) j, EVTSEL_VALUE);
        if (r < 0) {
                pmugate_batch_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

/* Runs a write cycle once, untimed: the writes must land in the files and the release must put
 * back exactly what the files held before. On the fake machine an MSR is 8 bytes at the file
 * offset of its number, so consecutive registers share bytes and only the last write on each
 * CPU can be read back whole; the release must still restore every byte, which the daemon's
 * newest-first restore does. */
static int verify_write_cycle(Bench *b, pmugate_batch *w, size_t n_cpus, size_t per_cpu, uint64_t *ret_journaled) {
        enum { SPAN = EVTSEL_PER_CPU - 1 + sizeof(uint64_t) };
        uint8_t before[SPAN], after[SPAN];
        _cleanup_free_ uint8_t *saved = malloc(n_cpus * SPAN);
        pmugate_status *st = NULL;
        uint64_t got, now;
        int r;

        if (!saved)
                return -ENOMEM;
        for (size_t c = 0; c < n_cpus; c++)
                if (pread(b->fds[c], saved + c * SPAN, SPAN, MSR_PERFEVTSEL0) != SPAN)
                        return -EIO;
        r = pmugate_lease(b->conn, b->all_cpus, n_cpus);
        if (r < 0) {
                report_failure(b, "lease", r);
                return r;
        }
        r = pmugate_batch_run(b->conn, w);
        if (r < 0) {
                report_failure(b, "A batch of writes", r);
                return r;
        }
        for (size_t i = 0; i < n_cpus * per_cpu; i++) {
                uint32_t cpu = (uint32_t) (i / per_cpu), reg = MSR_PERFEVTSEL0 + (uint32_t) (i % per_cpu);

                r = pmugate_batch_result(w, i, &got);
                if (r < 0) {
                        fprintf(stderr, "Write of MSR 0x%" PRIx32 " on CPU %" PRIu32 " failed: %s\n", reg, cpu,
                                pmugate_strerror(r));
                        return r;
                }
                if ((got & EVTSEL_VALUE) != EVTSEL_VALUE)
                        return -EBADMSG;
                if (i % per_cpu != per_cpu - 1)
                        continue;
                if (pread(b->fds[cpu], &now, sizeof(now), (off_t) reg) != (ssize_t) sizeof(now))
                        return -EIO;
                if (now != got) {
                        fprintf(stderr, "MSR 0x%" PRIx32 " on CPU %" PRIu32 ": the daemon wrote 0x%" PRIx64
                                ", the file holds 0x%" PRIx64 "\n", reg, cpu, got, now);
                        return -EBADMSG;
                }
        }
        /* What the release will restore: the daemon may journal more than the registers written
         * (the counters an event select can start, for instance). */
        r = pmugate_status_get(b->conn, &st);
        if (r < 0) {
                report_failure(b, "status", r);
                return r;
        }
        *ret_journaled = 0;
        for (size_t i = 0; i < st->n_leases; i++)
                *ret_journaled += st->leases[i].registers;
        pmugate_status_free(st);
        r = pmugate_release(b->conn, b->all_cpus, n_cpus);
        if (r < 0) {
                report_failure(b, "release", r);
                return r;
        }
        for (size_t c = 0; c < n_cpus; c++) {
                memcpy(before, saved + c * SPAN, SPAN);
                if (pread(b->fds[c], after, SPAN, MSR_PERFEVTSEL0) != SPAN)
                        return -EIO;
                if (memcmp(before, after, SPAN) != 0) {
                        fprintf(stderr, "PERFEVTSEL0-7 of CPU %zu changed between the lease and the release\n", c);
                        return -EBADMSG;
                }
        }
        return 0;
}

/* The two write cycles: one write on every CPU (a journal file per CPU), and eight on a few
 * CPUs (a few journal files of eight entries). Both write 32 registers on the 32-CPU machine. */
static void write_cycle_shape(const Bench *b, size_t k, size_t *ret_cpus, size_t *ret_per_cpu) {
        *ret_cpus = k == 0 ? b->o.n_cpus : MIN((size_t) b->o.n_cpus, 32 / EVTSEL_PER_CPU);
        *ret_per_cpu = k == 0 ? 1 : EVTSEL_PER_CPU;
}

static int bench_prepare_admin(Bench *b) {
        int r;

        b->all_cpus = calloc(b->o.n_cpus, sizeof(uint32_t));
        if (!b->all_cpus)
                return -ENOMEM;
        for (unsigned c = 0; c < b->o.n_cpus; c++)
                b->all_cpus[c] = c;
        if (!b->may_write)
                return 0;
        for (size_t k = 0; k < ELEMENTSOF(b->writes); k++) {
                size_t n_cpus, per_cpu;

                write_cycle_shape(b, k, &n_cpus, &per_cpu);
                r = batch_of_writes(n_cpus, per_cpu, &b->writes[k]);
                if (r >= 0)
                        r = verify_write_cycle(b, b->writes[k], n_cpus, per_cpu, &b->journaled[k]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int run_admin(Bench *b, AdminSuite *a, Placement p) {
        static const uint32_t new_cpus[] = { 0, 1, 2, 3, 4, 5, 6, 7 }, again_cpus[] = { 8, 9, 10, 11, 12, 13, 14, 15 };
        EchoBench eb = { .fd = b->echo_fd, .message = b->request.data, .size = b->request.size, .reply = b->reply };
        size_t n_grant_cpus = MIN((size_t) b->o.n_cpus, ELEMENTSOF(new_cpus));
        GrantBench revoke = { .conn = b->conn, .job = BENCH_JOB, .expect = true };
        GrantBench revoke_unknown = { .conn = b->conn, .job = BENCH_JOB, .expect = false };
        LeaseBench one = { .conn = b->conn, .cpus = b->all_cpus, .n_cpus = 1 };
        LeaseBench all = { .conn = b->conn, .cpus = b->all_cpus, .n_cpus = b->o.n_cpus };
        unsigned iterations;
        int r;

        for (size_t k = 0; k < N_LEVELS; k++) {
                const GrantLevelSpec *spec = &grant_levels[k];
                GrantLevel *gl = &a->levels[k];
                GrantBench grant_new = { .conn = b->conn, .job = BENCH_JOB, .uid = BENCH_UID, .cpus = new_cpus,
                                         .n_cpus = spec->cpu_lists ? n_grant_cpus : 0, .expect = false };
                GrantBench grant_again = { .conn = b->conn, .job = BENCH_JOB, .uid = BENCH_UID,
                                           .cpus = b->o.n_cpus >= 16 ? again_cpus : new_cpus,
                                           .n_cpus = spec->cpu_lists ? n_grant_cpus : 0, .expect = true };

                r = grants_set_count(b, spec->n, spec->cpu_lists);
                if (r >= 0)
                        r = grants_check_count(b, spec->n);
                if (r < 0)
                        return r;
                gl->n_existing = spec->n;
                gl->cpu_lists = spec->cpu_lists;
                gl->file_size = grants_file_size(b);
                gl->echo = (Series) { .label = "bare echo, in these cycles", .step = step_echo, .userdata = &eb };
                gl->grant_new = (Series) { .label = spec->cpu_lists ? "grant, new job with a CPU list" : "grant, new job",
                                           .step = step_grant, .userdata = &grant_new };
                gl->grant_again = (Series) { .label = spec->cpu_lists ? "grant again, other CPUs (replaces)" :
                                                                        "grant again (replaces)",
                                             .step = step_grant, .userdata = &grant_again };
                gl->revoke = (Series) { .label = "revoke, granted job", .step = step_revoke, .userdata = &revoke };
                gl->revoke_unknown = (Series) { .label = "revoke, unknown job (no-op)", .step = step_revoke,
                                                .userdata = &revoke_unknown };
                iterations = scaled(spec->iterations, b->o.scale);
                fprintf(stderr, "[%s] grant and revoke with %u grants %s CPU lists held: %u cycles\n",
                        placement_names[p], gl->n_existing, spec->cpu_lists ? "with" : "without", iterations);
                r = measure_cycle((Series *const[]) { &gl->echo, &gl->grant_new, &gl->grant_again, &gl->revoke,
                                                      &gl->revoke_unknown }, 5, iterations, NULL, 0);
                if (r < 0) {
                        report_failure(b, "Grant and revoke measurement", r);
                        return r;
                }
        }
        r = grants_set_count(b, 0, b->grant_lists);
        if (r < 0)
                return r;
        a->ran = true;
        if (!b->may_write) {
                fprintf(stderr, "[%s] leases skipped: the daemon does not let this caller write\n", placement_names[p]);
                return 0;
        }

        a->echo = (Series) { .label = "bare echo, in these cycles", .step = step_echo, .userdata = &eb };
        a->lease_one = (Series) { .label = "lease 1 CPU", .step = step_lease, .userdata = &one };
        a->release_one = (Series) { .label = "release 1 CPU", .step = step_release, .userdata = &one };
        (void) snprintf(a->labels[0], sizeof(a->labels[0]), "lease %u CPUs", b->o.n_cpus);
        (void) snprintf(a->labels[1], sizeof(a->labels[1]), "release %u CPUs", b->o.n_cpus);
        a->lease_all = (Series) { .label = a->labels[0], .step = step_lease, .userdata = &all };
        a->release_all = (Series) { .label = a->labels[1], .step = step_release, .userdata = &all };
        iterations = scaled(LEASE_ITERATIONS, b->o.scale);
        fprintf(stderr, "[%s] lease and release: %u cycles\n", placement_names[p], iterations);
        r = measure_cycle((Series *const[]) { &a->echo, &a->lease_one, &a->release_one, &a->lease_all,
                                              &a->release_all }, 5, iterations, NULL, 0);
        if (r < 0) {
                report_failure(b, "Lease measurement", r);
                return r;
        }

        for (size_t k = 0; k < ELEMENTSOF(a->cycles); k++) {
                WriteCycle *w = &a->cycles[k];
                LeaseBench held;
                BatchBench writes;

                write_cycle_shape(b, k, &w->n_cpus, &w->per_cpu);
                w->journaled = b->journaled[k];
                held = (LeaseBench) { .conn = b->conn, .cpus = b->all_cpus, .n_cpus = w->n_cpus };
                writes = (BatchBench) { .conn = b->conn, .batch = b->writes[k], .n = w->n_cpus * w->per_cpu,
                                        .values = b->values };
                (void) snprintf(w->labels[0], sizeof(w->labels[0]), "lease %zu CPU%s", w->n_cpus,
                                w->n_cpus == 1 ? "" : "s");
                if (w->per_cpu == 1)
                        (void) snprintf(w->labels[1], sizeof(w->labels[1]), "%zu writes: PERFEVTSEL0 on each",
                                        w->n_cpus);
                else
                        (void) snprintf(w->labels[1], sizeof(w->labels[1]), "%zu writes: PERFEVTSEL0-%zu on each",
                                        w->n_cpus * w->per_cpu, w->per_cpu - 1);
                (void) snprintf(w->labels[2], sizeof(w->labels[2]), "release, restoring %" PRIu64 " registers",
                                b->journaled[k]);
                w->echo = (Series) { .label = "bare echo, in these cycles", .step = step_echo, .userdata = &eb };
                w->lease = (Series) { .label = w->labels[0], .step = step_lease, .userdata = &held };
                w->write = (Series) { .label = w->labels[1], .step = step_batch, .userdata = &writes };
                w->release = (Series) { .label = w->labels[2], .step = step_release, .userdata = &held };
                w->total = (Series) { .label = "whole cycle, 3 round trips" };
                iterations = scaled(WRITE_ITERATIONS, b->o.scale);
                fprintf(stderr, "[%s] lease, %zu writes on %zu CPUs, release: %u cycles\n", placement_names[p],
                        w->n_cpus * w->per_cpu, w->n_cpus, iterations);
                r = measure_cycle((Series *const[]) { &w->echo, &w->lease, &w->write, &w->release }, 4, iterations,
                                  &w->total, 1);
                if (r < 0) {
                        report_failure(b, "Write cycle measurement", r);
                        return r;
                }
        }
        a->leases_ran = true;
        return 0;
}

static void admin_free(AdminSuite *a) {
        for (size_t k = 0; k < N_LEVELS; k++) {
                free(a->levels[k].echo.samples);
                free(a->levels[k].grant_new.samples);
                free(a->levels[k].grant_again.samples);
                free(a->levels[k].revoke.samples);
                free(a->levels[k].revoke_unknown.samples);
        }
        free(a->echo.samples);
        free(a->lease_one.samples);
        free(a->release_one.samples);
        free(a->lease_all.samples);
        free(a->release_all.samples);
        for (size_t k = 0; k < ELEMENTSOF(a->cycles); k++) {
                free(a->cycles[k].echo.samples);
                free(a->cycles[k].lease.samples);
                free(a->cycles[k].write.samples);
                free(a->cycles[k].release.samples);
                free(a->cycles[k].total.samples);
        }
}

/* ------------------------------------------------------------------ one suite */

static int run_suite(Bench *b, Suite *s) {
        EchoBench eb = { .fd = b->echo_fd, .message = b->request.data, .size = b->request.size, .reply = b->reply };
        BatchBench single = { .conn = b->conn, .batch = b->single, .n = 1, .values = b->values };
        BatchBench refused = { .conn = b->conn, .batch = b->refused, .n = 1, .values = b->values,
                               .expect = b->refused_errno };
        unsigned iterations = scaled(SINGLE_ITERATIONS, b->o.scale);
        int r;

        r = place(b, s->placement);
        if (r < 0)
                return r;

        s->echo.label = "bare SEQPACKET echo";
        s->echo.step = step_echo;
        s->echo.userdata = &eb;
        s->allowed.label = "daemon: single allowed op";
        s->allowed.step = step_batch;
        s->allowed.userdata = &single;
        s->denied.label = "daemon: single refused op";
        s->denied.step = step_batch;
        s->denied.userdata = &refused;
        fprintf(stderr, "[%s] echo, single and refused op: %u iterations each\n", placement_names[s->placement],
                iterations);
        r = measure((Series *const[]) { &s->echo, &s->allowed, &s->denied }, 3, iterations);
        if (r < 0) {
                fprintf(stderr, "Single-op measurement failed: %s\n", pmugate_strerror(r));
                return r;
        }

        for (size_t k = 0; k < N_SIZES; k++) {
                SizeResult *sr = &s->sizes[k];
                FloorBench fb = { .fds = b->fds, .cpu = b->cpu[k], .reg = b->reg[k], .n = batch_sizes[k],
                                  .values = b->values };
                BatchBench ob = { .conn = b->conn, .batch = b->ops[k], .n = batch_sizes[k], .values = b->values };
                BatchBench sb = { .conn = b->conn, .batch = b->sweep[k], .n = batch_sizes[k], .values = b->values };
                Series *list[3];
                size_t n_list = 0;

                iterations = scaled(batch_iterations[k], b->o.scale);
                sr->n = batch_sizes[k];
                sr->has_sweep = b->sweep[k] != NULL;
                sr->floor.label = "floor: in-process pread";
                sr->floor.step = step_floor;
                sr->floor.userdata = &fb;
                sr->ops.label = "daemon: batch of \"r\" ops";
                sr->ops.step = step_batch;
                sr->ops.userdata = &ob;
                sr->sweep.label = "daemon: compact sweep \"R\"";
                sr->sweep.step = step_batch;
                sr->sweep.userdata = &sb;
                list[n_list++] = &sr->floor;
                list[n_list++] = &sr->ops;
                if (sr->has_sweep)
                        list[n_list++] = &sr->sweep;
                fprintf(stderr, "[%s] %zu-op batches: %u iterations each\n", placement_names[s->placement], sr->n,
                        iterations);
                r = measure(list, n_list, iterations);
                if (r < 0) {
                        fprintf(stderr, "%zu-op measurement failed: %s\n", sr->n, pmugate_strerror(r));
                        return r;
                }
        }
        if (b->o.admin) {
                r = run_admin(b, &s->admin, s->placement);
                if (r < 0)
                        return r;
        }
        unpin_all(b);
        s->ran = true;
        return 0;
}

static void suite_free(Suite *s) {
        free(s->echo.samples);
        free(s->allowed.samples);
        free(s->denied.samples);
        for (size_t k = 0; k < N_SIZES; k++) {
                free(s->sizes[k].floor.samples);
                free(s->sizes[k].ops.samples);
                free(s->sizes[k].sweep.samples);
        }
        admin_free(&s->admin);
}

/* ------------------------------------------------------------------ report */

static void cpu_model(char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
        char line[512];

        (void) snprintf(buf, size, "unknown");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':');

                if (strncmp(line, "model name", 10) != 0 || !colon)
                        continue;
                colon += 1 + strspn(colon + 1, " \t");
                colon[strcspn(colon, "\n")] = '\0';
                (void) snprintf(buf, size, "%s", colon);
                return;
        }
}

static double clock_cost_usec(void) {
        enum { N = 100000 };
        uint64_t t0 = now_nsec(), t1;

        for (unsigned i = 0; i < N; i++)
                (void) now_nsec();
        t1 = now_nsec();
        return (double) (t1 - t0) / 1000.0 / N;
}

static void print_environment(const Bench *b, const pmugate_info *info) {
        struct utsname u = {};
        struct statfs sf = {};
        char model[256];
        bool tmpfs;

        cpu_model(model, sizeof(model));
        (void) uname(&u);
        tmpfs = statfs(b->o.root, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
        printf("environment\n");
        printf("  cpu              %s\n", model);
        printf("  cores            %ld online, %d usable by the benchmark\n", sysconf(_SC_NPROCESSORS_ONLN),
               CPU_COUNT(&b->self_mask));
        printf("  kernel           %s %s %s\n", u.sysname, u.release, u.machine);
        printf("  fake machine     %u CPUs, msr files on %s\n", b->o.n_cpus, tmpfs ? "tmpfs" : "a non-tmpfs file system");
        printf("  daemon           %s, backend %s, %s, %zu CPUs, caller role %s\n", info->server, info->backend,
               info->model_label[0] ? info->model_label : info->model_name, info->n_cpus, info->role);
        printf("  registers        %zu per CPU: PMC0-7, PERFEVTSEL0-7, FIXED_CTR0-3, PERF_METRICS,\n"
               "                   FIXED_CTR_CTRL, GLOBAL_STATUS/CTRL/INUSE, PERF_CAPABILITIES, TSC,\n"
               "                   MPERF, APERF, RAPL unit, package and DRAM energy\n", N_REGS);
        printf("  single request   %zu bytes; the echo message has the same size\n", b->request.size);
        printf("  timer            clock_gettime(CLOCK_MONOTONIC), %.3f us per call, one call in every sample\n",
               clock_cost_usec());
        printf("  iterations       echo/single/refused %u each; batches of", scaled(SINGLE_ITERATIONS, b->o.scale));
        for (size_t k = 0; k < N_SIZES; k++)
                printf(" %zu: %u%s", batch_sizes[k], scaled(batch_iterations[k], b->o.scale), k + 1 < N_SIZES ? "," : "");
        printf("\n                   per series, in %u interleaved rounds after one untimed round (scale %.2f)\n",
               ROUNDS, b->o.scale);
        if (b->o.admin) {
                printf("  admin cycles     grant/revoke");
                for (size_t k = 0; k < N_LEVELS; k++)
                        printf(" %u (%u held%s)%s", scaled(grant_levels[k].iterations, b->o.scale), grant_levels[k].n,
                               grant_levels[k].cpu_lists ? "" : ", no CPU lists", k + 1 < N_LEVELS ? "," : "");
                printf("\n                   lease/release %u, each write cycle %u; one untimed cycle first\n",
                       scaled(LEASE_ITERATIONS, b->o.scale), scaled(WRITE_ITERATIONS, b->o.scale));
        }
        if (b->o.runtime_dir) {
                tmpfs = statfs(b->o.runtime_dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
                printf("  runtime dir      on %s: the daemon's grants file and lease journals\n",
                       tmpfs ? "tmpfs" : "a non-tmpfs file system");
        }
        printf("\n");
}

static void print_row(const Series *s, size_t ops) {
        printf("  %-30s %5zu %7zu %10.2f %10.2f %10.3f\n", s->label, ops, s->n_samples, s->median, s->p90,
               s->median / (double) ops);
}

/* How far the ratio moves within the run: each interleaved round gives one paired estimate
 * (median over median of that round's blocks), and the interval is the distribution-free 95%
 * confidence interval of their median, order statistics n/2 -/+ 1.96 sqrt(n)/2. It shows drift
 * and noise during the run, not the spread between runs, which can be larger. */
static void ratio_interval(const Series *num, const Series *den, double *ret_lo, double *ret_hi) {
        double r[ROUNDS], half = 0.98 * sqrt((double) ROUNDS);
        double lo = floor((double) ROUNDS / 2.0 - half), hi = ceil((double) ROUNDS / 2.0 + half);

        for (unsigned i = 0; i < ROUNDS; i++)
                r[i] = num->round_median[i] / den->round_median[i];
        qsort(r, ROUNDS, sizeof(double), cmp_double);
        *ret_lo = r[lo < 0.0 ? 0 : (size_t) lo];
        *ret_hi = r[hi > (double) (ROUNDS - 1) ? ROUNDS - 1 : (size_t) hi];
}

/* Verdict on the ratio of medians; "within noise" when the interval holds the target, so that
 * the opposite verdict would be as plausible. */
static const char *verdict(const Series *num, const Series *den, double target) {
        double lo, hi;

        ratio_interval(num, den, &lo, &hi);
        if (lo <= target && hi > target)
                return "within noise";
        return num->median / den->median <= target ? "met" : "missed";
}

static void print_ratio(const char *what, const Series *num, const Series *den, double target) {
        double ratio = num->median / den->median, lo, hi;

        ratio_interval(num, den, &lo, &hi);
        printf("  %-34s %8.3f  %7.3f-%-7.3f %8.3f", what, ratio, lo, hi, num->p90 / den->p90);
        if (isnan(target))
                printf("\n");
        else if (ratio <= target)
                printf("   <= %.2f  %s\n", target, verdict(num, den, target));
        else
                printf("   <= %.2f  %s, %.1f%% above\n", target, verdict(num, den, target),
                       (ratio / target - 1.0) * 100.0);
}

static void print_suite(const Bench *b, const Suite *s) {
        const SizeResult *big = &s->sizes[N_SIZES - 2], *biggest = &s->sizes[N_SIZES - 1];
        double dn = (double) (biggest->n - big->n);
        char what[160];

        placement_describe(b, s->placement, what, sizeof(what));
        printf("placement %s\n", what);
        printf("results (per iteration, microseconds)\n");
        printf("  %-30s %5s %7s %10s %10s %10s\n", "measurement", "ops", "iters", "median", "p90", "median/op");
        print_row(&s->echo, 1);
        print_row(&s->allowed, 1);
        print_row(&s->denied, 1);
        for (size_t k = 0; k < N_SIZES; k++) {
                print_row(&s->sizes[k].floor, s->sizes[k].n);
                print_row(&s->sizes[k].ops, s->sizes[k].n);
                if (s->sizes[k].has_sweep)
                        print_row(&s->sizes[k].sweep, s->sizes[k].n);
        }

        printf("ratios (of medians; interval: 95%% over the paired rounds; p90: p90 over p90)\n");
        printf("  %-34s %8s  %-15s %8s   %s\n", "ratio", "median", "interval", "p90", "target");
        for (size_t k = 0; k < N_SIZES; k++) {
                const SizeResult *sr = &s->sizes[k];
                double target = sr->n == TARGET_BATCH_SIZE ? TARGET_BATCH_RATIO : NAN;

                (void) snprintf(what, sizeof(what), "batch(%zu) \"r\" / floor(%zu)", sr->n, sr->n);
                print_ratio(what, &sr->ops, &sr->floor, target);
                if (sr->has_sweep) {
                        (void) snprintf(what, sizeof(what), "batch(%zu) \"R\" / floor(%zu)", sr->n, sr->n);
                        print_ratio(what, &sr->sweep, &sr->floor, target);
                }
        }
        print_ratio("single / echo", &s->allowed, &s->echo, TARGET_SINGLE_RATIO);
        print_ratio("refused / allowed", &s->denied, &s->allowed, TARGET_REFUSED_RATIO);

        /* The two largest sizes separate what a batch costs per op from what it costs once. */
        printf("derived (from the medians)\n");
        printf("  per op, %zu to %zu ops:     floor %.3f us, \"r\" %.3f us", big->n, biggest->n,
               (biggest->floor.median - big->floor.median) / dn, (biggest->ops.median - big->ops.median) / dn);
        if (big->has_sweep && biggest->has_sweep)
                printf(", \"R\" %.3f us", (biggest->sweep.median - big->sweep.median) / dn);
        printf("\n");
        for (size_t k = 0; k < N_SIZES; k++) {
                printf("  above the floor at %4zu ops: \"r\" %+8.2f us", s->sizes[k].n,
                       s->sizes[k].ops.median - s->sizes[k].floor.median);
                if (s->sizes[k].has_sweep)
                        printf(", \"R\" %+8.2f us", s->sizes[k].sweep.median - s->sizes[k].floor.median);
                printf("\n");
        }
        printf("  single op above the echo:   %+.2f us\n", s->allowed.median - s->echo.median);
        printf("\n");
}

/* Daemon side: the round trip minus round_trips bare echoes, the warm one of the single-op
 * measurement. The echo timed inside an admin cycle runs right after the daemon's work, cold,
 * and is shown only to tell how much slower the transport gets there. */
static void print_admin_row(const Series *x, const Series *echo, unsigned round_trips) {
        printf("    %-40s %6zu %10.2f %10.2f", x->label, x->n_samples, x->median, x->p90);
        if (echo)
                printf(" %+11.2f", x->median - round_trips * echo->median);
        printf("\n");
}

static void print_admin(const Suite *s) {
        const AdminSuite *a = &s->admin;
        const GrantLevel *none = NULL, *most = NULL, *bare = NULL;
        const Series *echo = &s->echo;

        if (!a->ran)
                return;
        printf("admin operations as root (per round trip, microseconds; daemon side: median minus the\n"
               "median of the bare echo above, %.2f us, so it includes the library's own work)\n", echo->median);
        printf("  %-42s %6s %10s %10s %11s\n", "measurement", "iters", "median", "p90", "daemon side");
        for (size_t k = 0; k < N_LEVELS; k++) {
                const GrantLevel *gl = &a->levels[k];

                if (gl->n_existing == 0)
                        none = gl;
                else if (gl->cpu_lists)
                        most = !most || gl->n_existing > most->n_existing ? gl : most;
                else
                        bare = !bare || gl->n_existing > bare->n_existing ? gl : bare;
                printf("  %u grants held", gl->n_existing);
                if (gl->n_existing > 0)
                        printf(", %s", gl->cpu_lists ? "each with a CPU list"
                                                     : "none with a CPU list (cgroup decides)");
                if (gl->file_size >= 0)
                        printf("; grants file %" PRId64 " bytes", gl->file_size);
                printf("\n");
                print_admin_row(&gl->echo, NULL, 0);
                print_admin_row(&gl->grant_new, echo, 1);
                print_admin_row(&gl->grant_again, echo, 1);
                print_admin_row(&gl->revoke, echo, 1);
                print_admin_row(&gl->revoke_unknown, echo, 1);
        }
        if (a->leases_ran) {
                printf("  lease and release, nothing written (nothing to restore)\n");
                print_admin_row(&a->echo, NULL, 0);
                print_admin_row(&a->lease_one, echo, 1);
                print_admin_row(&a->release_one, echo, 1);
                print_admin_row(&a->lease_all, echo, 1);
                print_admin_row(&a->release_all, echo, 1);
                for (size_t k = 0; k < ELEMENTSOF(a->cycles); k++) {
                        const WriteCycle *w = &a->cycles[k];

                        printf("  lease, %zu writes, release: %zu lease journal%s (one per CPU written), %" PRIu64
                               " entries\n", w->n_cpus * w->per_cpu, w->n_cpus, w->n_cpus == 1 ? "" : "s",
                               w->journaled);
                        print_admin_row(&w->echo, NULL, 0);
                        print_admin_row(&w->lease, echo, 1);
                        print_admin_row(&w->write, echo, 1);
                        print_admin_row(&w->release, echo, 1);
                        print_admin_row(&w->total, echo, 3);
                }
        }
        /* How the cost grows with the grants held: the slope from none to the most. */
        printf("derived (from the medians)\n");
        if (none)
                for (size_t k = 0; k < 2; k++) {
                        const GrantLevel *gl = k == 0 ? most : bare;
                        double dn;

                        if (!gl)
                                continue;
                        dn = (double) gl->n_existing;
                        printf("  per grant held, 0 to %u %s: grant %+.3f us, again %+.3f us, revoke %+.3f us, "
                               "unknown %+.3f us\n", gl->n_existing, gl->cpu_lists ? "with CPU lists" : "without",
                               (gl->grant_new.median - none->grant_new.median) / dn,
                               (gl->grant_again.median - none->grant_again.median) / dn,
                               (gl->revoke.median - none->revoke.median) / dn,
                               (gl->revoke_unknown.median - none->revoke_unknown.median) / dn);
                }
        if (a->leases_ran) {
                const WriteCycle *w = &a->cycles[0];

                if (w->n_cpus > 1)
                        printf("  per CPU, lease of 1 to %zu CPUs: lease %+.2f us, release %+.2f us\n", w->n_cpus,
                               (a->lease_all.median - a->lease_one.median) / (double) (w->n_cpus - 1),
                               (a->release_all.median - a->release_one.median) / (double) (w->n_cpus - 1));
                for (size_t k = 0; k < ELEMENTSOF(a->cycles); k++) {
                        double n;

                        w = &a->cycles[k];
                        n = (double) (w->n_cpus * w->per_cpu);
                        printf("  per write, %zu on %zu CPUs: write %.2f us, restore %.2f us (daemon side over %.0f)\n",
                               w->n_cpus * w->per_cpu, w->n_cpus, (w->write.median - echo->median) / n,
                               (w->release.median - echo->median) / n, n);
                }
        }
        printf("\n");
}

/* The largest daemon side of the grant (new and again) or revoke (granted and unknown) rows
 * over every grant level. */
static bool admin_worst(const Suite *s, bool revoke, double *ret) {
        double worst = -INFINITY;

        if (!s->admin.ran)
                return false;
        for (size_t k = 0; k < N_LEVELS; k++) {
                const GrantLevel *gl = &s->admin.levels[k];
                const Series *x = revoke ? &gl->revoke : &gl->grant_new;
                const Series *y = revoke ? &gl->revoke_unknown : &gl->grant_again;

                worst = fmax(worst, fmax(x->median, y->median) - s->echo.median);
        }
        *ret = worst;
        return true;
}

static void print_admin_verdict(const char *what, const Suite *suites, bool revoke) {
        char cell[48];
        int pad = 0;

        printf("  %-34s", what);
        for (Placement p = 0; p < _PLACEMENT_MAX; p++) {
                double worst;

                if (!suites[p].ran)
                        continue;
                if (admin_worst(&suites[p], revoke, &worst))
                        (void) snprintf(cell, sizeof(cell), "%.0f us %s", worst,
                                        worst <= TARGET_ADMIN_USEC ? "met" : "missed");
                else
                        (void) snprintf(cell, sizeof(cell), "n/a");
                printf("%*s  %s", pad, "", cell);
                pad = 20 - (int) strlen(cell);
        }
        printf("\n");
}

typedef enum TargetKind {
        TARGET_BATCH_OPS,
        TARGET_BATCH_SWEEP,
        TARGET_SINGLE,
        TARGET_REFUSED,
} TargetKind;

/* The two series a target compares under one placement; false when not measured. */
static bool target_pair(const Suite *s, TargetKind kind, const Series **ret_num, const Series **ret_den) {
        const SizeResult *sr = NULL;

        for (size_t k = 0; k < N_SIZES; k++)
                if (s->sizes[k].n == TARGET_BATCH_SIZE)
                        sr = &s->sizes[k];
        switch (kind) {
        case TARGET_BATCH_OPS:
                *ret_num = sr ? &sr->ops : NULL;
                *ret_den = sr ? &sr->floor : NULL;
                break;
        case TARGET_BATCH_SWEEP:
                *ret_num = sr && sr->has_sweep ? &sr->sweep : NULL;
                *ret_den = sr ? &sr->floor : NULL;
                break;
        case TARGET_SINGLE:
                *ret_num = &s->allowed;
                *ret_den = &s->echo;
                break;
        default:
                *ret_num = &s->denied;
                *ret_den = &s->allowed;
        }
        return *ret_num && *ret_den;
}

static void print_verdict(const char *what, const Suite *suites, TargetKind kind, double target) {
        char cell[48];
        int pad = 0;

        printf("  %-34s", what);
        for (Placement p = 0; p < _PLACEMENT_MAX; p++) {
                const Series *num, *den;

                if (!suites[p].ran)
                        continue;
                if (target_pair(&suites[p], kind, &num, &den))
                        (void) snprintf(cell, sizeof(cell), "%.3f %s", num->median / den->median,
                                        verdict(num, den, target));
                else
                        (void) snprintf(cell, sizeof(cell), "n/a");
                printf("%*s  %s", pad, "", cell);
                pad = 20 - (int) strlen(cell);
        }
        printf("\n");
}

static void print_targets(const Suite *suites) {
        bool admin = false;
        char what[64];

        for (Placement p = 0; p < _PLACEMENT_MAX; p++)
                admin = admin || suites[p].admin.ran;
        if (admin)
                printf("targets (per placement: ratio of medians; for grant and revoke, the largest daemon side\n"
                       "of a median over every number of grants held)\n");
        else
                printf("targets (ratio of medians per placement)\n");
        printf("  %-34s", "target");
        for (Placement p = 0, pad = 0; p < _PLACEMENT_MAX; p++)
                if (suites[p].ran) {
                        printf("%*s  %s", pad, "", placement_names[p]);
                        pad = 20 - (int) strlen(placement_names[p]);
                }
        printf("\n");
        (void) snprintf(what, sizeof(what), "batch(%u) \"r\" <= %.2f x floor", TARGET_BATCH_SIZE, TARGET_BATCH_RATIO);
        print_verdict(what, suites, TARGET_BATCH_OPS, TARGET_BATCH_RATIO);
        (void) snprintf(what, sizeof(what), "batch(%u) \"R\" <= %.2f x floor", TARGET_BATCH_SIZE, TARGET_BATCH_RATIO);
        print_verdict(what, suites, TARGET_BATCH_SWEEP, TARGET_BATCH_RATIO);
        (void) snprintf(what, sizeof(what), "single op <= %.2f x echo", TARGET_SINGLE_RATIO);
        print_verdict(what, suites, TARGET_SINGLE, TARGET_SINGLE_RATIO);
        (void) snprintf(what, sizeof(what), "refused op <= %.2f x allowed op", TARGET_REFUSED_RATIO);
        print_verdict(what, suites, TARGET_REFUSED, TARGET_REFUSED_RATIO);
        if (admin) {
                (void) snprintf(what, sizeof(what), "grant daemon side <= %.0f us", TARGET_ADMIN_USEC);
                print_admin_verdict(what, suites, false);
                (void) snprintf(what, sizeof(what), "revoke daemon side <= %.0f us", TARGET_ADMIN_USEC);
                print_admin_verdict(what, suites, true);
        }
}

/* ------------------------------------------------------------------ main */

static void help(void) {
        printf("Usage: bench-rpc --socket=PATH --root=DIR --cpus=N [OPTIONS]\n"
               "\n"
               "Measures pmugated round trips against an in-process pread floor of the same registers\n"
               "and a bare SOCK_SEQPACKET echo. Run it through bench/run-bench.py, which prepares a\n"
               "fake machine under DIR and a daemon on PATH. Not a test: it exits 0 whenever it could\n"
               "measure, whatever the ratios are.\n"
               "\n"
               "  --socket=PATH       pmugated's socket\n"
               "  --root=DIR          root of the fake machine the daemon serves (DIR/dev/cpu/N/msr)\n"
               "  --cpus=N            number of CPUs of the fake machine\n"
               "  --daemon-pid=PID    the daemon's pid, so it can be pinned like the echo server\n"
               "  --placement=LIST    comma-separated: same, split, free (default: same,split with\n"
               "                      --daemon-pid, else free)\n"
               "  --scale=F           multiply every iteration count by F (default 1)\n"
               "  --runtime-dir=DIR   the daemon's --runtime-dir, to report its file system and the\n"
               "                      size of its grants file\n"
               "  --no-admin          skip grant, revoke, lease and release\n");
}

static int parse_placements(const char *s, bool *ret) {
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (Placement p = 0; p < _PLACEMENT_MAX; p++)
                ret[p] = false;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                Placement p;

                for (p = 0; p < _PLACEMENT_MAX; p++)
                        if (strcmp(w, placement_names[p]) == 0)
                                break;
                if (p == _PLACEMENT_MAX) {
                        fprintf(stderr, "Unknown placement '%s': use same, split or free\n", w);
                        return -EINVAL;
                }
                ret[p] = true;
        }
        return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret) {
        unsigned long v;
        char *end;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v == 0 || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_argv(int argc, char *argv[], Options *o) {
        enum {
                ARG_SOCKET = 0x100,
                ARG_ROOT,
                ARG_CPUS,
                ARG_DAEMON_PID,
                ARG_PLACEMENT,
                ARG_SCALE,
                ARG_RUNTIME_DIR,
                ARG_NO_ADMIN,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "root", required_argument, NULL, ARG_ROOT },
                { "cpus", required_argument, NULL, ARG_CPUS },
                { "daemon-pid", required_argument, NULL, ARG_DAEMON_PID },
                { "placement", required_argument, NULL, ARG_PLACEMENT },
                { "scale", required_argument, NULL, ARG_SCALE },
                { "runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR },
                { "no-admin", no_argument, NULL, ARG_NO_ADMIN },
                {}
        };
        unsigned long v;
        char *end;
        int c;

        *o = (Options) { .scale = 1.0, .admin = true };
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_SOCKET:
                        o->socket_path = optarg;
                        break;
                case ARG_ROOT:
                        o->root = optarg;
                        break;
                case ARG_CPUS:
                        if (parse_uint(optarg, PMUGATE_CPUS_MAX, &v) < 0) {
                                fprintf(stderr, "--cpus needs a number between 1 and %u\n", PMUGATE_CPUS_MAX);
                                return -EINVAL;
                        }
                        o->n_cpus = (unsigned) v;
                        break;
                case ARG_DAEMON_PID:
                        if (parse_uint(optarg, INT32_MAX, &v) < 0) {
                                fprintf(stderr, "--daemon-pid needs a pid\n");
                                return -EINVAL;
                        }
                        o->daemon_pid = (pid_t) v;
                        break;
                case ARG_PLACEMENT:
                        if (parse_placements(optarg, o->placements) < 0)
                                return -EINVAL;
                        o->placements_set = true;
                        break;
                case ARG_SCALE:
                        errno = 0;
                        o->scale = strtod(optarg, &end);
                        if (errno != 0 || end == optarg || *end != '\0' || !(o->scale > 0.0) || o->scale > 100.0) {
                                fprintf(stderr, "--scale needs a number above 0 and at most 100\n");
                                return -EINVAL;
                        }
                        break;
                case ARG_RUNTIME_DIR:
                        o->runtime_dir = optarg;
                        break;
                case ARG_NO_ADMIN:
                        o->admin = false;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc || !o->socket_path || !o->root || o->n_cpus == 0) {
                fprintf(stderr, "bench-rpc needs --socket=PATH --root=DIR --cpus=N; see --help\n");
                return -EINVAL;
        }
        if (!o->placements_set) {
                o->placements[PLACEMENT_SAME] = o->placements[PLACEMENT_SPLIT] = o->daemon_pid > 0;
                o->placements[PLACEMENT_FREE] = o->daemon_pid == 0;
        }
        if ((o->placements[PLACEMENT_SAME] || o->placements[PLACEMENT_SPLIT]) && o->daemon_pid == 0) {
                fprintf(stderr, "Placements same and split pin the daemon and need --daemon-pid\n");
                return -EINVAL;
        }
        return 1;
}

static void bench_done(Bench *b) {
        pmugate_batch_free(b->single);
        pmugate_batch_free(b->refused);
        for (size_t k = 0; k < N_SIZES; k++) {
                pmugate_batch_free(b->ops[k]);
                pmugate_batch_free(b->sweep[k]);
                free(b->cpu[k]);
                free(b->reg[k]);
        }
        for (size_t k = 0; k < ELEMENTSOF(b->writes); k++)
                pmugate_batch_free(b->writes[k]);
        /* A run that failed half-way leaves nothing behind in the daemon: leases end with the
         * connection, grants do not. */
        if (b->conn && b->o.admin) {
                (void) grants_set_count(b, 0, b->grant_lists);
                (void) pmugate_revoke(b->conn, BENCH_JOB, NULL);
        }
        free(b->all_cpus);
        pmugate_disconnect(b->conn);
        if (b->fds)
                for (unsigned c = 0; c < b->o.n_cpus; c++)
                        if (b->fds[c] >= 0)
                                (void) close(b->fds[c]);
        free(b->fds);
        free(b->values);
        free(b->reply);
        msgpack_sbuffer_destroy(&b->request);
        if (b->echo_pid > 0) {
                unpin_all(b);
                /* Closing our end makes the echo server's receive return 0, and it exits. */
                (void) close(TAKE_FD(b->echo_fd));
                (void) waitpid(b->echo_pid, NULL, 0);
        }
}

static int bench_setup(Bench *b, pmugate_info **ret_info) {
        int r;

        if (sched_getaffinity(0, sizeof(cpu_set_t), &b->self_mask) < 0)
                return -errno;
        b->cpu_a = b->cpu_b = -1;
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &b->self_mask)) {
                        if (b->cpu_a < 0)
                                b->cpu_a = c;
                        else if (b->cpu_b < 0)
                                b->cpu_b = c;
                }
        if (b->o.placements[PLACEMENT_SPLIT] && b->cpu_b < 0) {
                fprintf(stderr, "Placement split needs two CPUs; this process may use only CPU %d\n", b->cpu_a);
                return -EINVAL;
        }
        if (b->o.daemon_pid > 0) {
                if (sched_getaffinity(b->o.daemon_pid, sizeof(cpu_set_t), &b->daemon_mask) < 0) {
                        r = -errno;
                        fprintf(stderr, "Cannot read the affinity of pid %d: %s\n", (int) b->o.daemon_pid, strerror(-r));
                        return r;
                }
                b->have_daemon_mask = true;
        }

        r = echo_start(&b->echo_pid);
        if (r < 0) {
                fprintf(stderr, "Cannot start the echo server: %s\n", strerror(-r));
                return r;
        }
        b->echo_fd = r;

        b->fds = calloc(b->o.n_cpus, sizeof(int));
        b->values = calloc(PMUGATE_OPS_PER_BATCH_MAX, sizeof(uint64_t));
        b->reply = malloc(PMUGATE_REPLY_SIZE_MAX);
        if (!b->fds || !b->values || !b->reply)
                return -ENOMEM;
        for (unsigned c = 0; c < b->o.n_cpus; c++)
                b->fds[c] = -EBADF;
        /* Every fd is opened before anything is timed; the floor times only the preads. */
        for (unsigned c = 0; c < b->o.n_cpus; c++) {
                char path[4096];

                (void) snprintf(path, sizeof(path), "%s/dev/cpu/%u/msr", b->o.root, c);
                b->fds[c] = open(path, O_RDONLY | O_CLOEXEC);
                if (b->fds[c] < 0) {
                        r = -errno;
                        fprintf(stderr, "Cannot open %s: %m\n", path);
                        return r;
                }
        }

        r = pmugate_connect(b->o.socket_path, &b->conn);
        if (r < 0) {
                fprintf(stderr, "Cannot connect to %s: %s\n", b->o.socket_path, pmugate_strerror(r));
                return r;
        }
        r = pmugate_hello(b->conn, ret_info);
        if (r < 0) {
                fprintf(stderr, "hello failed: %s\n", pmugate_strerror(r));
                return r;
        }
        if (!(*ret_info)->may_read || (*ret_info)->n_cpus < b->o.n_cpus) {
                fprintf(stderr, "The daemon serves %zu CPUs and %s reading; the benchmark needs %u CPUs and read rights\n",
                        (*ret_info)->n_cpus, (*ret_info)->may_read ? "allows" : "refuses", b->o.n_cpus);
                return -EPERM;
        }
        b->may_write = (*ret_info)->may_write;
        r = single_request(&b->request);
        if (r < 0)
                return r;
        r = bench_prepare_batches(b);
        if (r < 0 || !b->o.admin)
                return r;
        return bench_prepare_admin(b);
}

static int run(int argc, char *argv[]) {
        _cleanup_(pmugate_info_freep) pmugate_info *info = NULL;
        Bench b = { .echo_fd = -EBADF };
        Suite suites[_PLACEMENT_MAX] = {};
        int r;

        r = parse_argv(argc, argv, &b.o);
        if (r <= 0)
                return r;
        msgpack_sbuffer_init(&b.request);

        r = bench_setup(&b, &info);
        if (r < 0)
                goto finish;
        print_environment(&b, info);

        for (Placement p = 0; p < _PLACEMENT_MAX; p++) {
                if (!b.o.placements[p])
                        continue;
                suites[p].placement = p;
                r = run_suite(&b, &suites[p]);
                if (r < 0)
                        goto finish;
        }
        for (Placement p = 0; p < _PLACEMENT_MAX; p++)
                if (suites[p].ran) {
                        print_suite(&b, &suites[p]);
                        print_admin(&suites[p]);
                }
        print_targets(suites);
        r = 0;

finish:
        for (Placement p = 0; p < _PLACEMENT_MAX; p++)
                suite_free(&suites[p]);
        bench_done(&b);
        return r;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulator's sampling events (backend/sim/sim-perf-sample.c): pmugate timing's branch
 * stack attr on a real child that spins, its ring mapped from the exported memfd and walked
 * here record by record: the MMAP2 of the [lbr] map, COMM, samples whose stacks follow the
 * cyclic branch list with cycles distributed as configured, LOST after a full ring, EXIT,
 * enable_on_exec, AMD's cycle-less entries, the refusals, and the [lbr] parser's refusals
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/sim/sim-lbr.h"
#include "backend/sim/sim-perf.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "sim_test_util.h"
#include "timing-attr.h"

#define MAP_START UINT64_C(0x555555555000)
#define MAP_LEN UINT64_C(0x2000)
#define MAP_PGOFF UINT64_C(0x1000)
#define N_BRANCHES 3U
#define PERIOD UINT64_C(200000)
#define SPIN_SECONDS 0.6
#define TICK_NS 2000000L
#define WAIT_S 30.0
#define SAMPLE_BYTES (56 + 32 * sizeof(struct perf_branch_entry))

/* The program the tests configure: three branches in a cycle, the first with the document's
 * two spikes (32 cycles retire-bound, 300 from DRAM). */
static const struct {
        uint64_t from, to;
        const char *mix;
        double mean[2], sd[2], weight[2];
} program[N_BRANCHES] = {
        { 0x555555555189, 0x555555555170, "32:2@0.7 300:30@0.3", { 32, 300 }, { 2, 30 }, { 0.7, 0.3 } },
        { 0x5555555551a0, 0x555555555190, "10:1", { 10, 0 }, { 1, 0 }, { 1, 0 } },
        { 0x5555555561c0, 0x5555555551a8, "50:5@0.5 80:5@0.5", { 50, 80 }, { 5, 5 }, { 0.5, 0.5 } },
};

static char self_exe[4096];

static void lbr_config(char *buf, size_t size, const char *machine) {
        size_t n = (size_t) snprintf(buf, size, "%s[lbr]\nmap = 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
                                     "\nbinary = %s\n", machine, MAP_START, MAP_LEN, MAP_PGOFF, self_exe);

        for (size_t i = 0; i < N_BRANCHES; i++)
                n += (size_t) snprintf(buf + n, size - n, "branch = 0x%" PRIx64 " 0x%" PRIx64 " %s\n",
                                       program[i].from, program[i].to, program[i].mix);
        assert_true(n < size);
}

typedef struct Fixture {
        SimTest t;
        PerfDriver *d;
} Fixture;

static Fixture fixture_new(const char *model, const char *config) {
        Fixture f = { .t = sim_test_new(model, config) };

        assert_int_equal(sim_perf_driver_new(f.t.backend, sim_test_kernel_driver(), &f.d), 0);
        return f;
}

static void fixture_free(Fixture *f) {
        f->d->vtable->free(f->d);
        sim_test_free(&f->t);
}

/* ---- A child that burns CPU time on real CPU 0 (simulated CPU 0's) once told to */

static void burn_cpu(double seconds) {
        struct timespec start, now;
        volatile uint64_t x = 0;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
        do {
                for (int i = 0; i < 100000; i++)
                        x += (uint64_t) i;
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
        } while ((double) (now.tv_sec - start.tv_sec) + (double) (now.tv_nsec - start.tv_nsec) * 1e-9 <
                 seconds);
        (void) x;       /* clang: the sum is only there to burn time */
}

typedef struct Child {
        pid_t pid;
        int go;
} Child;

/* exec_spin: the child execs this test binary with --spin instead of burning in place. */
static Child child_start(double seconds, bool exec_spin) {
        int pipefd[2];
        cpu_set_t set;
        Child c;

        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        c.pid = fork();
        assert_true(c.pid >= 0);
        if (c.pid == 0) {
                char arg[32], ch;

                CPU_ZERO(&set);
                CPU_SET(0, &set);
                if (sched_setaffinity(0, sizeof(set), &set) < 0 || read(pipefd[0], &ch, 1) != 1)
                        _exit(1);
                if (exec_spin) {
                        (void) snprintf(arg, sizeof(arg), "%g", seconds);
                        execl(self_exe, self_exe, "--spin", arg, (char *) NULL);
                        _exit(127);
                }
                burn_cpu(seconds);
                _exit(0);
        }
        close(pipefd[0]);
        c.go = pipefd[1];
        return c;
}

static void child_go(Child *c) {
        assert_int_equal(write(c->go, "g", 1), 1);
        close(c->go);
        c->go = -1;
}

static void child_wait(Child *c) {
        int status;

        if (c->go >= 0)
                close(c->go);
        assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- The ring as a client maps it, and a small walker */

typedef struct Ring {
        int fd;
        void *map;
        size_t size;
        struct perf_event_mmap_page *meta;
        const uint8_t *data;
} Ring;

static Ring ring_map(Fixture *f, int handle) {
        long page = sysconf(_SC_PAGESIZE);
        Ring r = { .size = (size_t) page + TIMING_RING_DATA_BYTES };

        r.fd = perf_driver_export_fd(f->d, handle);
        assert_true(r.fd >= 0);
        r.map = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
        assert_true(r.map != MAP_FAILED);
        r.meta = r.map;
        assert_int_equal(r.meta->data_offset, (uint64_t) page);
        assert_int_equal(r.meta->data_size, TIMING_RING_DATA_BYTES);
        r.data = (const uint8_t *) r.map + page;
        return r;
}

static void ring_unmap(Ring *r) {
        assert_int_equal(munmap(r->map, r->size), 0);
        close(r->fd);
}

typedef struct Stats {
        double sum, sum_sq;
        uint64_t n, below;      /* below: entries under the threshold between two spikes */
} Stats;

typedef struct Walk {
        uint64_t records, mmap2, comm, samples, exits, lost_records, lost;
        uint16_t first_type, second_type, comm_misc;
        bool sample_before_mmap2, record_after_exit, cycles_nonzero;
        uint64_t entries_per_sample;
        uint64_t last_time;             /* every record's time: never earlier than the last's */
        double tick_seconds;            /* spent in the driver's ticks, for the cost per sample */
        Stats branch[N_BRANCHES];
        pid_t pid;
        int cpu;
} Walk;

static uint64_t rd64(const uint8_t *p) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

static uint32_t rd32(const uint8_t *p) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

static size_t branch_index(uint64_t from, uint64_t to) {
        for (size_t i = 0; i < N_BRANCHES; i++)
                if (program[i].from == from && program[i].to == to)
                        return i;
        fail_msg("entry 0x%" PRIx64 " -> 0x%" PRIx64 " is no configured branch", from, to);
        return 0;
}

/* sample_id_all's trailer: pid, tid, time, cpu, res */
static void check_sample_id(const Walk *w, const uint8_t *rec, size_t size) {
        const uint8_t *id = rec + size - 24;

        assert_int_equal(rd32(id), (uint32_t) w->pid);
        assert_int_equal(rd32(id + 4), (uint32_t) w->pid);
        assert_int_equal(rd32(id + 16), (uint32_t) w->cpu);
}

static void walk_mmap2(Walk *w, const uint8_t *rec, size_t size) {
        struct stat st;

        assert_int_equal(stat(self_exe, &st), 0);
        assert_int_equal(rd32(rec + 8), (uint32_t) w->pid);
        assert_int_equal(rd32(rec + 12), (uint32_t) w->pid);
        assert_int_equal(rd64(rec + 16), MAP_START);
        assert_int_equal(rd64(rec + 24), MAP_LEN);
        assert_int_equal(rd64(rec + 32), MAP_PGOFF);
        assert_int_equal(rd32(rec + 40), major(st.st_dev));
        assert_int_equal(rd32(rec + 44), minor(st.st_dev));
        assert_int_equal(rd64(rec + 48), (uint64_t) st.st_ino);
        assert_int_equal(rd32(rec + 64), PROT_READ | PROT_EXEC);
        assert_int_equal(rd32(rec + 68), MAP_PRIVATE);
        assert_string_equal((const char *) rec + 72, self_exe);
        assert_int_equal((72 + strlen(self_exe) + 1 + 7) / 8 * 8 + 24, size);
        check_sample_id(w, rec, size);
        w->mmap2++;
}

static void walk_sample(Walk *w, const uint8_t *rec, size_t size) {
        uint64_t nr = rd64(rec + 48);
        const uint8_t *e = rec + 56;
        size_t prev = 0;

        assert_int_equal(size, 56 + nr * sizeof(struct perf_branch_entry));
        assert_int_equal(rd32(rec + 16), (uint32_t) w->pid);
        assert_int_equal(rd32(rec + 32), (uint32_t) w->cpu);
        assert_int_equal(rd64(rec + 40), PERIOD);
        assert_int_equal(rd64(rec + 8), rd64(e));     /* ip: the newest entry's source */
        if (w->entries_per_sample == 0)
                w->entries_per_sample = nr;
        assert_int_equal(nr, w->entries_per_sample);
        if (w->mmap2 == 0)
                w->sample_before_mmap2 = true;
        for (uint64_t i = 0; i < nr; i++, e += sizeof(struct perf_branch_entry)) {
                struct perf_branch_entry b;
                size_t k;

                memcpy(&b, e, sizeof(b));
                k = branch_index(b.from, b.to);
                /* newest first: each entry's predecessor in the cyclic list comes next */
                if (i > 0)
                        assert_int_equal(k, (prev + N_BRANCHES - 1) % N_BRANCHES);
                prev = k;
                assert_true(b.predicted && !b.mispred);
                w->cycles_nonzero |= b.cycles != 0;
                w->branch[k].sum += b.cycles;
                w->branch[k].sum_sq += (double) b.cycles * b.cycles;
                w->branch[k].n++;
                w->branch[k].below += b.cycles < 150;
        }
        w->samples++;
}

static void walk_record(Walk *w, const uint8_t *rec, size_t size) {
        const struct perf_event_header *h = (const struct perf_event_header *) rec;

        uint64_t time = h->type == PERF_RECORD_SAMPLE ? rd64(rec + 24) : rd64(rec + size - 16);

        assert_true(time >= w->last_time);
        w->last_time = time;
        if (w->exits > 0)
                w->record_after_exit = true;
        if (w->records == 0)
                w->first_type = h->type;
        else if (w->records == 1)
                w->second_type = h->type;
        w->records++;
        switch (h->type) {
        case PERF_RECORD_MMAP2:
                assert_int_equal(h->misc, PERF_RECORD_MISC_USER);
                walk_mmap2(w, rec, size);
                break;
        case PERF_RECORD_COMM:
                assert_int_equal(rd32(rec + 8), (uint32_t) w->pid);
                w->comm_misc = h->misc;
                check_sample_id(w, rec, size);
                w->comm++;
                break;
        case PERF_RECORD_SAMPLE:
                assert_int_equal(h->misc, PERF_RECORD_MISC_USER);
                walk_sample(w, rec, size);
                break;
        case PERF_RECORD_EXIT:
                assert_int_equal(size, 8 + 24 + 24);
                assert_int_equal(rd32(rec + 8), (uint32_t) w->pid);
                assert_int_equal(rd32(rec + 12), (uint32_t) getpid());
                check_sample_id(w, rec, size);
                w->exits++;
                break;
        case PERF_RECORD_LOST:
                assert_int_equal(size, 8 + 16 + 24);
                assert_true(rd64(rec + 16) > 0);
                check_sample_id(w, rec, size);
                w->lost_records++;
                w->lost += rd64(rec + 16);
                break;
        default:
                fail_msg("record type %u", h->type);
        }
}

static void ring_out(const Ring *r, uint64_t pos, void *buf, size_t n) {
        size_t off = (size_t) (pos % TIMING_RING_DATA_BYTES), first = MIN(n, TIMING_RING_DATA_BYTES - off);

        memcpy(buf, r->data + off, first);
        memcpy((uint8_t *) buf + first, r->data, n - first);
}

/* Walks every record between the tail and the head, then gives the space back. */
static void ring_drain(Ring *r, Walk *w) {
        uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE), tail = r->meta->data_tail;
        uint8_t rec[UINT16_MAX];

        assert_true(head - tail <= TIMING_RING_DATA_BYTES);
        while (tail < head) {
                struct perf_event_header h;

                ring_out(r, tail, &h, sizeof(h));
                assert_true(h.size >= sizeof(h) && h.size % 8 == 0 && tail + h.size <= head);
                ring_out(r, tail, rec, h.size);
                walk_record(w, rec, h.size);
                tail += h.size;
        }
        __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void sleep_ns(long ns) {
        struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };

        (void) nanosleep(&ts, NULL);
}

static double since(const struct timespec *start) {
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double) (now.tv_sec - start->tv_sec) + (double) (now.tv_nsec - start->tv_nsec) * 1e-9;
}

/* Ticks the driver and drains the ring until the EXIT record (or WAIT_S). */
static void run_until_exit(Fixture *f, Ring *r, Walk *w) {
        struct timespec start;

        clock_gettime(CLOCK_MONOTONIC, &start);
        while (w->exits == 0 && since(&start) < WAIT_S) {
                struct timespec before;

                sleep_ns(TICK_NS);
                clock_gettime(CLOCK_MONOTONIC, &before);
                sim_perf_driver_tick(f->d);
                w->tick_seconds += since(&before);
                ring_drain(r, w);
        }
        assert_int_equal(w->exits, 1);
}

static int open_timing(Fixture *f, pid_t pid, int cpu, bool on_exec) {
        struct perf_event_attr a;

        timing_attr_fill(&a, TIMING_MODE_BRANCHES, PERIOD, on_exec);
        return perf_driver_open(f->d, &a, pid, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static double mixture_mean(size_t k) {
        return program[k].weight[0] * program[k].mean[0] + program[k].weight[1] * program[k].mean[1];
}

static double mixture_sd(size_t k) {
        double m2 = 0.0, mean = mixture_mean(k);

        for (size_t i = 0; i < 2; i++)
                m2 += program[k].weight[i] * (program[k].sd[i] * program[k].sd[i] +
                                              program[k].mean[i] * program[k].mean[i]);
        return sqrt(m2 - mean * mean);
}

/* ---- Tests */

static void test_branch_stacks(void **state) {
        char config[2048];
        Fixture f;
        Walk w = {};
        Child c;
        Ring r;
        uint64_t count = 0;
        int h;

        (void) state;
        lbr_config(config, sizeof(config), "");
        f = fixture_new("spr", config);
        c = child_start(SPIN_SECONDS, false);
        w.pid = c.pid;
        h = open_timing(&f, c.pid, 0, false);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        r = ring_map(&f, h);
        child_go(&c);
        run_until_exit(&f, &r, &w);
        child_wait(&c);

        print_message("%" PRIu64 " records, %" PRIu64 " samples of %" PRIu64 " entries, %" PRIu64 " lost; "
                      "%.1f ms in the driver's ticks, %.2f us per sample\n", w.records, w.samples,
                      w.entries_per_sample, w.lost, w.tick_seconds * 1e3,
                      w.tick_seconds * 1e6 / (double) w.samples);
        assert_int_equal(w.first_type, PERF_RECORD_MMAP2);
        assert_int_equal(w.second_type, PERF_RECORD_COMM);
        assert_int_equal(w.comm_misc, 0);
        assert_int_equal(w.mmap2, 1);
        assert_false(w.sample_before_mmap2);
        assert_false(w.record_after_exit);
        assert_int_equal(w.entries_per_sample, SIM_LBR_DEPTH_INTEL);
        assert_int_equal(w.lost_records, 0);
        assert_true(w.samples >= 500);
        assert_true(w.cycles_nonzero);
        /* the event counts the cycles of its period: read() agrees with the samples */
        assert_int_equal(perf_driver_read(f.d, h, &count, sizeof(count)), sizeof(count));
        assert_true(count / PERIOD >= w.samples && count / PERIOD <= w.samples + 1);

        for (size_t k = 0; k < N_BRANCHES; k++) {
                const Stats *s = &w.branch[k];
                double mean = s->sum / (double) s->n, sd = sqrt(s->sum_sq / (double) s->n - mean * mean);
                double want_mean = mixture_mean(k), want_sd = mixture_sd(k);

                print_message("branch %zu: %" PRIu64 " entries, mean %.2f (configured %.2f), "
                              "sd %.2f (%.2f)\n",
                              k, s->n, mean, want_mean, sd, want_sd);
                /* five standard errors, and half a cycle for the rounding */
                assert_true(fabs(mean - want_mean) < 5.0 * want_sd / sqrt((double) s->n) + 0.5);
                assert_true(fabs(sd - want_sd) < 0.05 * want_sd + 0.5);
        }
        /* the two spikes of the first branch in their proportions */
        assert_true(fabs((double) w.branch[0].below / (double) w.branch[0].n - 0.7) < 0.02);

        ring_unmap(&r);
        perf_driver_close(f.d, h);
        fixture_free(&f);
}

/* A reader that does not read: the ring fills, records are counted lost, and once the reader
 * frees space one LOST record says how many before the next record. */
static void test_full_ring_lost(void **state) {
        char config[2048];
        struct timespec start;
        Fixture f;
        Walk w = {};
        Child c;
        Ring r;
        uint64_t head, count = 0;
        int h;

        (void) state;
        lbr_config(config, sizeof(config), "");
        f = fixture_new("icx", config);
        c = child_start(SPIN_SECONDS, false);
        w.pid = c.pid;
        h = open_timing(&f, c.pid, 0, false);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        r = ring_map(&f, h);
        child_go(&c);
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
                sleep_ns(TICK_NS);
                sim_perf_driver_tick(f.d);
                head = __atomic_load_n(&r.meta->data_head, __ATOMIC_ACQUIRE);
        } while (head <= TIMING_RING_DATA_BYTES - SAMPLE_BYTES && since(&start) < WAIT_S);
        /* more periods than the ring and the sampler's backlog (one ring's worth) hold samples:
         * the rest find no room */
        do {
                sleep_ns(TICK_NS);
                sim_perf_driver_tick(f.d);
                assert_int_equal(perf_driver_read(f.d, h, &count, sizeof(count)), sizeof(count));
        } while (count / PERIOD < 3 * TIMING_RING_DATA_BYTES / SAMPLE_BYTES && since(&start) < WAIT_S);
        head = __atomic_load_n(&r.meta->data_head, __ATOMIC_ACQUIRE);
        print_message("head without a reader: %" PRIu64 "\n", head);
        /* full: less than one sample's room left, nothing overwritten */
        assert_true(head <= TIMING_RING_DATA_BYTES && head > TIMING_RING_DATA_BYTES - SAMPLE_BYTES);
        /* a reader's tail ahead of the head is nonsense: nothing more is written */
        r.meta->data_tail = head + 4096;
        sim_perf_driver_tick(f.d);
        assert_int_equal(__atomic_load_n(&r.meta->data_head, __ATOMIC_ACQUIRE), head);
        r.meta->data_tail = 0;
        ring_drain(&r, &w);
        assert_int_equal(w.lost_records, 0);
        run_until_exit(&f, &r, &w);
        child_wait(&c);
        print_message("%" PRIu64 " samples, %" PRIu64 " LOST records for %" PRIu64 " records\n", w.samples,
                      w.lost_records, w.lost);
        assert_true(w.lost_records >= 1);
        assert_true(w.lost > 0);
        /* every period the task ran is a sample written or one counted lost */
        assert_int_equal(perf_driver_read(f.d, h, &count, sizeof(count)), sizeof(count));
        assert_int_equal(w.samples + w.lost, count / PERIOD);
        ring_unmap(&r);
        perf_driver_close(f.d, h);
        fixture_free(&f);
}

/* The client can write its whole mapping: the producer keeps its own head, and the memfd's
 * seals keep the client from shrinking (or growing) the ring under the daemon's writes. */
static void test_hostile_reader(void **state) {
        char config[2048];
        struct timespec start;
        Fixture f;
        Walk w = {};
        Child c;
        Ring r;
        int h;

        (void) state;
        lbr_config(config, sizeof(config), "");
        f = fixture_new("spr", config);
        c = child_start(0.2, false);
        w.pid = c.pid;
        h = open_timing(&f, c.pid, 0, false);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        r = ring_map(&f, h);
        assert_int_equal(ftruncate(r.fd, 0), -1);
        assert_int_equal(errno, EPERM);
        assert_int_equal(ftruncate(r.fd, (off_t) r.size * 2), -1);
        assert_int_equal(errno, EPERM);
        /* the export wrote MMAP2 and COMM; once read, a forged head, garbage over the data and a
         * forged size: the producer goes on from its own head and size */
        ring_drain(&r, &w);
        assert_int_equal(w.mmap2, 1);
        r.meta->data_head = 12345;
        memset((uint8_t *) r.map + r.size - TIMING_RING_DATA_BYTES, 0xff, TIMING_RING_DATA_BYTES);
        r.meta->data_size = 7;
        child_go(&c);
        /* the forged head is the reader's own until the producer publishes its next record */
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (__atomic_load_n(&r.meta->data_head, __ATOMIC_ACQUIRE) == 12345 && since(&start) < WAIT_S) {
                sleep_ns(TICK_NS);
                sim_perf_driver_tick(f.d);
        }
        run_until_exit(&f, &r, &w);
        child_wait(&c);
        assert_int_equal(w.first_type, PERF_RECORD_MMAP2);
        assert_true(w.samples > 50);
        ring_unmap(&r);
        perf_driver_close(f.d, h);
        fixture_free(&f);
}

/* AMD's LbrExtV2 records no cycles and holds 16 entries. */
static void test_amd_cycles_zero(void **state) {
        char config[2048];
        Fixture f;
        Walk w = {};
        Child c;
        Ring r;
        int h;

        (void) state;
        lbr_config(config, sizeof(config), "");
        f = fixture_new("zen4", config);
        c = child_start(0.2, false);
        w.pid = c.pid;
        h = open_timing(&f, c.pid, 0, false);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        r = ring_map(&f, h);
        child_go(&c);
        run_until_exit(&f, &r, &w);
        child_wait(&c);
        assert_true(w.samples > 50);
        assert_int_equal(w.entries_per_sample, SIM_LBR_DEPTH_AMD);
        assert_false(w.cycles_nonzero);
        ring_unmap(&r);
        perf_driver_close(f.d, h);
        fixture_free(&f);
}

/* enable_on_exec: nothing before the exec, then MMAP2, COMM (exec) and samples. The ring of
 * simulated CPU 1 (real CPU 1, where the child never runs) gets no samples. */
static void test_enable_on_exec(void **state) {
        char config[2048];
        struct timespec start;
        Fixture f;
        Walk w = {}, w1 = {};
        Child c;
        Ring r, r1;
        uint64_t samples;
        int h, h1;

        (void) state;
        lbr_config(config, sizeof(config), "[machine]\nmodel = spr\n");
        f = fixture_new(NULL, config);
        c = child_start(0.5, true);
        w.pid = w1.pid = c.pid;
        w1.cpu = 1;
        h = open_timing(&f, c.pid, 0, true);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        h1 = open_timing(&f, c.pid, 1, true);
        assert_true(h1 >= SIM_PERF_HANDLE_BASE);
        r = ring_map(&f, h);
        r1 = ring_map(&f, h1);
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (since(&start) < 0.05) {
                sleep_ns(TICK_NS);
                sim_perf_driver_tick(f.d);
        }
        assert_int_equal(__atomic_load_n(&r.meta->data_head, __ATOMIC_ACQUIRE), 0);
        assert_int_equal(__atomic_load_n(&r1.meta->data_head, __ATOMIC_ACQUIRE), 0);
        child_go(&c);
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (w.samples < 50 && since(&start) < WAIT_S) {
                sleep_ns(TICK_NS);
                sim_perf_driver_tick(f.d);
                ring_drain(&r, &w);
        }
        assert_true(w.samples >= 50);
        /* the exec enabled it: a disable now stops the samples, an enable brings them back */
        assert_int_equal(perf_driver_disable(f.d, h, false), 0);
        /* what ran until the disable is in the ring: read it first */
        ring_drain(&r, &w);
        samples = w.samples;
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (since(&start) < 0.05) {
                sleep_ns(TICK_NS);
                sim_perf_driver_tick(f.d);
                ring_drain(&r, &w);
        }
        assert_int_equal(w.samples, samples);
        assert_int_equal(perf_driver_enable(f.d, h, false), 0);
        run_until_exit(&f, &r, &w);
        child_wait(&c);
        sim_perf_driver_tick(f.d);
        ring_drain(&r1, &w1);
        print_message("after the exec: cpu 0 %" PRIu64 " records (%" PRIu64 " samples), cpu 1 %" PRIu64
                      " records (%" PRIu64 " samples)\n", w.records, w.samples, w1.records, w1.samples);
        assert_int_equal(w.first_type, PERF_RECORD_MMAP2);
        assert_int_equal(w.comm_misc, PERF_RECORD_MISC_COMM_EXEC);
        assert_true(w.samples > samples);
        assert_int_equal(w1.samples, 0);
        ring_unmap(&r);
        ring_unmap(&r1);
        perf_driver_close(f.d, h);
        perf_driver_close(f.d, h1);
        fixture_free(&f);
}

/* Disabled by ioctl: no samples while off. */
static void test_disable_stops_samples(void **state) {
        char config[2048];
        struct timespec start;
        Fixture f;
        Walk w = {};
        Child c;
        Ring r;
        uint64_t samples;
        int h;

        (void) state;
        lbr_config(config, sizeof(config), "");
        f = fixture_new("skx", config);
        c = child_start(0.4, false);
        w.pid = c.pid;
        h = open_timing(&f, c.pid, 0, false);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        r = ring_map(&f, h);
        assert_int_equal(perf_driver_disable(f.d, h, false), 0);
        child_go(&c);
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (since(&start) < 0.1) {
                sleep_ns(TICK_NS);
                sim_perf_driver_tick(f.d);
                ring_drain(&r, &w);
        }
        samples = w.samples;
        assert_int_equal(samples, 0);
        assert_int_equal(perf_driver_enable(f.d, h, false), 0);
        run_until_exit(&f, &r, &w);
        child_wait(&c);
        assert_true(w.samples > 50);
        ring_unmap(&r);
        perf_driver_close(f.d, h);
        fixture_free(&f);
}

/* One event per simulated CPU, as pmugate timing opens them: real CPU r runs as simulated CPU
 * r % n, so a child on real CPU 0 is sampled in ring 0 only, and the run time counts once. */
static void test_one_ring_per_cpu(void **state) {
        char config[2048];
        Fixture f;
        Walk w[16] = {};
        Child c;
        Ring r[16];
        int h[16] = {};
        uint32_t n;
        uint64_t count = 0, total = 0;

        (void) state;
        lbr_config(config, sizeof(config), "[machine]\nsockets = 2\ncores = 4\nsmt = yes\n");
        f = fixture_new("spr", config);
        n = f.t.machine->n_cpus;
        assert_int_equal(n, 16);
        c = child_start(0.3, false);
        for (uint32_t cpu = 0; cpu < n; cpu++) {
                w[cpu].pid = c.pid;
                w[cpu].cpu = (int) cpu;
                h[cpu] = open_timing(&f, c.pid, (int) cpu, false);
                assert_true(h[cpu] >= SIM_PERF_HANDLE_BASE);
                r[cpu] = ring_map(&f, h[cpu]);
        }
        child_go(&c);
        run_until_exit(&f, &r[0], &w[0]);
        child_wait(&c);
        for (uint32_t cpu = 0; cpu < n; cpu++) {
                sim_perf_driver_tick(f.d);
                ring_drain(&r[cpu], &w[cpu]);
                total += w[cpu].samples;
                print_message("cpu %u: %" PRIu64 " MMAP2, %" PRIu64 " samples, %" PRIu64 " EXIT\n", cpu,
                              w[cpu].mmap2, w[cpu].samples, w[cpu].exits);
                /* enabled at open: every ring starts with the map, and says when the task is gone */
                assert_int_equal(w[cpu].first_type, PERF_RECORD_MMAP2);
                assert_int_equal(w[cpu].exits, 1);
                if (cpu > 0)
                        assert_int_equal(w[cpu].samples, 0);
                ring_unmap(&r[cpu]);
        }
        assert_true(w[0].samples > 50);
        assert_int_equal(perf_driver_read(f.d, h[0], &count, sizeof(count)), sizeof(count));
        assert_int_equal(total, count / PERIOD);
        for (uint32_t cpu = 0; cpu < n; cpu++)
                perf_driver_close(f.d, h[cpu]);
        fixture_free(&f);
}

static void test_refusals(void **state) {
        char config[2048];
        struct perf_event_attr a, counting = {
                .type = PERF_TYPE_HARDWARE,
                .size = sizeof(counting),
                .config = PERF_COUNT_HW_CPU_CYCLES,
        };
        Fixture f;
        Child c;
        int h;

        (void) state;
        /* no [lbr]: a CPU without LBR */
        f = fixture_new("spr", NULL);
        assert_int_equal(open_timing(&f, getpid(), 0, false), -EOPNOTSUPP);
        fixture_free(&f);

        lbr_config(config, sizeof(config), "");
        f = fixture_new("spr", config);
        c = child_start(0.0, false);
        /* any other sampling attr, and the right one on anything but one task on one CPU */
        timing_attr_fill(&a, TIMING_MODE_BRANCHES, PERIOD, false);
        a.exclude_kernel = 0;
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, -1, 0), -EINVAL);
        timing_attr_fill(&a, TIMING_MODE_BRANCHES, PERIOD, false);
        a.branch_sample_type |= PERF_SAMPLE_BRANCH_KERNEL;
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, -1, 0), -EINVAL);
        timing_attr_fill(&a, TIMING_MODE_BRANCHES, PERIOD, false);
        a.freq = 1;
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, -1, 0), -EINVAL);
        timing_attr_fill(&a, TIMING_MODE_BRANCHES, PERIOD, false);
        a.sample_type |= PERF_SAMPLE_REGS_USER;
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, -1, 0), -EINVAL);
        a = counting;
        a.sample_period = PERIOD;
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, -1, 0), -EINVAL);
        timing_attr_fill(&a, TIMING_MODE_BRANCHES, PERIOD, false);
        assert_int_equal(perf_driver_open(f.d, &a, -1, -1, 0, -1, 0), -EINVAL);
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, -1, -1, 0), -EINVAL);
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, -1, PERF_FLAG_FD_NO_GROUP), -EINVAL);
        h = perf_driver_open(f.d, &counting, c.pid, -1, 0, -1, 0);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, h, 0), -EINVAL);
        /* counting events still export nothing */
        assert_int_equal(perf_driver_export_fd(f.d, h), -EOPNOTSUPP);
        perf_driver_close(f.d, h);
        child_go(&c);
        child_wait(&c);
        /* a task that is gone */
        assert_int_equal(perf_driver_open(f.d, &a, c.pid, -1, 0, -1, 0), -ESRCH);
        fixture_free(&f);
}

/* IP mode is a software event: the kernel's own sampling, passed through untouched. */
static void test_ips_pass_through(void **state) {
        Fixture f = fixture_new("spr", NULL);
        struct perf_event_attr a;
        struct timespec start;
        Child c;
        Ring r;
        uint64_t samples = 0, tail;
        int h;

        (void) state;
        c = child_start(0.3, false);
        timing_attr_fill(&a, TIMING_MODE_IPS, 100000, false);
        h = perf_driver_open(f.d, &a, c.pid, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
        if (h == -EACCES || h == -EPERM || h == -ENOSYS || h == -ENOENT || h == -ENODEV) {
                print_message("the kernel refused cpu-clock sampling (%s): skipped\n", strerror(-h));
                child_go(&c);
                child_wait(&c);
                fixture_free(&f);
                skip();
        }
        assert_true(h >= 0 && h < SIM_PERF_HANDLE_BASE);
        r = ring_map(&f, h);
        child_go(&c);
        clock_gettime(CLOCK_MONOTONIC, &start);
        tail = 0;
        while (since(&start) < 1.0) {
                uint64_t head = __atomic_load_n(&r.meta->data_head, __ATOMIC_ACQUIRE);

                while (tail < head) {
                        struct perf_event_header hd;

                        ring_out(&r, tail, &hd, sizeof(hd));
                        assert_true(hd.size >= sizeof(hd));
                        samples += hd.type == PERF_RECORD_SAMPLE;
                        tail += hd.size;
                }
                __atomic_store_n(&r.meta->data_tail, tail, __ATOMIC_RELEASE);
                sleep_ns(TICK_NS * 5);
        }
        child_wait(&c);
        print_message("%" PRIu64 " cpu-clock samples from the kernel\n", samples);
        assert_true(samples > 100);
        ring_unmap(&r);
        perf_driver_close(f.d, h);
        fixture_free(&f);
}

static void expect_refused(const char *text, const char *what) {
        char *log = NULL;
        int r;

        r = sim_test_try("spr", text, &log);
        print_message("%s", log);
        assert_int_equal(r, -EINVAL);
        assert_non_null(strstr(log, what));
        free(log);
}

static void test_config_refusals(void **state) {
        static const char head[] = "[lbr]\nmap = 0x555555555000 0x2000 0x1000\nbinary = /bin/sh\n";
        static const struct {
                const char *body, *what;
        } cases[] = {
                { "branch = 0x555555555189 0x555555555170 32:2@0.7 300:30@0.2\n", ":4: branch = " },
                { "branch = 0x555555555189 0x555555555170 32:2@0.7 300:30@0.30001\n", "sum to 1.00001" },
                { "branch = 0x555555555189 0x555555555170 32:-2\n", ":4: branch: '32:-2'" },
                { "branch = 0x555555555189 0x555555555170 32:2@0\n", ":4: branch: '32:2@0'" },
                { "branch = 0x555555555189 0x555555555170 32:2@1.5\n", ":4: branch: '32:2@1.5'" },
                { "branch = 0x555555555189 0x555555555170 nan:2\n", ":4: branch: 'nan:2'" },
                { "branch = 0x555555555189 0x555555555170 70000:2\n", ":4: branch: '70000:2'" },
                { "branch = 0x555555555189 0x555555555170 32:2@0.5 32:2\n", ":4: branch: '32:2'" },
                { "branch = 0x555555555189 0x555555555170\n", ":4: branch = " },
                { "branch = 0x555555555189 -1 32:2\n", ":4: branch = " },
                { "branch = 0x555555555189 0x555555558000 32:2\n",
                  ":4: branch 0x555555555189 -> 0x555555558000 lies outside" },
                { "branch = 0x555555554fff 0x555555555170 32:2\n", ":4: branch 0x555555554fff" },
                { "branch = 0x1 0x2 1:0 1:0 1:0 1:0 1:0 1:0 1:0 1:0 1:0\n", "at most 8 normals" },
                { "map = 0 0x1000 0\n", ":4: map is given twice" },
                { "binary = /bin/true\n", ":4: binary is given twice" },
                { "depth = 33\n", ":4: depth = '33'" },
                { "depth = 0\n", ":4: depth = '0'" },
                { "frobnicate = 1\n", ":4: unknown key 'frobnicate' in [lbr]" },
                { "[machine]\nsmt = yes\n[lbr]\n", ":6: [lbr] is given twice (first at line 1)" },
                { "", ":1: [lbr] has no branch" },
        };
        char text[1024];

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                (void) snprintf(text, sizeof(text), "%s%s%s", head, cases[i].body,
                                strstr(cases[i].body, "[lbr]") ? "depth = 4\n" : "");
                expect_refused(text, cases[i].what);
        }
        expect_refused("[lbr]\nbinary = /bin/sh\nbranch = 0x1000 0x1000 1:0\n", ":1: [lbr] has no map");
        expect_refused("[lbr]\nmap = 0x1000 0x1000 0\nbranch = 0x1000 0x1000 1:0\n",
                       ":1: [lbr] has no binary");
        expect_refused("[lbr]\nmap = 0x1001 0x1000 0\n", ":2: map = '0x1001 0x1000 0': START, LEN");
        expect_refused("[lbr]\nmap = 0x7ffffffff000 0x2000 0\n",
                       ":2: map = '0x7ffffffff000 0x2000 0': the mapping ends");
        expect_refused("[lbr]\nmap = 0x1000 0x1000\n", ":2: map = '0x1000 0x1000': expected");
        expect_refused("[lbr]\nbinary = bin/sh\n", ":2: binary = 'bin/sh'");
        expect_refused("[lbr]\nbinary = /usr/../bin/sh\n", ":2: binary = '/usr/../bin/sh'");
        expect_refused("[lbr]\nbinary = /usr//bin/sh\n", ":2: binary = '/usr//bin/sh'");
        expect_refused("[lbr]\nbinary = /usr/bin/\n", ":2: binary = '/usr/bin/'");
}

/* 64 branches are accepted, the 65th is not. */
static void test_config_branch_limit(void **state) {
        char text[16384], *log = NULL;
        size_t n;
        SimTest t;

        (void) state;
        n = (size_t) snprintf(text, sizeof(text), "[lbr]\nmap = 0x10000 0x10000 0\nbinary = /bin/sh\n");
        for (unsigned i = 0; i < SIM_LBR_BRANCHES_MAX; i++)
                n += (size_t) snprintf(text + n, sizeof(text) - n, "branch = 0x%x 0x10000 3:1\n",
                                       0x10010 + i);
        t = sim_test_new("spr", text);
        sim_test_free(&t);
        (void) snprintf(text + n, sizeof(text) - n, "branch = 0x10000 0x10000 3:1\n");
        assert_int_equal(sim_test_try("spr", text, &log), -EINVAL);
        assert_non_null(strstr(log, ":68: more than 64 branches"));
        free(log);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_branch_stacks),
                cmocka_unit_test(test_full_ring_lost),
                cmocka_unit_test(test_hostile_reader),
                cmocka_unit_test(test_amd_cycles_zero),
                cmocka_unit_test(test_enable_on_exec),
                cmocka_unit_test(test_disable_stops_samples),
                cmocka_unit_test(test_one_ring_per_cpu),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_ips_pass_through),
                cmocka_unit_test(test_config_refusals),
                cmocka_unit_test(test_config_branch_limit),
        };
        ssize_t n;

        /* the child of test_enable_on_exec execs this binary to spin */
        if (argc == 3 && strcmp(argv[1], "--spin") == 0) {
                burn_cpu(atof(argv[2]));
                return 0;
        }
        n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
        if (n <= 0)
                return 1;
        self_exe[n] = '\0';
        return cmocka_run_group_tests(tests, NULL, NULL);
}

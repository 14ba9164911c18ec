/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sampling events of the simulator's perf driver. The simulated machine runs no tasks, so a
 * sampling event counts the real run time of its task (real software task-clock events on the
 * real CPUs that map to its simulated CPU) at the simulated CPU's cycles per ns, and writes one
 * sample per period of those cycles into a ring buffer laid out as the kernel's: a metadata
 * page (struct perf_event_mmap_page) and TIMING_RING_DATA_BYTES of records, in a memfd the
 * client maps as it would a perf fd. The stacks are the [lbr] section's cyclic branch list with
 * cycles drawn from its distributions. The client can write the whole mapping: the producer
 * keeps its own head, reads only data_tail from the shared page and treats a tail that makes no
 * sense as a full ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "backend/sim/sim-perf-sample.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "timing-attr.h"

/* The kernel's TASK_COMM_LEN. */
#define SIM_COMM_LEN 16U
/* The largest record: an MMAP2 with a path of PATH_MAX. */
#define SIM_RECORD_MAX 8192U
#define SIM_NS_PER_S UINT64_C(1000000000)
/* Samples due but without room wait for the next tick up to this many rings' worth
 * (write_samples()). */
#define SIM_SAMPLE_BACKLOG_RINGS 1U

/* pidfd_open()'s PIDFD_THREAD (O_EXCL), which older headers lack: a pidfd of one thread. */
#define SIM_PIDFD_THREAD O_EXCL

/* sample_id_all's trailer for TIMING_SAMPLE_TYPE_*: TID (pid, tid), TIME, CPU (cpu, res). */
#define SAMPLE_ID_SIZE (2 * sizeof(uint32_t) + sizeof(uint64_t) + 2 * sizeof(uint32_t))
#define LOST_RECORD_SIZE (sizeof(struct perf_event_header) + 2 * sizeof(uint64_t) + SAMPLE_ID_SIZE)

struct SimPerfSampler {
        PerfDriver *software;
        const SimLbrConfig *lbr;
        pid_t pid, tid, ppid;           /* the task's process, the task (one of its threads) */
        int cpu;
        bool amd;
        unsigned depth;
        uint64_t period;
        bool on_exec;
        uint64_t id;

        int *clocks;                    /* task-clock handles of software */
        size_t n_clocks;
        int pidfd;
        dev_t binary_dev;
        ino_t binary_ino;

        int memfd;
        void *map;
        size_t map_size;
        struct perf_event_mmap_page *meta;
        uint8_t *data;
        uint64_t head;                  /* ours: the shared data_head is only published */
        uint64_t lost;                  /* records not written since the last LOST */

        bool enabled;
        bool exec_seen;                 /* an enable_on_exec event's task has exec'd */
        bool announced;                 /* MMAP2 and COMM written */
        bool exited;
        uint64_t samples_due_done;      /* periods accounted for: written or lost */
        uint64_t count, time_enabled, time_running;
        uint64_t last_time_ns;
        uint64_t rng;
};

typedef struct Record {
        uint8_t buf[SIM_RECORD_MAX];
        size_t n;
} Record;

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * SIM_NS_PER_S + (uint64_t) ts.tv_nsec;
}

/* ---- Random draws: splitmix64, and normals by Box-Muller */

static uint64_t rng_next(uint64_t *state) {
        uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rng_uniform(uint64_t *state) {
        return (double) (rng_next(state) >> 11) * 0x1.0p-53;
}

static double rng_normal(uint64_t *state) {
        double u1 = 1.0 - rng_uniform(state), u2 = rng_uniform(state);

        return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* A block's cycles from a branch's mixture: rounded, at least 1, at most what the entry's
 * 16-bit field holds. */
static uint16_t draw_cycles(uint64_t *state, const SimLbrBranch *b) {
        double u = rng_uniform(state), acc = 0.0, v;
        size_t k = b->n_mix - 1;

        for (size_t i = 0; i + 1 < b->n_mix; i++) {
                acc += b->mix[i].weight;
                if (u < acc) {
                        k = i;
                        break;
                }
        }
        v = nearbyint(b->mix[k].mean + b->mix[k].sd * rng_normal(state));
        return (uint16_t) (v < 1.0 ? 1.0 : v > SIM_LBR_CYCLES_MAX ? SIM_LBR_CYCLES_MAX : v);
}

/* ---- Records in the kernel's layout */

static void put(Record *r, const void *p, size_t n) {
        memcpy(r->buf + r->n, p, n);
        r->n += n;
}

static void put_u32(Record *r, uint32_t v) {
        put(r, &v, sizeof(v));
}

static void put_u64(Record *r, uint64_t v) {
        put(r, &v, sizeof(v));
}

/* A NUL-terminated string padded with NULs to 8 bytes, as perf_event_comm/mmap write names. */
static void put_name(Record *r, const char *s) {
        size_t n = strlen(s) + 1, padded = (n + 7U) & ~(size_t) 7U;

        memset(r->buf + r->n, 0, padded);
        memcpy(r->buf + r->n, s, n);
        r->n += padded;
}

static void begin(Record *r, uint32_t type, uint16_t misc) {
        struct perf_event_header h = { .type = type, .misc = misc };

        r->n = 0;
        put(r, &h, sizeof(h));
}

static void put_sample_id(const SimPerfSampler *s, Record *r, uint64_t time) {
        put_u32(r, (uint32_t) s->pid);
        put_u32(r, (uint32_t) s->tid);
        put_u64(r, time);
        put_u32(r, (uint32_t) s->cpu);
        put_u32(r, 0);
}

static void finish(Record *r) {
        struct perf_event_header *h = (struct perf_event_header *) r->buf;

        h->size = (uint16_t) r->n;
}

/* ---- The ring */

/* Free bytes as the reader's data_tail leaves them; 0 when the tail is ahead of the head or
 * behind it by more than the ring (the reader wrote nonsense: write nothing). */
static uint64_t ring_space(const SimPerfSampler *s) {
        uint64_t tail = __atomic_load_n(&s->meta->data_tail, __ATOMIC_ACQUIRE), used = s->head - tail;

        return used > TIMING_RING_DATA_BYTES ? 0 : TIMING_RING_DATA_BYTES - used;
}

static void ring_copy(SimPerfSampler *s, const Record *r) {
        size_t off = (size_t) (s->head & (TIMING_RING_DATA_BYTES - 1U));
        size_t first = MIN(r->n, TIMING_RING_DATA_BYTES - off);

        memcpy(s->data + off, r->buf, first);
        memcpy(s->data, r->buf + first, r->n - first);
        s->head += r->n;
}

/* Writes r, first a LOST record when records were dropped and there is room for both (as
 * perf_output_begin() does); when there is no room, r is one more lost record. The head is
 * published after the bytes. */
static bool ring_write(SimPerfSampler *s, const Record *r, uint64_t time) {
        uint64_t space = ring_space(s);
        Record lost;

        if (space < r->n + (s->lost > 0 ? LOST_RECORD_SIZE : 0)) {
                s->lost++;
                return false;
        }
        if (s->lost > 0) {
                begin(&lost, PERF_RECORD_LOST, 0);
                put_u64(&lost, s->id);
                put_u64(&lost, s->lost);
                put_sample_id(s, &lost, time);
                finish(&lost);
                ring_copy(s, &lost);
                s->lost = 0;
        }
        ring_copy(s, r);
        __atomic_store_n(&s->meta->data_head, s->head, __ATOMIC_RELEASE);
        return true;
}

static int ring_new(SimPerfSampler *s) {
        long page = sysconf(_SC_PAGESIZE);

        if (page <= 0 || TIMING_RING_DATA_BYTES % (unsigned long) page != 0)
                return -EINVAL;
        s->map_size = (size_t) page + TIMING_RING_DATA_BYTES;
        s->memfd = memfd_create("pmugate-sim-perf-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (s->memfd < 0)
                return -errno;
        /* the client maps the memfd too: a shrink would fault our writes */
        if (ftruncate(s->memfd, (off_t) s->map_size) < 0 ||
            fcntl(s->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
                return -errno;
        s->map = mmap(NULL, s->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0);
        if (s->map == MAP_FAILED) {
                s->map = NULL;
                return -errno;
        }
        s->meta = s->map;
        s->data = (uint8_t *) s->map + page;
        /* what perf_event_init_userpage() sets */
        s->meta->cap_bit0_is_deprecated = 1;
        s->meta->size = offsetof(struct perf_event_mmap_page, __reserved);
        s->meta->data_offset = (uint64_t) page;
        s->meta->data_size = TIMING_RING_DATA_BYTES;
        return 0;
}

/* ---- The task */

/* The parent from /proc/PID/stat, for EXIT records: the fields after the last ')'. */
static int read_ppid(pid_t pid, pid_t *ret) {
        char path[64], buf[4096], *close_paren;
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;
        int ppid;

        (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        close_paren = strrchr(buf, ')');
        if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1 || ppid < 0)
                return -EIO;
        *ret = (pid_t) ppid;
        return 0;
}

/* The process a task belongs to: the Tgid line of /proc/TID/status. */
static int read_tgid(pid_t tid, pid_t *ret) {
        char path[64], buf[4096], *line;
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;
        int tgid;

        (void) snprintf(path, sizeof(path), "/proc/%d/status", (int) tid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        line = strstr(buf, "\nTgid:");
        if (!line || sscanf(line + 6, " %d", &tgid) != 1 || tgid <= 0)
                return -EIO;
        *ret = (pid_t) tgid;
        return 0;
}

/* The task's comm as the kernel would put it in a COMM record; the binary's name (what an
 * exec of it sets) when the task is gone. */
static void read_comm(const SimPerfSampler *s, char ret[SIM_COMM_LEN]) {
        const char *base = strrchr(s->lbr->binary, '/') + 1;
        char path[64];
        _cleanup_close_ int fd = -EBADF;
        ssize_t n = -1;

        (void) snprintf(path, sizeof(path), "/proc/%d/comm", (int) s->tid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0)
                n = read(fd, ret, SIM_COMM_LEN - 1);
        if (n <= 0) {
                (void) snprintf(ret, SIM_COMM_LEN, "%.*s", (int) SIM_COMM_LEN - 1, base);
                return;
        }
        ret[n] = '\0';
        ret[strcspn(ret, "\n")] = '\0';
}

static bool task_gone(const SimPerfSampler *s) {
        struct pollfd p = { .fd = s->pidfd, .events = POLLIN };

        return poll(&p, 1, 0) > 0;
}

static int open_clocks(SimPerfSampler *s, const SimPerfSamplerArgs *a) {
        struct perf_event_attr clock = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(clock),
                .config = PERF_COUNT_SW_TASK_CLOCK,
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                .disabled = a->attr->disabled,
                .enable_on_exec = a->attr->enable_on_exec,
                .inherit = a->attr->inherit,
                .exclude_hv = 1,
        };
        size_t max = a->cpu < a->real_cpus ? (size_t) ((a->real_cpus - 1 - a->cpu) / a->n_sim_cpus) + 1 : 0;

        s->clocks = calloc(MAX(max, (size_t) 1), sizeof(int));
        if (!s->clocks)
                return -ENOMEM;
        /* real CPU r runs as simulated CPU r % n_sim_cpus: each real CPU's time counts once */
        for (long r = a->cpu; r < a->real_cpus; r += a->n_sim_cpus) {
                int h = perf_driver_open(s->software, &clock, a->pid, -1, (int) r, -1, 0);

                if (h == -ENODEV)
                        continue;       /* an offline real CPU runs nothing */
                if (h < 0)
                        return h;
                s->clocks[s->n_clocks++] = h;
        }
        return 0;
}

/* The task clocks' sums; whether any was enabled (by an ioctl, or by the kernel at the task's
 * exec for enable_on_exec). */
static bool read_clocks(SimPerfSampler *s, uint64_t *ret_ns) {
        uint64_t ns = 0, enabled = 0, running = 0;

        for (size_t i = 0; i < s->n_clocks; i++) {
                uint64_t v[3];

                if (perf_driver_read(s->software, s->clocks[i], v, sizeof(v)) != (ssize_t) sizeof(v))
                        continue;
                ns += v[0];
                enabled += v[1];
                running += v[2];
        }
        *ret_ns = ns;
        s->time_enabled = enabled;
        s->time_running = running;
        return enabled > 0 || ns > 0;
}

/* ---- Records of the simulated kernel */

static void write_mmap2(SimPerfSampler *s, uint64_t time) {
        const SimLbrConfig *l = s->lbr;
        Record r;

        begin(&r, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
        put_u32(&r, (uint32_t) s->pid);
        put_u32(&r, (uint32_t) s->tid);
        put_u64(&r, l->map_start);
        put_u64(&r, l->map_len);
        put_u64(&r, l->map_pgoff);
        put_u32(&r, major(s->binary_dev));
        put_u32(&r, minor(s->binary_dev));
        put_u64(&r, (uint64_t) s->binary_ino);
        put_u64(&r, 0);         /* ino_generation: i_generation, which stat does not give */
        put_u32(&r, PROT_READ | PROT_EXEC);
        put_u32(&r, MAP_PRIVATE);
        put_name(&r, l->binary);
        put_sample_id(s, &r, time);
        finish(&r);
        (void) ring_write(s, &r, time);
}

static void write_comm(SimPerfSampler *s, uint64_t time) {
        char comm[SIM_COMM_LEN];
        Record r;

        read_comm(s, comm);
        begin(&r, PERF_RECORD_COMM, s->on_exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
        put_u32(&r, (uint32_t) s->pid);
        put_u32(&r, (uint32_t) s->tid);
        put_name(&r, comm);
        put_sample_id(s, &r, time);
        finish(&r);
        (void) ring_write(s, &r, time);
}

static void write_exit(SimPerfSampler *s, uint64_t time) {
        Record r;

        begin(&r, PERF_RECORD_EXIT, 0);
        put_u32(&r, (uint32_t) s->pid);
        put_u32(&r, (uint32_t) s->ppid);
        put_u32(&r, (uint32_t) s->tid);
        put_u32(&r, (uint32_t) s->ppid);
        put_u64(&r, time);
        put_sample_id(s, &r, time);
        finish(&r);
        (void) ring_write(s, &r, time);
}

static size_t sample_size(const SimPerfSampler *s) {
        return sizeof(struct perf_event_header) + 6 * sizeof(uint64_t) +
               s->depth * sizeof(struct perf_branch_entry);
}

/* A sample: ip (the newest entry's source), pid/tid, time, cpu, period, then the stack, newest
 * first, walking the cyclic list backwards from a uniformly drawn newest branch. */
static bool write_sample(SimPerfSampler *s, uint64_t time) {
        const SimLbrConfig *l = s->lbr;
        size_t newest = (size_t) (rng_next(&s->rng) % l->n_branches);
        Record r;

        begin(&r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
        put_u64(&r, l->branches[newest].from);
        put_u32(&r, (uint32_t) s->pid);
        put_u32(&r, (uint32_t) s->tid);
        put_u64(&r, time);
        put_u32(&r, (uint32_t) s->cpu);
        put_u32(&r, 0);
        put_u64(&r, s->period);
        put_u64(&r, s->depth);
        for (size_t i = 0; i < s->depth; i++) {
                size_t k = (newest + l->n_branches - i % l->n_branches) % l->n_branches;
                const SimLbrBranch *b = &l->branches[k];
                struct perf_branch_entry e = {
                        .from = b->from,
                        .to = b->to,
                        .predicted = 1,
                };
                uint16_t cycles = draw_cycles(&s->rng, b);

                /* the AMD LBR (LbrExtV2) records no cycles: the kernel reports 0 */
                e.cycles = s->amd ? 0 : cycles;
                put(&r, &e, sizeof(e));
        }
        finish(&r);
        return ring_write(s, &r, time);
}

/* Periods the task ran since the last tick, written as far as the ring has room. The kernel
 * writes each sample at its own overflow while the reader drains, so a burst is the
 * simulator's doing (a tick that came late on a loaded machine): what finds no room waits for
 * the next tick, up to one ring's worth, rather than being lost. Beyond that backlog the
 * samples are lost, as the kernel's are for a reader that stopped reading. The samples written
 * now spread evenly over the interval since the last tick. */
static void write_samples(SimPerfSampler *s, uint64_t due, uint64_t now) {
        uint64_t fit = TIMING_RING_DATA_BYTES / sample_size(s) + 1, n = due - s->samples_due_done;
        uint64_t span = now > s->last_time_ns ? now - s->last_time_ns : 0, room;

        if (n > SIM_SAMPLE_BACKLOG_RINGS * fit) {
                s->lost += n - SIM_SAMPLE_BACKLOG_RINGS * fit;
                s->samples_due_done += n - SIM_SAMPLE_BACKLOG_RINGS * fit;
                n = SIM_SAMPLE_BACKLOG_RINGS * fit;
        }
        room = ring_space(s) / sample_size(s);
        if (room > 0 && s->lost > 0)
                room = (ring_space(s) - MIN(ring_space(s), LOST_RECORD_SIZE)) / sample_size(s);
        room = MIN(room, n);
        /* each is written, or (ring_write's word) counted lost: either way accounted for */
        for (uint64_t k = 0; k < room; k++)
                (void) write_sample(s, s->last_time_ns + span * (k + 1) / room);
        s->samples_due_done += room;
}

void sim_perf_sampler_tick(SimPerfSampler *s, double cycles_per_ns) {
        uint64_t ns, now, due;
        bool gone, started;

        if (!s || s->exited)
                return;
        /* gone first: clocks read after it are final */
        gone = task_gone(s);
        started = read_clocks(s, &ns);
        if (s->on_exec && started && !s->exec_seen)
                s->exec_seen = s->enabled = true;
        now = monotonic_ns();
        s->count = (uint64_t) (cycles_per_ns * (double) ns);
        due = s->count / s->period;
        if (s->enabled && !s->announced) {
                /* at the start of the interval whose samples follow: a reader that orders the
                 * rings' records by time sees the map before any sample in it */
                write_mmap2(s, s->last_time_ns);
                write_comm(s, s->last_time_ns);
                s->announced = true;
        }
        if (s->announced && due > s->samples_due_done)
                write_samples(s, due, now);
        if (!s->announced)
                s->samples_due_done = MAX(s->samples_due_done, due);
        s->last_time_ns = now;
        /* the task's last samples first: its exit ends the stream */
        if (gone && (!s->announced || s->samples_due_done >= due)) {
                /* an event that was never enabled sees no side-band records */
                if (s->announced)
                        write_exit(s, now);
                s->exited = true;
        }
}

void sim_perf_sampler_counts(const SimPerfSampler *s, uint64_t *ret_count, uint64_t *ret_enabled,
                             uint64_t *ret_running) {
        *ret_count = s->count;
        *ret_enabled = s->time_enabled;
        *ret_running = s->time_running;
}

bool sim_perf_sampler_enabled(const SimPerfSampler *s) {
        return s && s->enabled;
}

int sim_perf_sampler_set_enabled(SimPerfSampler *s, bool enabled) {
        if (!s)
                return -EBADF;
        for (size_t i = 0; i < s->n_clocks; i++) {
                int r = enabled ? perf_driver_enable(s->software, s->clocks[i], false)
                                : perf_driver_disable(s->software, s->clocks[i], false);

                if (r < 0)
                        return r;
        }
        s->enabled = enabled;
        return 0;
}

int sim_perf_sampler_export_fd(const SimPerfSampler *s) {
        int fd;

        if (!s)
                return -EBADF;
        fd = fcntl(s->memfd, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

SimPerfSampler *sim_perf_sampler_free(SimPerfSampler *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_clocks; i++)
                perf_driver_close(s->software, s->clocks[i]);
        free(s->clocks);
        if (s->map)
                (void) munmap(s->map, s->map_size);
        if (s->memfd >= 0)
                (void) close(s->memfd);
        if (s->pidfd >= 0)
                (void) close(s->pidfd);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(SimPerfSampler *, sim_perf_sampler_free);

bool sim_perf_sampling(const struct perf_event_attr *attr) {
        return attr->sample_period != 0 || attr->freq;
}

int sim_perf_sample_check(const struct perf_event_attr *attr, pid_t pid, int cpu, int group,
                          unsigned long flags, const SimLbrConfig *lbr) {
        struct perf_event_attr want;

        timing_attr_fill(&want, TIMING_MODE_BRANCHES, attr->sample_period, attr->enable_on_exec);
        if (attr->freq || attr->sample_period == 0 || memcmp(attr, &want, sizeof(want)) != 0)
                return -EINVAL;
        if (pid < 0 || cpu < 0 || group >= 0 || (flags & ~(unsigned long) PERF_FLAG_FD_CLOEXEC))
                return -EINVAL;
        return lbr ? 0 : -EOPNOTSUPP;
}

int sim_perf_sampler_new(const SimPerfSamplerArgs *a, SimPerfSampler **ret) {
        _cleanup_(sim_perf_sampler_freep) SimPerfSampler *s = NULL;
        struct stat st;
        int r;

        if (!a || !a->software || !a->lbr || !a->attr || a->pid < 0 || a->cpu < 0 || a->n_sim_cpus == 0 ||
            a->attr->sample_period == 0 || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (SimPerfSampler) {
                .software = a->software,
                .lbr = a->lbr,
                .pid = a->pid,
                .tid = a->pid,
                .cpu = a->cpu,
                .amd = a->amd,
                .depth = sim_lbr_depth(a->lbr, a->amd),
                .period = a->attr->sample_period,
                .on_exec = a->attr->enable_on_exec,
                .id = a->id,
                .pidfd = -EBADF,
                .memfd = -EBADF,
                .enabled = !a->attr->disabled,
                .last_time_ns = monotonic_ns(),
                .rng = a->seed ^ (a->id * UINT64_C(0x9e3779b97f4a7c15)),
        };
        /* a task that is one thread of a process (timing_open's "tid"): its records carry the
         * process's pid and its own tid, and its end is the thread's (PIDFD_THREAD, Linux 6.9;
         * before it, the process's) */
        r = read_tgid(a->pid, &s->pid);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        s->pidfd = s->pid == s->tid ? -EBADF : (int) syscall(SYS_pidfd_open, s->tid, SIM_PIDFD_THREAD);
        if (s->pidfd < 0)
                s->pidfd = (int) syscall(SYS_pidfd_open, s->pid, 0);
        if (s->pidfd < 0)
                return -errno;
        r = read_ppid(s->pid, &s->ppid);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        /* the MMAP2 record names the binary's device and inode as the kernel's would */
        if (stat(a->lbr->binary, &st) < 0) {
                r = -errno;
                log_error("Simulated LBR: cannot stat the [lbr] binary %s: %s", a->lbr->binary,
                          strerror(-r));
                return -EOPNOTSUPP;
        }
        s->binary_dev = st.st_dev;
        s->binary_ino = st.st_ino;
        r = open_clocks(s, a);
        if (r < 0)
                return r;
        r = ring_new(s);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

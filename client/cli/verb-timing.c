/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: samples a command (from its exec) or a process of one's own with branch
 * stacks (cycles per basic block from the LBR) or IPs, through the events pmugated opens and
 * hands over, and reports the hottest blocks or functions (docs/TIMING.md)
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli-util.h"
#include "cli/output-file.h"
#include "cli/timing-names.h"
#include "cli/timing-output.h"
#include "cli/verb-timing.h"
#include "cli/workload.h"
#include "cpulist.h"
#include "macro.h"
#include "pmugate-limits.h"
#include "pmugate/timing.h"
#include "timing-attr.h"
#include "timing/timing-blocks.h"
#include "timing/timing-ring.h"

#define ARGS_DONE 1
#define TOP_DEFAULT 20U
#define TOP_MAX 100000U
/* how often the rings are drained: a quarter ring of branch samples fills in tens of ms at the
 * kernel's highest rate, and the simulator's ring is always readable, so it is on a clock; while
 * records keep coming, sooner */
#define DRAIN_PERIOD_MS 10
#define DRAIN_BUSY_PERIOD_MS 2
/* after the process exited, how long its last records may take to reach the rings: none with
 * the kernel, which writes them as they happen (the EXIT record ends the wait at once); the
 * simulator's driver writes them at its next tick */
#define EXIT_GRACE_MS 1000
#define DURATION_MAX_S (7 * 24 * 3600.0)
#define CPU_LIST_TEXT_MAX 1024U
#define PROC_MAPS_LINE_MAX (TIMING_PATH_MAX + 256U)

typedef struct TimingArgs {
        TimingMode mode;
        uint64_t period;
        unsigned top;
        const char *block;
        const char *output_path;
        OutputFormat format;
        bool format_given;
        pid_t pid;
        double duration;                /* seconds, with -p; 0: until it exits or Ctrl-C */
        char **command;
} TimingArgs;

static void help(void) {
        printf("Usage: pmugate timing [OPTIONS] -- COMMAND [ARGS...]\n"
               "       pmugate timing [OPTIONS] -p PID [--duration SECONDS]\n"
               "\n"
               "Time the basic blocks of COMMAND (from its exec, with its threads and children) or\n"
               "of your process PID in cycles, from the Last Branch Record (LBR): how often each\n"
               "block ran and its cycles min / median / mean / p90 / max, with a histogram.\n"
               "--mode ips samples instructions instead, on any CPU: samples per function and line.\n"
               "Needs the policy class 'lbr' (docs/TIMING.md). COMMAND's exit status is kept.\n"
               "\n"
               "  -m --mode=branches|ips   What to sample (default: branches)\n"
               "  -P --period=N            Cycles (branches) or ns (ips) between samples (default:\n"
               "                           the daemon's)\n"
               "  -t --top=N               The N hottest blocks or functions (default %u)\n"
               "  -b --block=SYMBOL|ADDR   The block(s) ending at one branch: its instructions with\n"
               "                           the timing and histogram under them; ADDR is a file offset\n"
               "                           or run-time address (0x...), SYMBOL a function or\n"
               "                           function+0xOFF\n"
               "  -p --pid=PID             Sample a running process of yours\n"
               "  -S --duration=SECONDS    With -p: how long (default: until it exits or Ctrl-C)\n"
               "  -O --format=FORMAT       table, csv, json (one document) or jsonl\n"
               "  -o --output=FILE         Write there (%%h host, %%p pid, %%j job, %%r rank); the\n"
               "                           format from the suffix (.csv, .json, .jsonl, .txt)\n"
               "  -h --help                Show this help\n",
               TOP_DEFAULT);
}

static int parse_args(int argc, char *argv[], TimingArgs *ret) {
        static const struct option options[] = {
                { "mode", required_argument, NULL, 'm' },
                { "period", required_argument, NULL, 'P' },
                { "top", required_argument, NULL, 't' },
                { "block", required_argument, NULL, 'b' },
                { "pid", required_argument, NULL, 'p' },
                { "duration", required_argument, NULL, 'S' },
                { "format", required_argument, NULL, 'O' },
                { "output", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        TimingArgs a = { .mode = TIMING_MODE_BRANCHES, .top = TOP_DEFAULT, .format = OUTPUT_TABLE };
        uint64_t v;
        char *end;
        int opt;

        opterr = 0;
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--") == 0) {
                        if (i + 1 >= argc) {
                                fprintf(stderr, "pmugate: '--' must be followed by a command\n");
                                return -EINVAL;
                        }
                        a.command = argv + i + 1;
                        argc = i;
                        break;
                }
        while ((opt = getopt_long(argc, argv, "+m:P:t:b:p:S:O:o:h", options, NULL)) >= 0)
                switch (opt) {
                case 'm':
                        a.mode = timing_mode_from_string(optarg, strlen(optarg));
                        if (a.mode == _TIMING_MODE_INVALID) {
                                fprintf(stderr, "pmugate: --mode must be branches or ips, not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'P':
                        if (cli_parse_u64(optarg, &a.period) < 0 || a.period == 0) {
                                fprintf(stderr,
                                        "pmugate: --period must be a positive number, not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 't':
                        if (cli_parse_u64(optarg, &v) < 0 || v == 0 || v > TOP_MAX) {
                                fprintf(stderr, "pmugate: --top must be from 1 to %u, not '%s'\n",
                                        TOP_MAX, optarg);
                                return -EINVAL;
                        }
                        a.top = (unsigned) v;
                        break;
                case 'b':
                        a.block = optarg;
                        break;
                case 'p':
                        if (cli_parse_u64(optarg, &v) < 0 || v == 0 || v > INT32_MAX) {
                                fprintf(stderr, "pmugate: -p needs a process id, not '%s'\n", optarg);
                                return -EINVAL;
                        }
                        a.pid = (pid_t) v;
                        break;
                case 'S':
                        errno = 0;
                        a.duration = strtod(optarg, &end);
                        if (errno != 0 || end == optarg || *end != '\0' || !(a.duration > 0) ||
                            a.duration > DURATION_MAX_S) {
                                fprintf(stderr,
                                        "pmugate: --duration must be seconds (> 0, at most a week), "
                                        "not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        break;
                case 'O':
                        if (output_format_from_string(optarg, &a.format) < 0) {
                                fprintf(stderr,
                                        "pmugate: --format must be table, csv, json or jsonl, "
                                        "not '%s'\n",
                                        optarg);
                                return -EINVAL;
                        }
                        a.format_given = true;
                        break;
                case 'o':
                        a.output_path = optarg;
                        break;
                case 'h':
                        help();
                        return ARGS_DONE;
                default:
                        return cli_unknown_option("pmugate", "timing", argv, opt);
                }
        if (optind < argc) {
                fprintf(stderr, "pmugate: unexpected '%s' (a command goes after '--')\n",
                        argv[optind]);
                return -EINVAL;
        }
        if (!!a.command == (a.pid > 0)) {
                fprintf(stderr, "pmugate: give either -- COMMAND or -p PID\n");
                return -EINVAL;
        }
        if (a.block && a.mode != TIMING_MODE_BRANCHES) {
                fprintf(stderr, "pmugate: --block needs branch stacks (--mode branches): IP mode has no "
                        "blocks\n");
                return -EINVAL;
        }
        if (a.duration > 0 && a.command) {
                fprintf(stderr,
                        "pmugate: --duration is for -p; a command is sampled until it exits\n");
                return -EINVAL;
        }
        *ret = a;
        return 0;
}

/* The records of one drain round, kept until they are ordered by time. */
typedef struct Pending {
        uint64_t time;
        uint64_t seq;                   /* arrival: ties keep the ring's order */
        TimingRecord *rec;
} Pending;

typedef struct Recorder {
        TimingAnalysis *analysis;
        pmugate_timing_handle **handles;
        size_t n_handles;
        TimingRing **rings;
        size_t n_rings;
        Pending *pending;
        size_t n_pending, n_pending_allocated;
        uint64_t seq;
        uint64_t malformed;
        size_t last_round;              /* records the last drain read */
        uint32_t target;                /* the process sampled */
        bool exit_seen;                 /* its EXIT record was read */
        bool unframed;                  /* a ring's records could no longer be framed */
        int error;
} Recorder;

/* The part of a record the analysis reads: a sample without its unused entries, a mapping
 * whole, the rest as they are. */
static size_t record_size(const TimingRecord *rec) {
        if (rec->kind == TIMING_RECORD_SAMPLE)
                return offsetof(TimingRecord, sample.branches) +
                       MIN(rec->sample.n_branches, (size_t) TIMING_BRANCHES_MAX) * sizeof(TimingBranch);
        return sizeof(TimingRecord);
}

static int on_record(const TimingRecord *rec, void *userdata) {
        Recorder *r = userdata;
        TimingRecord *copy;

        if (rec->kind == TIMING_RECORD_EXIT && rec->pid == r->target)
                r->exit_seen = true;
        if (r->n_pending >= r->n_pending_allocated) {
                size_t n = r->n_pending_allocated ? 2 * r->n_pending_allocated : 1024;
                Pending *p = reallocarray(r->pending, n, sizeof(*p));

                if (!p)
                        return -ENOMEM;
                r->pending = p;
                r->n_pending_allocated = n;
        }
        /* a full TimingRecord is as large as its largest member (a mapping's path): samples, by
         * far the most, are kept at their own size, the entries they have */
        copy = malloc(record_size(rec));
        if (!copy)
                return -ENOMEM;
        memcpy(copy, rec, record_size(rec));
        r->pending[r->n_pending++] = (Pending) { .time = rec->time, .seq = r->seq++, .rec = copy };
        return 0;
}

static int compare_pending(const void *x, const void *y) {
        const Pending *a = x, *b = y;

        if (a->time != b->time)
                return a->time < b->time ? -1 : 1;
        return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Drains every ring, then feeds the round's records to the analysis in time order (the rings
 * of the CPUs interleave in time). Returns 0 or a negative errno. */
static int drain_all(Recorder *r) {
        int q = 0;

        r->last_round = 0;
        for (size_t i = 0; i < r->n_rings; i++) {
                uint64_t malformed = 0;
                int n;

                if (!r->rings[i])
                        continue;
                n = timing_ring_drain(r->rings[i], on_record, r, &malformed);
                r->malformed += malformed;
                if (n == -EBADMSG) {
                        /* the rest of this ring cannot be framed: what was read stays */
                        r->unframed = true;
                        r->rings[i] = timing_ring_unmap(r->rings[i]);
                } else if (n < 0) {
                        q = n;
                        break;
                }
        }
        r->last_round = r->n_pending;
        if (r->n_pending > 1)
                qsort(r->pending, r->n_pending, sizeof(*r->pending), compare_pending);
        for (size_t i = 0; i < r->n_pending; i++) {
                if (q >= 0)
                        q = timing_analysis_add_record(r->analysis, r->pending[i].rec);
                free(r->pending[i].rec);
        }
        r->n_pending = 0;
        return q;
}

static void recorder_done(Recorder *r, pmugate *c) {
        for (size_t i = 0; i < r->n_rings; i++)
                r->rings[i] = timing_ring_unmap(r->rings[i]);
        free(r->rings);
        for (size_t i = 0; i < r->n_handles; i++)
                (void) pmugate_timing_close(c, r->handles[i]);
        free(r->handles);
        for (size_t i = 0; i < r->n_pending; i++)
                free(r->pending[i].rec);
        free(r->pending);
        *r = (Recorder) { .analysis = r->analysis };
}

/* The CPUs pid may run on: its affinity, which its threads and children inherit. */
static int affinity_of(pid_t pid, uint32_t **ret, size_t *ret_n) {
        _cleanup_free_ uint32_t *cpus = NULL;
        cpu_set_t set;
        size_t n = 0;

        if (sched_getaffinity(pid, sizeof(set), &set) < 0)
                return negative_errno();
        cpus = calloc(CPU_SETSIZE, sizeof(uint32_t));
        if (!cpus)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &set))
                        cpus[n++] = cpu;
        if (n == 0)
                return -ENOENT;
        *ret = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

/* A refusal of branch mode for the lack of an LBR (or its cycles) gets what does work. */
static void say_refused(const TimingArgs *a, const char *reason) {
        fprintf(stderr, "pmugate: %s\n", reason);
        if (a->mode == TIMING_MODE_BRANCHES && !strstr(reason, "ips") &&
            (strstr(reason, "branch stack") || strstr(reason, "LBR") || strstr(reason, "records no cycles")))
                fprintf(stderr,
                        "pmugate: --mode ips samples instructions on this machine (no cycles per "
                        "block, but where the time goes per function and line)\n");
}

/* Opens the events on every CPU, TIMING_CPUS_PER_OPEN per request, and maps their rings. */
static int open_events(const TimingArgs *a, pmugate *c, pid_t pid, bool on_exec, const uint32_t *cpus,
                       size_t n_cpus, Recorder *r, uint64_t *ret_period) {
        size_t n_requests = (n_cpus + TIMING_CPUS_PER_OPEN - 1) / TIMING_CPUS_PER_OPEN;

        r->handles = calloc(n_requests, sizeof(*r->handles));
        r->rings = calloc(n_cpus, sizeof(*r->rings));
        if (!r->handles || !r->rings)
                return -ENOMEM;
        for (size_t k = 0; k < n_requests; k++) {
                pmugate_timing_request req = {
                        .mode = (pmugate_timing_mode) a->mode,
                        .pid = pid,
                        .on_exec = on_exec,
                        .period = a->period,
                        .cpus = cpus + k * TIMING_CPUS_PER_OPEN,
                        .n_cpus = MIN((size_t) TIMING_CPUS_PER_OPEN, n_cpus - k * TIMING_CPUS_PER_OPEN),
                };
                char reason[PMUGATE_REASON_MAX] = "";
                pmugate_timing_handle *h = NULL;
                int q = pmugate_timing_open(c, &req, &h, reason, sizeof(reason));

                if (q < 0) {
                        say_refused(a, reason[0] ? reason : pmugate_strerror(q));
                        return q;
                }
                r->handles[r->n_handles++] = h;
                *ret_period = pmugate_timing_period(h);
                for (size_t i = 0; i < pmugate_timing_n_fds(h); i++) {
                        q = timing_ring_map(pmugate_timing_fd(h, i), timing_sample_type(a->mode),
                                            &r->rings[r->n_rings]);
                        if (q < 0) {
                                fprintf(stderr, "pmugate: cannot map the ring of CPU %d: %s\n",
                                        pmugate_timing_cpu(h, i), strerror(-q));
                                return q;
                        }
                        r->n_rings++;
                }
        }
        return 0;
}

/* The r-x mappings of a running process, which the kernel reported before the recording
 * began and will not report again: parsed from /proc/PID/maps as MMAP2 records would have them. */
static int mappings_from_proc(TimingAnalysis *analysis, pid_t pid) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ TimingMapping *m = calloc(1, sizeof(TimingMapping));
        char path[64];
        size_t size = 0;
        ssize_t n;

        if (!m)
                return -ENOMEM;
        (void) snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        while ((n = getline(&line, &size, f)) > 0) {
                unsigned long long start, end, pgoff, ino;
                unsigned maj, min;
                char perms[8];
                int at = 0, q;

                if ((size_t) n > PROC_MAPS_LINE_MAX)
                        continue;
                if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min,
                           &ino, &at) < 7 ||
                    at <= 0 || end <= start || strlen(perms) < 3 || perms[2] != 'x')
                        continue;
                line[strcspn(line, "\n")] = '\0';
                *m = (TimingMapping) {
                        .pid = (uint32_t) pid, .tid = (uint32_t) pid, .start = start, .len = end - start,
                        .pgoff = pgoff, .maj = maj, .min = min, .ino = ino,
                };
                (void) snprintf(m->path, sizeof(m->path), "%s", line + at);
                q = timing_analysis_add_mapping(analysis, m);
                if (q < 0)
                        return q;
        }
        return 0;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static bool exited_process(const Workload *w) {
        struct pollfd p = { .fd = w->pidfd, .events = POLLIN };

        return w->pidfd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* Drains the rings every DRAIN_PERIOD_MS (DRAIN_BUSY_PERIOD_MS while records come) until the
 * command or process exits, the duration is over, or (without a command) SIGINT or SIGTERM; a
 * command gets SIGTERM passed on and the terminal's SIGINT itself. Returns 0 or a negative
 * errno. */
static int record_loop(const TimingArgs *a, Recorder *r, Workload *w, int signal_fd,
                       const char **ret_signal) {
        uint64_t deadline = a->duration > 0 ? now_ms() + (uint64_t) (a->duration * 1000) : UINT64_MAX;
        int q;

        for (;;) {
                struct pollfd fds[2] = {
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = w->pidfd, .events = POLLIN },
                };
                bool exited;

                if (poll(fds, w->pidfd >= 0 ? 2 : 1,
                         r->last_round > 0 ? DRAIN_BUSY_PERIOD_MS : DRAIN_PERIOD_MS) < 0 &&
                    errno != EINTR)
                        return negative_errno();
                if (fds[0].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                if (!a->command) {
                                        *ret_signal = si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
                                        break;
                                }
                                if (si.ssi_signo == SIGTERM)
                                        (void) kill(w->pid, SIGTERM);
                        }
                }
                exited = w->pidfd >= 0 && (fds[1].revents & POLLIN);
                q = drain_all(r);
                if (q < 0)
                        return q;
                if (exited || now_ms() >= deadline)
                        break;
        }
        if (!exited_process(w))
                return drain_all(r);
        /* the records written before the exit, up to its EXIT record */
        for (uint64_t end = now_ms() + EXIT_GRACE_MS; !r->exit_seen && now_ms() < end;) {
                (void) poll(NULL, 0, DRAIN_BUSY_PERIOD_MS);
                q = drain_all(r);
                if (q < 0)
                        return q;
        }
        return drain_all(r);
}

static int open_output(const TimingArgs *a, OutputFormat *format, FILE **ret) {
        char path[OUTPUT_PATH_MAX], reason[PMUGATE_REASON_MAX] = "";
        int q;

        *ret = NULL;
        if (!a->output_path)
                return 0;
        q = output_path_expand(a->output_path, path, sizeof(path), reason, sizeof(reason));
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", reason);
                return 2;
        }
        if (!a->format_given && !output_format_from_path(path, format)) {
                const char *slash = strrchr(a->output_path, '/'), *base = slash ? slash + 1 : a->output_path;
                const char *dot = strrchr(base, '.');

                if (dot && dot != base && dot[1] && !strchr(dot, '%')) {
                        fprintf(stderr,
                                "pmugate: -o %s: unknown suffix '%s': use .csv, .json, .jsonl or "
                                "the table's .txt, or choose the format with -O\n",
                                a->output_path, dot);
                        return 2;
                }
        }
        q = output_file_open(path, ret, reason, sizeof(reason));
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", reason[0] ? reason : strerror(-q));
                return 1;
        }
        return 0;
}

static bool parse_hex(const char *s, uint64_t *ret) {
        char *end;

        if (strncmp(s, "0x", 2) != 0 && strncmp(s, "0X", 2) != 0)
                return false;
        errno = 0;
        *ret = strtoull(s, &end, 16);
        return errno == 0 && end != s + 2 && *end == '\0';
}

/* Whether block b ends at --block's branch: ADDR as the file address objdump shows, the file
 * offset or a run-time address of the recording; SYMBOL as the function the branch is in, and
 * SYMBOL+0xOFF as the branch's place in it. */
static bool block_matches(TimingNamer *namer, const TimingAnalysis *an, const TimingBlock *b,
                          const char *query) {
        const TimingModule *m = timing_analysis_module(an, b->module);
        const char *plus = strrchr(query, '+');
        size_t len = plus ? (size_t) (plus - query) : strlen(query);
        uint64_t addr, offset = 0;
        TimingName end;

        if (parse_hex(query, &addr)) {
                if (b->end == addr || b->address_end == addr)
                        return true;
                timing_namer_offset(namer, m, b->end, &end);
                return end.has_file_address && end.file_start == addr;
        }
        if (plus && !parse_hex(plus + 1, &offset))
                return false;
        timing_namer_offset(namer, m, b->end, &end);
        return end.function[0] && strlen(end.function) == len && strncmp(end.function, query, len) == 0 &&
               (!plus || end.function_offset == offset);
}

/* IP mode: samples per function and per source line, most first; a hash of name and file finds
 * an item (a program has thousands of functions, and up to TIMING_BLOCKS_MAX distinct IPs). */
typedef struct Tally {
        TimingCount *items;
        size_t n, allocated;
        uint32_t *slots;                /* index + 1 into items, 0 free */
        size_t n_slots;                 /* a power of two, at least twice n */
} Tally;

static uint64_t tally_hash(const char *name, const char *module) {
        uint64_t h = 1469598103934665603ULL ^ (uint64_t) (uintptr_t) module;

        /* as far as an item keeps it */
        for (size_t i = 0; i < TIMING_SOURCE_MAX - 1 && name[i]; i++)
                h = (h ^ (uint8_t) name[i]) * 1099511628211ULL;
        return h ^ (h >> 29);
}

static int tally_rehash(Tally *t) {
        size_t n = t->n_slots ? 2 * t->n_slots : 256;
        uint32_t *slots = calloc(n, sizeof(*slots));

        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++) {
                size_t k = tally_hash(t->items[i].name, t->items[i].module) & (n - 1);

                while (slots[k])
                        k = (k + 1) & (n - 1);
                slots[k] = (uint32_t) i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->n_slots = n;
        return 0;
}

static int tally_add(Tally *t, const char *name, const char *function, const char *module,
                     uint64_t samples) {
        size_t k;

        if (2 * (t->n + 1) > t->n_slots && tally_rehash(t) < 0)
                return -ENOMEM;
        for (k = tally_hash(name, module) & (t->n_slots - 1); t->slots[k]; k = (k + 1) & (t->n_slots - 1)) {
                TimingCount *c = &t->items[t->slots[k] - 1];

                if (c->module == module && strncmp(c->name, name, sizeof(c->name) - 1) == 0) {
                        c->samples += samples;
                        return 0;
                }
        }
        if (t->n >= t->allocated) {
                size_t n = t->allocated ? 2 * t->allocated : 64;
                TimingCount *p = reallocarray(t->items, n, sizeof(*p));

                if (!p)
                        return -ENOMEM;
                t->items = p;
                t->allocated = n;
        }
        t->items[t->n] = (TimingCount) { .module = module, .samples = samples };
        (void) snprintf(t->items[t->n].name, sizeof(t->items[t->n].name), "%s", name);
        (void) snprintf(t->items[t->n].function, sizeof(t->items[t->n].function), "%s", function);
        t->slots[k] = (uint32_t) ++t->n;
        return 0;
}

static int compare_counts(const void *x, const void *y) {
        const TimingCount *a = x, *b = y;

        if (a->samples != b->samples)
                return a->samples < b->samples ? 1 : -1;
        return strcmp(a->name, b->name);
}

/* An IP in no function is tallied by its file and offset ("prog+0x1234"), or its address. */
static void unnamed(const TimingModule *m, uint64_t offset, char *buf, size_t size) {
        if (m) {
                const char *slash = strrchr(m->path, '/');

                (void) snprintf(buf, size, "%.200s+0x%" PRIx64, slash ? slash + 1 : m->path, offset);
        } else
                (void) snprintf(buf, size, "0x%" PRIx64, offset);
}

static int tally_ips(const TimingAnalysis *an, TimingNamer *namer, Tally *functions, Tally *lines) {
        for (size_t i = 0; i < timing_analysis_n_ips(an); i++) {
                const TimingIp *ip = timing_analysis_ip(an, i);
                const TimingModule *m = timing_analysis_module(an, ip->module);
                char fallback[TIMING_NAME_MAX];
                TimingName name;
                const char *function;
                int q;

                timing_namer_offset(namer, m, ip->offset, &name);
                unnamed(m, ip->offset, fallback, sizeof(fallback));
                function = name.function[0] ? name.function : fallback;
                q = tally_add(functions, function, "", m ? m->path : NULL, ip->samples);
                if (q >= 0 && name.source[0])
                        q = tally_add(lines, name.source, function, m ? m->path : NULL, ip->samples);
                if (q < 0)
                        return q;
        }
        if (functions->n > 1)
                qsort(functions->items, functions->n, sizeof(TimingCount), compare_counts);
        if (lines->n > 1)
                qsort(lines->items, lines->n, sizeof(TimingCount), compare_counts);
        return 0;
}

typedef struct Shown {
        const TimingBlock **blocks;
        TimingName *names;
        char **listings;
        size_t n;
} Shown;

static void shown_done(Shown *s) {
        for (size_t i = 0; s->listings && i < s->n; i++)
                free(s->listings[i]);
        free(s->listings);
        free(s->blocks);
        free(s->names);
}

/* The blocks to show, named: --block's, else the top hottest. */
static int choose_blocks(const TimingArgs *a, const TimingAnalysis *an, TimingNamer *namer, Shown *ret) {
        size_t n_all = timing_analysis_n_blocks(an);
        Shown s = {};

        s.blocks = calloc(MAX(n_all, (size_t) 1), sizeof(*s.blocks));
        if (!s.blocks)
                return -ENOMEM;
        for (size_t i = 0; i < n_all; i++) {
                const TimingBlock *b = timing_analysis_block(an, i);

                if (a->block ? block_matches(namer, an, b, a->block) : s.n < a->top)
                        s.blocks[s.n++] = b;
        }
        s.names = calloc(MAX(s.n, (size_t) 1), sizeof(*s.names));
        if (!s.names) {
                shown_done(&s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s.n; i++)
                timing_namer_block(namer, timing_analysis_module(an, s.blocks[i]->module), s.blocks[i],
                                   &s.names[i]);
        if (a->block) {
                s.listings = calloc(MAX(s.n, (size_t) 1), sizeof(char *));
                if (!s.listings) {
                        shown_done(&s);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < s.n; i++)
                        if (timing_namer_listing(namer, timing_analysis_module(an, s.blocks[i]->module),
                                                 s.blocks[i], &s.listings[i]) < 0) {
                                shown_done(&s);
                                return -ENOMEM;
                        }
        }
        *ret = s;
        return 0;
}

/* After the recording: what the stream said beside the samples, on stderr. */
static void say_counters(const TimingArgs *a, const Recorder *rec, const TimingCounters *k) {
        if (k->samples == 0)
                fprintf(stderr,
                        "pmugate: no samples: the %s ran too briefly for one period, or the kernel "
                        "stopped sampling it (an exec of a setuid program ends the recording of that "
                        "process)\n",
                        a->command ? "command" : "process");
        if (k->lost > 0)
                fprintf(stderr,
                        "pmugate: the kernel dropped %" PRIu64 " records (the rings filled faster "
                        "than they were read): a longer --period loses fewer\n",
                        k->lost);
        if (k->throttled > 0)
                fprintf(stderr,
                        "pmugate: the kernel paused sampling %" PRIu64 " times for its sample-rate "
                        "limit (perf_event_max_sample_rate): a longer --period avoids it\n",
                        k->throttled);
        if (rec->malformed > 0 || rec->unframed)
                fprintf(stderr, "pmugate: %" PRIu64 " malformed records skipped%s\n", rec->malformed,
                        rec->unframed ? "; a ring could not be read past a bad record" : "");
        if (k->cycles_dropped > 0 || k->blocks_dropped > 0 || k->mappings_dropped > 0)
                fprintf(stderr,
                        "pmugate: past the client's bounds, not kept: %" PRIu64
                        " cycle counts, %" PRIu64 " blocks or IPs, %" PRIu64 " mappings\n",
                        k->cycles_dropped, k->blocks_dropped, k->mappings_dropped);
}

static int report(const TimingArgs *a, const pmugate_info *info, const TimingAnalysis *an, FILE *file,
                  OutputFormat format, uint64_t period, const char *cpu_list, int exit_status,
                  double elapsed, const char *interrupted) {
        _cleanup_(timing_namer_freep) TimingNamer *namer = NULL;
        Tally functions = {}, lines = {};
        Shown shown = {};
        TimingReport rep;
        int q;

        q = timing_namer_new(&namer);
        if (q >= 0 && a->mode == TIMING_MODE_BRANCHES)
                q = choose_blocks(a, an, namer, &shown);
        if (q >= 0 && a->mode == TIMING_MODE_IPS)
                q = tally_ips(an, namer, &functions, &lines);
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", strerror(-q));
                free(functions.items);
                free(functions.slots);
                free(lines.items);
                free(lines.slots);
                return 1;
        }
        if (a->block && shown.n == 0)
                fprintf(stderr, "pmugate: --block %s: no recorded block ends there (a function name, "
                        "function+0xOFF, or a file offset or address from the table)\n", a->block);
        rep = (TimingReport) {
                .format = format,
                .file = file,
                .mode = a->mode,
                .command = a->command,
                .pid = (int) a->pid,
                .exit_status = exit_status,
                .period = period,
                .cpu_list = cpu_list,
                .model = info->model_key,
                .model_name = info->model_label,
                .simulated = info->simulated,
                .elapsed = elapsed,
                .analysis = an,
                .blocks = shown.blocks,
                .names = shown.names,
                .n_blocks = shown.n,
                .n_blocks_total = timing_analysis_n_blocks(an),
                .functions = functions.items,
                .n_functions = MIN(functions.n, (size_t) a->top),
                .lines = lines.items,
                .n_lines = MIN(lines.n, (size_t) a->top),
                .block_query = a->block,
                .block_listing = shown.listings,
                .interrupted = interrupted,
        };
        q = timing_output_write(&rep);
        shown_done(&shown);
        free(functions.items);
        free(functions.slots);
        free(lines.items);
        free(lines.slots);
        if (q < 0) {
                fprintf(stderr, "pmugate: writing the output failed: %s\n", strerror(-q));
                return 1;
        }
        return a->block && rep.n_blocks == 0 ? 1 : 0;
}

static inline void pmugate_info_freep_timing(pmugate_info **info) {
        *info = pmugate_info_free(*info);
}

static int run(const TimingArgs *a, const char *socket_path) {
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        _cleanup_(pmugate_info_freep_timing) pmugate_info *info = NULL;
        _cleanup_(timing_analysis_freep) TimingAnalysis *analysis = NULL;
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_fclose_ FILE *file = NULL;
        _cleanup_close_ int signal_fd = -EBADF;
        char cpu_list[CPU_LIST_TEXT_MAX];
        OutputFormat format = a->format;
        Workload w = WORKLOAD_NULL;
        Recorder rec = {};
        const char *interrupted = NULL;
        uint64_t period = a->period, start;
        sigset_t mask, old_mask;
        bool blocked;
        size_t n_cpus = 0;
        int q, status = 0;

        q = open_output(a, &format, &file);
        if (q != 0)
                return q;
        if (cli_connect(socket_path, &c) < 0)
                return 1;
        q = pmugate_hello(c, &info);
        if (q < 0)
                return cli_report("pmugate", c, q, "hello");
        q = timing_analysis_new(&analysis);
        if (q < 0)
                return 1;
        rec.analysis = analysis;

        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGTERM);
        blocked = sigprocmask(SIG_BLOCK, &mask, &old_mask) == 0;
        signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (signal_fd < 0) {
                fprintf(stderr, "pmugate: signalfd: %s\n", strerror(errno));
                status = 1;
                goto out;
        }

        if (a->command) {
                fflush(stdout);
                fflush(stderr);
                /* held before its exec: sampling begins at the exec (enable_on_exec) */
                q = workload_fork(&w, a->command, /* pin= */ NULL, /* n_pin= */ 0);
                if (q < 0) {
                        fprintf(stderr, "pmugate: cannot start '%s': %s\n", a->command[0],
                                strerror(-q));
                        status = 1;
                        goto out;
                }
        } else {
                w.pidfd = (int) syscall(SYS_pidfd_open, a->pid, 0);
                if (w.pidfd < 0) {
                        fprintf(stderr, "pmugate: process %d: %s\n", (int) a->pid, strerror(errno));
                        status = 1;
                        goto out;
                }
        }
        q = affinity_of(a->command ? w.pid : a->pid, &cpus, &n_cpus);
        if (q < 0) {
                fprintf(stderr, "pmugate: the CPUs process %d may run on: %s\n",
                        (int) (a->command ? w.pid : a->pid), strerror(-q));
                status = 1;
                goto out;
        }
        if (cpulist_format(cpus, n_cpus, cpu_list, sizeof(cpu_list)) < 0)
                (void) snprintf(cpu_list, sizeof(cpu_list), "(%zu CPUs)", n_cpus);
        q = open_events(a, c, a->command ? w.pid : a->pid, !!a->command, cpus, n_cpus, &rec, &period);
        if (q < 0) {
                status = 1;
                goto out;
        }
        if (!a->command) {
                /* the mappings made before the events opened: the kernel reports only new ones */
                q = mappings_from_proc(analysis, a->pid);
                if (q < 0)
                        fprintf(stderr,
                                "pmugate: the mappings of process %d: %s; its blocks are named by "
                                "address only\n",
                                (int) a->pid, strerror(-q));
        }
        rec.target = (uint32_t) (a->command ? w.pid : a->pid);
        start = now_ms();
        if (a->command && workload_release(&w, a->command, "timing") < 0) {
                status = w.status >= 0 ? w.status : 1;
                goto out;
        }
        q = record_loop(a, &rec, &w, signal_fd, &interrupted);
        if (q < 0) {
                fprintf(stderr, "pmugate: reading the samples failed: %s\n", strerror(-q));
                status = 1;
        }
        if (a->command)
                workload_reap(&w);
        recorder_done(&rec, c);
        q = timing_analysis_finish(analysis);
        if (q < 0) {
                fprintf(stderr, "pmugate: %s\n", strerror(-q));
                status = 1;
                goto out;
        }
        if (interrupted)
                fprintf(stderr,
                        "pmugate: interrupted by %s; the result covers the time recorded so far\n",
                        interrupted);
        say_counters(a, &rec, timing_analysis_counters(analysis));
        /* as perf: a wrapped command keeps stdout to itself */
        q = report(a, info, analysis, file ?: a->command ? stderr : stdout, format, period, cpu_list,
                   a->command ? w.status : -1, (double) (now_ms() - start) / 1000.0, interrupted);
        if (q != 0)
                status = q;
        if (a->command && w.status >= 0 && status == 0)
                status = w.status;
        else if (interrupted && status == 0)
                status = EXIT_SIGNAL_BASE + (strcmp(interrupted, "SIGINT") == 0 ? SIGINT : SIGTERM);
out:
        recorder_done(&rec, c);
        workload_abort(&w);
        if (blocked)
                (void) sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return status;
}

int verb_timing(int argc, char *argv[], const char *socket_path) {
        TimingArgs a;
        int q = parse_args(argc, argv, &a);

        if (q != 0)
                return q == ARGS_DONE ? 0 : 2;
        return run(&a, socket_path);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: TopDown, instructions and cycles of every CPU, labelled by job, for
 * Prometheus (docs/EXPORTER.md)
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "build-config.h"
#include "http.h"
#include "macro.h"
#include "render.h"
#include "sampler.h"

#define DEFAULT_LISTEN ":9755"
#define DEFAULT_INTERVAL_NS (1000ULL * 1000ULL * 1000ULL)
#define INTERVAL_MIN_NS (100ULL * 1000ULL * 1000ULL)
#define INTERVAL_MAX_NS (60ULL * 1000ULL * 1000ULL * 1000ULL)
#define DEFAULT_RETENTION_S (15 * 60)
#define LOG_INTERVAL_MIN_NS (1000ULL * 1000ULL * 1000ULL)
#define LOG_INTERVAL_MAX_NS (3600ULL * 1000ULL * 1000ULL * 1000ULL)

typedef struct Options {
        const char *socket_path;
        const char *listen;
        uint64_t interval_ns;
        unsigned level;
        const char *job_label;
        bool job_uids;
        PerCpu per_cpu;
        uint64_t retention_s;
        uint64_t log_interval_ns;
} Options;

static void usage(FILE *f) {
        fputs("Usage: pmugate-exporter [OPTIONS]\n"
              "Serves TopDown, instructions and cycles of every CPU, labelled by the job holding it, at\n"
              "/metrics for Prometheus; a job's summary at /jobs/ID. Runs as a user in monitor_users.\n\n"
              "  --listen=[ADDR]:PORT     address to serve on (default " DEFAULT_LISTEN ": every address)\n"
              "  --interval=DURATION      sampling period, apart from scrapes (default 1s; 100ms-60s)\n"
              "  --level=1|2              TopDown level (default 2; 1 where the CPU has no level 2)\n"
              "  --job-label=NAME         label naming the batch job (default jobid)\n"
              "  --job-uids               export each job's uid as the gauge pmugate_job_uid (when the\n"
              "                           daemon's policy tells monitors uids: jobmap_uids = yes)\n"
              "  --per-cpu=auto|yes|no    series per CPU besides per socket, node and job (default auto:\n"
              "                           only on nodes of at most 256 CPUs)\n"
              "  --summary-retention=DURATION  how long an ended job's summary stays (default 15min)\n"
              "  --log-interval=DURATION  log each kind of problem once per DURATION, with a count of\n"
              "                           its repeats (default 1min; 1s-1h)\n"
              "  --socket=PATH            pmugated's socket (default $PMUGATE_SOCKET or " PMUGATE_SOCKET_PATH
              ")\n"
              "  --version, --help\n",
              f);
}

/* "500ms", "2s", "15min", "1h"; a bare number is seconds. */
static int parse_duration(const char *text, uint64_t *ret_ns) {
        static const struct {
                const char *suffix;
                uint64_t ns;
        } units[] = {{"ms", 1000ULL * 1000ULL},
                     {"s", 1000ULL * 1000ULL * 1000ULL},
                     {"", 1000ULL * 1000ULL * 1000ULL},
                     {"min", 60ULL * 1000ULL * 1000ULL * 1000ULL},
                     {"m", 60ULL * 1000ULL * 1000ULL * 1000ULL},
                     {"h", 3600ULL * 1000ULL * 1000ULL * 1000ULL}};
        char *end;
        unsigned long long v;

        if (!text || text[0] < '0' || text[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno != 0 || v > 1000000ULL)
                return -ERANGE;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(end, units[i].suffix) == 0) {
                        *ret_ns = v * units[i].ns;
                        return 0;
                }
        return -EINVAL;
}

/* "[::1]:9755", "127.0.0.1:9755", ":9755" (every address). */
static int parse_listen(const char *text, struct sockaddr_storage *ret, socklen_t *ret_len) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
        struct addrinfo *res = NULL;
        char host[128] = "";
        const char *port, *colon = strrchr(text, ':');
        char *end;
        long p;
        int r;

        if (!colon || colon[1] == '\0')
                return -EINVAL;
        port = colon + 1;
        p = strtol(port, &end, 10);
        if (*end != '\0' || p < 1 || p > 65535)
                return -EINVAL;
        if (text[0] == '[') {
                if (colon == text || colon[-1] != ']' || (size_t) (colon - text - 2) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, text + 1, (size_t) (colon - text - 2));
        } else {
                if ((size_t) (colon - text) >= sizeof(host) || memchr(text, ':', (size_t) (colon - text)))
                        return -EINVAL;
                memcpy(host, text, (size_t) (colon - text));
        }
        r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
        if (r != 0 || !res)
                return -EINVAL;
        if (!host[0]) {
                /* every address: prefer IPv4's wildcard, which exists on every host */
                for (struct addrinfo *a = res; a; a = a->ai_next)
                        if (a->ai_family == AF_INET) {
                                memcpy(ret, a->ai_addr, a->ai_addrlen);
                                *ret_len = a->ai_addrlen;
                                freeaddrinfo(res);
                                return 0;
                        }
        }
        memcpy(ret, res->ai_addr, res->ai_addrlen);
        *ret_len = res->ai_addrlen;
        freeaddrinfo(res);
        return 0;
}

static int parse_options(int argc, char **argv, Options *o) {
        enum {
                OPT_LISTEN = 256,
                OPT_INTERVAL,
                OPT_LEVEL,
                OPT_JOB_LABEL,
                OPT_JOB_UIDS,
                OPT_PER_CPU,
                OPT_RETENTION,
                OPT_LOG_INTERVAL,
                OPT_SOCKET,
                OPT_VERSION,
                OPT_HELP
        };
        static const struct option longopts[] = {
                { "listen", required_argument, NULL, OPT_LISTEN },
                { "interval", required_argument, NULL, OPT_INTERVAL },
                { "level", required_argument, NULL, OPT_LEVEL },
                { "job-label", required_argument, NULL, OPT_JOB_LABEL },
                { "job-uids", no_argument, NULL, OPT_JOB_UIDS },
                { "per-cpu", required_argument, NULL, OPT_PER_CPU },
                { "summary-retention", required_argument, NULL, OPT_RETENTION },
                { "log-interval", required_argument, NULL, OPT_LOG_INTERVAL },
                { "socket", required_argument, NULL, OPT_SOCKET },
                { "version", no_argument, NULL, OPT_VERSION },
                { "help", no_argument, NULL, OPT_HELP },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "", longopts, NULL)) >= 0) {
                uint64_t ns;

                switch (c) {
                case OPT_LISTEN:
                        o->listen = optarg;
                        break;
                case OPT_INTERVAL:
                        if (parse_duration(optarg, &ns) < 0 || ns < INTERVAL_MIN_NS ||
                            ns > INTERVAL_MAX_NS) {
                                fprintf(stderr,
                                        "pmugate-exporter: --interval=%s: give 100ms to 60s, e.g. 1s\n",
                                        optarg);
                                return -EINVAL;
                        }
                        o->interval_ns = ns;
                        break;
                case OPT_LEVEL:
                        if (strcmp(optarg, "1") != 0 && strcmp(optarg, "2") != 0) {
                                fprintf(stderr, "pmugate-exporter: --level=%s: TopDown level 1 or 2\n",
                                        optarg);
                                return -EINVAL;
                        }
                        o->level = (unsigned) (optarg[0] - '0');
                        break;
                case OPT_JOB_LABEL:
                        if (!label_name_valid(optarg)) {
                                fprintf(stderr,
                                        "pmugate-exporter: --job-label=%s: a label name is letters, digits "
                                        "and '_', not starting with a digit or '__', and not one of the "
                                        "exporter's own labels\n",
                                        optarg);
                                return -EINVAL;
                        }
                        o->job_label = optarg;
                        break;
                case OPT_JOB_UIDS:
                        o->job_uids = true;
                        break;
                case OPT_PER_CPU:
                        if (strcmp(optarg, "auto") == 0)
                                o->per_cpu = PER_CPU_AUTO;
                        else if (strcmp(optarg, "yes") == 0)
                                o->per_cpu = PER_CPU_YES;
                        else if (strcmp(optarg, "no") == 0)
                                o->per_cpu = PER_CPU_NO;
                        else {
                                fprintf(stderr, "pmugate-exporter: --per-cpu=%s: give auto, yes or no\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case OPT_RETENTION:
                        if (parse_duration(optarg, &ns) < 0 || ns > 7ULL * 24 * 3600 * 1000000000ULL) {
                                fprintf(stderr,
                                        "pmugate-exporter: --summary-retention=%s: a duration up to 7 "
                                        "days, e.g. 15min\n",
                                        optarg);
                                return -EINVAL;
                        }
                        o->retention_s = ns / 1000000000ULL;
                        break;
                case OPT_LOG_INTERVAL:
                        if (parse_duration(optarg, &ns) < 0 || ns < LOG_INTERVAL_MIN_NS ||
                            ns > LOG_INTERVAL_MAX_NS) {
                                fprintf(stderr,
                                        "pmugate-exporter: --log-interval=%s: give 1s to 1h, e.g. 1min\n",
                                        optarg);
                                return -EINVAL;
                        }
                        o->log_interval_ns = ns;
                        break;
                case OPT_SOCKET:
                        o->socket_path = optarg;
                        break;
                case OPT_VERSION:
                        printf("pmugate-exporter %s\n", PMUGATE_VERSION);
                        exit(EXIT_SUCCESS);
                case OPT_HELP:
                        usage(stdout);
                        exit(EXIT_SUCCESS);
                default:
                        usage(stderr);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pmugate-exporter: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

static uint64_t monotonic_ns(void) {
        struct timespec now;

        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        return (uint64_t) now.tv_sec * 1000000000ULL + (uint64_t) now.tv_nsec;
}

static void add_ns(struct timespec *t, uint64_t ns) {
        t->tv_sec += (time_t) (ns / 1000000000ULL);
        t->tv_nsec += (long) (ns % 1000000000ULL);
        if (t->tv_nsec >= 1000000000L) {
                t->tv_sec++;
                t->tv_nsec -= 1000000000L;
        }
}

/* Waits until deadline (CLOCK_MONOTONIC) or a signal in set; returns the signal or 0. */
static int wait_until(const struct timespec *deadline, const sigset_t *set) {
        for (;;) {
                struct timespec now, left;
                int sig;

                (void) clock_gettime(CLOCK_MONOTONIC, &now);
                left.tv_sec = deadline->tv_sec - now.tv_sec;
                left.tv_nsec = deadline->tv_nsec - now.tv_nsec;
                if (left.tv_nsec < 0) {
                        left.tv_sec--;
                        left.tv_nsec += 1000000000L;
                }
                if (left.tv_sec < 0)
                        return 0;
                sig = sigtimedwait(set, NULL, &left);
                if (sig > 0)
                        return sig;
                if (errno == EAGAIN)
                        return 0;
        }
}

int main(int argc, char **argv) {
        Options o = { .listen = DEFAULT_LISTEN,
                     .interval_ns = DEFAULT_INTERVAL_NS,
                     .level = 2,
                     .job_label = "jobid",
                     .retention_s = DEFAULT_RETENTION_S,
                     .log_interval_ns = PMUGATE_EXPORTER_LOG_INTERVAL_USEC * 1000ULL};
        pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        SnapshotBox snapshots = SNAPSHOT_BOX_INIT;
        struct sockaddr_storage address;
        socklen_t address_len = 0;
        Model model = {};
        Sampler sampler = {};
        Http *http = NULL;
        struct timespec next;
        sigset_t set;
        bool warned_period = false;
        uint64_t next_publish_ns;
        int r;

        if (parse_options(argc, argv, &o) < 0)
                return 2;
        /* Each period frees a snapshot of megabytes (model copy and bodies) and allocates the
         * next: fixed, the threshold keeps such blocks mapped on their own and returned when
         * freed, where glibc's sliding one would move them to a heap that only grows. */
        (void) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
        if (parse_listen(o.listen, &address, &address_len) < 0) {
                fprintf(stderr,
                        "pmugate-exporter: --listen=%s: give [ADDRESS]:PORT, e.g. :9755, 127.0.0.1:9755 or "
                        "[::1]:9755\n",
                        o.listen);
                return 2;
        }
        (void) gethostname(model.hostname, sizeof(model.hostname) - 1);
        model.export_uids = o.job_uids;
        sampler.socket_path = o.socket_path;
        sampler.level = o.level;
        sampler.interval_ns = o.interval_ns;
        sampler.log.interval_usec = o.log_interval_ns / 1000ULL;

        /* Signals are taken by sigtimedwait in this thread only; the HTTP thread inherits the mask. */
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP);
        (void) pthread_sigmask(SIG_BLOCK, &set, NULL);
        (void) signal(SIGPIPE, SIG_IGN);

        snapshots.job_label = o.job_label;
        snapshots.version = PMUGATE_VERSION;
        snapshots.per_cpu = o.per_cpu;
        /* The first scrapes see the model as it starts: every CPU starting, no samples. */
        if (snapshot_publish(&snapshots, &model) < 0) {
                fprintf(stderr, "pmugate-exporter: out of memory\n");
                return 1;
        }
        r = http_start(&(HttpOptions) { .address = (struct sockaddr *) &address, .address_len = address_len,
                                        .snapshots = &snapshots, .job_label = o.job_label,
                                        .per_cpu = o.per_cpu,
                                        .version = PMUGATE_VERSION },
                       &http);
        if (r < 0) {
                fprintf(stderr, "pmugate-exporter: cannot serve on %s: %s\n", o.listen, strerror(-r));
                snapshot_box_done(&snapshots);
                sampler_done(&sampler);
                model_done(&model);
                return 1;
        }
        fprintf(stderr, "pmugate-exporter: serving /metrics on %s\n", o.listen);
        (void) sd_notify(0, "READY=1\nSTATUS=serving /metrics");

        (void) clock_gettime(CLOCK_MONOTONIC, &next);
        /* Snapshots (and their rendered bodies) go out once per --interval, whatever the
         * sampling period: sampling may run faster to keep TopDown precise, and rendering a
         * 4096-CPU body at that rate cost a fifth of a CPU for scrapes that come far less often. */
        next_publish_ns = monotonic_ns();
        for (;;) {
                uint64_t period = o.interval_ns, poll;
                int sig;

                sampler_step(&sampler, &model, &lock);
                /* The period's reply and result (thousands of small blocks at 4096 CPUs) are
                 * freed now: give their pages back before the bodies are rendered, or the heap
                 * keeps them resident beside the bodies. */
                (void) malloc_trim(0);
                /* A daemon that stops answering would hold the sampler in a read: under
                 * WatchdogSec= systemd then restarts the exporter. */
                (void) sd_notify(0, "WATCHDOG=1");
                if (monotonic_ns() >= next_publish_ns) {
                        pthread_mutex_lock(&lock);
                        model_prune_jobs(&model, time(NULL), (time_t) o.retention_s);
                        /* Scrapes send the bodies rendered from it (out of memory, a format keeps
                         * the previous one) and render from its copy what was not rendered. */
                        (void) snapshot_publish(&snapshots, &model);
                        pthread_mutex_unlock(&lock);
                        next_publish_ns += o.interval_ns;
                        /* behind by more than an interval (a slow daemon): start again from now */
                        if (next_publish_ns < monotonic_ns())
                                next_publish_ns = monotonic_ns() + o.interval_ns;
                }
                /* PERF_METRICS keeps 8 bits per share: a longer window loses precision. */
                poll = sampler_poll_interval(&sampler);
                if (poll > 0 && poll < period) {
                        if (!warned_period)
                                fprintf(stderr,
                                        "pmugate-exporter: sampling every %.3f s, not %.3f s, to keep "
                                        "TopDown "
                                        "precise on this CPU\n",
                                        (double) poll / 1e9, (double) period / 1e9);
                        warned_period = true;
                        period = poll;
                }
                add_ns(&next, period);
                sig = wait_until(&next, &set);
                if (sig == SIGTERM || sig == SIGINT)
                        break;
        }
        (void) sd_notify(0, "STOPPING=1");
        http = http_stop(http);
        snapshot_box_done(&snapshots);
        sampler_done(&sampler);
        model_done(&model);
        return 0;
}

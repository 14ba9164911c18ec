/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job: a job's report across the nodes it ran on, from the Slurm Epilog's per-node
 * summaries (DIR/JOB.HOST.json)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli-util.h"
#include "cli/job-prometheus.h"
#include "cli/job-report.h"
#include "cli/measure-output.h"
#include "cli/number-format.h"
#include "cli/verb-job.h"
#include "macro.h"

#define EXIT_PARTIAL 3          /* a report, but a node is missing from it */
#define LABEL_WIDTH 36

typedef struct Report {
        const char *job;
        const char *dir;
        const char *prometheus;
        int64_t skew_max;       /* INT64_MAX with Prometheus' one clock: no skew to flag */
        JobSet set;
        JobReport stats;
} Report;

static void report_done(Report *r) {
        job_set_done(&r->set);
}

static void help(void) {
        printf("Usage: pmugate job [--dir=DIR] [--nodes=HOSTLIST] [--skew-max=SECONDS] [-O table|csv|json] JOBID\n"
               "       pmugate job --prometheus=URL [--start=TIME] [--end=TIME] [--node-label=LABEL]\n"
               "                   [--nodes=HOSTLIST] [-O table|csv|json] JOBID\n"
               "\n"
               "A job's report across the nodes it ran on, from the per-node summaries the Slurm Epilog\n"
               "writes as DIR/JOBID.HOST.json (contrib/slurm/README.md), or from the series\n"
               "pmugate-exporter gave a Prometheus server: per node and in total, TopDown\n"
               "level 1 and 2, IPC, FLOPs, memory bandwidth and traffic, energy and power, and the\n"
               "imbalance between nodes (max/mean and the coefficient of variation). Counts, bytes,\n"
               "joules, bandwidth and power add up over the nodes; IPC is weighted by cycles and\n"
               "TopDown by slots. Needs no daemon.\n"
               "\n"
               "  -d --dir=DIR          The summary directory (default: $PMUGATE_JOB_SUMMARY_DIR)\n"
               "  -n --nodes=HOSTLIST   The nodes the job ran on (node[01-03],login1; e.g. from\n"
               "                        'sacct -X -n -o NodeList -j JOBID'): a node without a summary\n"
               "                        is named missing, and the total says it does not cover it\n"
               "     --skew-max=SECONDS How far a node's start or end may be from the job's (the\n"
               "                        median of the nodes'); further is flagged as clock skew\n"
               "                        (default %d)\n"
               "  -p --prometheus=URL   Ask Prometheus (http://HOST:PORT) instead of reading summaries\n"
               "     --start=TIME       Where to look for the job's series: UNIX seconds (default:\n"
               "     --end=TIME         a day before --end, and now)\n"
               "     --node-label=LABEL The label naming a node in Prometheus (default instance)\n"
               "  -O --output=FORMAT    table (default), csv or json (one document)\n"
               "  -h --help             Show this help\n"
               "\n"
               "Exit status: 0 a report of every node, 3 a report with nodes missing, 1 no summary\n"
               "of the job (or the directory cannot be read), 2 a usage error.\n",
               PMUGATE_JOB_SKEW_DEFAULT_SECONDS);
}

/* Reads a summary file without following a link at its name, without blocking on a FIFO, and
 * only a regular file up to the most a summary may be. */
static int read_summary(int dir_fd, const char *name, char **ret, size_t *ret_size, char *reason,
                        size_t reason_size) {
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        struct stat st;

        if (fd < 0) {
                int k = -errno;

                (void) snprintf(reason, reason_size, "%s", k == -ELOOP ? "a symbolic link" : strerror(-k));
                return k;
        }
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                (void) snprintf(reason, reason_size, "not a regular file");
                return -EBADMSG;
        }
        if (st.st_size > (off_t) PMUGATE_JOB_SUMMARY_SIZE_MAX) {
                (void) snprintf(reason, reason_size, "larger than %u bytes", PMUGATE_JOB_SUMMARY_SIZE_MAX);
                return -EFBIG;
        }
        buf = malloc(PMUGATE_JOB_SUMMARY_SIZE_MAX + 1);
        if (!buf)
                return -ENOMEM;
        /* the size fstat gave may change while we read: the bound holds for what is read */
        while (size <= PMUGATE_JOB_SUMMARY_SIZE_MAX) {
                ssize_t n = read(fd, buf + size, PMUGATE_JOB_SUMMARY_SIZE_MAX + 1 - size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        (void) snprintf(reason, reason_size, "%s", strerror(errno));
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        if (size > PMUGATE_JOB_SUMMARY_SIZE_MAX) {
                (void) snprintf(reason, reason_size, "larger than %u bytes", PMUGATE_JOB_SUMMARY_SIZE_MAX);
                return -EFBIG;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

static int compare_nodes(const void *a, const void *b) {
        return strcmp(((const JobNode *) a)->host, ((const JobNode *) b)->host);
}

/* Every JOB.HOST.json of the directory that is this job's summary; files that look like one
 * and cannot be read or checked make their node missing, with the reason. */
static int gather(Report *r) {
        _cleanup_close_ int dir_fd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        size_t files = 0;
        int fd2, k;

        if (dir_fd < 0) {
                k = -errno;
                fprintf(stderr, "pmugate: job: cannot open the summary directory %s: %s\n", r->dir, strerror(-k));
                return k;
        }
        fd2 = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (fd2 < 0 || !(d = fdopendir(fd2))) {
                k = -errno;
                if (fd2 >= 0)
                        (void) close(fd2);
                fprintf(stderr, "pmugate: job: cannot read %s: %s\n", r->dir, strerror(-k));
                return k;
        }
        while ((errno = 0, de = readdir(d))) {
                char host[PMUGATE_JOB_HOST_MAX + 1], why[JOB_REASON_MAX] = "", text[JOB_REASON_MAX + 64];
                _cleanup_free_ char *data = NULL;
                size_t size = 0;
                JobNode node;

                if (!job_summary_name(de->d_name, r->job, host, sizeof(host)))
                        continue;
                if (++files > PMUGATE_JOB_REPORT_NODES_MAX) {
                        fprintf(stderr, "pmugate: job: more than %u summary files of job %s in %s\n",
                                PMUGATE_JOB_REPORT_NODES_MAX, r->job, r->dir);
                        return -E2BIG;
                }
                k = read_summary(dir_fd, de->d_name, &data, &size, why, sizeof(why));
                if (k == -ENOMEM)
                        return k;
                if (k >= 0)
                        k = job_node_parse(data, size, r->job, host, &node, why, sizeof(why));
                if (k == -ENOMEM)
                        return k;
                if (k == 1)
                        continue;       /* another job's, whose id begins with this one's and a dot */
                if (k < 0) {
                        (void) snprintf(text, sizeof(text), "summary %s refused: %s", de->d_name,
                                        why[0] ? why : strerror(-k));
                        if (job_set_add_missing(&r->set, host, text) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (job_set_add_node(&r->set, &node) < 0)
                        return -ENOMEM;
        }
        if (errno != 0) {
                k = -errno;
                fprintf(stderr, "pmugate: job: reading %s: %s\n", r->dir, strerror(-k));
                return k;
        }
        if (r->set.n_nodes > 1)
                qsort(r->set.nodes, r->set.n_nodes, sizeof(JobNode), compare_nodes);
        return 0;
}

static void format_time(int64_t t, char *buf, size_t size) {
        time_t tt = (time_t) t;
        struct tm tm;

        if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
                (void) snprintf(buf, size, "%" PRId64, t);
}

static void format_value(JobMetric m, double v, char *buf, size_t size) {
        if (!isfinite(v))
                (void) snprintf(buf, size, "-");
        else if (m == JOB_IPC)
                (void) snprintf(buf, size, "%.3f", v);
        else if (job_metrics[m].topdown_level > 0)
                (void) snprintf(buf, size, "%.1f", v);
        else if (m == JOB_MEMORY_BANDWIDTH || m == JOB_POWER)
                (void) snprintf(buf, size, "%.1f", v);
        else
                (void) snprintf(buf, size, "%.4g", v);
}

static void format_ratio(double v, char *buf, size_t size) {
        if (isfinite(v))
                (void) snprintf(buf, size, "%.3f", v);
        else
                (void) snprintf(buf, size, "-");
}

/* TopDown level 2 is left out of the table where no node measured it (a level-1 model); the
 * other rows stay, "-" saying what was not measured (FLOPs on a CPU model without FP events). */
static bool shown(const Report *r, JobMetric m) {
        return r->stats.stat[m].n > 0 || job_metrics[m].topdown_level != 2;
}

static int write_table(const Report *r, FILE *f) {
        char a[64], b[64];
        int width = 14;

        for (size_t i = 0; i < r->set.n_nodes; i++)
                if ((int) strlen(r->set.nodes[i].host) + 2 > width)
                        width = (int) strlen(r->set.nodes[i].host) + 2;
        format_time(r->stats.window_start, a, sizeof(a));
        format_time(r->stats.window_end, b, sizeof(b));
        fprintf(f, "Job %s: %zu node%s %s, from %s to %s (the median of the nodes')\n", r->job,
                r->set.n_nodes, r->set.n_nodes == 1 ? "" : "s",
                r->prometheus ? "in Prometheus" : "with a summary", a, b);
        for (size_t i = 0; i < r->set.n_missing; i++)
                fprintf(f, "MISSING node %s: %s\n", r->set.missing[i].host, r->set.missing[i].reason);
        if (r->set.n_missing > 0)
                fprintf(f, "The total covers the %zu node%s above, not the %zu missing.\n", r->set.n_nodes,
                        r->set.n_nodes == 1 ? "" : "s", r->set.n_missing);
        for (size_t i = 0; i < r->set.n_nodes; i++)
                if (r->set.nodes[i].clock_skewed)
                        fprintf(f, "CLOCK SKEW node %s: its times are %+" PRId64 " s off the job's (more than %"
                                PRId64 " s); its counts are in the total\n", r->set.nodes[i].host,
                                r->set.nodes[i].clock_offset, r->skew_max);
        fprintf(f, "\n%-*s", LABEL_WIDTH, "node");
        for (size_t i = 0; i < r->set.n_nodes; i++)
                fprintf(f, " %*s", width, r->set.nodes[i].host);
        fprintf(f, " %*s %*s %*s\n", width, r->set.n_missing ? "total (part)" : "total", 9, "max/mean", 7, "cv");
        fprintf(f, "%-*s", LABEL_WIDTH, "CPU model");
        for (size_t i = 0; i < r->set.n_nodes; i++)
                fprintf(f, " %*s", width, r->set.nodes[i].cpu_model[0] ? r->set.nodes[i].cpu_model : "-");
        fprintf(f, "\n%-*s", LABEL_WIDTH, "CPUs");
        for (size_t i = 0; i < r->set.n_nodes; i++)
                fprintf(f, " %*.*s", width, width, r->set.nodes[i].cpus);
        fprintf(f, "\n%-*s", LABEL_WIDTH, "covers");
        for (size_t i = 0; i < r->set.n_nodes; i++)
                fprintf(f, " %*.*s", width, width, r->set.nodes[i].covers);
        fputc('\n', f);
        for (unsigned m = 0; m < JOB_METRICS; m++) {
                const JobStat *s = &r->stats.stat[m];
                char v[64];

                if (!shown(r, m))
                        continue;
                fprintf(f, "%-*s", LABEL_WIDTH, job_metrics[m].label);
                for (size_t i = 0; i < r->set.n_nodes; i++) {
                        format_value(m, r->set.nodes[i].v[m], v, sizeof(v));
                        fprintf(f, " %*s", width, v);
                }
                format_value(m, s->total, v, sizeof(v));
                format_ratio(s->max_over_mean, a, sizeof(a));
                format_ratio(s->cv, b, sizeof(b));
                fprintf(f, " %*s %*s %*s\n", width, v, 9, a, 7, b);
        }
        fprintf(f, "\nTotals: counts, bytes, joules, bandwidth and power are sums over the nodes; IPC is\n"
                   "weighted by cycles, TopDown by slots. '-': not measured (never counted as 0).\n");
        return ferror(f) ? -EIO : 0;
}

static void csv_number(FILE *f, double v) {
        char text[NUMBER_TEXT_MAX];

        fputc(',', f);
        if (isfinite(v))
                fwrite(text, 1, number_format_g17(v, text), f);
}

static void csv_row_head(FILE *f, const char *row, const char *host, const JobNode *n, size_t nodes,
                         const char *note) {
        fputs(row, f);
        fputc(',', f);
        cli_csv_text(f, host);
        fputc(',', f);
        if (n) {
                cli_csv_text(f, n->cpu_model);
                fputc(',', f);
                cli_csv_text(f, n->cpus);
                fputc(',', f);
                cli_csv_text(f, n->covers);
                fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d", n->start, n->end, n->clock_offset,
                        n->clock_skewed);
        } else
                fputs(",,,,,,", f);
        fprintf(f, ",%zu,", nodes);
        cli_csv_text(f, note);
}

static int write_csv(const Report *r, FILE *f) {
        char note[128];

        fputs("row,host,cpu_model,cpus,covers,start,end,clock_offset_seconds,clock_skewed,nodes,note", f);
        for (unsigned m = 0; m < JOB_METRICS; m++)
                fprintf(f, ",%s", job_metrics[m].name);
        fputc('\n', f);
        for (size_t i = 0; i < r->set.n_nodes; i++) {
                csv_row_head(f, "node", r->set.nodes[i].host, &r->set.nodes[i], 1,
                             r->set.nodes[i].clock_skewed ? "clock skewed" : "");
                for (unsigned m = 0; m < JOB_METRICS; m++)
                        csv_number(f, r->set.nodes[i].v[m]);
                fputc('\n', f);
        }
        for (size_t i = 0; i < r->set.n_missing; i++) {
                csv_row_head(f, "missing", r->set.missing[i].host, NULL, 0, r->set.missing[i].reason);
                for (unsigned m = 0; m < JOB_METRICS; m++)
                        fputc(',', f);
                fputc('\n', f);
        }
        (void) snprintf(note, sizeof(note), "%s", r->set.n_missing ? "covers only the nodes present" : "");
        for (int k = 0; k < 3; k++) {
                csv_row_head(f, k == 0 ? "total" : k == 1 ? "max_over_mean" : "cv", "", NULL, r->set.n_nodes,
                             k == 0 ? note : "");
                for (unsigned m = 0; m < JOB_METRICS; m++) {
                        const JobStat *s = &r->stats.stat[m];

                        csv_number(f, k == 0 ? s->total : k == 1 ? s->max_over_mean : s->cv);
                }
                fputc('\n', f);
        }
        return ferror(f) ? -EIO : 0;
}

static json_object *json_number(double v) {
        return isfinite(v) ? json_object_new_double(v) : NULL;
}

static json_object *json_metrics(const double *v) {
        json_object *o = json_object_new_object();

        for (unsigned m = 0; o && m < JOB_METRICS; m++)
                json_object_object_add(o, job_metrics[m].name, json_number(v[m]));
        return o;
}

static int write_json(const Report *r, FILE *f) {
        json_object *root = json_object_new_object(), *nodes = json_object_new_array(),
                    *missing = json_object_new_array(), *total = json_object_new_object(),
                    *imbalance = json_object_new_object(), *window = json_object_new_object();
        double totals[JOB_METRICS];
        const char *text;
        int k = 0;

        if (!root || !nodes || !missing || !total || !imbalance || !window) {
                json_object_put(root);
                json_object_put(nodes);
                json_object_put(missing);
                json_object_put(total);
                json_object_put(imbalance);
                json_object_put(window);
                return -ENOMEM;
        }
        json_object_object_add(root, "job", json_object_new_string(r->job));
        json_object_object_add(root, "source", json_object_new_string(r->prometheus ? "prometheus" : "summaries"));
        if (r->prometheus)
                json_object_object_add(root, "prometheus", json_object_new_string(r->prometheus));
        else
                json_object_object_add(root, "directory", json_object_new_string(r->dir));
        json_object_object_add(window, "start", json_object_new_int64(r->stats.window_start));
        json_object_object_add(window, "end", json_object_new_int64(r->stats.window_end));
        json_object_object_add(window, "skew_max_seconds",
                               r->prometheus ? NULL : json_object_new_int64(r->skew_max));
        json_object_object_add(root, "window", window);
        for (size_t i = 0; i < r->set.n_nodes; i++) {
                const JobNode *n = &r->set.nodes[i];
                json_object *o = json_object_new_object();

                if (!o)
                        continue;
                json_object_object_add(o, "host", json_object_new_string(n->host));
                json_object_object_add(o, "file", json_object_new_string(n->file));
                json_object_object_add(o, "cpu_model", n->cpu_model[0] ? json_object_new_string(n->cpu_model) : NULL);
                json_object_object_add(o, "cpus", json_object_new_string(n->cpus));
                json_object_object_add(o, "covers", json_object_new_string(n->covers));
                json_object_object_add(o, "covers_assumed", json_object_new_boolean(n->covers_assumed));
                json_object_object_add(o, "start", json_object_new_int64(n->start));
                json_object_object_add(o, "end", json_object_new_int64(n->end));
                json_object_object_add(o, "clock_offset_seconds", json_object_new_int64(n->clock_offset));
                json_object_object_add(o, "clock_skewed", json_object_new_boolean(n->clock_skewed));
                json_object_object_add(o, "metrics", json_metrics(n->v));
                json_object_array_add(nodes, o);
        }
        json_object_object_add(root, "nodes", nodes);
        for (size_t i = 0; i < r->set.n_missing; i++) {
                json_object *o = json_object_new_object();

                if (!o)
                        continue;
                json_object_object_add(o, "host", json_object_new_string(r->set.missing[i].host));
                json_object_object_add(o, "reason", json_object_new_string(r->set.missing[i].reason));
                json_object_array_add(missing, o);
        }
        json_object_object_add(root, "missing", missing);
        for (unsigned m = 0; m < JOB_METRICS; m++)
                totals[m] = r->stats.stat[m].total;
        json_object_object_add(total, "nodes", json_object_new_int64((int64_t) r->set.n_nodes));
        json_object_object_add(total, "complete", json_object_new_boolean(r->set.n_missing == 0));
        json_object_object_add(total, "nodes_clock_skewed", json_object_new_int64((int64_t) r->stats.n_skewed));
        json_object_object_add(total, "metrics", json_metrics(totals));
        json_object_object_add(root, "total", total);
        for (unsigned m = 0; m < JOB_METRICS; m++) {
                const JobStat *s = &r->stats.stat[m];
                json_object *o = json_object_new_object();

                if (!o)
                        continue;
                json_object_object_add(o, "nodes", json_object_new_int64((int64_t) s->n));
                json_object_object_add(o, "max_over_mean", json_number(s->max_over_mean));
                json_object_object_add(o, "cv", json_number(s->cv));
                json_object_object_add(imbalance, job_metrics[m].name, o);
        }
        json_object_object_add(root, "imbalance", imbalance);
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
        if (!text || fputs(text, f) < 0 || fputc('\n', f) < 0)
                k = -EIO;
        json_object_put(root);
        return k;
}

static int parse_skew(const char *s, int64_t *ret) {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        /* up to a day: a bound past that flags nothing a site would call a clock */
        if (errno != 0 || end == s || *end || v < 0 || v > 86400)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_time(const char *s, int64_t *ret) {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno != 0 || end == s || *end || v <= 0 || v > INT64_C(253402300800))
                return -EINVAL;
        *ret = v;
        return 0;
}

int verb_job(int argc, char *argv[]) {
        static const struct option options[] = {
                { "dir", required_argument, NULL, 'd' },
                { "nodes", required_argument, NULL, 'n' },
                { "skew-max", required_argument, NULL, 'S' },
                { "output", required_argument, NULL, 'O' },
                { "prometheus", required_argument, NULL, 'p' },
                { "start", required_argument, NULL, 'B' },
                { "end", required_argument, NULL, 'E' },
                { "node-label", required_argument, NULL, 'L' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        Report r = { .skew_max = PMUGATE_JOB_SKEW_DEFAULT_SECONDS, .dir = getenv("PMUGATE_JOB_SUMMARY_DIR") };
        OutputFormat format = OUTPUT_TABLE;
        const char *nodes_arg = NULL;
        JobPrometheusQuery pq = { .node_label = "instance", .timeout_ms = PMUGATE_JOB_PROMETHEUS_TIMEOUT_MS };
        bool dir_given = false;
        char **hosts = NULL;
        int n_hosts = 0, opt, k;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, "+d:n:O:p:h", options, NULL)) >= 0)
                switch (opt) {
                case 'd':
                        r.dir = optarg;
                        dir_given = true;
                        break;
                case 'p':
                        r.prometheus = optarg;
                        break;
                case 'B':
                case 'E':
                        if (parse_time(optarg, opt == 'B' ? &pq.start : &pq.end) < 0) {
                                fprintf(stderr, "pmugate: job: --%s=%s: give UNIX seconds\n",
                                        opt == 'B' ? "start" : "end", optarg);
                                return 2;
                        }
                        break;
                case 'L':
                        if (!job_label_name_valid(optarg)) {
                                fprintf(stderr, "pmugate: job: --node-label=%s is not a label name\n", optarg);
                                return 2;
                        }
                        pq.node_label = optarg;
                        break;
                case 'n':
                        nodes_arg = optarg;
                        break;
                case 'S':
                        if (parse_skew(optarg, &r.skew_max) < 0) {
                                fprintf(stderr, "pmugate: job: --skew-max=%s: give whole seconds, 0 to 86400\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'O':
                        if (output_format_from_string(optarg, &format) < 0 || format == OUTPUT_JSONL) {
                                fprintf(stderr, "pmugate: job: -O %s: give table, csv or json\n", optarg);
                                return 2;
                        }
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        (void) cli_unknown_option("pmugate", "job", argv, opt);
                        return 2;
                }
        if (optind != argc - 1) {
                fprintf(stderr, "pmugate: job: give one JOBID (see 'pmugate job --help')\n");
                return 2;
        }
        r.job = argv[optind];
        if (!job_id_valid(r.job)) {
                fprintf(stderr, "pmugate: job: '%s' is not a job id (letters, digits, . _ + -, at most %u)\n",
                        r.job, PMUGATE_JOB_ID_MAX);
                return 2;
        }
        if (r.prometheus && dir_given) {
                fprintf(stderr, "pmugate: job: give --dir or --prometheus, not both\n");
                return 2;
        }
        if (!r.prometheus && (pq.start || pq.end || strcmp(pq.node_label, "instance") != 0)) {
                fprintf(stderr, "pmugate: job: --start, --end and --node-label are for --prometheus\n");
                return 2;
        }
        if (r.prometheus) {
                r.dir = NULL;
                r.skew_max = INT64_MAX;
                pq.url = r.prometheus;
                pq.job = r.job;
                if (!pq.end)
                        pq.end = (int64_t) time(NULL);
                if (!pq.start)
                        pq.start = pq.end - 86400;
                if (pq.start >= pq.end) {
                        fprintf(stderr, "pmugate: job: --start must be before --end\n");
                        return 2;
                }
        } else if (!r.dir || !r.dir[0]) {
                fprintf(stderr, "pmugate: job: no summary directory: give --dir or set PMUGATE_JOB_SUMMARY_DIR\n");
                return 2;
        }
        if (nodes_arg) {
                n_hosts = job_hosts_expand(nodes_arg, &hosts);
                if (n_hosts < 0) {
                        fprintf(stderr, "pmugate: job: --nodes=%s: %s\n", nodes_arg,
                                n_hosts == -E2BIG ? "too many nodes" : "not a host list such as node[01-03],login1");
                        return 2;
                }
        }

        if (r.prometheus) {
                char why[JOB_REASON_MAX] = "";

                k = job_prometheus_gather(&pq, &r.set, why, sizeof(why));
                if (k == -ENOENT) {
                        fprintf(stderr, "pmugate: job: no series of job %s in Prometheus at %s from %" PRId64
                                " to %" PRId64 " (it never ran on a node Prometheus scrapes, or not then)\n",
                                r.job, r.prometheus, pq.start, pq.end);
                        report_done(&r);
                        job_hosts_free(hosts, (size_t) n_hosts);
                        return 1;
                }
                if (k < 0 && k != -ENOMEM)
                        fprintf(stderr, "pmugate: job: %s\n", why[0] ? why : strerror(-k));
                if (k >= 0 && r.set.n_nodes > 1)
                        qsort(r.set.nodes, r.set.n_nodes, sizeof(JobNode), compare_nodes);
        } else
                k = gather(&r);
        for (int i = 0; k >= 0 && i < n_hosts; i++)
                if (!job_set_has(&r.set, hosts[i]))
                        k = job_set_add_missing(&r.set, hosts[i], r.prometheus ?
                                                "no series of the job (its exporter was not scraped, or never saw "
                                                "the job)" : "no summary");
        job_hosts_free(hosts, (size_t) n_hosts);
        if (k < 0) {
                if (k == -ENOMEM)
                        fprintf(stderr, "pmugate: job: out of memory\n");
                report_done(&r);
                return 1;
        }
        if (r.set.n_nodes == 0) {
                fprintf(stderr, "pmugate: job: no %s of job %s in %s", r.prometheus ? "node with all its counts" :
                        "summary", r.job, r.dir ?: r.prometheus);
                for (size_t i = 0; i < r.set.n_missing; i++)
                        fprintf(stderr, "%s node %s: %s", i == 0 ? ":" : ";", r.set.missing[i].host, r.set.missing[i].reason);
                fprintf(stderr, "%s\n", r.set.n_missing ? "" : " (it never ran on a node with the Epilog's summaries, "
                                                           "or the summaries were not written)");
                report_done(&r);
                return 1;
        }
        job_report_compute(r.set.nodes, r.set.n_nodes, r.skew_max, &r.stats);
        k = format == OUTPUT_CSV ? write_csv(&r, stdout) :
            format == OUTPUT_JSON_DOCUMENT ? write_json(&r, stdout) : write_table(&r, stdout);
        if (k >= 0 && fflush(stdout) != 0)
                k = -EIO;
        if (k < 0) {
                fprintf(stderr, "pmugate: job: writing the report: %s\n", strerror(-k));
                report_done(&r);
                return 1;
        }
        k = r.set.n_missing > 0 ? EXIT_PARTIAL : 0;
        report_done(&r);
        return k;
}

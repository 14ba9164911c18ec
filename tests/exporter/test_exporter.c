/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: pmugate-exporter's model and output. Content negotiation by Accept, label names,
 * totals that never go down while jobs come and go (a CPU's job series starts at 0, its idle
 * series continues), ended jobs kept for summaries and then pruned, both exposition formats,
 * and the job summary's JSON (null where nothing was counted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <string.h>

#include "http-guard.h"
#include "http-route.h"
#include "log-limit.h"
#include "macro.h"
#include "model.h"
#include "render.h"

static void test_accept(void **state) {
        static const struct {
                const char *accept;
                bool openmetrics;
        } rows[] = {
                {NULL, false},
                {"", false},
                {"*/*", false},
                {"text/plain;version=0.0.4", false},
                {"application/openmetrics-text;version=1.0.0", true},
                /* Prometheus 2.x */
                {"application/openmetrics-text;version=1.0.0,application/"
                 "openmetrics-text;version=0.0.1;q=0.75,"
                 "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
                 true},
                {"application/openmetrics-text;q=0.2, text/plain;q=0.9", false},
                {"Application/OpenMetrics-Text; q=0.9, */*; q=0.9", true},
                {"application/openmetrics-text;q=0", false},
                {"application/openmetrics-textile", false},
                {"application/json", false},
                {"application/openmetrics-text;q=bogus", false},
        };

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                if (accept_prefers_openmetrics(rows[i].accept) != rows[i].openmetrics)
                        fail_msg("Accept: %s", rows[i].accept ? rows[i].accept : "(none)");
        }
}

static void test_routes(void **state) {
        static const struct {
                const char *method, *url;
                size_t body;
                HttpRoute route;
        } rows[] = {
                {"GET", "/metrics", 0, HTTP_ROUTE_METRICS},
                {"HEAD", "/metrics", 0, HTTP_ROUTE_METRICS},
                {"GET", "/", 0, HTTP_ROUTE_INDEX},
                {"GET", "/jobs/1234.batch", 0, HTTP_ROUTE_JOB},
                {"GET", "/jobs/", 0, HTTP_ROUTE_BAD_JOB},
                {"GET", "/jobs/../metrics", 0, HTTP_ROUTE_BAD_JOB},
                {"GET", "/jobs/a b", 0, HTTP_ROUTE_BAD_JOB},
                {"GET", "/metrics/", 0, HTTP_ROUTE_NOT_FOUND},
                {"GET", "/jobs", 0, HTTP_ROUTE_NOT_FOUND},
                {"GET", "", 0, HTTP_ROUTE_NOT_FOUND},
                {"GET", "/metrics", 1, HTTP_ROUTE_HAS_BODY},
                {"POST", "/metrics", 0, HTTP_ROUTE_METHOD_NOT_ALLOWED},
                {"get", "/metrics", 0, HTTP_ROUTE_METHOD_NOT_ALLOWED},
        };
        char long_job[6 + HTTP_JOB_ID_MAX + 2] = "/jobs/";
        const char *job = NULL;

        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
                if (http_route(rows[i].method, rows[i].url, rows[i].body, &job) != rows[i].route)
                        fail_msg("%s %s (%zu bytes of body)", rows[i].method, rows[i].url, rows[i].body);
        assert_int_equal(http_route("GET", "/jobs/42", 0, &job), HTTP_ROUTE_JOB);
        assert_string_equal(job, "42");
        memset(long_job + 6, 'x', HTTP_JOB_ID_MAX);
        assert_int_equal(http_route("GET", long_job, 0, &job), HTTP_ROUTE_JOB);
        long_job[6 + HTTP_JOB_ID_MAX] = 'x';
        assert_int_equal(http_route("GET", long_job, 0, &job), HTTP_ROUTE_BAD_JOB);
}

static void test_label_names(void **state) {
        assert_true(label_name_valid("jobid"));
        assert_true(label_name_valid("job"));
        assert_true(label_name_valid("slurm_job"));
        assert_false(label_name_valid(""));
        assert_false(label_name_valid("1job"));
        assert_false(label_name_valid("__job"));
        assert_false(label_name_valid("job-id"));
        assert_false(label_name_valid("cpu"));
        assert_false(label_name_valid("category"));
        assert_false(label_name_valid("domain"));
        assert_false(label_name_valid("pmugate_cpu_state"));
        assert_false(label_name_valid(NULL));
}

static void setup_model(Model *m) {
        static const uint32_t cpus[] = { 0, 1, 2, 3 };
        static const int32_t sockets[] = { 0, 0, 1, 1 };

        *m = (Model) {};
        assert_int_equal(model_set_cpus(m, cpus, sockets, 4), 0);
        m->topdown_level = 1;
        (void) snprintf(m->model_key, sizeof(m->model_key), "spr");
        (void) snprintf(m->backend, sizeof(m->backend), "sim");
}

static void add(Model *m, uint32_t cpu, double instructions) {
        double d[QTY_MAX] = {};

        d[QTY_INSTRUCTIONS] = instructions;
        d[QTY_CYCLES] = NAN;            /* nothing to count: adds 0 */
        d[QTY_SLOTS] = -5;              /* never subtracts */
        model_add(m, cpu, d);
}

static void test_totals_and_jobs(void **state) {
        const uint32_t job_cpus[] = { 1, 2 };
        const char *const jobs[] = { "42", "42" };
        const char *const other[] = { "43" };
        const uint32_t other_cpus[] = { 1 };
        const JobTotals *j;
        Model m;

        setup_model(&m);
        add(&m, 1, 10);
        assert_true(m.cpus[1].idle[QTY_INSTRUCTIONS] == 10);
        assert_true(m.cpus[1].idle[QTY_CYCLES] == 0 && m.node[QTY_SLOTS] == 0);

        assert_int_equal(model_set_jobs(&m, job_cpus, jobs, NULL, NULL, 2, 100), 0);
        add(&m, 1, 5);
        add(&m, 2, 7);
        assert_string_equal(model_cpu_job(&m, &m.cpus[1]), "42");
        assert_true(m.cpus[1].held[QTY_INSTRUCTIONS] == 5);
        assert_true(m.cpus[1].idle[QTY_INSTRUCTIONS] == 10);
        j = model_find_job(&m, "42");
        assert_non_null(j);
        assert_true(j->running && j->n_cpus == 2 && j->v[QTY_INSTRUCTIONS] == 12);
        assert_string_equal(j->cpus, "1-2");
        assert_true(m.sockets[0][QTY_INSTRUCTIONS] == 15 && m.sockets[1][QTY_INSTRUCTIONS] == 7);
        assert_true(m.node[QTY_INSTRUCTIONS] == 22);

        /* job 42 ends, 43 takes CPU 1: a new series from 0, idle CPU 2 continues */
        assert_int_equal(model_set_jobs(&m, other_cpus, other, NULL, NULL, 1, 200), 0);
        add(&m, 1, 1);
        add(&m, 2, 2);
        assert_true(m.cpus[1].held[QTY_INSTRUCTIONS] == 1);
        assert_true(m.cpus[2].idle[QTY_INSTRUCTIONS] == 2);
        j = model_find_job(&m, "42");
        assert_true(!j->running && j->ended == 200 && j->v[QTY_INSTRUCTIONS] == 12);
        assert_string_equal(j->cpus, "1-2");
        assert_true(m.node[QTY_INSTRUCTIONS] == 25);

        model_prune_jobs(&m, 200 + 60, 60);
        assert_non_null(model_find_job(&m, "42"));
        model_prune_jobs(&m, 200 + 61, 60);
        assert_null(model_find_job(&m, "42"));
        assert_non_null(model_find_job(&m, "43"));

        /* the CPU layout changes (a daemon restart): totals of CPUs still there are kept */
        {
                const uint32_t cpus[] = { 1, 2 };
                const int32_t sockets[] = { 0, 1 };

                assert_int_equal(model_set_cpus(&m, cpus, sockets, 2), 0);
                assert_true(model_cpu(&m, 1)->held[QTY_INSTRUCTIONS] == 1);
                assert_null(model_cpu(&m, 0));
        }
        model_done(&m);
}

static char *render(const Model *m, bool openmetrics);

static void test_sparse_and_shared(void **state) {
        const uint32_t cpus[] = { 5, 900, 2 };
        const int32_t sockets[] = { 0, 1, -1 };
        const uint32_t rows[] = { 900, 900, 77, 5 };
        const char *const jobs[] = { "a", "b", "c", "" };
        Model m = {};

        assert_int_equal(model_set_cpus(&m, cpus, sockets, 3), 0);
        assert_ptr_equal(model_cpu(&m, 900), &m.cpus[1]);
        assert_ptr_equal(model_cpu(&m, 2), &m.cpus[2]);
        assert_null(model_cpu(&m, 3));
        assert_null(model_cpu(&m, 901));
        assert_null(model_cpu(&m, UINT32_MAX));
        /* a CPU two jobs share is labelled with the first; unknown CPUs and empty jobs are ignored */
        assert_int_equal(model_set_jobs(&m, rows, jobs, NULL, NULL, 4, 1), 0);
        assert_string_equal(model_cpu_job(&m, model_cpu(&m, 900)), "a");
        assert_string_equal(model_cpu_job(&m, model_cpu(&m, 5)), "");
        /* the second job holds the CPU too, but its counts are not its: none labelled */
        assert_int_equal(model_find_job(&m, "b")->n_cpus, 1);
        assert_int_equal(model_find_job(&m, "b")->n_labelled, 0);
        assert_null(model_find_job(&m, "c"));
        assert_int_equal(model_find_job(&m, "a")->n_cpus, 1);
        assert_int_equal(model_find_job(&m, "a")->n_labelled, 1);
        model_done(&m);
}

/* Jobs sharing a CPU on a perf node: each job's instructions and cycles come from its cgroup's
 * events, not from the CPU (whose counts would all be the first job's); the other quantities
 * stay the CPU's; a job with no CPU of its own has no series without a cgroup source. */
static void test_cgroup_source(void **state) {
        const uint32_t cpus[] = { 0 };
        const int32_t sockets[] = { 0 };
        const uint32_t rows[] = { 0, 0 };
        const char *const jobs[] = { "first", "second" };
        double delta[QTY_MAX] = {};
        Model m = {};
        char *text;

        assert_int_equal(model_set_cpus(&m, cpus, sockets, 1), 0);
        assert_int_equal(model_set_jobs(&m, rows, jobs, NULL, NULL, 2, 1), 0);
        /* nothing counted yet: no series, not 0 */
        text = render(&m, false);
        assert_null(strstr(text, "pmugate_job_instructions_total"));
        assert_non_null(strstr(text, "pmugate_exporter_quantity_counted{quantity=\"instructions\"} 0\n"));
        free(text);
        /* a sample that counted nothing: 0 is a count now */
        model_add(&m, 0, delta);
        text = render(&m, false);
        assert_non_null(strstr(text, "pmugate_job_instructions_total{jobid=\"first\"} 0\n"));
        assert_null(strstr(text, "pmugate_job_instructions_total{jobid=\"second\"}"));
        assert_null(strstr(text, "pmugate_job_monitored_seconds_total{jobid=\"second\"}"));
        assert_non_null(strstr(text, "pmugate_job_counting_info{jobid=\"second\",source=\"cpus\"} 1\n"));
        assert_non_null(strstr(text, "pmugate_job_cpus{jobid=\"second\"} 1\n"));
        free(text);

        model_set_job_source(&m, "first", true);
        model_set_job_source(&m, "second", true);
        delta[QTY_INSTRUCTIONS] = 1000;
        delta[QTY_CYCLES] = 800;
        delta[QTY_MONITORED_SECONDS] = 1;
        model_add(&m, 0, delta);
        /* counted on the CPU, not given to the job its cgroup counts */
        assert_true(model_find_job(&m, "first")->v[QTY_INSTRUCTIONS] == 0);
        assert_true(model_find_job(&m, "first")->v[QTY_MONITORED_SECONDS] == 1);
        assert_true(m.node[QTY_INSTRUCTIONS] == 1000);
        model_add_job_counts(&m, "first", 700, 500, 1.0, 0.5);
        model_add_job_counts(&m, "second", 300, 300, 1.0, 1.0);
        model_add_job_counts(&m, "second", NAN, -5, NAN, 0);
        assert_true(model_find_job(&m, "first")->v[QTY_INSTRUCTIONS] == 700);
        assert_true(model_find_job(&m, "second")->v[QTY_CYCLES] == 300);
        text = render(&m, false);
        assert_non_null(strstr(text, "pmugate_job_instructions_total{jobid=\"second\"} 300\n"));
        assert_non_null(strstr(text, "pmugate_job_counting_info{jobid=\"first\",source=\"cgroup\"} 1\n"));
        assert_non_null(strstr(text, "pmugate_job_cgroup_enabled_seconds_total{jobid=\"first\"} 1\n"));
        assert_non_null(strstr(text, "pmugate_job_cgroup_running_seconds_total{jobid=\"first\"} 0.5\n"));
        /* slots and TopDown have no source for the second job: absent, not 0 */
        assert_null(strstr(text, "pmugate_job_slots_total{jobid=\"second\"}"));
        assert_null(strstr(text, "pmugate_job_topdown_level1_slots_total{jobid=\"second\""));
        free(text);
        text = render(&m, true);
        assert_non_null(strstr(text, "# UNIT pmugate_job_cgroup_running_seconds seconds\n"));
        free(text);
        {
                char *json = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&json, &size);

                assert_non_null(f);
                assert_int_equal(render_job_summary(&m, model_find_job(&m, "second"), 2, f), 0);
                assert_int_equal(fclose(f), 0);
                assert_non_null(strstr(json, "\"counted_by\":\"cgroup\""));
                assert_non_null(strstr(json, "\"instructions\":300"));
                assert_non_null(strstr(json, "\"slots\":null"));
                assert_non_null(strstr(json, "\"monitored_cpu_seconds\":null"));
                assert_non_null(strstr(json, "\"ipc\":1"));
                free(json);
        }

        /* back to its CPUs: a job the daemon stopped counting by cgroup */
        model_set_job_source(&m, "first", false);
        model_add(&m, 0, delta);
        assert_true(model_find_job(&m, "first")->v[QTY_INSTRUCTIONS] == 1700);
        model_add_job_counts(&m, "first", 700, 500, 1.0, 0.5);
        assert_true(model_find_job(&m, "first")->v[QTY_INSTRUCTIONS] == 1700);
        model_done(&m);
}

static char *render(const Model *m, bool openmetrics) {
        RenderOptions o = { .openmetrics = openmetrics, .job_label = "jobid", .version = "0.1.0" };
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        assert_int_equal(render_metrics(m, &o, f), 0);
        assert_int_equal(fclose(f), 0);
        return text;
}

static char *render_per(const Model *m, PerCpu mode) {
        RenderOptions o = { .job_label = "jobid", .version = "0.1.0", .per_cpu = mode };
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        assert_int_equal(render_metrics(m, &o, f), 0);
        assert_int_equal(fclose(f), 0);
        return text;
}

/* A snapshot renders what the model did; --per-cpu drops exactly the per-CPU series; the body
 * and the tail make the whole scrape; numbers and labels as printf wrote them. */
static void test_snapshot_and_per_cpu(void **state) {
        const uint32_t job_cpus[] = { 3 };
        const char *const jobs[] = { "a\"b\\c" };
        RenderOptions o = { .openmetrics = true, .job_label = "jobid", .version = "0.1.0",
                            .scrapes_text = 7, .scrapes_openmetrics = 12345678901ULL };
        char *whole, *body = NULL, *tail = NULL, *copied, *yes, *no;
        size_t body_size = 0, tail_size = 0;
        Model m, c;
        FILE *f;

        setup_model(&m);
        add(&m, 0, 0.1);
        add(&m, 1, 123456789012345.0);
        assert_int_equal(model_set_jobs(&m, job_cpus, jobs, NULL, NULL, 1, 100), 0);
        add(&m, 3, 1e-7);
        assert_int_equal(model_copy(&m, &c), 0);
        add(&m, 0, 5);  /* after the copy: the copy does not see it */
        copied = render_per(&c, PER_CPU_AUTO);
        yes = render_per(&m, PER_CPU_YES);
        assert_non_null(strstr(copied, "pmugate_cpu_instructions_total{cpu=\"0\",socket=\"0\"} 0.10000000000000001\n"));
        assert_non_null(strstr(yes, "pmugate_cpu_instructions_total{cpu=\"0\",socket=\"0\"} 5.0999999999999996\n"));
        assert_non_null(strstr(yes, "pmugate_cpu_instructions_total{cpu=\"1\",socket=\"0\"} 123456789012345\n"));
        assert_non_null(strstr(yes, "{cpu=\"3\",socket=\"1\",jobid=\"a\\\"b\\\\c\"} 9.9999999999999995e-08\n"));
        assert_non_null(strstr(yes, "pmugate_socket_cpus{socket=\"1\",pmugate_cpu_state=\"starting\"} 2\n"));
        assert_true(render_per_cpu(&m, PER_CPU_AUTO));
        no = render_per(&m, PER_CPU_NO);
        assert_null(strstr(no, "\npmugate_cpu_"));
        assert_null(strstr(no, "# TYPE pmugate_cpu_"));
        assert_non_null(strstr(no, "pmugate_socket_instructions_total{socket=\"0\"} 123456789012350.09\n"));
        assert_non_null(strstr(no, "pmugate_socket_cpus{socket=\"0\",pmugate_cpu_state=\"starting\"} 2\n"));
        assert_non_null(strstr(no, "pmugate_job_instructions_total{jobid=\"a\\\"b\\\\c\"}"));

        f = open_memstream(&whole, &(size_t) { 0 });
        assert_non_null(f);
        assert_int_equal(render_metrics(&m, &o, f), 0);
        assert_int_equal(fclose(f), 0);
        f = open_memstream(&body, &body_size);
        assert_int_equal(render_metrics_body(&m, &o, f), 0);
        assert_int_equal(fclose(f), 0);
        f = open_memstream(&tail, &tail_size);
        assert_int_equal(render_metrics_tail(&o, f), 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(strlen(whole), body_size + tail_size);
        assert_memory_equal(whole, body, body_size);
        assert_string_equal(whole + body_size, tail);
        assert_non_null(strstr(tail, "pmugate_exporter_scrapes_total{format=\"openmetrics\"} 12345678901\n# EOF\n"));
        free(whole);
        free(body);
        free(tail);
        free(copied);
        free(yes);
        free(no);
        model_done(&c);
        model_done(&m);
}

static void test_render(void **state) {
        const uint32_t job_cpus[] = { 3 };
        const char *const jobs[] = { "a\"b\\c" };
        Model m;
        char *text, *om;

        setup_model(&m);
        assert_int_equal(model_set_jobs(&m, job_cpus, jobs, NULL, NULL, 1, 1), 0);
        add(&m, 3, 1e6);
        m.cpus[0].reason = CPU_USER_LEASE;
        text = render(&m, false);
        om = render(&m, true);

        assert_non_null(strstr(text, "# HELP pmugate_cpu_instructions_total "));
        assert_non_null(strstr(text, "# TYPE pmugate_cpu_instructions_total counter\n"));
        assert_non_null(strstr(
                text,
                "pmugate_cpu_instructions_total{cpu=\"3\",socket=\"1\",jobid=\"a\\\"b\\\\c\"} 1000000\n"));
        assert_non_null(strstr(text, "pmugate_cpu_instructions_total{cpu=\"3\",socket=\"1\"} 0\n"));
        /* the monitored gauge has no reason label; the state set has every state, always */
        assert_non_null(strstr(text, "pmugate_cpu_monitored{cpu=\"0\",socket=\"0\"} 0\n"));
        assert_non_null(strstr(text, "pmugate_cpu_monitored{cpu=\"1\",socket=\"0\"} 0\n"));
        assert_null(strstr(text, "reason="));
        assert_non_null(strstr(text, "# TYPE pmugate_cpu_state gauge\n"));
        assert_non_null(strstr(
                text, "pmugate_cpu_state{cpu=\"0\",socket=\"0\",pmugate_cpu_state=\"user_lease\"} 1\n"));
        assert_non_null(strstr(
                text, "pmugate_cpu_state{cpu=\"0\",socket=\"0\",pmugate_cpu_state=\"monitored\"} 0\n"));
        assert_non_null(strstr(
                text, "pmugate_cpu_state{cpu=\"1\",socket=\"0\",pmugate_cpu_state=\"user_lease\"} 0\n"));
        assert_non_null(strstr(
                text, "pmugate_cpu_state{cpu=\"1\",socket=\"0\",pmugate_cpu_state=\"starting\"} 1\n"));
        assert_non_null(strstr(text, "pmugate_job_instructions_total{jobid=\"a\\\"b\\\\c\"} 1000000\n"));
        /* level 1 in a family of its own, without a level label */
        assert_non_null(strstr(text, "# TYPE pmugate_node_topdown_level1_slots_total counter\n"));
        assert_non_null(strstr(text, "pmugate_node_topdown_level1_slots_total{category=\"retiring\"} "));
        assert_null(strstr(text, ",level=\""));
        assert_null(strstr(text, "topdown_slots"));
        assert_null(strstr(text, "# UNIT"));
        assert_null(strstr(text, "# EOF"));
        assert_null(strstr(text, "pmugate_job_uid"));
        /* level 1 only: no level-2 categories */
        assert_null(strstr(text, "memory_bound"));

        assert_non_null(strstr(om, "# TYPE pmugate_cpu_instructions counter\n"));
        assert_non_null(strstr(om, "# TYPE pmugate_node_monitored_seconds counter\n# UNIT "
                                   "pmugate_node_monitored_seconds seconds\n"));
        assert_non_null(strstr(om, "\npmugate_node_instructions_total 1000000\n"));
        assert_non_null(strstr(om, "# TYPE pmugate_cpu_state stateset\n"));
        assert_non_null(strstr(om, "# TYPE pmugate_node_topdown_level1_slots counter\n"));
        assert_true(strlen(om) > 6 && strcmp(om + strlen(om) - 6, "# EOF\n") == 0);

        free(text);
        free(om);
        m.export_uids = true;
        m.jobs[0].has_uid = true;
        m.jobs[0].uid = 1234;
        m.topdown_level = 2;
        text = render(&m, false);
        assert_non_null(strstr(text, "pmugate_job_uid{jobid=\"a\\\"b\\\\c\"} 1234\n"));
        /* level 2 in its own family: a sum over either family never counts a slot twice */
        assert_non_null(strstr(text, "pmugate_node_topdown_level2_slots_total{category=\"memory_bound\"} 0\n"));
        assert_null(strstr(text, "pmugate_node_topdown_level1_slots_total{category=\"memory_bound\"}"));
        assert_null(strstr(text, "pmugate_node_topdown_level2_slots_total{category=\"backend_bound\"}"));
        /* per CPU level 1 only */
        assert_null(strstr(text, "pmugate_cpu_topdown_level2_slots"));
        free(text);

        {
                RenderOptions bad = { .job_label = "cpu", .version = "x" };
                FILE *f = fopen("/dev/null", "we");

                assert_int_equal(render_metrics(&m, &bad, f), -EINVAL);
                fclose(f);
        }
        model_done(&m);
}

static void test_summary(void **state) {
        const uint32_t job_cpus[] = { 0, 1 };
        const char *const jobs[] = { "9", "9" };
        double d[QTY_MAX] = {};
        char *text = NULL;
        size_t size = 0;
        FILE *f;
        Model m;

        setup_model(&m);
        assert_int_equal(model_set_jobs(&m, job_cpus, jobs, NULL, NULL, 2, 50), 0);
        d[QTY_INSTRUCTIONS] = 300;
        d[QTY_CYCLES] = 200;
        d[QTY_SLOTS] = 1200;
        d[QTY_TOPDOWN_FIRST + 2] = 600;         /* backend_bound */
        model_add(&m, 0, d);
        f = open_memstream(&text, &size);
        assert_int_equal(render_job_summary(&m, model_find_job(&m, "9"), 80, f), 0);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(text, "\"job\":\"9\""));
        assert_non_null(strstr(text, "\"cpus\":\"0-1\""));
        assert_non_null(strstr(text, "\"running\":true"));
        assert_non_null(strstr(text, "\"start\":50,\"end\":80"));
        assert_non_null(strstr(text, "\"ipc\":1.5"));
        /* percent, as the CLI gives TopDown */
        assert_non_null(strstr(text, "\"topdown_percent\":{"));
        assert_non_null(strstr(text, "\"backend_bound\":50"));
        assert_null(strstr(text, "\"backend_bound\":0.5"));
        assert_non_null(strstr(text, "\"power_watts\":null"));
        assert_non_null(strstr(text, "\"energy_joules\":null"));
        assert_non_null(strstr(text, "\"memory_read_bytes\":null"));
        /* level 1 measured only: an empty level-2 object */
        assert_non_null(strstr(text, "\"topdown_level2_percent\":{ }") ?:
                        strstr(text, "\"topdown_level2_percent\":{}"));
        free(text);
        model_done(&m);
}

static void test_package(void **state) {
        const uint32_t job_cpus[] = { 0 };
        const char *const jobs[] = { "7" };
        double d[QTY_MAX] = {}, cycles[4] = { 300, 100, NAN, 50 };
        char *text;
        Model m;

        setup_model(&m);
        assert_int_equal(model_set_jobs(&m, job_cpus, jobs, NULL, NULL, 1, 1), 0);
        /* nothing measured: no package families at all, rather than zeros */
        text = render(&m, false);
        assert_null(strstr(text, "pmugate_node_memory_read_bytes"));
        assert_null(strstr(text, "energy_joules"));
        free(text);

        d[QTY_READ_BYTES] = 6400;
        d[QTY_WRITTEN_BYTES] = 640;
        d[QTY_PACKAGE_JOULES] = 10;
        d[QTY_DRAM_JOULES] = NAN;       /* withheld: adds nothing */
        d[QTY_INSTRUCTIONS] = 99;       /* not a package quantity: ignored */
        model_add_package(&m, 0, d, cycles);
        model_add_package(&m, 7, d, cycles);    /* no such socket */
        assert_true(m.sockets[0][QTY_READ_BYTES] == 6400 && m.sockets[1][QTY_READ_BYTES] == 0);
        assert_true(m.node[QTY_READ_BYTES] == 6400 && m.node[QTY_INSTRUCTIONS] == 0);
        assert_true(m.node[QTY_DRAM_JOULES] == 0);
        /* job 7 on CPU 0 did 300 of socket 0's 400 cycles */
        assert_true(m.jobs[0].v[QTY_READ_BYTES] == 4800);
        assert_true(m.jobs[0].v[QTY_PACKAGE_JOULES] == 7.5);

        text = render(&m, true);
        assert_non_null(strstr(text, "# TYPE pmugate_socket_memory_read_bytes counter\n"
                                     "# UNIT pmugate_socket_memory_read_bytes bytes\n"));
        assert_non_null(strstr(text, "pmugate_socket_memory_read_bytes_total{socket=\"0\"} 6400\n"));
        assert_non_null(strstr(text, "pmugate_node_energy_joules_total{domain=\"package\"} 10\n"));
        /* a domain never counted (withheld, or AMD's missing DRAM domain) has no series */
        assert_null(strstr(text, "domain=\"dram\""));
        assert_non_null(strstr(text, "pmugate_exporter_quantity_counted{quantity=\"energy_package\"} 1\n"));
        assert_non_null(strstr(text, "pmugate_exporter_quantity_counted{quantity=\"energy_dram\"} 0\n"));
        assert_non_null(strstr(text, "pmugate_job_memory_read_bytes_total{jobid=\"7\"} 4800\n"));
        assert_null(strstr(text, "pmugate_cpu_memory"));
        free(text);
        model_done(&m);
}

/* FLOPs: a family with a precision label per counted precision, per CPU, socket, node and job;
 * a precision never counted has no series and is null in the summary; their sum is "flops". */
static void test_flops(void **state) {
        const uint32_t job_cpus[] = { 0 };
        const char *const jobs[] = { "3" };
        double d[QTY_MAX];
        char *text = NULL;
        size_t size = 0;
        FILE *f;
        Model m;

        setup_model(&m);
        assert_int_equal(model_set_jobs(&m, job_cpus, jobs, NULL, NULL, 1, 10), 0);
        for (unsigned q = 0; q < QTY_MAX; q++)
                d[q] = NAN;
        text = render(&m, false);
        assert_null(strstr(text, "_flops_total"));
        assert_non_null(strstr(text, "pmugate_exporter_quantity_counted{quantity=\"flops_double\"} 0\n"));
        free(text);

        d[QTY_MONITORED_SECONDS] = 2;
        d[QTY_FLOPS_DOUBLE] = 800;
        d[QTY_FLOPS_SINGLE] = 200;
        model_add(&m, 0, d);
        d[QTY_FLOPS_SINGLE] = NAN;      /* one of its events not counted: adds nothing */
        model_add(&m, 2, d);
        assert_true(m.node[QTY_FLOPS_DOUBLE] == 1600 && m.node[QTY_FLOPS_SINGLE] == 200);
        assert_true(m.sockets[1][QTY_FLOPS_DOUBLE] == 800 && m.sockets[1][QTY_FLOPS_SINGLE] == 0);

        text = render(&m, false);
        assert_non_null(strstr(text, "pmugate_node_flops_total{precision=\"double\"} 1600\n"));
        assert_non_null(strstr(text, "pmugate_node_flops_total{precision=\"single\"} 200\n"));
        assert_non_null(strstr(text, "pmugate_socket_flops_total{socket=\"0\",precision=\"double\"} 800\n"));
        assert_non_null(strstr(text, "pmugate_cpu_flops_total{cpu=\"0\",socket=\"0\",jobid=\"3\",precision=\"single\"} 200\n"));
        assert_non_null(strstr(text, "pmugate_job_flops_total{jobid=\"3\",precision=\"double\"} 800\n"));
        /* never counted on this node: no series, and the gauge says so */
        assert_null(strstr(text, "precision=\"all\""));
        assert_non_null(strstr(text, "pmugate_exporter_quantity_counted{quantity=\"flops_double\"} 1\n"));
        assert_non_null(strstr(text, "pmugate_exporter_quantity_counted{quantity=\"flops_all\"} 0\n"));
        free(text);

        f = open_memstream(&text, &size);
        assert_int_equal(render_job_summary(&m, model_find_job(&m, "3"), 20, f), 0);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(text, "\"flops_double\":800"));
        assert_non_null(strstr(text, "\"flops_single\":200"));
        assert_non_null(strstr(text, "\"flops_all\":null"));
        assert_non_null(strstr(text, "\"flops\":1000"));
        /* 1000 over the 2 s the exporter counted its one CPU */
        assert_non_null(strstr(text, "\"mflops_per_second\":0.0005"));
        free(text);
        model_done(&m);
}

static char *logged(FILE *f, char **buf) {
        assert_int_equal(fflush(f), 0);
        return *buf;
}

static size_t count_lines(const char *text) {
        size_t n = 0;

        for (const char *c = text; *c; c++)
                n += *c == '\n';
        return n;
}

/* A refusal every sample costs one line per interval and reason, then one with the count. */
static void test_log_limit(void **state) {
        const uint64_t sec = 1000000;
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        LogLimit l = { .out = f, .interval_usec = 10 * sec };
        static const char refused[] = "cannot start measuring CPUs: %s", nomap[] = "no job map (%s)";

        (void) state;
        assert_non_null(f);
        assert_true(log_limit(&l, refused, "cannot start measuring CPUs: refused", 1 * sec));
        assert_true(log_limit(&l, nomap, "no job map (not a monitor)", 1 * sec));
        /* the two alternate every sample for 9 s: nothing more */
        for (uint64_t t = 2; t < 11; t++) {
                assert_false(log_limit(&l, refused, "cannot start measuring CPUs: refused again", t * sec));
                assert_false(log_limit(&l, nomap, "no job map (not a monitor)", t * sec));
        }
        assert_int_equal(count_lines(logged(f, &buf)), 2);
        /* the interval over: one line each with the count and the last text */
        log_limit_flush(&l, 11 * sec);
        assert_int_equal(count_lines(logged(f, &buf)), 4);
        assert_non_null(strstr(buf, "pmugate-exporter: cannot start measuring CPUs: refused again (9 more "
                                    "times in the last 10 s)\n"));
        assert_non_null(strstr(buf, "pmugate-exporter: no job map (not a monitor) (9 more times in the last "
                                    "10 s)\n"));
        /* counted in the next interval; a quiet interval forgets the reason */
        assert_false(log_limit(&l, refused, "cannot start measuring CPUs: refused", 12 * sec));
        log_limit_flush(&l, 21 * sec);
        assert_int_equal(count_lines(logged(f, &buf)), 5);
        assert_non_null(strstr(buf, "(1 more time in the last 10 s)\n"));
        log_limit_flush(&l, 40 * sec);
        assert_int_equal(count_lines(logged(f, &buf)), 5);
        assert_true(log_limit(&l, refused, "cannot start measuring CPUs: refused", 41 * sec));
        assert_int_equal(count_lines(logged(f, &buf)), 6);

        /* more reasons than slots: the oldest is evicted with its count, nothing is lost */
        {
                static const char keys[PMUGATE_EXPORTER_LOG_REASONS_MAX + 1][8] = {
                        "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8",
                        "k9", "k10", "k11", "k12", "k13", "k14", "k15", "k16" };
                LogLimit full = { .out = f, .interval_usec = 100 * sec };
                size_t before = count_lines(logged(f, &buf));

                for (size_t i = 0; i < PMUGATE_EXPORTER_LOG_REASONS_MAX; i++) {
                        assert_true(log_limit(&full, keys[i], keys[i], (50 + i) * sec));
                        assert_false(log_limit(&full, keys[i], keys[i], (50 + i) * sec));
                }
                assert_true(log_limit(&full, keys[PMUGATE_EXPORTER_LOG_REASONS_MAX], "new", 70 * sec));
                assert_int_equal(count_lines(logged(f, &buf)), before + PMUGATE_EXPORTER_LOG_REASONS_MAX + 2);
                assert_non_null(strstr(buf, "pmugate-exporter: k0 (1 more time in the last 20 s)\n"));
        }
        assert_int_equal(fclose(f), 0);
        free(buf);
}

static HttpSlot slot_at(uint32_t ip, uint64_t since_usec) {
        HttpSlot slot = { .used = true, .fd = 100, .since_usec = since_usec };
        struct sockaddr_in *in = (struct sockaddr_in *) &slot.address;

        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(ip);
        return slot;
}

/* Slow connections: cut at the request deadline; at the limit, the busiest address gives up
 * its oldest connection, so that a local user's many slow ones cannot crowd out a scrape. */
static void test_http_guard(void **state) {
        HttpSlot slots[HTTP_CONNECTIONS_HARD_MAX] = {};
        bool close_them[HTTP_CONNECTIONS_HARD_MAX];
        const uint64_t sec = 1000000, now = 100 * sec;
        size_t n = 0;

        (void) state;
        slots[n++] = slot_at(0x7f000001, now - HTTP_REQUEST_SECONDS * sec);     /* past its deadline */
        slots[n++] = slot_at(0x0a000001, now - 1 * sec);                                /* a scraper */
        assert_int_equal(http_guard_pick(slots, ELEMENTSOF(slots), now, close_them), 1);
        assert_true(close_them[0]);
        assert_false(close_them[1]);

        /* 127.0.0.1 holds all but one slot; a new local connection (the Epilog) comes last */
        slots[0] = slot_at(0x7f000001, now - 9 * sec);
        for (; n < HTTP_CONNECTIONS_MAX; n++)
                slots[n] = slot_at(0x7f000001, now - 5 * sec + n);
        slots[n++] = slot_at(0x7f000001, now);
        assert_int_equal(http_guard_pick(slots, ELEMENTSOF(slots), now, close_them), 1);
        assert_true(close_them[0]);             /* the oldest of the busiest address */
        assert_false(close_them[1]);            /* not the scraper of another address */
        assert_false(close_them[n - 1]);        /* not the newcomer */

        /* a slot already being closed is neither counted nor picked again */
        slots[0].closing = true;
        assert_int_equal(http_guard_pick(slots, ELEMENTSOF(slots), now, close_them), 0);
        slots[0].used = false;
        slots[0].closing = false;
        assert_int_equal(http_guard_pick(slots, ELEMENTSOF(slots), now, close_them), 0);

        /* one connection per address, one too many: the one waiting longest goes */
        for (n = 0; n <= HTTP_CONNECTIONS_MAX; n++)
                slots[n] = slot_at(0x0a000000 + (uint32_t) n, now - 2 * sec + (n == 7 ? 0 : sec));
        assert_int_equal(http_guard_pick(slots, ELEMENTSOF(slots), now, close_them), 1);
        assert_true(close_them[7]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accept),
                cmocka_unit_test(test_label_names),
                cmocka_unit_test(test_totals_and_jobs),
                cmocka_unit_test(test_sparse_and_shared),
                cmocka_unit_test(test_cgroup_source),
                cmocka_unit_test(test_routes),
                cmocka_unit_test(test_render),
                cmocka_unit_test(test_summary),
                cmocka_unit_test(test_package),
                cmocka_unit_test(test_flops),
                cmocka_unit_test(test_http_guard),
                cmocka_unit_test(test_log_limit),
                cmocka_unit_test(test_snapshot_and_per_cpu),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

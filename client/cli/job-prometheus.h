/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job --prometheus: a job's per-node numbers from the series pmugate-exporter gave a
 * Prometheus server, through its HTTP API
 */
#pragma once

#include <stdint.h>

#include "cli/job-report.h"

typedef struct JobPrometheusQuery {
        const char *url;                /* http://HOST:PORT[/PREFIX] of the Prometheus server */
        const char *job;                /* a valid job id (job_id_valid()) */
        const char *node_label;         /* the label naming a node: "instance" */
        int64_t start, end;             /* UNIX seconds: where to look for the job */
        int timeout_ms;                 /* per request */
} JobPrometheusQuery;

/* Adds to set a node per value of the node label that has the job's series in the window, with
 * its start and end (its first and last sample of pmugate_job_cpus) and its totals (each
 * counter's last value); a node whose exporter was down (up = 0) at some time of the job is
 * added as missing instead, since its counts would be short. Returns 0; -ENOENT when no node
 * has the job's series; another negative errno with the reason in reterr_reason when the server
 * cannot be asked or answers what this cannot read. */
int job_prometheus_gather(const JobPrometheusQuery *q, JobSet *set, char *reterr_reason, size_t reason_size);

/* Whether s is a Prometheus label name. */
bool job_label_name_valid(const char *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What pmugate-exporter answers to a request line: the routing of exporter/http.c as a pure
 * function of the method, the URL and whether the request has a body, so it can be fuzzed
 * without libmicrohttpd (tests/fuzz/fuzz_http.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pmugate-limits.h"

typedef enum HttpRoute {
        HTTP_ROUTE_METHOD_NOT_ALLOWED,  /* 405: only GET and HEAD */
        HTTP_ROUTE_HAS_BODY,            /* 400: a GET has no body */
        HTTP_ROUTE_METRICS,             /* /metrics */
        HTTP_ROUTE_JOB,                 /* /jobs/ID with a valid ID */
        HTTP_ROUTE_BAD_JOB,             /* 400: /jobs/ with an ID that cannot be a job's */
        HTTP_ROUTE_INDEX,               /* / */
        HTTP_ROUTE_NOT_FOUND,           /* 404 */
} HttpRoute;

#define HTTP_JOB_PREFIX "/jobs/"
/* a job id as the daemon takes one */
#define HTTP_JOB_ID_MAX PMUGATE_STRING_MAX

/* Whether job is 1 to HTTP_JOB_ID_MAX characters of A-Z a-z 0-9 . _ - +. */
bool http_job_id_valid(const char *job);

/* Routes a request. For HTTP_ROUTE_JOB, *ret_job points at the ID inside url. */
HttpRoute http_route(const char *method, const char *url, size_t upload_size, const char **ret_job);

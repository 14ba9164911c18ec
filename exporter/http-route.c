/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: routing of HTTP requests
 */
#include <string.h>

#include "http-route.h"

bool http_job_id_valid(const char *job) {
        size_t n = strnlen(job, HTTP_JOB_ID_MAX + 1);

        if (n == 0 || n > HTTP_JOB_ID_MAX)
                return false;
        for (const char *c = job; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                      *c == '.' || *c == '_' || *c == '-' || *c == '+'))
                        return false;
        return true;
}

HttpRoute http_route(const char *method, const char *url, size_t upload_size, const char **ret_job) {
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
                return HTTP_ROUTE_METHOD_NOT_ALLOWED;
        if (upload_size > 0)
                return HTTP_ROUTE_HAS_BODY;
        if (strcmp(url, "/metrics") == 0)
                return HTTP_ROUTE_METRICS;
        if (strncmp(url, HTTP_JOB_PREFIX, strlen(HTTP_JOB_PREFIX)) == 0) {
                const char *job = url + strlen(HTTP_JOB_PREFIX);

                if (!http_job_id_valid(job))
                        return HTTP_ROUTE_BAD_JOB;
                *ret_job = job;
                return HTTP_ROUTE_JOB;
        }
        if (strcmp(url, "/") == 0)
                return HTTP_ROUTE_INDEX;
        return HTTP_ROUTE_NOT_FOUND;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: pmugate-exporter's HTTP routing and Accept header negotiation, what any client
 * that reaches the exporter's port controls
 *
 * Input: "METHOD URL\nACCEPT\nBODY". The first line is split at its first space; without a
 * second line there is no Accept header (NULL); BODY's length is the upload size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_util.h"
#include "http-route.h"
#include "render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool job_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-' || c == '+';
}

static void check_route(const char *method, const char *url, size_t upload_size) {
        bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
        bool jobs = strncmp(url, HTTP_JOB_PREFIX, strlen(HTTP_JOB_PREFIX)) == 0;
        const char *job = NULL;
        HttpRoute r = http_route(method, url, upload_size, &job);

        fuzz_assert((r == HTTP_ROUTE_METHOD_NOT_ALLOWED) == !get);
        if (!get)
                return;
        fuzz_assert((r == HTTP_ROUTE_HAS_BODY) == (upload_size > 0));
        if (upload_size > 0)
                return;
        fuzz_assert((r == HTTP_ROUTE_METRICS) == (strcmp(url, "/metrics") == 0));
        fuzz_assert((r == HTTP_ROUTE_INDEX) == (strcmp(url, "/") == 0));
        fuzz_assert((r == HTTP_ROUTE_JOB || r == HTTP_ROUTE_BAD_JOB) == jobs);
        fuzz_assert((r == HTTP_ROUTE_JOB) == (job != NULL));
        if (r == HTTP_ROUTE_JOB) {
                /* the ID is the rest of the URL, of characters a job id has (no '/': it names
                 * nothing else) */
                size_t n = strlen(job);

                fuzz_assert(job == url + strlen(HTTP_JOB_PREFIX));
                fuzz_assert(n >= 1 && n <= HTTP_JOB_ID_MAX);
                for (size_t i = 0; i < n; i++)
                        fuzz_assert(job_char(job[i]));
        }
        fuzz_assert(r != HTTP_ROUTE_BAD_JOB || !http_job_id_valid(url + strlen(HTTP_JOB_PREFIX)));
}

static void check_accept(const char *accept) {
        bool om = accept_prefers_openmetrics(accept);

        fuzz_assert(om == accept_prefers_openmetrics(accept));
        /* OpenMetrics only for a header that asks for it by name */
        if (!accept || !strcasestr(accept, "application/openmetrics-text"))
                fuzz_assert(!om);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *copy = fuzz_copy(data, size), *line_end, *accept = NULL, *space;
        const char *method = copy, *url = "";
        size_t upload_size = 0;

        /* The strings libmicrohttpd hands over end at their first NUL, as C strings do. */
        line_end = memchr(copy, '\n', size);
        if (line_end) {
                char *accept_end;

                *line_end = '\0';
                accept = line_end + 1;
                accept_end = memchr(accept, '\n', size - (size_t) (accept - copy));
                if (accept_end) {
                        *accept_end = '\0';
                        upload_size = size - (size_t) (accept_end + 1 - copy);
                }
        }
        space = strchr(copy, ' ');
        if (space) {
                *space = '\0';
                url = space + 1;
        }

        check_route(method, url, upload_size);
        check_route("GET", url, 0);
        check_accept(accept);
        check_accept(url);
        free(copy);
        return 0;
}

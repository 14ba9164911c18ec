/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor of a scrape: libmicrohttpd, with the exporter's threading, serving one body held
 * in memory for every request (bench/run-bench-exporter.py). Whatever a scrape of the exporter
 * costs more than this is the exporter's own: rendering, copying, its locks.
 *
 * Usage: bench-http-floor BODY_FILE PORT CONTENT_TYPE; serves on 127.0.0.1 until SIGTERM.
 */
#include <errno.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *body;
static size_t body_size;
static const char *content_type;

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **con_cls) {
        struct MHD_Response *resp;
        enum MHD_Result r;

        resp = MHD_create_response_from_buffer(body_size, body, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return MHD_NO;
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        r = MHD_queue_response(conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return r;
}

static int read_all(const char *path) {
        FILE *f = fopen(path, "re");
        long n;

        if (!f)
                return -errno;
        if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
                fclose(f);
                return -EIO;
        }
        body = malloc((size_t) n + 1);
        if (!body) {
                fclose(f);
                return -ENOMEM;
        }
        body_size = fread(body, 1, (size_t) n, f);
        fclose(f);
        return body_size == (size_t) n ? 0 : -EIO;
}

int main(int argc, char **argv) {
        struct MHD_Daemon *d;
        sigset_t set;
        int sig, r;

        if (argc != 4) {
                fprintf(stderr, "usage: bench-http-floor BODY_FILE PORT CONTENT_TYPE\n");
                return 2;
        }
        r = read_all(argv[1]);
        if (r < 0) {
                fprintf(stderr, "bench-http-floor: %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        content_type = argv[3];
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        (void) pthread_sigmask(SIG_BLOCK, &set, NULL);
        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t) atoi(argv[2]), NULL,
                             NULL, handle, NULL, MHD_OPTION_END);
        if (!d) {
                fprintf(stderr, "bench-http-floor: cannot serve on port %s\n", argv[2]);
                return 1;
        }
        (void) sigwait(&set, &sig);
        MHD_stop_daemon(d);
        free(body);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate job's HTTP client (client/cli/http-get.c) against a canned server on the loopback:
 * the request it sends, status and body, and refusals of what it must not take: URLs it does
 * not speak, chunked bodies, answers over the bound, a server that never answers, no server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/http-get.h"

typedef struct Server {
        int fd;
        int port;
        const char *answer;     /* NULL: read the request and never answer */
        char request[4096];
        pthread_t thread;
} Server;

static void *serve(void *arg) {
        Server *s = arg;
        int c = accept(s->fd, NULL, NULL);
        size_t n = 0;

        if (c < 0)
                return NULL;
        while (n + 1 < sizeof(s->request) && !strstr(s->request, "\r\n\r\n")) {
                ssize_t k = read(c, s->request + n, sizeof(s->request) - 1 - n);

                if (k <= 0)
                        break;
                n += (size_t) k;
                s->request[n] = '\0';
        }
        if (s->answer)
                (void) !write(c, s->answer, strlen(s->answer));
        else
                usleep(500 * 1000);
        close(c);
        return NULL;
}

static void server_start(Server *s, const char *answer) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(a);

        memset(s, 0, sizeof(*s));
        s->answer = answer;
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(s->fd >= 0);
        assert_int_equal(bind(s->fd, (struct sockaddr *) &a, sizeof(a)), 0);
        assert_int_equal(listen(s->fd, 1), 0);
        assert_int_equal(getsockname(s->fd, (struct sockaddr *) &a, &len), 0);
        s->port = ntohs(a.sin_port);
        assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void server_stop(Server *s) {
        pthread_join(s->thread, NULL);
        close(s->fd);
}

static int get(Server *s, const char *prefix, const char *path, size_t max, int timeout_ms, int *status, char **body,
               char *why, size_t why_size) {
        char url[128];
        size_t size;

        (void) snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", s->port, prefix);
        return http_get(url, path, timeout_ms, max, status, body, &size, why, why_size);
}

static void test_ok(void **state) {
        Server s;
        char *body = NULL, why[256] = "";
        int status = 0;

        server_start(&s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"success\"}");
        assert_int_equal(get(&s, "/prom/", "/api/v1/query?query=up", 1024, 5000, &status, &body, why, sizeof(why)), 0);
        server_stop(&s);
        assert_int_equal(status, 200);
        assert_string_equal(body, "{\"status\":\"success\"}");
        /* HTTP/1.0, the prefix without its slash, the Host header with the port */
        assert_non_null(strstr(s.request, "GET /prom/api/v1/query?query=up HTTP/1.0\r\n"));
        assert_non_null(strstr(s.request, "\r\nHost: 127.0.0.1:"));
        free(body);
}

static void test_refused(void **state) {
        Server s;
        char *body = NULL, why[256] = "";
        int status = 0;

        server_start(&s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
        assert_int_equal(get(&s, "", "/", 1024, 5000, &status, &body, why, sizeof(why)), -EBADMSG);
        server_stop(&s);

        server_start(&s, "HTTP/1.0 200 OK\r\n\r\n0123456789abcdef");
        assert_int_equal(get(&s, "", "/", 8, 5000, &status, &body, why, sizeof(why)), -EFBIG);
        assert_non_null(strstr(why, "larger than 8 bytes"));
        server_stop(&s);

        server_start(&s, "SSH-2.0-OpenSSH\r\n\r\n");
        assert_int_equal(get(&s, "", "/", 1024, 5000, &status, &body, why, sizeof(why)), -EBADMSG);
        server_stop(&s);

        server_start(&s, NULL);
        assert_int_equal(get(&s, "", "/", 1024, 100, &status, &body, why, sizeof(why)), -ETIMEDOUT);
        assert_non_null(strstr(why, "did not answer within 100 ms"));
        server_stop(&s);

        /* a port nobody listens on: the one just closed */
        assert_int_equal(get(&s, "", "/", 1024, 5000, &status, &body, why, sizeof(why)), -ECONNREFUSED);
        assert_null(body);

        assert_int_equal(http_get("https://example.org", "/", 100, 16, &status, &body, NULL, NULL, 0), -EINVAL);
        assert_int_equal(http_get("http://user@host/", "/", 100, 16, &status, &body, NULL, NULL, 0), -EINVAL);
        assert_int_equal(http_get("http://host:99999999/", "/", 100, 16, &status, &body, NULL, NULL, 0), -EINVAL);
        assert_int_equal(http_get("http://[::1/", "/", 100, 16, &status, &body, NULL, NULL, 0), -EINVAL);
        assert_int_equal(http_get("http://host/a b", "/", 100, 16, &status, &body, NULL, NULL, 0), -EINVAL);
}

static void test_query(void **state) {
        char buf[64] = "q=";

        assert_int_equal(http_query_append(buf, sizeof(buf), "up{jobid=\"7\"} [5m]"), 0);
        assert_string_equal(buf, "q=up%7Bjobid%3D%227%22%7D%20%5B5m%5D");
        assert_int_equal(http_query_append(buf, strlen(buf) + 1, "x"), -ENOBUFS);
        assert_int_equal(http_query_append(buf, strlen(buf) + 2, "x"), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ok),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_query),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}

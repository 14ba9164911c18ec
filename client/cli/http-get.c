/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small HTTP/1.0 GET client (pmugate job --prometheus): HTTP/1.0, so the server closes the
 * connection at the end of the body and never chunks it
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/http-get.h"
#include "core/reason.h"
#include "macro.h"

#define HOST_MAX 256U
#define HEAD_MAX (64U * 1024U)  /* status line and headers */
#define REQUEST_MAX 16384U

int http_query_append(char *buf, size_t size, const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(buf);

        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                             c == '-' || c == '_' || c == '.' || c == '~';

                if (n + (plain ? 1 : 3) >= size)
                        return -ENOBUFS;
                if (plain)
                        buf[n++] = (char) c;
                else {
                        buf[n++] = '%';
                        buf[n++] = hex[c >> 4];
                        buf[n++] = hex[c & 15];
                }
        }
        buf[n] = '\0';
        return 0;
}

/* http://HOST[:PORT][/PREFIX]: the host (a name, an IPv4 address or [IPv6]), the port, the prefix
 * without a trailing slash. */
static int parse_url(const char *url, char *host, char *port, const char **ret_prefix, size_t *ret_prefix_len) {
        const char *p, *end, *slash;
        size_t n;

        if (strncmp(url, "http://", 7) != 0)
                return -EINVAL;
        p = url + 7;
        slash = strchr(p, '/');
        end = slash ?: p + strlen(p);
        if (*p == '[') {
                const char *close = memchr(p, ']', (size_t) (end - p));

                if (!close || (close + 1 != end && close[1] != ':'))
                        return -EINVAL;
                n = (size_t) (close - p - 1);
                if (n == 0 || n >= HOST_MAX)
                        return -EINVAL;
                memcpy(host, p + 1, n);
                host[n] = '\0';
                p = close + 1;
        } else {
                const char *colon = memchr(p, ':', (size_t) (end - p));

                n = (size_t) ((colon ?: end) - p);
                if (n == 0 || n >= HOST_MAX)
                        return -EINVAL;
                memcpy(host, p, n);
                host[n] = '\0';
                p = colon ?: end;
        }
        if (*p == ':') {
                n = (size_t) (end - p - 1);
                if (n == 0 || n > 5 || strspn(p + 1, "0123456789") < n)
                        return -EINVAL;
                memcpy(port, p + 1, n);
                port[n] = '\0';
        } else
                strcpy(port, "80");
        for (const char *c = host; *c; c++)
                if (*c <= ' ' || *c == '@' || *c == '/' || *c == '?' || *c == '#')
                        return -EINVAL;
        *ret_prefix = end;
        *ret_prefix_len = strlen(end);
        while (*ret_prefix_len > 0 && end[*ret_prefix_len - 1] == '/')
                (*ret_prefix_len)--;
        for (size_t i = 0; i < *ret_prefix_len; i++)
                if ((unsigned char) end[i] <= ' ' || end[i] == '?' || end[i] == '#')
                        return -EINVAL;
        return 0;
}

static int64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events, or the deadline passes. */
static int wait_fd(int fd, short events, int64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int64_t left = deadline - now_ms();
                int r;

                if (left <= 0)
                        return -ETIMEDOUT;
                r = poll(&p, 1, (int) (left > 60000 ? 60000 : left));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r > 0)
                        return 0;
        }
}

static int connect_to(const char *host, const char *port, int64_t deadline, char *reason, size_t reason_size) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG }, *res = NULL;
        int r, last = -ECONNREFUSED;

        r = getaddrinfo(host, port, &hints, &res);
        if (r != 0) {
                reason_set(reason, reason_size, "%s: %s", host, gai_strerror(r));
                return -EHOSTUNREACH;
        }
        for (struct addrinfo *a = res; a; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
                socklen_t len = sizeof(int);
                int err = 0;

                if (fd < 0) {
                        last = -errno;
                        continue;
                }
                if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
                        last = -errno;
                        (void) close(fd);
                        continue;
                }
                r = wait_fd(fd, POLLOUT, deadline);
                if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
                        freeaddrinfo(res);
                        return fd;
                }
                last = r < 0 ? r : -(err ?: ECONNREFUSED);
                (void) close(fd);
        }
        freeaddrinfo(res);
        reason_set(reason, reason_size, "cannot connect to %s port %s: %s", host, port, strerror(-last));
        return last;
}

static int send_all(int fd, const char *data, size_t n, int64_t deadline) {
        while (n > 0) {
                ssize_t k = send(fd, data, n, MSG_NOSIGNAL);

                if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
                        int r = wait_fd(fd, POLLOUT, deadline);

                        if (r < 0)
                                return r;
                        continue;
                }
                if (k < 0)
                        return -errno;
                data += k;
                n -= (size_t) k;
        }
        return 0;
}

/* The body after the head; the status from "HTTP/1.x NNN"; a chunked body is refused (an
 * HTTP/1.0 request is never answered with one by a server that keeps to the standard). */
static int split_answer(char *buf, size_t size, int *ret_status, size_t *ret_body_offset) {
        char *end = memmem(buf, size < HEAD_MAX ? size : HEAD_MAX, "\r\n\r\n", 4);
        int status;

        if (!end || size < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
                return -EBADMSG;
        if (sscanf(buf + 9, "%3d", &status) != 1 || status < 100 || status > 599)
                return -EBADMSG;
        *end = '\0';
        for (char *line = strstr(buf, "\r\n"); line; line = strstr(line + 2, "\r\n"))
                if (strncasecmp(line + 2, "Transfer-Encoding:", 18) == 0)
                        return -EBADMSG;
        *ret_status = status;
        *ret_body_offset = (size_t) (end - buf) + 4;
        return 0;
}

int http_get(const char *base_url, const char *path_and_query, int timeout_ms, size_t max, int *ret_status,
             char **ret_body, size_t *ret_size, char *reterr_reason, size_t reason_size) {
        char host[HOST_MAX], port[8], request[REQUEST_MAX];
        int64_t deadline = now_ms() + timeout_ms;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t prefix_len, size = 0, cap = HEAD_MAX + max, body;
        const char *prefix;
        int status, r, k;

        if (parse_url(base_url, host, port, &prefix, &prefix_len) < 0) {
                reason_set(reterr_reason, reason_size, "%s is not a URL this takes (http://HOST[:PORT][/PATH])", base_url);
                return -EINVAL;
        }
        k = snprintf(request, sizeof(request),
                     "GET %.*s%s HTTP/1.0\r\nHost: %s%s%s%s%s\r\nAccept: application/json\r\n"
                     "User-Agent: pmugate-job\r\nConnection: close\r\n\r\n",
                     (int) prefix_len, prefix, path_and_query, strchr(host, ':') ? "[" : "", host,
                     strchr(host, ':') ? "]" : "", strcmp(port, "80") ? ":" : "", strcmp(port, "80") ? port : "");
        if (k < 0 || (size_t) k >= sizeof(request)) {
                reason_set(reterr_reason, reason_size, "the request is too long");
                return -ENOBUFS;
        }
        fd = connect_to(host, port, deadline, reterr_reason, reason_size);
        if (fd < 0)
                return fd;
        r = send_all(fd, request, (size_t) k, deadline);
        if (r < 0) {
                reason_set(reterr_reason, reason_size, "sending to %s: %s", base_url, strerror(-r));
                return r;
        }
        buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (size == cap) {
                        reason_set(reterr_reason, reason_size, "the answer of %s is larger than %zu bytes", base_url, max);
                        return -EFBIG;
                }
                n = recv(fd, buf + size, cap - size, 0);
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        r = wait_fd(fd, POLLIN, deadline);
                        if (r < 0) {
                                reason_set(reterr_reason, reason_size, "%s did not answer within %d ms", base_url,
                                    timeout_ms);
                                return r;
                        }
                        continue;
                }
                if (n < 0) {
                        r = -errno;
                        reason_set(reterr_reason, reason_size, "reading from %s: %s", base_url, strerror(-r));
                        return r;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        r = split_answer(buf, size, &status, &body);
        if (r < 0) {
                reason_set(reterr_reason, reason_size, "%s did not answer in HTTP/1.x without chunks", base_url);
                return r;
        }
        if (size - body > max) {
                reason_set(reterr_reason, reason_size, "the answer of %s is larger than %zu bytes", base_url, max);
                return -EFBIG;
        }
        memmove(buf, buf + body, size - body);
        buf[size - body] = '\0';
        *ret_status = status;
        *ret_size = size - body;
        *ret_body = TAKE_PTR(buf);
        return 0;
}

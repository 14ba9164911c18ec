/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Slow HTTP clients cannot lock out the others: every request must be received and answered
 * within a deadline, and when the connections are all taken, a new one pushes out the oldest
 * connection of the address that holds the most (a local user's slow connections share
 * 127.0.0.1 with the Epilog and a local scraper, so refusing the new one would lock those out)
 */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Connections served at once: a scraper, a dashboard and an Epilog at a time need few; past
 * this, a new connection pushes out an old one. */
#define HTTP_CONNECTIONS_MAX 32U
/* What libmicrohttpd accepts at most: room for the connections pushed out to close. */
#define HTTP_CONNECTIONS_HARD_MAX (2U * HTTP_CONNECTIONS_MAX)
/* A request is received and answered within this long of the connection or the previous
 * answer on it, however slowly its bytes trickle. */
#define HTTP_REQUEST_SECONDS 10U
/* A connection with nothing happening on it is closed after this long. */
#define HTTP_IDLE_SECONDS 5U

typedef struct HttpSlot {
        bool used;
        bool closing;           /* shut down by the guard; libmicrohttpd has yet to close it */
        int fd;
        struct sockaddr_storage address;
        uint64_t since_usec;    /* the connection, or the end of its previous request */
} HttpSlot;

/* Which slots to shut down at now_usec: those past HTTP_REQUEST_SECONDS, and while more than
 * HTTP_CONNECTIONS_MAX remain, the oldest of the address with the most. Marks them in
 * ret_close (n entries) and returns how many. */
size_t http_guard_pick(const HttpSlot *slots, size_t n, uint64_t now_usec, bool *ret_close);

typedef struct HttpGuard HttpGuard;

/* Starts the guard's thread, which looks once a second. */
int http_guard_new(HttpGuard **ret);
HttpGuard *http_guard_free(HttpGuard *g);

/* libmicrohttpd's callbacks (MHD_OPTION_NOTIFY_CONNECTION, MHD_OPTION_NOTIFY_COMPLETED), cls
 * the guard. */
void http_guard_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                  enum MHD_ConnectionNotificationCode code);
void http_guard_request_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                                  enum MHD_RequestTerminationCode code);

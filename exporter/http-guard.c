/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: deadlines and room for HTTP connections
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "http-guard.h"
#include "macro.h"

#define USEC_PER_SEC 1000000ULL

struct HttpGuard {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t thread;
        bool stop;
        HttpSlot slots[HTTP_CONNECTIONS_HARD_MAX];
};

static uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000U;
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return ((const struct sockaddr_in *) a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *) b)->sin_addr.s_addr;
        if (a->ss_family == AF_INET6)
                return memcmp(&((const struct sockaddr_in6 *) a)->sin6_addr,
                              &((const struct sockaddr_in6 *) b)->sin6_addr, sizeof(struct in6_addr)) == 0;
        return true;
}

size_t http_guard_pick(const HttpSlot *slots, size_t n, uint64_t now, bool *ret_close) {
        size_t open = 0, picked = 0;

        for (size_t i = 0; i < n; i++) {
                ret_close[i] = false;
                if (!slots[i].used || slots[i].closing)
                        continue;
                ret_close[i] = now - slots[i].since_usec >= HTTP_REQUEST_SECONDS * USEC_PER_SEC;
                picked += ret_close[i];
                open += !ret_close[i];
        }
        /* the oldest connection of the address holding the most: a local user's many slow
         * connections go before the Epilog's one, and among addresses holding as many, the
         * connection waiting longest goes first */
        while (open > HTTP_CONNECTIONS_MAX) {
                size_t victim = SIZE_MAX, victim_count = 0;

                for (size_t i = 0; i < n; i++) {
                        size_t same = 0;

                        if (!slots[i].used || slots[i].closing || ret_close[i])
                                continue;
                        for (size_t j = 0; j < n; j++)
                                same += slots[j].used && !slots[j].closing && !ret_close[j] &&
                                        same_address(&slots[i].address, &slots[j].address);
                        if (same > victim_count ||
                            (same == victim_count && slots[i].since_usec < slots[victim].since_usec)) {
                                victim = i;
                                victim_count = same;
                        }
                }
                if (victim == SIZE_MAX)
                        break;
                ret_close[victim] = true;
                picked++;
                open--;
        }
        return picked;
}

/* Under the lock. shutdown(), never close(): libmicrohttpd owns the fd, sees the end of the
 * stream and closes the connection itself; the fd stays open (and cannot be reused for
 * something else) until its NOTIFY_CLOSED has removed the slot, which takes the same lock. */
static void sweep(HttpGuard *g) {
        bool close_them[HTTP_CONNECTIONS_HARD_MAX];

        if (http_guard_pick(g->slots, ELEMENTSOF(g->slots), now_usec(), close_them) == 0)
                return;
        for (size_t i = 0; i < ELEMENTSOF(g->slots); i++)
                if (close_them[i]) {
                        (void) shutdown(g->slots[i].fd, SHUT_RDWR);
                        /* counted no more; its slot is freed when libmicrohttpd closes it */
                        g->slots[i].closing = true;
                }
}

void http_guard_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                  enum MHD_ConnectionNotificationCode code) {
        HttpGuard *g = cls;
        HttpSlot *slot = *socket_context;

        pthread_mutex_lock(&g->lock);
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *fd_info =
                        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
                const union MHD_ConnectionInfo *addr_info =
                        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

                for (size_t i = 0; i < ELEMENTSOF(g->slots) && fd_info; i++)
                        if (!g->slots[i].used) {
                                slot = &g->slots[i];
                                *slot = (HttpSlot) {
                                        .used = true,
                                        .fd = fd_info->connect_fd,
                                        .since_usec = now_usec(),
                                };
                                if (addr_info && addr_info->client_addr)
                                        memcpy(&slot->address, addr_info->client_addr,
                                               addr_info->client_addr->sa_family == AF_INET6 ?
                                               sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
                                *socket_context = slot;
                                break;
                        }
                sweep(g);
        } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && slot) {
                slot->used = false;
                *socket_context = NULL;
        }
        pthread_mutex_unlock(&g->lock);
}

void http_guard_request_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                                  enum MHD_RequestTerminationCode code) {
        HttpGuard *g = cls;
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        HttpSlot *slot = info ? info->socket_context : NULL;

        (void) con_cls;
        (void) code;
        pthread_mutex_lock(&g->lock);
        /* the next request on a kept-alive connection has its own deadline, unless this one
         * was pushed out (then it stays counted out) */
        if (slot && slot->used && !slot->closing)
                slot->since_usec = now_usec();
        pthread_mutex_unlock(&g->lock);
}

static void *watch(void *arg) {
        HttpGuard *g = arg;

        pthread_mutex_lock(&g->lock);
        while (!g->stop) {
                struct timespec at;

                (void) clock_gettime(CLOCK_MONOTONIC, &at);
                at.tv_sec += 1;
                (void) pthread_cond_timedwait(&g->wake, &g->lock, &at);
                if (!g->stop)
                        sweep(g);
        }
        pthread_mutex_unlock(&g->lock);
        return NULL;
}

int http_guard_new(HttpGuard **ret) {
        _cleanup_free_ HttpGuard *g = NULL;
        pthread_condattr_t attr;
        int r;

        g = calloc(1, sizeof(HttpGuard));
        if (!g)
                return -ENOMEM;
        r = pthread_mutex_init(&g->lock, NULL);
        if (r != 0)
                return -r;
        if (pthread_condattr_init(&attr) != 0 || pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
            pthread_cond_init(&g->wake, &attr) != 0) {
                (void) pthread_mutex_destroy(&g->lock);
                return -ENOMEM;
        }
        (void) pthread_condattr_destroy(&attr);
        r = pthread_create(&g->thread, NULL, watch, g);
        if (r != 0) {
                (void) pthread_cond_destroy(&g->wake);
                (void) pthread_mutex_destroy(&g->lock);
                return -r;
        }
        *ret = TAKE_PTR(g);
        return 0;
}

HttpGuard *http_guard_free(HttpGuard *g) {
        if (!g)
                return NULL;
        pthread_mutex_lock(&g->lock);
        g->stop = true;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        (void) pthread_join(g->thread, NULL);
        (void) pthread_cond_destroy(&g->wake);
        (void) pthread_mutex_destroy(&g->lock);
        free(g);
        return NULL;
}

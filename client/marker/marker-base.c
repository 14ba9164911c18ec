/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the region calls (marker.c), the set-up from the runner's environment (marker-init.c)
 * and the results file (marker-file.c) share: the global state, valid region names and a
 * thread's connection
 */
#include <ctype.h>
#include <pthread.h>

#include "marker/marker-state.h"

MarkerGlobal marker_global = { .lock = PTHREAD_MUTEX_INITIALIZER };

bool marker_name_valid(const char *name) {
        size_t n = 0;

        if (!name)
                return false;
        for (; name[n]; n++)
                if (n >= PMUGATE_MARKER_NAME_MAX || !isgraph((unsigned char) name[n]))
                        return false;
        return n > 0;
}

int marker_connection_get(MarkerThread *t, MarkerConnection **ret) {
        MarkerGlobal *g = &marker_global;
        MarkerConnection *mc = &g->connections[t->index % MARKER_CONNECTIONS_MAX];
        int r = 0;

        (void) pthread_mutex_lock(&mc->lock);
        if (!mc->connection)
                r = pmugate_connect(g->socket_path, &mc->connection);
        (void) pthread_mutex_unlock(&mc->lock);
        if (r < 0)
                return r;
        *ret = mc;
        return 0;
}

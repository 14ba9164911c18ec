/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's HTTP side, on libmicrohttpd: GET /metrics (content negotiation between the
 * Prometheus text format and OpenMetrics), GET /jobs/ID (a job's JSON summary), GET / (a
 * pointer to both). A request renders the sampler's latest snapshot (snapshot.h): it takes no
 * lock the sampler waits on and never touches counters.
 */
#pragma once

#include <pthread.h>
#include <sys/socket.h>

#include "model.h"
#include "render.h"
#include "snapshot.h"

typedef struct Http Http;

typedef struct HttpOptions {
        const struct sockaddr *address;
        socklen_t address_len;
        SnapshotBox *snapshots;
        const char *job_label;
        const char *version;
        PerCpu per_cpu;
} HttpOptions;

/* Starts serving on its own thread. Returns 0, or a negative errno (-EADDRINUSE, ...). */
int http_start(const HttpOptions *o, Http **ret);
Http *http_stop(Http *h);

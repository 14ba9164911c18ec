/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small HTTP/1.0 GET client for pmugate job's Prometheus source: plain http, one request per
 * connection, a bounded answer, a timeout on every step
 */
#pragma once

#include <stddef.h>

/* GETs base_url (http://HOST[:PORT][/PREFIX]) + path_and_query (starting with '/'). Returns 0
 * with the HTTP status in *ret_status and the body (NUL-terminated, at most max bytes) in
 * *ret_body; or a negative errno with the reason in reterr_reason: -EINVAL (not an http:// URL
 * this client takes), -EHOSTUNREACH (the name does not resolve), -ECONNREFUSED, -ETIMEDOUT,
 * -EFBIG (a larger answer), -EBADMSG (not an HTTP answer it reads, such as a chunked one). */
int http_get(const char *base_url, const char *path_and_query, int timeout_ms, size_t max, int *ret_status,
             char **ret_body, size_t *ret_size, char *reterr_reason, size_t reason_size);

/* Appends s to buf (size bytes, NUL-terminated) percent-encoded for a URL's query; -ENOBUFS
 * when it does not fit. */
int http_query_append(char *buf, size_t size, const char *s);

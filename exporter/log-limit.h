/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter's rate-limited log: a daemon that refuses the exporter every sample must not
 * flood the journal. Each distinct reason (its message's format) is logged once per interval;
 * the repeats within it are counted and reported in one line when the interval ends.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pmugate-limits.h"

typedef struct LogReason {
        const char *key;                /* the message's format: static, compared by content */
        uint64_t since_usec;            /* start of the interval being counted */
        unsigned repeats;               /* lines held back in it */
        char last[512];                 /* the last of them, for the count's line */
} LogReason;

typedef struct LogLimit {
        FILE *out;                      /* NULL: stderr */
        uint64_t interval_usec;         /* 0: PMUGATE_EXPORTER_LOG_INTERVAL_USEC */
        LogReason reasons[PMUGATE_EXPORTER_LOG_REASONS_MAX];
} LogLimit;

/* Logs text under key (both NUL-terminated; key must outlive l) at now_usec (CLOCK_MONOTONIC):
 * at once when key was not logged within the interval, else only counted. Returns whether
 * the line was written. */
bool log_limit(LogLimit *l, const char *key, const char *text, uint64_t now_usec);

/* Ends the intervals that are over: a reason with repeats gets one line with their count and
 * the last of them, and counts on in a new interval; one without is forgotten. */
void log_limit_flush(LogLimit *l, uint64_t now_usec);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Daemon logging: one line per message on stderr, with a syslog priority prefix that journald
 * understands when stderr is connected to the journal. Log once, at the boundary.
 */
#pragma once

#include <syslog.h>

#include "macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);

_printf_(3, 4) int log_internal(int level, int error, const char *fmt, ...);

#define log_debug(...) ((void) log_internal(LOG_DEBUG, 0, __VA_ARGS__))
#define log_info(...) ((void) log_internal(LOG_INFO, 0, __VA_ARGS__))
#define log_notice(...) ((void) log_internal(LOG_NOTICE, 0, __VA_ARGS__))
#define log_warning(...) ((void) log_internal(LOG_WARNING, 0, __VA_ARGS__))
#define log_error(...) ((void) log_internal(LOG_ERR, 0, __VA_ARGS__))

/* Log with an errno (positive or negative) appended as ": <strerror>"; returns -abs(error). */
#define log_error_errno(error, ...) log_internal(LOG_ERR, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_internal(LOG_WARNING, (error), __VA_ARGS__)

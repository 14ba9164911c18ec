/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's perf event descriptions in sysfs (perf-counters.c): a PMU's format files
 * ("config:LO-HI") and its event files ("event=0x04,umask=0x03"), read from --root as hostile
 * input. Exposed for tests/fuzz/fuzz_perf_format.c.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Parses a format file, "config:LO-HI" or "config:BIT", into the bits a term's value takes
 * (0 <= lo <= hi <= 63). Returns 0, -EOPNOTSUPP for another field than config, or -EINVAL;
 * the outputs are set only on success. */
int perf_format_parse(const char *text, unsigned *ret_lo, unsigned *ret_hi);

/* Parses a format file of any config word, as the perf_event path's catalogue reads them:
 * "config:LO-HI", "config1:BIT", and the kernel's comma-joined ranges ("config:0-7,32-35"),
 * into the word (0 config, 1 config1, 2 config2) and the bits the term's value takes. Returns 0,
 * or -EINVAL for anything else (ranges out of order or overlapping, a bit above 63, a word
 * other than these three); the outputs are set only on success. */
int perf_format_parse_mask(const char *text, unsigned *ret_word, uint64_t *ret_mask);

/* Gives the text of the PMU's format file for term (a name of a-z 0-9 _, under 32 characters)
 * in buf, or a negative errno. */
typedef int (*PerfFormatLookup)(const char *term, char *buf, size_t size, void *userdata);

/* Parses an event file, comma-separated TERM=VALUE with each value placed where term's format
 * puts it. Returns 0 with the config, -EINVAL for a malformed term, -ERANGE for a value wider
 * than its field, or the lookup's or perf_format_parse()'s error; *ret_config is set only on
 * success. Text beyond PERF_EVENT_TEXT_MAX - 1 bytes is not read. */
#define PERF_EVENT_TEXT_MAX 256U
int perf_event_parse(const char *text, PerfFormatLookup lookup, void *userdata, uint64_t *ret_config);

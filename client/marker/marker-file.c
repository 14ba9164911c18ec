/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Markers: reading back the results file a measured program wrote. The program is not
 * trusted: every number is range-checked and anything unexpected refuses the file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "marker/marker-internal.h"
#include "pmugate-limits.h"

#define LINE_MAX_BYTES 4096U
/* A row per region and thread that used it: far more than programs mark. */
#define MARKER_FILE_ROWS_MAX (1U << 20)
#define FIELDS_MAX (6U + MARKER_COLUMNS_MAX + 1U)

MarkerFile *marker_file_free(MarkerFile *f) {
        if (!f)
                return NULL;
        for (size_t i = 0; f->regions && i < f->n_regions; i++)
                free(f->regions[i]);
        free(f->regions);
        free(f->rows);
        free(f->errors);
        free(f);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(MarkerFile *, marker_file_free);

_printf_(4, 5)
static int refuse(char *reason, size_t size, size_t line, const char *format, ...) {
        char what[256];
        va_list ap;

        va_start(ap, format);
        (void) vsnprintf(what, sizeof(what), format, ap);
        va_end(ap);
        if (reason && size > 0)
                (void) snprintf(reason, size, "marker results, line %zu: %s", line, what);
        return -EBADMSG;
}

/* Splits line at single spaces into at most max fields; false when there are more. */
static bool split(char *line, char **fields, size_t max, size_t *ret_n) {
        size_t n = 0;

        for (char *p = line; p && *p; n++) {
                if (n == max)
                        return false;
                fields[n] = p;
                p = strchr(p, ' ');
                if (p)
                        *p++ = '\0';
        }
        *ret_n = n;
        return true;
}

static bool to_u64(const char *s, uint64_t max, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (s[0] < '0' || s[0] > '9')
                return false;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0' || v > max)
                return false;
        *ret = v;
        return true;
}

static bool to_i64(const char *s, int64_t *ret) {
        long long v;
        char *end;

        if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9')))
                return false;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return false;
        *ret = v;
        return true;
}

static int parse_row(MarkerFile *f, char **fields, size_t n, size_t line, char *reason, size_t size) {
        MarkerRow row = {};
        uint64_t v;

        if (n != 7 + f->n_columns)
                return refuse(reason, size, line, "a row has %zu fields, not %zu", n, 7 + f->n_columns);
        if (!to_u64(fields[1], f->n_regions - 1, &v) || f->n_regions == 0)
                return refuse(reason, size, line, "no region %s", fields[1]);
        row.region = (uint32_t) v;
        if (!to_u64(fields[2], PMUGATE_MARKER_THREADS_MAX - 1, &v))
                return refuse(reason, size, line, "bad thread number %s", fields[2]);
        row.thread = (uint32_t) v;
        if (strcmp(fields[3], "-1") == 0)
                row.cpu = -1;
        else if (to_u64(fields[3], PMUGATE_CPUS_MAX - 1, &v))
                row.cpu = (int64_t) v;
        else
                return refuse(reason, size, line, "bad CPU %s", fields[3]);
        if (!to_u64(fields[4], UINT64_MAX, &row.calls) || row.calls == 0 ||
            !to_u64(fields[5], UINT64_MAX, &row.time_ns) || !to_u64(fields[6], row.calls, &row.migrated))
                return refuse(reason, size, line, "bad call count, time or moved calls");
        for (size_t c = 0; c < f->n_columns; c++)
                if (!to_i64(fields[7 + c], &row.values[c]))
                        return refuse(reason, size, line, "bad count %s", fields[7 + c]);
        if (f->n_rows >= MARKER_FILE_ROWS_MAX)
                return refuse(reason, size, line, "more than %u rows", MARKER_FILE_ROWS_MAX);
        if (f->n_rows % 64 == 0) {
                MarkerRow *rows = reallocarray(f->rows, f->n_rows + 64, sizeof(MarkerRow));

                if (!rows)
                        return -ENOMEM;
                f->rows = rows;
        }
        f->rows[f->n_rows++] = row;
        return 0;
}

static int parse_error(MarkerFile *f, const char *count, const char *text, size_t line, char *reason,
                       size_t size) {
        uint64_t v;

        if (!to_u64(count, UINT64_MAX, &v) || v == 0 || !text || !text[0])
                return refuse(reason, size, line, "bad error line");
        for (const char *p = text; *p; p++)
                if ((unsigned char) *p < ' ' || *p == 0x7f)
                        return refuse(reason, size, line, "control character in an error text");
        if (f->n_errors >= MARKER_FILE_ERRORS_MAX) {
                f->errors_dropped = v > UINT64_MAX - f->errors_dropped ? UINT64_MAX : f->errors_dropped + v;
                return 0;
        }
        f->errors[f->n_errors].count = v;
        (void) snprintf(f->errors[f->n_errors].text, sizeof(f->errors[0].text), "%s", text);
        f->n_errors++;
        return 0;
}

static int parse_line(MarkerFile *f, char *text, size_t line, char *reason, size_t size) {
        char *fields[FIELDS_MAX], *rest;
        uint64_t v;
        size_t n;

        if (strncmp(text, "error ", 6) == 0) {
                rest = strchr(text + 6, ' ');
                if (!rest)
                        return refuse(reason, size, line, "bad error line");
                *rest++ = '\0';
                return parse_error(f, text + 6, rest, line, reason, size);
        }
        if (!split(text, fields, FIELDS_MAX, &n) || n == 0)
                return refuse(reason, size, line, "not a results line");
        if (strcmp(fields[0], "row") == 0)
                return parse_row(f, fields, n, line, reason, size);
        if (strcmp(fields[0], "region") == 0) {
                if (n != 3 || !to_u64(fields[1], PMUGATE_MARKER_REGIONS_MAX - 1, &v) || v != f->n_regions ||
                    !marker_name_valid(fields[2]))
                        return refuse(reason, size, line, "bad region line");
                f->regions[f->n_regions] = strdup(fields[2]);
                if (!f->regions[f->n_regions])
                        return -ENOMEM;
                f->n_regions++;
                return 0;
        }
        return refuse(reason, size, line, "unknown line '%.40s'", fields[0]);
}

int marker_file_parse(const char *text, size_t size, size_t n_columns, MarkerFile **ret, char *reterr_reason,
                      size_t reason_size) {
        _cleanup_(marker_file_freep) MarkerFile *f = NULL;
        char line[LINE_MAX_BYTES];
        size_t number = 0, at = 0;
        uint64_t v;
        int r;

        if (size > PMUGATE_MARKER_FILE_SIZE_MAX || n_columns > MARKER_COLUMNS_MAX)
                return refuse(reterr_reason, reason_size, 0, "larger than %u bytes",
                              PMUGATE_MARKER_FILE_SIZE_MAX);
        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->regions = calloc(PMUGATE_MARKER_REGIONS_MAX, sizeof(char *));
        f->errors = calloc(MARKER_FILE_ERRORS_MAX, sizeof(MarkerError));
        if (!f->regions || !f->errors)
                return -ENOMEM;
        while (at < size) {
                const char *nl = memchr(text + at, '\n', size - at);
                size_t len;

                number++;
                if (!nl)
                        return refuse(reterr_reason, reason_size, number,
                                      "the file ends inside a line (cut short?)");
                len = (size_t) (nl - (text + at));
                if (len >= sizeof(line) || memchr(text + at, '\0', len))
                        return refuse(reterr_reason, reason_size, number,
                                      "line too long or with a NUL byte");
                memcpy(line, text + at, len);
                line[len] = '\0';
                at += len + 1;
                if (number == 1) {
                        if (strcmp(line, MARKER_FILE_MAGIC) != 0)
                                return refuse(reterr_reason, reason_size, number,
                                              "not a pmugate marker file");
                } else if (number == 2 && strncmp(line, "failed ", 7) == 0) {
                        for (const char *p = line + 7; *p; p++)
                                if ((unsigned char) *p < ' ' || *p == 0x7f)
                                        return refuse(reterr_reason, reason_size, number,
                                                      "control character in the failure");
                        if (reterr_reason && reason_size > 0)
                                (void) snprintf(reterr_reason, reason_size,
                                                "the program's markers could not start: %.300s", line + 7);
                        return -ECANCELED;
                } else if (number == 2) {
                        if (strcmp(line, "mode daemon") != 0 && strcmp(line, "mode rdpmc") != 0 &&
                            strcmp(line, "mode perf") != 0)
                                return refuse(reterr_reason, reason_size, number, "bad read mode");
                        (void) snprintf(f->mode, sizeof(f->mode), "%.6s", line + 5);
                } else if (number == 3) {
                        if (strncmp(line, "columns ", 8) != 0 || !to_u64(line + 8, MARKER_COLUMNS_MAX, &v) ||
                            v != n_columns)
                                return refuse(reterr_reason, reason_size, number,
                                              "the program read other registers than the runner programmed");
                        f->n_columns = n_columns;
                } else {
                        r = parse_line(f, line, number, reterr_reason, reason_size);
                        if (r < 0)
                                return r;
                }
        }
        if (number < 3)
                return refuse(reterr_reason, reason_size, number, "the file ends before its header does");
        *ret = TAKE_PTR(f);
        return 0;
}

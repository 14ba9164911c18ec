/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate-exporter: one log line per distinct reason per interval, with a count
 */
#include <string.h>

#include "log-limit.h"
#include "macro.h"

static FILE *output(const LogLimit *l) {
        return l->out ?: stderr;
}

static uint64_t interval(const LogLimit *l) {
        return l->interval_usec ?: PMUGATE_EXPORTER_LOG_INTERVAL_USEC;
}

static void report_repeats(LogLimit *l, LogReason *r, uint64_t now_usec) {
        fprintf(output(l), "pmugate-exporter: %s (%u more time%s in the last %.0f s)\n", r->last, r->repeats,
                r->repeats == 1 ? "" : "s", (double) (now_usec - r->since_usec) / 1e6);
        (void) fflush(output(l));
}

void log_limit_flush(LogLimit *l, uint64_t now_usec) {
        for (size_t i = 0; i < ELEMENTSOF(l->reasons); i++) {
                LogReason *r = &l->reasons[i];

                if (!r->key || now_usec - r->since_usec < interval(l))
                        continue;
                if (r->repeats == 0) {
                        *r = (LogReason) {};
                        continue;
                }
                /* The count's line is this interval's line: later repeats count towards the next. */
                report_repeats(l, r, now_usec);
                r->since_usec = now_usec;
                r->repeats = 0;
        }
}

bool log_limit(LogLimit *l, const char *key, const char *text, uint64_t now_usec) {
        LogReason *r = NULL, *oldest = &l->reasons[0];

        log_limit_flush(l, now_usec);
        for (size_t i = 0; i < ELEMENTSOF(l->reasons) && !r; i++) {
                LogReason *c = &l->reasons[i];

                if (c->key && strcmp(c->key, key) == 0)
                        r = c;
                else if (!c->key) {
                        if (oldest->key)
                                oldest = c;
                } else if (oldest->key && c->since_usec < oldest->since_usec)
                        oldest = c;
        }
        if (r) {
                r->repeats++;
                (void) snprintf(r->last, sizeof(r->last), "%s", text);
                return false;
        }
        /* A new reason when every slot is taken evicts the one counting longest, its count
         * reported first, rather than going unlogged. */
        if (oldest->key && oldest->repeats > 0)
                report_repeats(l, oldest, now_usec);
        *oldest = (LogReason) { .key = key, .since_usec = now_usec };
        fprintf(output(l), "pmugate-exporter: %s\n", text);
        (void) fflush(output(l));
        return true;
}

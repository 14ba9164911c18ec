/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: audit records as logfmt lines and the per-uid rate limit, which counts what it
 * holds back instead of dropping it silently
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "pmugate-limits.h"

static size_t count_lines(const char *path, const char *needle) {
        FILE *f = fopen(path, "re");
        char line[2048];
        size_t n = 0;

        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (!needle || strstr(line, needle))
                        n++;
        fclose(f);
        return n;
}

static void test_records_and_rate_limit(void **state) {
        char path[] = "/tmp/pmugate-test-audit-XXXXXX";
        int fd = mkstemp(path);
        Audit *a = NULL;
        AuditStats st;
        AuditRecord deny = {
                .event = "deny", .verdict = "denied", .uid = 4242, .gid = 4242, .pid = 99,
                .op = "batch", .code = "reg-forbidden", .reason = "MSR 0x600 is on the \"never\" list",
                .cpus = "0", .regs = "0x600",
        };
        AuditRecord other = deny;

        (void) state;
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(audit_new(path, &a), 0);

        for (unsigned i = 0; i < PMUGATE_AUDIT_BURST + 30; i++)
                audit_emit(a, &deny);
        other.uid = 4243;
        audit_emit(a, &other);   /* another user's records are not held back by this storm */

        audit_stats(a, &st);
        assert_int_equal(st.emitted, PMUGATE_AUDIT_BURST + 1);
        assert_int_equal(st.suppressed, 30);
        assert_int_equal(st.sink, AUDIT_SINK_FILE);

        a = audit_free(a);      /* reports what was held back */
        assert_int_equal(count_lines(path, "uid=4242 gid=4242 pid=99"), PMUGATE_AUDIT_BURST);
        assert_int_equal(count_lines(path, "uid=4243"), 1);
        assert_int_equal(count_lines(path, "event=suppressed"), 1);
        assert_int_equal(count_lines(path, "count=30"), 1);
        assert_int_equal(count_lines(path, "reason=\"MSR 0x600 is on the \\\"never\\\" list\""), PMUGATE_AUDIT_BURST + 1);
        unlink(path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_records_and_rate_limit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

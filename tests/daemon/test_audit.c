/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: audit records as logfmt lines and the per-uid rate limit, which counts what it
 * holds back instead of dropping it silently
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit-fold.h"
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

static uint64_t fake_now;

static uint64_t fake_clock(void) {
        return fake_now;
}

static Audit *audit_at(const char *path) {
        Audit *a = NULL;

        assert_int_equal(audit_new(path, &a), 0);
        fake_now = 1000000;
        audit_set_clock(a, fake_clock);
        return a;
}

static void deny(Audit *a, uid_t uid) {
        AuditRecord rec = { .event = "deny", .verdict = "denied", .uid = uid, .gid = uid, .pid = 7,
                            .op = "batch", .code = "reg-forbidden" };

        audit_emit(a, &rec);
}

/* Lines reporting, as a record of their own, count records of uid held back. */
static size_t count_suppressed(const char *path, uid_t uid, uint64_t count) {
        FILE *f = fopen(path, "re");
        char line[2048], who[64], how_many[64];
        size_t n = 0;

        assert_non_null(f);
        (void) snprintf(who, sizeof(who), "event=suppressed verdict=rate-limited uid=%u ", (unsigned) uid);
        (void) snprintf(how_many, sizeof(how_many), " count=%llu ", (unsigned long long) count);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, who) && strstr(line, how_many))
                        n++;
        fclose(f);
        return n;
}

static char *temp_log(void) {
        char *path = strdup("/tmp/pmugate-test-audit-XXXXXX");
        int fd;

        assert_non_null(path);
        fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        return path;
}

/* Two uids 64 apart used to share a bucket, and each record of one reset the other's budget. */
static void test_uids_never_share_a_budget(void **state) {
        char *path = temp_log();
        Audit *a = audit_at(path);
        AuditStats st;

        (void) state;
        for (unsigned i = 0; i < PMUGATE_AUDIT_BURST + 10; i++) {
                deny(a, 4242);
                deny(a, 4242 + 64);
        }
        audit_stats(a, &st);
        assert_int_equal(st.emitted, 2 * PMUGATE_AUDIT_BURST);
        assert_int_equal(st.suppressed, 20);
        assert_false(audit_would_emit(a, 4242));
        assert_true(audit_would_emit(a, 4243));

        a = audit_free(a);
        /* What was held back is reported with the uid it belongs to. */
        assert_int_equal(count_suppressed(path, 4242, 10), 1);
        assert_int_equal(count_suppressed(path, 4242 + 64, 10), 1);
        assert_int_equal(count_lines(path, "event=suppressed"), 2);
        unlink(path);
        free(path);
}

/* Many uids together are held to the global limit; each one's held-back count is its own. */
static void test_global_limit(void **state) {
        const unsigned fill = PMUGATE_AUDIT_GLOBAL_BURST / PMUGATE_AUDIT_BURST, extra = 5;
        char *path = temp_log(), carried[160];
        Audit *a = audit_at(path);
        AuditStats st;

        (void) state;
        for (unsigned u = 0; u < fill + extra; u++)
                for (unsigned i = 0; i < PMUGATE_AUDIT_BURST; i++)
                        deny(a, 5000 + u);
        audit_stats(a, &st);
        assert_int_equal(st.emitted, PMUGATE_AUDIT_GLOBAL_BURST);
        assert_int_equal(st.suppressed, extra * PMUGATE_AUDIT_BURST);
        assert_false(audit_would_emit(a, 99999));

        /* The next interval: the held-back count rides on the uid's next record. */
        fake_now += PMUGATE_AUDIT_INTERVAL_USEC;
        assert_true(audit_would_emit(a, 5000 + fill));
        deny(a, 5000 + fill);
        a = audit_free(a);
        (void) snprintf(carried, sizeof(carried),
                        "uid=%u gid=%u pid=7 op=batch code=reg-forbidden suppressed=%u", 5000 + fill,
                        5000 + fill, PMUGATE_AUDIT_BURST);
        assert_int_equal(count_lines(path, carried), 1);
        for (unsigned u = fill + 1; u < fill + extra; u++)
                assert_int_equal(count_suppressed(path, 5000 + u, PMUGATE_AUDIT_BURST), 1);
        assert_int_equal(count_lines(path, "event=suppressed"), extra - 1);
        unlink(path);
        free(path);
}

/* More uids than the table tracks share one bucket, so memory and records stay bounded; once
 * the tracked uids' interval is over their slots are reused. */
static void test_untracked_uids_share_one_budget(void **state) {
        char *path = temp_log();
        Audit *a = audit_at(path);
        AuditStats st;

        (void) state;
        for (unsigned u = 0; u < PMUGATE_AUDIT_UIDS_MAX; u++)
                deny(a, 10000 + u);
        for (unsigned u = 0; u < 100; u++)
                deny(a, 20000 + u);
        audit_stats(a, &st);
        assert_int_equal(st.emitted, PMUGATE_AUDIT_UIDS_MAX + PMUGATE_AUDIT_BURST);
        assert_int_equal(st.suppressed, 100 - PMUGATE_AUDIT_BURST);

        /* Half an interval later nothing has expired: still the shared bucket. */
        fake_now += PMUGATE_AUDIT_INTERVAL_USEC / 2;
        deny(a, 30000);
        audit_stats(a, &st);
        assert_int_equal(st.suppressed, 100 - PMUGATE_AUDIT_BURST + 1);

        /* A whole interval later: the shared bucket's count is reported under no uid, and a new
         * uid gets a budget of its own again. */
        fake_now += PMUGATE_AUDIT_INTERVAL_USEC;
        for (unsigned i = 0; i < PMUGATE_AUDIT_BURST + 3; i++)
                deny(a, 40000);
        audit_stats(a, &st);
        assert_int_equal(st.emitted, PMUGATE_AUDIT_UIDS_MAX + 2 * PMUGATE_AUDIT_BURST + 1);
        assert_int_equal(count_suppressed(path, (uid_t) -1, 100 - PMUGATE_AUDIT_BURST + 1), 1);
        a = audit_free(a);
        assert_int_equal(count_suppressed(path, 40000, 3), 1);
        assert_int_equal(count_lines(path, "event=suppressed"), 2);
        unlink(path);
        free(path);
}

/* The audit log is opened by root at a path an admin named: nothing prepared at that path
 * steers root's writes. */
static void test_log_file_must_be_roots_own(void **state) {
        char dir[] = "/tmp/pmugate-test-audit-dir-XXXXXX", path[256], target[256], other[256];
        struct stat st;
        Audit *a = NULL;
        int fd;

        (void) state;
        assert_non_null(mkdtemp(dir));
        (void) snprintf(path, sizeof(path), "%s/audit.log", dir);
        (void) snprintf(target, sizeof(target), "%s/target", dir);
        (void) snprintf(other, sizeof(other), "%s/other", dir);

        /* A symbolic link, dangling or not, is not followed. */
        fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(symlink(target, path), 0);
        assert_int_equal(audit_new(path, &a), -ELOOP);
        assert_null(a);
        assert_int_equal(stat(target, &st), 0);
        assert_int_equal(st.st_size, 0);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("/nonexistent/pmugate-audit", path), 0);
        assert_int_equal(audit_new(path, &a), -ELOOP);
        assert_int_equal(unlink(path), 0);

        /* A FIFO is refused without waiting for a reader. */
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_true(audit_new(path, &a) < 0);
        assert_int_equal(unlink(path), 0);

        /* Someone else's file, or one others may write. */
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fchown(fd, 4242, 4242), 0);
        close(fd);
        assert_int_equal(audit_new(path, &a), -EPERM);
        assert_int_equal(chown(path, geteuid(), getegid()), 0);
        assert_int_equal(chmod(path, 0620), 0);
        assert_int_equal(audit_new(path, &a), -EPERM);
        assert_int_equal(chmod(path, 0602), 0);
        assert_int_equal(audit_new(path, &a), -EPERM);

        /* A second name for another file. */
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(link(path, other), 0);
        assert_int_equal(audit_new(path, &a), -EPERM);
        assert_int_equal(unlink(other), 0);
        assert_null(a);

        /* Root's own file, readable by its group, is appended to. */
        assert_int_equal(chmod(path, 0640), 0);
        assert_int_equal(audit_new(path, &a), 0);
        audit_emit(a, &(AuditRecord) { .event = "test", .verdict = "allowed", .uid = 1 });
        a = audit_free(a);
        assert_int_equal(count_lines(path, "event=test"), 1);
        assert_int_equal(unlink(path), 0);

        /* A missing file is created, with mode 0640 at most. */
        assert_int_equal(audit_new(path, &a), 0);
        a = audit_free(a);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07137, 0);
        assert_int_equal(st.st_uid, geteuid());

        assert_int_equal(unlink(path), 0);
        assert_int_equal(unlink(target), 0);
        assert_int_equal(rmdir(dir), 0);
}

/* A monitoring session: each pattern of CPUs and registers audited once, repeats counted; an
 * agent that keeps writing new patterns is audited in full once the table is full. */
static void test_fold_repeated_writes(void **state) {
        AuditFold f = {};
        char regs[32];

        (void) state;
        assert_true(audit_fold_first(&f, "0-3", "0x38f,0x186", 40, 0));
        assert_true(audit_fold_first(&f, "0-3", "0x38f,0x30c,0x329", 16, 0));
        for (unsigned i = 0; i < 100; i++)
                assert_false(audit_fold_first(&f, "0-3", "0x38f,0x30c,0x329", 16, 0));
        assert_int_equal(f.folded_batches, 100);
        assert_int_equal(f.folded_writes, 1600);
        /* other CPUs, or the same text split differently, are another pattern */
        assert_true(audit_fold_first(&f, "0-2", "0x38f,0x30c,0x329", 12, 0));
        assert_true(audit_fold_first(&f, "0-3,", "0x38f,0x30c,0x329", 16, 0));
        while (f.n_patterns < PMUGATE_AUDIT_FOLD_PATTERNS_MAX) {
                (void) snprintf(regs, sizeof(regs), "0x%zx", 0x186 + f.n_patterns);
                assert_true(audit_fold_first(&f, "0", regs, 1, 0));
        }
        assert_true(audit_fold_first(&f, "0", "0x1000", 1, 0));
        assert_true(audit_fold_first(&f, "0", "0x1000", 1, 0));    /* the table is full: audited */
        assert_false(audit_fold_first(&f, "0-3", "0x38f,0x30c,0x329", 16, 0));
        assert_int_equal(f.folded_batches, 101);

        /* a long session reports its count hourly, counted from the first repeat since */
        assert_false(audit_fold_report_due(&f, PMUGATE_AUDIT_FOLD_REPORT_USEC - 1));
        assert_true(audit_fold_report_due(&f, PMUGATE_AUDIT_FOLD_REPORT_USEC));
        audit_fold_reported(&f);
        assert_int_equal(f.folded_batches, 0);
        assert_false(audit_fold_report_due(&f, 10 * PMUGATE_AUDIT_FOLD_REPORT_USEC));
        assert_false(audit_fold_first(&f, "0-3", "0x38f,0x30c,0x329", 16,
                                      20 * PMUGATE_AUDIT_FOLD_REPORT_USEC));
        assert_false(audit_fold_report_due(&f, 21 * PMUGATE_AUDIT_FOLD_REPORT_USEC - 1));
        assert_true(audit_fold_report_due(&f, 21 * PMUGATE_AUDIT_FOLD_REPORT_USEC));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_records_and_rate_limit),
                cmocka_unit_test(test_log_file_must_be_roots_own),
                cmocka_unit_test(test_uids_never_share_a_budget),
                cmocka_unit_test(test_global_limit),
                cmocka_unit_test(test_untracked_uids_share_one_budget),
                cmocka_unit_test(test_fold_repeated_writes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: lease journals as an attacker who can write the state directory plants them.
 * One table row per planted line with the verdict it must get; the file's header, checksum,
 * torn and overlong journals; what a restore writes; writing a journal and reading it back;
 * recovery of a whole state directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "backend/sim/backend-sim.h"
#include "macro.h"
#include "pmu/clean.h"
#include "pmu/journal.h"
#include "state-dir.h"
#include "tmpdir_fixture.h"

#define BOOT "6b1e8c7a-1f3d-4c55-9a0e-2b7d4e6f8a90"
#define OTHER_BOOT "0c0ffee0-0000-4000-8000-000000000000"
#define OFFLINE_CPU 3U
#define EVTSEL0 0x186U
#define PMC0 0xC1U
#define LSTAR 0xC0000082U
#define EVTSEL_MASK UINT64_C(0xFFC7FFFF)

typedef struct Model {
        Machine *machine;
        Backend *backend;
        Allowlist *allowlist;
} Model;

static Model spr, skx;

static Model model_new(const char *key, const char *file) {
        char path[PATH_MAX], reason[256] = "";
        const char *dir = getenv("PMUGATE_ALLOWLIST_DIR");
        Model m = {};

        if (!dir || !*dir)
                fail_msg("PMUGATE_ALLOWLIST_DIR is not set; it must point at policy/allowlists");
        assert_int_equal(backend_sim_new(key, NULL, &m.machine, &m.backend), 0);
        (void) snprintf(path, sizeof(path), "%s/%s", dir, file);
        if (allowlist_parse_file(path, &m.allowlist, NULL, reason, sizeof(reason)) < 0)
                fail_msg("%s: %s", path, reason);
        return m;
}

static void model_free(Model *m) {
        backend_free(m->backend);
        machine_free(m->machine);
        allowlist_free(m->allowlist);
        *m = (Model) {};
}

static int setup(void **state) {
        (void) state;
        spr = model_new("spr", "intel-spr.conf");
        skx = model_new("skx", "intel-skx.conf");
        assert_true(spr.machine->n_cpus > OFFLINE_CPU);
        assert_true(skx.machine->n_units > 0);
        spr.machine->cpus[OFFLINE_CPU].online = false;
        return 0;
}

static int teardown(void **state) {
        (void) state;
        model_free(&spr);
        model_free(&skx);
        return 0;
}

/* A sealed record appended to buf. */
static void add_record(char *buf, size_t size, const char *text) {
        size_t len = strlen(buf);

        assert_true(state_record_format(buf + len, size - len, "%s", text) > 0);
}

static void add_header(char *buf, size_t size, const char *boot, unsigned cpu) {
        char text[256];

        (void) snprintf(text, sizeof(text),
                        "pmugate-journal 1 boot=%s cpu=%u uid=4242 pid=77 role=user job=42", boot, cpu);
        buf[0] = '\0';
        add_record(buf, size, text);
}

typedef enum Form {
        SEALED,         /* as the daemon (or an attacker who computes the checksum) writes it */
        BAD_SEAL,       /* the checksum is off by one bit */
        UNSEALED,       /* the pre-checksum format */
        TORN,           /* sealed but without its newline: the last write did not finish */
} Form;

typedef struct Row {
        Model *model;
        const char *text;
        Form form;
        JournalVerdict expect;
} Row;

static const Row rows[] = {
        /* What a compromised daemon would plant to regain root */
        { &spr, "msr 0 0xc0000082 8 0 0x4141414141414141", SEALED, JOURNAL_NEVER_LIST },   /* LSTAR */
        { &spr, "msr 0 0x600 8 0 0x4141414141414141", SEALED, JOURNAL_NEVER_LIST },        /* DS_AREA */
        { &spr, "msr 0 0x1d9 8 0 0x4141414141414141", SEALED, JOURNAL_NEVER_LIST },        /* DEBUGCTL */
        { &spr, "msr 0 0x1a0 8 0 0x1", SEALED, JOURNAL_NEVER_LIST },                       /* MISC_ENABLE */
        { &spr, "msr 9999 0xc0000082 8 0 0x1", SEALED, JOURNAL_NEVER_LIST },       /* never-list first */
        /* Registers an allowed client may write, and what the allowlist refuses */
        { &spr, "msr 0 0x186 8 0 0x43003c", SEALED, JOURNAL_RESTORE },
        { &spr, "msr 0 0x186 8 0 0x73003c", SEALED, JOURNAL_RESTORE },             /* INT, ANY: masked */
        { &spr, "msr 0 0xc1 8 1 0x5", SEALED, JOURNAL_RESTORE },                   /* a counter: zeroed */
        { &spr, "msr 0 0x38f 8 0 0xffffffffffffffff", SEALED, JOURNAL_RESTORE },
        { &spr, "msr 0 0x1234 8 0 0x1", SEALED, JOURNAL_NOT_ALLOWED },
        { &spr, "msr 0 0x390 8 0 0x1", SEALED, JOURNAL_ACTION },                           /* STATUS_RESET */
        { &spr, "msr 0 0x38e 8 0 0x1", SEALED, JOURNAL_READ_ONLY },                /* GLOBAL_STATUS */
        { &spr, "msr 0 0x611 8 1 0x1", SEALED, JOURNAL_READ_ONLY },                        /* RAPL energy */
        { &spr, "msr 0 0x186 4 0 0x1", SEALED, JOURNAL_BAD_WIDTH },
        /* The machine */
        { &spr, "msr 9999 0x186 8 0 0x1", SEALED, JOURNAL_NO_SUCH_CPU },
        { &spr, "msr 3 0x186 8 0 0x1", SEALED, JOURNAL_CPU_OFFLINE },
        { &skx, "pci 0 0xd8 4 0 0xffffffff", SEALED, JOURNAL_RESTORE },
        { &skx, "pci 0 0xa0 8 1 0x0", SEALED, JOURNAL_RESTORE },                            /* IMC counter */
        { &skx, "pci 4096 0xd8 4 0 0x1", SEALED, JOURNAL_NO_SUCH_UNIT },
        { &skx, "pci 0 0xd8 8 0 0x1", SEALED, JOURNAL_BAD_WIDTH },
        { &skx, "pci 0 0xda 4 0 0x1", SEALED, JOURNAL_NOT_ALLOWED },                        /* misaligned */
        { &skx, "pci 0 0xf8 4 0 0x1", SEALED, JOURNAL_READ_ONLY },                          /* BOX_STATUS */
        { &skx, "pci 0 0x0 4 0 0x1", SEALED, JOURNAL_NEVER_LIST },  /* a configuration header */
        { &spr, "pci 0 0xd8 4 0 0x1", SEALED, JOURNAL_NO_SUCH_UNIT },              /* spr: no units */
        /* Checksums */
        { &spr, "msr 0 0x186 8 0 0x43003c", BAD_SEAL, JOURNAL_BAD_CHECKSUM },
        { &spr, "msr 0 0x186 8 0 0x43003c", UNSEALED, JOURNAL_BAD_CHECKSUM },
        { &spr, "msr 0 0x186 8 0 0x43003c", TORN, JOURNAL_TORN },
        { &spr, "", UNSEALED, JOURNAL_BAD_CHECKSUM },
        /* Syntax */
        { &spr, "msr 0 0x186 8 0", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 0x186 8 0 0x1 0x2", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr -1 0x186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 01 0x186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 4294967296 0x186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 0x100000186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 0x186 16 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 0x186 8 256 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 0x186 8 0 0x10000000000000000", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 0x186 8 0 0xg", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr  0 0x186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr 0 0x186 8 0 0x1 ", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "msr\t0 0x186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "io 0 0x186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "MSR 0 0x186 8 0 0x1", SEALED, JOURNAL_BAD_SYNTAX },
        { &spr, "# lease uid=0 pid=1 role=admin job=-", SEALED, JOURNAL_BAD_SYNTAX },
};

static JournalVerdict verdict_of(const Row *row, char *why, size_t why_size) {
        _cleanup_(journal_done) Journal j = {};
        const AllowEntry *e = NULL;
        char text[1024], reason[256] = "";
        size_t len;

        add_header(text, sizeof(text), BOOT, 0);
        len = strlen(text);
        switch (row->form) {
        case SEALED:
        case TORN:
                add_record(text, sizeof(text), row->text);
                if (row->form == TORN)
                        text[strlen(text) - 1] = '\0';
                break;
        case BAD_SEAL:
                add_record(text, sizeof(text), row->text);
                text[strlen(text) - 2] ^= 1;     /* the last hex digit of the checksum */
                break;
        case UNSEALED:
                (void) snprintf(text + len, sizeof(text) - len, "%s\n", row->text);
                break;
        }
        if (journal_parse(text, strlen(text), &j, reason, sizeof(reason)) != 0)
                fail_msg("'%s': the journal does not parse: %s", row->text, reason);
        assert_int_equal(j.n_lines, 1);
        assert_int_equal(j.lines[0].lineno, 2);
        if (j.lines[0].verdict != JOURNAL_RESTORE)
                return j.lines[0].verdict;
        return journal_check(row->model->machine, row->model->allowlist, &j.lines[0].entry, &e, why,
                             why_size);
}

static void test_planted_lines(void **state) {
        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                char why[256] = "";
                JournalVerdict v = verdict_of(&rows[i], why, sizeof(why));

                if (v != rows[i].expect)
                        fail_msg("row %zu '%s': verdict %s, expected %s (%s)", i, rows[i].text,
                                 journal_verdict_to_string(v), journal_verdict_to_string(rows[i].expect),
                                 why);
        }
}

static void test_reasons(void **state) {
        const AllowEntry *e = NULL;
        LeaseEntry lstar = { .target = 0, .reg = LSTAR, .original = 1, .width = 8 };
        char why[256] = "";

        (void) state;
        assert_int_equal(journal_check(spr.machine, spr.allowlist, &lstar, &e, why, sizeof(why)),
                         JOURNAL_NEVER_LIST);
        assert_non_null(strstr(why, "MSR_LSTAR"));
        assert_null(e);
        assert_string_equal(journal_verdict_to_string(JOURNAL_NEVER_LIST), "never-list");
        for (int v = 0; v < _JOURNAL_VERDICT_MAX; v++)
                assert_non_null(journal_verdict_to_string((JournalVerdict) v));
        assert_null(journal_verdict_to_string(_JOURNAL_VERDICT_MAX));
}

static void test_headers(void **state) {
        static const char *const bad[] = {
                "pmugate-journal 2 boot=" BOOT " cpu=0 uid=0 pid=1 role=user job=-",
                "pmugate-journal 1 boot=" BOOT " cpu=0 uid=0 pid=1 role=user",
                "pmugate-journal 1 boot=not-a-boot-id cpu=0 uid=0 pid=1 role=user job=-",
                "pmugate-journal 1 boot=" BOOT " cpu=8192 uid=0 pid=1 role=user job=-",
                "pmugate-journal 1 boot=" BOOT " cpu=0 uid=4294967295 pid=1 role=user job=-",
                "pmugate-journal 1 boot=" BOOT " cpu=0 uid=0 pid=1 role=user job=a/b",
                "pmugate-journal 1 boot=" BOOT " cpu=0 uid=0 pid=1 role=a-role-name-too-long job=-",
                "pmugate-journal 1 cpu=0 boot=" BOOT " uid=0 pid=1 role=user job=-",
                "msr 0 0x186 8 0 0x1",
        };
        _cleanup_(journal_done) Journal j = {};
        char text[512], reason[256];

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                text[0] = '\0';
                add_record(text, sizeof(text), bad[i]);
                assert_int_equal(journal_parse(text, strlen(text), &j, reason, sizeof(reason)), -EBADMSG);
        }
        assert_int_equal(journal_parse("", 0, &j, reason, sizeof(reason)), -EBADMSG);
        /* A header whose checksum does not match is not a header. */
        add_header(text, sizeof(text), BOOT, 0);
        text[strlen(text) - 2] ^= 1;
        assert_int_equal(journal_parse(text, strlen(text), &j, reason, sizeof(reason)), -EBADMSG);
        assert_non_null(strstr(reason, "checksum"));

        add_header(text, sizeof(text), BOOT, 5);
        assert_int_equal(journal_parse(text, strlen(text), &j, reason, sizeof(reason)), 0);
        assert_string_equal(j.header.boot_id, BOOT);
        assert_int_equal(j.header.cpu, 5);
        assert_int_equal(j.header.uid, 4242);
        assert_int_equal(j.header.pid, 77);
        assert_string_equal(j.header.role, "user");
        assert_string_equal(j.header.job, "42");
        assert_int_equal(j.n_lines, 0);
}

static void test_too_many(void **state) {
        _cleanup_(journal_done) Journal j = {};
        _cleanup_free_ char *text = NULL;
        size_t size = PMUGATE_JOURNAL_FILE_SIZE_MAX * 2, extra = 40;
        char reason[256];

        (void) state;
        text = malloc(size);
        assert_non_null(text);
        add_header(text, size, BOOT, 0);
        for (size_t i = 0; i < PMUGATE_LEASE_JOURNAL_MAX + extra; i++)
                add_record(text, size, "msr 0 0x186 8 0 0x1");
        assert_int_equal(journal_parse(text, strlen(text), &j, reason, sizeof(reason)), 0);
        assert_int_equal(j.n_lines, PMUGATE_LEASE_JOURNAL_MAX);
        assert_int_equal(j.n_dropped, extra);
}

static void test_restore_value(void **state) {
        const AllowEntry *evtsel = allowlist_find_msr(spr.allowlist, EVTSEL0);
        const AllowEntry *pmc = allowlist_find_msr(spr.allowlist, PMC0);
        const AllowEntry *imc_ctl = allowlist_find_pci(skx.allowlist, skx.machine->units[0].vendor,
                                                       skx.machine->units[0].device, 0xD8);
        uint64_t outside = UINT64_C(0x380000) | UINT64_C(0xFF00000000000000);

        (void) state;
        assert_non_null(evtsel);
        assert_non_null(pmc);
        assert_non_null(imc_ctl);
        assert_int_equal(evtsel->write_mask, EVTSEL_MASK);
        /* Bits inside the mask come from the journal, but never EN, INT or PC; the rest is the
         * clean value (0), not whatever they hold now (clean.h). */
        assert_int_equal(clean_restore_value(evtsel, clean_find(clean_table_for(spr.machine->cpu_model), EVTSEL0, false),
                                             outside, UINT64_MAX, 0),
                         EVTSEL_MASK & ~UINT64_C(0x580000));
        assert_int_equal(clean_restore_value(evtsel, clean_find(clean_table_for(spr.machine->cpu_model), EVTSEL0, false),
                                             UINT64_MAX, 0, 0), 0);
        /* Counters go to zero whatever the journal says. */
        assert_int_equal(clean_restore_value(pmc, NULL, 1234, UINT64_C(0x4141414141414141), 0), 0);
        /* A 4-byte register never gets bits above its width. */
        assert_int_equal(clean_restore_value(imc_ctl, NULL, 0, UINT64_MAX, 0), imc_ctl->write_mask & UINT32_MAX);
}

static StateDir open_state(void) {
        StateDir d = { .boot_id = BOOT };

        d.fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(d.fd >= 0);
        return d;
}

static void put_file(const char *name, const char *text) {
        char path[PATH_MAX];
        FILE *f;

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static bool exists(const char *name) {
        char path[PATH_MAX];

        (void) snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        return access(path, F_OK) == 0;
}

static void test_write_and_read_back(void **state) {
        StateDir d = open_state();
        JournalWriter *w = NULL;
        JournalHolder h = { .uid = 4242, .pid = 99, .role = "user", .job = "bad job id" };
        LeaseEntry entries[] = {
                { .target = 1, .reg = PMC0, .original = 0, .width = 8, .flags = 1 },
                { .target = 1, .reg = EVTSEL0, .original = 0x43003C, .width = 8 },
                { .target = 2, .reg = 0xD8, .original = UINT32_MAX, .width = 4, .pci = true },
        };
        _cleanup_(journal_done) Journal j = {};
        _cleanup_free_ char *data = NULL;
        char reason[256];
        size_t size;

        (void) state;
        /* A journal left there is one whose restore failed: it is never replaced. */
        put_file("lease-cpu1", "whatever was there before\n");
        assert_int_equal(journal_create(&d, 1, &h, &w), -EEXIST);
        assert_null(w);
        assert_true(exists("lease-cpu1"));
        assert_int_equal(unlinkat(d.fd, "lease-cpu1", 0), 0);
        assert_int_equal(journal_create(&d, 1, &h, &w), 0);
        for (size_t i = 0; i < ELEMENTSOF(entries); i++)
                assert_int_equal(journal_append(w, &entries[i]), 0);
        w = journal_close(w, /* remove= */ false);

        assert_int_equal(state_file_read(&d, "lease-cpu1", PMUGATE_JOURNAL_FILE_SIZE_MAX, &data, &size,
                                         reason, sizeof(reason)), 0);
        assert_null(strstr(data, "whatever"));
        assert_int_equal(journal_parse(data, size, &j, reason, sizeof(reason)), 0);
        assert_string_equal(j.header.boot_id, BOOT);
        assert_int_equal(j.header.cpu, 1);
        assert_string_equal(j.header.job, "");  /* not a valid job id: not written */
        assert_int_equal(j.n_lines, ELEMENTSOF(entries));
        for (size_t i = 0; i < ELEMENTSOF(entries); i++) {
                assert_int_equal(j.lines[i].verdict, JOURNAL_RESTORE);
                assert_memory_equal(&j.lines[i].entry, &entries[i], sizeof(LeaseEntry));
        }

        assert_int_equal(journal_create(&d, 1, &h, &w), -EEXIST);
        assert_int_equal(unlinkat(d.fd, "lease-cpu1", 0), 0);
        assert_int_equal(journal_create(&d, 1, &h, &w), 0);
        w = journal_close(w, /* remove= */ true);
        assert_false(exists("lease-cpu1"));
        close(d.fd);
}

static void test_restore_through_backend(void **state) {
        _cleanup_(journal_done) Journal j = {};
        JournalContext ctx = { .machine = spr.machine, .allowlist = spr.allowlist, .backend = spr.backend };
        JournalOutcome o;
        char text[1024], reason[256], line[128];
        uint64_t v = 0;

        (void) state;
        assert_int_equal(backend_msr_write(spr.backend, 0, EVTSEL0, 0x43003C), 0);
        assert_int_equal(backend_msr_write(spr.backend, 0, PMC0, 1234), 0);
        add_header(text, sizeof(text), BOOT, 0);
        add_record(text, sizeof(text), "msr 0 0xc1 8 1 0x4141");
        (void) snprintf(line, sizeof(line), "msr 0 0x%x 8 0 0x%" PRIx64, EVTSEL0,
                        UINT64_C(0x11) | UINT64_C(1) << 20);
        add_record(text, sizeof(text), line);
        add_record(text, sizeof(text), "msr 0 0xc0000082 8 0 0x4141414141414141");
        assert_int_equal(journal_parse(text, strlen(text), &j, reason, sizeof(reason)), 0);
        journal_restore(&ctx, "lease-cpu0", &j, &o);
        assert_int_equal(o.restored, 2);
        assert_int_equal(o.refused, 1);
        assert_int_equal(o.failed, 0);
        assert_int_equal(backend_msr_read(spr.backend, 0, EVTSEL0, &v), 0);
        assert_int_equal(v, 0x11);      /* INT stays clear: it is outside the mask */
        assert_int_equal(backend_msr_read(spr.backend, 0, PMC0, &v), 0);
        assert_int_equal(v, 0);
}

static int fail_msr_read(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret) {
        return -EIO;
}
static int fail_msr_write(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        return -EIO;
}
static int fail_pci_read(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret) {
        return -EIO;
}
static int fail_pci_write(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        return -EIO;
}
static const BackendVTable failing = {
        .name = "failing",
        .msr_read = fail_msr_read,
        .msr_write = fail_msr_write,
        .pci_read = fail_pci_read,
        .pci_write = fail_pci_write,
};

static size_t audit_lines(const char *path, const char *needle) {
        FILE *f = fopen(path, "re");
        char line[2048];
        size_t n = 0;

        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                n += strstr(line, needle) != NULL;
        fclose(f);
        return n;
}

static void test_recover(void **state) {
        StateDir d = open_state();
        char audit_path[PATH_MAX], text[1024], outside[PATH_MAX], path[PATH_MAX];
        Audit *audit = NULL;
        JournalContext ctx = { .dir = &d, .machine = spr.machine, .allowlist = spr.allowlist,
                               .backend = spr.backend };
        Backend broken = { .vtable = &failing, .machine = spr.machine };
        uint64_t v = 0;

        (void) state;
        (void) snprintf(audit_path, sizeof(audit_path), "%s.audit", tmpdir);
        assert_int_equal(audit_new(audit_path, &audit), 0);
        ctx.audit = audit;
        assert_int_equal(backend_msr_write(spr.backend, 1, EVTSEL0, 0x43003C), 0);
        assert_int_equal(backend_msr_write(spr.backend, 2, EVTSEL0, 0x43003C), 0);

        add_header(text, sizeof(text), BOOT, 1);
        add_record(text, sizeof(text), "msr 1 0x186 8 0 0x11");
        add_record(text, sizeof(text), "msr 1 0xc0000082 8 0 0x4141414141414141");
        put_file("lease-cpu1", text);
        add_header(text, sizeof(text), OTHER_BOOT, 2);
        add_record(text, sizeof(text), "msr 2 0x186 8 0 0x11");
        put_file("lease-cpu2", text);
        put_file("lease-cpu4", "not a journal\n");
        add_header(text, sizeof(text), BOOT, 9);
        put_file("lease-cpu5", text);           /* another CPU's header */
        put_file("lease-cpu06", text);          /* not a name the daemon makes */
        (void) snprintf(outside, sizeof(outside), "%s.outside", tmpdir);
        add_header(text, sizeof(text), BOOT, 7);
        add_record(text, sizeof(text), "msr 2 0x186 8 0 0x11");
        {
                FILE *f = fopen(outside, "we");

                assert_non_null(f);
                fputs(text, f);
                fclose(f);
        }
        (void) snprintf(path, sizeof(path), "%s/lease-cpu7", tmpdir);
        assert_int_equal(symlink(outside, path), 0);
        (void) snprintf(path, sizeof(path), "%s/lease-cpu6", tmpdir);
        assert_int_equal(mkfifo(path, 0600), 0);
        put_file("grants", "not a journal: not looked at\n");

        assert_int_equal(journal_recover(&ctx), 1);
        assert_int_equal(backend_msr_read(spr.backend, 1, EVTSEL0, &v), 0);
        assert_int_equal(v, 0x11);
        assert_int_equal(backend_msr_read(spr.backend, 2, EVTSEL0, &v), 0);
        assert_int_equal(v, 0x43003C);         /* another boot's journal restores nothing */
        assert_false(exists("lease-cpu1"));     /* restored: gone */
        assert_false(exists("lease-cpu2"));     /* another boot: discarded */
        assert_false(exists("lease-cpu4"));     /* no header: covers nothing, gone */
        assert_false(exists("lease-cpu5"));
        assert_true(exists("lease-cpu06"));     /* not the daemon's: left alone */
        assert_true(exists("lease-cpu6"));
        assert_true(exists("lease-cpu7"));
        assert_true(exists("grants"));
        audit = audit_free(audit);
        assert_int_equal(audit_lines(audit_path, "event=recover verdict=refused"), 6);
        assert_int_equal(audit_lines(audit_path, "code=never-list cpus=1 regs=0xc0000082"), 1);
        assert_int_equal(audit_lines(audit_path, "code=journal-file"), 5);

        /* A restore the device refuses keeps the journal for the next start. */
        add_header(text, sizeof(text), BOOT, 1);
        add_record(text, sizeof(text), "msr 1 0x186 8 0 0x11");
        put_file("lease-cpu1", text);
        ctx.backend = &broken;
        ctx.audit = NULL;
        assert_int_equal(journal_recover(&ctx), 0);
        assert_true(exists("lease-cpu1"));

        /* A retry (the next lease of CPU 1) reports a journal still kept, and restores and
         * removes it once the device takes the writes. Whatever is not the daemon's stays, so
         * its CPU stays unleased. */
        assert_int_equal(journal_retry(&ctx, 1), -EBUSY);
        assert_true(exists("lease-cpu1"));
        ctx.backend = spr.backend;
        assert_int_equal(backend_msr_write(spr.backend, 1, EVTSEL0, 0x43003C), 0);
        assert_int_equal(journal_retry(&ctx, 1), 0);
        assert_false(exists("lease-cpu1"));
        assert_int_equal(backend_msr_read(spr.backend, 1, EVTSEL0, &v), 0);
        assert_int_equal(v, 0x11);
        assert_int_equal(journal_retry(&ctx, 3), 0);
        assert_int_equal(journal_retry(&ctx, 7), -EBUSY);

        (void) unlink(audit_path);
        (void) unlink(outside);
        close(d.fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_planted_lines),
                cmocka_unit_test(test_reasons),
                cmocka_unit_test(test_headers),
                cmocka_unit_test(test_too_many),
                cmocka_unit_test(test_restore_value),
                cmocka_unit_test_setup_teardown(test_write_and_read_back, tmpdir_setup, tmpdir_teardown),
                cmocka_unit_test(test_restore_through_backend),
                cmocka_unit_test_setup_teardown(test_recover, tmpdir_setup, tmpdir_teardown),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lease journals: format, writing, parsing, validation and recovery
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "pmu/clean.h"
#include "pmu/journal.h"
#include "pmugate-limits.h"

#define JOURNAL_MAGIC "pmugate-journal"
#define JOURNAL_NAME_MAX (sizeof(STATE_JOURNAL_PREFIX) + 10)
/* The longest record: "pci 4294967295 0xffffffff 8 255 0xffffffffffffffff" and its seal */
#define JOURNAL_RECORD_MAX 80U
/* What the journal's own words and a file name wrap into a reason of PMUGATE_REASON_MAX. */
#define JOURNAL_WHY_MAX (PMUGATE_REASON_MAX - 128U)

_Static_assert(PMUGATE_LEASE_JOURNAL_MAX * JOURNAL_RECORD_MAX + 512U <= PMUGATE_JOURNAL_FILE_SIZE_MAX,
               "a full journal must fit the file size limit");

struct JournalWriter {
        int fd;
        int dir_fd;
        char name[JOURNAL_NAME_MAX];
};

static const char *const verdict_names[_JOURNAL_VERDICT_MAX] = {
        [JOURNAL_RESTORE] = "restore",
        [JOURNAL_TORN] = "torn",
        [JOURNAL_BAD_CHECKSUM] = "bad-checksum",
        [JOURNAL_BAD_SYNTAX] = "bad-syntax",
        [JOURNAL_TOO_MANY] = "too-many",
        [JOURNAL_NEVER_LIST] = "never-list",
        [JOURNAL_NOT_ALLOWED] = "not-allowed",
        [JOURNAL_BAD_WIDTH] = "bad-width",
        [JOURNAL_READ_ONLY] = "read-only",
        [JOURNAL_ACTION] = "action",
        [JOURNAL_NO_SUCH_CPU] = "no-such-cpu",
        [JOURNAL_CPU_OFFLINE] = "cpu-offline",
        [JOURNAL_NO_SUCH_UNIT] = "no-such-unit",
};

const char *journal_verdict_to_string(JournalVerdict v) {
        if ((unsigned) v >= _JOURNAL_VERDICT_MAX)
                return NULL;
        return verdict_names[v];
}

static bool journal_name_cpu(const char *name, uint32_t *ret);

static void journal_name(uint32_t cpu, char buf[JOURNAL_NAME_MAX]) {
        (void) snprintf(buf, JOURNAL_NAME_MAX, STATE_JOURNAL_PREFIX "%" PRIu32, cpu);
}

bool journal_file_cpu(const char *name, uint32_t *ret) {
        if (strncmp(name, STATE_JOURNAL_PREFIX, strlen(STATE_JOURNAL_PREFIX)) != 0)
                return false;
        return journal_name_cpu(name, ret);
}

/* The CPU a journal's name gives, when it is a name journal_name() makes. */
static bool journal_name_cpu(const char *name, uint32_t *ret) {
        StateToken t = { .p = name + strlen(STATE_JOURNAL_PREFIX) };
        uint64_t cpu;

        t.len = strlen(t.p);
        if (!state_token_decimal(&t, PMUGATE_CPUS_MAX - 1, &cpu))
                return false;
        *ret = (uint32_t) cpu;
        return true;
}

/* Copies a token known to be valid into a NUL-terminated buffer of size > t->len. */
static void token_copy(const StateToken *t, char *buf) {
        memcpy(buf, t->p, t->len);
        buf[t->len] = '\0';
}

static int parse_header(const StateRecord *rec, JournalHeader *ret, char *reason, size_t reason_size) {
        StateToken tokens[8], boot, cpu, uid, pid, role, job;
        uint64_t v_cpu, v_uid, v_pid, version;
        int n;

        if (rec->status != STATE_RECORD_OK) {
                (void) snprintf(reason, reason_size, "its header %s",
                                state_record_status_to_string(rec->status));
                return -EBADMSG;
        }
        n = state_tokens_split(rec->text, rec->len, tokens, ELEMENTSOF(tokens));
        if (n != (int) ELEMENTSOF(tokens) || !state_token_is(&tokens[0], JOURNAL_MAGIC) ||
            !state_token_decimal(&tokens[1], UINT32_MAX, &version)) {
                (void) snprintf(reason, reason_size, "it does not start with a journal header");
                return -EBADMSG;
        }
        if (version != JOURNAL_VERSION) {
                (void) snprintf(reason, reason_size, "it is journal version %" PRIu64 ", not %u", version,
                                JOURNAL_VERSION);
                return -EBADMSG;
        }
        if (!state_token_value(&tokens[2], "boot", &boot) || !state_boot_id_valid(boot.p, boot.len) ||
            !state_token_value(&tokens[3], "cpu", &cpu) ||
            !state_token_decimal(&cpu, PMUGATE_CPUS_MAX - 1, &v_cpu) ||
            !state_token_value(&tokens[4], "uid", &uid) ||
            !state_token_decimal(&uid, UINT32_MAX - 1, &v_uid) ||
            !state_token_value(&tokens[5], "pid", &pid) || !state_token_decimal(&pid, INT32_MAX, &v_pid) ||
            !state_token_value(&tokens[6], "role", &role) ||
            !state_name_valid(role.p, role.len, JOURNAL_ROLE_MAX) ||
            !state_token_value(&tokens[7], "job", &job) ||
            !state_name_valid(job.p, job.len, PMUGATE_STRING_MAX)) {
                (void) snprintf(reason, reason_size, "its header does not parse");
                return -EBADMSG;
        }
        *ret = (JournalHeader) { .cpu = (uint32_t) v_cpu, .uid = (uid_t) v_uid, .pid = (pid_t) v_pid };
        token_copy(&boot, ret->boot_id);
        token_copy(&role, ret->role);
        if (!state_token_is(&job, "-"))
                token_copy(&job, ret->job);
        return 0;
}

static JournalVerdict parse_entry(const StateRecord *rec, LeaseEntry *ret) {
        StateToken tokens[6];
        uint64_t target, reg, width, flags, original;
        bool pci;

        if (rec->status == STATE_RECORD_TORN)
                return JOURNAL_TORN;
        if (rec->status != STATE_RECORD_OK)
                return JOURNAL_BAD_CHECKSUM;
        if (state_tokens_split(rec->text, rec->len, tokens, ELEMENTSOF(tokens)) != (int) ELEMENTSOF(tokens))
                return JOURNAL_BAD_SYNTAX;
        pci = state_token_is(&tokens[0], "pci");
        if ((!pci && !state_token_is(&tokens[0], "msr")) ||
            !state_token_decimal(&tokens[1], UINT32_MAX, &target) ||
            !state_token_hex(&tokens[2], 8, &reg) || !state_token_decimal(&tokens[3], 8, &width) ||
            (width != 4 && width != 8) || !state_token_decimal(&tokens[4], UINT8_MAX, &flags) ||
            !state_token_hex(&tokens[5], 16, &original))
                return JOURNAL_BAD_SYNTAX;
        *ret = (LeaseEntry) {
                .target = (uint32_t) target,
                .reg = (uint32_t) reg,
                .original = original,
                .width = (uint8_t) width,
                .flags = (uint8_t) flags,
                .pci = pci,
        };
        return JOURNAL_RESTORE;
}

int journal_parse(const char *data, size_t size, Journal *ret, char *ret_reason, size_t reason_size) {
        _cleanup_free_ JournalLine *lines = NULL;
        JournalHeader header;
        StateRecord rec;
        size_t n_records = 0, n = 0, dropped = 0;
        unsigned lineno = 0;
        int r;

        for (const char *p = data; p && p < data + size; n_records++) {
                p = memchr(p, '\n', (size_t) (data + size - p));
                if (p)
                        p++;
        }
        if (!state_record_next(&data, &size, &lineno, &rec)) {
                (void) snprintf(ret_reason, reason_size, "it is empty");
                return -EBADMSG;
        }
        r = parse_header(&rec, &header, ret_reason, reason_size);
        if (r < 0)
                return r;
        n_records--;
        if (n_records > 0) {
                lines = calloc(n_records < PMUGATE_LEASE_JOURNAL_MAX ? n_records : PMUGATE_LEASE_JOURNAL_MAX,
                               sizeof(JournalLine));
                if (!lines)
                        return -ENOMEM;
        }
        while (state_record_next(&data, &size, &lineno, &rec)) {
                if (n >= PMUGATE_LEASE_JOURNAL_MAX) {
                        dropped++;
                        continue;
                }
                lines[n] = (JournalLine) { .lineno = rec.lineno };
                lines[n].verdict = parse_entry(&rec, &lines[n].entry);
                n++;
        }
        *ret = (Journal) { .header = header, .lines = TAKE_PTR(lines), .n_lines = n, .n_dropped = dropped };
        return 0;
}

void journal_done(Journal *j) {
        free(j->lines);
        *j = (Journal) {};
}

_printf_(4, 5) static JournalVerdict verdict_refused(char *reason, size_t size, JournalVerdict v, const char *fmt,
                                            ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, size, fmt, ap);
        va_end(ap);
        return v;
}

static JournalVerdict check_msr(const Machine *m, const Allowlist *a, const LeaseEntry *e,
                                const AllowEntry **ret, char *reason, size_t size) {
        const char *never = never_list_lookup(e->reg, /* write= */ true);
        const MachineCpu *cpu;

        /* The never-list first: whatever else is wrong, that is the reason that matters. */
        if (never)
                return verdict_refused(reason, size, JOURNAL_NEVER_LIST,
                              "MSR 0x%" PRIx32 " (%s) is on the built-in never-list", e->reg, never);
        cpu = machine_cpu(m, e->target);
        if (!cpu)
                return verdict_refused(reason, size, JOURNAL_NO_SUCH_CPU, "CPU %" PRIu32 " does not exist",
                              e->target);
        if (!cpu->online)
                return verdict_refused(reason, size, JOURNAL_CPU_OFFLINE, "CPU %" PRIu32 " is offline", e->target);
        *ret = allowlist_find_msr(a, e->reg);
        if (!*ret)
                return verdict_refused(reason, size, JOURNAL_NOT_ALLOWED,
                              "MSR 0x%" PRIx32 " is not on the allowlist for this CPU model", e->reg);
        if (e->width != (*ret)->width)
                return verdict_refused(reason, size, JOURNAL_BAD_WIDTH,
                              "MSR 0x%" PRIx32 " is accessed %u bytes wide, not %u", e->reg, (*ret)->width,
                              e->width);
        return JOURNAL_RESTORE;
}

static JournalVerdict check_pci(const Machine *m, const Allowlist *a, const LeaseEntry *e,
                                const AllowEntry **ret, char *reason, size_t size) {
        const MachineUnit *u;

        if (e->target >= m->n_units)
                return verdict_refused(reason, size, JOURNAL_NO_SUCH_UNIT,
                              "PCI unit %" PRIu32 " does not exist (%" PRIu32 " units)", e->target,
                              m->n_units);
        /* A restore is a write, and no write reaches a PCI configuration header. */
        if (e->reg < PCI_CONFIG_HEADER_END)
                return verdict_refused(reason, size, JOURNAL_NEVER_LIST,
                              "offset 0x%" PRIx32 " of PCI unit %" PRIu32 " is in its configuration header",
                              e->reg, e->target);
        u = &m->units[e->target];
        *ret = allowlist_find_pci(a, u->vendor, u->device, e->reg);
        if (!*ret)
                return verdict_refused(reason, size, JOURNAL_NOT_ALLOWED,
                              "offset 0x%" PRIx32 " of PCI unit %" PRIu32 " (%04x:%04x) is not on the "
                              "allowlist", e->reg, e->target, u->vendor, u->device);
        if (e->width != (*ret)->width || (e->reg - (*ret)->first) % (*ret)->width != 0)
                return verdict_refused(reason, size, JOURNAL_BAD_WIDTH,
                              "offset 0x%" PRIx32 " of PCI unit %" PRIu32 " is accessed %u bytes wide and "
                              "aligned, not %u", e->reg, e->target, (*ret)->width, e->width);
        return JOURNAL_RESTORE;
}

JournalVerdict journal_check(const Machine *m, const Allowlist *a, const LeaseEntry *e,
                             const AllowEntry **ret_entry, char *ret_reason, size_t reason_size) {
        const AllowEntry *entry = NULL;
        JournalVerdict v;

        v = e->pci ? check_pci(m, a, e, &entry, ret_reason, reason_size)
                   : check_msr(m, a, e, &entry, ret_reason, reason_size);
        if (v != JOURNAL_RESTORE)
                return v;
        /* Write-1 registers (status reset and set) act when written; putting a value back
         * would act again. A client's lease never journals them. */
        if (entry->flags & ALLOW_FLAG_ACTION)
                return verdict_refused(ret_reason, reason_size, JOURNAL_ACTION,
                              "%s is an action register, which is never restored", entry->name);
        if (entry->write_mask == 0 && !(entry->flags & ALLOW_FLAG_COUNTER))
                return verdict_refused(ret_reason, reason_size, JOURNAL_READ_ONLY, "%s is read-only", entry->name);
        *ret_entry = entry;
        return JOURNAL_RESTORE;
}

static const char *line_problem(JournalVerdict v) {
        switch (v) {
        case JOURNAL_TORN:
                return state_record_status_to_string(STATE_RECORD_TORN);
        case JOURNAL_BAD_CHECKSUM:
                return state_record_status_to_string(STATE_RECORD_BAD_CHECKSUM);
        case JOURNAL_BAD_SYNTAX:
                return "does not parse";
        default:
                return "cannot be used";
        }
}

static void audit_refusal(const JournalContext *ctx, const char *code, const char *cpus, const char *regs,
                          const char *reason) {
        AuditRecord rec = {
                .event = "recover",
                .verdict = "refused",
                .uid = geteuid(),
                .gid = getegid(),
                .pid = getpid(),
                .code = code,
                .cpus = cpus,
                .regs = regs,
                .reason = reason,
        };

        if (ctx->audit)
                audit_emit(ctx->audit, &rec);
}

/* Refuses one line: logged and audited, with the register when the line parsed. */
static void refuse_line(const JournalContext *ctx, const char *name, const JournalLine *line,
                        const char *why) {
        char reason[PMUGATE_REASON_MAX], cpus[16] = "", regs[16] = "";
        bool parsed = line->verdict > JOURNAL_TOO_MANY;

        if (parsed) {
                if (!line->entry.pci)
                        (void) snprintf(cpus, sizeof(cpus), "%" PRIu32, line->entry.target);
                (void) snprintf(regs, sizeof(regs), "0x%" PRIx32, line->entry.reg);
        }
        (void) snprintf(reason, sizeof(reason), "%s line %u: %s; not restored", name, line->lineno,
                        parsed ? why : line_problem(line->verdict));
        log_warning("Lease journal %s", reason);
        audit_refusal(ctx, journal_verdict_to_string(line->verdict), cpus[0] ? cpus : NULL,
                      regs[0] ? regs : NULL, reason);
}

void journal_restore(const JournalContext *ctx, const char *name, const Journal *j, JournalOutcome *ret) {
        JournalOutcome o = {};

        if (j->n_dropped > 0) {
                JournalLine past = { .verdict = JOURNAL_TOO_MANY, .lineno = j->n_lines + 2 };
                char why[96];

                (void) snprintf(why, sizeof(why), "%zu entries past the %u a lease may journal",
                                j->n_dropped, PMUGATE_LEASE_JOURNAL_MAX);
                refuse_line(ctx, name, &past, why);
                o.refused += j->n_dropped;
        }
        /* Newest first, as when a lease ends: control registers changed after the counters they
         * enable are stopped before those counters are cleared. */
        for (size_t i = j->n_lines; i-- > 0;) {
                JournalLine line = j->lines[i];
                const AllowEntry *entry = NULL;
                char why[JOURNAL_WHY_MAX];
                int r;

                if (line.verdict == JOURNAL_RESTORE)
                        line.verdict = journal_check(ctx->machine, ctx->allowlist, &line.entry, &entry, why,
                                                     sizeof(why));
                if (line.verdict != JOURNAL_RESTORE) {
                        refuse_line(ctx, name, &line, why);
                        o.refused++;
                        continue;
                }
                r = clean_restore_entry(ctx->backend, ctx->pmu, clean_table_for(ctx->machine->cpu_model),
                                        &line.entry, entry);
                if (r < 0) {
                        log_warning_errno(r, "Cannot restore %s 0x%" PRIx32 " of %s %" PRIu32 " from %s "
                                          "line %u", line.entry.pci ? "offset" : "MSR", line.entry.reg,
                                          line.entry.pci ? "PCI unit" : "CPU", line.entry.target, name,
                                          line.lineno);
                        o.failed++;
                } else {
                        o.restored++;
                        if (ctx->restored && !line.entry.pci)
                                cpuset_add(ctx->restored, line.entry.target);
                }
        }
        *ret = o;
}

/* A file that is not used at all: logged and audited, and removed only when remove says so. */
static void refuse_file(const JournalContext *ctx, const char *name, const char *problem, bool remove) {
        char reason[PMUGATE_REASON_MAX];

        (void) snprintf(reason, sizeof(reason), "%s %s; %s, nothing in it restored", name, problem,
                        remove ? "removed" : "left in place");
        log_warning("Lease journal %s", reason);
        audit_refusal(ctx, "journal-file", NULL, NULL, reason);
        if (remove)
                (void) unlinkat(ctx->dir->fd, name, 0);
}

static int recover_one(int dir_fd, const char *name, void *userdata) {
        const JournalContext *ctx = userdata;
        _cleanup_free_ char *data = NULL;
        _cleanup_(journal_done) Journal j = {};
        char reason[JOURNAL_WHY_MAX - 32], problem[JOURNAL_WHY_MAX];
        JournalOutcome o;
        uint32_t cpu;
        size_t size;
        int r;

        if (strncmp(name, STATE_JOURNAL_PREFIX, strlen(STATE_JOURNAL_PREFIX)) != 0)
                return 0;
        if (!journal_name_cpu(name, &cpu)) {
                refuse_file(ctx, name, "is not a journal's name", false);
                return 0;
        }
        r = state_file_read(ctx->dir, name, PMUGATE_JOURNAL_FILE_SIZE_MAX, &data, &size, reason,
                            sizeof(reason));
        if (r == -ENOENT)
                return 0;
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                refuse_file(ctx, name, reason, false);
                return 0;
        }
        /* A journal's header is on disk before any register it covers changes: a file without
         * a usable one covers nothing and goes. */
        r = journal_parse(data, size, &j, reason, sizeof(reason));
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                (void) snprintf(problem, sizeof(problem), "is not a journal: %s", reason);
                refuse_file(ctx, name, problem, true);
                return 0;
        }
        if (j.header.cpu != cpu) {
                (void) snprintf(problem, sizeof(problem), "has the header of CPU %" PRIu32 "'s journal",
                                j.header.cpu);
                refuse_file(ctx, name, problem, true);
                return 0;
        }
        if (strcmp(j.header.boot_id, ctx->dir->boot_id) != 0) {
                log_notice("Discarding lease journal %s: it was written before the machine last booted "
                           "(boot %s), which reset the registers it covers", name, j.header.boot_id);
                (void) unlinkat(dir_fd, name, 0);
                return 0;
        }

        journal_restore(ctx, name, &j, &o);
        if (o.failed > 0) {
                log_warning("Keeping lease journal %s for the next start: %zu of its registers could not be "
                            "restored", name, o.failed);
                return 0;
        }
        if (unlinkat(dir_fd, name, 0) < 0)
                log_warning_errno(errno, "Cannot remove lease journal %s", name);
        log_notice("Restored %zu registers from %s, left by a lease of uid %u (pid %d, %s%s%s) when the "
                   "daemon stopped%s", o.restored, name, (unsigned) j.header.uid, (int) j.header.pid,
                   j.header.role,
                   j.header.job[0] ? ", job " : "", j.header.job,
                   o.refused > 0 ? "; refused entries were skipped" : "");
        return 1;
}

typedef struct RecoverCount {
        const JournalContext *ctx;
        int restored;
} RecoverCount;

static int recover_counted(int dir_fd, const char *name, void *userdata) {
        RecoverCount *c = userdata;
        int r = recover_one(dir_fd, name, (void *) c->ctx);

        if (r > 0)
                c->restored++;
        return r < 0 ? r : 0;
}

int journal_recover(const JournalContext *ctx) {
        RecoverCount c = { .ctx = ctx };
        int r;

        r = state_dir_foreach(ctx->dir->fd, recover_counted, &c);
        if (r < 0)
                return log_error_errno(r, "Cannot recover the lease journals");
        return c.restored;
}

int journal_retry(const JournalContext *ctx, uint32_t cpu) {
        char name[JOURNAL_NAME_MAX];
        struct stat st;
        int r;

        journal_name(cpu, name);
        if (fstatat(ctx->dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        r = recover_one(ctx->dir->fd, name, (void *) ctx);
        if (r < 0)
                return r;
        if (fstatat(ctx->dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return -EBUSY;
        return errno == ENOENT ? 0 : -errno;
}

int journal_create(const StateDir *d, uint32_t cpu, const JournalHolder *h, JournalWriter **ret) {
        _cleanup_free_ JournalWriter *w = NULL;
        _cleanup_close_ int fd = -EBADF;
        char header[JOURNAL_RECORD_MAX + PMUGATE_STRING_MAX + 128];
        bool job_valid = h->job && state_name_valid(h->job, strlen(h->job), PMUGATE_STRING_MAX);
        const char *job = job_valid ? h->job : "-";
        const char *role = state_name_valid(h->role, strlen(h->role), JOURNAL_ROLE_MAX) ? h->role : "-";
        struct stat st;
        int k, r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        journal_name(cpu, w->name);
        k = state_record_format(header, sizeof(header),
                                JOURNAL_MAGIC " %u boot=%s cpu=%" PRIu32 " uid=%u pid=%d role=%s job=%s",
                                JOURNAL_VERSION, d->boot_id, cpu, (unsigned) h->uid, (int) h->pid, role,
                                job);
        if (k < 0)
                return k;
        /* A journal left there covers registers that could not be put back: a new one in its
         * place would lose them (leases.c retries it before the CPU is leased again). */
        if (fstatat(d->fd, w->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                log_warning("Not replacing lease journal %s: its registers were not all restored", w->name);
                return -EEXIST;
        }
        fd = state_file_create(d, w->name, NULL);
        if (fd < 0)
                return log_warning_errno(fd, "Cannot create lease journal %s", w->name);
        r = state_write_synced(fd, header, (size_t) k);
        /* The new name is on disk too, not only the file's contents. */
        if (r == 0 && fsync(d->fd) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(d->fd, w->name, 0);
                return log_warning_errno(r, "Cannot write lease journal %s", w->name);
        }
        w->fd = TAKE_FD(fd);
        w->dir_fd = d->fd;
        *ret = TAKE_PTR(w);
        return 0;
}

int journal_append(JournalWriter *w, const LeaseEntry *e) {
        char line[JOURNAL_RECORD_MAX];
        int k, r;

        k = state_record_format(line, sizeof(line), "%s %" PRIu32 " 0x%" PRIx32 " %u %u 0x%" PRIx64,
                                e->pci ? "pci" : "msr", e->target, e->reg, e->width, e->flags, e->original);
        if (k < 0)
                return k;
        r = state_write_synced(w->fd, line, (size_t) k);
        if (r < 0)
                return log_warning_errno(r, "Cannot write lease journal %s", w->name);
        return 0;
}

JournalWriter *journal_close(JournalWriter *w, bool remove) {
        if (!w)
                return NULL;
        if (remove && unlinkat(w->dir_fd, w->name, 0) < 0)
                log_warning_errno(errno, "Cannot remove lease journal %s", w->name);
        (void) close(w->fd);
        free(w);
        return NULL;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Job grants and their state file
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "log.h"
#include "macro.h"
#include "policy/grants.h"

#define GRANTS_MAGIC "pmugate-grants"

void grants_init(Grants *g, const StateDir *state, size_t max) {
        *g = (Grants) { .max = max, .state = state };
}

void grants_done(Grants *g) {
        free(g->items);
        g->items = NULL;
        g->n = 0;
}

const Grant *grants_find(const Grants *g, const char *job) {
        for (size_t i = 0; i < g->n; i++)
                if (strcmp(g->items[i].job, job) == 0)
                        return &g->items[i];
        return NULL;
}

bool grants_has_uid(const Grants *g, uid_t uid) {
        for (size_t i = 0; i < g->n; i++)
                if (g->items[i].uid == uid)
                        return true;
        return false;
}

bool grants_uid_valid(uint64_t uid) {
        return uid < (uint64_t) (uid_t) -1;
}

int grants_format(const Grants *g, const char *boot_id, char **ret_data, size_t *ret_size) {
        StateBuffer b = { .max = PMUGATE_GRANTS_FILE_SIZE_MAX };
        _cleanup_free_ char *list = NULL;

        list = malloc(CPUSET_FORMAT_MAX);
        if (!list)
                return -ENOMEM;
        state_buffer_record(&b, GRANTS_MAGIC " %u boot=%s", GRANTS_VERSION, boot_id);
        for (size_t i = 0; i < g->n && b.error == 0; i++) {
                const Grant *gr = &g->items[i];

                if (!gr->has_cpus || cpuset_format(&gr->cpus, list, CPUSET_FORMAT_MAX) < 0 || !list[0])
                        (void) snprintf(list, CPUSET_FORMAT_MAX, "-");
                state_buffer_record(&b, "grant %s %u %s%s", gr->job, (unsigned) gr->uid, list, gr->lbr ? " lbr" : "");
        }
        if (b.error < 0) {
                int r = b.error;

                state_buffer_done(&b);
                return r;
        }
        *ret_data = b.data;
        *ret_size = b.size;
        return 0;
}

/* The whole table goes to disk at every change, so a crash leaves the old file or the new
 * one, never half of one. */
static int grants_save(Grants *g) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r;

        if (!g->state)
                return 0;
        r = grants_format(g, g->state->boot_id, &data, &size);
        if (r == -EFBIG)
                return log_warning_errno(r, "The grants file would be larger than %u bytes",
                                         PMUGATE_GRANTS_FILE_SIZE_MAX);
        if (r < 0)
                return r;
        r = state_file_replace(g->state, STATE_GRANTS_NAME, data, size);
        if (r < 0) {
                log_error_errno(r, "Cannot save the job grants to the state directory");
                /* ENOENT here means the directory itself is gone; grants_remove() keeps
                 * -ENOENT for "no such grant". */
                return r == -ENOENT ? -EIO : r;
        }
        g->unsaved = false;
        return 0;
}

static Grant *grants_slot(Grants *g) {
        Grant *items;

        if (g->n >= g->max)
                return NULL;
        items = reallocarray(g->items, g->n + 1, sizeof(Grant));
        if (!items)
                return NULL;
        g->items = items;
        return &g->items[g->n++];
}

int grants_put(Grants *g, const char *job, uid_t uid, const uint32_t *cpus, size_t n_cpus) {
        return grants_put_with_lbr(g, job, uid, cpus, n_cpus, false);
}

int grants_put_with_lbr(Grants *g, const char *job, uid_t uid, const uint32_t *cpus, size_t n_cpus, bool lbr) {
        Grant *gr = (Grant *) grants_find(g, job), old;
        bool replaced = gr != NULL;
        int r;

        if (!state_name_valid(job, strlen(job), PMUGATE_STRING_MAX) || !grants_uid_valid(uid))
                return -EINVAL;
        for (size_t i = 0; i < n_cpus; i++)
                if (cpus[i] >= PMUGATE_CPUS_MAX)
                        return -EINVAL;
        if (gr)
                old = *gr;
        else {
                if (g->n >= g->max)
                        return -ENOSPC;
                gr = grants_slot(g);
                if (!gr)
                        return -ENOMEM;
        }
        *gr = (Grant) { .uid = uid, .has_cpus = n_cpus > 0, .lbr = lbr };
        (void) snprintf(gr->job, sizeof(gr->job), "%s", job);
        for (size_t i = 0; i < n_cpus; i++)
                cpuset_add(&gr->cpus, cpus[i]);
        r = grants_save(g);
        if (r < 0) {
                /* Not on disk, so not granted: a restart must not tell a different story. */
                if (replaced)
                        *gr = old;
                else
                        g->n--;
                return r;
        }
        return replaced ? 1 : 0;
}

int grants_remove(Grants *g, const char *job, Grant *ret_removed) {
        Grant *gr = (Grant *) grants_find(g, job);
        int r;

        if (!gr) {
                /* An earlier revoke's save failed: this one puts the file right. */
                if (g->unsaved)
                        return grants_save(g) ?: -ENOENT;
                return -ENOENT;
        }
        if (ret_removed)
                *ret_removed = *gr;
        *gr = g->items[--g->n];
        r = grants_save(g);
        if (r < 0)
                g->unsaved = true;
        return r;
}

static int parse_header(const StateRecord *rec, const char *boot_id, char *reason, size_t reason_size) {
        StateToken tokens[3], boot;
        uint64_t version;

        if (rec->status != STATE_RECORD_OK) {
                (void) snprintf(reason, reason_size, "its header %s",
                                state_record_status_to_string(rec->status));
                return -EBADMSG;
        }
        if (state_tokens_split(rec->text, rec->len, tokens, ELEMENTSOF(tokens)) != 3 ||
            !state_token_is(&tokens[0], GRANTS_MAGIC) ||
            !state_token_decimal(&tokens[1], UINT32_MAX, &version) || version != GRANTS_VERSION ||
            !state_token_value(&tokens[2], "boot", &boot) || !state_boot_id_valid(boot.p, boot.len)) {
                (void) snprintf(reason, reason_size, "it does not start with a version %u grants header",
                                GRANTS_VERSION);
                return -EBADMSG;
        }
        if (memcmp(boot.p, boot_id, STATE_BOOT_ID_LEN) != 0) {
                (void) snprintf(reason, reason_size,
                                "it was written before the machine last booted (boot %.*s), and every job "
                                "of then is over", (int) boot.len, boot.p);
                return -EBADMSG;
        }
        return 0;
}

/* Checks one line into gr. Returns 0, or -EINVAL with reason; -ENOMEM. */
static int parse_grant(const Grants *g, const StateRecord *rec, const Machine *m, Grant *gr, char *reason,
                       size_t reason_size) {
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_free_ char *list = NULL;
        StateToken tokens[5];
        uint64_t uid;
        size_t n = 0, n_tokens;
        int r;

        if (rec->status != STATE_RECORD_OK) {
                (void) snprintf(reason, reason_size, "the line %s",
                                state_record_status_to_string(rec->status));
                return -EINVAL;
        }
        n_tokens = state_tokens_split(rec->text, rec->len, tokens, ELEMENTSOF(tokens));
        if ((n_tokens != 4 && n_tokens != 5) || !state_token_is(&tokens[0], "grant")) {
                (void) snprintf(reason, reason_size, "not a grant");
                return -EINVAL;
        }
        if (n_tokens == 5 && !state_token_is(&tokens[4], "lbr")) {
                (void) snprintf(reason, reason_size, "a grant's fifth field can only be lbr");
                return -EINVAL;
        }
        if (!state_name_valid(tokens[1].p, tokens[1].len, PMUGATE_STRING_MAX)) {
                (void) snprintf(reason, reason_size, "the job id is empty, too long, or holds other "
                                "characters than letters, digits and . _ - +");
                return -EINVAL;
        }
        if (!state_token_decimal(&tokens[2], UINT32_MAX, &uid) || !grants_uid_valid(uid)) {
                (void) snprintf(reason, reason_size, "the uid is not a number from 0 to %u",
                                (unsigned) (uid_t) -2);
                return -EINVAL;
        }
        *gr = (Grant) { .uid = (uid_t) uid, .lbr = n_tokens == 5 };
        memcpy(gr->job, tokens[1].p, tokens[1].len);
        gr->job[tokens[1].len] = '\0';
        if (grants_find(g, gr->job)) {
                (void) snprintf(reason, reason_size, "job %s has a grant on an earlier line", gr->job);
                return -EINVAL;
        }
        if (state_token_is(&tokens[3], "-"))
                return 0;
        for (size_t i = 0; i < tokens[3].len; i++) {
                char c = tokens[3].p[i];

                if (!(c >= '0' && c <= '9') && c != ',' && c != '-') {
                        (void) snprintf(reason, reason_size, "the CPU list holds other characters than "
                                        "digits, commas and dashes");
                        return -EINVAL;
                }
        }
        list = strndup(tokens[3].p, tokens[3].len);
        if (!list)
                return -ENOMEM;
        r = cpulist_parse(list, m->n_cpus, &cpus, &n);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                (void) snprintf(reason, reason_size, "the CPU list does not parse, or names a CPU above "
                                "%" PRIu32, m->n_cpus - 1);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                if (!machine_cpu(m, cpus[i])) {
                        (void) snprintf(reason, reason_size, "CPU %" PRIu32 " does not exist", cpus[i]);
                        return -EINVAL;
                }
                cpuset_add(&gr->cpus, cpus[i]);
        }
        gr->has_cpus = true;
        return 0;
}

int grants_parse(Grants *g, const char *data, size_t size, const char *boot_id, const Machine *m,
                 char *ret_reason, size_t reason_size) {
        StateRecord rec;
        unsigned lineno = 0;
        int refused = 0, r;

        if (!state_record_next(&data, &size, &lineno, &rec)) {
                (void) snprintf(ret_reason, reason_size, "it is empty");
                return -EBADMSG;
        }
        r = parse_header(&rec, boot_id, ret_reason, reason_size);
        if (r < 0)
                return r;
        while (state_record_next(&data, &size, &lineno, &rec)) {
                char reason[PMUGATE_STRING_MAX + 96];
                Grant gr, *slot;

                r = parse_grant(g, &rec, m, &gr, reason, sizeof(reason));
                if (r == -ENOMEM)
                        return r;
                if (r == 0 && g->n >= g->max) {
                        (void) snprintf(reason, sizeof(reason), "already %zu grants, the most allowed",
                                        g->max);
                        r = -ENOSPC;
                }
                if (r < 0) {
                        log_warning("Grants file line %u: %s; grant not restored", rec.lineno, reason);
                        refused++;
                        continue;
                }
                slot = grants_slot(g);
                if (!slot)
                        return -ENOMEM;
                *slot = gr;
        }
        return refused;
}

int grants_load(Grants *g, const Machine *m) {
        _cleanup_free_ char *data = NULL;
        char reason[256];
        size_t size;
        int r;

        if (!g->state)
                return 0;
        r = state_file_read(g->state, STATE_GRANTS_NAME, PMUGATE_GRANTS_FILE_SIZE_MAX, &data, &size, reason,
                            sizeof(reason));
        if (r == -ENOENT)
                return 0;
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error("The grants file %s; no job grant restored from it", reason);
                return 0;
        }
        r = grants_parse(g, data, size, g->state->boot_id, m, reason, sizeof(reason));
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                grants_done(g);
                log_warning("Not restoring job grants from the grants file: %s", reason);
                return 0;
        }
        if (g->n > 0 || r > 0)
                log_info("Restored %zu job grants from the state directory%s", g->n,
                         r > 0 ? "; refused lines were skipped" : "");
        return 0;
}

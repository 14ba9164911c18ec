/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Register allowlists
 */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "pmu/allowlist.h"
#include "pmugate-limits.h"

#define LINE_CHARS_MAX 1023
#define ENTRIES_MAX 4096
#define FIELDS_MAX 10
#define PCI_CONFIG_SIZE 4096
#define MODELS_MAX ELEMENTSOF(((Allowlist *) NULL)->models)
#define MODEL_KEY_MAX (sizeof(((Allowlist *) NULL)->models[0]) - 1)

DEFINE_TRIVIAL_CLEANUP_FUNC(Allowlist *, allowlist_free);

Allowlist *allowlist_free(Allowlist *a) {
        if (!a)
                return NULL;
        free(a->msr);
        free(a->pci);
        free(a);
        return NULL;
}

int allowlist_new_empty(const char *model_key, Allowlist **ret) {
        Allowlist *a;

        if (strlen(model_key) >= sizeof(a->models[0]))
                return -EINVAL;
        a = calloc(1, sizeof(Allowlist));
        if (!a)
                return -ENOMEM;
        (void) snprintf(a->path, sizeof(a->path), "(none: no MSRs)");
        (void) snprintf(a->models[0], sizeof(a->models[0]), "%s", model_key);
        a->n_models = 1;
        *ret = a;
        return 0;
}

/* Entries keep their line number until the file is checked as a whole, so that an overlap found
 * after sorting can still name both lines. */
typedef struct ParsedEntry {
        AllowEntry entry;
        unsigned line;
} ParsedEntry;

typedef struct Parser {
        const char *path;
        unsigned line;
        unsigned models_line;
        char models[MODELS_MAX][MODEL_KEY_MAX + 1];
        unsigned n_models;
        ParsedEntry *msr, *pci;
        size_t n_msr, n_pci, allocated_msr, allocated_pci;
        unsigned error_line;
        char reason[PMUGATE_REASON_MAX];
} Parser;

static void parser_done(Parser *p) {
        free(p->msr);
        free(p->pci);
}

_printf_(3, 4) static int parser_error(Parser *p, unsigned line, const char *fmt, ...) {
        char msg[PMUGATE_REASON_MAX - 32];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        p->error_line = line;
        (void) snprintf(p->reason, sizeof(p->reason), "line %u: %s", line, msg);
        return -EINVAL;
}

/* Hex with 0x, else decimal: strtoull() alone would also take signs, blanks, octal and a second
 * "0x" after the first, none of which a register address should be written with. */
static int parse_u64(const char *s, uint64_t *ret) {
        const char *digits = s, *set = "0123456789";
        unsigned long long v;
        int base = 10;
        char *end;

        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                digits = s + 2;
                set = "0123456789abcdefABCDEF";
                base = 16;
        }
        if (digits[0] == '\0' || digits[strspn(digits, set)] != '\0')
                return -EINVAL;
        errno = 0;
        v = strtoull(digits, &end, base);
        if (errno != 0)
                return -ERANGE;
        *ret = v;
        return 0;
}

static int parse_number(Parser *p, const char *what, const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v;

        if (parse_u64(s, &v) < 0)
                return parser_error(p, p->line, "bad %s '%.64s'", what, s);
        if (v > max)
                return parser_error(p, p->line, "%s '%.64s' is out of range (at most 0x%" PRIx64 ")",
                                    what, s, max);
        *ret = v;
        return 0;
}

static int parse_range(Parser *p, const char *s, uint64_t max, uint32_t *ret_first, uint32_t *ret_last) {
        const char *dash = strchr(s, '-');
        uint64_t first, last;
        char buf[32];
        int r;

        if (!dash) {
                r = parse_number(p, "address", s, max, &first);
                if (r < 0)
                        return r;
                last = first;
        } else {
                size_t n = (size_t) (dash - s);

                if (n >= sizeof(buf))
                        return parser_error(p, p->line, "bad address '%.64s'", s);
                memcpy(buf, s, n);
                buf[n] = '\0';
                r = parse_number(p, "address", buf, max, &first);
                if (r < 0)
                        return r;
                r = parse_number(p, "address", dash + 1, max, &last);
                if (r < 0)
                        return r;
                if (last < first)
                        return parser_error(p, p->line, "range '%.64s' ends before it starts", s);
        }
        *ret_first = (uint32_t) first;
        *ret_last = (uint32_t) last;
        return 0;
}

static bool token_valid(const char *s, const char *set, size_t max) {
        size_t n = strlen(s);

        return n > 0 && n <= max && s[strspn(s, set)] == '\0';
}

static int parse_scope(Parser *p, const char *s, uint8_t *ret) {
        for (unsigned i = 0; i < _REG_SCOPE_MAX; i++)
                if (strcmp(s, reg_scope_to_string(i)) == 0) {
                        *ret = (uint8_t) i;
                        return 0;
                }
        return parser_error(p, p->line, "unknown scope '%.64s' (expected thread, core, ccx or package)", s);
}

/* Scope, class and name: the three trailing fields both entry kinds share. */
static int parse_tail(Parser *p, char **fields, AllowEntry *e) {
        int r;

        r = parse_scope(p, fields[0], &e->scope);
        if (r < 0)
                return r;
        if (!token_valid(fields[1], "abcdefghijklmnopqrstuvwxyz0123456789-", ALLOW_CLASS_MAX - 1))
                return parser_error(p, p->line, "bad class '%.64s' (1-%d characters of a-z, 0-9, -)",
                                    fields[1], ALLOW_CLASS_MAX - 1);
        if (!token_valid(fields[2],
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.",
                         ALLOW_NAME_MAX - 1))
                return parser_error(p, p->line, "bad name '%.64s' (1-%d characters of A-Z, a-z, 0-9, _, .)",
                                    fields[2], ALLOW_NAME_MAX - 1);
        strcpy(e->cls, fields[1]);
        strcpy(e->name, fields[2]);
        return 0;
}

/* Optional flags after the name: "counter", "action". */
static int parse_flags(Parser *p, char **fields, size_t n, AllowEntry *e) {
        for (size_t i = 0; i < n; i++) {
                if (strcmp(fields[i], "counter") == 0)
                        e->flags |= ALLOW_FLAG_COUNTER;
                else if (strcmp(fields[i], "action") == 0)
                        e->flags |= ALLOW_FLAG_ACTION;
                else
                        return parser_error(p, p->line, "unknown flag '%.64s' (expected counter or action)",
                                            fields[i]);
        }
        if ((e->flags & ALLOW_FLAG_COUNTER) && (e->flags & ALLOW_FLAG_ACTION))
                return parser_error(p, p->line, "a register cannot be both a counter and an action");
        return 0;
}

static int parser_add(Parser *p, ParsedEntry **array, size_t *n, size_t *allocated, const AllowEntry *e) {
        if (p->n_msr + p->n_pci >= ENTRIES_MAX)
                return parser_error(p, p->line, "more than %d entries in one file", ENTRIES_MAX);
        if (*n >= *allocated) {
                size_t m = *allocated ? *allocated * 2 : 64;
                ParsedEntry *a = reallocarray(*array, m, sizeof(ParsedEntry));

                if (!a)
                        return -ENOMEM;
                *array = a;
                *allocated = m;
        }
        (*array)[*n] = (ParsedEntry) { .entry = *e, .line = p->line };
        (*n)++;
        return 0;
}

static int parse_models(Parser *p, char **fields, size_t n) {
        if (p->models_line > 0)
                return parser_error(p, p->line, "second 'models' line (the first is line %u)",
                                    p->models_line);
        if (n < 2)
                return parser_error(p, p->line, "'models' needs at least one model key");
        if (n - 1 > MODELS_MAX)
                return parser_error(p, p->line, "too many model keys (at most %zu)", MODELS_MAX);

        for (size_t i = 1; i < n; i++) {
                if (!token_valid(fields[i], "abcdefghijklmnopqrstuvwxyz0123456789_-", MODEL_KEY_MAX))
                        return parser_error(p, p->line,
                                            "bad model key '%.64s' (1-%zu characters of a-z, 0-9, _, -)",
                                            fields[i], MODEL_KEY_MAX);
                for (size_t j = 1; j < i; j++)
                        if (strcmp(fields[i], fields[j]) == 0)
                                return parser_error(p, p->line, "model key '%s' listed twice", fields[i]);
                strcpy(p->models[i - 1], fields[i]);
        }
        p->n_models = (unsigned) (n - 1);
        p->models_line = p->line;
        return 0;
}

static int parse_msr(Parser *p, char **fields, size_t n) {
        AllowEntry e = { .width = 8 };
        const NeverEntry *ne;
        int r;

        if (n < 6)
                return parser_error(p, p->line,
                                    "'msr' takes 5 fields (address[-last] mask scope class name [flags]), got %zu",
                                    n - 1);
        r = parse_range(p, fields[1], UINT32_MAX, &e.first, &e.last);
        if (r < 0)
                return r;
        r = parse_number(p, "write mask", fields[2], UINT64_MAX, &e.write_mask);
        if (r < 0)
                return r;
        r = parse_tail(p, fields + 3, &e);
        if (r < 0)
                return r;
        r = parse_flags(p, fields + 6, n - 6, &e);
        if (r < 0)
                return r;

        /* Whatever the file says of it, an energy register is read under the energy rule. */
        if (energy_list_overlaps(e.first, e.last))
                e.flags |= ALLOW_FLAG_ENERGY;
        /* Accepted, not refused: the never-list is enforced per request, and a test allowlist
         * must be able to show that listing such a register opens nothing. */
        ne = never_list_overlap(e.first, e.last, e.write_mask != 0);
        if (ne) {
                e.flags |= ALLOW_FLAG_NEVER;
                log_warning("%s:%u: %s covers 0x%" PRIX32 " %s from the built-in never-list; "
                            "%s for it will be refused whatever this file says",
                            p->path, p->line, e.name, ne->first > e.first ? ne->first : e.first, ne->name,
                            ne->kind == NEVER_WRITE ? "writes" : "requests");
        }

        return parser_add(p, &p->msr, &p->n_msr, &p->allocated_msr, &e);
}

static int parse_pci_id(Parser *p, const char *s, uint16_t *ret_vendor, uint16_t *ret_device) {
        static const char hex[] = "0123456789abcdefABCDEF";

        if (strlen(s) != 9 || s[4] != ':' || strspn(s, hex) != 4 || strspn(s + 5, hex) != 4)
                return parser_error(p, p->line,
                                    "bad PCI id '%.64s' (expected vendor:device, e.g. 8086:2042)", s);
        *ret_vendor = (uint16_t) strtoul(s, NULL, 16);
        *ret_device = (uint16_t) strtoul(s + 5, NULL, 16);
        return 0;
}

static int parse_pci(Parser *p, char **fields, size_t n) {
        AllowEntry e = { .pci = true };
        uint64_t width;
        int r;

        if (n < 8)
                return parser_error(p, p->line,
                                    "'pci' takes 7 fields (vendor:device offset[-last] width mask scope "
                                    "class name [flags]), got %zu", n - 1);
        r = parse_pci_id(p, fields[1], &e.pci_vendor, &e.pci_device);
        if (r < 0)
                return r;
        r = parse_range(p, fields[2], PCI_CONFIG_SIZE - 1, &e.first, &e.last);
        if (r < 0)
                return r;
        r = parse_number(p, "width", fields[3], UINT8_MAX, &width);
        if (r < 0)
                return r;
        if (width != 4 && width != 8)
                return parser_error(p, p->line, "width %" PRIu64 " is neither 4 nor 8", width);
        e.width = (uint8_t) width;
        /* With last below the config size this also keeps last + width - 1 inside it. */
        if (e.first % e.width != 0 || (e.last - e.first) % e.width != 0)
                return parser_error(p, p->line, "range '%.64s' is not made of aligned %u-byte registers",
                                    fields[2], e.width);
        r = parse_number(p, "write mask", fields[4], e.width == 4 ? UINT32_MAX : UINT64_MAX, &e.write_mask);
        if (r < 0)
                return r;
        r = parse_tail(p, fields + 5, &e);
        if (r < 0)
                return r;
        r = parse_flags(p, fields + 8, n - 8, &e);
        if (r < 0)
                return r;

        /* The header (IDs, command, BARs, interrupt line) belongs to the kernel's PCI core:
         * writing it can turn off a device, move its registers or redirect its DMA. Like the
         * MSR never-list this is accepted with a warning and refused per request. */
        if (e.write_mask != 0 && e.first < PCI_CONFIG_HEADER_END) {
                e.flags |= ALLOW_FLAG_NEVER;
                log_warning("%s:%u: %s covers offset 0x%" PRIX32 " of the PCI configuration header "
                            "(below 0x%X); writes to it will be refused whatever this file says",
                            p->path, p->line, e.name, e.first, PCI_CONFIG_HEADER_END);
        }

        return parser_add(p, &p->pci, &p->n_pci, &p->allocated_pci, &e);
}

static int parse_line(Parser *p, char *line) {
        char *fields[FIELDS_MAX + 1], *hash, *save = NULL, *tok;
        size_t n = 0;

        hash = strchr(line, '#');
        if (hash)
                *hash = '\0';
        for (tok = strtok_r(line, " \t\r\v\f", &save); tok; tok = strtok_r(NULL, " \t\r\v\f", &save)) {
                if (n >= FIELDS_MAX)
                        return parser_error(p, p->line, "too many fields");
                fields[n++] = tok;
        }
        if (n == 0)
                return 0;

        if (strcmp(fields[0], "models") == 0)
                return parse_models(p, fields, n);
        if (strcmp(fields[0], "msr") == 0)
                return parse_msr(p, fields, n);
        if (strcmp(fields[0], "pci") == 0)
                return parse_pci(p, fields, n);
        return parser_error(p, p->line, "unknown directive '%.64s' (expected models, msr or pci)",
                            fields[0]);
}

static int cmp_msr(const void *a, const void *b) {
        const ParsedEntry *x = a, *y = b;

        if (x->entry.first != y->entry.first)
                return x->entry.first < y->entry.first ? -1 : 1;
        return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_pci(const void *a, const void *b) {
        const ParsedEntry *x = a, *y = b;

        if (x->entry.pci_vendor != y->entry.pci_vendor)
                return x->entry.pci_vendor < y->entry.pci_vendor ? -1 : 1;
        if (x->entry.pci_device != y->entry.pci_device)
                return x->entry.pci_device < y->entry.pci_device ? -1 : 1;
        return cmp_msr(a, b);
}

static int overlap_error(Parser *p, const char *kind, const ParsedEntry *a, const ParsedEntry *b) {
        const ParsedEntry *later = a->line > b->line ? a : b, *earlier = later == a ? b : a;

        return parser_error(p, later->line, "%s %s 0x%" PRIX32 "-0x%" PRIX32 " overlaps %s on line %u",
                            kind, later->entry.name, later->entry.first, later->entry.last,
                            earlier->entry.name, earlier->line);
}

/* Sorting makes any overlap show up between neighbours, and lets lookups binary-search. */
static int parser_check(Parser *p) {
        if (p->n_msr > 0)
                qsort(p->msr, p->n_msr, sizeof(ParsedEntry), cmp_msr);
        if (p->n_pci > 0)
                qsort(p->pci, p->n_pci, sizeof(ParsedEntry), cmp_pci);

        for (size_t i = 1; i < p->n_msr; i++)
                if (p->msr[i - 1].entry.last >= p->msr[i].entry.first)
                        return overlap_error(p, "MSR range", &p->msr[i - 1], &p->msr[i]);

        for (size_t i = 1; i < p->n_pci; i++) {
                const AllowEntry *a = &p->pci[i - 1].entry, *b = &p->pci[i].entry;

                if (a->pci_vendor == b->pci_vendor && a->pci_device == b->pci_device &&
                    a->last + a->width > b->first)
                        return overlap_error(p, "PCI range", &p->pci[i - 1], &p->pci[i]);
        }
        return 0;
}

static int copy_entries(const ParsedEntry *from, size_t n, AllowEntry **ret) {
        AllowEntry *a;

        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        a = calloc(n, sizeof(AllowEntry));
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                a[i] = from[i].entry;
        *ret = a;
        return 0;
}

static int parse_stream(Parser *p, FILE *f) {
        _cleanup_free_ char *buf = NULL;
        size_t allocated = 0;
        int r;

        for (;;) {
                ssize_t n;

                errno = 0;
                n = getline(&buf, &allocated, f);
                if (n < 0) {
                        if (ferror(f))
                                return negative_errno();
                        break;
                }
                p->line++;
                if (n > 0 && buf[n - 1] == '\n')
                        buf[--n] = '\0';
                if (n > LINE_CHARS_MAX)
                        return parser_error(p, p->line, "line is longer than %d characters", LINE_CHARS_MAX);
                if (strlen(buf) != (size_t) n)
                        return parser_error(p, p->line, "line contains a NUL byte");
                r = parse_line(p, buf);
                if (r < 0)
                        return r;
        }

        /* No line is at fault; point at the last one, where the file ended without it. */
        if (p->models_line == 0)
                return parser_error(p, p->line > 0 ? p->line : 1, "no 'models' line in the file");
        return parser_check(p);
}

int allowlist_parse_stream(FILE *f, const char *path, Allowlist **ret, unsigned *ret_line, char *ret_reason,
                           size_t reason_size) {
        _cleanup_(parser_done) Parser p = { .path = path };
        _cleanup_(allowlist_freep) Allowlist *a = NULL;
        int r;

        assert(f);
        assert(path);
        assert(ret);

        if (strlen(path) >= sizeof(a->path))
                return -ENAMETOOLONG;

        r = parse_stream(&p, f);
        if (r == -EINVAL) {
                if (ret_line)
                        *ret_line = p.error_line;
                if (ret_reason && reason_size > 0)
                        (void) snprintf(ret_reason, reason_size, "%s", p.reason);
        }
        if (r < 0)
                return r;

        a = calloc(1, sizeof(Allowlist));
        if (!a)
                return -ENOMEM;
        strcpy(a->path, path);
        memcpy(a->models, p.models, sizeof(a->models));
        a->n_models = p.n_models;
        r = copy_entries(p.msr, p.n_msr, &a->msr);
        if (r < 0)
                return r;
        a->n_msr = p.n_msr;
        r = copy_entries(p.pci, p.n_pci, &a->pci);
        if (r < 0)
                return r;
        a->n_pci = p.n_pci;

        *ret = TAKE_PTR(a);
        return 0;
}

int allowlist_parse_file(const char *path, Allowlist **ret, unsigned *ret_line, char *ret_reason,
                         size_t reason_size) {
        _cleanup_fclose_ FILE *f = NULL;

        assert(path);
        assert(ret);

        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        return allowlist_parse_stream(f, path, ret, ret_line, ret_reason, reason_size);
}

static bool allowlist_serves(const Allowlist *a, const char *model_key) {
        for (unsigned i = 0; i < a->n_models; i++)
                if (strcmp(a->models[i], model_key) == 0)
                        return true;
        return false;
}

typedef struct DirListing {
        struct dirent **entries;
        int n;
} DirListing;

static void dir_listing_done(DirListing *l) {
        for (int i = 0; i < l->n; i++)
                free(l->entries[i]);
        free(l->entries);
}

static int conf_filter(const struct dirent *de) {
        size_t n = strlen(de->d_name);

        /* Dot files are editor and package-manager leftovers, not data. */
        return de->d_name[0] != '.' && n > 5 && strcmp(de->d_name + n - 5, ".conf") == 0;
}

/* Byte order, not strcoll(): which file wins must not depend on the daemon's locale. */
static int conf_compare(const struct dirent **a, const struct dirent **b) {
        return strcmp((*a)->d_name, (*b)->d_name);
}

/* A model key and the file (its index in the listing) whose "models" line named it. */
typedef struct ModelClaim {
        char model[sizeof(((Allowlist *) NULL)->models[0])];
        int file;
} ModelClaim;

/* Two files for one model leave it to the order of names which one is trusted: a copy left
 * beside a shipped file, or a package's file beside a site's, would silently decide what
 * users may write. Refuses that for every model, not only this machine's. */
static int claim_models(const DirListing *files, int file, const Allowlist *a, ModelClaim **claims,
                        size_t *n_claims) {
        for (unsigned m = 0; m < a->n_models; m++) {
                ModelClaim *grown;

                for (size_t i = 0; i < *n_claims; i++)
                        if (strcmp((*claims)[i].model, a->models[m]) == 0) {
                                if ((*claims)[i].file == file) {
                                        log_error("Allowlist %s names CPU model '%s' twice on its 'models' line",
                                                  files->entries[file]->d_name, a->models[m]);
                                        return -EINVAL;
                                }
                                log_error("Allowlists %s and %s both name CPU model '%s' on their 'models' "
                                          "line: pmugated will not guess which one to trust. Remove one of "
                                          "the files, or the model from its 'models' line",
                                          files->entries[(*claims)[i].file]->d_name, files->entries[file]->d_name,
                                          a->models[m]);
                                return -ENOTUNIQ;
                        }
                grown = reallocarray(*claims, *n_claims + 1, sizeof(**claims));
                if (!grown)
                        return -ENOMEM;
                *claims = grown;
                (*claims)[*n_claims].file = file;
                (void) snprintf((*claims)[*n_claims].model, sizeof((*claims)[*n_claims].model), "%s", a->models[m]);
                (*n_claims)++;
        }
        return 0;
}

int allowlist_load_for_model(const char *dir, const char *model_key, Allowlist **ret) {
        _cleanup_(dir_listing_done) DirListing files = {};
        _cleanup_(allowlist_freep) Allowlist *found = NULL;
        _cleanup_free_ ModelClaim *claims = NULL;
        size_t n_claims = 0;
        int n;

        assert(dir);
        assert(model_key);
        assert(ret);

        n = scandir(dir, &files.entries, conf_filter, conf_compare);
        if (n < 0)
                return log_error_errno(errno, "Failed to list allowlist directory %s", dir);
        files.n = n;

        /* Every file is parsed, not just up to the match: a broken file for another model is
         * still a broken installation, and it should fail here rather than on that machine. */
        for (int i = 0; i < files.n; i++) {
                _cleanup_(allowlist_freep) Allowlist *a = NULL;
                _cleanup_free_ char *path = NULL;
                char reason[PMUGATE_REASON_MAX];
                unsigned line = 0;
                int r;

                if (asprintf(&path, "%s/%s", dir, files.entries[i]->d_name) < 0)
                        return log_error_errno(ENOMEM, "Failed to load allowlists from %s", dir);
                r = allowlist_parse_file(path, &a, &line, reason, sizeof(reason));
                if (r == -EINVAL) {
                        log_error("Invalid allowlist %s, %s", path, reason);
                        return -EINVAL;
                }
                if (r < 0)
                        return log_error_errno(r, "Failed to read allowlist %s", path);
                r = claim_models(&files, i, a, &claims, &n_claims);
                if (r == -ENOMEM)
                        return log_error_errno(r, "Failed to load allowlists from %s", dir);
                if (r < 0)
                        return r;
                if (!found && allowlist_serves(a, model_key))
                        found = TAKE_PTR(a);
        }

        if (!found) {
                log_error("No allowlist in %s serves CPU model '%s'; without one no register can be "
                          "opened, add a file whose 'models' line names it", dir, model_key);
                return -ENOENT;
        }
        *ret = TAKE_PTR(found);
        return 0;
}

const AllowEntry *allowlist_find_msr(const Allowlist *a, uint32_t reg) {
        size_t lo = 0, hi;

        if (!a)
                return NULL;
        hi = a->n_msr;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const AllowEntry *e = &a->msr[mid];

                if (reg < e->first)
                        hi = mid;
                else if (reg > e->last)
                        lo = mid + 1;
                else
                        return e;
        }
        return NULL;
}

const AllowEntry *allowlist_find_pci(const Allowlist *a, uint16_t vendor, uint16_t device, uint32_t offset) {
        uint32_t key = (uint32_t) vendor << 16 | device;
        size_t lo = 0, hi;

        if (!a)
                return NULL;
        hi = a->n_pci;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const AllowEntry *e = &a->pci[mid];
                uint32_t ekey = (uint32_t) e->pci_vendor << 16 | e->pci_device;

                if (key < ekey || (key == ekey && offset < e->first))
                        hi = mid;
                else if (key > ekey || offset > e->last)
                        lo = mid + 1;
                else
                        /* Only register starts: half a 48-bit counter is not a register. */
                        return (offset - e->first) % e->width == 0 ? e : NULL;
        }
        return NULL;
}

void allow_entry_register_name(const AllowEntry *e, uint32_t reg, char *buf, size_t size) {
        uint32_t index;

        if (!buf || size == 0)
                return;
        if (e->first == e->last || reg < e->first || reg > e->last) {
                (void) snprintf(buf, size, "%s", e->name);
                return;
        }
        index = reg - e->first;
        if (e->pci && e->width > 0)
                index /= e->width;
        (void) snprintf(buf, size, "%s%" PRIu32, e->name, index);
}

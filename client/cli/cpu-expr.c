/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU expressions: plain lists and likwid's thread domains
 */
#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cpu-expr.h"
#include "cpulist.h"
#include "macro.h"
#include "pmugate-limits.h"

#define EXPR_MAX 4096U
#define LIST_TEXT_MAX 128U

typedef struct Selection {
        uint32_t *cpus;
        size_t n;
        size_t capacity;
        bool *seen;             /* by CPU number, below PMUGATE_CPUS_MAX */
} Selection;

typedef struct Domain {
        char kind;              /* 0: CPU numbers; 'N', 'S', 'C', 'M' */
        int index;
        char text[16];          /* "S0" for messages */
        uint32_t *cpus;         /* online CPUs of the domain, physical cores first */
        size_t n;
} Domain;

_printf_(4, 5)
static int fail(char *buf, size_t size, int error, const char *format, ...) {
        va_list ap;

        if (buf && size > 0) {
                va_start(ap, format);
                (void) vsnprintf(buf, size, format, ap);
                va_end(ap);
        }
        return error;
}

static int select_cpu(Selection *s, uint32_t cpu) {
        if (s->seen[cpu])
                return 0;
        if (s->n == s->capacity) {
                size_t capacity = s->capacity ? 2 * s->capacity : 64;
                uint32_t *grown = realloc(s->cpus, capacity * sizeof(uint32_t));

                if (!grown)
                        return -ENOMEM;
                s->cpus = grown;
                s->capacity = capacity;
        }
        s->seen[cpu] = true;
        s->cpus[s->n++] = cpu;
        return 0;
}

static const pmugate_cpu *find_cpu(const pmugate_info *info, uint32_t cpu) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].cpu == cpu)
                        return &info->cpus[i];
        return NULL;
}

static void online_list(const pmugate_info *info, char *buf, size_t size) {
        _cleanup_free_ uint32_t *cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
        size_t n = 0;

        buf[0] = '\0';
        if (!cpus)
                return;
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online)
                        cpus[n++] = info->cpus[i].cpu;
        if (cpulist_format(cpus, n, buf, size) < 0)
                (void) snprintf(buf, size, "%zu CPUs", n);
}

static bool in_domain(const Domain *d, const pmugate_cpu *c) {
        switch (d->kind) {
        case 'N':
                return true;
        default:
                /* sockets; the last-level cache and the memory domain are the socket on the
                 * supported parts (no sub-NUMA clustering is reported) */
                return c->package == d->index;
        }
}

static int compare_physical_first(const void *a, const void *b) {
        const pmugate_cpu *x = *(const pmugate_cpu *const *) a, *y = *(const pmugate_cpu *const *) b;

        if (x->thread != y->thread)
                return x->thread < y->thread ? -1 : 1;
        if (x->package != y->package)
                return x->package < y->package ? -1 : 1;
        if (x->core != y->core)
                return x->core < y->core ? -1 : 1;
        return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static int domain_open(const pmugate_info *info, const char *text, size_t len, Domain *d, char *reason,
                       size_t size) {
        _cleanup_free_ const pmugate_cpu **members = NULL;
        char *end;
        long index = 0;

        *d = (Domain) { .index = -1 };
        (void) snprintf(d->text, sizeof(d->text), "%.*s",
                        (int) (len < sizeof(d->text) ? len : sizeof(d->text) - 1), text);
        if (len == 0 || strchr("NSCM", text[0]) == NULL)
                return fail(reason, size, -EINVAL, "'%s' is not a domain (N, S<n>, C<n> or M<n>)", d->text);
        d->kind = text[0];
        if (d->kind == 'N') {
                if (len != 1)
                        return fail(reason, size, -EINVAL, "'%s': the node domain is just N", d->text);
        } else {
                errno = 0;
                index = strtol(text + 1, &end, 10);
                if (len == 1 || errno != 0 || end != text + len || index < 0 || index > INT32_MAX ||
                    text[1] < '0' || text[1] > '9')
                        return fail(reason, size, -EINVAL, "'%s' needs a domain number, such as %c0",
                                    d->text, d->kind);
        }
        d->index = (int) index;
        members = calloc(info->n_cpus ?: 1, sizeof(*members));
        d->cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
        if (!members || !d->cpus)
                return -ENOMEM;
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online && in_domain(d, &info->cpus[i]))
                        members[d->n++] = &info->cpus[i];
        if (d->n == 0)
                return fail(reason, size, -ENXIO,
                            "this machine has no %s %d (or none of its CPUs is online)",
                            d->kind == 'S' ? "socket" : d->kind == 'C' ? "cache domain" : "memory domain",
                            d->index);
        qsort(members, d->n, sizeof(*members), compare_physical_first);
        for (size_t i = 0; i < d->n; i++)
                d->cpus[i] = members[i]->cpu;
        return 0;
}

static int parse_number(const char *s, const char **ret_end, unsigned long *ret) {
        char *end;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        *ret = strtoul(s, &end, 10);
        if (errno != 0)
                return -ERANGE;
        *ret_end = end;
        return 0;
}

/* One item of a list: "A" or "A-B", A <= B. */
static int parse_range(const char *item, unsigned long *ret_first, unsigned long *ret_last, char *reason,
                       size_t size) {
        const char *end;

        if (parse_number(item, &end, ret_first) < 0)
                return fail(reason, size, -EINVAL, "'%s' is not a CPU number or range", item);
        *ret_last = *ret_first;
        if (*end == '-' && parse_number(end + 1, &end, ret_last) < 0)
                return fail(reason, size, -EINVAL, "'%s' is not a CPU number or range", item);
        if (*end != '\0')
                return fail(reason, size, -EINVAL, "'%s' is not a CPU number or range", item);
        if (*ret_last < *ret_first)
                return fail(reason, size, -EINVAL, "CPU list '%s' is descending", item);
        return 0;
}

static int add_item(Selection *s, const pmugate_info *info, const Domain *d, const char *item, char *reason,
                    size_t size) {
        unsigned long first = 0, last = 0;
        int r;

        r = parse_range(item, &first, &last, reason, size);
        if (r < 0)
                return r;
        for (unsigned long v = first; v <= last; v++) {
                const pmugate_cpu *c;
                uint32_t cpu;

                if (d->kind != 0) {
                        if (v >= d->n)
                                return fail(reason, size, -ENXIO, "%s:%s: %s has %zu CPUs (%s:0-%zu)",
                                            d->text, item, d->text, d->n, d->text, d->n - 1);
                        cpu = d->cpus[v];
                } else {
                        char online[LIST_TEXT_MAX];

                        c = v < PMUGATE_CPUS_MAX ? find_cpu(info, (uint32_t) v) : NULL;
                        if (!c || !c->online) {
                                online_list(info, online, sizeof(online));
                                return fail(reason, size, -ENXIO, "CPU %lu %s (online: %s)", v,
                                            c ? "is offline" : "does not exist on this machine", online);
                        }
                        cpu = (uint32_t) v;
                }
                if (cpu >= PMUGATE_CPUS_MAX)
                        return fail(reason, size, -EINVAL,
                                    "CPU %" PRIu32 " is past the last CPU pmugate describes", cpu);
                r = select_cpu(s, cpu);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void domain_done(Domain *d) {
        free(d->cpus);
        d->cpus = NULL;
}

int cpu_expr_parse(const char *text, const pmugate_info *info, uint32_t **ret_cpus, size_t *ret_n,
                   char *reterr_reason, size_t reason_size) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ bool *seen = NULL;
        Selection s = {};
        Domain d = {};
        char *saveptr = NULL;
        int r = 0;

        if (!text || !info || !ret_cpus || !ret_n)
                return -EINVAL;
        if (text[0] == '\0' || strlen(text) >= EXPR_MAX)
                return fail(reterr_reason, reason_size, -EINVAL, "the CPU list is empty or too long");
        buf = strdup(text);
        seen = calloc(PMUGATE_CPUS_MAX, sizeof(bool));
        if (!buf || !seen)
                return -ENOMEM;
        s.seen = seen;
        /* '@' and ',' both separate; an item with a colon opens a domain that the items after
         * it count in, until the next domain */
        for (char *item = strtok_r(buf, "@,", &saveptr); item && r >= 0;
             item = strtok_r(NULL, "@,", &saveptr)) {
                char *colon = strchr(item, ':');

                if (item[0] == ' ' || item[strlen(item) - 1] == ' ') {
                        r = fail(reterr_reason, reason_size, -EINVAL, "'%s': no spaces in CPU lists", item);
                        break;
                }
                if (colon) {
                        domain_done(&d);
                        r = domain_open(info, item, (size_t) (colon - item), &d, reterr_reason, reason_size);
                        if (r < 0)
                                break;
                        item = colon + 1;
                        if (*item == '\0') {
                                for (size_t i = 0; i < d.n && r >= 0; i++)
                                        r = select_cpu(&s, d.cpus[i]);
                                continue;
                        }
                }
                r = add_item(&s, info, &d, item, reterr_reason, reason_size);
        }
        domain_done(&d);
        if (r >= 0 && s.n == 0)
                r = fail(reterr_reason, reason_size, -EINVAL, "'%s' selects no CPU", text);
        if (r < 0) {
                free(s.cpus);
                return r;
        }
        *ret_cpus = s.cpus;
        *ret_n = s.n;
        return 0;
}

static bool listed_in(const uint32_t *cpus, size_t n, uint32_t cpu) {
        for (size_t i = 0; i < n; i++)
                if (cpus[i] == cpu)
                        return true;
        return false;
}

static int own_cpus(const pmugate_info *info, uint32_t **ret_cpus, size_t *ret_n, char *reason,
                    size_t size) {
        _cleanup_free_ uint32_t *cpus = calloc(info->n_cpus ?: 1, sizeof(uint32_t));
        size_t n = 0;
        cpu_set_t set;

        if (!cpus)
                return -ENOMEM;
        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return fail(reason, size, -EINVAL,
                            "cannot read the CPUs this process may run on: %s; give -c", strerror(errno));
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online && info->cpus[i].cpu < CPU_SETSIZE &&
                    CPU_ISSET(info->cpus[i].cpu, &set))
                        cpus[n++] = info->cpus[i].cpu;
        if (n == 0)
                return fail(reason, size, -ENXIO,
                            "none of the CPUs this process may run on is online on the "
                            "daemon's machine; give -c CPUS (such as N: for all)");
        *ret_cpus = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

int cpu_select(const char *opt, const char *text, const pmugate_info *info, uint32_t **ret_cpus,
               size_t *ret_n, char *reterr_reason, size_t reason_size) {
        _cleanup_free_ uint32_t *cpus = NULL, *outside = NULL;
        char inner[CPU_EXPR_REASON_MAX] = "", list[LIST_TEXT_MAX], job_list[LIST_TEXT_MAX];
        size_t n = 0, n_outside = 0;
        int r;

        if (text) {
                r = cpu_expr_parse(text, info, &cpus, &n, inner, sizeof(inner));
                if (r < 0)
                        return fail(reterr_reason, reason_size, r, "%s %s: %s", opt, text, inner);
        } else {
                r = own_cpus(info, &cpus, &n, reterr_reason, reason_size);
                if (r < 0)
                        return r;
        }
        if (info->scoped) {
                if (info->n_scope_cpus == 0)
                        return fail(reterr_reason, reason_size, -EACCES,
                                    "you have no job on this machine that pmugate may measure: %s",
                                    info->scope_reason[0] ? info->scope_reason : "no grant");
                outside = calloc(n, sizeof(uint32_t));
                if (!outside)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        if (!listed_in(info->scope_cpus, info->n_scope_cpus, cpus[i]))
                                outside[n_outside++] = cpus[i];
                if (n_outside > 0) {
                        if (cpulist_format(outside, n_outside, list, sizeof(list)) < 0)
                                (void) snprintf(list, sizeof(list), "%zu of them", n_outside);
                        if (cpulist_format(info->scope_cpus, info->n_scope_cpus, job_list,
                                           sizeof(job_list)) < 0)
                                (void) snprintf(job_list, sizeof(job_list), "%zu CPUs", info->n_scope_cpus);
                        return fail(reterr_reason, reason_size, -EACCES,
                                    "%s%s%s: CPU%s %s %s not in your job (job %s "
                                    "has CPUs %s)", text ? opt : "your CPUs", text ? " " : "", text ?: "",
                                    n_outside == 1 ? "" : "s", list, n_outside == 1 ? "is" : "are",
                                    info->scope_job, job_list);
                }
        }
        *ret_cpus = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

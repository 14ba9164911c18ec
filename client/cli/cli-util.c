/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Command-line helpers
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli-util.h"
#include "cpulist.h"
#include "pmugate-limits.h"

int cli_connect(const char *socket_path, pmugate **ret) {
        const char *path = socket_path ?: getenv("PMUGATE_SOCKET") ?: PMUGATE_DEFAULT_SOCKET;
        int r = pmugate_connect(socket_path, ret);

        /* the running program's own name: one prefix per program */
        if (r == -ENOENT || r == -ECONNREFUSED)
                fprintf(stderr,
                        "%s: cannot connect to %s: %s (is pmugated running? try 'systemctl start "
                        "pmugated.socket')\n", program_invocation_short_name, path, pmugate_strerror(r));
        else if (r < 0)
                fprintf(stderr, "%s: cannot connect to %s: %s\n", program_invocation_short_name, path,
                        pmugate_strerror(r));
        return r;
}

int cli_report(const char *prog, pmugate *c, int error, const char *what) {
        const pmugate_error *e = pmugate_last_error(c);

        if (e && e->code != 0)
                fprintf(stderr, "%s: %s refused: %s [%s]\n", prog, what, e->reason, e->name);
        else
                fprintf(stderr, "%s: %s failed: %s\n", prog, what, pmugate_strerror(error));
        return 1;
}

int cli_parse_u64(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s || !*s || *s == '-')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 0);
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int cli_parse_cpus(const char *s, uint32_t **ret_cpus, size_t *ret_n) {
        /* CPUs past the machine's last are accepted here so the daemon can name them in its
         * refusal. */
        return cpulist_parse(s, PMUGATE_CPUS_MAX, ret_cpus, ret_n);
}

int cli_parse_register(const char *s, const pmugate_info *info, bool pci, uint32_t *ret) {
        uint64_t v;
        bool is_pci;

        if (cli_parse_u64(s, &v) == 0) {
                if (v > UINT32_MAX)
                        return -ERANGE;
                *ret = (uint32_t) v;
                return 0;
        }
        if (pmugate_info_register_by_name(info, s, &is_pci, ret) < 0 || is_pci != pci)
                return -ENOENT;
        return 0;
}

/* What perf stat or likwid-perfctr users type, and what pmugate calls it. */
static const char *option_hint(const char *option) {
        static const struct {
                const char *option;
                const char *hint;
        } hints[] = {
                { "-x", "perf's -x, (CSV) is -O csv here" },
                { "--field-separator", "perf's -x, (CSV) is -O csv here" },
                { "-j", "perf's -j (JSON) is -O jsonl (one object a line) or -O json here" },
                { "--json", "perf's --json is -O jsonl (one object a line) or -O json here" },
                { "-a", "perf's -a (all CPUs) is the default here, or -c N: for every CPU of the node" },
                { "--all-cpus", "perf's -a (all CPUs) is the default here, or -c N: for every CPU of the node" },
                { "-M", "perf's -M (metrics) is -g GROUP here ('pmugate list groups')" },
                { "-t", "LIKWID's -t is -I here: -I 500ms" },
                { "-T", "LIKWID's -T is -I here: -I 500ms" },
        };

        for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
                if (strcmp(option, hints[i].option) == 0)
                        return hints[i].hint;
        return NULL;
}

int cli_unknown_option(const char *prog, const char *verb, char *const argv[], int opt) {
        char option[64];
        const char *hint;

        /* optopt is the character of a short option, 0 for an unknown long one; a long one, and
         * one lacking its value, is the argument just passed */
        if (optopt > 0 && optopt < 128 && !(opt == ':' && optind > 0 && strncmp(argv[optind - 1], "--", 2) == 0))
                (void) snprintf(option, sizeof(option), "-%c", optopt);
        else if (optind > 0)
                (void) snprintf(option, sizeof(option), "%.*s", (int) strcspn(argv[optind - 1], "="),
                                argv[optind - 1]);
        else
                (void) snprintf(option, sizeof(option), "?");
        hint = option_hint(option);
        fprintf(stderr, "%s: %s %s%s%s%s (see '%s%s%s --help')\n", prog,
                opt == ':' ? "option" : "unknown option", option, opt == ':' ? " needs a value" : "",
                hint ? "; " : "", hint ?: "", prog, verb ? " " : "", verb ?: "");
        return -EINVAL;
}

void cli_csv_text(FILE *f, const char *s) {
        if (!s)
                return;
        if (!strpbrk(s, ",\"\r\n")) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

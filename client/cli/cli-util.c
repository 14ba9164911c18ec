/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Command-line helpers
 */
#include <errno.h>
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugatectl: the admin command line
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "build-config.h"
#include "cli-util.h"
#include "macro.h"

static const char *arg_socket;

static void help(void) {
        printf("Usage: pmugatectl [--socket=PATH] COMMAND\n"
               "\n"
               "Administer pmugated (needs root or a group in admin_groups).\n"
               "\n"
               "Commands:\n"
               "  status            Clients, counters and audit state of the daemon\n"
               "\n"
               "Options:\n"
               "  -h --help          Show this help\n"
               "     --version       Show the version\n"
               "     --socket=PATH   Daemon socket (default: $PMUGATE_SOCKET or %s)\n",
               PMUGATE_DEFAULT_SOCKET);
}

static int verb_status(void) {
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        pmugate_status *s = NULL;
        int r;

        r = cli_connect(arg_socket, &c);
        if (r < 0)
                return 1;
        r = pmugate_status_get(c, &s);
        if (r < 0)
                return cli_report("pmugatectl", c, r, "status");

        printf("Server:    %s (%s backend)\n", s->server, s->backend);
        printf("Clients:   %zu connected\n", s->n_clients);
        for (size_t i = 0; i < s->n_clients; i++)
                printf("  uid %-6" PRIu32 " pid %-8" PRId32 " role %-6s requests %" PRIu64 "\n", s->clients[i].uid,
                       s->clients[i].pid, s->clients[i].role, s->clients[i].requests);
        printf("Requests:  %" PRIu64 " (%" PRIu64 " register ops), %" PRIu64 " denials, %" PRIu64 " protocol errors\n",
               s->requests, s->ops, s->denials, s->protocol_errors);
        printf("Connections: %" PRIu64 " accepted, %" PRIu64 " refused\n", s->connections, s->refused_connections);
        printf("Audit:     %s, %" PRIu64 " records, %" PRIu64 " held back by the rate limit\n", s->audit_sink,
               s->audit_emitted, s->audit_suppressed);
        pmugate_status_free(s);
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "socket", required_argument, NULL, 's' },
                {}
        };
        int opt;

        while ((opt = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("pmugatectl %s\n", PMUGATE_VERSION);
                        return 0;
                case 's':
                        arg_socket = optarg;
                        break;
                default:
                        return 2;
                }
        if (optind >= argc) {
                help();
                return 2;
        }
        if (strcmp(argv[optind], "status") == 0 && optind + 1 == argc)
                return verb_status();
        fprintf(stderr, "pmugatectl: unknown command '%s' (see 'pmugatectl --help')\n", argv[optind]);
        return 2;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate: the user command line
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build-config.h"
#include "cli/cli-util.h"
#include "cli/verb-info.h"
#include "cli/verb-job.h"
#include "cli/verb-likwid.h"
#include "cli/verb-list.h"
#include "cli/verb-measure.h"
#include "cli/verb-timing.h"
#include "cpulist.h"
#include "macro.h"

#define ARGS_DONE 1     /* --help was shown */

static const char *arg_socket;

static void help(void) {
        printf("Usage: pmugate [--socket=PATH] COMMAND [ARGS...]\n"
               "\n"
               "Read and program CPU performance counters through pmugated.\n"
               "\n"
               "Commands:\n"
               "  info [--json]                   Machine, PMU, registers and your rights\n"
               "  read -c CPUS REG...             Read MSRs on CPUs (CPUS like 0-3,8)\n"
               "  read -u UNITS REG...            Read PCI config registers of uncore units\n"
               "  write -c CPUS REG=VALUE... [-- CMD ARGS...]\n"
               "                                  Write MSRs (under the register's write mask)\n"
               "  write -u UNITS REG=VALUE... [-- CMD ARGS...]\n"
               "                                  Write PCI config registers of uncore units\n"
               "  topdown [-l 1-4] [-C CPUS | -c CPUS] [-I INTERVAL] [-S DURATION] [-O table|csv|json]\n"
               "          [-o FILE] [-A] [-- CMD ARGS...]\n"
               "                                  TopDown levels 1-4 on CPUs (default: all): -C pins\n"
               "                                  CMD to them, -c only measures; -S measures for a time,\n"
               "                                  -I prints every interval; CMD's exit status is kept\n"
               "  stat -e EVENT,... | -g GROUP [same options]\n"
               "                                  Count events, or a group of events and formulas\n"
               "  list [events|groups|metrics] [PATTERN]\n"
               "                                  What this machine's CPU model can measure\n"
               "  timing [--mode branches|ips] [--top N] [--block SYMBOL|ADDR] [-O FORMAT] [-o FILE]\n"
               "         -- CMD ARGS... | -p PID\n"
               "                                  Cycles per basic block from the LBR (or sampled IPs)\n"
               "                                  of your command or process, with histograms\n"
               "  plot [-o PNG] [-m METRIC] FILE  TopDown over time and a per-CPU heatmap from -I output;\n"
               "                                  a timing result's histograms, two of them overlaid\n"
               "  topdown|stat -m ... -- CMD ARGS...\n"
               "                                  Per region CMD marks with pmugate's or LIKWID's markers\n"
               "  job [--dir DIR] [--nodes HOSTLIST] [-O table|csv|json] JOBID\n"
               "                                  A job's report across its nodes from the Slurm Epilog's\n"
               "                                  summaries: per node, total and imbalance (no daemon)\n"
               "  likwid -- LIKWID-COMMAND [ARGS...]\n"
               "                                  Run a LIKWID tool with its register accesses going\n"
               "                                  through pmugated (README: Using LIKWID's tools)\n"
               "\n"
               "'pmugate COMMAND --help' describes each command. CPUS may also be likwid's domain\n"
               "expressions (S0:0-3, N:0-7, C0:, M0:). Counts are per CPU, not per process.\n"
               "\n"
               "REG is an address (0x186) or a name from 'pmugate info' (IA32_PERFEVTSEL0).\n"
               "VALUE is hex (0x...) or decimal. Bits outside a register's write mask are kept.\n"
               "write holds a lease on the CPUs only while it runs: when it exits, the daemon puts\n"
               "back every register it wrote and zeroes its counters. Give a command after -- to keep\n"
               "the registers programmed while it runs; its exit status becomes write's.\n"
               "\n"
               "Options:\n"
               "  -h --help          Show this help\n"
               "     --version       Show the version\n"
               "     --socket=PATH   Daemon socket (default: $PMUGATE_SOCKET or %s)\n",
               PMUGATE_DEFAULT_SOCKET);
}

static void help_access(bool write) {
        if (write)
                printf("Usage: pmugate write -c CPUS REG=VALUE... [-- COMMAND ARGS...]\n"
                       "       pmugate write -u UNITS REG=VALUE... [-- COMMAND ARGS...]\n"
                       "\n"
                       "Write MSRs of CPUS, or PCI config registers of uncore UNITS, under each register's\n"
                       "write mask. The daemon puts every register back when pmugate exits; with a\n"
                       "COMMAND they stay written while it runs, and its exit status becomes pmugate's.\n");
        else
                printf("Usage: pmugate read -c CPUS REG...\n"
                       "       pmugate read -u UNITS REG...\n"
                       "\n"
                       "Read MSRs of CPUS, or PCI config registers of uncore UNITS.\n");
        printf("\n"
               "REG is an address (0x186) or an allowlist name (IA32_PERFEVTSEL0, 'pmugate info\n"
               "--json'); VALUE is hex (0x...) or decimal; CPUS and UNITS are lists such as 0-3,8.\n"
               "\n"
               "  -c --cpus=CPUS     CPUs whose MSRs to %s\n"
               "  -u --units=UNITS   Uncore units whose PCI registers to %s\n"
               "  -h --help          Show this help\n", write ? "write" : "read", write ? "write" : "read");
}

static int unknown_option(const char *verb, char *argv[], int opt) {
        return cli_unknown_option("pmugate", verb, argv, opt);
}

typedef struct Access {
        bool write;
        bool pci;
        char **command;         /* after "--"; NULL when none */
        uint32_t *targets;
        size_t n_targets;
        uint32_t *regs;
        uint64_t *values;
        size_t n_regs;
} Access;

static void access_done(Access *a) {
        free(a->targets);
        free(a->regs);
        free(a->values);
}

static int parse_access(int argc, char *argv[], bool write, const pmugate_info *info, Access *ret) {
        static const struct option options[] = {
                { "cpus", required_argument, NULL, 'c' },
                { "units", required_argument, NULL, 'u' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *cpus = NULL, *units = NULL;
        Access a = { .write = write };
        int opt, r;

        opterr = 0;

        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--") == 0) {
                        if (!write || i + 1 >= argc) {
                                fprintf(stderr, "pmugate: '--' must be followed by a command, and only for write\n");
                                return -EINVAL;
                        }
                        a.command = argv + i + 1;
                        argc = i;
                        break;
                }
        while ((opt = getopt_long(argc, argv, "+c:u:h", options, NULL)) >= 0)
                switch (opt) {
                case 'c':
                        cpus = optarg;
                        break;
                case 'u':
                        units = optarg;
                        break;
                case 'h':
                        help_access(write);
                        return ARGS_DONE;
                default:
                        return unknown_option(write ? "write" : "read", argv, opt);
                }
        if (!!cpus == !!units) {
                fprintf(stderr, "pmugate: give either -c CPUS (MSRs) or -u UNITS (PCI registers)\n");
                return -EINVAL;
        }
        if (optind >= argc) {
                fprintf(stderr, "pmugate: no registers given\n");
                return -EINVAL;
        }
        a.pci = !!units;
        r = cli_parse_cpus(cpus ?: units, &a.targets, &a.n_targets);
        if (r < 0) {
                fprintf(stderr, "pmugate: bad %s list '%s': %s\n", cpus ? "CPU" : "unit", cpus ?: units, pmugate_strerror(r));
                return r;
        }
        a.n_regs = (size_t) (argc - optind);
        a.regs = calloc(a.n_regs, sizeof(*a.regs));
        a.values = calloc(a.n_regs, sizeof(*a.values));
        if (!a.regs || !a.values) {
                access_done(&a);
                return -ENOMEM;
        }
        for (size_t i = 0; i < a.n_regs; i++) {
                _cleanup_free_ char *arg = strdup(argv[optind + (int) i]);
                char *eq;

                if (!arg) {
                        access_done(&a);
                        return -ENOMEM;
                }
                eq = strchr(arg, '=');
                if (write != !!eq) {
                        fprintf(stderr, "pmugate: '%s': %s\n", arg, write ? "expected REG=VALUE" : "expected REG (no value)");
                        access_done(&a);
                        return -EINVAL;
                }
                if (eq)
                        *eq = '\0';
                if (cli_parse_register(arg, info, a.pci, &a.regs[i]) < 0) {
                        fprintf(stderr, "pmugate: unknown register '%s' (see 'pmugate info --json')\n", arg);
                        access_done(&a);
                        return -EINVAL;
                }
                if (eq && cli_parse_u64(eq + 1, &a.values[i]) < 0) {
                        fprintf(stderr, "pmugate: bad value '%s' for %s\n", eq + 1, arg);
                        access_done(&a);
                        return -EINVAL;
                }
        }
        *ret = a;
        return 0;
}

/* The scope of MSR reg in the allowlist: "thread", "core", "ccx" or "package" ("thread" when
 * unlisted). */
static const char *msr_scope(const pmugate_info *info, uint32_t reg) {
        for (size_t i = 0; i < info->n_registers; i++) {
                const pmugate_register *e = &info->registers[i];

                if (!e->pci && reg >= e->first && reg <= e->last)
                        return e->scope;
        }
        return "thread";
}

static const pmugate_cpu *cpu_info(const pmugate_info *info, uint32_t cpu) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].cpu == cpu)
                        return &info->cpus[i];
        return NULL;
}

/* Whether online CPU o shares a register the write changes: a thread of a target's core for a
 * core register, a CPU of a target's CCX for a CCX register (of its package where either's L3
 * is unknown, as the daemon has it), a CPU of a target's package for a package register or a
 * unit. */
static bool shares_register(const pmugate_info *info, const Access *a, const pmugate_cpu *o) {
        for (size_t t = 0; t < a->n_targets; t++) {
                const pmugate_cpu *target;

                if (a->pci) {
                        if (a->targets[t] < info->n_units && info->units[a->targets[t]].package >= 0 &&
                            info->units[a->targets[t]].package == o->package)
                                return true;
                        continue;
                }
                target = cpu_info(info, a->targets[t]);
                for (size_t r = 0; target && target->online && r < a->n_regs; r++) {
                        const char *scope = msr_scope(info, a->regs[r]);

                        if (strcmp(scope, "package") == 0 && o->package == target->package)
                                return true;
                        if (strcmp(scope, "ccx") == 0 && o->package == target->package &&
                            (o->ccx == target->ccx || o->ccx < 0 || target->ccx < 0))
                                return true;
                        if (strcmp(scope, "core") == 0 && o->package == target->package &&
                            o->core == target->core)
                                return true;
                }
        }
        return false;
}

static void add_cpu(uint32_t *cpus, size_t *n, uint32_t cpu) {
        for (size_t i = 0; i < *n; i++)
                if (cpus[i] == cpu)
                        return;
        cpus[(*n)++] = cpu;
}

/* The CPUs a write needs leases on, as the daemon decides them: the CPUs themselves, every
 * online thread of their core or CPU of their package for core and package registers, every
 * online CPU of a unit's package, and for a unit no online CPU stands for (its package is
 * unknown or offline; only admins may write it) the first online CPU. */
static int lease_for(pmugate *c, const pmugate_info *info, const Access *a) {
        _cleanup_free_ uint32_t *cpus = calloc(info->n_cpus + a->n_targets + 1, sizeof(uint32_t));
        size_t n = 0;

        if (!cpus)
                return -ENOMEM;
        for (size_t t = 0; !a->pci && t < a->n_targets; t++)
                add_cpu(cpus, &n, a->targets[t]);
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].online && shares_register(info, a, &info->cpus[i]))
                        add_cpu(cpus, &n, info->cpus[i].cpu);
        for (size_t t = 0; a->pci && t < a->n_targets; t++) {
                int32_t package = a->targets[t] < info->n_units ? info->units[a->targets[t]].package : -1;
                bool covered = false;

                for (size_t i = 0; i < info->n_cpus && !covered; i++)
                        covered = info->cpus[i].online && package >= 0 && info->cpus[i].package == package;
                for (size_t i = 0; i < info->n_cpus && !covered; i++)
                        if (info->cpus[i].online) {
                                add_cpu(cpus, &n, info->cpus[i].cpu);
                                covered = true;
                        }
        }
        return n > 0 ? pmugate_lease(c, cpus, n) : 0;
}

static int run_command(char **command) {
        pid_t pid;
        int status;

        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                execvp(command[0], command);
                fprintf(stderr, "pmugate: cannot run '%s': %s\n", command[0], strerror(errno));
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

static int run_access(pmugate *c, const pmugate_info *info, const Access *a) {
        _cleanup_(pmugate_batch_free_p) pmugate_batch *b = NULL;
        int r, failed = 0;

        r = pmugate_batch_new(&b);
        if (r < 0)
                return cli_report("pmugate", c, r, "batch");
        if (!a->write && !a->pci)
                r = pmugate_batch_read_msrs(b, a->targets, a->n_targets, a->regs, a->n_regs);
        else
                for (size_t t = 0; t < a->n_targets && r >= 0; t++)
                        for (size_t i = 0; i < a->n_regs && r >= 0; i++)
                                r = a->pci ? (a->write ? pmugate_batch_write_pci(b, a->targets[t], a->regs[i], a->values[i])
                                                       : pmugate_batch_read_pci(b, a->targets[t], a->regs[i]))
                                           : pmugate_batch_write_msr(b, a->targets[t], a->regs[i], a->values[i]);
        if (r < 0) {
                fprintf(stderr, "pmugate: too many operations: %s\n", pmugate_strerror(r));
                return 1;
        }
        if (a->write) {
                r = lease_for(c, info, a);
                if (r < 0)
                        return cli_report("pmugate", c, r, "lease");
        }
        r = pmugate_batch_run(c, b);
        if (r < 0)
                return cli_report("pmugate", c, r, a->write ? "write" : "read");

        for (size_t t = 0; t < a->n_targets; t++)
                for (size_t i = 0; i < a->n_regs; i++) {
                        uint64_t value;
                        char name[64];
                        int st = pmugate_batch_result(b, t * a->n_regs + i, &value);

                        pmugate_info_register_name(info, a->pci, a->regs[i], name, sizeof(name));
                        printf("%s%-4" PRIu32 " %-28s 0x%-6" PRIx32 " ", a->pci ? "unit " : "cpu ", a->targets[t],
                               name[0] ? name : "-", a->regs[i]);
                        if (st < 0) {
                                printf("error: %s\n", pmugate_strerror(st));
                                failed++;
                        } else
                                printf("0x%016" PRIx64 "%s\n", value, a->write ? " (written)" : "");
                }
        if (failed)
                return 1;
        if (a->command) {
                r = run_command(a->command);
                if (r < 0) {
                        fprintf(stderr, "pmugate: cannot run the command: %s\n", strerror(-r));
                        return 1;
                }
                return r;
        }
        return 0;
}

static int verb_access(int argc, char *argv[], bool write) {
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        pmugate_info *info = NULL;
        Access a;
        int r;

        /* register names need the daemon's allowlist, help does not */
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                        help_access(write);
                        return 0;
                }

        r = cli_connect(arg_socket, &c);
        if (r < 0)
                return 1;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return cli_report("pmugate", c, r, "hello");
        r = parse_access(argc, argv, write, info, &a);
        if (r != 0) {
                pmugate_info_free(info);
                return r == ARGS_DONE ? 0 : 2;
        }
        r = run_access(c, info, &a);
        access_done(&a);
        pmugate_info_free(info);
        return r;
}

/* pmugate plot: runs pmugate-plot from the directory this program is in, else from $PATH. */
static int verb_plot(char *argv[]) {
        char self[PATH_MAX], script[PATH_MAX + 16];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash;

        argv[0] = (char *) "pmugate-plot";
        if (n > 0) {
                self[n] = '\0';
                slash = strrchr(self, '/');
                if (slash) {
                        *slash = '\0';
                        (void) snprintf(script, sizeof(script), "%s/pmugate-plot", self);
                        if (access(script, X_OK) == 0)
                                execv(script, argv);
                }
        }
        execvp("pmugate-plot", argv);
        fprintf(stderr, "pmugate: cannot run pmugate-plot: %s\n", strerror(errno));
        return 1;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "socket", required_argument, NULL, 's' },
                {}
        };
        int opt;

        /* Options end at the command; the command parses its own. */
        opterr = 0;
        while ((opt = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("pmugate %s\n", PMUGATE_VERSION);
                        return 0;
                case 's':
                        arg_socket = optarg;
                        break;
                default:
                        (void) cli_unknown_option("pmugate", NULL, argv, opt);
                        return 2;
                }
        if (optind >= argc) {
                help();
                return 2;
        }
        argc -= optind;
        argv += optind;
        optind = 0;

        if (strcmp(argv[0], "info") == 0)
                return verb_info(argc, argv, arg_socket);
        if (strcmp(argv[0], "read") == 0)
                return verb_access(argc, argv, false);
        if (strcmp(argv[0], "write") == 0)
                return verb_access(argc, argv, true);
        if (strcmp(argv[0], "topdown") == 0)
                return verb_topdown(argc, argv, arg_socket);
        if (strcmp(argv[0], "stat") == 0)
                return verb_stat(argc, argv, arg_socket);
        if (strcmp(argv[0], "list") == 0)
                return verb_list(argc, argv, arg_socket);
        if (strcmp(argv[0], "timing") == 0)
                return verb_timing(argc, argv, arg_socket);
        if (strcmp(argv[0], "plot") == 0)
                return verb_plot(argv);
        if (strcmp(argv[0], "job") == 0)
                return verb_job(argc, argv);
        if (strcmp(argv[0], "likwid") == 0)
                return verb_likwid(argc, argv, arg_socket);
        fprintf(stderr, "pmugate: unknown command '%s' (see 'pmugate --help')\n", argv[0]);
        return 2;
}

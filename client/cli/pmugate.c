/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate: the user command line
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build-config.h"
#include "cli-util.h"
#include "cpulist.h"
#include "macro.h"
#include "verb-likwid.h"
#include "verb-list.h"
#include "verb-measure.h"

/* The package counters the daemon serves (memory traffic per socket), and those it could not
 * open, with why. */
static json_object *json_counters(const pmugate_info *info) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; i < info->n_counters; i++) {
                const pmugate_counter *c = &info->counters[i];
                json_object *o = json_object_new_object();

                json_object_object_add(o, "counter", json_object_new_int64(c->index));
                json_object_object_add(o, "name", json_object_new_string(c->name));
                json_object_object_add(o, "package", json_object_new_int64(c->package));
                json_object_object_add(o, "width", json_object_new_int(c->width));
                json_object_object_add(o, "scale", json_object_new_double(c->scale));
                json_object_object_add(o, "unit", json_object_new_string(c->unit));
                json_object_object_add(o, "class", json_object_new_string(c->cls));
                json_object_object_add(o, "error", c->error[0] ? json_object_new_string(c->error) : NULL);
                json_object_array_add(a, o);
        }
        return a;
}

static void print_counters(const pmugate_info *info) {
        printf("Package counters: %zu\n", info->n_counters);
        for (size_t i = 0; i < info->n_counters; i++) {
                const pmugate_counter *c = &info->counters[i];

                printf("  counter %-3u %-40s package %d%s%s\n", c->index, c->name, c->package,
                       c->error[0] ? "  not served: " : "", c->error);
        }
}

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
               "  topdown [-l 1|2] [-C CPUS | -c CPUS] [-I INTERVAL] [-S DURATION] [-O table|csv|json]\n"
               "          [-o FILE] [-A] [-- CMD ARGS...]\n"
               "                                  TopDown level 1 or 2 on CPUs (default: all): -C pins\n"
               "                                  CMD to them, -c only measures; -S measures for a time,\n"
               "                                  -I prints every interval; CMD's exit status is kept\n"
               "  stat -e EVENT,... | -g GROUP [same options]\n"
               "                                  Count events, or a group of events and formulas\n"
               "  topdown|stat -m ... -- CMD ARGS...\n"
               "                                  Per region CMD marks with pmugate's or LIKWID's markers\n"
               "  likwid -- LIKWID-COMMAND [ARGS...]\n"
               "                                  Run a LIKWID tool with its register accesses going\n"
               "                                  through pmugated (README: Using LIKWID's tools)\n"
               "  list [--model=KEY] groups       The groups the daemon's CPU model (or KEY) can run\n"
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

static int print_info_json(const pmugate_info *info) {
        json_object *root = json_object_new_object(), *cpu = json_object_new_object(), *caller = json_object_new_object();
        json_object *cpus = json_object_new_array(), *units = json_object_new_array(), *regs = json_object_new_array();
        char hex[32];

        json_object_object_add(root, "server", json_object_new_string(info->server));
        json_object_object_add(root, "protocol", json_object_new_int64(info->protocol));
        json_object_object_add(root, "backend", json_object_new_string(info->backend));
        json_object_object_add(root, "simulated", json_object_new_boolean(info->simulated));

        json_object_object_add(cpu, "vendor", json_object_new_string(info->vendor));
        json_object_object_add(cpu, "family", json_object_new_int64(info->family));
        json_object_object_add(cpu, "model", json_object_new_int64(info->model));
        json_object_object_add(cpu, "stepping", json_object_new_int64(info->stepping));
        json_object_object_add(cpu, "model_name", json_object_new_string(info->model_name));
        json_object_object_add(cpu, "key", json_object_new_string(info->model_key));
        json_object_object_add(cpu, "name", json_object_new_string(info->model_label));
        json_object_object_add(root, "cpu", cpu);

        if (info->has_pmu) {
                json_object *pmu = json_object_new_object();

                json_object_object_add(pmu, "version", json_object_new_int64(info->pmu_version));
                json_object_object_add(pmu, "gp_counters", json_object_new_int64(info->gp_counters));
                json_object_object_add(pmu, "fixed_counters", json_object_new_int64(info->fixed_counters));
                json_object_object_add(pmu, "counter_width", json_object_new_int64(info->counter_width));
                json_object_object_add(pmu, "perf_metrics", json_object_new_int64(info->perf_metrics));
                json_object_object_add(pmu, "slots_width", json_object_new_int64(info->slots_width));
                if (info->has_perf_capabilities) {
                        (void) snprintf(hex, sizeof(hex), "0x%" PRIx64, info->perf_capabilities);
                        json_object_object_add(pmu, "perf_capabilities", json_object_new_string(hex));
                }
                if (strcmp(info->vendor, "AuthenticAMD") == 0) {
                        json_object_object_add(pmu, "perfmon_v2", json_object_new_boolean(info->perfmon_v2));
                        json_object_object_add(pmu, "l3_counters", json_object_new_int64(info->l3_counters));
                        json_object_object_add(pmu, "df_counters", json_object_new_int64(info->df_counters));
                        json_object_object_add(pmu, "umc_counters",
                                               json_object_new_int64(info->umc_counters));
                        json_object_object_add(pmu, "cpuid", json_object_new_boolean(info->cpuid_read));
                }
                json_object_object_add(root, "pmu", pmu);
        }

        for (size_t i = 0; i < info->n_cpus; i++) {
                json_object *c = json_object_new_object();

                json_object_object_add(c, "cpu", json_object_new_int64(info->cpus[i].cpu));
                json_object_object_add(c, "package", json_object_new_int64(info->cpus[i].package));
                json_object_object_add(c, "die", json_object_new_int64(info->cpus[i].die));
                json_object_object_add(c, "core", json_object_new_int64(info->cpus[i].core));
                json_object_object_add(c, "thread", json_object_new_int64(info->cpus[i].thread));
                json_object_object_add(c, "online", json_object_new_boolean(info->cpus[i].online));
                json_object_object_add(c, "ccx", json_object_new_int64(info->cpus[i].ccx));
                json_object_array_add(cpus, c);
        }
        json_object_object_add(root, "cpus", cpus);

        for (size_t i = 0; i < info->n_units; i++) {
                json_object *u = json_object_new_object();

                json_object_object_add(u, "unit", json_object_new_int64(info->units[i].index));
                json_object_object_add(u, "bdf", json_object_new_string(info->units[i].bdf));
                (void) snprintf(hex, sizeof(hex), "%04x:%04x", info->units[i].vendor, info->units[i].device);
                json_object_object_add(u, "id", json_object_new_string(hex));
                json_object_object_add(u, "package", json_object_new_int64(info->units[i].package));
                json_object_array_add(units, u);
        }
        json_object_object_add(root, "units", units);
        json_object_object_add(root, "counters", json_counters(info));

        for (size_t i = 0; i < info->n_registers; i++) {
                const pmugate_register *r = &info->registers[i];
                json_object *o = json_object_new_object();

                json_object_object_add(o, "kind", json_object_new_string(r->pci ? "pci" : "msr"));
                json_object_object_add(o, "name", json_object_new_string(r->name));
                (void) snprintf(hex, sizeof(hex), "0x%" PRIx32, r->first);
                json_object_object_add(o, "first", json_object_new_string(hex));
                (void) snprintf(hex, sizeof(hex), "0x%" PRIx32, r->last);
                json_object_object_add(o, "last", json_object_new_string(hex));
                (void) snprintf(hex, sizeof(hex), "0x%" PRIx64, r->write_mask);
                json_object_object_add(o, "write_mask", json_object_new_string(hex));
                json_object_object_add(o, "scope", json_object_new_string(r->scope));
                json_object_object_add(o, "class", json_object_new_string(r->cls));
                if (r->pci) {
                        (void) snprintf(hex, sizeof(hex), "%04x:%04x", r->pci_vendor, r->pci_device);
                        json_object_object_add(o, "pci_id", json_object_new_string(hex));
                        json_object_object_add(o, "width", json_object_new_int64(r->width));
                }
                json_object_array_add(regs, o);
        }
        json_object_object_add(root, "registers", regs);

        json_object_object_add(root, "nmi_watchdog", json_object_new_boolean(info->nmi_watchdog));
        json_object_object_add(caller, "uid", json_object_new_int64(info->uid));
        json_object_object_add(caller, "gid", json_object_new_int64(info->gid));
        json_object_object_add(caller, "pid", json_object_new_int64(info->pid));
        json_object_object_add(caller, "role", json_object_new_string(info->role));
        json_object_object_add(caller, "read", json_object_new_boolean(info->may_read));
        json_object_object_add(caller, "write", json_object_new_boolean(info->may_write));
        json_object_object_add(caller, "admin", json_object_new_boolean(info->may_admin));
        if (info->rights_reason[0])
                json_object_object_add(caller, "reason", json_object_new_string(info->rights_reason));
        if (info->scoped) {
                json_object *scope = json_object_new_object(), *scope_cpus = json_object_new_array();

                if (info->scope_job[0])
                        json_object_object_add(scope, "job", json_object_new_string(info->scope_job));
                for (size_t i = 0; i < info->n_scope_cpus; i++)
                        json_object_array_add(scope_cpus, json_object_new_int64(info->scope_cpus[i]));
                json_object_object_add(scope, "cpus", scope_cpus);
                if (info->scope_reason[0])
                        json_object_object_add(scope, "reason", json_object_new_string(info->scope_reason));
                json_object_object_add(caller, "scope", scope);
        }
        json_object_object_add(root, "mode", json_object_new_string(info->mode[0] ? info->mode : "open"));
        json_object_object_add(root, "caller", caller);

        puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
        return 0;
}

static void print_info_text(const pmugate_info *info) {
        uint32_t online[8192];
        size_t n_online = 0, n_packages = 0;
        char list[1024];

        for (size_t i = 0; i < info->n_cpus && n_online < ELEMENTSOF(online); i++) {
                if (!info->cpus[i].online)
                        continue;
                online[n_online++] = info->cpus[i].cpu;
                if ((size_t) info->cpus[i].package + 1 > n_packages)
                        n_packages = (size_t) info->cpus[i].package + 1;
        }
        if (cpulist_format(online, n_online, list, sizeof(list)) < 0)
                (void) snprintf(list, sizeof(list), "(%zu CPUs)", n_online);

        printf("Server:        %s (protocol %u)\n", info->server, info->protocol);
        printf("Backend:       %s%s\n", info->backend, info->simulated ? " (simulated PMU)" : "");
        printf("CPU:           %s %s (family %u model 0x%x stepping %u)\n", info->vendor,
               info->model_label[0] ? info->model_label : "unknown model", info->family, info->model, info->stepping);
        printf("Model name:    %s\n", info->model_name);
        if (info->has_pmu)
                printf("PMU:           version %u, %u general-purpose + %u fixed counters, %u bits, PERF_METRICS %s\n",
                       info->pmu_version, info->gp_counters, info->fixed_counters, info->counter_width,
                       info->perf_metrics == 0 ? "no" : info->perf_metrics == 1 ? "L1" : "L1+L2");
        if (info->has_pmu && strcmp(info->vendor, "AuthenticAMD") == 0)
                printf("AMD PMU:       PerfMonV2 %s, %u L3 counters per CCX, %u data-fabric and %u "
                       "memory-controller counters per package%s\n", info->perfmon_v2 ? "yes" : "no",
                       info->l3_counters, info->df_counters, info->umc_counters,
                       info->cpuid_read ? "" :
                                          " (the model's defaults: CPUID leaf 0x80000022 was not read)");
        printf("CPUs online:   %s (%zu CPUs, %zu packages)\n", list, n_online, n_packages);
        printf("Uncore units:  %zu\n", info->n_units);
        for (size_t i = 0; i < info->n_units; i++)
                printf("  unit %-3u %s %04x:%04x package %d\n", info->units[i].index, info->units[i].bdf,
                       info->units[i].vendor, info->units[i].device, info->units[i].package);
        print_counters(info);
        if (info->nmi_watchdog || info->foreign_fixed_mask || info->foreign_gp_mask)
                printf("Foreign users: %s; fixed counters 0x%" PRIx64 " and general-purpose counters 0x%" PRIx64
                       " are held by another PMU user\n",
                       info->nmi_watchdog ? "kernel NMI watchdog" : "kernel perf", info->foreign_fixed_mask,
                       info->foreign_gp_mask);
        else
                printf("Foreign users: none detected\n");
        printf("Mode:          %s\n", info->mode[0] ? info->mode : "open");
        printf("You:           uid %u, role %s, read %s, write %s\n", info->uid, info->role,
               info->may_read ? "yes" : "no", info->may_write ? "yes" : "no");
        if (info->rights_reason[0])
                printf("               %s\n", info->rights_reason);
        if (info->scoped) {
                char cpus[1024];

                if (info->scope_job[0] && cpulist_format(info->scope_cpus, info->n_scope_cpus, cpus, sizeof(cpus)) >= 0)
                        printf("Job:           %s, CPUs %s\n", info->scope_job, cpus);
                else
                        printf("Job:           none: %s\n", info->scope_reason);
        }
        printf("Registers:     %zu allowlist entries ('pmugate info --json' lists them)\n", info->n_registers);
}

static int verb_info(int argc, char *argv[]) {
        static const struct option options[] = { { "json", no_argument, NULL, 'j' }, {} };
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        pmugate_info *info = NULL;
        bool json = false;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "j", options, NULL)) >= 0)
                if (opt == 'j')
                        json = true;
                else
                        return 2;
        if (optind < argc) {
                fprintf(stderr, "pmugate: info takes no arguments\n");
                return 2;
        }
        r = cli_connect(arg_socket, &c);
        if (r < 0)
                return 1;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return cli_report("pmugate", c, r, "info");
        if (json)
                print_info_json(info);
        else
                print_info_text(info);
        pmugate_info_free(info);
        return 0;
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
                {}
        };
        const char *cpus = NULL, *units = NULL;
        Access a = { .write = write };
        int opt, r;

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
        while ((opt = getopt_long(argc, argv, "+c:u:", options, NULL)) >= 0)
                switch (opt) {
                case 'c':
                        cpus = optarg;
                        break;
                case 'u':
                        units = optarg;
                        break;
                default:
                        return -EINVAL;
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

        r = cli_connect(arg_socket, &c);
        if (r < 0)
                return 1;
        r = pmugate_hello(c, &info);
        if (r < 0)
                return cli_report("pmugate", c, r, "hello");
        r = parse_access(argc, argv, write, info, &a);
        if (r < 0) {
                pmugate_info_free(info);
                return 2;
        }
        r = run_access(c, info, &a);
        access_done(&a);
        pmugate_info_free(info);
        return r;
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
                return verb_info(argc, argv);
        if (strcmp(argv[0], "read") == 0)
                return verb_access(argc, argv, false);
        if (strcmp(argv[0], "write") == 0)
                return verb_access(argc, argv, true);
        if (strcmp(argv[0], "topdown") == 0)
                return verb_topdown(argc, argv, arg_socket);
        if (strcmp(argv[0], "stat") == 0)
                return verb_stat(argc, argv, arg_socket);
        if (strcmp(argv[0], "likwid") == 0)
                return verb_likwid(argc, argv, arg_socket);
        if (strcmp(argv[0], "list") == 0)
                return verb_list(argc, argv, arg_socket);
        fprintf(stderr, "pmugate: unknown command '%s' (see 'pmugate --help')\n", argv[0]);
        return 2;
}

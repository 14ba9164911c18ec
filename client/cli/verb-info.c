/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate info: the daemon, the machine, its PMU and the caller's rights
 */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli-util.h"
#include "cli/verb-info.h"
#include "cpulist.h"
#include "macro.h"
#include "measure/topdown.h"

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

/* The PMUs perf_open may name (hello "pmus"): what the perf path can count on this node. */
static json_object *json_perf_pmus(const pmugate_info *info) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; i < info->n_pmus; i++) {
                const pmugate_perf_pmu *p = &info->pmus[i];
                json_object *o = json_object_new_object();

                json_object_object_add(o, "name", json_object_new_string(p->name));
                json_object_object_add(o, "kind", json_object_new_string(p->kind));
                json_object_object_add(o, "type", json_object_new_int64(p->type));
                json_object_object_add(o, "package", json_object_new_int64(p->package));
                json_object_object_add(o, "cpu", json_object_new_int64(p->cpu));
                json_object_object_add(o, "topdown", json_object_new_int(p->topdown));
                json_object_array_add(a, o);
        }
        return a;
}

static const char *topdown_words(uint8_t level) {
        switch (level) {
        case 0:
                return "";
        case 1:
                return "  TopDown level 1";
        default:
                return "  TopDown levels 1 and 2";
        }
}

static void print_perf_pmus(const pmugate_info *info) {
        printf("Perf PMUs:     %zu\n", info->n_pmus);
        for (size_t i = 0; i < info->n_pmus; i++) {
                const pmugate_perf_pmu *p = &info->pmus[i];
                char where[64] = "", line[256];
                size_t n;

                if (p->package >= 0)
                        (void) snprintf(where, sizeof(where), "  package %d, CPU %d", p->package, p->cpu);
                (void) snprintf(line, sizeof(line), "  %-28s %-8s type %-5u%s%s", p->name, p->kind, p->type,
                                where, topdown_words(p->topdown));
                /* the columns pad; the line does not end in blanks */
                for (n = strlen(line); n > 0 && line[n - 1] == ' '; n--)
                        line[n - 1] = '\0';
                puts(line);
        }
}

/* In job mode the role's rights apply only to the CPUs of a granted job: with none, nothing. */
static bool info_may_read(const pmugate_info *info) {
        return info->may_read && (!info->scoped || info->n_scope_cpus > 0);
}

static bool info_may_write(const pmugate_info *info) {
        return info->may_write && (!info->scoped || info->n_scope_cpus > 0);
}

static json_object *json_counting(const pmugate_info *info) {
        json_object *counting = json_object_new_object();

        json_object_object_add(counting, "via", json_object_new_string(info->counters_via));
        json_object_object_add(counting, "wanted", json_object_new_string(info->counters_wanted));
        json_object_object_add(counting, "reason", json_object_new_string(info->counters_reason));
        json_object_object_add(counting, "msr_reads", json_object_new_boolean(info->msr_reads));
        return counting;
}

/* Which TopDown formulas pmugate uses on this model: the recipe's TMA release, null where the
 * group files come from none, and the whole object null without a recipe. */
static json_object *json_topdown(const pmugate_info *info) {
        const TopdownRecipe *recipe = topdown_recipe_for_model(info->model_key);
        json_object *o;

        if (!recipe)
                return NULL;
        o = json_object_new_object();
        json_object_object_add(o, "tma_version",
                               recipe->tma_version ? json_object_new_string(recipe->tma_version) : NULL);
        json_object_object_add(o, "method", json_object_new_string(recipe->method));
        return o;
}

static void print_topdown(const pmugate_info *info) {
        const TopdownRecipe *recipe = topdown_recipe_for_model(info->model_key);

        if (!recipe)
                printf("TopDown:       none for this model\n");
        else if (recipe->tma_version)
                printf("TopDown:       Intel TMA %s (perf's metric files), %s\n", recipe->tma_version,
                       recipe->method);
        else
                printf("TopDown:       %s (no TMA release)\n", recipe->method);
}

static int print_info_json(const pmugate_info *info) {
        json_object *root = json_object_new_object(), *cpu = json_object_new_object();
        json_object *caller = json_object_new_object(), *cpus = json_object_new_array();
        json_object *units = json_object_new_array(), *regs = json_object_new_array();
        char hex[32];

        json_object_object_add(root, "server", json_object_new_string(info->server));
        json_object_object_add(root, "protocol", json_object_new_int64(info->protocol));
        json_object_object_add(root, "backend", json_object_new_string(info->backend));
        json_object_object_add(root, "simulated", json_object_new_boolean(info->simulated));
        json_object_object_add(root, "tsc_hz", info->tsc_hz > 0 ? json_object_new_int64((int64_t) info->tsc_hz) : NULL);
        json_object_object_add(root, "counting", json_counting(info));
        json_object_object_add(root, "perf_pmus", json_perf_pmus(info));

        json_object_object_add(cpu, "vendor", json_object_new_string(info->vendor));
        json_object_object_add(cpu, "family", json_object_new_int64(info->family));
        json_object_object_add(cpu, "model", json_object_new_int64(info->model));
        json_object_object_add(cpu, "stepping", json_object_new_int64(info->stepping));
        json_object_object_add(cpu, "model_name", json_object_new_string(info->model_name));
        json_object_object_add(cpu, "key", json_object_new_string(info->model_key));
        json_object_object_add(cpu, "name", json_object_new_string(info->model_label));
        json_object_object_add(root, "cpu", cpu);
        json_object_object_add(root, "topdown", json_topdown(info));

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
                json_object_object_add(u, "kernel", json_object_new_boolean(pmugate_info_unit_is_kernels(
                                                            info, info->units[i].index)));
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
        json_object_object_add(caller, "read", json_object_new_boolean(info_may_read(info)));
        json_object_object_add(caller, "write", json_object_new_boolean(info_may_write(info)));
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
        if (info->counters_reason[0])
                printf("Counters:      %s (%s)\n", info->counters_via, info->counters_reason);
        else
                printf("Counters:      %s\n", info->counters_via);
        print_perf_pmus(info);
        printf("CPU:           %s %s (family %u model 0x%x stepping %u)\n", info->vendor,
               info->model_label[0] ? info->model_label : "unknown model", info->family, info->model,
               info->stepping);
        printf("Model name:    %s\n", info->model_name);
        if (info->has_pmu)
                printf("PMU:           version %u, %u general-purpose + %u fixed counters, %u bits, "
                       "PERF_METRICS %s\n",
                       info->pmu_version, info->gp_counters, info->fixed_counters, info->counter_width,
                       info->perf_metrics == 0 ? "no" : info->perf_metrics == 1 ? "L1" : "L1+L2");
        if (info->has_pmu && strcmp(info->vendor, "AuthenticAMD") == 0)
                printf("AMD PMU:       PerfMonV2 %s, %u L3 counters per CCX, %u data-fabric and %u "
                       "memory-controller counters per package%s\n", info->perfmon_v2 ? "yes" : "no",
                       info->l3_counters, info->df_counters, info->umc_counters,
                       info->cpuid_read ? "" :
                                          " (the model's defaults: CPUID leaf 0x80000022 was not read)");
        print_topdown(info);
        printf("CPUs online:   %s (%zu CPUs, %zu packages)\n", list, n_online, n_packages);
        printf("Uncore units:  %zu\n", info->n_units);
        for (size_t i = 0; i < info->n_units; i++)
                printf("  unit %-3u %s %04x:%04x package %d%s\n", info->units[i].index, info->units[i].bdf,
                       info->units[i].vendor, info->units[i].device, info->units[i].package,
                       pmugate_info_unit_is_kernels(info, info->units[i].index) ?
                       " (held by the kernel's uncore_imc driver)" : "");
        print_counters(info);
        if (info->nmi_watchdog || info->foreign_fixed_mask || info->foreign_gp_mask)
                printf("Foreign users: %s; fixed counters 0x%" PRIx64 " and general-purpose counters 0x%"
                       PRIx64 " are held by another PMU user\n",
                       info->nmi_watchdog ? "kernel NMI watchdog" : "kernel perf", info->foreign_fixed_mask,
                       info->foreign_gp_mask);
        else if (!info->foreign_l3_mask && !info->foreign_df_mask && info->n_foreign_units == 0)
                printf("Foreign users: none detected\n");
        if (info->foreign_l3_mask || info->foreign_df_mask)
                printf("Foreign users: kernel amd_uncore; L3 counters 0x%" PRIx64 " and data-fabric "
                       "counters 0x%" PRIx64 " are held by it\n", info->foreign_l3_mask,
                       info->foreign_df_mask);
        if (info->n_foreign_units > 0)
                printf("Foreign users: kernel uncore_imc; %zu memory-controller channels are held by it "
                       "(read the package counters instead)\n", info->n_foreign_units);
        printf("Mode:          %s\n", info->mode[0] ? info->mode : "open");
        printf("You:           uid %u, role %s, read %s, write %s\n", info->uid, info->role,
               info_may_read(info) ? "yes" : "no", info_may_write(info) ? "yes" : "no");
        if (info->scoped && info->n_scope_cpus == 0 && (info->may_read || info->may_write))
                printf("               job mode: without a job granted on this machine you may neither read "
                       "nor "
                       "write\n");
        if (info->rights_reason[0])
                printf("               %s\n", info->rights_reason);
        if (info->scoped) {
                char cpus[1024];

                if (info->scope_job[0] && cpulist_format(info->scope_cpus, info->n_scope_cpus, cpus,
                                                         sizeof(cpus)) >= 0)
                        printf("Job:           %s, CPUs %s\n", info->scope_job, cpus);
                else
                        printf("Job:           none: %s\n", info->scope_reason);
        }
        printf("Registers:     %zu allowlist entries ('pmugate info --json' lists them)\n",
               info->n_registers);
}

static void help_info(void) {
        printf("Usage: pmugate info [--json]\n"
               "\n"
               "The daemon, how it counts (MSR writes or perf) and the PMUs perf events open on,\n"
               "the machine's CPU model and PMU, its CPUs and uncore units, counters another PMU\n"
               "user holds, and what you may do: read, write, and in job mode your job and its\n"
               "CPUs.\n"
               "\n"
               "  -j --json    Everything as JSON, the allowlist included\n"
               "  -h --help    Show this help\n");
}

int verb_info(int argc, char *argv[], const char *socket_path) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' }, {}
        };
        _cleanup_(pmugate_disconnect_p) pmugate *c = NULL;
        pmugate_info *info = NULL;
        bool json = false;
        int opt, r;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, "jh", options, NULL)) >= 0)
                if (opt == 'j')
                        json = true;
                else if (opt == 'h') {
                        help_info();
                        return 0;
                } else {
                        (void) cli_unknown_option("pmugate", "info", argv, opt);
                        return 2;
                }
        if (optind < argc) {
                fprintf(stderr, "pmugate: info takes no arguments (see 'pmugate info --help')\n");
                return 2;
        }
        r = cli_connect(socket_path, &c);
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

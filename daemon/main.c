/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugated: start-up. Read configuration and allowlists, discover the machine, open every
 * device, bind the socket, drop privileges, serve.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "audit.h"
#include "backend/backend-choice.h"
#include "backend/machine.h"
#include "backend/perf-catalog.h"
#include "backend/perf-driver.h"
#include "backend/perf-opener.h"
#include "backend/sim/backend-sim.h"
#include "backend/sim/sim-perf.h"
#include "build-config.h"
#include "handlers/handlers.h"
#include "log.h"
#include "perf/perf-attr.h"
#include "pmu/allowlist.h"
#include "pmu/pmu-uncore.h"
#include "policy/config.h"
#include "privileges.h"
#include "server/server.h"
#include "state-dir.h"

typedef struct Options {
        const char *socket_path;
        const char *root;
        const char *backend;
        int counters;           /* --counters: a BackendWanted, or -1 for the configuration's */
        const char *sim_model;
        const char *sim_config;
        const char *config_path;
        bool config_explicit;
        const char *allowlist_dir;
        const char *user;
        const char *audit_log;
        const char *runtime_dir;
        const char *perf_opener;        /* the opener service's socket; NULL: fork the opener */
} Options;

static void help(void) {
        printf("Usage: pmugated [OPTIONS]\n"
               "\n"
               "Serve allowlisted CPU PMU and uncore registers to unprivileged clients.\n"
               "\n"
               "  -h --help                 Show this help\n"
               "     --version              Show the version\n"
               "     --socket=PATH          Socket to bind when not socket-activated\n"
               "                            (default: $PMUGATE_SOCKET or %s)\n"
               "     --root=DIR             Find /proc, /sys and /dev under DIR (default: /)\n"
               "     --backend=dev|sim      Register backend: the kernel's devices, or a simulated PMU\n"
               "     --counters=auto|msr|perf\n"
               "                            Program counters with MSR writes or through perf_event_open\n"
               "                            (default: backend= in [counters] of the configuration, auto)\n"
               "     --sim-model=MODEL      Simulated CPU model: skx, clx, icx, spr, emr, gnr, srf,\n"
               "                            zen4, zen5 or grace (with --backend=sim; default: model=\n"
               "                            of --sim-config)\n"
               "     --sim-config=FILE      Simulator topology, profiles and injection (with --backend=sim)\n"
               "     --config=FILE          Configuration file (default: %s)\n"
               "     --allowlist-dir=DIR    Directory of per-model allowlists (default: %s)\n"
               "     --user=NAME            User to run as after start-up (default: %s)\n"
               "     --audit-log=FILE       Write audit records to FILE instead of the journal\n"
               "     --runtime-dir=DIR      Keep job grants and lease journals in DIR/state (default: %s)\n"
               "     --perf-opener=SOCKET   Open perf events through the opener service at SOCKET\n"
               "                            (pmugate-perf-opener.socket) instead of a forked opener\n"
               "  -v --verbose              Log debug messages\n",
               PMUGATE_SOCKET_PATH, PMUGATE_CONFIG_FILE, PMUGATE_ALLOWLIST_DIR, PMUGATE_USER, PMUGATE_RUNTIME_DIR);
        if (!backend_sim_built())
                printf("\nThis pmugated is built without the simulator (-Dsimulator=false): "
                       "--backend=sim is not available.\n");
}

static int parse_argv(int argc, char *argv[], Options *o) {
        enum {
                ARG_VERSION = 0x100,
                ARG_SOCKET,
                ARG_ROOT,
                ARG_BACKEND,
                ARG_COUNTERS,
                ARG_SIM_MODEL,
                ARG_SIM_CONFIG,
                ARG_CONFIG,
                ARG_ALLOWLIST_DIR,
                ARG_USER,
                ARG_AUDIT_LOG,
                ARG_RUNTIME_DIR,
                ARG_PERF_OPENER,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "root", required_argument, NULL, ARG_ROOT },
                { "backend", required_argument, NULL, ARG_BACKEND },
                { "counters", required_argument, NULL, ARG_COUNTERS },
                { "sim-model", required_argument, NULL, ARG_SIM_MODEL },
                { "sim-config", required_argument, NULL, ARG_SIM_CONFIG },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "allowlist-dir", required_argument, NULL, ARG_ALLOWLIST_DIR },
                { "user", required_argument, NULL, ARG_USER },
                { "audit-log", required_argument, NULL, ARG_AUDIT_LOG },
                { "runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR },
                { "perf-opener", required_argument, NULL, ARG_PERF_OPENER },
                { "verbose", no_argument, NULL, 'v' },
                {}
        };
        const char *env = secure_getenv("PMUGATE_SOCKET");
        int c;

        *o = (Options) {
                .socket_path = env && *env ? env : PMUGATE_SOCKET_PATH,
                .root = "/",
                .backend = "dev",
                .counters = -1,
                .config_path = PMUGATE_CONFIG_FILE,
                .allowlist_dir = PMUGATE_ALLOWLIST_DIR,
                .user = PMUGATE_USER,
                .runtime_dir = PMUGATE_RUNTIME_DIR,
        };
        while ((c = getopt_long(argc, argv, "hv", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("pmugated %s\n", PMUGATE_VERSION);
                        return 0;
                case ARG_SOCKET:
                        o->socket_path = optarg;
                        break;
                case ARG_ROOT:
                        o->root = optarg;
                        break;
                case ARG_BACKEND:
                        if (strcmp(optarg, "dev") != 0 && strcmp(optarg, "sim") != 0)
                                return log_error_errno(EINVAL, "Unknown backend '%s': use dev or sim", optarg);
                        if (strcmp(optarg, "sim") == 0 && !backend_sim_built())
                                return log_error_errno(EOPNOTSUPP,
                                                       "--backend=sim is not in this build: pmugated was "
                                                       "built with -Dsimulator=false (as distribution "
                                                       "packages are); use --backend=dev, or a source "
                                                       "build for the simulator");
                        o->backend = optarg;
                        break;
                case ARG_COUNTERS:
                        o->counters = backend_wanted_from_string(optarg);
                        if (o->counters < 0)
                                return log_error_errno(EINVAL, "Unknown --counters='%s': use auto, msr or perf",
                                                       optarg);
                        break;
                case ARG_SIM_MODEL:
                        o->sim_model = optarg;
                        break;
                case ARG_SIM_CONFIG:
                        o->sim_config = optarg;
                        break;
                case ARG_CONFIG:
                        o->config_path = optarg;
                        o->config_explicit = true;
                        break;
                case ARG_ALLOWLIST_DIR:
                        o->allowlist_dir = optarg;
                        break;
                case ARG_USER:
                        o->user = optarg;
                        break;
                case ARG_AUDIT_LOG:
                        o->audit_log = optarg;
                        break;
                case ARG_RUNTIME_DIR:
                        o->runtime_dir = optarg;
                        break;
                case ARG_PERF_OPENER:
                        if (optarg[0] != '/')
                                return log_error_errno(EINVAL, "--perf-opener='%s' is not an absolute path", optarg);
                        o->perf_opener = optarg;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return log_error_errno(EINVAL, "Unhandled option");
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "Unexpected argument '%s'", argv[optind]);
        if (strcmp(o->backend, "sim") == 0 && !o->sim_model && !o->sim_config)
                return log_error_errno(EINVAL, "--backend=sim needs --sim-model=skx|clx|icx|spr|emr|gnr|srf|zen4|zen5|grace "
                                       "or a --sim-config whose [machine] names its model");
        if (strcmp(o->backend, "sim") != 0 && (o->sim_model || o->sim_config))
                return log_error_errno(EINVAL, "--sim-model and --sim-config need --backend=sim");
        return 1;
}

/* Only PCI functions the allowlist has registers for become units, so no unrelated device is
 * opened. */
static bool allowlist_names_device(uint16_t vendor, uint16_t device, const void *userdata) {
        const Allowlist *a = userdata;

        for (size_t i = 0; i < a->n_pci; i++)
                if (a->pci[i].pci_vendor == vendor && a->pci[i].pci_device == device)
                        return true;
        return false;
}

/* One fd per CPU's msr device and per uncore unit, and per client its socket and pidfd, plus
 * a journal per leased CPU: a large machine needs more than the usual soft limit of 1024. */
static void raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

/* --counters wins over the file. */
static BackendWanted counters_wanted(const Options *o, const Config *config) {
        return o->counters >= 0 ? (BackendWanted) o->counters : config->counters_backend;
}

static uint32_t first_online_cpu(const Machine *m) {
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                if (m->cpus[cpu].online)
                        return cpu;
        return 0;
}

/* msr or perf, decided once: logged with its reason, warned about when the administrator asked
 * for MSRs that the kernel does not let us write. */
static int choose_counters(const Options *o, const Config *config, Backend *backend, BackendChoice *ret) {
        bool amd = cpu_model_is_amd(backend->machine->cpu_model);
        BackendProbe probe = {
                .cpu = first_online_cpu(backend->machine),
                .reg = amd ? BACKEND_PROBE_MSR_AMD : BACKEND_PROBE_MSR_INTEL,
                .reg_name = amd ? "PerfEvtSel0" : "PERFEVTSEL0",
                .wanted_by = o->counters >= 0 ? "--counters" : "pmugate.conf",
                .no_msrs = cpu_model_is_arm(backend->machine->cpu_model) ? MACHINE_NO_MSRS_REASON : NULL,
        };
        int r;

        r = backend_choose(o->root, backend, &probe, counters_wanted(o, config), ret);
        if (r < 0 && probe.no_msrs)
                return log_error_errno(r, "Refusing to start: MSRs were asked for (%s) but there are none: %s; "
                                       "choose backend = auto or perf", probe.wanted_by, ret->reason);
        if (r < 0)
                return log_error_errno(r, "Refusing to start: MSRs were asked for (%s) but there is %s; "
                                       "load it with 'modprobe msr', or choose backend = auto or perf",
                                       probe.wanted_by, ret->reason);
        if (r > 0)
                log_warning("Counters via msr as asked (%s): writes will fail one by one", ret->reason);
        else
                log_info("Counters via %s: %s%s", backend_counters_to_string(ret->counters), ret->reason,
                         ret->counters == BACKEND_COUNTERS_MSR ? "" :
                         ret->msr_reads ? "; MSR reads of RAPL stay" : "; no MSR reads either");
        return 0;
}

/* The types of the kernel's PMUs, for the forked opener's own check (perf_attr_verify()): the
 * opener opens events in the kernel only, whichever device backend serves registers. Without
 * a readable sysfs only software events are admitted. */
static int kernel_perf_types(const char *root, const Machine *m, uint32_t **ret, size_t *ret_n) {
        PerfCatalog *c = NULL;
        uint32_t *types;
        int r;

        r = perf_catalog_read_sysfs(root, m, &c);
        if (r < 0) {
                log_warning_errno(r, "Cannot read the kernel's PMUs under %s: only software perf events can be opened",
                                  root);
                r = perf_catalog_new(&c);
                if (r < 0)
                        return log_error_errno(r, "Cannot allocate the perf catalogue");
        }
        types = calloc(c->n_pmus ? c->n_pmus : 1, sizeof(*types));
        if (!types) {
                perf_catalog_free(c);
                return log_error_errno(ENOMEM, "Cannot allocate the PMU types");
        }
        for (size_t i = 0; i < c->n_pmus; i++)
                types[i] = c->pmus[i].type;
        *ret_n = c->n_pmus;
        *ret = types;
        perf_catalog_free(c);
        return 0;
}

/* The perf_event path, set up while the daemon still has its start-up privileges: the PMUs
 * the kernel shows (or the simulated machine's), and the perf opener: forked now, keeping
 * CAP_PERFMON alone as the daemon's user (privileges.c leaves the serving process none), or with
 * --perf-opener the service pmugate-perf-opener, connected to once the daemon is its user
 * (connect_perf_opener()). Either checks every attr with perf_attr_verify() against the kernel's
 * PMU types. The kernel's perf driver opens every event through it; under the simulator, its
 * driver counts hardware events on the simulated PMU and hands software events to the kernel's. */
static int start_perf(const Options *o, const Machine *m, Backend *backend, uid_t uid, gid_t gid,
                      PerfCatalog **ret_catalog, PerfOpener **ret_opener, PerfDriver **ret_driver,
                      void (**ret_tick)(PerfDriver *d)) {
        _cleanup_free_ uint32_t *types = NULL;
        PerfCatalog *catalog = NULL;
        PerfOpener *opener = NULL;
        PerfDriver *kernel = NULL, *driver = NULL;
        size_t n_types = 0;
        bool sim = strcmp(o->backend, "sim") == 0;
        int r;

        r = sim ? backend_sim_perf_catalog(backend, &catalog) : perf_catalog_read_sysfs(o->root, m, &catalog);
        if (r < 0) {
                log_warning_errno(r, "Cannot read the %s PMUs: only software perf events are served",
                                  sim ? "simulated machine's" : "kernel's");
                r = perf_catalog_new(&catalog);
                if (r < 0)
                        return log_error_errno(r, "Cannot allocate the perf catalogue");
        }
        if (o->perf_opener) {
                r = perf_opener_new_remote(o->perf_opener, &opener);
                if (r < 0) {
                        log_error_errno(r, "Cannot set up the perf opener at %s", o->perf_opener);
                        goto fail;
                }
        } else {
                /* the opener opens events in the kernel only: its types are the kernel's */
                r = kernel_perf_types(o->root, m, &types, &n_types);
                if (r < 0)
                        goto fail;
                r = perf_opener_start(perf_attr_verify, types, n_types, uid, gid, &opener);
                if (r < 0) {
                        log_error_errno(r, "Cannot start the perf opener");
                        goto fail;
                }
        }
        r = perf_driver_kernel_new(opener, &kernel);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the kernel's perf driver");
                goto fail;
        }
        if (sim) {
                /* it owns the kernel's driver from here on, also when it fails */
                r = backend_sim_perf_driver(backend, TAKE_PTR(kernel), &driver, ret_tick);
                if (r < 0) {
                        log_error_errno(r, "Cannot set up the simulator's perf driver");
                        goto fail;
                }
        } else
                driver = TAKE_PTR(kernel);
        if (!o->perf_opener) {
                log_info("Perf opener started (process %d); %zu PMUs", (int) perf_opener_pid(opener),
                         catalog->n_pmus);
                if (perf_opener_probe_error(opener) < 0)
                        (void) log_warning_errno(perf_opener_probe_error(opener),
                                                 "perf_event_open() is refused in the perf opener, most likely by "
                                                 "a system-call filter (pmugated.service's leaves it out: the "
                                                 "shipped units run pmugated with --perf-opener): pmugated opens "
                                                 "no perf event");
        }
        *ret_opener = opener;
        *ret_catalog = catalog;
        *ret_driver = driver;
        return 0;
fail:
        perf_driver_free(kernel);
        perf_opener_stop(opener);
        perf_catalog_free(catalog);
        return r;
}

static int open_through_opener(const struct perf_event_attr *attr, int cpu, void *userdata) {
        return perf_opener_open(userdata, attr, -1, -EBADF, cpu, -1, 0);
}

/* The kernel's uncore memory-controller events of machine_discover_counters(), opened in the
 * perf opener like every other perf event: pmugated's own system-call filter leaves
 * perf_event_open out. Under the simulator its backend serves them and nothing is opened. */
static void open_package_counters(const Options *o, Machine *m, PerfOpener *opener) {
        unsigned opened, pending = 0;

        if (strcmp(o->backend, "sim") == 0)
                return;
        for (uint32_t i = 0; i < m->n_counters; i++)
                if (m->counters[i].fd < 0 && !m->counters[i].error[0])
                        pending++;
        if (pending == 0)
                return;
        opened = machine_open_counters(m, open_through_opener, opener);
        log_info("Package counters: %u of %u opened through the perf opener%s", opened, pending,
                 opened < pending ? " (the others say why in pmugate info)" : "");
}

/* The opener service serves only its own user, the daemon's, so this comes after the drop. A
 * missing or broken service is no reason to stop serving registers: the perf path is off, and
 * each open says the opener is gone. */
static void connect_perf_opener(const Options *o, PerfOpener *opener) {
        int r;

        if (!o->perf_opener)
                return;
        r = perf_opener_connect(opener);
        if (r < 0) {
                (void) log_warning_errno(r, "Cannot reach the perf opener at %s (pmugate-perf-opener.socket, "
                                         "pmugate-perf-opener.service): serving without perf events",
                                         o->perf_opener);
                return;
        }
        log_info("Perf opener service connected at %s", o->perf_opener);
        if (perf_opener_probe_error(opener) < 0)
                (void) log_warning_errno(perf_opener_probe_error(opener),
                                         "perf_event_open() is refused in the perf opener service by a "
                                         "system-call filter (pmugate-perf-opener.service's SystemCallFilter=, "
                                         "or its container's, as systemd-nspawn's by default): pmugated opens "
                                         "no perf event");
}

static int run(int argc, char *argv[]) {
        Options o;
        Config config;
        Machine *machine = NULL;
        Backend *backend = NULL;
        Allowlist *allowlist = NULL;
        Audit *audit = NULL;
        Server *server = NULL;
        PerfOpener *perf_opener = NULL, *remote_opener;
        PerfDriver *perf_driver = NULL;
        PerfCatalog *perf_catalog = NULL;
        void (*perf_tick)(PerfDriver *d) = NULL;
        StateDir state = { .fd = -EBADF };
        BackendChoice choice;
        char reason[512], cgroup_root[4096];
        uid_t daemon_uid;
        gid_t daemon_gid;
        int r;

        r = parse_argv(argc, argv, &o);
        if (r <= 0)
                return r;
        raise_fd_limit();

        r = config_load(o.config_path, !o.config_explicit, geteuid(), &config, reason, sizeof(reason));
        if (r < 0)
                return log_error_errno(r, "Refusing to start: %s", reason);
        if (r > 0)
                log_notice("Configuration file %s does not exist: the defaults of the shipped pmugate.conf "
                           "apply: mode=%s admin_groups=%s user_groups=%s (a group that does not exist "
                           "admits nobody) user_read=\"%s\" user_write=\"%s\" clients=%u clients_per_uid=%u",
                           o.config_path, access_mode_to_string(config.mode), CONFIG_DEFAULT_ADMIN_GROUPS,
                           CONFIG_DEFAULT_USER_GROUPS, CONFIG_DEFAULT_READ_CLASSES,
                           CONFIG_DEFAULT_WRITE_CLASSES, config.clients_max, config.clients_per_uid_max);

        if (strcmp(o.backend, "sim") == 0) {
                r = backend_sim_new(o.sim_model, o.sim_config, &machine, &backend);
                if (r < 0)
                        return log_error_errno(r, "Cannot set up the simulated PMU");
        } else {
                r = machine_discover(o.root, &machine);
                if (r < 0)
                        return log_error_errno(r, "Cannot discover the machine under %s", o.root);
        }

        if (!machine->cpu_model) {
                log_error("CPU %s family %u model 0x%x stepping %u ('%s') is not supported: pmugate has no allowlist for it. "
                          "Supported: Skylake-SP, Cascade Lake, Ice Lake-SP, Sapphire, Emerald and Granite Rapids, Sierra Forest, Zen 4, Zen 5, "
                          "NVIDIA Grace (Neoverse V2).",
                          machine->vendor, machine->family, machine->model, machine->stepping, machine->model_name);
                r = -EOPNOTSUPP;
                goto finish;
        }
        /* An ARM core has no MSRs and no allowlist: its counters are the perf path's alone. */
        if (cpu_model_is_arm(machine->cpu_model))
                r = allowlist_new_empty(machine->cpu_model->key, &allowlist);
        else
                r = allowlist_load_for_model(o.allowlist_dir, machine->cpu_model->key, &allowlist);
        if (r < 0)
                goto finish;

        if (!backend) {
                r = machine_discover_units(machine, o.root, allowlist_names_device, allowlist);
                if (r < 0) {
                        log_error_errno(r, "Cannot list PCI devices under %s", o.root);
                        goto finish;
                }
                /* the kernel's uncore memory controller events, found now and opened through the
                 * perf opener (open_package_counters()) */
                r = machine_discover_counters(machine, o.root);
                if (r < 0)
                        goto finish;
                /* Without MSRs the perf path can still serve, unless MSRs were asked for. */
                r = backend_dev_new(o.root, machine,
                                    counters_wanted(&o, &config) != BACKEND_WANTED_MSR ||
                                    cpu_model_is_arm(machine->cpu_model), &backend);
                if (r < 0)
                        goto finish;
        }

        r = choose_counters(&o, &config, backend, &choice);
        if (r < 0)
                goto finish;

        r = privileges_user_ids(o.user, &daemon_uid, &daemon_gid);
        if (r < 0)
                goto finish;
        /* Before the audit log, the state directory and the socket are open: the opener closes
         * every fd it inherits, and has the fewer to close. */
        r = start_perf(&o, machine, backend, daemon_uid, daemon_gid, &perf_catalog, &perf_opener, &perf_driver,
                       &perf_tick);
        if (r < 0)
                goto finish;
        /* the forked opener is there now; the service only after the privilege drop */
        if (!o.perf_opener)
                open_package_counters(&o, machine, perf_opener);

        r = audit_new(o.audit_log, &audit);
        if (r < 0)
                goto finish;

        (void) snprintf(cgroup_root, sizeof(cgroup_root), "%s/sys/fs/cgroup", strcmp(o.root, "/") == 0 ? "" : o.root);
        /* Journals and grants of an earlier boot describe registers and jobs a reboot ended. */
        r = state_boot_id_read(o.root, state.boot_id);
        if (r < 0)
                goto finish;
        r = privileges_prepare_state_dir(o.runtime_dir, daemon_uid, daemon_gid, &state.fd);
        if (r < 0)
                goto finish;

        r = server_new(&(ServerOptions) { .socket_path = o.socket_path, .config_path = o.config_path,
                                          .dispatch = handlers_dispatch, .config_owner = geteuid(),
                                          .state = &state, .cgroup_root = cgroup_root, .root = o.root,
                                          .perf_opener = perf_opener, .perf_driver = perf_driver,
                                          .perf_catalog = perf_catalog },
                       machine, backend, allowlist, &config, audit, &server);
        if (r < 0)
                goto finish;
        server->choice = choice;
        server->counters_from_option = o.counters >= 0;
        remote_opener = perf_opener;    /* the server's now */
        perf_opener = NULL;
        perf_driver = NULL;
        perf_catalog = NULL;
        server->perf_tick_fn = perf_tick;
        machine = NULL;
        backend = NULL;
        allowlist = NULL;
        audit = NULL;

        r = privileges_hand_over_state_dir();
        if (r < 0)
                goto finish;
        r = server_listen(server);
        if (r < 0)
                goto finish;
        r = privileges_drop(o.user);
        if (r < 0)
                goto finish;
        connect_perf_opener(&o, remote_opener);
        if (o.perf_opener) {
                open_package_counters(&o, server->machine, remote_opener);
                /* before any lease: the boxes of counters that did not open are free again */
                pmu_uncore_counters_opened(server->pmu);
        }
        r = server_run(server);

finish:
        server_free(server);
        perf_driver_free(perf_driver);
        perf_opener_stop(perf_opener);
        perf_catalog_free(perf_catalog);
        audit_free(audit);
        backend_free(backend);
        allowlist_free(allowlist);
        machine_free(machine);
        if (state.fd >= 0)
                (void) close(state.fd);
        return r;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated PMU backend: machine construction and register dispatch
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sim/backend-sim.h"
#include "backend/sim/sim-amd.h"
#include "backend/sim/sim-clock.h"
#include "backend/sim/sim-config.h"
#include "backend/sim/sim-pmu.h"
#include "backend/sim/sim-regs.h"
#include "backend/sim/sim-uncore.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"

/* The simulated Intel parts are family 6 cores; the AMD ones Genoa (family 0x19 model 0x11) and
 * Turin (family 0x1A model 0x02). */
#define SIM_VENDOR "GenuineIntel"
#define SIM_FAMILY 6U
#define SIM_AMD_VENDOR "AuthenticAMD"
#define SIM_ZEN4_FAMILY 0x19U
#define SIM_ZEN4_MODEL 0x11U
#define SIM_ZEN5_FAMILY 0x1AU
#define SIM_ZEN5_MODEL 0x02U
/* CPUID 0x80000022 as the simulated parts report it: EAX[0] PerfMonV2, EBX[3:0] core counters,
 * EBX[15:10] data-fabric counters, EBX[21:16] memory-controller counters. */
#define SIM_AMD_CPUID_EAX 0x1U
#define SIM_AMD_CPUID_EBX(core, df, umc) ((core) | (df) << 10 | (umc) << 16)

/* The kernel's NMI watchdog fires after watchdog_thresh (default 10) seconds of unhalted
 * cycles: period = cpu_khz * 1000 * watchdog_thresh (pmu-registers.md §7.1). */
#define WATCHDOG_THRESH_SECONDS 10U

/* Uptime already on the TSC when the simulator starts: one minute plus up to an hour, drawn
 * from the seed. */
#define BOOT_UPTIME_MIN_SECONDS 60U
#define BOOT_UPTIME_SPREAD_SECONDS 3600U

#define HZ_PER_MHZ UINT64_C(1000000)
#define BYTES_PER_CAS 64.0              /* one CAS moves a 64-byte line (§6.1) */
#define BYTES_PER_GB 1e9

/* SKX IMC channels as PCI functions (§6.1): MC0 channels at 10.2, 10.6, 11.2 and MC1 at
 * 12.2, 12.6, 13.2, device ids by channel. */
static const struct {
        uint8_t device;
        uint8_t function;
        uint16_t device_id;
} imc_functions[SIM_IMC_CHANNELS_PER_SOCKET] = {
        { 0x0a, 2, 0x2042 }, { 0x0a, 6, 0x2046 }, { 0x0b, 2, 0x204a },
        { 0x0c, 2, 0x2042 }, { 0x0c, 6, 0x2046 }, { 0x0d, 2, 0x204a },
};
/* Two-socket SKX systems put socket 0's IMCs on bus 0x3a and socket 1's on 0xae; larger
 * simulated systems repeat that pair in further PCI domains. */
static const uint8_t imc_buses[] = { 0x3a, 0xae };

/* The kernel's uncore memory controller PMUs as the dev backend finds them on each model
 * (next-features.md §2.3): per socket one PMU per channel with the fixed CAS events, or on Ice
 * Lake-SP one free-running PMU per controller. Like the kernel's, uncore_imc_0 of every socket
 * has the same name; the package tells them apart. */
static const struct {
        const char *model;
        const char *pmu;
        unsigned boxes;                 /* per socket */
        const char *events[2];          /* read, write */
} imc_pmus[] = {
        { "skx", "uncore_imc_", 6, { "cas_count_read", "cas_count_write" } },
        { "clx", "uncore_imc_", 6, { "cas_count_read", "cas_count_write" } },
        { "icx", "uncore_imc_free_running_", 4, { "read", "write" } },
        { "spr", "uncore_imc_", 8, { "cas_count_read", "cas_count_write" } },
        { "emr", "uncore_imc_", 8, { "cas_count_read", "cas_count_write" } },
        /* Granite Rapids-AP: 12 DDR5 channels per socket */
        { "gnr", "uncore_imc_", 12, { "cas_count_read", "cas_count_write" } },
        /* Sierra Forest-SP: 8 DDR5 channels per socket */
        { "srf", "uncore_imc_", 8, { "cas_count_read", "cas_count_write" } },
};
/* The kernel's scale of these events: one count is a 64-byte line, in MiB. */
#define IMC_COUNT_SCALE_MIB 6.103515625e-5

typedef struct SimCpu {
        SimRates rates;
        /* "phase =": the rates of the other phase, and the length of each phase in TSC cycles
         * (0: no phases). Phases start at simulated time 0 with rates. */
        SimRates phase_rates;
        uint64_t phase_cycles;
        SimPmu pmu;
        uint64_t last_cycles;
        bool online;
        bool eio;                       /* injected EIO registers apply to this CPU */
        uint32_t package;
        uint32_t ccx;                   /* AMD: index into SimBackend.l3 */
} SimCpu;

typedef struct SimPackage {
        SimRapl rapl;
        SimAmdPackage amd;              /* AMD: data fabric and RAPL */
        uint64_t last_cycles;
} SimPackage;

typedef struct SimCcx {
        SimAmdL3 l3;
        uint64_t last_cycles;
} SimCcx;

typedef struct SimUnit {
        SimImc imc;
        uint32_t package;
        uint64_t last_cycles;
} SimUnit;

typedef struct SimPackageCounter {
        SimCounter counter;
        uint64_t last_cycles;
} SimPackageCounter;

typedef struct SimBackend {
        Backend backend;                /* first: the daemon holds a Backend * */
        SimModel model;
        SimClock clock;
        SimConfig *config;
        SimCpu *cpus;
        uint32_t n_cpus;
        SimPackage *packages;
        uint32_t n_packages;
        SimUnit *units;
        uint32_t n_units;
        SimCcx *ccxs;                   /* AMD only */
        uint32_t n_ccxs;
        SimPackageCounter *counters;    /* parallel to the machine's counters */
} SimBackend;

static SimBackend *sim_backend_free(SimBackend *s) {
        if (!s)
                return NULL;
        sim_config_free(s->config);
        free(s->cpus);
        free(s->packages);
        free(s->units);
        free(s->ccxs);
        free(s->counters);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(SimBackend *, sim_backend_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(Machine *, machine_free);

static SimBackend *sim_backend(Backend *b) {
        return (SimBackend *) b;
}

static bool msr_fault_injected(const SimBackend *s, const SimCpu *c, uint32_t reg, bool write) {
        if (!c->eio || (s->config->eio_writes_only && !write))
                return false;
        for (size_t i = 0; i < s->config->n_eio_msrs; i++)
                if (s->config->eio_msrs[i] == reg)
                        return true;
        return false;
}

/* Brings a CPU's PMU up to now, switching its rates at every phase boundary on the way. */
static void cpu_advance(SimCpu *c, uint64_t now) {
        while (c->phase_cycles > 0 && c->last_cycles < now) {
                uint64_t phase = c->last_cycles / c->phase_cycles;
                uint64_t end = MIN((phase + 1) * c->phase_cycles, now);

                sim_pmu_set_rates(&c->pmu, phase % 2 == 0 ? &c->rates : &c->phase_rates);
                sim_pmu_advance(&c->pmu, end - c->last_cycles);
                c->last_cycles = end;
        }
        sim_pmu_advance(&c->pmu, now - c->last_cycles);
        c->last_cycles = now;
}

/* Charges the access, checks the CPU and brings its state up to now. */
static int msr_prepare(SimBackend *s, uint32_t cpu, uint32_t reg, bool write, SimCpu **ret_cpu) {
        uint64_t now = sim_clock_access(&s->clock);
        SimCpu *c;

        if (cpu >= s->n_cpus || !s->cpus[cpu].online)
                return -ENXIO;
        c = &s->cpus[cpu];
        if (msr_fault_injected(s, c, reg, write))
                return -EIO;

        if (s->model.amd && sim_amd_l3_owns(reg)) {
                SimCcx *x = &s->ccxs[c->ccx];

                sim_amd_l3_advance(&x->l3, now - x->last_cycles);
                x->last_cycles = now;
        } else if (s->model.amd && sim_amd_package_owns(reg)) {
                SimPackage *p = &s->packages[c->package];

                sim_amd_package_advance(&p->amd, now - p->last_cycles);
                p->last_cycles = now;
        } else if (!s->model.amd && sim_rapl_owns(reg)) {
                SimPackage *p = &s->packages[c->package];

                sim_rapl_advance(&p->rapl, now - p->last_cycles);
                p->last_cycles = now;
        } else
                cpu_advance(c, now);
        *ret_cpu = c;
        return 0;
}

static int msr_read_in(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret_value) {
        SimBackend *s = sim_backend(b);
        SimCpu *c;
        int r;

        r = msr_prepare(s, cpu, reg, false, &c);
        if (r < 0)
                return r;
        if (s->model.amd && sim_amd_l3_owns(reg))
                return sim_amd_l3_read(&s->ccxs[c->ccx].l3, reg, ret_value);
        if (s->model.amd && sim_amd_package_owns(reg))
                return sim_amd_package_read(&s->packages[c->package].amd, reg, ret_value);
        if (!s->model.amd && sim_rapl_owns(reg))
                return sim_rapl_read(&s->packages[c->package].rapl, reg, ret_value);
        return sim_pmu_read(&c->pmu, reg, ret_value);
}

static int msr_write_in(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        SimBackend *s = sim_backend(b);
        SimCpu *c;
        int r;

        r = msr_prepare(s, cpu, reg, true, &c);
        if (r < 0)
                return r;
        /* The msr driver refuses every write under lockdown (LOCKDOWN_MSR). */
        if (s->config->lockdown)
                return -EPERM;
        if (s->model.amd && sim_amd_l3_owns(reg))
                return sim_amd_l3_write(&s->ccxs[c->ccx].l3, reg, value);
        if (s->model.amd && sim_amd_package_owns(reg))
                return sim_amd_package_write(&s->packages[c->package].amd, reg, value);
        if (!s->model.amd && sim_rapl_owns(reg))
                return sim_rapl_write(&s->packages[c->package].rapl, reg, value);
        return sim_pmu_write(&c->pmu, reg, value);
}

static int pci_prepare(SimBackend *s, uint32_t unit, SimUnit **ret_unit) {
        uint64_t now = sim_clock_access(&s->clock);
        SimUnit *u;

        if (unit >= s->n_units)
                return -ENXIO;
        u = &s->units[unit];
        sim_imc_advance(&u->imc, now - u->last_cycles);
        u->last_cycles = now;
        *ret_unit = u;
        return 0;
}

static int pci_read_in(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret_value) {
        SimUnit *u;
        int r;

        r = pci_prepare(sim_backend(b), unit, &u);
        if (r < 0)
                return r;
        return sim_imc_read(&u->imc, offset, width, ret_value);
}

static int pci_write_in(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        SimUnit *u;
        int r;

        r = pci_prepare(sim_backend(b), unit, &u);
        if (r < 0)
                return r;
        /* Config space beyond the header is LOCKDOWN_PCI_ACCESS's: writes fail, reads work. */
        if (sim_backend(b)->config->lockdown)
                return -EPERM;
        return sim_imc_write(&u->imc, offset, width, value);
}

static int counter_read_in(Backend *b, uint32_t counter, uint64_t *ret_value) {
        SimBackend *s = sim_backend(b);
        uint64_t now = sim_clock_access(&s->clock);
        SimPackageCounter *c;

        if (counter >= b->machine->n_counters)
                return -ENXIO;
        c = &s->counters[counter];
        (void) sim_counter_add(&c->counter, now - c->last_cycles, SIM_IMC_COUNTER_MASK, NULL);
        c->last_cycles = now;
        *ret_value = c->counter.value;
        return 0;
}

/* Each access is timed as it begins; the simulator's own work on it takes no simulated time
 * (sim_clock_leave()), so that a cold first access of a batch does not stretch the window
 * between a write and the next access, which a client times with the TSC. */
static int sim_msr_read(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret_value) {
        int r = msr_read_in(b, cpu, reg, ret_value);

        sim_clock_leave(&sim_backend(b)->clock);
        return r;
}

static int sim_msr_write(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        int r = msr_write_in(b, cpu, reg, value);

        sim_clock_leave(&sim_backend(b)->clock);
        return r;
}

static int sim_pci_read(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret_value) {
        int r = pci_read_in(b, unit, offset, width, ret_value);

        sim_clock_leave(&sim_backend(b)->clock);
        return r;
}

static int sim_pci_write(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        int r = pci_write_in(b, unit, offset, width, value);

        sim_clock_leave(&sim_backend(b)->clock);
        return r;
}

static int sim_counter_read(Backend *b, uint32_t counter, uint64_t *ret_value) {
        int r = counter_read_in(b, counter, ret_value);

        sim_clock_leave(&sim_backend(b)->clock);
        return r;
}

static void sim_free(Backend *b) {
        (void) sim_backend_free(sim_backend(b));
}

/* The model's table and every online CPU's extra events: a client shows any other event as not
 * modelled rather than as the 0 the simulator counts for it. */
static size_t sim_modelled_events(Backend *b, uint64_t *ret, size_t max) {
        SimBackend *s = sim_backend(b);
        size_t n = sim_events_modelled(&s->model, ret, max);

        for (uint32_t cpu = 0; cpu < s->n_cpus; cpu++) {
                const SimRates *r = &s->cpus[cpu].rates;

                if (!s->cpus[cpu].online)
                        continue;
                for (size_t i = 0; i < r->n_extra_events; i++) {
                        uint64_t config = sim_extra_event_config(&s->model, &r->extra_events[i]);
                        bool seen = false;

                        for (size_t k = 0; k < n && k < max; k++)
                                seen = seen || ret[k] == config;
                        if (seen)
                                continue;
                        if (n < max)
                                ret[n] = config;
                        n++;
                }
        }
        return n;
}

static const BackendVTable sim_vtable = {
        .name = "sim",
        .msr_read = sim_msr_read,
        .msr_write = sim_msr_write,
        .pci_read = sim_pci_read,
        .pci_write = sim_pci_write,
        .counter_read = sim_counter_read,
        .modelled_events = sim_modelled_events,
        .free = sim_free,
};

int backend_sim_advance(Backend *b, uint64_t cycles) {
        if (!b || b->vtable != &sim_vtable)
                return -EINVAL;
        sim_clock_advance(&sim_backend(b)->clock, cycles);
        return 0;
}

int backend_sim_now_ns(Backend *b, uint64_t *ret) {
        const SimClock *c;

        if (!b || b->vtable != &sim_vtable)
                return -EINVAL;
        c = &sim_backend(b)->clock;
        *ret = sim_clock_now(c) / c->mhz * 1000U + sim_clock_now(c) % c->mhz * 1000U / c->mhz;
        return 0;
}

const SimModel *backend_sim_model(Backend *b) {
        return b && b->vtable == &sim_vtable ? &sim_backend(b)->model : NULL;
}

const SimLbrConfig *backend_sim_lbr(Backend *b, uint64_t *ret_seed) {
        if (!b || b->vtable != &sim_vtable)
                return NULL;
        if (ret_seed)
                *ret_seed = sim_backend(b)->config->seed;
        return sim_backend(b)->config->lbr;
}

const SimRates *backend_sim_cpu_rates(Backend *b, uint32_t cpu) {
        SimBackend *s;

        if (!b || b->vtable != &sim_vtable)
                return NULL;
        s = sim_backend(b);
        return cpu < s->n_cpus && s->cpus[cpu].online ? &s->cpus[cpu].rates : NULL;
}

static uint32_t ccxs_per_socket(const SimConfig *c) {
        return (c->cores_per_socket + c->cores_per_ccx - 1) / c->cores_per_ccx;
}

static int sim_first_online_cpu(const Machine *machine, uint32_t socket, uint32_t *ret) {
        for (uint32_t cpu = 0; cpu < machine->n_cpus; cpu++)
                if (machine->cpus[cpu].online && machine->cpus[cpu].package == (int32_t) socket) {
                        *ret = cpu;
                        return 0;
                }
        return -ENXIO;
}

static int imc_pmu_index(const SimModel *m) {
        for (size_t i = 0; i < ELEMENTSOF(imc_pmus); i++)
                if (strcmp(imc_pmus[i].model, m->cpu->key) == 0)
                        return (int) i;
        return -ENOENT;
}

static int build_machine_counters(const SimConfig *c, const SimModel *m, Machine *machine) {
        int pmu = imc_pmu_index(m);
        size_t k = 0;

        if (pmu < 0 || !c->imc_kernel_pmu)
                return 0;
        machine->counters = calloc((size_t) c->sockets * imc_pmus[pmu].boxes * 2, sizeof(MachineCounter));
        if (!machine->counters)
                return -ENOMEM;
        for (uint32_t socket = 0; socket < c->sockets; socket++) {
                uint32_t cpu;

                /* the kernel has no CPU to count a package without online CPUs on */
                if (sim_first_online_cpu(machine, socket, &cpu) < 0)
                        continue;
                for (unsigned box = 0; box < imc_pmus[pmu].boxes; box++)
                        for (unsigned e = 0; e < 2; e++) {
                                MachineCounter *mc = &machine->counters[k++];

                                *mc = (MachineCounter) {
                                        .package = (int32_t) socket,
                                        .cpu = cpu,
                                        .width = 48,
                                        .scale = IMC_COUNT_SCALE_MIB,
                                        .fd = -EBADF,
                                };
                                (void) snprintf(mc->name, sizeof(mc->name), "%s%u/%s", imc_pmus[pmu].pmu,
                                                box, imc_pmus[pmu].events[e]);
                                (void) snprintf(mc->cls, sizeof(mc->cls), "uncore-imc");
                                (void) snprintf(mc->unit, sizeof(mc->unit), "MiB");
                        }
        }
        machine->n_counters = (uint32_t) k;
        return 0;
}

/* Linux numbering: CPUs 0..N-1 are the first thread of each core, socket-major, and N..2N-1
 * their SMT siblings. */
static int build_machine(const SimConfig *c, const SimModel *m, Machine **ret) {
        _cleanup_(machine_freep) Machine *machine = NULL;
        uint32_t cores = c->sockets * c->cores_per_socket, threads = c->smt ? 2 : 1;
        int r;

        machine = machine_new();
        if (!machine)
                return -ENOMEM;
        (void) snprintf(machine->vendor, sizeof(machine->vendor), "%s",
                        m->amd ? SIM_AMD_VENDOR : SIM_VENDOR);
        machine->family = !m->amd ? SIM_FAMILY :
                          m->family == SIM_FAMILY_ZEN4 ? SIM_ZEN4_FAMILY : SIM_ZEN5_FAMILY;
        machine->model = !m->amd ? m->cpu->model :
                         m->family == SIM_FAMILY_ZEN4 ? SIM_ZEN4_MODEL : SIM_ZEN5_MODEL;
        machine->stepping = m->stepping;
        (void) snprintf(machine->model_name, sizeof(machine->model_name), "Simulated %s %s",
                        m->amd ? "AMD" : "Intel", m->cpu->name);
        machine->cpu_model = cpu_model_find(machine->vendor, machine->family, machine->model,
                                            machine->stepping);
        if (!machine->cpu_model)
                return -EINVAL;
        machine_default_pmu_caps(machine);
        if (m->amd)
                machine_set_amd_pmu_caps(machine, SIM_AMD_CPUID_EAX,
                                         SIM_AMD_CPUID_EBX(m->gp_counters, m->df_counters,
                                                           m->cpu->umc_counters));
        machine->nmi_watchdog = c->nmi_watchdog;

        machine->n_cpus = cores * threads;
        machine->cpus = calloc(machine->n_cpus, sizeof(MachineCpu));
        if (!machine->cpus)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < machine->n_cpus; cpu++) {
                uint32_t core = cpu % cores;

                machine->cpus[cpu] = (MachineCpu) {
                        .present = true,
                        .online = !sim_cpu_listed(c->offline_cpus, c->n_offline_cpus, cpu),
                        .package = (int32_t) (core / c->cores_per_socket),
                        .die = 0,
                        .core = (int32_t) (core % c->cores_per_socket),
                        .thread = cpu / cores,
                        /* the L3 id, numbered across the machine as the kernel does */
                        .ccx = (int32_t) ((core / c->cores_per_socket) * ccxs_per_socket(c) +
                                          (core % c->cores_per_socket) / c->cores_per_ccx),
                };
        }

        if (m->imc_pci) {
                machine->n_units = c->sockets * SIM_IMC_CHANNELS_PER_SOCKET;
                machine->units = calloc(machine->n_units, sizeof(MachineUnit));
                if (!machine->units)
                        return -ENOMEM;
                for (uint32_t i = 0; i < machine->n_units; i++) {
                        uint32_t socket = i / SIM_IMC_CHANNELS_PER_SOCKET;
                        uint32_t ch = i % SIM_IMC_CHANNELS_PER_SOCKET;
                        MachineUnit *u = &machine->units[i];

                        /* PCI domains are 16 bits, devices 5 and functions 3 */
                        (void) snprintf(u->bdf, sizeof(u->bdf), "%04x:%02x:%02x.%x",
                                        (unsigned) (socket / ELEMENTSOF(imc_buses)) & 0xffffU,
                                        imc_buses[socket % ELEMENTSOF(imc_buses)],
                                        imc_functions[ch].device & 0x1fU, imc_functions[ch].function & 0x7U);
                        u->vendor = SIM_PCI_VENDOR_INTEL;
                        u->device = imc_functions[ch].device_id;
                        u->package = (int32_t) socket;
                        u->config_size = SIM_IMC_CONFIG_SIZE;
                }
        }

        r = build_machine_counters(c, m, machine);
        if (r < 0)
                return r;
        machine_update_summary(machine);
        *ret = TAKE_PTR(machine);
        return 0;
}

static int build_cpus(SimBackend *s, const Machine *machine, const SimProfile *profiles,
                      const SimPhase *phases) {
        const SimConfig *config = s->config;
        uint32_t cores = config->sockets * config->cores_per_socket;
        uint64_t boot_tsc, watchdog_period;

        boot_tsc = (BOOT_UPTIME_MIN_SECONDS + sim_clock_random(&s->clock) % BOOT_UPTIME_SPREAD_SECONDS) *
                   s->clock.mhz * HZ_PER_MHZ;
        watchdog_period = s->clock.mhz * HZ_PER_MHZ *
                          (config->watchdog_thresh > 0 ? config->watchdog_thresh : WATCHDOG_THRESH_SECONDS);

        s->n_cpus = machine->n_cpus;
        s->cpus = calloc(s->n_cpus, sizeof(SimCpu));
        if (!s->cpus)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < s->n_cpus; cpu++) {
                SimCpu *c = &s->cpus[cpu];
                uint32_t sibling = cpu < cores ? cpu + cores : cpu - cores;
                bool has_sibling = config->smt && sibling < s->n_cpus && machine->cpus[sibling].online;

                c->online = machine->cpus[cpu].online;
                c->package = (uint32_t) machine->cpus[cpu].package;
                c->ccx = (uint32_t) machine->cpus[cpu].ccx;
                c->eio = config->n_eio_msrs > 0 &&
                         (!config->eio_cpus || sim_cpu_listed(config->eio_cpus, config->n_eio_cpus, cpu));
                sim_rates_compute(&s->model, &profiles[cpu], has_sibling ? &profiles[sibling] : NULL,
                                  &c->rates);
                if (phases[cpu].period_ms > 0 || (has_sibling && phases[sibling].period_ms > 0)) {
                        /* Phases are on one clock, so a sibling with phases of the same length
                         * is in its other phase at the same time. */
                        const SimProfile *self2 = phases[cpu].period_ms > 0 ? &phases[cpu].other : &profiles[cpu];
                        const SimProfile *sib2 = has_sibling && phases[sibling].period_ms > 0 ?
                                                 &phases[sibling].other : &profiles[sibling];
                        uint32_t ms = phases[cpu].period_ms > 0 ? phases[cpu].period_ms : phases[sibling].period_ms;

                        if (has_sibling && phases[sibling].period_ms > 0 && phases[cpu].period_ms > 0 &&
                            phases[sibling].period_ms != phases[cpu].period_ms)
                                return sim_log_invalid("CPUs %u and %u are SMT siblings with phases of %u "
                                                       "and %u ms; siblings' phases must be equally long",
                                                       cpu, sibling, phases[cpu].period_ms,
                                                       phases[sibling].period_ms);
                        sim_rates_compute(&s->model, self2, has_sibling ? sib2 : NULL, &c->phase_rates);
                        c->phase_cycles = (uint64_t) ms * s->clock.mhz * (HZ_PER_MHZ / 1000U);
                }
                sim_pmu_init(&c->pmu, &s->model, &c->rates, boot_tsc);
                c->pmu.cpu = cpu;
                if (config->nmi_watchdog && c->online)
                        sim_pmu_start_watchdog(&c->pmu, watchdog_period);
        }
        return 0;
}

/* Every CCX's L3 sees the lookups of its threads: a hundredth of their instructions, of which
 * the memory-bound share (at least a tenth) misses. */
#define SIM_AMD_L3_ACCESS_PER_INST 0.01
#define SIM_AMD_L3_MISS_MIN 0.1

static int build_l3(SimBackend *s, const Machine *machine) {
        s->n_ccxs = s->config->sockets * ccxs_per_socket(s->config);
        s->ccxs = calloc(s->n_ccxs, sizeof(SimCcx));
        if (!s->ccxs)
                return -ENOMEM;
        for (uint32_t cpu = 0; cpu < s->n_cpus; cpu++) {
                const SimCpu *c = &s->cpus[cpu];
                SimAmdL3 *l3;
                double access, k, mb;

                if (!c->online || c->ccx >= s->n_ccxs)
                        continue;
                l3 = &s->ccxs[c->ccx].l3;
                access = SIM_AMD_L3_ACCESS_PER_INST * c->rates.thread[SIM_Q_INST];
                k = c->rates.thread[SIM_Q_AMD_BACKEND_SLOTS];
                mb = k > 0.0 ? c->rates.thread[SIM_Q_AMD_LOAD_NOT_COMPLETE] /
                               c->rates.thread[SIM_Q_AMD_NOT_COMPLETE] : 0.0;
                l3->access_per_cycle += access;
                l3->miss_per_cycle += access * (mb > SIM_AMD_L3_MISS_MIN ? mb : SIM_AMD_L3_MISS_MIN);
        }
        (void) machine;
        return 0;
}

static int build_uncore(SimBackend *s, const Machine *machine) {
        const SimConfig *c = s->config;
        int r;
        double cycles_per_second = sim_clock_cycles_per_second(&s->clock);
        double cas_per_gbps = BYTES_PER_GB / BYTES_PER_CAS / SIM_IMC_CHANNELS_PER_SOCKET / cycles_per_second;

        s->n_packages = c->sockets;
        s->packages = calloc(s->n_packages, sizeof(SimPackage));
        if (!s->packages)
                return -ENOMEM;
        for (uint32_t p = 0; p < s->n_packages; p++) {
                sim_rapl_init(&s->packages[p].rapl, &s->model, &c->rapl, cycles_per_second);
                if (s->model.amd)
                        sim_amd_package_init(&s->packages[p].amd, &s->model, c->imc_read_gbps,
                                             c->imc_write_gbps, c->rapl.package_watts,
                                             c->rapl.pp0_watts / c->cores_per_socket,
                                             c->rapl.energy_unit_bits, cycles_per_second);
        }
        if (s->model.amd) {
                r = build_l3(s, machine);
                if (r < 0)
                        return r;
        }

        s->counters = calloc(machine->n_counters ?: 1, sizeof(SimPackageCounter));
        if (!s->counters)
                return -ENOMEM;
        for (uint32_t i = 0; i < machine->n_counters; i++) {
                /* read and write alternate, as build_machine_counters() lists them */
                double gbps = i % 2 == 0 ? c->imc_read_gbps : c->imc_write_gbps;
                /* counters exist, so the model's row does */
                double boxes = imc_pmus[imc_pmu_index(&s->model)].boxes;

                s->counters[i].counter.rate = gbps * BYTES_PER_GB / BYTES_PER_CAS / boxes /
                                              cycles_per_second;
                sim_counter_set(&s->counters[i].counter, c->imc_counter_start, SIM_IMC_COUNTER_MASK);
        }

        s->n_units = machine->n_units;
        if (s->n_units == 0)
                return 0;
        s->units = calloc(s->n_units, sizeof(SimUnit));
        if (!s->units)
                return -ENOMEM;
        for (uint32_t i = 0; i < s->n_units; i++) {
                s->units[i].package = (uint32_t) machine->units[i].package;
                sim_imc_init(&s->units[i].imc, machine->units[i].device, c->imc_read_gbps * cas_per_gbps,
                             c->imc_write_gbps * cas_per_gbps, c->imc_dclk_mhz * HZ_PER_MHZ / cycles_per_second);
        }
        return 0;
}

/* The kernel's uncore drivers at work before pmugated starts. With kernel_pmu on skx/clx the
 * uncore_imc driver programs counters 0 and 1 of every channel of a socket with an online CPU for
 * the CAS events pmugated opens there; kernel_imc_units are channels it programs for another
 * perf user (the first free counter, CAS_COUNT.RD); kernel_l3_counters and kernel_df_counters
 * are the L3 counters of every CCX and the data-fabric counters of every package whose enable
 * bit amd_uncore set. */
#define SIM_AMD_L3_KERNEL_EVENT \
        (UINT64_C(1) << 22 | 0x04U | 0xFFU << 8 | UINT64_C(3) << 46 | UINT64_C(3) << 56)
#define SIM_AMD_DF_KERNEL_EVENT (UINT64_C(1) << 22 | 0x1FU)

static int imc_first_free_counter(const SimImc *imc) {
        for (unsigned i = 0; i < SIM_IMC_COUNTERS; i++)
                if (!(imc->ctl[i] & SIM_BIT(22)))
                        return (int) i;
        return -EBUSY;
}

static int stage_kernel_uncore(SimBackend *s, const Machine *machine) {
        const SimConfig *c = s->config;
        uint32_t cpu;

        for (uint32_t i = 0; c->imc_kernel_pmu && machine->n_counters > 0 && i < s->n_units; i++) {
                if (sim_first_online_cpu(machine, s->units[i].package, &cpu) < 0)
                        continue;
                (void) sim_imc_write(&s->units[i].imc, SIM_IMC_CTL0, 4, SIM_IMC_KERNEL_CAS_READ);
                (void) sim_imc_write(&s->units[i].imc, SIM_IMC_CTL0 + SIM_IMC_CTL_STRIDE, 4,
                                     SIM_IMC_KERNEL_CAS_WRITE);
        }
        for (size_t k = 0; k < c->n_kernel_imc_units; k++) {
                uint32_t unit = c->kernel_imc_units[k];
                int i;

                if (unit >= s->n_units)
                        return sim_log_invalid("%s: kernel_imc_units names unit %" PRIu32 ", but the "
                                               "machine has %" PRIu32 " IMC units",
                                               c->path ?: "configuration", unit, s->n_units);
                i = imc_first_free_counter(&s->units[unit].imc);
                if (i >= 0)
                        (void) sim_imc_write(&s->units[unit].imc,
                                             SIM_IMC_CTL0 + SIM_IMC_CTL_STRIDE * (unsigned) i, 4,
                                             SIM_IMC_KERNEL_CAS_READ);
        }
        if ((c->kernel_l3_counters || c->kernel_df_counters) && !s->model.amd)
                return sim_log_invalid("%s: kernel_l3_counters and kernel_df_counters need an AMD model",
                                       c->path ?: "configuration");
        if (c->kernel_df_counters >> s->model.df_counters)
                return sim_log_invalid("%s: kernel_df_counters names a counter beyond the model's %u",
                                       c->path ?: "configuration", s->model.df_counters);
        for (uint32_t x = 0; x < s->n_ccxs; x++)
                for (unsigned i = 0; i < SIM_AMD_L3_COUNTERS; i++)
                        if ((c->kernel_l3_counters >> i) & 1)
                                (void) sim_amd_l3_write(&s->ccxs[x].l3, MSR_AMD_L3_CTL0 + 2 * i,
                                                        SIM_AMD_L3_KERNEL_EVENT);
        for (uint32_t p = 0; p < s->n_packages && s->model.amd; p++)
                for (unsigned i = 0; i < s->model.df_counters; i++)
                        if ((c->kernel_df_counters >> i) & 1)
                                (void) sim_amd_package_write(&s->packages[p].amd, MSR_AMD_DF_CTL0 + 2 * i,
                                                             SIM_AMD_DF_KERNEL_EVENT);
        return 0;
}

/* The configuration's model where the command line names none; both must agree where both
 * name one, since a configuration's topology and profiles are written for its model. */
static int choose_model(const char *model_key, const SimConfig *c, const char **ret) {
        if (!model_key || model_key[0] == '\0') {
                *ret = c->model[0] != '\0' ? c->model : NULL;
                return 0;
        }
        if (c->model[0] != '\0' && strcmp(c->model, model_key) != 0)
                return sim_log_invalid("--sim-model=%s conflicts with model = %s in %s: give one, or the same",
                                       model_key, c->model, c->path ?: "the configuration");
        *ret = model_key;
        return 0;
}

bool backend_sim_built(void) {
        return true;
}

int backend_sim_new(const char *model_key, const char *config_path, Machine **ret_machine,
                    Backend **ret_backend) {
        _cleanup_(sim_backend_freep) SimBackend *s = NULL;
        _cleanup_(sim_config_freep) SimConfig *config = NULL;
        _cleanup_(machine_freep) Machine *machine = NULL;
        _cleanup_free_ SimProfile *profiles = NULL;
        _cleanup_free_ SimPhase *phases = NULL;
        const char *key;
        int r;

        r = config_path ? sim_config_load(config_path, &config) : sim_config_new_default(&config);
        if (r < 0)
                return r;

        r = choose_model(model_key, config, &key);
        if (r < 0)
                return r;
        if (!key)
                return sim_log_invalid("No simulated CPU model: pass --sim-model=skx|clx|icx|spr|emr|gnr|srf|zen4|zen5 "
                                       "or set model= in [machine] of %s",
                                       config_path ?: "the configuration");

        s = calloc(1, sizeof(SimBackend));
        if (!s)
                return -ENOMEM;
        r = sim_model_init(key, config->smt, &s->model);
        if (r < 0)
                return sim_log_invalid("Unknown simulated CPU model '%s' (known: skx, clx, icx, spr, emr, gnr, srf, zen4, "
                                       "zen5)", key);

        if ((uint64_t) config->sockets * config->cores_per_socket * (config->smt ? 2 : 1) > PMUGATE_CPUS_MAX)
                return sim_log_invalid("%s: %u sockets of %u cores%s exceed %u CPUs",
                                       config_path ?: "configuration", config->sockets,
                                       config->cores_per_socket, config->smt ? " with SMT" : "",
                                       PMUGATE_CPUS_MAX);

        r = build_machine(config, &s->model, &machine);
        if (r < 0)
                return r;
        r = sim_config_resolve_profiles(config, &s->model, machine->n_cpus, &profiles, &phases);
        if (r < 0)
                return r;

        s->config = TAKE_PTR(config);
        sim_clock_init(&s->clock, s->config, s->model.cpu->nominal_mhz);
        r = build_cpus(s, machine, profiles, phases);
        if (r < 0)
                return r;
        r = build_uncore(s, machine);
        if (r < 0)
                return r;
        r = stage_kernel_uncore(s, machine);
        if (r < 0)
                return r;

        s->backend = (Backend) {
                .vtable = &sim_vtable,
                .machine = machine,
                .simulated = true,
                .lockdown = s->config->lockdown,
                /* the simulated TSC ticks at the model's nominal clock */
                .tsc_hz = (uint64_t) s->clock.mhz * HZ_PER_MHZ,
        };
        log_info("Simulated PMU: %s, %u socket(s) x %u cores%s, %s clock%s%s%s", machine->model_name,
                 s->config->sockets, s->config->cores_per_socket, s->config->smt ? " x 2 threads" : "",
                 s->config->clock_mode == SIM_CLOCK_DETERMINISTIC ? "deterministic" : "realtime",
                 !s->config->nmi_watchdog ? "" :
                 s->model.amd ? ", NMI watchdog on core counter 0" : ", NMI watchdog on fixed counter 1",
                 s->config->lockdown ? ", kernel lockdown: " : "", s->config->lockdown ?: "");

        *ret_machine = TAKE_PTR(machine);
        *ret_backend = &TAKE_PTR(s)->backend;
        return 0;
}

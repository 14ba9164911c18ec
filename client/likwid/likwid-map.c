/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LIKWID devices, registers and error codes in pmugate's terms
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "likwid/likwid-map.h"
#include "macro.h"
#include "pmugate/package.h"

#define MSR_IA32_PEBS_ENABLE 0x3F1U
#define MSR_UBOX_GLOBAL_STATUS 0x701U
#define MSR_CLIENT_UNC_PERF_GLOBAL_STATUS 0xE02U
#define MSR_IA32_PERF_GLOBAL_CTRL 0x38FU
#define PCI_IMC_PMON_BOX_CTL 0xF4U
/* AMD Zen 4 / Zen 5: PerfCntrGlobalCtl, and the core, L3 and data-fabric event selects (every
 * other address from the first), whose EN bit is what LIKWID's Zen 4 support starts and stops
 * counting with. */
#define MSR_AMD_PERF_CNTR_GLOBAL_CTL 0xC0000301U
#define MSR_AMD_PERF_CTL0 0xC0010200U
#define MSR_AMD_DF_CTL_LAST 0xC001025EU

/* LIKWID's Skylake-SP/Cascade Lake memory channels (perfmon_skylakeX_counters.h: device and
 * function of each channel's PCI function; two controllers of three channels per socket). */
static const struct {
        uint32_t device;
        const char *devfn;
} skx_imc_channels[] = {
        { LIKWID_DEV_IMC_0_CH_0 + 0, "0a.2" },
        { LIKWID_DEV_IMC_0_CH_0 + 1, "0a.6" },
        { LIKWID_DEV_IMC_0_CH_0 + 2, "0b.2" },
        { LIKWID_DEV_IMC_1_CH_0 + 0, "0c.2" },
        { LIKWID_DEV_IMC_1_CH_0 + 1, "0c.6" },
        { LIKWID_DEV_IMC_1_CH_0 + 2, "0d.2" },
};

/* The PciDeviceIndex entries of LIKWID 5.2, 5.3 and 5.4 that the forwarder serves (or answers
 * with a reason), in each release's numbers; tests/likwid/test_likwid_devices.c checks them
 * against the lists contrib/likwid/extract-devices.py extracted from each release's source. */
static const struct {
        const char *name;
        uint32_t index[_LIKWID_VERSION_MAX];
} versioned_devices[] = {
        { "MSR_DEV", { 0, 0, 0, 0 } },
        { "PCI_IMC_DEVICE_0_CH_0", { 0, 5, 21, 49 } },
        { "PCI_IMC_DEVICE_0_CH_1", { 0, 6, 22, 50 } },
        { "PCI_IMC_DEVICE_0_CH_2", { 0, 7, 23, 51 } },
        { "PCI_IMC_DEVICE_0_CH_3", { 0, 8, 24, 52 } },
        { "PCI_IMC_DEVICE_1_CH_0", { 0, 9, 25, 53 } },
        { "PCI_IMC_DEVICE_1_CH_1", { 0, 10, 26, 54 } },
        { "PCI_IMC_DEVICE_1_CH_2", { 0, 11, 27, 55 } },
        { "PCI_IMC_DEVICE_1_CH_3", { 0, 12, 28, 56 } },
        { "MMIO_IMC_DEVICE_0_CH_0", { 0, 43, 90, 149 } },
        { "MMIO_IMC_DEVICE_0_CH_1", { 0, 44, 91, 150 } },
        { "MMIO_IMC_DEVICE_1_CH_0", { 0, 45, 98, 157 } },
        { "MMIO_IMC_DEVICE_1_CH_1", { 0, 46, 99, 158 } },
        { "MMIO_IMC_DEVICE_2_CH_0", { 0, 47, 106, 165 } },
        { "MMIO_IMC_DEVICE_2_CH_1", { 0, 48, 107, 166 } },
        { "MMIO_IMC_DEVICE_3_CH_0", { 0, 49, 108, 167 } },
        { "MMIO_IMC_DEVICE_3_CH_1", { 0, 50, 109, 168 } },
        { "MMIO_IMC_DEVICE_0_FREERUN", { 0, 51, 110, 169 } },
        { "MMIO_IMC_DEVICE_1_FREERUN", { 0, 52, 111, 170 } },
        { "MMIO_IMC_DEVICE_2_FREERUN", { 0, 53, 112, 171 } },
        { "MMIO_IMC_DEVICE_3_FREERUN", { 0, 54, 113, 172 } },
};

/* MAX_NUM_PCI_DEVICES of each release: the length of its device list. */
static const uint32_t device_list_length[_LIKWID_VERSION_MAX] = { 0, 55, 317, 499 };

static const char *const version_names[_LIKWID_VERSION_MAX] = { "unknown", "5.2", "5.3", "5.4" };

const char *likwid_version_name(LikwidVersion v) {
        return v < _LIKWID_VERSION_MAX ? version_names[v] : version_names[LIKWID_VERSION_UNKNOWN];
}

LikwidVersion likwid_version_parse(const char *s) {
        for (LikwidVersion v = LIKWID_VERSION_5_2; v < _LIKWID_VERSION_MAX; v++) {
                size_t n = strlen(version_names[v]);

                /* "5.2" and "5.2.x", never "5.20" */
                if (strncmp(s, version_names[v], n) == 0 && (s[n] == '\0' || s[n] == '.'))
                        return v;
        }
        return LIKWID_VERSION_UNKNOWN;
}

LikwidVersion likwid_version_from_maps(const char *maps, char *ret_found, size_t size) {
        static const char lib[] = "/liblikwid.so.";

        if (size > 0)
                ret_found[0] = '\0';
        for (const char *p = strstr(maps, lib); p; p = strstr(p + 1, lib)) {
                const char *v = p + strlen(lib);
                size_t n = strspn(v, "0123456789.");

                /* The file name ends the line: "liblikwid.so.5.2", not liblikwid.so.5.2-gdb.py */
                if (n == 0 || (v[n] != '\n' && v[n] != '\0' && v[n] != ' '))
                        continue;
                if (size > 0)
                        (void) snprintf(ret_found, size, "%.*s", (int) MIN(n, (size_t) 32), v);
                return likwid_version_parse(ret_found);
        }
        return LIKWID_VERSION_UNKNOWN;
}

int likwid_device_from_version(LikwidVersion v, uint32_t device, uint32_t *ret_device) {
        if (v == LIKWID_VERSION_UNKNOWN || v >= _LIKWID_VERSION_MAX)
                return -EINVAL;
        if (device >= device_list_length[v])
                return -ERANGE;
        *ret_device = LIKWID_DEV_UNSERVED;
        for (size_t i = 0; i < ELEMENTSOF(versioned_devices); i++)
                if (versioned_devices[i].index[v] == device) {
                        *ret_device = versioned_devices[i].index[LIKWID_VERSION_5_2];
                        break;
                }
        return 0;
}

const pmugate_cpu *likwid_map_cpu(const pmugate_info *info, uint32_t cpu) {
        for (size_t i = 0; i < info->n_cpus; i++)
                if (info->cpus[i].cpu == cpu)
                        return info->cpus[i].online ? &info->cpus[i] : NULL;
        return NULL;
}

static bool bdf_has_devfn(const char *bdf, const char *devfn) {
        size_t n = strlen(bdf), m = strlen(devfn);

        return n > m && bdf[n - m - 1] == ':' && strcmp(bdf + n - m, devfn) == 0;
}

int likwid_map_unit(const pmugate_info *info, uint32_t device, uint32_t socket, uint32_t *ret_unit) {
        const char *devfn = NULL;

        if (strcmp(info->model_key, "skx") != 0 && strcmp(info->model_key, "clx") != 0)
                return -ENODEV;
        for (size_t i = 0; i < ELEMENTSOF(skx_imc_channels); i++)
                if (skx_imc_channels[i].device == device)
                        devfn = skx_imc_channels[i].devfn;
        if (!devfn || socket > INT32_MAX)
                return -ENODEV;
        for (size_t i = 0; i < info->n_units; i++) {
                const pmugate_unit *u = &info->units[i];

                if (u->package == (int32_t) socket && u->vendor == 0x8086 && bdf_has_devfn(u->bdf, devfn)) {
                        *ret_unit = u->index;
                        return 0;
                }
        }
        return -ENODEV;
}

bool likwid_device_is_freerun(uint32_t device) {
        return device >= LIKWID_DEV_MMIO_FREERUN_FIRST && device <= LIKWID_DEV_MMIO_FREERUN_LAST;
}

bool likwid_device_is_mmio_channel(uint32_t device) {
        return device >= LIKWID_DEV_MMIO_IMC_FIRST && device <= LIKWID_DEV_MMIO_IMC_LAST;
}

bool likwid_mmio_channel_present(const pmugate_info *info, uint32_t device, uint32_t socket) {
        /* Two channels per controller, in controller order, as the free-running devices */
        return likwid_device_is_mmio_channel(device) &&
               likwid_freerun_present(info, LIKWID_DEV_MMIO_FREERUN_FIRST + (device - LIKWID_DEV_MMIO_IMC_FIRST) / 2,
                                      socket);
}

const pmugate_counter *likwid_find_counter(const pmugate_info *info, uint32_t counter) {
        for (size_t i = 0; i < info->n_counters; i++)
                if (info->counters[i].index == counter)
                        return &info->counters[i];
        return NULL;
}

int likwid_map_freerun(const pmugate_info *info, uint32_t device, uint32_t socket, uint32_t reg,
                       uint32_t *ret_counter) {
        char name[sizeof(info->counters[0].name)];

        /* The kernel's free-running counters are the very ones LIKWID maps on Ice Lake-SP
         * (the same controller, the same 64-byte lines); on other models LIKWID's device
         * numbers mean nothing. */
        if (strcmp(info->model_key, "icx") != 0 || !likwid_device_is_freerun(device) || socket > INT32_MAX)
                return -ENODEV;
        if (reg != LIKWID_FREERUN_READ && reg != LIKWID_FREERUN_WRITE)
                return -EINVAL;
        (void) snprintf(name, sizeof(name), "uncore_imc_free_running_%u/%s",
                        (unsigned) (device - LIKWID_DEV_MMIO_FREERUN_FIRST),
                        reg == LIKWID_FREERUN_READ ? "read" : "write");
        for (size_t i = 0; i < info->n_counters; i++) {
                const pmugate_counter *c = &info->counters[i];

                if (c->package == (int32_t) socket && strcmp(c->name, name) == 0 && c->error[0] == '\0' &&
                    pmugate_counter_bytes(c) > 0) {
                        *ret_counter = c->index;
                        return 0;
                }
        }
        return -ENODEV;
}

int likwid_imc_channel(const pmugate_info *info, uint32_t device) {
        if (!likwid_model_has_ubox(info))
                return -ENODEV;
        for (size_t i = 0; i < ELEMENTSOF(skx_imc_channels); i++)
                if (skx_imc_channels[i].device == device)
                        return (int) i;
        return -ENODEV;
}

int likwid_map_cas(const pmugate_info *info, uint32_t device, uint32_t socket, bool write, uint32_t *ret_counter) {
        char name[sizeof(info->counters[0].name)];
        int channel = likwid_imc_channel(info, device);

        if (channel < 0 || socket > INT32_MAX)
                return -ENODEV;
        (void) snprintf(name, sizeof(name), "uncore_imc_%d/%s", channel, write ? "cas_count_write" : "cas_count_read");
        for (size_t i = 0; i < info->n_counters; i++) {
                const pmugate_counter *c = &info->counters[i];

                if (c->package == (int32_t) socket && strcmp(c->name, name) == 0 && c->error[0] == '\0' &&
                    pmugate_counter_bytes(c) > 0) {
                        *ret_counter = c->index;
                        return 0;
                }
        }
        return -ENODEV;
}

bool likwid_freerun_present(const pmugate_info *info, uint32_t device, uint32_t socket) {
        uint32_t counter;

        return likwid_map_freerun(info, device, socket, LIKWID_FREERUN_READ, &counter) >= 0 &&
               likwid_map_freerun(info, device, socket, LIKWID_FREERUN_WRITE, &counter) >= 0;
}

const pmugate_register *likwid_find_msr(const pmugate_info *info, uint32_t reg) {
        for (size_t i = 0; i < info->n_registers; i++) {
                const pmugate_register *r = &info->registers[i];

                if (!r->pci && reg >= r->first && reg <= r->last)
                        return r;
        }
        return NULL;
}

const pmugate_register *likwid_find_pci(const pmugate_info *info, uint32_t unit, uint32_t offset) {
        const pmugate_unit *u = NULL;

        for (size_t i = 0; i < info->n_units; i++)
                if (info->units[i].index == unit)
                        u = &info->units[i];
        if (!u)
                return NULL;
        for (size_t i = 0; i < info->n_registers; i++) {
                const pmugate_register *r = &info->registers[i];

                if (r->pci && r->pci_vendor == u->vendor && r->pci_device == u->device &&
                    offset >= r->first && offset <= r->last && r->width > 0 &&
                    (offset - r->first) % r->width == 0)
                        return r;
        }
        return NULL;
}

int likwid_lease_cpus(const pmugate_info *info, const pmugate_cpu *target, const char *scope, uint32_t *cpus,
                      size_t max) {
        bool core = strcmp(scope, "core") == 0, package = strcmp(scope, "package") == 0;
        bool ccx = strcmp(scope, "ccx") == 0;
        size_t n = 0;

        if (!core && !package && !ccx) {
                if (max < 1)
                        return -E2BIG;
                cpus[0] = target->cpu;
                return 1;
        }
        for (size_t i = 0; i < info->n_cpus; i++) {
                const pmugate_cpu *c = &info->cpus[i];

                if (!c->online || c->package != target->package || (core && c->core != target->core))
                        continue;
                /* AMD's L3 counters: the CPUs on the target's L3; one whose L3 is unknown may
                 * share it, as the daemon counts it */
                if (ccx && c->ccx != target->ccx && c->ccx >= 0 && target->ccx >= 0)
                        continue;
                if (n >= max)
                        return -E2BIG;
                cpus[n++] = c->cpu;
        }
        return (int) n;
}

bool likwid_write_is_switch_off(uint32_t reg, uint64_t value) {
        /* LIKWID 5.2 writes 0 to PEBS_ENABLE at every setup on Skylake-SP and Cascade Lake,
         * without reading it first. pmugated never lets a client set a PEBS bit, so no
         * pmugate client can have switched PEBS on, and the kernel's own PEBS use is not
         * LIKWID's to switch off. */
        if (reg == MSR_IA32_PEBS_ENABLE && value == 0)
                return true;
        /* Write-1-to-clear overflow bits: LIKWID writes 0 at the end, which clears nothing. */
        return reg == MSR_UBOX_GLOBAL_STATUS && value == 0;
}

bool likwid_model_has_ubox(const pmugate_info *info) {
        return strcmp(info->model_key, "skx") == 0 || strcmp(info->model_key, "clx") == 0;
}

bool likwid_model_answers_ubox_freeze(const pmugate_info *info) {
        return likwid_model_has_ubox(info) || strcmp(info->model_key, "icx") == 0;
}

bool likwid_read_is_placeholder(const pmugate_info *info, uint32_t reg) {
        return likwid_model_has_ubox(info) && reg == MSR_CLIENT_UNC_PERF_GLOBAL_STATUS;
}

bool likwid_register_is_readonly_counter(const pmugate_register *entry) {
        return entry && entry->pci && entry->write_mask == 0 && entry->width == 8 &&
               strcmp(entry->cls, "uncore-imc") == 0;
}

bool likwid_write_is_gate(bool pci, uint32_t reg) {
        if (pci)
                return reg == PCI_IMC_PMON_BOX_CTL;
        return reg == MSR_IA32_PERF_GLOBAL_CTRL || reg == MSR_AMD_PERF_CNTR_GLOBAL_CTL ||
               (reg >= MSR_AMD_PERF_CTL0 && reg <= MSR_AMD_DF_CTL_LAST &&
                (reg - MSR_AMD_PERF_CTL0) % 2 == 0);
}

LikwidError likwid_error_from_refusal(int code) {
        switch (code) {
        case PROTO_E_NOT_AUTHORIZED:
        case PROTO_E_REG_NOT_ALLOWED:
        case PROTO_E_REG_FORBIDDEN:
        case PROTO_E_READ_ONLY:
        case PROTO_E_NO_GRANT:
        case PROTO_E_NO_LEASE:
        case PROTO_E_PREEMPTED:
        case PROTO_E_OUT_OF_SCOPE:
        case PROTO_E_REVOKED:
                return LIKWID_ERR_RESTREG;
        case PROTO_E_NO_SUCH_CPU:
                return LIKWID_ERR_OPENFAIL;
        case PROTO_E_NO_SUCH_UNIT:
                return LIKWID_ERR_NODEV;
        case PROTO_E_BUSY:
        case PROTO_E_TOO_MANY_CLIENTS:
        case PROTO_E_LIMIT:
                return LIKWID_ERR_DAEMONBUSY;
        default:
                return LIKWID_ERR_RWFAIL;
        }
}

LikwidError likwid_error_from_errno(int error) {
        switch (error) {
        case 0:
                return LIKWID_ERR_NOERROR;
        case -ENXIO:
        case -ENODEV:
                return LIKWID_ERR_NODEV;
        case -EPERM:
        case -EACCES:
                return LIKWID_ERR_RESTREG;
        case -EBUSY:
                return LIKWID_ERR_DAEMONBUSY;
        default:
                return LIKWID_ERR_RWFAIL;
        }
}

bool likwid_refusal_is_permanent(int code) {
        return code == PROTO_E_REG_NOT_ALLOWED || code == PROTO_E_REG_FORBIDDEN || code == PROTO_E_READ_ONLY;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Machine discovery under a root directory
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/machine.h"
#include "cpulist.h"
#include "log.h"
#include "pmugate-limits.h"

/* Counter counts from Intel's counter.json; versions from CPUID leaf 0xA as the kernel reads
 * it. Skylake-SP and Cascade Lake give a thread 4 general-purpose counters with SMT on and all 8
 * of the core with it off. Sapphire Rapids slots width is 6, Ice Lake 5, Skylake 4
 * (tma-formulas.md). Skylake-SP and Cascade Lake share model 0x55 and differ by stepping (perf's
 * mapfile: 0-4 SKX, 5-F CLX). */
#define CPU_MODEL(key, name, model, step_min, step_max, version, gp, gp_smt_off, fixed, metrics, width, mhz) \
        { key, name, "GenuineIntel", 6, model, model, step_min, step_max, version, gp, gp_smt_off, fixed, \
          48, metrics, width, mhz, false, 0, 0, 0 }
/* AMD Zen 4 (family 0x19) and Zen 5 (family 0x1A), as perf's mapfile picks amdzen4 and amdzen5:
 * every family 0x19 model but Zen 3's (0x00-0x0F, 0x20-0x5F), every family 0x1A model. Six core
 * counters of 48 bits, none fixed, PerfMonV2 (reported as version 2); 6 L3 counters per CCX;
 * data-fabric and memory-controller counters as CPUID leaf 0x80000022 reports them on Genoa
 * and Turin (16 and 48) when the leaf cannot be read. Dispatch is 6 slots wide on Zen 4 and 8
 * on Zen 5 (amd-topdown.md). */
#define AMD_MODEL(key, name, family, first, last, width, mhz) \
        { key, name, "AuthenticAMD", family, first, last, 0x0, 0xf, 2, 6, 6, 0, 48, 0, width, mhz, true, \
          6, 16, 48 }
static const CpuModel cpu_models[] = {
        CPU_MODEL("skx", "Skylake-SP", 0x55, 0x0, 0x4, 4, 4, 8, 3, 0, 4, 2100),
        CPU_MODEL("clx", "Cascade Lake", 0x55, 0x5, 0xf, 4, 4, 8, 3, 0, 4, 2300),
        CPU_MODEL("icx", "Ice Lake-SP", 0x6a, 0x0, 0xf, 5, 8, 8, 4, 1, 5, 2000),
        CPU_MODEL("icx", "Ice Lake-SP (D)", 0x6c, 0x0, 0xf, 5, 8, 8, 4, 1, 5, 2000),
        CPU_MODEL("spr", "Sapphire Rapids", 0x8f, 0x0, 0xf, 5, 8, 8, 4, 2, 6, 2000),
        /* Emerald Rapids: Sapphire Rapids' Golden Cove core and PMU (perf's mapfile gives it
         * the same event lists, emeraldrapids being a copy of sapphirerapids). */
        CPU_MODEL("emr", "Emerald Rapids", 0xcf, 0x0, 0xf, 5, 8, 8, 4, 2, 6, 2100),
        /* Granite Rapids: the Redwood Cove core keeps Golden Cove's counters, PERF_METRICS
         * levels 1 and 2 and 6-wide slots (perf's graniterapids metrics read the same topdown-*
         * events as sapphirerapids'); 0xAD is Granite Rapids-X, 0xAE Granite Rapids-D. */
        CPU_MODEL("gnr", "Granite Rapids", 0xad, 0x0, 0xf, 5, 8, 8, 4, 2, 6, 2000),
        CPU_MODEL("gnr", "Granite Rapids-D", 0xae, 0x0, 0xf, 5, 8, 8, 4, 2, 6, 2000),
        /* Sierra Forest: Crestmont E-cores without SMT, 8 general-purpose and 3 fixed counters,
         * no PERF_METRICS; its TopDown slot events count 6 slots per cycle (perf's
         * sierraforest metrics divide by 6 * CPU_CLK_UNHALTED.CORE). */
        CPU_MODEL("srf", "Sierra Forest", 0xaf, 0x0, 0xf, 5, 8, 8, 3, 0, 6, 2200),
        AMD_MODEL("zen4", "Zen 4 (Genoa)", 0x19, 0x10, 0x1f, 6, 2400),
        AMD_MODEL("zen4", "Zen 4", 0x19, 0x60, 0x9f, 6, 2400),
        AMD_MODEL("zen4", "Zen 4 (Bergamo)", 0x19, 0xa0, 0xaf, 6, 2400),
        AMD_MODEL("zen4", "Zen 4", 0x19, 0xb0, 0xff, 6, 2400),
        AMD_MODEL("zen5", "Zen 5 (Turin)", 0x1a, 0x00, 0x1f, 8, 2500),
        AMD_MODEL("zen5", "Zen 5", 0x1a, 0x20, 0xff, 8, 2500),
        /* NVIDIA Grace: Arm Neoverse V2 cores (MIDR implementer 0x41, architecture 0xf, part
         * 0xd4f, as the kernel's perf mapfile matches it, every variant and revision). ARMv9
         * PMUv3: 6 event counters and the cycle counter (the one "fixed" counter), counted by
         * the kernel's armv8_pmuv3 driver in 64 bits; 8 TopDown slots per cycle as PMMIR_EL1.SLOTS
         * (the PMU's caps/slots) reports them. No MSRs: the perf path only. */
        { "grace", "NVIDIA Grace (Neoverse V2)", MACHINE_VENDOR_ARM, 0xf, 0xd4f, 0xd4f, 0x00, 0xff, 3, 6, 6, 1,
          64, 0, 8, 3100, false, 0, 0, 0 },
};

static const char *const scope_names[_REG_SCOPE_MAX] = {
        [REG_SCOPE_THREAD] = "thread",
        [REG_SCOPE_CORE] = "core",
        [REG_SCOPE_PACKAGE] = "package",
        [REG_SCOPE_CCX] = "ccx",
};

const char *reg_scope_to_string(RegScope s) {
        if ((unsigned) s >= _REG_SCOPE_MAX)
                return NULL;
        return scope_names[s];
}

unsigned machine_gp_counters(const Machine *m) {
        if (!m->cpu_model)
                return 0;
        /* AMD's six counters are per thread whether SMT is on or off; CPUID may report fewer
         * (a hypervisor's virtual PMU), never more than the model's allowlist names. */
        if (cpu_model_is_amd(m->cpu_model))
                return m->core_counters < m->cpu_model->gp_counters ? m->core_counters :
                                                                      m->cpu_model->gp_counters;
        return m->smt ? m->cpu_model->gp_counters : m->cpu_model->gp_counters_smt_off;
}

void machine_default_pmu_caps(Machine *m) {
        const CpuModel *c = m->cpu_model;

        m->cpuid_read = false;
        m->perfmon_v2 = c && c->perfmon_v2;
        m->core_counters = c ? c->gp_counters : 0;
        m->l3_counters = c ? c->l3_counters : 0;
        m->df_counters = c ? c->df_counters : 0;
        m->umc_counters = c ? c->umc_counters : 0;
}

void machine_set_amd_pmu_caps(Machine *m, uint32_t eax, uint32_t ebx) {
        machine_default_pmu_caps(m);
        m->cpuid_read = true;
        m->perfmon_v2 = eax & 1;
        if (!m->perfmon_v2)
                return;
        m->core_counters = ebx & 0xf;
        m->df_counters = (ebx >> 10) & 0x3f;
        m->umc_counters = (ebx >> 16) & 0x3f;
}

const CpuModel *cpu_model_find(const char *vendor, unsigned family, unsigned model, unsigned stepping) {
        for (size_t i = 0; i < ELEMENTSOF(cpu_models); i++) {
                const CpuModel *c = &cpu_models[i];

                if (strcmp(c->vendor, vendor) == 0 && c->family == family && model >= c->model &&
                    model <= c->model_last && stepping >= c->stepping_min && stepping <= c->stepping_max)
                        return c;
        }
        return NULL;
}

const CpuModel *cpu_model_by_key(const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(cpu_models); i++)
                if (strcmp(cpu_models[i].key, key) == 0)
                        return &cpu_models[i];
        return NULL;
}

Machine *machine_new(void) {
        return calloc(1, sizeof(Machine));
}

Machine *machine_free(Machine *m) {
        if (!m)
                return NULL;
        free(m->cpus);
        free(m->units);
        for (uint32_t i = 0; i < m->n_counters; i++)
                if (m->counters[i].fd >= 0)
                        (void) close(m->counters[i].fd);
        free(m->counters);
        free(m);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Machine *, machine_free);

/* AMD's extended performance monitoring leaf (pmu-registers.md §3.2). */
#define AMD_CPUID_PMU_LEAF 0x80000022U

/* The longest CPU list file read: every other CPU of PMUGATE_CPUS_MAX, as "0,2,4,...". */
#define CPU_LIST_TEXT_MAX (64U * 1024U)

int machine_read_text(const char *root, const char *path, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = NULL;
        char full[4096];
        size_t n;

        (void) snprintf(full, sizeof(full), "%s/%s", root, path);
        f = fopen(full, "re");
        if (!f)
                return negative_errno();
        n = fread(buf, 1, size - 1, f);
        if (ferror(f))
                return -EIO;
        /* A file longer than the buffer is refused, not read in part: a cut CPU list parses. */
        if (n == size - 1 && fgetc(f) != EOF)
                return -EFBIG;
        buf[n] = '\0';
        /* nor one with a NUL inside, which would end the text early without a word */
        if (memchr(buf, '\0', n))
                return -EINVAL;
        while (n > 0 && isspace((unsigned char) buf[n - 1]))
                buf[--n] = '\0';
        return 0;
}

static int read_int(const char *root, const char *path, int64_t *ret) {
        char buf[64], *end;
        long long v;
        int r;

        r = machine_read_text(root, path, buf, sizeof(buf));
        if (r < 0)
                return r;
        errno = 0;
        v = strtoll(buf, &end, 0);
        if (errno != 0 || end == buf || *end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int machine_parse_midr(const char *text, uint32_t *ret) {
        unsigned long long v;
        size_t digits;
        char *end;

        if (text[0] != '0' || (text[1] != 'x' && text[1] != 'X'))
                return -EINVAL;
        digits = strspn(text + 2, "0123456789abcdefABCDEF");
        if (digits == 0 || digits > 16 || text[2 + digits] != '\0')
                return -EINVAL;
        errno = 0;
        v = strtoull(text + 2, &end, 16);
        if (errno != 0 || *end != '\0' || v > UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

void machine_set_midr(Machine *m, uint32_t midr) {
        unsigned implementer = midr >> 24, variant = (midr >> 20) & 0xf, architecture = (midr >> 16) & 0xf,
                 part = (midr >> 4) & 0xfff, revision = midr & 0xf;

        m->midr = midr;
        if (implementer == MIDR_IMPLEMENTER_ARM)
                (void) snprintf(m->vendor, sizeof(m->vendor), "%s", MACHINE_VENDOR_ARM);
        else
                (void) snprintf(m->vendor, sizeof(m->vendor), "arm64:0x%02x", implementer);
        m->family = architecture;
        m->model = part;
        m->stepping = variant << 4 | revision;
        (void) snprintf(m->model_name, sizeof(m->model_name), "MIDR 0x%08" PRIx32, midr);
}

/* The MIDR fields ARM's /proc/cpuinfo spells out, one line each; UINT_MAX while not seen. */
typedef enum ArmCpuinfoField {
        ARM_CPUINFO_IMPLEMENTER,
        ARM_CPUINFO_VARIANT,
        ARM_CPUINFO_ARCHITECTURE,
        ARM_CPUINFO_PART,
        ARM_CPUINFO_REVISION,
        _ARM_CPUINFO_FIELDS,
} ArmCpuinfoField;

/* One of the hex fields ARM's /proc/cpuinfo gives ("0x41", "0xd4f", "0x1", or a decimal "0"
 * for the revision and architecture), at most max; -EINVAL otherwise. */
static int parse_cpuinfo_field(const char *value, unsigned max, unsigned *ret) {
        unsigned long v;
        char *end;

        if (!isdigit((unsigned char) value[0]))
                return -EINVAL;
        errno = 0;
        v = strtoul(value, &end, 0);
        if (errno != 0 || *end != '\0' || v > max)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* MIDR_EL1 of an ARM machine: the first online CPU's from sysfs, which the kernel reads from the
 * register itself; else rebuilt from the CPU implementer, variant, architecture, part and
 * revision lines of /proc/cpuinfo's first processor block (arm, when the kernel gives them). */
static int discover_midr(const char *root, const Machine *m, const unsigned arm[static _ARM_CPUINFO_FIELDS],
                         uint32_t *ret) {
        char path[256], text[64];
        int r;

        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                if (!m->cpus[cpu].online)
                        continue;
                (void) snprintf(path, sizeof(path),
                                "sys/devices/system/cpu/cpu%" PRIu32 "/regs/identification/midr_el1", cpu);
                r = machine_read_text(root, path, text, sizeof(text));
                if (r == -ENOENT)
                        break;
                if (r < 0)
                        return log_error_errno(r, "Cannot read %s/%s", root, path);
                if (machine_parse_midr(text, ret) < 0)
                        return log_error_errno(EINVAL, "%s/%s is not a MIDR_EL1 value: '%.20s'", root, path, text);
                return 0;
        }
        if (arm[ARM_CPUINFO_IMPLEMENTER] == UINT_MAX || arm[ARM_CPUINFO_PART] == UINT_MAX)
                return log_error_errno(EINVAL, "%s/proc/cpuinfo lacks vendor_id, cpu family or model, and CPU "
                                       "implementer or CPU part", root);
        /* the architecture field is 0xf on every ARMv8 and later core, whatever the line says */
        *ret = arm[ARM_CPUINFO_IMPLEMENTER] << 24 |
               (arm[ARM_CPUINFO_VARIANT] == UINT_MAX ? 0 : arm[ARM_CPUINFO_VARIANT]) << 20 |
               UINT32_C(0xf) << 16 | arm[ARM_CPUINFO_PART] << 4 |
               (arm[ARM_CPUINFO_REVISION] == UINT_MAX ? 0 : arm[ARM_CPUINFO_REVISION]);
        return 0;
}

/* ARM's /proc/cpuinfo keys and the largest value of each. */
static const struct {
        const char *key;
        unsigned max;
} arm_cpuinfo_keys[_ARM_CPUINFO_FIELDS] = {
        [ARM_CPUINFO_IMPLEMENTER] = { "CPU implementer", 0xff },
        [ARM_CPUINFO_VARIANT] = { "CPU variant", 0xf },
        /* arm64 kernels print "CPU architecture: 8" whatever the register says: MIDR's own
         * field is 0xf on every ARMv8 and later core, so the line is checked but never used */
        [ARM_CPUINFO_ARCHITECTURE] = { "CPU architecture", 0xff },
        [ARM_CPUINFO_PART] = { "CPU part", 0xfff },
        [ARM_CPUINFO_REVISION] = { "CPU revision", 0xf },
};

/* Returns 0 for an x86 cpuinfo (vendor, family, model in m), 1 for an ARM one (its MIDR fields
 * in arm), or a negative errno. */
static int parse_cpuinfo(const char *root, Machine *m, unsigned arm[static _ARM_CPUINFO_FIELDS]) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[4096], line[1024];
        bool have_family = false, have_model = false;

        (void) snprintf(path, sizeof(path), "%s/proc/cpuinfo", root);
        f = fopen(path, "re");
        if (!f)
                return log_error_errno(errno, "Cannot read %s", path);

        /* The first processor block describes the model; all CPUs of a supported server
         * part are the same model. */
        while (fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':'), *key = line, *value;
                size_t n;

                if (line[0] == '\n' && (have_model || arm[ARM_CPUINFO_PART] != UINT_MAX))
                        break;
                if (!colon)
                        continue;
                *colon = '\0';
                value = colon + 1;
                while (*value == ' ' || *value == '\t')
                        value++;
                n = strlen(value);
                while (n > 0 && (value[n - 1] == '\n' || value[n - 1] == ' '))
                        value[--n] = '\0';
                n = strlen(key);
                while (n > 0 && (key[n - 1] == '\t' || key[n - 1] == ' '))
                        key[--n] = '\0';

                if (strcmp(key, "vendor_id") == 0)
                        (void) snprintf(m->vendor, sizeof(m->vendor), "%s", value);
                else if (strcmp(key, "cpu family") == 0) {
                        m->family = (unsigned) strtoul(value, NULL, 10);
                        have_family = true;
                } else if (strcmp(key, "model") == 0) {
                        m->model = (unsigned) strtoul(value, NULL, 10);
                        have_model = true;
                } else if (strcmp(key, "stepping") == 0)
                        m->stepping = (unsigned) strtoul(value, NULL, 10);
                else if (strcmp(key, "model name") == 0)
                        (void) snprintf(m->model_name, sizeof(m->model_name), "%s", value);
                for (size_t i = 0; i < ELEMENTSOF(arm_cpuinfo_keys); i++)
                        if (strcmp(key, arm_cpuinfo_keys[i].key) == 0 &&
                            parse_cpuinfo_field(value, arm_cpuinfo_keys[i].max, &arm[i]) < 0)
                                return log_error_errno(EINVAL, "%s: '%s' is not a value of %s", path, value, key);
        }

        if (m->vendor[0] != '\0' && have_family && have_model)
                return 0;
        /* ARM: no vendor_id, family or model; the MIDR says, once the CPUs are known */
        if (m->vendor[0] == '\0' && !have_family && !have_model && arm[ARM_CPUINFO_IMPLEMENTER] != UINT_MAX)
                return 1;
        return log_error_errno(EINVAL, "%s lacks vendor_id, cpu family or model", path);
}

static int discover_cpus(const char *root, Machine *m) {
        _cleanup_free_ uint32_t *present = NULL, *online = NULL;
        size_t n_present, n_online;
        char buf[65536];
        int r;

        r = machine_read_text(root, "sys/devices/system/cpu/present", buf, sizeof(buf));
        if (r < 0)
                r = machine_read_text(root, "sys/devices/system/cpu/possible", buf, sizeof(buf));
        if (r < 0)
                return log_error_errno(r, "Cannot read %s/sys/devices/system/cpu/present", root);
        r = cpulist_parse(buf, PMUGATE_CPUS_MAX, &present, &n_present);
        if (r < 0 || n_present == 0)
                return log_error_errno(r < 0 ? r : -EINVAL, "Bad CPU list '%s' in sys/devices/system/cpu/present", buf);

        r = machine_read_text(root, "sys/devices/system/cpu/online", buf, sizeof(buf));
        if (r < 0)
                return log_error_errno(r, "Cannot read %s/sys/devices/system/cpu/online", root);
        r = cpulist_parse(buf, PMUGATE_CPUS_MAX, &online, &n_online);
        if (r < 0)
                return log_error_errno(r, "Bad CPU list '%s' in sys/devices/system/cpu/online", buf);

        m->n_cpus = present[n_present - 1] + 1;
        m->cpus = calloc(m->n_cpus, sizeof(MachineCpu));
        if (!m->cpus)
                return -ENOMEM;
        for (size_t i = 0; i < n_present; i++)
                m->cpus[present[i]] = (MachineCpu) { .present = true, .package = -1, .die = -1, .core = -1,
                                                     .ccx = -1 };
        for (size_t i = 0; i < n_online; i++)
                if (online[i] < m->n_cpus && m->cpus[online[i]].present)
                        m->cpus[online[i]].online = true;

        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                MachineCpu *c = &m->cpus[cpu];
                _cleanup_free_ uint32_t *siblings = NULL;
                size_t n_siblings;
                char path[256];
                int64_t v;

                if (!c->online)
                        continue;
                (void) snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%" PRIu32 "/topology/physical_package_id", cpu);
                if (read_int(root, path, &v) < 0 || v < 0 || v > INT32_MAX)
                        return log_error_errno(EINVAL, "Cannot read %s/%s", root, path);
                c->package = (int32_t) v;
                (void) snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%" PRIu32 "/topology/core_id", cpu);
                if (read_int(root, path, &v) < 0 || v < 0 || v > INT32_MAX)
                        return log_error_errno(EINVAL, "Cannot read %s/%s", root, path);
                c->core = (int32_t) v;
                (void) snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%" PRIu32 "/topology/die_id", cpu);
                c->die = read_int(root, path, &v) >= 0 ? (int32_t) v : 0;
                /* The L3 the CPU uses: on AMD its core complex. Unknown (-1) unless the cache
                 * says it is level 3 and gives a sane id. */
                (void) snprintf(path, sizeof(path),
                                "sys/devices/system/cpu/cpu%" PRIu32 "/cache/index3/level", cpu);
                if (read_int(root, path, &v) >= 0 && v == 3) {
                        (void) snprintf(path, sizeof(path),
                                        "sys/devices/system/cpu/cpu%" PRIu32 "/cache/index3/id", cpu);
                        if (read_int(root, path, &v) >= 0 && v >= 0 && v <= INT32_MAX)
                                c->ccx = (int32_t) v;
                }

                (void) snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%" PRIu32 "/topology/thread_siblings_list", cpu);
                if (machine_read_text(root, path, buf, sizeof(buf)) >= 0 &&
                    cpulist_parse(buf, PMUGATE_CPUS_MAX, &siblings, &n_siblings) >= 0)
                        for (size_t i = 0; i < n_siblings; i++)
                                if (siblings[i] == cpu)
                                        c->thread = (uint32_t) i;
        }
        return 0;
}

static int read_hex_file(const char *root, const char *dir, const char *name, uint16_t *ret) {
        char path[512];
        int64_t v;
        int r;

        (void) snprintf(path, sizeof(path), "%s/%s", dir, name);
        r = read_int(root, path, &v);
        if (r < 0)
                return r;
        if (v < 0 || v > 0xffff)
                return -ERANGE;
        *ret = (uint16_t) v;
        return 0;
}

static int compare_units(const void *a, const void *b) {
        return strcmp(((const MachineUnit *) a)->bdf, ((const MachineUnit *) b)->bdf);
}

static bool hex_run(const char *s, size_t min, size_t max, size_t *ret_length) {
        size_t n = 0;

        while (n < max && isxdigit((unsigned char) s[n]))
                n++;
        *ret_length = n;
        return n >= min && !isxdigit((unsigned char) s[n]);
}

/* A PCI address as the kernel names the directory: domain (4 to 8 hex digits), bus, device,
 * function, "0000:3a:0a.2". Anything else under sys/bus/pci/devices is not a function. */
static bool bdf_valid(const char *name) {
        size_t n;

        if (!hex_run(name, 4, 8, &n) || name[n] != ':')
                return false;
        name += n + 1;
        if (!hex_run(name, 2, 2, &n) || name[n] != ':')
                return false;
        name += n + 1;
        if (!hex_run(name, 2, 2, &n) || name[n] != '.')
                return false;
        name += n + 1;
        return name[0] >= '0' && name[0] <= '7' && name[1] == '\0';
}

/* The package of a PCI function, from the kernel: its NUMA node, and the packages of that
 * node's online CPUs. Unknown (-1) unless they all agree on one. */
static int32_t unit_package(const char *root, const Machine *m, const char *bdf) {
        _cleanup_free_ uint32_t *cpus = NULL;
        _cleanup_free_ char *list = NULL;
        int32_t package = -1;
        char path[128];
        size_t n;
        int64_t node;

        (void) snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/numa_node", bdf);
        if (read_int(root, path, &node) < 0 || node < 0 || node > INT32_MAX)
                return -1;
        list = malloc(CPU_LIST_TEXT_MAX);
        if (!list)
                return -1;
        (void) snprintf(path, sizeof(path), "sys/devices/system/node/node%" PRId64 "/cpulist", node);
        if (machine_read_text(root, path, list, CPU_LIST_TEXT_MAX) < 0 ||
            cpulist_parse(list, PMUGATE_CPUS_MAX, &cpus, &n) < 0)
                return -1;
        for (size_t i = 0; i < n; i++) {
                const MachineCpu *c = machine_cpu(m, cpus[i]);

                if (!c || !c->online)
                        continue;
                if (package >= 0 && c->package != package)
                        return -1;
                package = c->package;
        }
        return package;
}

int machine_discover_units(Machine *m, const char *root, MachineUnitFilter wanted, const void *userdata) {
        _cleanup_free_ MachineUnit *units = NULL;
        size_t n_units = 0, allocated = 0;
        char path[4096];
        struct dirent *de;
        DIR *d;

        (void) snprintf(path, sizeof(path), "%s/sys/bus/pci/devices", root);
        d = opendir(path);
        if (!d)
                return 0;

        /* Every function is looked at before the cap applies, so unrelated devices, however
         * many, cannot crowd out the units the allowlist names. */
        while ((de = readdir(d))) {
                MachineUnit u = { .package = -1 };
                char dir[64], config[4096 + 64];
                struct stat st;

                if (strlen(de->d_name) >= sizeof(u.bdf) || !bdf_valid(de->d_name))
                        continue;
                (void) snprintf(dir, sizeof(dir), "sys/bus/pci/devices/%s", de->d_name);
                if (read_hex_file(root, dir, "vendor", &u.vendor) < 0 ||
                    read_hex_file(root, dir, "device", &u.device) < 0)
                        continue;
                if (!wanted || !wanted(u.vendor, u.device, userdata))
                        continue;
                (void) snprintf(config, sizeof(config), "%s/%s/config", root, dir);
                if (stat(config, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                u.config_size = st.st_size > UINT32_MAX ? UINT32_MAX : (uint32_t) st.st_size;
                memcpy(u.bdf, de->d_name, strlen(de->d_name) + 1);
                u.package = unit_package(root, m, u.bdf);

                if (n_units == allocated) {
                        MachineUnit *grown = reallocarray(units, allocated * 2 + 16, sizeof(MachineUnit));

                        if (!grown) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        units = grown;
                        allocated = allocated * 2 + 16;
                }
                units[n_units++] = u;
        }
        closedir(d);

        if (n_units > 0)
                qsort(units, n_units, sizeof(MachineUnit), compare_units);
        if (n_units > PMUGATE_UNITS_MAX) {
                log_warning("%zu PCI functions carry allowlisted uncore registers; serving the first %u "
                            "by address", n_units, PMUGATE_UNITS_MAX);
                n_units = PMUGATE_UNITS_MAX;
        }
        for (size_t i = 0; i < n_units; i++)
                if (units[i].package < 0)
                        log_notice("The package of PCI unit %s is unknown (no NUMA node with online CPUs "
                                   "of one package): only admins may write it", units[i].bdf);
        free(m->units);
        m->units = TAKE_PTR(units);
        m->n_units = (uint32_t) n_units;
        return 0;
}

typedef struct ScopeKey {
        RegScope scope;
        uint32_t cpu;
        int32_t package;
        int32_t core;
        int32_t ccx;
} ScopeKey;

static int scope_key(const Machine *m, RegScope scope, uint32_t target, bool pci, ScopeKey *ret) {
        const MachineCpu *c;

        if (pci) {
                if (target >= m->n_units)
                        return -ENXIO;
                if (m->units[target].package < 0)
                        return -ENOENT;
                *ret = (ScopeKey) { .scope = REG_SCOPE_PACKAGE, .package = m->units[target].package };
                return 0;
        }
        c = machine_cpu(m, target);
        if (!c || !c->online)
                return -ENXIO;
        if ((unsigned) scope >= _REG_SCOPE_MAX)
                return -EINVAL;
        /* A CPU whose L3 is unknown shares its CCX registers with its whole package as far as
         * leases and scope go: more CPUs than the truth, never fewer. */
        if (scope == REG_SCOPE_CCX && c->ccx < 0)
                scope = REG_SCOPE_PACKAGE;
        *ret = (ScopeKey) {
                .scope = scope, .cpu = target, .package = c->package, .core = c->core, .ccx = c->ccx,
        };
        return 0;
}

static bool scope_key_has(const Machine *m, const ScopeKey *k, uint32_t cpu) {
        const MachineCpu *c = &m->cpus[cpu];

        if (!c->online)
                return false;
        switch (k->scope) {
        case REG_SCOPE_THREAD:
                return cpu == k->cpu;
        case REG_SCOPE_CORE:
                return c->package == k->package && c->core == k->core;
        case REG_SCOPE_PACKAGE:
                return c->package == k->package;
        case REG_SCOPE_CCX:
                /* Every CPU of the package whose CCX is unknown too: it may share this L3. */
                return c->package == k->package && (c->ccx == k->ccx || c->ccx < 0);
        default:
                return false;
        }
}

int machine_scope_cpus(const Machine *m, RegScope scope, uint32_t target, bool pci, CpuSet *ret) {
        ScopeKey k;
        bool any = false;
        int r;

        r = scope_key(m, scope, target, pci, &k);
        if (r < 0)
                return r;
        cpuset_clear(ret);
        if (k.scope == REG_SCOPE_THREAD) {
                cpuset_add(ret, k.cpu);
                return 0;
        }
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                if (scope_key_has(m, &k, cpu)) {
                        cpuset_add(ret, cpu);
                        any = true;
                }
        return any ? 0 : -ENOENT;
}

int machine_scope_anchor(const Machine *m, RegScope scope, uint32_t target, bool pci, uint32_t *ret) {
        ScopeKey k;
        int r;

        r = scope_key(m, scope, target, pci, &k);
        if (r < 0)
                return r;
        if (k.scope == REG_SCOPE_THREAD) {
                *ret = k.cpu;
                return 0;
        }
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                if (scope_key_has(m, &k, cpu)) {
                        *ret = cpu;
                        return 0;
                }
        return -ENOENT;
}

int machine_first_online_cpu(const Machine *m, uint32_t *ret) {
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++)
                if (m->cpus[cpu].online) {
                        *ret = cpu;
                        return 0;
                }
        return -ENXIO;
}

void machine_update_summary(Machine *m) {
        int32_t max_package = -1;

        m->n_online = 0;
        m->smt = false;
        for (uint32_t cpu = 0; cpu < m->n_cpus; cpu++) {
                const MachineCpu *c = &m->cpus[cpu];

                if (!c->online)
                        continue;
                m->n_online++;
                if (c->package > max_package)
                        max_package = c->package;
                if (c->thread > 0)
                        m->smt = true;
        }
        /* in unsigned arithmetic: a package id is anything up to INT32_MAX in sysfs, and one
         * more than that does not fit an int (found by fuzz_machine) */
        m->n_packages = (uint32_t) max_package + 1U;
}

/* CPUID leaf 0x80000022 of the first online CPU through the kernel's cpuid driver: a 16-byte
 * read at the leaf's offset gives EAX, EBX, ECX, EDX. Without the driver the model's defaults
 * stay, which the allowlist bounds anyway. */
static void discover_amd_pmu_caps(const char *root, Machine *m) {
        _cleanup_close_ int fd = -EBADF;
        uint32_t regs[4], cpu;
        char path[4096];
        ssize_t n;

        if (machine_first_online_cpu(m, &cpu) < 0)
                return;
        (void) snprintf(path, sizeof(path), "%s/dev/cpu/%" PRIu32 "/cpuid", root, cpu);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                log_notice("Cannot open %s (%m): PMU capabilities are the %s defaults", path,
                           m->cpu_model->name);
                return;
        }
        n = pread(fd, regs, sizeof(regs), AMD_CPUID_PMU_LEAF);
        if (n != (ssize_t) sizeof(regs)) {
                log_notice("Cannot read CPUID leaf 0x%x from %s: PMU capabilities are the %s defaults",
                           AMD_CPUID_PMU_LEAF, path, m->cpu_model->name);
                return;
        }
        machine_set_amd_pmu_caps(m, regs[0], regs[1]);
        log_info("CPUID 0x%x: PerfMonV2 %s, %u core, %u data-fabric, %u memory-controller counters",
                 AMD_CPUID_PMU_LEAF, m->perfmon_v2 ? "yes" : "no", m->core_counters, m->df_counters,
                 m->umc_counters);
}

int machine_discover(const char *root, Machine **ret) {
        _cleanup_(machine_freep) Machine *m = NULL;
        unsigned arm[_ARM_CPUINFO_FIELDS] = { UINT_MAX, UINT_MAX, UINT_MAX, UINT_MAX, UINT_MAX };
        bool is_arm;
        int64_t v;
        int r;

        m = machine_new();
        if (!m)
                return -ENOMEM;

        r = parse_cpuinfo(root, m, arm);
        if (r < 0)
                return r;
        is_arm = r > 0;

        r = discover_cpus(root, m);
        if (r < 0)
                return r;
        if (is_arm) {
                uint32_t midr;

                r = discover_midr(root, m, arm, &midr);
                if (r < 0)
                        return r;
                machine_set_midr(m, midr);
        }
        m->cpu_model = cpu_model_find(m->vendor, m->family, m->model, m->stepping);
        machine_default_pmu_caps(m);
        if (cpu_model_is_amd(m->cpu_model))
                discover_amd_pmu_caps(root, m);
        if (read_int(root, "proc/sys/kernel/nmi_watchdog", &v) >= 0)
                m->nmi_watchdog = v != 0;
        machine_update_summary(m);

        *ret = TAKE_PTR(m);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Simulator configuration: defaults and INI parsing with inih
 */
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/sim/sim-amd.h"
#include "backend/sim/sim-config.h"
#include "backend/sim/sim-parse.h"
#include "cpulist.h"
#include "log.h"
#include "macro.h"
#include "pmugate-limits.h"

/* The kernel accepts watchdog_thresh up to 60 seconds. */
#define WATCHDOG_THRESH_MAX 60U
/* Defaults: a two-socket machine with four SMT cores per socket, and a package that draws
 * what a busy server part does. */
#define DEFAULT_SOCKETS 2U
#define DEFAULT_CORES_PER_SOCKET 4U
/* Zen 4 and Zen 5 server parts put 8 cores on one L3 (a CCX); Bergamo's Zen 4c puts 8 too. */
#define DEFAULT_CORES_PER_CCX 8U
#define DEFAULT_CYCLES_PER_ACCESS_DETERMINISTIC 1000U
#define DEFAULT_PACKAGE_WATTS 180.0
#define DEFAULT_DRAM_WATTS 25.0
#define DEFAULT_PP0_WATTS 140.0
#define DEFAULT_PLATFORM_WATTS 420.0
#define DEFAULT_PACKAGE_TDP_WATTS 205.0
#define DEFAULT_DRAM_TDP_WATTS 40.0
#define DEFAULT_ENERGY_UNIT_BITS 14U    /* ESU of the typical 0x000A0E03 */
#define DEFAULT_IMC_READ_GBPS 40.0
#define DEFAULT_IMC_WRITE_GBPS 15.0
#define DEFAULT_IMC_DCLK_MHZ 1333.0     /* DDR4-2666 */

/* Sanity bounds on what a file may ask for. */
#define CYCLES_PER_ACCESS_MAX UINT64_C(1000000000)
#define WATTS_MAX 10000.0
#define GBPS_MAX 10000.0
#define DCLK_MHZ_MAX 10000.0
#define ENERGY_UNIT_BITS_MAX 31U        /* ESU is a 5-bit field */
#define MSR_ADDRESS_MAX UINT32_MAX

typedef enum SimSection {
        SIM_SECTION_MACHINE,
        SIM_SECTION_CLOCK,
        SIM_SECTION_INJECT,
        SIM_SECTION_RAPL,
        SIM_SECTION_IMC,
        SIM_SECTION_PROFILE,
        SIM_SECTION_CPUS,
        SIM_SECTION_LBR,
} SimSection;

typedef struct SimConfigParser {
        SimConfig *config;
        FILE *file;
        unsigned line;                  /* physical lines read so far */
        unsigned header_line;           /* line of the last [section] header */
        unsigned error_line;            /* 0 while there is no error */
        char error[SIM_REASON_MAX];
        bool in_section;
        char section[INI_MAX_LINE];     /* name of the section being filled */
        SimSection kind;
} SimConfigParser;

SimConfig *sim_config_free(SimConfig *c) {
        if (!c)
                return NULL;
        free(c->path);
        free(c->offline_cpus);
        free(c->eio_cpus);
        free(c->kernel_imc_units);
        free(c->profiles);
        for (size_t i = 0; i < c->n_rules; i++)
                free(c->rules[i].cpus);
        free(c->rules);
        sim_lbr_free(c->lbr);
        free(c);
        return NULL;
}

int sim_config_new_default(SimConfig **ret) {
        SimConfig *c;

        c = calloc(1, sizeof(SimConfig));
        if (!c)
                return -ENOMEM;
        *c = (SimConfig) {
                .sockets = DEFAULT_SOCKETS,
                .cores_per_socket = DEFAULT_CORES_PER_SOCKET,
                .cores_per_ccx = DEFAULT_CORES_PER_CCX,
                .smt = true,
                .clock_mode = SIM_CLOCK_REALTIME,
                .rapl = {
                        .package_watts = DEFAULT_PACKAGE_WATTS,
                        .dram_watts = DEFAULT_DRAM_WATTS,
                        .pp0_watts = DEFAULT_PP0_WATTS,
                        .platform_watts = DEFAULT_PLATFORM_WATTS,
                        .package_tdp_watts = DEFAULT_PACKAGE_TDP_WATTS,
                        .dram_tdp_watts = DEFAULT_DRAM_TDP_WATTS,
                        .energy_unit_bits = DEFAULT_ENERGY_UNIT_BITS,
                },
                .imc_read_gbps = DEFAULT_IMC_READ_GBPS,
                .imc_write_gbps = DEFAULT_IMC_WRITE_GBPS,
                .imc_dclk_mhz = DEFAULT_IMC_DCLK_MHZ,
                .imc_kernel_pmu = true,
        };
        *ret = c;
        return 0;
}

bool sim_cpu_listed(const uint32_t *cpus, size_t n, uint32_t cpu) {
        for (size_t i = 0; i < n; i++)
                if (cpus[i] == cpu)
                        return true;
        return false;
}

_printf_(3, 0) static int parser_failv(SimConfigParser *p, unsigned line, const char *fmt, va_list ap) {
        if (p->error_line > 0)
                return -EINVAL;
        p->error_line = line;
        (void) vsnprintf(p->error, sizeof(p->error), fmt, ap);
        return -EINVAL;
}

/* Records the first error, at the line being parsed. */
_printf_(2, 3) static int parser_fail(SimConfigParser *p, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = parser_failv(p, p->line, fmt, ap);
        va_end(ap);
        return r;
}

/* Records the first error, at the header of the current section. */
_printf_(2, 3) static int parser_fail_section(SimConfigParser *p, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = parser_failv(p, p->header_line > 0 ? p->header_line : p->line, fmt, ap);
        va_end(ap);
        return r;
}

/* inih reader: counts physical lines so errors can name them. */
static char *parser_read_line(char *str, int num, void *stream) {
        SimConfigParser *p = stream;
        size_t n;
        int ch;

        if (!fgets(str, num, p->file))
                return NULL;
        p->line++;
        if (str[strspn(str, " \t")] == '[')
                p->header_line = p->line;
        n = strlen(str);
        if (n > 0 && str[n - 1] != '\n' && !feof(p->file)) {
                /* drop the rest so that the next read starts on the next line */
                while ((ch = fgetc(p->file)) != EOF && ch != '\n')
                        ;
                (void) parser_fail(p, "line longer than %d characters", num - 2);
        }
        return str;
}

static int parse_double_key(SimConfigParser *p, const char *key, const char *value, double min, double max,
                            double *ret) {
        if (sim_parse_double(value, min, max, ret) < 0)
                return parser_fail(p, "%s = '%s': expected a number from %g to %g", key, value, min, max);
        return 0;
}

static int parse_u64_key(SimConfigParser *p, const char *key, const char *value, uint64_t min, uint64_t max,
                         uint64_t *ret) {
        if (sim_parse_u64(value, min, max, ret) < 0)
                return parser_fail(p, "%s = '%s': expected an integer from %" PRIu64 " to %" PRIu64,
                                   key, value, min, max);
        return 0;
}

static int parse_unsigned_key(SimConfigParser *p, const char *key, const char *value, unsigned min,
                              unsigned max, unsigned *ret) {
        uint64_t v;
        int r;

        r = parse_u64_key(p, key, value, min, max, &v);
        if (r < 0)
                return r;
        *ret = (unsigned) v;
        return 0;
}

static int parse_bool_key(SimConfigParser *p, const char *key, const char *value, bool *ret) {
        if (sim_parse_bool(value, ret) < 0)
                return parser_fail(p, "%s = '%s': expected yes or no", key, value);
        return 0;
}

static int parse_cpus_key(SimConfigParser *p, const char *key, const char *value, uint32_t **ret,
                          size_t *ret_n) {
        _cleanup_free_ uint32_t *cpus = NULL;
        size_t n;

        if (cpulist_parse(value, PMUGATE_CPUS_MAX, &cpus, &n) < 0)
                return parser_fail(p, "%s = '%s': expected a CPU list such as 0-3,8", key, value);
        free(*ret);
        *ret = TAKE_PTR(cpus);
        *ret_n = n;
        return 0;
}

/* A list of counter indices ("0", "0,2", "1-3") below max, as a bit mask. */
static int parse_counter_mask(SimConfigParser *p, const char *key, const char *value, unsigned max,
                              uint64_t *ret) {
        _cleanup_free_ uint32_t *list = NULL;
        uint64_t mask = 0;
        size_t n;

        if (cpulist_parse(value, max, &list, &n) < 0)
                return parser_fail(p, "%s = '%s': expected counter numbers below %u such as 0,2", key, value,
                                   max);
        for (size_t i = 0; i < n; i++)
                mask |= UINT64_C(1) << list[i];
        *ret = mask;
        return 0;
}

static int parse_msr_list(SimConfigParser *p, const char *key, const char *value) {
        SimConfig *c = p->config;
        char buf[INI_MAX_LINE], *saveptr = NULL;

        (void) snprintf(buf, sizeof(buf), "%s", value);
        c->n_eio_msrs = 0;
        for (char *word = strtok_r(buf, ", \t", &saveptr); word; word = strtok_r(NULL, ", \t", &saveptr)) {
                uint64_t msr;

                if (sim_parse_u64(word, 0, MSR_ADDRESS_MAX, &msr) < 0)
                        return parser_fail(p, "%s: '%s' is not an MSR address such as 0x38f", key, word);
                if (c->n_eio_msrs >= SIM_EIO_MSRS_MAX)
                        return parser_fail(p, "%s: more than %u registers", key, SIM_EIO_MSRS_MAX);
                c->eio_msrs[c->n_eio_msrs++] = (uint32_t) msr;
        }
        if (c->n_eio_msrs == 0)
                return parser_fail(p, "%s: expected at least one MSR address", key);
        p->config->eio_line = p->line;
        return 0;
}

static int handle_machine(SimConfigParser *p, const char *key, const char *value) {
        SimConfig *c = p->config;
        SimModel model;

        if (strcmp(key, "model") == 0) {
                if (strlen(value) >= sizeof(c->model) || sim_model_init(value, true, &model) < 0)
                        return parser_fail(p, "model = '%s': expected skx, clx, icx, spr, emr, gnr, srf, zen4 or zen5",
                                           value);
                (void) snprintf(c->model, sizeof(c->model), "%s", value);
                return 0;
        }
        if (strcmp(key, "sockets") == 0)
                return parse_unsigned_key(p, key, value, 1, SIM_SOCKETS_MAX, &c->sockets);
        if (strcmp(key, "cores") == 0)
                return parse_unsigned_key(p, key, value, 1, SIM_CORES_PER_SOCKET_MAX, &c->cores_per_socket);
        if (strcmp(key, "smt") == 0)
                return parse_bool_key(p, key, value, &c->smt);
        if (strcmp(key, "cores_per_ccx") == 0)
                return parse_unsigned_key(p, key, value, 1, SIM_CORES_PER_SOCKET_MAX, &c->cores_per_ccx);
        return parser_fail(p, "unknown key '%s' in [machine] (known: model, sockets, cores, cores_per_ccx, "
                           "smt)", key);
}

static int handle_clock(SimConfigParser *p, const char *key, const char *value) {
        SimConfig *c = p->config;

        if (strcmp(key, "mode") == 0) {
                if (strcmp(value, "realtime") == 0)
                        c->clock_mode = SIM_CLOCK_REALTIME;
                else if (strcmp(value, "deterministic") == 0)
                        c->clock_mode = SIM_CLOCK_DETERMINISTIC;
                else
                        return parser_fail(p, "mode = '%s': expected realtime or deterministic", value);
                return 0;
        }
        if (strcmp(key, "seed") == 0)
                return parse_u64_key(p, key, value, 0, UINT64_MAX, &c->seed);
        if (strcmp(key, "cycles_per_access") == 0) {
                c->cycles_per_access_set = true;
                return parse_u64_key(p, key, value, 0, CYCLES_PER_ACCESS_MAX, &c->cycles_per_access);
        }
        if (strcmp(key, "jitter") == 0)
                return parse_double_key(p, key, value, 0.0, 1.0, &c->jitter);
        return parser_fail(p, "unknown key '%s' in [clock] (known: mode, seed, cycles_per_access, jitter)",
                           key);
}

static int handle_inject(SimConfigParser *p, const char *key, const char *value) {
        _cleanup_free_ uint32_t *units = NULL;
        SimConfig *c = p->config;
        size_t n;

        if (strcmp(key, "nmi_watchdog") == 0)
                return parse_bool_key(p, key, value, &c->nmi_watchdog);
        if (strcmp(key, "watchdog_thresh") == 0)
                return parse_unsigned_key(p, key, value, 1, WATCHDOG_THRESH_MAX, &c->watchdog_thresh);
        if (strcmp(key, "offline_cpus") == 0) {
                c->offline_line = p->line;
                return parse_cpus_key(p, key, value, &c->offline_cpus, &c->n_offline_cpus);
        }
        if (strcmp(key, "lockdown") == 0) {
                if (strcmp(value, "none") == 0)
                        c->lockdown = NULL;
                else if (strcmp(value, "integrity") == 0)
                        c->lockdown = "integrity";
                else if (strcmp(value, "confidentiality") == 0)
                        c->lockdown = "confidentiality";
                else
                        return parser_fail(p, "lockdown = '%s': expected none, integrity or confidentiality",
                                           value);
                return 0;
        }
        if (strcmp(key, "eio_msr") == 0)
                return parse_msr_list(p, key, value);
        if (strcmp(key, "eio_cpus") == 0)
                return parse_cpus_key(p, key, value, &c->eio_cpus, &c->n_eio_cpus);
        if (strcmp(key, "eio_writes_only") == 0)
                return parse_bool_key(p, key, value, &c->eio_writes_only);
        if (strcmp(key, "kernel_imc_units") == 0) {
                if (cpulist_parse(value, PMUGATE_UNITS_MAX, &units, &n) < 0)
                        return parser_fail(p, "%s = '%s': expected unit numbers such as 0,3", key, value);
                free(c->kernel_imc_units);
                c->kernel_imc_units = TAKE_PTR(units);
                c->n_kernel_imc_units = n;
                return 0;
        }
        if (strcmp(key, "kernel_l3_counters") == 0)
                return parse_counter_mask(p, key, value, SIM_AMD_L3_COUNTERS, &c->kernel_l3_counters);
        if (strcmp(key, "kernel_df_counters") == 0)
                return parse_counter_mask(p, key, value, SIM_AMD_DF_COUNTERS_MAX, &c->kernel_df_counters);
        return parser_fail(p, "unknown key '%s' in [inject] (known: nmi_watchdog, watchdog_thresh, "
                           "lockdown, offline_cpus, eio_msr, eio_cpus, eio_writes_only, kernel_imc_units, "
                           "kernel_l3_counters, "
                           "kernel_df_counters)", key);
}

static int handle_rapl(SimConfigParser *p, const char *key, const char *value) {
        static const struct {
                const char *key;
                size_t offset;
        } watts_keys[] = {
                { "package_watts", offsetof(SimRaplSettings, package_watts) },
                { "dram_watts", offsetof(SimRaplSettings, dram_watts) },
                { "pp0_watts", offsetof(SimRaplSettings, pp0_watts) },
                { "platform_watts", offsetof(SimRaplSettings, platform_watts) },
                { "package_tdp_watts", offsetof(SimRaplSettings, package_tdp_watts) },
                { "dram_tdp_watts", offsetof(SimRaplSettings, dram_tdp_watts) },
        };
        SimRaplSettings *s = &p->config->rapl;

        for (size_t i = 0; i < ELEMENTSOF(watts_keys); i++)
                if (strcmp(key, watts_keys[i].key) == 0)
                        return parse_double_key(p, key, value, 0.0, WATTS_MAX,
                                                (double *) ((char *) s + watts_keys[i].offset));
        if (strcmp(key, "energy_unit") == 0)
                return parse_unsigned_key(p, key, value, 0, ENERGY_UNIT_BITS_MAX, &s->energy_unit_bits);
        if (strcmp(key, "energy_start") == 0)
                return parse_u64_key(p, key, value, 0, UINT32_MAX, &s->energy_start);
        return parser_fail(p, "unknown key '%s' in [rapl] (known: package_watts, dram_watts, pp0_watts, "
                           "platform_watts, package_tdp_watts, dram_tdp_watts, energy_unit, "
                           "energy_start)", key);
}

static int handle_imc(SimConfigParser *p, const char *key, const char *value) {
        SimConfig *c = p->config;

        if (strcmp(key, "read_gbps") == 0)
                return parse_double_key(p, key, value, 0.0, GBPS_MAX, &c->imc_read_gbps);
        if (strcmp(key, "write_gbps") == 0)
                return parse_double_key(p, key, value, 0.0, GBPS_MAX, &c->imc_write_gbps);
        if (strcmp(key, "dclk_mhz") == 0)
                return parse_double_key(p, key, value, 0.0, DCLK_MHZ_MAX, &c->imc_dclk_mhz);
        if (strcmp(key, "counter_start") == 0)
                return parse_u64_key(p, key, value, 0, SIM_IMC_COUNTER_MASK, &c->imc_counter_start);
        if (strcmp(key, "kernel_pmu") == 0)
                return parse_bool_key(p, key, value, &c->imc_kernel_pmu);
        return parser_fail(p, "unknown key '%s' in [imc] (known: read_gbps, write_gbps, dclk_mhz, "
                           "counter_start, kernel_pmu)", key);
}

static int handle_profile_key(SimConfigParser *p, SimProfile *overrides, uint32_t *set_mask, const char *key,
                              const char *value, const char *own_keys) {
        char reason[SIM_REASON_MAX];
        int r;

        r = sim_profile_set(overrides, set_mask, key, value, reason, sizeof(reason));
        if (r == -ENOENT)
                return parser_fail(p, "unknown key '%s' in [%s] (known: %s, retiring, bad_speculation, "
                                   "frontend_bound, backend_bound, heavy_operations, branch_mispredicts, "
                                   "fetch_latency, memory_bound, ipc, utilization, user_fraction, "
                                   "event.0xEE.0xUU)", key, p->section, own_keys);
        if (r < 0)
                return parser_fail(p, "%s", reason);
        return 0;
}

static int handle_profile(SimConfigParser *p, const char *key, const char *value) {
        SimProfileDef *d = &p->config->profiles[p->config->n_profiles - 1];

        if (strcmp(key, "base") == 0) {
                if (!sim_profile_name_valid(value))
                        return parser_fail(p, "base = '%s': not a profile name", value);
                (void) snprintf(d->base, sizeof(d->base), "%s", value);
                return 0;
        }
        return handle_profile_key(p, &d->overrides, &d->set_mask, key, value, "base");
}

/* "phase = A,B,PERIOD_MS": two profile names and the length of each phase in milliseconds. */
static int parse_phase(SimConfigParser *p, SimCpuRule *rule, const char *value) {
        char text[2 * SIM_PROFILE_NAME_MAX + 16];
        char *first, *second, *period;
        uint64_t ms;

        if (strlen(value) >= sizeof(text))
                return parser_fail(p, "phase = '%s': expected PROFILE,PROFILE,PERIOD_MS", value);
        (void) snprintf(text, sizeof(text), "%s", value);
        first = text;
        second = strchr(first, ',');
        period = second ? strchr(second + 1, ',') : NULL;
        if (!second || !period)
                return parser_fail(p, "phase = '%s': expected PROFILE,PROFILE,PERIOD_MS", value);
        *second++ = '\0';
        *period++ = '\0';
        if (!sim_profile_name_valid(first) || !sim_profile_name_valid(second))
                return parser_fail(p, "phase = '%s': '%s' or '%s' is not a profile name", value, first, second);
        if (sim_parse_u64(period, SIM_PHASE_MS_MIN, SIM_PHASE_MS_MAX, &ms) < 0)
                return parser_fail(p, "phase = '%s': the period is %u-%u milliseconds", value,
                                   SIM_PHASE_MS_MIN, SIM_PHASE_MS_MAX);
        /* valid names fit; the precision only tells the compiler so */
        (void) snprintf(rule->phase_profile[0], sizeof(rule->phase_profile[0]), "%.*s",
                        (int) SIM_PROFILE_NAME_MAX - 1, first);
        (void) snprintf(rule->phase_profile[1], sizeof(rule->phase_profile[1]), "%.*s",
                        (int) SIM_PROFILE_NAME_MAX - 1, second);
        rule->phase_ms = (uint32_t) ms;
        return 0;
}

static int handle_cpus(SimConfigParser *p, const char *key, const char *value) {
        SimCpuRule *rule = &p->config->rules[p->config->n_rules - 1];

        if (strcmp(key, "profile") == 0) {
                if (!sim_profile_name_valid(value))
                        return parser_fail(p, "profile = '%s': not a profile name", value);
                (void) snprintf(rule->profile, sizeof(rule->profile), "%s", value);
                return 0;
        }
        if (strcmp(key, "phase") == 0)
                return parse_phase(p, rule, value);
        return handle_profile_key(p, &rule->overrides, &rule->set_mask, key, value, "profile, phase");
}

static int begin_profile(SimConfigParser *p, const char *name) {
        SimConfig *c = p->config;
        SimProfileDef *defs;

        if (!sim_profile_name_valid(name))
                return parser_fail_section(p, "[profile %s]: a profile name is 1-%u characters of a-z, 0-9, "
                                           "'-' and '_'",
                                   name, SIM_PROFILE_NAME_MAX - 1);
        for (size_t i = 0; i < c->n_profiles; i++)
                if (strcmp(c->profiles[i].name, name) == 0)
                        return parser_fail_section(p, "[profile %s] is defined twice (first at line %u)",
                                                   name,
                                           c->profiles[i].line);
        if (c->n_profiles >= SIM_CONFIG_SECTIONS_MAX)
                return parser_fail_section(p, "more than %u profile sections", SIM_CONFIG_SECTIONS_MAX);
        defs = realloc(c->profiles, (c->n_profiles + 1) * sizeof(SimProfileDef));
        if (!defs)
                return parser_fail(p, "out of memory");
        c->profiles = defs;
        c->profiles[c->n_profiles++] = (SimProfileDef) { .line = p->header_line };
        (void) snprintf(c->profiles[c->n_profiles - 1].name, SIM_PROFILE_NAME_MAX, "%s", name);
        return 0;
}

static int begin_cpus(SimConfigParser *p, const char *list) {
        _cleanup_free_ uint32_t *cpus = NULL;
        SimConfig *c = p->config;
        SimCpuRule *rules;
        size_t n;

        if (cpulist_parse(list, PMUGATE_CPUS_MAX, &cpus, &n) < 0 || n == 0)
                return parser_fail_section(p, "[cpus %s]: expected a CPU list such as 0-3,8", list);
        if (c->n_rules >= SIM_CONFIG_SECTIONS_MAX)
                return parser_fail_section(p, "more than %u cpus sections", SIM_CONFIG_SECTIONS_MAX);
        rules = realloc(c->rules, (c->n_rules + 1) * sizeof(SimCpuRule));
        if (!rules)
                return parser_fail(p, "out of memory");
        c->rules = rules;
        c->rules[c->n_rules] = (SimCpuRule) { .line = p->header_line, .cpus = TAKE_PTR(cpus), .n_cpus = n };
        (void) snprintf(c->rules[c->n_rules].cpus_text, sizeof(c->rules[c->n_rules].cpus_text), "%s", list);
        c->n_rules++;
        return 0;
}

static int begin_lbr(SimConfigParser *p) {
        SimConfig *c = p->config;

        if (c->lbr)
                return parser_fail_section(p, "[lbr] is given twice (first at line %u)", c->lbr->line);
        c->lbr = calloc(1, sizeof(SimLbrConfig));
        if (!c->lbr)
                return parser_fail(p, "out of memory");
        c->lbr->line = p->header_line;
        return 0;
}

static int handle_lbr(SimConfigParser *p, const char *key, const char *value) {
        char reason[SIM_REASON_MAX];
        int r;

        r = sim_lbr_set(p->config->lbr, p->line, key, value, reason, sizeof(reason));
        if (r == -ENOENT)
                return parser_fail(p, "unknown key '%s' in [lbr] (known: map, binary, branch, depth)", key);
        if (r == -ENOMEM)
                return parser_fail(p, "out of memory");
        if (r < 0)
                return parser_fail(p, "%s", reason);
        return 0;
}

/* inih reports keys only, so a section starts where the section name changes. */
static int begin_section(SimConfigParser *p, const char *section) {
        static const struct {
                const char *name;
                SimSection kind;
        } plain[] = {
                { "machine", SIM_SECTION_MACHINE },
                { "clock", SIM_SECTION_CLOCK },
                { "inject", SIM_SECTION_INJECT },
                { "rapl", SIM_SECTION_RAPL },
                { "imc", SIM_SECTION_IMC },
        };
        const char *arg;

        (void) snprintf(p->section, sizeof(p->section), "%s", section);
        p->in_section = true;
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if (strcmp(section, plain[i].name) == 0) {
                        p->kind = plain[i].kind;
                        return 0;
                }
        if (strncmp(section, "profile ", strlen("profile ")) == 0) {
                p->kind = SIM_SECTION_PROFILE;
                return begin_profile(p, section + strlen("profile "));
        }
        arg = strncmp(section, "cpus ", strlen("cpus ")) == 0 ? section + strlen("cpus ") :
              strncmp(section, "cpu ", strlen("cpu ")) == 0 ? section + strlen("cpu ") : NULL;
        if (arg) {
                p->kind = SIM_SECTION_CPUS;
                return begin_cpus(p, arg);
        }
        if (strcmp(section, "lbr") == 0) {
                p->kind = SIM_SECTION_LBR;
                return begin_lbr(p);
        }
        if (section[0] == '\0')
                return parser_fail(p, "key outside a section; start with a section such as [machine]");
        return parser_fail_section(p, "unknown section [%s] (known: machine, clock, inject, rapl, imc, "
                                   "profile NAME, "
                           "cpus LIST, lbr)", section);
}

static int parser_handle(void *user, const char *section, const char *key, const char *value) {
        SimConfigParser *p = user;
        int r = 0;

        /* report the first error only; later lines may just be its consequences */
        if (p->error_line > 0)
                return 1;
        if (!p->in_section || strcmp(section, p->section) != 0)
                r = begin_section(p, section);
        if (r < 0)
                return 0;

        switch (p->kind) {
        case SIM_SECTION_MACHINE:
                r = handle_machine(p, key, value);
                break;
        case SIM_SECTION_CLOCK:
                r = handle_clock(p, key, value);
                break;
        case SIM_SECTION_INJECT:
                r = handle_inject(p, key, value);
                break;
        case SIM_SECTION_RAPL:
                r = handle_rapl(p, key, value);
                break;
        case SIM_SECTION_IMC:
                r = handle_imc(p, key, value);
                break;
        case SIM_SECTION_PROFILE:
                r = handle_profile(p, key, value);
                break;
        case SIM_SECTION_CPUS:
                r = handle_cpus(p, key, value);
                break;
        case SIM_SECTION_LBR:
                r = handle_lbr(p, key, value);
                break;
        }
        return r < 0 ? 0 : 1;
}

int sim_config_load_file(FILE *f, const char *path, SimConfig **ret) {
        _cleanup_(sim_config_freep) SimConfig *c = NULL;
        SimConfigParser p = {};
        int r;

        r = sim_config_new_default(&c);
        if (r < 0)
                return r;
        c->path = strdup(path);
        if (!c->path)
                return -ENOMEM;

        p = (SimConfigParser) { .config = c, .file = f };

        r = ini_parse_stream(parser_read_line, &p, parser_handle, &p);
        if (r == -2)
                return log_error_errno(ENOMEM, "%s: out of memory while parsing", path);
        if (r > 0 && (p.error_line == 0 || (unsigned) r < p.error_line))
                return sim_log_invalid("%s:%d: expected '[section]' or 'key = value'", path, r);
        if (p.error_line > 0)
                return sim_log_invalid("%s:%u: %s", path, p.error_line, p.error);
        if (ferror(f))
                return log_error_errno(EIO, "Cannot read simulator configuration %s", path);
        if (c->lbr) {
                char reason[SIM_REASON_MAX];
                unsigned line;

                if (sim_lbr_validate(c->lbr, &line, reason, sizeof(reason)) < 0)
                        return sim_log_invalid("%s:%u: %s", path, line, reason);
        }

        if (!c->cycles_per_access_set && c->clock_mode == SIM_CLOCK_DETERMINISTIC)
                c->cycles_per_access = DEFAULT_CYCLES_PER_ACCESS_DETERMINISTIC;
        *ret = TAKE_PTR(c);
        return 0;
}

int sim_config_load(const char *path, SimConfig **ret) {
        _cleanup_fclose_ FILE *f = NULL;

        f = fopen(path, "re");
        if (!f)
                return log_error_errno(errno, "Cannot open simulator configuration %s", path);
        return sim_config_load_file(f, path, ret);
}

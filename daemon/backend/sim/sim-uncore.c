/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RAPL energy counters and Skylake-SP IMC PMON (pmu-registers.md §2.10, §6.1)
 */
#include <errno.h>
#include <math.h>

#include "backend/sim/sim-regs.h"
#include "backend/sim/sim-uncore.h"

/* RAPL_POWER_UNIT: power in 1/8 W (bits 3:0 = 3), time in 2^-10 s (bits 19:16 = 0xA), the
 * layout behind the typical SKX value 0x000A0E03. */
#define RAPL_POWER_UNIT_BITS            3U
#define RAPL_TIME_UNIT_BITS             10U
#define RAPL_TIME_UNIT_SHIFT            16

/* IMC config-space registers, all dwords (§6.1) */
#define IMC_PCI_ID                      0x00U   /* device id << 16 | vendor id */
#define IMC_CTR0                        0xA0U   /* 48 bits as two dwords, stride 8 */
#define IMC_CTR_STRIDE                  8U
#define IMC_FIXED_CTR                   0xD0U
#define IMC_CTL0                        0xD8U   /* stride 4 */
#define IMC_CTL_STRIDE                  4U
#define IMC_FIXED_CTL                   0xF0U
#define IMC_BOX_CTL                     0xF4U
#define IMC_BOX_STATUS                  0xF8U
#define IMC_DWORD                       4U
#define IMC_QWORD                       8U

#define IMC_BOX_CTL_RST_CTRL            SIM_BIT(0)
#define IMC_BOX_CTL_RST_CTRS            SIM_BIT(1)
#define IMC_BOX_CTL_FRZ                 SIM_BIT(8)
#define IMC_CTL_RST                     SIM_BIT(17)
#define IMC_CTL_EN                      SIM_BIT(22)
/* edge (18), invert (23) and threshold (31:24) shape an event; none of the simulated
 * events uses them */
#define IMC_CTL_SHAPING                 (SIM_BIT(18) | SIM_BIT(23) | (UINT64_C(0xFF) << 24))
#define IMC_BOX_STATUS_FIXED            SIM_BIT(SIM_IMC_COUNTERS)
#define IMC_COUNTER_MASK                ((UINT64_C(1) << 48) - 1)      /* 48-bit counters */
#define IMC_DWORD_BITS                  32
#define PCI_DEVICE_ID_SHIFT             16      /* dword 0: device id in 31:16, vendor in 15:0 */

/* Events (§6.1): clockticks 0x00/0x00; CAS_COUNT 0x04 whose umask bits are RD_REG 0x01,
 * RD_UNDERFILL 0x02, WR_WMM 0x04, WR_RMM 0x08 (RD = 0x03, WR = 0x0C). The simulated
 * channel issues only regular reads and WMM writes. */
#define IMC_EVENT_CLOCKTICKS            0x00U
#define IMC_EVENT_CAS_COUNT             0x04U
#define IMC_CAS_RD_REG                  0x01U
#define IMC_CAS_WR_WMM                  0x04U

/* ---- RAPL */

static double joules_per_cycle_to_counts(double watts, double cycles_per_second, unsigned unit_bits) {
        return watts / cycles_per_second * ldexp(1.0, (int) unit_bits);
}

static uint64_t power_info(double watts) {
        return (uint64_t) llround(watts * (1U << RAPL_POWER_UNIT_BITS)) & RAPL_POWER_INFO_SPEC_MASK;
}

void sim_rapl_init(SimRapl *r, const SimModel *m, const SimRaplSettings *s, double cycles_per_second) {
        unsigned esu = s->energy_unit_bits;
        unsigned dram_esu = m->rapl_dram_fixed_unit ? RAPL_DRAM_FIXED_ESU : esu;

        *r = (SimRapl) {
                .model = m,
                .power_unit = ((uint64_t) RAPL_TIME_UNIT_BITS << RAPL_TIME_UNIT_SHIFT) |
                              ((uint64_t) esu << RAPL_ESU_SHIFT) | RAPL_POWER_UNIT_BITS,
                .package_power_info = power_info(s->package_tdp_watts),
                .dram_power_info = power_info(s->dram_tdp_watts),
                .package.rate = joules_per_cycle_to_counts(s->package_watts, cycles_per_second, esu),
                .dram.rate = joules_per_cycle_to_counts(s->dram_watts, cycles_per_second, dram_esu),
                .pp0.rate = joules_per_cycle_to_counts(s->pp0_watts, cycles_per_second, esu),
                .platform.rate = joules_per_cycle_to_counts(s->platform_watts, cycles_per_second,
                                                            RAPL_PLATFORM_ESU),
                .package.value = s->energy_start,
                .dram.value = s->energy_start,
                .pp0.value = s->energy_start,
                .platform.value = s->energy_start,
        };
}

void sim_rapl_advance(SimRapl *r, uint64_t cycles) {
        (void) sim_counter_add(&r->package, cycles, RAPL_ENERGY_COUNTER_MASK, NULL);
        (void) sim_counter_add(&r->dram, cycles, RAPL_ENERGY_COUNTER_MASK, NULL);
        (void) sim_counter_add(&r->pp0, cycles, RAPL_ENERGY_COUNTER_MASK, NULL);
        (void) sim_counter_add(&r->platform, cycles, RAPL_ENERGY_COUNTER_MASK, NULL);
}

bool sim_rapl_owns(uint32_t reg) {
        switch (reg) {
        case MSR_RAPL_POWER_UNIT:
        case MSR_PKG_ENERGY_STATUS:
        case MSR_PKG_PERF_STATUS:
        case MSR_PKG_POWER_INFO:
        case MSR_DRAM_ENERGY_STATUS:
        case MSR_DRAM_PERF_STATUS:
        case MSR_DRAM_POWER_INFO:
        case MSR_PP0_ENERGY_STATUS:
        case MSR_PLATFORM_ENERGY_STATUS:
                return true;
        default:
                return false;
        }
}

int sim_rapl_read(const SimRapl *r, uint32_t reg, uint64_t *ret_value) {
        switch (reg) {
        case MSR_RAPL_POWER_UNIT:
                *ret_value = r->power_unit;
                return 0;
        case MSR_PKG_ENERGY_STATUS:
                *ret_value = r->package.value;
                return 0;
        case MSR_PKG_POWER_INFO:
                *ret_value = r->package_power_info;
                return 0;
        case MSR_DRAM_ENERGY_STATUS:
                *ret_value = r->dram.value;
                return 0;
        case MSR_DRAM_POWER_INFO:
                *ret_value = r->dram_power_info;
                return 0;
        case MSR_PKG_PERF_STATUS:
        case MSR_DRAM_PERF_STATUS:
                /* the simulated package is never throttled */
                *ret_value = 0;
                return 0;
        case MSR_PP0_ENERGY_STATUS:
                if (!r->model->rapl_pp0)
                        return -EIO;
                *ret_value = r->pp0.value;
                return 0;
        case MSR_PLATFORM_ENERGY_STATUS:
                if (!r->model->rapl_platform)
                        return -EIO;
                *ret_value = r->platform.value;
                return 0;
        default:
                return -EIO;
        }
}

int sim_rapl_write(SimRapl *r, uint32_t reg, uint64_t value) {
        /* units, status and info registers are read-only: #GP on write */
        return -EIO;
}

/* ---- IMC */

static double imc_event_rate(const SimImc *imc, uint32_t ctl) {
        uint8_t event = ctl & EVTSEL_EVENT_MASK;
        uint8_t umask = (ctl >> EVTSEL_UMASK_SHIFT) & EVTSEL_UMASK_MASK;
        double rate = 0.0;

        if (!(ctl & IMC_CTL_EN) || (ctl & IMC_CTL_SHAPING))
                return 0.0;
        if (event == IMC_EVENT_CLOCKTICKS && umask == 0)
                return imc->dclk_per_cycle;
        if (event != IMC_EVENT_CAS_COUNT)
                return 0.0;
        if (umask & IMC_CAS_RD_REG)
                rate += imc->cas_read_per_cycle;
        if (umask & IMC_CAS_WR_WMM)
                rate += imc->cas_write_per_cycle;
        return rate;
}

static void imc_update_rates(SimImc *imc) {
        for (unsigned i = 0; i < SIM_IMC_COUNTERS; i++)
                imc->ctr[i].rate = imc_event_rate(imc, imc->ctl[i]);
        imc->fixed_ctr.rate = (imc->fixed_ctl & IMC_CTL_EN) ? imc->dclk_per_cycle : 0.0;
}

void sim_imc_init(SimImc *imc, uint16_t device, double cas_read_per_cycle, double cas_write_per_cycle,
                  double dclk_per_cycle) {
        *imc = (SimImc) {
                .device = device,
                .cas_read_per_cycle = cas_read_per_cycle,
                .cas_write_per_cycle = cas_write_per_cycle,
                .dclk_per_cycle = dclk_per_cycle,
        };
}

void sim_imc_advance(SimImc *imc, uint64_t cycles) {
        if (imc->box_ctl & IMC_BOX_CTL_FRZ)
                return;
        for (unsigned i = 0; i < SIM_IMC_COUNTERS; i++)
                if (imc->ctr[i].rate > 0.0 && sim_counter_add(&imc->ctr[i], cycles, IMC_COUNTER_MASK, NULL))
                        imc->box_status |= (uint32_t) SIM_BIT(i);
        if (imc->fixed_ctr.rate > 0.0 && sim_counter_add(&imc->fixed_ctr, cycles, IMC_COUNTER_MASK, NULL))
                imc->box_status |= (uint32_t) IMC_BOX_STATUS_FIXED;
}

/* Index of the counter a dword offset falls in (SIM_IMC_COUNTERS for the fixed counter), with
 * whether it is the high half; -1 for other offsets. */
static int imc_counter_index(uint32_t offset, bool *ret_high) {
        for (unsigned i = 0; i < SIM_IMC_COUNTERS; i++) {
                uint32_t base = IMC_CTR0 + IMC_CTR_STRIDE * i;

                if (offset == base || offset == base + IMC_DWORD) {
                        *ret_high = offset != base;
                        return (int) i;
                }
        }
        if (offset == IMC_FIXED_CTR || offset == IMC_FIXED_CTR + IMC_DWORD) {
                *ret_high = offset != IMC_FIXED_CTR;
                return SIM_IMC_COUNTERS;
        }
        return -1;
}

static const SimCounter *imc_counter(const SimImc *imc, int index) {
        return index == SIM_IMC_COUNTERS ? &imc->fixed_ctr : &imc->ctr[index];
}

static int imc_ctl_index(uint32_t offset) {
        if (offset < IMC_CTL0 || offset >= IMC_CTL0 + IMC_CTL_STRIDE * SIM_IMC_COUNTERS)
                return -1;
        return (int) ((offset - IMC_CTL0) / IMC_CTL_STRIDE);
}

static uint32_t imc_read_dword(const SimImc *imc, uint32_t offset) {
        bool high = false;
        int i;

        i = imc_counter_index(offset, &high);
        if (i >= 0) {
                uint64_t v = imc_counter(imc, i)->value;

                return (uint32_t) (high ? v >> IMC_DWORD_BITS : v);
        }
        i = imc_ctl_index(offset);
        if (i >= 0)
                return imc->ctl[i];

        switch (offset) {
        case IMC_PCI_ID:
                return (uint32_t) imc->device << PCI_DEVICE_ID_SHIFT | SIM_PCI_VENDOR_INTEL;
        case IMC_FIXED_CTL:
                return imc->fixed_ctl;
        case IMC_BOX_CTL:
                return imc->box_ctl;
        case IMC_BOX_STATUS:
                return imc->box_status;
        default:
                /* the rest of the function's config space is not modelled and reads 0 */
                return 0;
        }
}

static void imc_write_dword(SimImc *imc, uint32_t offset, uint32_t value) {
        bool high = false;
        int i;

        i = imc_counter_index(offset, &high);
        if (i >= 0) {
                SimCounter *c = i == SIM_IMC_COUNTERS ? &imc->fixed_ctr : &imc->ctr[i];
                uint64_t v = high ? (c->value & UINT32_MAX) | (uint64_t) value << IMC_DWORD_BITS
                                  : (c->value & ~(uint64_t) UINT32_MAX) | value;

                sim_counter_set(c, v, IMC_COUNTER_MASK);
                return;
        }
        i = imc_ctl_index(offset);
        if (i >= 0) {
                /* RST clears the counter and does not stick */
                if (value & IMC_CTL_RST)
                        sim_counter_set(&imc->ctr[i], 0, IMC_COUNTER_MASK);
                imc->ctl[i] = value & (uint32_t) ~IMC_CTL_RST;
                imc_update_rates(imc);
                return;
        }

        switch (offset) {
        case IMC_FIXED_CTL:
                imc->fixed_ctl = value;
                imc_update_rates(imc);
                return;
        case IMC_BOX_CTL:
                if (value & IMC_BOX_CTL_RST_CTRL) {
                        for (unsigned k = 0; k < SIM_IMC_COUNTERS; k++)
                                imc->ctl[k] = 0;
                        imc->fixed_ctl = 0;
                        imc_update_rates(imc);
                }
                if (value & IMC_BOX_CTL_RST_CTRS) {
                        for (unsigned k = 0; k < SIM_IMC_COUNTERS; k++)
                                sim_counter_set(&imc->ctr[k], 0, IMC_COUNTER_MASK);
                        sim_counter_set(&imc->fixed_ctr, 0, IMC_COUNTER_MASK);
                }
                imc->box_ctl = value & (uint32_t) IMC_BOX_CTL_FRZ;
                return;
        case IMC_BOX_STATUS:
                /* write 1 to clear an overflow flag */
                imc->box_status &= ~value;
                return;
        default:
                /* the identity header and unmodelled registers ignore writes */
                return;
        }
}

static int imc_check_access(uint32_t offset, unsigned width) {
        if (width != IMC_DWORD && width != IMC_QWORD)
                return -EINVAL;
        if (offset % width != 0 || offset >= SIM_IMC_CONFIG_SIZE || SIM_IMC_CONFIG_SIZE - offset < width)
                return -EINVAL;
        return 0;
}

int sim_imc_read(const SimImc *imc, uint32_t offset, unsigned width, uint64_t *ret_value) {
        uint64_t v;
        int r;

        r = imc_check_access(offset, width);
        if (r < 0)
                return r;
        v = imc_read_dword(imc, offset);
        if (width == IMC_QWORD)
                v |= (uint64_t) imc_read_dword(imc, offset + IMC_DWORD) << IMC_DWORD_BITS;
        *ret_value = v;
        return 0;
}

int sim_imc_write(SimImc *imc, uint32_t offset, unsigned width, uint64_t value) {
        int r;

        r = imc_check_access(offset, width);
        if (r < 0)
                return r;
        if (width == IMC_DWORD && value > UINT32_MAX)
                return -EINVAL;
        imc_write_dword(imc, offset, (uint32_t) value);
        if (width == IMC_QWORD)
                imc_write_dword(imc, offset + IMC_DWORD, (uint32_t) (value >> IMC_DWORD_BITS));
        return 0;
}

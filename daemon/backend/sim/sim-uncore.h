/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Package-scope simulation: RAPL energy counters and the Skylake-SP memory controller PMON
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "backend/sim/sim-counter.h"
#include "backend/sim/sim-model.h"

/* Skylake-SP IMC PMON (pmu-registers.md §6.1): two controllers of three channels per socket,
 * each channel its own PCI function with 4 GP counters and a DCLK fixed counter. */
#define SIM_IMC_CHANNELS_PER_SOCKET 6U
#define SIM_IMC_COUNTERS 4U
#define SIM_IMC_CONFIG_SIZE 4096U       /* extended config space through MMCONFIG */
#define SIM_PCI_VENDOR_INTEL 0x8086U
#define SIM_IMC_COUNTER_MASK ((UINT64_C(1) << 48) - 1)      /* 48-bit memory controller counters */
/* What the kernel's uncore_imc driver writes to a channel's counter control i (at 0xD8 + 4i) for
 * the events pmugated opens: EN (bit 22) with CAS_COUNT.RD (event 0x04, umask 0x03) or .WR (0x0C). */
#define SIM_IMC_CTL0 0xD8U
#define SIM_IMC_CTL_STRIDE 4U
#define SIM_IMC_KERNEL_CAS_READ 0x400304U
#define SIM_IMC_KERNEL_CAS_WRITE 0x400C04U

typedef struct SimRaplSettings {
        double package_watts;
        double dram_watts;
        double pp0_watts;
        double platform_watts;
        double package_tdp_watts;
        double dram_tdp_watts;
        unsigned energy_unit_bits;      /* ESU: one count is 2^-ESU J */
        uint64_t energy_start;          /* where the energy counters start (to test wraps) */
} SimRaplSettings;

typedef struct SimRapl {
        const SimModel *model;
        uint64_t power_unit;
        uint64_t package_power_info;
        uint64_t dram_power_info;
        SimCounter package;
        SimCounter dram;
        SimCounter pp0;
        SimCounter platform;
} SimRapl;

void sim_rapl_init(SimRapl *r, const SimModel *m, const SimRaplSettings *s, double cycles_per_second);
void sim_rapl_advance(SimRapl *r, uint64_t cycles);
/* True for every MSR the RAPL model answers for, whether or not this model has it. */
bool sim_rapl_owns(uint32_t reg);
/* -EIO for a RAPL register this model lacks; all RAPL registers are read-only. */
int sim_rapl_read(const SimRapl *r, uint32_t reg, uint64_t *ret_value);
int sim_rapl_write(SimRapl *r, uint32_t reg, uint64_t value);

typedef struct SimImc {
        uint16_t device;
        double cas_read_per_cycle;      /* per wall-clock cycle, this channel */
        double cas_write_per_cycle;
        double dclk_per_cycle;
        uint32_t box_ctl;               /* only FRZ persists; the reset bits act once */
        uint32_t box_status;
        uint32_t ctl[SIM_IMC_COUNTERS];
        SimCounter ctr[SIM_IMC_COUNTERS];
        uint32_t fixed_ctl;
        SimCounter fixed_ctr;
} SimImc;

void sim_imc_init(SimImc *imc, uint16_t device, double cas_read_per_cycle, double cas_write_per_cycle,
                  double dclk_per_cycle);
void sim_imc_advance(SimImc *imc, uint64_t cycles);
/* width is 4 or 8 (two dwords, low first) and offset must be aligned to it: else -EINVAL. */
int sim_imc_read(const SimImc *imc, uint32_t offset, unsigned width, uint64_t *ret_value);
int sim_imc_write(SimImc *imc, uint32_t offset, unsigned width, uint64_t value);

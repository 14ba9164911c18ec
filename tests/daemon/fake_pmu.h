/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An in-memory machine for unit tests: a hand-built topology, PCI units with the packages a
 * test gives them, a backend that keeps every register in memory, and a test allowlist with
 * thread, core and package registers and the Skylake-SP IMC units
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/machine.h"
#include "pmu/allowlist.h"
#include "pmu/leases.h"
#include "pmu/pmu.h"

/* Registers of the test allowlist beyond the core PMU (addresses the never-list leaves free). */
#define FAKE_CORE_CTL 0x6F0U            /* core scope, writable */
#define FAKE_PKG_CTL 0x6F8U             /* package scope, writable */
#define FAKE_PKG_ENERGY 0x611U          /* package scope, read-only */
#define FAKE_CORE_ENERGY 0xC001029AU    /* listed as thread scope; the energy list says core */
#define FAKE_IMC_DEVICE 0x2042U
#define FAKE_IMC_BOX_CTL 0xF4U
#define FAKE_IMC_CTL0 0xD8U

typedef struct FakePmu {
        unsigned sockets, cores, threads;
        Machine *machine;
        Backend *backend;
        Allowlist *allowlist;
        Pmu *pmu;
        Leases *leases;
} FakePmu;

/* sockets x cores x threads CPUs numbered as Linux does (first threads of every core, socket
 * by socket, then the siblings); the CPUs in offline[] are offline. One IMC unit per entry of
 * unit_packages, with that package (-1: unknown). */
FakePmu *fake_pmu_new(unsigned sockets, unsigned cores, unsigned threads, const uint32_t *offline,
                      size_t n_offline, const int32_t *unit_packages, size_t n_units);
void fake_pmu_free(FakePmu *f);

uint32_t fake_cpu(const FakePmu *f, unsigned socket, unsigned core, unsigned thread);

uint64_t fake_msr(FakePmu *f, uint32_t cpu, uint32_t reg);
void fake_set_msr(FakePmu *f, uint32_t cpu, uint32_t reg, uint64_t value);
uint64_t fake_pci(FakePmu *f, uint32_t unit, uint32_t offset);
void fake_set_pci(FakePmu *f, uint32_t unit, uint32_t offset, uint64_t value);
/* How many writes the backend took, to tell a register left alone from one rewritten. */
size_t fake_writes(const FakePmu *f);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * LIKWID's access daemon record: the one message of likwid-accessD's protocol
 *
 * LIKWID 5.x (src/includes/access_client_types.h) writes one 32-byte native-endian record per
 * request over a SOCK_STREAM socket and reads the same record back, overwritten with the
 * answer. The enums are C enums there; their values are fixed here.
 */
#pragma once

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

typedef enum LikwidAccessType {
        LIKWID_READ = 0,
        LIKWID_WRITE = 1,
        LIKWID_CHECK = 2,
        LIKWID_EXIT = 3,
} LikwidAccessType;

typedef enum LikwidError {
        LIKWID_ERR_NOERROR = 0,
        LIKWID_ERR_UNKNOWN = 1,         /* "unknown command" */
        LIKWID_ERR_RESTREG = 2,         /* "access to this register is not allowed" */
        LIKWID_ERR_OPENFAIL = 3,        /* "failed to open device file" */
        LIKWID_ERR_RWFAIL = 4,          /* "failed to read/write register" */
        LIKWID_ERR_DAEMONBUSY = 5,      /* "daemon already has a same/higher priority client" */
        LIKWID_ERR_NODEV = 6,           /* "no such pci device" */
        LIKWID_ERR_LOCKED = 7,          /* "access to registers is locked" */
} LikwidError;

/* LIKWID's PciDeviceIndex values this program knows (src/includes/pci_types.h, 5.2); other
 * releases' numbers are translated to these (likwid-map.h, LikwidVersion). */
enum {
        LIKWID_DEV_MSR = 0,
        LIKWID_DEV_IMC_0_CH_0 = 5,      /* PCI_IMC_DEVICE_0_CH_0 .. _CH_3 = 5-8 */
        LIKWID_DEV_IMC_1_CH_0 = 9,      /* PCI_IMC_DEVICE_1_CH_0 .. _CH_3 = 9-12 */
        LIKWID_DEV_MMIO_IMC_FIRST = 43, /* MMIO_IMC_DEVICE_0_CH_0 .. 3_CH_1 = 43-50 (Ice Lake-SP) */
        LIKWID_DEV_MMIO_IMC_LAST = 50,
        LIKWID_DEV_MMIO_FREERUN_FIRST = 51, /* MMIO_IMC_DEVICE_0_FREERUN .. 3 = 51-54 */
        LIKWID_DEV_MMIO_FREERUN_LAST = 54,
};

typedef struct LikwidRecord {
        uint32_t cpu;           /* hardware thread for MSRs, socket for uncore devices */
        uint32_t reg;           /* MSR address or config-space offset */
        uint64_t data;          /* value written, or value read */
        uint32_t device;        /* LIKWID_DEV_MSR or an uncore device index */
        uint32_t type;          /* LikwidAccessType */
        uint32_t errorcode;     /* LikwidError of the answer */
        uint32_t padding;
} LikwidRecord;

#define LIKWID_RECORD_SIZE 32U
static_assert(sizeof(LikwidRecord) == LIKWID_RECORD_SIZE, "LIKWID's record is 32 bytes");
static_assert(offsetof(LikwidRecord, data) == 8, "data at offset 8");
static_assert(offsetof(LikwidRecord, errorcode) == 24, "errorcode at offset 24");

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a LIKWID record means in pmugate's terms: units, registers, leases and answers
 *
 * Pure functions of the daemon's hello information, so the forwarder's decisions can be
 * tested without a daemon.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "likwid/likwid-record.h"
#include "pmugate/pmugate.h"

/* LIKWID's releases whose access daemon device numbers the forwarder knows. LIKWID numbers its
 * devices by their place in the PciDeviceIndex enum (src/includes/pci_types.h), which grew
 * between releases: the memory controller channel 0 is 5 in 5.2, 21 in 5.3 and 49 in 5.4. The
 * forwarder works in 5.2's numbers (likwid-record.h) and translates the others'. */
typedef enum LikwidVersion {
        LIKWID_VERSION_UNKNOWN = 0,
        LIKWID_VERSION_5_2,
        LIKWID_VERSION_5_3,
        LIKWID_VERSION_5_4,
        _LIKWID_VERSION_MAX,
} LikwidVersion;

/* The device index for devices the forwarder serves on no model (every other entry of a
 * version's table): answered "no such device". */
#define LIKWID_DEV_UNSERVED UINT32_MAX

/* A release "5.2", "5.2.2", "5.4.1" ...: its LikwidVersion, or LIKWID_VERSION_UNKNOWN. */
LikwidVersion likwid_version_parse(const char *s);
const char *likwid_version_name(LikwidVersion v);

/* The version in the name of the liblikwid a process mapped ("liblikwid.so.5.4", as LIKWID's
 * "make install" names it), from the text of its /proc/PID/maps. LIKWID_VERSION_UNKNOWN when
 * none is mapped or its name carries no version; ret_found (size bytes) gets the major.minor
 * found, or "" when none. */
LikwidVersion likwid_version_from_maps(const char *maps, char *ret_found, size_t size);

/* LIKWID's device index of version v in 5.2's numbers: 0 with it (LIKWID_DEV_UNSERVED for a
 * device the forwarder serves nowhere), -ERANGE past that version's device list, -EINVAL for
 * an unknown version. */
int likwid_device_from_version(LikwidVersion v, uint32_t device, uint32_t *ret_device);

/* The CPU entry of cpu, or NULL when the machine has none (or it is offline). */
const pmugate_cpu *likwid_map_cpu(const pmugate_info *info, uint32_t cpu);

/* The pmugate unit that serves LIKWID's uncore device on socket: 0 with its index, or -ENODEV
 * for devices pmugate does not serve on this machine. */
int likwid_map_unit(const pmugate_info *info, uint32_t device, uint32_t socket, uint32_t *ret_unit);

/* LIKWID's Ice Lake-SP free-running DDR counters: one device per memory controller (51-54),
 * offset 0 the bytes read and 8 the bytes written, in 64-byte lines. */
#define LIKWID_FREERUN_READ 0x0U
#define LIKWID_FREERUN_WRITE 0x8U
#define LIKWID_FREERUN_LINE 64.0

bool likwid_device_is_freerun(uint32_t device);

/* LIKWID's Ice Lake-SP programmable memory channel counters (MMIO, two channels of each of four
 * controllers: devices 43-50), which its MEM, MEM_DP and MEM_SP groups program. pmugated maps
 * no MMIO and serves no per-channel counter there, so the forwarder refuses them with the
 * reason rather than let LIKWID print 0 MB/s. */
bool likwid_device_is_mmio_channel(uint32_t device);

/* True when device is one of those channels on a controller the machine has (its free-running
 * counters are served): LIKWID is told it is present, and then refused with the reason. */
bool likwid_mmio_channel_present(const pmugate_info *info, uint32_t device, uint32_t socket);

/* The daemon's package counter that serves LIKWID's free-running register reg of device on
 * socket: 0 with its index, -ENODEV when pmugate serves no such counter (not Ice Lake-SP, the
 * kernel's uncore_imc_free_running_N missing or not opened), -EINVAL for an offset LIKWID's
 * devices do not have. */
int likwid_map_freerun(const pmugate_info *info, uint32_t device, uint32_t socket, uint32_t reg,
                       uint32_t *ret_counter);

/* LIKWID's Skylake-SP/Cascade Lake memory channel counters on a node that counts via perf:
 * their CAS_COUNT events (event 0x04, umask 0x03 read, 0x0C write) are what the kernel's
 * uncore_imc_N/cas_count_read and _write count, N the channel in the kernel's order (0a.2,
 * 0a.6, 0b.2, 0c.2, 0c.6, 0d.2: LIKWID's devices 5-7 and 9-11). */
#define LIKWID_IMC_CTL0 0xD8U
#define LIKWID_IMC_CTR0 0xA0U
#define LIKWID_IMC_COUNTERS 4U
#define LIKWID_IMC_BOX_RESET_CTRS 0x2U
#define LIKWID_IMC_EVENT_CAS 0x04U
#define LIKWID_IMC_UMASK_CAS_READ 0x03U
#define LIKWID_IMC_UMASK_CAS_WRITE 0x0CU

/* The channel number (0-5) of LIKWID's memory channel device on skx/clx, or -ENODEV. */
int likwid_imc_channel(const pmugate_info *info, uint32_t device);

/* The daemon's package counter uncore_imc_N/cas_count_read (write false) or _write serving
 * LIKWID's device on socket: 0 with its index, -ENODEV when it is not served. */
int likwid_map_cas(const pmugate_info *info, uint32_t device, uint32_t socket, bool write, uint32_t *ret_counter);

/* True when both counters of LIKWID's free-running device on socket are served. */
bool likwid_freerun_present(const pmugate_info *info, uint32_t device, uint32_t socket);

/* The package counter with index counter, or NULL. */
const pmugate_counter *likwid_find_counter(const pmugate_info *info, uint32_t counter);

/* The allowlist entry of an MSR, or of a unit's config-space offset; NULL when unlisted. */
const pmugate_register *likwid_find_msr(const pmugate_info *info, uint32_t reg);
const pmugate_register *likwid_find_pci(const pmugate_info *info, uint32_t unit, uint32_t offset);

/* The online CPUs whose leases a write to a register of the given scope ("thread", "core",
 * "ccx", "package") on target needs. Returns the count written to cpus (at most max), or -E2BIG. */
int likwid_lease_cpus(const pmugate_info *info, const pmugate_cpu *target, const char *scope, uint32_t *cpus,
                      size_t max);

/* True when LIKWID writes value to reg only to switch off a feature that pmugate never lets
 * any client switch on (PEBS_ENABLE written 0), or writes nothing at all (no bit to a
 * write-1-to-clear status): answered as done without touching the CPU. */
bool likwid_write_is_switch_off(uint32_t reg, uint64_t value);

/* True when LIKWID reads reg only to find bits to write back, on a model where the address
 * means something else: LIKWID 5.2 reads the client parts' uncore global status (MSR 0xE02)
 * on Skylake-SP too, where 0xE02 is a CHA control register. Answered 0 (nothing to clear)
 * without touching the CPU. */
bool likwid_read_is_placeholder(const pmugate_info *info, uint32_t reg);

/* Skylake-SP's U-box global control (MSR 0x700), which LIKWID uses to freeze and unfreeze
 * every uncore box at once. pmugate serves the memory controller boxes, each with its own
 * freeze bit, so the forwarder freezes those instead. */
#define LIKWID_MSR_UBOX_GLOBAL_CTL 0x700U
#define LIKWID_UBOX_FREEZE_ALL (UINT64_C(1) << 63)
#define LIKWID_UBOX_UNFREEZE_ALL (UINT64_C(1) << 61)
#define LIKWID_IMC_BOX_CTL 0xF4U
#define LIKWID_IMC_BOX_FREEZE 0x100U

/* True when LIKWID's uncore freeze on this model is the U-box's, emulated on the boxes. */
bool likwid_model_has_ubox(const pmugate_info *info);

/* True when the forwarder answers LIKWID's writes to the U-box global control: emulated on the
 * boxes where the model has LIKWID's U-box (above), and on Ice Lake-SP answered without the
 * hardware, because pmugate serves no box there that the U-box freezes and the free-running
 * counters it serves count regardless of any freeze. */
bool likwid_model_answers_ubox_freeze(const pmugate_info *info);

/* True for a counter the allowlist keeps read-only (a memory controller counter): LIKWID's
 * zeroing write to it is answered by counting from the current value instead. */
bool likwid_register_is_readonly_counter(const pmugate_register *entry);

/* True for writes that start or stop counting (global control, box control; on AMD also the
 * event selects, whose EN bit LIKWID starts and stops with): they run before LIKWID gets its
 * answer, so the counted interval is the one LIKWID times. */
bool likwid_write_is_gate(bool pci, uint32_t reg);

/* LIKWID's answer for a request pmugated refused with protocol error code, and for a failed
 * op (negative errno). */
LikwidError likwid_error_from_refusal(int code);
LikwidError likwid_error_from_errno(int error);

/* True when a refusal depends only on the register, not on the CPU, the caller's job or the
 * moment, so the same request can be answered again without asking the daemon. */
bool likwid_refusal_is_permanent(int code);

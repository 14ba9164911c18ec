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

#include "likwid-record.h"
#include "pmugate/pmugate.h"

/* The CPU entry of cpu, or NULL when the machine has none (or it is offline). */
const pmugate_cpu *likwid_map_cpu(const pmugate_info *info, uint32_t cpu);

/* The pmugate unit that serves LIKWID's uncore device on socket: 0 with its index, or -ENODEV
 * for devices pmugate does not serve on this machine. */
int likwid_map_unit(const pmugate_info *info, uint32_t device, uint32_t socket, uint32_t *ret_unit);

/* The allowlist entry of an MSR, or of a unit's config-space offset; NULL when unlisted. */
const pmugate_register *likwid_find_msr(const pmugate_info *info, uint32_t reg);
const pmugate_register *likwid_find_pci(const pmugate_info *info, uint32_t unit, uint32_t offset);

/* The online CPUs whose leases a write to a register of the given scope ("thread", "core",
 * "package") on target needs. Returns the count written to cpus (at most max), or -E2BIG. */
int likwid_lease_cpus(const pmugate_info *info, const pmugate_cpu *target, const char *scope, uint32_t *cpus,
                      size_t max);

/* True when LIKWID writes value to reg only to switch off a feature that pmugate never lets
 * any client switch on (PEBS_ENABLE written 0): answered as done without touching the CPU. */
bool likwid_write_is_switch_off(uint32_t reg, uint64_t value);

/* True for writes that start or stop counting (global control, box control): they run before
 * LIKWID gets its answer, so the counted interval is the one LIKWID times. */
bool likwid_write_is_gate(bool pci, uint32_t reg);

/* LIKWID's answer for a request pmugated refused with protocol error code, and for a failed
 * op (negative errno). */
LikwidError likwid_error_from_refusal(int code);
LikwidError likwid_error_from_errno(int error);

/* True when a refusal depends only on the register, not on the CPU, the caller's job or the
 * moment, so the same request can be answered again without asking the daemon. */
bool likwid_refusal_is_permanent(int code);

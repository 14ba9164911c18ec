/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU lists in the kernel's notation ("0-3,8,10-11"): parse and format
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Parses text into a sorted, de-duplicated array of CPU numbers below max_cpu.
 * Returns 0, -EINVAL on bad syntax, -ERANGE for a CPU >= max_cpu, -ENOMEM. */
int cpulist_parse(const char *text, uint32_t max_cpu, uint32_t **ret_cpus, size_t *ret_n);

/* Formats CPUs (any order) as ranges into buf. Returns 0 or -ENOBUFS. */
int cpulist_format(const uint32_t *cpus, size_t n, char *buf, size_t size);

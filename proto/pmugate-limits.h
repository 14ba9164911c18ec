/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Every limit on what a client controls, in one place. The daemon checks each one before it
 * allocates; the library checks the same numbers so that a request it builds is never refused
 * for size.
 */
#pragma once

/* Wire protocol version spoken by this build. A request with another "v" is refused. */
#define PMUGATE_PROTOCOL_VERSION 1U

/* Largest request message accepted, in bytes. A 4096-op batch encodes to about 45 KiB. */
#define PMUGATE_REQUEST_SIZE_MAX (64U * 1024U)

/* Largest reply; the biggest is a 4096-op batch reply (about 41 KiB) or a large hello. */
#define PMUGATE_REPLY_SIZE_MAX (256U * 1024U)

/* Register operations per batch, counted after expanding the compact "these registers on
 * these CPUs" form. */
#define PMUGATE_OPS_PER_BATCH_MAX 4096U

/* Entries in one CPU or register list of a compact op. */
#define PMUGATE_LIST_MAX 4096U

/* Map keys in one request; every known op needs far fewer. */
#define PMUGATE_REQUEST_KEYS_MAX 16U

/* Connected clients in total, and per uid. */
#define PMUGATE_CLIENTS_MAX 256U
#define PMUGATE_CLIENTS_PER_UID_MAX 32U

/* Of the clients allowed in total, slots only admins (root, admin_groups) may take, so that
 * users filling the daemon never lock out 'pmugatectl status' or 'reset'. A configured total
 * below twice this keeps half of it instead. */
#define PMUGATE_CLIENTS_ADMIN_RESERVED 8U

/* Job grants held at once. */
#define PMUGATE_GRANTS_MAX 4096U

/* Registers one lease may change; each needs its value kept for the restore. Counted over the
 * lease's life: a core or package register put back early (its holder let go of a CPU sharing
 * it) and written again counts again. */
#define PMUGATE_LEASE_JOURNAL_MAX 512U

/* Largest state file read back at start-up; anything bigger is not read at all. A lease
 * journal is a header and at most PMUGATE_LEASE_JOURNAL_MAX records of under 80 bytes. The
 * grants file holds at most PMUGATE_GRANTS_MAX grants; a grant that would make it larger is
 * refused rather than saved into a file the next start would not read. */
#define PMUGATE_JOURNAL_FILE_SIZE_MAX (64U * 1024U)
#define PMUGATE_GRANTS_FILE_SIZE_MAX (16U * 1024U * 1024U)

/* Highest CPU number and PCI unit count the daemon will describe. */
#define PMUGATE_CPUS_MAX 8192U
#define PMUGATE_UNITS_MAX 1024U

/* Package counters (the kernel's uncore memory controller events) the daemon opens and serves. */
#define PMUGATE_COUNTERS_MAX 1024U

/* Longest string field (job ids, names) accepted from a client. */
#define PMUGATE_STRING_MAX 256U

/* Audit rate limit: records per uid per interval, then suppressed and counted. */
#define PMUGATE_AUDIT_BURST 20U
#define PMUGATE_AUDIT_INTERVAL_USEC (10U * 1000U * 1000U)

/* Uids the rate limit tracks one by one in an interval; more uids than this share one budget
 * of PMUGATE_AUDIT_BURST, and what it holds back is reported under no uid. */
#define PMUGATE_AUDIT_UIDS_MAX 256U

/* Records per interval of all uids together (each uid's report of what was held back comes on
 * top, at most one per tracked uid per interval). */
#define PMUGATE_AUDIT_GLOBAL_BURST 500U

/* Marker API (include/pmugate/marker.h): named regions a program may register, threads that
 * may measure, regions open at once on one thread, and the length of a region's name. The
 * runner reads at most PMUGATE_MARKER_FILE_SIZE_MAX bytes of the results a program wrote. */
#define PMUGATE_MARKER_REGIONS_MAX 1024U
#define PMUGATE_MARKER_THREADS_MAX 4096U
#define PMUGATE_MARKER_DEPTH_MAX 32U
#define PMUGATE_MARKER_NAME_MAX 100U
#define PMUGATE_MARKER_FILE_SIZE_MAX (256U * 1024U * 1024U)

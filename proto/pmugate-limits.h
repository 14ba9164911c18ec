/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Every limit on what a client controls, in one place. The daemon checks each one before it
 * allocates; the library checks the same numbers so that a request it builds is never refused
 * for size.
 */
#pragma once

/* Wire protocol version spoken by this build. A request with another "v" is refused. */
#define PMUGATE_PROTOCOL_VERSION 1U

/* Largest request message accepted, in bytes. 4096 single ops encode to about 45 KiB; a
 * sample of 4096 CPUs in compact ops ("R", "each") to about 50 KiB. */
#define PMUGATE_REQUEST_SIZE_MAX (64U * 1024U)

/* Largest reply message; the biggest is a part of a batch reply (PMUGATE_REPLY_PART_RESULTS
 * results, about 41 KiB) or a large hello. */
#define PMUGATE_REPLY_SIZE_MAX (256U * 1024U)

/* Register operations per batch, counted after expanding the compact forms ("R", "W",
 * "each"): a sample of 4096 CPUs at 32 operations each, the most a measurement's sample does
 * per CPU. One batch holds the daemon for this many register accesses. */
#define PMUGATE_OPS_PER_BATCH_MAX 131072U

/* Results in one message of a batch reply. A longer reply comes in parts of this many results,
 * each its own message: one message may not exceed the sender's socket buffer (the kernel's
 * default net.core.wmem_default, 212992 bytes), and 131072 results encode to about 1.3 MiB. */
#define PMUGATE_REPLY_PART_RESULTS 4096U
#define PMUGATE_REPLY_PARTS_MAX (PMUGATE_OPS_PER_BATCH_MAX / PMUGATE_REPLY_PART_RESULTS)

/* A status reply (admins) lists every client, grant and lease, which on a large machine is
 * more than one message may hold: it comes in parts like a batch reply, each message at most
 * this many bytes (below the default socket buffer) and at most PMUGATE_REPLY_PARTS_MAX of
 * them, 4 MiB in all (8192 leases with the longest job names take about 2.4 MiB). Entries past
 * that are left out and counted ("omitted"). */
#define PMUGATE_STATUS_PART_BYTES (128U * 1024U)

/* Bytes of replies the daemon holds for the clients of one uid that have not read them yet. A
 * client that stops reading holds at most one reply (up to 32 parts, about 1.3 MiB); a reply
 * that would take its uid past this ends that client's connection instead of growing the
 * daemon. The budget is the uid's own: clients of other uids that do not read never cost a
 * reader its connection. All uids together hold at most one reply per connection. */
#define PMUGATE_PENDING_BYTES_PER_UID_MAX (16U * 1024U * 1024U)

/* Register operations one turn of the scheduler runs of a batch: a larger batch is checked,
 * then run, this many operations at a time, and every other client waiting for the daemon is
 * served between two slices (daemon/server/scheduler.c). About 0.1 ms on the simulated PMU. */
#define PMUGATE_BATCH_SLICE_OPS 1024U

/* Checking an op costs about a fifth of running it on the simulated PMU (less than that of a
 * read of /dev/cpu/N/msr): a slice of the check takes this many ops, about as long. */
#define PMUGATE_BATCH_CHECK_SLICE_OPS (4U * PMUGATE_BATCH_SLICE_OPS)

/* Batches larger than one slice that are in progress at once, each with its own buffers (about
 * 52 bytes per operation, 6.5 MiB at the batch limit). A client whose large batch finds none
 * free waits, its request (at most PMUGATE_REQUEST_SIZE_MAX bytes) kept as it came, until one
 * is handed to it; small requests never wait for one. One: four batches in progress together
 * thrashed the caches (each slice touching another batch's buffers) and cost the flooders of
 * bench/run-bench-fairness.py a fifth of their throughput. */
#define PMUGATE_BATCHES_RUNNING_MAX 1U

/* Register operations the daemon keeps room for between batches; a larger batch grows its
 * buffers, and they shrink back to this when the client that needed them leaves. */
#define PMUGATE_OPS_KEPT 4096U

/* Entries in one CPU or register list of a compact op, and in a request's "cpus". */
#define PMUGATE_LIST_MAX 4096U
/* Encodings a simulated PMU reports as counted in hello ("sim_events"): its event table and the
 * profiles' extra events. */
#define PMUGATE_SIM_EVENTS_MAX 256U

/* Operations one CPU runs in an "each" op (the per-CPU sequence repeated on every CPU). */
#define PMUGATE_EACH_OPS_MAX 64U

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

/* A refusal's reason text with its NUL: what the daemon sends and the size of the public
 * PmugateError.reason (and PmugateHello's rights_reason, scope_reason) the library copies it
 * into. The daemon builds every reason in a buffer of this size, so a reason never arrives cut
 * by the client. */
#define PMUGATE_REASON_MAX 400U

/* What an audit record of a refusal names besides its reason: the CPUs and the registers. */
#define PMUGATE_AUDIT_CPUS_TEXT_MAX 512U
#define PMUGATE_AUDIT_REGS_TEXT_MAX 200U

/* Audit rate limit: records per uid per interval, then suppressed and counted. */
#define PMUGATE_AUDIT_BURST 20U
#define PMUGATE_AUDIT_INTERVAL_USEC (10U * 1000U * 1000U)

/* Uids the rate limit tracks one by one in an interval; more uids than this share one budget
 * of PMUGATE_AUDIT_BURST, and what it holds back is reported under no uid. */
#define PMUGATE_AUDIT_UIDS_MAX 256U

/* Records per interval of all uids together (each uid's report of what was held back comes on
 * top, at most one per tracked uid per interval). */
#define PMUGATE_AUDIT_GLOBAL_BURST 500U

/* A job summary the Slurm Epilog asks pmugate-exporter for and has 'pmugatectl save-summary'
 * write: larger input is refused, not truncated (the Epilog's curl stops at the same size). */
#define PMUGATE_JOB_SUMMARY_SIZE_MAX (1024U * 1024U)

/* pmugate job: a job id (the protocol's strings: PMUGATE_STRING_MAX) and a node's name (a host
 * name: at most 255 bytes) in a summary's file name JOB.HOST.json; the nodes one report reads
 * (summary files and --nodes names alike: more is refused, not cut short); and the nesting of
 * a summary document, two levels deep today, that json-c parses before it refuses. */
#define PMUGATE_JOB_ID_MAX PMUGATE_STRING_MAX
#define PMUGATE_JOB_HOST_MAX 255U
#define PMUGATE_JOB_REPORT_NODES_MAX 16384U
#define PMUGATE_JOB_SUMMARY_DEPTH_MAX 8
/* pmugate job --prometheus: the most one answer of Prometheus' HTTP API may hold (a query's
 * result over 10000 nodes and 12 TopDown categories is some 20 MiB), and how long one request
 * may take. */
#define PMUGATE_JOB_PROMETHEUS_REPLY_MAX (64U * 1024U * 1024U)
#define PMUGATE_JOB_PROMETHEUS_TIMEOUT_MS 30000
/* The clock skew pmugate job tolerates by default between a node's summary and the job's
 * window (the median of the nodes' starts and ends): the Epilogs of one job run within
 * seconds of each other, and the exporter sees a job within a sampling period or two. */
#define PMUGATE_JOB_SKEW_DEFAULT_SECONDS 60

/* Distinct write patterns (CPUs and registers) of one monitoring session that are audited once
 * each, their repeats counted and reported when the session ends (a sampling agent resets its
 * counters at every read); past this many, every write batch is audited. */
#define PMUGATE_AUDIT_FOLD_PATTERNS_MAX 16U
/* A long monitoring session reports the repeats it counted at least this often (1 h), not only
 * when it ends. */
#define PMUGATE_AUDIT_FOLD_REPORT_USEC (3600ULL * 1000000ULL)

/* Marker API (include/pmugate/marker.h): named regions a program may register, threads that
 * may measure, regions open at once on one thread, and the length of a region's name. The
 * runner reads at most PMUGATE_MARKER_FILE_SIZE_MAX bytes of the results a program wrote. */
#define PMUGATE_MARKER_REGIONS_MAX 1024U
#define PMUGATE_MARKER_THREADS_MAX 4096U
#define PMUGATE_MARKER_DEPTH_MAX 32U
#define PMUGATE_MARKER_NAME_MAX 100U
#define PMUGATE_MARKER_FILE_SIZE_MAX (256U * 1024U * 1024U)

/* The perf_event path (docs/PERF.md). A PMU's name as sysfs spells it, the format fields one PMU
 * may have, the PMUs one machine shows, and the length of an event's name a client gives. */
#define PERF_PMU_NAME_MAX 40U
#define PERF_PMU_FORMATS_MAX 24U
#define PERF_PMUS_MAX 256U
#define PERF_EVENT_NAME_MAX 63U
/* TopDown slots per cycle an ARM core PMU's caps/slots may say (PMMIR_EL1.SLOTS is 8 bits;
 * today's cores dispatch at most 16 operations a cycle). */
#define PERF_PMU_SLOTS_MAX 32U
/* The kernel's sysfs as the catalogue reads it: entries of sys/bus/event_source/devices, the
 * size of a PMU's cpumask (a list on a machine of thousands of CPUs) and of its other files
 * (type, format files). */
#define PERF_SYSFS_ENTRIES_MAX 1024U
#define PERF_SYSFS_FILE_MAX 4096U
#define PERF_SYSFS_SMALL_FILE_MAX 64U

/* One perf_open: its groups, the events of one group (SLOTS with the eight level-2 TopDown
 * metric events is nine), and its events in all; the handles one session holds at once; and
 * the open events (kernel fds, one per event and target) of one uid across its sessions:
 * PERF_FDS_PER_UID_MAX, or on a machine of more CPUs PERF_FDS_PER_UID_PER_CPU for each of its
 * CPUs (server_perf_events_per_uid_max()), so that one whole-node perf_open of a full event
 * list fits: a fixed 1024 refused TopDown level 2 (10 events a CPU on Sapphire Rapids) on every
 * CPU of any machine of more than 102 CPUs. */
#define PERF_GROUPS_PER_OPEN_MAX 16U
#define PERF_GROUP_EVENTS_MAX 10U
#define PERF_EVENTS_PER_OPEN_MAX 32U
#define PERF_HANDLES_PER_SESSION_MAX 16U
#define PERF_FDS_PER_UID_MAX 1024U
#define PERF_FDS_PER_UID_PER_CPU PERF_EVENTS_PER_OPEN_MAX

/* The perf opener (daemon/backend/perf-opener.c) answers one open at a time; a reply that takes
 * longer than this means it hangs (stopped, or stuck in the kernel): the daemon stops using it
 * rather than wait with every client. */
#define PERF_OPENER_TIMEOUT_MSEC 5000U
/* One batch request to the perf opener: its events, at most as many as one reply can carry fds
 * (the kernel's SCM_MAX_FD), and the fds (group leaders, cgroup directories) it carries, as
 * many. A whole-node perf_open goes through the opener in requests of this many events, not a
 * socket round trip per fd. */
#define PERF_OPENER_BATCH_MAX 253U
#define PERF_OPENER_BATCH_FDS_MAX 253U
/* A perf_open of more fds than this opens in turns of this many, with every other client
 * waiting served between two turns (an admin's revoke among them), as a large batch runs in
 * slices: a whole-node open of 40960 fds is not one turn of a large fraction of a second. */
#define PERF_OPEN_FDS_PER_TURN 2048U

/* A cgroup's path as /proc/PID/cgroup gives it; a longer one is refused, not cut. */
#define PMUGATE_CGROUP_PATH_MAX 2048U

/* Threads of one process that a process-scope perf_open opens events on (one fd per thread and
 * event); a process with more is refused with the reason. */
#define PERF_PROCESS_THREADS_MAX 4096U

/* The kernel's lockdown file (/sys/kernel/security/lockdown) is one line of three short words,
 * one in brackets: the daemon reads at most this many bytes of it, and a longer file, or a
 * bracketed word longer than the second limit, is not the kernel's. */
#define PMUGATE_LOCKDOWN_FILE_MAX 256U
#define PMUGATE_LOCKDOWN_WORD_MAX 32U

/* How often the simulator's perf driver is ticked while events are open (the kernel rotates
 * multiplexed groups every perf_event_mux_interval_ms, 4 ms by default). */
#define PERF_SIM_TICK_USEC 4000U

/* Events the simulator's perf driver keeps open at once (its handle table). */
#define PERF_SIM_EVENTS_MAX 65536U

/* pmugate-exporter's log (docs/EXPORTER.md): distinct reasons it keeps counts for at once (one
 * more evicts the one quiet longest, reporting its count), and the default interval within
 * which each reason is logged once, the repeats counted. */
#define PMUGATE_EXPORTER_LOG_REASONS_MAX 16U
#define PMUGATE_EXPORTER_LOG_INTERVAL_USEC (60ULL * 1000000ULL)
/* pmugate-exporter: jobs whose cgroups it counts through perf at once, each one perf handle of
 * its connection (PERF_HANDLES_PER_SESSION_MAX), leaving room for its CPU measurement's;
 * further jobs are counted by the CPUs they hold. */
#define PMUGATE_EXPORTER_CGROUP_JOBS_MAX 12U

/* pmugate-exporter --per-cpu=auto (docs/SCALE.md): per-CPU series only on nodes of at most this
 * many CPUs. Above it a node's series are per socket, node and job: at 4096 CPUs the per-CPU
 * ones are some 65000 of a scrape's 66000. */
#define PMUGATE_EXPORTER_PER_CPU_AUTO_MAX 256U

/* pmugate-exporter: event sets that take turns turn once per --interval, each set at least this
 * long (an interactive measurement's 100 ms). */
#define PMUGATE_EXPORTER_ROTATE_MIN_NS (100ULL * 1000ULL * 1000ULL)

/* The fds one message of a perf_open handoff can carry (the kernel's SCM_MAX_FD); the
 * client's receive buffer holds that many. */
#define PERF_HANDOFF_FDS_PER_MESSAGE 253U

/* LIKWID's marker mode: the access daemons of one measurement that join the first one's
 * session (LIKWID starts one per measured thread that is not its process's first, so up to one
 * per hardware thread; each is an open file of the first forwarder, under the usual limit of
 * 1024), the ancestors walked to prove a joining process belongs to the measurement, and the
 * reason line the forwarder leaves for 'pmugate likwid' when LIKWID's counts are void. */
#define PMUGATE_LIKWID_JOINED_MAX 1000U
#define PMUGATE_LIKWID_ANCESTRY_MAX 64U
#define PMUGATE_LIKWID_VOID_REASON_MAX 400U
/* The most of the LIKWID process's /proc/PID/maps the forwarder reads to find the liblikwid it
 * runs (and so its release's device numbers); LIKWID's own is a few dozen kilobytes. */
#define PMUGATE_LIKWID_MAPS_MAX (4U * 1024U * 1024U)

/* The Python module (python/): counts of one marker region it asks pmugate_marker_get() for
 * (the runner reads fewer registers than this), and the shortest interval between the interval
 * results of pmugate.measure(interval=...), which its sampling thread reads (the CLI's -I
 * shortest turn). */
#define PMUGATE_PY_MARKER_COUNTS_MAX 64U
#define PMUGATE_PY_INTERVAL_MIN_NS (10U * 1000U * 1000U)

/* Rows (one per target and group) in one message of a perf_read reply. A row of ten events
 * packs to at most 133 bytes, so a message stays below PMUGATE_STATUS_PART_BYTES and the
 * sender's socket buffer; more rows come in parts like a batch reply, at most
 * PMUGATE_REPLY_PARTS_MAX of them, and a perf_open whose rows would need more is refused. A
 * TopDown level 2 of 4096 CPUs is 8192 rows, about 400 KB: in one message the send failed and
 * the daemon ended the connection. */
#define PERF_ROWS_PER_PART 960U
#define PERF_ROWS_MAX (PERF_ROWS_PER_PART * PMUGATE_REPLY_PARTS_MAX)

/* Error bounds (client/measure/measure-result.c) evaluate every formula twice per multiplexed
 * event and row: about 4 ms per CPU row at TopDown level 4. Per-CPU rows get them up to this
 * many measured CPUs; the aggregate and per-package rows always. */
#define PMUGATE_BOUND_CPUS_MAX 64U

/* A TSC rate (hello "tsc_hz") outside these bounds, in kHz, is no rate: the daemon reports it
 * unknown and the library ignores it, so that a garbled value cannot scale every rate. */
#define PMUGATE_TSC_KHZ_MIN 100000ULL
#define PMUGATE_TSC_KHZ_MAX 20000000ULL

/* pmugate timing (proto/timing-attr.h, docs/TIMING.md). Each sampling event's ring buffer is
 * one metadata page and TIMING_RING_DATA_BYTES of data (a power-of-two number of pages, as the
 * kernel requires, for pages of 4 to 256 KiB): 260 KiB per CPU with 4 KiB pages, inside the
 * kernel's default perf_event_mlock_kb of 516 KiB per CPU that an unprivileged mmap is charged
 * against. The client maps exactly this; the simulator's ring is this size. A timing_open opens one event
 * per CPU of at most TIMING_CPUS_PER_OPEN CPUs (the client asks again for more), and a
 * decoded sample keeps at most TIMING_BRANCHES_MAX branch entries (architectural LBR has 32:
 * a stream claiming more is malformed). */
#define TIMING_RING_DATA_BYTES (256U * 1024U)
#define TIMING_CPUS_PER_OPEN 64U
#define TIMING_BRANCHES_MAX 64U
/* A timing_open of a running process's threads ("tids") names at most TIMING_TIDS_PER_OPEN
 * of them, and opens one event per thread and CPU: at most PERF_HANDOFF_FDS_PER_MESSAGE in
 * all, the fds its one reply passes (each counts against the per-user perf event limit). */
#define TIMING_TIDS_PER_OPEN 64U
/* The client's symbols and disassembly (client/timing/): one address layout keeps at most
 * TIMING_MAPPINGS_MAX mappings (a stream naming more gets the rest unnamed, with that reason),
 * and one disassembly covers at most TIMING_DISASM_BYTES_MAX bytes (a basic block is far
 * shorter: a longer range is no block, and is refused). */
#define TIMING_MAPPINGS_MAX 4096U
#define TIMING_DISASM_BYTES_MAX 4096U
/* pmugate timing's samples per thread (the report's "threads"): the first this many tasks
 * seen are counted one by one, the samples of more together. */
#define TIMING_THREADS_COUNTED_MAX 4096U

/* timing_open's sample periods (docs/PROTOCOL.md): in branch mode cycles of the core, in IP
 * mode ns of cpu-clock; a request outside [MIN, MAX] is refused, none takes the DEFAULT (odd
 * and prime, so that samples do not fall in step with a loop). The shortest periods bound the
 * daemon's part; the kernel's perf_event_max_sample_rate (read at each open, and refused when
 * it cannot be read or passes TIMING_KERNEL_SAMPLE_RATE_MAX) bounds the rate of both. */
#define TIMING_PERIOD_BRANCHES_MIN 10007ULL
#define TIMING_PERIOD_BRANCHES_MAX 10000000019ULL
#define TIMING_PERIOD_BRANCHES_DEFAULT 200003ULL
#define TIMING_PERIOD_IPS_MIN 10007ULL
#define TIMING_PERIOD_IPS_MAX 10000000019ULL
#define TIMING_PERIOD_IPS_DEFAULT 100003ULL
#define TIMING_KERNEL_SAMPLE_RATE_MAX 10000000ULL
/* Open timing handles one uid may hold across its connections: each is up to
 * TIMING_CPUS_PER_OPEN sampling events whose rings the uid's mlock budget pays for. */
#define TIMING_HANDLES_PER_UID_MAX 16U
/* The fds one reply passes: a perf_open's handoff or a timing_open's (threads times CPUs,
 * at most what one message carries). */
#define PMUGATE_REPLY_FDS_MAX PERF_HANDOFF_FDS_PER_MESSAGE

/* pmugate timing's analysis (client/timing/timing-blocks.c). A "block" from start to end longer
 * than TIMING_BLOCK_BYTES_MAX is no basic block (an entry pair across a lost record, or the
 * kernel's filtering) and is counted apart, as perf script's brstackinsn bounds it; it is the
 * disassembler's bound, so that every block can be listed. The client keeps at most
 * TIMING_BLOCKS_MAX distinct blocks and sampled IPs, TIMING_CYCLES_KEPT_MAX cycle counts (2
 * bytes each: 64 MiB, about a minute of sampling at the default period), and
 * TIMING_ANALYSIS_MAPPINGS_MAX mappings (a fork copies its parent's) of TIMING_MODULES_MAX
 * files; what comes past them is counted, not kept. A histogram has at most
 * TIMING_HISTOGRAM_BINS_MAX bins. */
#define TIMING_BLOCK_BYTES_MAX TIMING_DISASM_BYTES_MAX
#define TIMING_BLOCKS_MAX (1U << 20)
#define TIMING_CYCLES_KEPT_MAX (32U * 1024U * 1024U)
#define TIMING_ANALYSIS_MAPPINGS_MAX 65536U
#define TIMING_MODULES_MAX 4096U
#define TIMING_HISTOGRAM_BINS_MAX 512U

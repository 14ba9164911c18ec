/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's perf handles (perf/perf-handles.h): found by id, counted per uid, and closed at
 * perf_close, at disconnect, when the lease a handle's CPU needs ends (preemption, release,
 * revocation), and when the right that allowed a handle is gone. Every close is audited.
 */
#pragma once

#include <stdint.h>

#include "server/server-state.h"

/* The handle of c with this id, or NULL (another session's ids are never found). */
PerfHandle *session_perf_find(Session *c, uint32_t id, size_t *ret_slot);
/* Closes the handle in slot, auditing why ("closed", "disconnected", "preempted", "revoked"). */
void session_perf_close(Session *c, size_t slot, const char *verdict, const char *why);
/* Gives back the leases on cpus that a perf_open took, except those another of c's handles
 * still counts on, restoring and auditing them as 'release' does. */
void session_perf_release_leases(Session *c, const CpuSet *cpus, const char *why);
/* Whether c holds a perf handle. */
bool session_perf_any(const Session *c);
/* At disconnect. */
void session_perf_close_all(Session *c, const char *why);
/* Handles that need the lease on cpu, when that lease ended; returns how many closed. */
size_t session_perf_close_cpu(Session *c, uint32_t cpu, const char *verdict, const char *why);
/* Job-mode handles checked against the scope just resolved (NULL: no grant any more): a handle
 * of another job, or of a CPU the job no longer gives, closes and the session is told
 * `revoked`. Returns how many closed. */
size_t session_perf_revalidate(Server *s, Session *c, const Scope *scope, const char *why);
/* Whether c holds the class lbr: from its role (pmugate.conf lbr_groups, admins), or in job
 * mode from the grant of its job in scope (grant "lbr") when the grant is c's uid's. */
bool session_may_lbr(const Server *s, const Session *c, const Scope *scope);
/* The timing handles all sessions of uid hold. */
size_t server_timing_handles_of_uid(const Server *s, uid_t uid);
/* The events (kernel fds) all sessions of uid hold open, or are opening (an open in turns). */
size_t server_perf_events_of_uid(const Server *s, uid_t uid);
/* How many events one uid may hold open across its sessions on this machine (limits.h). */
size_t server_perf_events_per_uid_max(const Server *s);
/* Runs the simulator's tick while any perf handle is open, and stops it when none is: call
 * after a handle opened or closed. Returns 0 or a negative errno (the timer could not be set). */
int server_perf_tick_update(Server *s);
/* Closes fds of a reply that was never sent. */
void server_reply_fds_drop(Server *s);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Forwarding LIKWID's records to pmugated: batches, leases and LIKWID's answers
 *
 * LIKWID waits for the answer to each record. Writes the daemon will accept (the register is
 * listed and writable, the CPU leased) are answered at once and collected; they run in one
 * batch together with the next read, a write that starts or stops counting, or when LIKWID
 * pauses (likwid_forwarder_flush()). Everything else runs before it is answered. A refusal
 * is the daemon's (so it is audited there); refusals that depend only on the register are
 * remembered and answered again without asking.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "likwid/likwid-record.h"
#include "likwid/likwid-stats.h"
#include "pmugate/pmugate.h"

typedef struct LikwidForwarder LikwidForwarder;


/* Takes over c, also on failure (c may be NULL when pmugated could not be reached: every access is then answered
 * "locked"). Messages go to log, prefixed with prog; verbose also tells each refusal. */
int likwid_forwarder_new(pmugate *c, FILE *log, const char *prog, bool verbose, LikwidForwarder **ret);
LikwidForwarder *likwid_forwarder_free(LikwidForwarder *f);

/* Answers rec in place. Returns 1 when LIKWID expects the answer, 0 for EXIT (no answer; the
 * session is over), or a negative errno on an internal failure. */
int likwid_forwarder_handle(LikwidForwarder *f, LikwidRecord *rec);

/* Runs the collected writes now. */
void likwid_forwarder_flush(LikwidForwarder *f);
bool likwid_forwarder_has_pending(const LikwidForwarder *f);

const LikwidStats *likwid_forwarder_stats(const LikwidForwarder *f);

/* Why LIKWID's counts cannot be trusted (a lease refused, pmugated lost, a collected write
 * failed), or NULL. Refused registers LIKWID reports itself ("-" in its table) do not count. */
const char *likwid_forwarder_void_reason(const LikwidForwarder *f);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A refusal: what a check returns when a request may not be served.
 *
 * The rule (docs/HACKING.md, "Refusals"): a check or handler that refuses fills a Refusal and
 * returns its positive ProtoError code; it packs no error reply and audits no denial. Only the
 * dispatcher (handlers/dispatch.c) turns a refusal into an error reply, through
 * server_reply_refusal(), which also audits it. A negative return is an internal failure and
 * carries the errno it failed with; 0 is success.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "pmugate-limits.h"

typedef struct Refusal {
        int code;                                       /* a ProtoError; 0 while nothing is refused */
        int64_t op_index;                               /* the refused op of a batch; -1: the whole request */
        char reason[PMUGATE_REASON_MAX];
        /* Named by the denial's audit record besides the reason; empty when it names none. */
        char cpus[PMUGATE_AUDIT_CPUS_TEXT_MAX];
        char regs[PMUGATE_AUDIT_REGS_TEXT_MAX];
        /* What the audit record says when it may say more than the reply (who holds a CPU is
         * the holder's business, but the audit records it); empty: the reason. */
        char audit_reason[PMUGATE_REASON_MAX];
} Refusal;

/* Fills ret with code, op_index and the formatted reason (cut to PMUGATE_REASON_MAX) and
 * returns code, so that a check can `return refuse(...)`. */
_printf_(4, 5) int refuse(Refusal *ret, int code, int64_t op_index, const char *fmt, ...);
_printf_(4, 0) int refuse_v(Refusal *ret, int code, int64_t op_index, const char *fmt, va_list ap);

/* Leaves ret refusing nothing. */
void refusal_clear(Refusal *ret);

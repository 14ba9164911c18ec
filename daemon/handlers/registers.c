/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * batch: reads and writes of registers, checked whole before any runs
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "cpulist.h"
#include "error.h"
#include "handlers/handlers.h"
#include "macro.h"
#include "pmu/batch.h"


/* Summaries for audit records: the CPUs and distinct registers of a batch, truncated. */
static void summarize_ops(const RegOp *ops, size_t n, bool writes_only, char *cpus, size_t cpus_size, char *regs,
                          size_t regs_size) {
        uint32_t cpu_list[64] = {}, reg_list[16] = {};
        size_t n_cpus = 0, n_regs = 0, used = 0;

        for (size_t i = 0; i < n; i++) {
                bool seen = false;

                if (writes_only && !reg_op_is_write(&ops[i]))
                        continue;
                for (size_t j = 0; j < n_cpus && !seen; j++)
                        seen = cpu_list[j] == ops[i].target;
                if (!seen && n_cpus < ELEMENTSOF(cpu_list) && reg_op_names_cpu(&ops[i]))
                        cpu_list[n_cpus++] = ops[i].target;
                seen = false;
                for (size_t j = 0; j < n_regs && !seen; j++)
                        seen = reg_list[j] == ops[i].reg;
                if (!seen && n_regs < ELEMENTSOF(reg_list))
                        reg_list[n_regs++] = ops[i].reg;
        }
        if (cpulist_format(cpu_list, n_cpus, cpus, cpus_size) < 0)
                (void) snprintf(cpus, cpus_size, "many");
        regs[0] = '\0';
        for (size_t j = 0; j < n_regs; j++) {
                int k = snprintf(regs + used, regs_size - used, "%s0x%" PRIx32, j ? "," : "", reg_list[j]);

                if (k < 0 || (size_t) k >= regs_size - used)
                        break;
                used += (size_t) k;
        }
}

static void audit_writes(Server *s, Session *c, const RegOp *ops, size_t n) {
        size_t writes = 0;
        char cpus[256], regs[200], jobs[320];
        AuditRecord rec = {
                .event = "write",
                .verdict = "allowed",
                .uid = c->peer.uid,
                .gid = c->peer.gid,
                .pid = c->peer.pid,
                .op = "batch",
                .cpus = cpus,
                .regs = regs,
        };

        for (size_t i = 0; i < n; i++)
                writes += reg_op_is_write(&ops[i]);
        if (writes == 0)
                return;
        summarize_ops(ops, n, true, cpus, sizeof(cpus), regs, sizeof(regs));
        /* A monitor resets its counters at every sample: its first batch of each pattern is
         * audited, the repeats are counted and reported when the session ends, so that a
         * sampling agent does not push real events behind the rate limit. */
        if (c->rights.role == ROLE_MONITOR) {
                struct timespec ts;
                uint64_t now;

                (void) clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U;
                if (!audit_fold_first(&c->audit_fold, cpus, regs, writes, now)) {
                        if (audit_fold_report_due(&c->audit_fold, now))
                                server_audit_folded_writes(s, c);
                        return;
                }
        }
        /* The jobs of the leases the writes ran under, not whichever job the caller's scope
         * named first. */
        if (c->rights.scoped) {
                CpuSet written;

                cpuset_clear(&written);
                for (size_t i = 0; i < n; i++)
                        if (reg_op_is_write(&ops[i]) && !reg_op_is_pci(&ops[i]))
                                cpuset_add(&written, ops[i].target);
                server_lease_jobs(s, &written, jobs, sizeof(jobs));
                rec.job = jobs[0] ? jobs : NULL;
        }
        rec.count = writes;
        audit_emit(s->audit, &rec);
}

static size_t reply_parts(size_t n) {
        return n <= PMUGATE_REPLY_PART_RESULTS ? 1 : (n - 1) / PMUGATE_REPLY_PART_RESULTS + 1;
}

/* Part p of the results into buf: with more than PMUGATE_REPLY_PART_RESULTS, each part is a
 * whole reply map with "part" (from 0) and "parts" beside its slice of that many results. */
static int pack_part(msgpack_sbuffer *buf, const Request *req, const int32_t *status, const uint64_t *values,
                     size_t p) {
        size_t n = req->n_ops, parts = reply_parts(n), first = p * PMUGATE_REPLY_PART_RESULTS,
               count = MIN(n - first, PMUGATE_REPLY_PART_RESULTS);
        msgpack_packer pk;

        msgpack_packer_init(&pk, buf, msgpack_sbuffer_write);
        TRY(reply_pack_begin(&pk, req->id, parts > 1 ? 4 : 2));
        if (parts > 1) {
                TRY(pack_key_uint(&pk, "part", p));
                TRY(pack_key_uint(&pk, "parts", parts));
        }
        TRY(pack_string(&pk, "status"));
        TRY(pack_int32_array(buf, status + first, count));
        TRY(pack_string(&pk, "values"));
        TRY(pack_uint64_array(buf, values + first, count));
        return 0;
}

/* The results of a batch of at most one slice, in one message. */
static int pack_results(Server *s, const Request *req, const int32_t *status, const uint64_t *values) {
        msgpack_sbuffer_clear(&s->reply);
        s->n_reply_parts = 0;
        return pack_part(&s->reply, req, status, values, 0);
}

/* Packs into the job's reply every part whose results are all there. */
static int pack_finished_parts(BatchJob *job) {
        const Request *req = &job->req;
        size_t parts = reply_parts(req->n_ops);

        while (job->n_reply_parts < parts &&
               MIN(req->n_ops, (job->n_reply_parts + 1) * PMUGATE_REPLY_PART_RESULTS) <= job->done) {
                TRY(pack_part(&job->reply, req, job->status, job->values, job->n_reply_parts));
                job->reply_part_ends[job->n_reply_parts++] = job->reply.size;
        }
        return 0;
}

static BatchContext batch_context(Server *s, Session *c) {
        return (BatchContext) {
                .machine = s->machine,
                .allowlist = s->allowlist,
                .rights = &c->rights,
                .scope = c->rights.scoped ? &c->scope : NULL,
                .package_read_shared = s->config.package_read_shared,
                .energy_read_shared = s->config.energy_read_shared,
                .leases = s->leases,
                .owner = c,
                .pmu = s->pmu,
                .choice = &s->choice,
        };
}

/* Adds what the denial's audit record names, the refused op's CPU and register, to a refusal
 * of batch_check() and returns its code. */
static int refuse_batch(Server *s, const Session *c, const Request *req, Refusal *refusal) {
        /* A denial storm is rate limited; do not describe records that are dropped. */
        if (audit_would_emit(s->audit, c->peer.uid))
                summarize_ops(&req->ops[refusal->op_index], 1, false, refusal->cpus, sizeof(refusal->cpus),
                              refusal->regs, sizeof(refusal->regs));
        return refusal->code;
}

static void account_batch(Server *s, Session *c, const Request *req) {
        s->counters.ops += req->n_ops;
        audit_writes(s, c, req->ops, req->n_ops);
}

/* Runs ops first to end - 1 of a batch whose rights may have changed since it was checked (a
 * lease ended, a reload, a grant): each op is checked again alone and, when it may no longer
 * run, gets -EACCES as its status and runs not. */
static void run_checked_again(const BatchContext *ctx, Backend *b, BatchJob *job, size_t first, size_t end) {
        const RegOp *ops = job->req.ops;

        for (size_t i = first; i < end; i++) {
                Refusal refusal;

                if (batch_check_range(ctx, ops, i, i + 1, job->entries, &refusal) != 0) {
                        job->status[i] = -EACCES;
                        job->values[i] = 0;
                } else
                        batch_execute(ctx, b, &ops[i], &job->entries[i], 1, &job->status[i], &job->values[i]);
        }
}

/* One slice of a large batch: first the whole batch is checked, a slice per turn, then it
 * runs a slice per turn. */
static int batch_step(Server *s, Session *c, BatchJob *job, size_t *ret_ops, Refusal *ret_refusal) {
        BatchContext ctx = batch_context(s, c);
        const Request *req = &job->req;
        size_t first, end;
        int r;

        if (job->checked < req->n_ops) {
                first = job->checked;
                end = MIN(req->n_ops, first + PMUGATE_BATCH_CHECK_SLICE_OPS);
                *ret_ops = end - first;
                refusal_clear(ret_refusal);
                r = batch_check_range(&ctx, req->ops, first, end, job->entries, ret_refusal);
                if (r > 0)
                        return refuse_batch(s, c, req, ret_refusal);
                job->checked = end;
                return 0;
        }

        first = job->done;
        end = MIN(req->n_ops, first + PMUGATE_BATCH_SLICE_OPS);
        *ret_ops = end - first;
        if (job->generation != s->rights_generation)
                job->stale = true;
        if (job->stale)
                run_checked_again(&ctx, s->backend, job, first, end);
        else
                batch_execute(&ctx, s->backend, req->ops + first, job->entries + first, end - first,
                              job->status + first, job->values + first);
        job->done = end;
        r = pack_finished_parts(job);
        if (r < 0)
                return r;
        if (end < req->n_ops)
                return 0;
        account_batch(s, c, req);
        server_reply_adopt(s, job);
        job->finished = true;
        return 0;
}

int handle_batch(Server *s, Session *c, const Request *req, Refusal *ret_refusal) {
        BatchContext ctx = batch_context(s, c);
        int r;

        /* A user without any right learns that first; the job's scope is only looked up
         * for callers it applies to. */
        if (c->rights.may_read) {
                r = handler_resolve_scope(s, c, ret_refusal);
                if (r != 0)
                        return r;
        }
        /* Larger than a slice: checked and run a slice per turn, others served between. */
        if (req->n_ops > PMUGATE_BATCH_SLICE_OPS) {
                /* 1: every slot is taken, and the request waits for one, unanswered */
                r = server_batch_job_new(s, c, req, batch_step);
                return MIN(r, 0);
        }
        TRY(server_reserve_results(s, req->n_ops));
        r = batch_check(&ctx, req->ops, req->n_ops, s->entries, ret_refusal);
        if (r > 0)
                return refuse_batch(s, c, req, ret_refusal);

        batch_execute(&ctx, s->backend, req->ops, s->entries, req->n_ops, s->status, s->values);
        account_batch(s, c, req);
        return pack_results(s, req, s->status, s->values);
}

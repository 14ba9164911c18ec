#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter's floating-point operations through the real daemon, against the simulator's
profile truth: on Sapphire Rapids FP_ARITH_INST_RETIRED's eight events weighted by their lanes
(client/groups/FLOPS_DP.conf, FLOPS_SP.conf) as precision="double" and "single", taking turns
with TopDown (which stays the profile's); on Zen 4 fp_ret_sse_avx_ops.all, both precisions
together, as precision="all" (and no double or single series, not 0); per CPU, socket, node and
job, pmugate_exporter_quantity_counted and a job's summary (flops, flops_double, ...,
mflops_per_second); an FP event the simulator does not model leaves its precision uncounted
(no series), not short.

Bounds: the events are multiplexed with TopDown over 200 ms samples of the simulator's steady
workload; a ratio of two counters of the same interval (FLOPs per cycle, per instruction) is
the profile's within 1e-3 relative, TopDown within the exporter's usual 2/255."""

import json
import os
import sys

import pmugatetest as t
import exportertest as x
from exportertest import one, series

# FP_ARITH_INST_RETIRED per unhalted cycle (event 0xc7), test_package_groups.py's rates:
# umask -> (rate, precision, lanes)
FP = {0x01: (0.10, "double", 1), 0x02: (0.05, "single", 1), 0x04: (0.20, "double", 2),
      0x08: (0.03, "single", 4), 0x10: (0.30, "double", 4), 0x20: (0.07, "single", 8),
      0x40: (0.25, "double", 8), 0x80: (0.02, "single", 16)}
PER_CYCLE = {p: sum(r * lanes for r, q, lanes in FP.values() if q == p) for p in ("double", "single")}
PROFILE = dict(t.STENCIL, **{"event.0xc7.0x%02x" % u: v[0] for u, v in FP.items()})
# Zen 4: fp_ret_sse_avx_ops.all counts half of ex_ret_instr (docs/SIMULATOR.md)
ZEN_PER_INSTRUCTION = 0.5
HPC = dict(retiring=0.35, bad_speculation=0.06, frontend_bound=0.14, backend_bound=0.37, smt_contention=0.08,
           heavy_operations=0.04, branch_mispredicts=0.04, fetch_latency=0.09, memory_bound=0.25,
           ipc=1.5, utilization=0.95, user_fraction=0.9)


class SimNode(x.Node):
    """A daemon on a simulated node of one socket of 4 cores, no SMT, every CPU on profile."""

    def __init__(self, model, profile):
        self.model = model
        self.dir = t.workdir()
        self.conf = os.path.join(self.dir, "pmugate.conf")
        x.write_config(self.conf)
        self.sim = os.path.join(self.dir, "sim.conf")
        with open(self.sim, "w") as f:
            f.write("[machine]\nmodel = %s\nsockets = 1\ncores = 4\nsmt = no\n[clock]\nmode = realtime\n%s"
                    "[profile p]\n%s[cpus 0-3]\nprofile = p\n" % (
                        model, x.SIM_PACKAGE, "".join("%s = %r\n" % kv for kv in profile.items())))
        self.daemon = None
        self.start_daemon()

    def start_daemon(self):
        self.daemon = t.Daemon(self.dir, ["--backend=sim", "--sim-model=" + self.model, "--sim-config=" + self.sim],
                               config=self.conf)


def flops(m, prefix, precision, **labels):
    return one(m, prefix + "_flops_total", precision=precision, **labels)


def near(a, b, bound=1e-3):
    return a is not None and b and abs(a / b - 1) < bound


def check_job(tap, node, ex, model, precisions, truth):
    """A job on CPUs 1-2: its FLOPs series and its summary. truth(summary) -> expected FLOPs."""
    node.admin("grant", job="4711", uid=x.USER, cpus=[1, 2])
    ex.wait(lambda: series(ex.metrics(), "pmugate_job_cpus", jobid="4711"), "the job shows")
    ex.wait_samples(4)
    m = ex.metrics()
    got = {p: one(m, "pmugate_job_flops_total", jobid="4711", precision=p) for p in precisions}
    tap.ok(all(v and v > 0 for v in got.values()), "%s: the job's FLOPs by precision count" % model, got)
    node.admin("revoke", job="4711")
    status, _, body = ex.get("/jobs/4711")
    s = json.loads(body) if status == 200 else {}
    total = sum(s.get("flops_" + p) or 0 for p in precisions)
    tap.ok(s and s["flops"] and near(s["flops"], total, 1e-9) and near(s["flops"], truth(s)),
           "%s: the job's summary has its FLOPs, their sum over the precisions the profile's" % model, body)
    others = [k for k in ("flops_double", "flops_single", "flops_all") if k[6:] not in precisions]
    tap.ok(s and all(s.get(k, 0) is None for k in others),
           "%s: a precision the model does not count apart is null in the summary, not 0" % model, body)
    seconds = s["monitored_cpu_seconds"] / 2 if s else 0
    tap.ok(s and s["mflops_per_second"] and near(s["mflops_per_second"], 1e-6 * s["flops"] / seconds, 1e-6),
           "%s: and its MFLOP/s over the time it was counted" % model, body)


def test_spr(tap):
    node = SimNode("spr", PROFILE)
    ex = x.Exporter(node, ["--interval=200ms", "--per-cpu=yes"])
    try:
        ex.wait(lambda: ex.samples() >= 2, "spr: two samples")
        ex.wait_samples(5)
        m = ex.metrics()
        cycles = one(m, "pmugate_node_cycles_total")
        for p in ("double", "single"):
            got = flops(m, "pmugate_node", p) / cycles
            tap.ok(near(got, PER_CYCLE[p]), "spr: node %s FLOPs per cycle, FP_ARITH weighted by lanes, are the "
                   "profile's %g" % (p, PER_CYCLE[p]), got)
            got = flops(m, "pmugate_socket", p, socket="0") / one(m, "pmugate_socket_cycles_total", socket="0")
            tap.ok(near(got, PER_CYCLE[p]), "spr: socket 0's %s FLOPs too" % p, got)
            got = flops(m, "pmugate_cpu", p, cpu="3", socket="0") / \
                one(m, "pmugate_cpu_cycles_total", cpu="3", socket="0")
            tap.ok(near(got, PER_CYCLE[p]), "spr: CPU 3's %s FLOPs too (per-CPU series on)" % p, got)
        tap.ok(not series(m, "pmugate_node_flops_total", precision="all"),
               "spr: no precision=\"all\" series where the model splits the precisions")
        counted = {dict(k)["quantity"]: v for k, v in series(m, "pmugate_exporter_quantity_counted").items()}
        tap.eq((counted.get("flops_double"), counted.get("flops_single"), counted.get("flops_all")), (1, 1, 0),
               "spr: quantity_counted says double and single are counted, all is not")
        tap.ok(one(m, "pmugate_exporter_info", model="spr", backend="sim", topdown_level="2",
                   version=dict(next(k for k in m if k[0] == "pmugate_exporter_info")[1])["version"]) == 1,
               "spr: TopDown level 2 is still measured beside the FP events")
        got = {c: one(m, "pmugate_node_topdown_level1_slots_total", category=c) / one(m, "pmugate_node_slots_total")
               for c in ("frontend_bound", "bad_speculation", "backend_bound", "retiring")}
        bad = {c: (v, t.STENCIL[c]) for c, v in got.items() if abs(v - t.STENCIL[c]) > x.FRACTION_BOUND}
        tap.ok(not bad, "spr: and level 1 is the profile's within 2/255 with the FP events taking turns",
               bad or got)
        check_job(tap, node, ex, "spr", ("double", "single"),
                  lambda s: s["cycles"] * (PER_CYCLE["double"] + PER_CYCLE["single"]))
    finally:
        ex.stop()
        node.stop()


def test_zen4(tap):
    node = SimNode("zen4", HPC)
    ex = x.Exporter(node, ["--interval=200ms", "--per-cpu=yes"])
    try:
        ex.wait(lambda: ex.samples() >= 2, "zen4: two samples")
        ex.wait_samples(5)
        m = ex.metrics()
        got = flops(m, "pmugate_node", "all") / one(m, "pmugate_node_instructions_total")
        tap.ok(near(got, ZEN_PER_INSTRUCTION), "zen4: node FLOPs from fp_ret_sse_avx_ops.all are the "
               "simulator's, half the instructions", got)
        got = flops(m, "pmugate_cpu", "all", cpu="1", socket="0") / \
            one(m, "pmugate_cpu_instructions_total", cpu="1", socket="0")
        tap.ok(near(got, ZEN_PER_INSTRUCTION), "zen4: CPU 1's too", got)
        tap.ok(not [k for k in m if k[0].endswith("_flops_total") and dict(k[1]).get("precision") != "all"],
               "zen4: no double or single series (the event counts both together), not 0")
        counted = {dict(k)["quantity"]: v for k, v in series(m, "pmugate_exporter_quantity_counted").items()}
        tap.eq((counted.get("flops_double"), counted.get("flops_single"), counted.get("flops_all")), (0, 0, 1),
               "zen4: quantity_counted says all is counted, double and single are not")
        check_job(tap, node, ex, "zen4", ("all",), lambda s: s["instructions"] * ZEN_PER_INSTRUCTION)
    finally:
        ex.stop()
        node.stop()


def test_unknown_event(tap):
    """A profile without FP_ARITH_INST_RETIRED.512B_PACKED_SINGLE: the simulator does not model
    it (its count is unknown, not 0), so single precision is not counted at all, never short by
    that event's share; double is counted."""
    node = SimNode("spr", {k: v for k, v in PROFILE.items() if k != "event.0xc7.0x80"})
    ex = x.Exporter(node, ["--interval=200ms"])
    try:
        ex.wait(lambda: ex.samples() >= 2, "spr: two samples")
        ex.wait_samples(4)
        m = ex.metrics()
        tap.ok(not series(m, "pmugate_node_flops_total", precision="single") and
               near(flops(m, "pmugate_node", "double") / one(m, "pmugate_node_cycles_total"), PER_CYCLE["double"]),
               "spr: an FP event not modelled leaves single precision without series (not short), double counted")
        counted = {dict(k)["quantity"]: v for k, v in series(m, "pmugate_exporter_quantity_counted").items()}
        tap.eq((counted.get("flops_double"), counted.get("flops_single")), (1, 0),
               "spr: and quantity_counted says so")
    finally:
        ex.stop()
        node.stop()


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    return tap.run([test_spr, test_zen4, test_unknown_event])


sys.exit(main())

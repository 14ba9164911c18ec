#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""UOPS_RETIRED.MS through the real daemon and CLI on the simulated Sapphire, Emerald and Granite
Rapids, with the counters through the registers (--counters=msr) and through perf
(--counters=perf).

perf's sapphirerapids and emeraldrapids lists encode the event as 0xC2 umask 0x04 with
MSR_PEBS_FRONTEND = 0x8 (libpfm4 4.13 has umask 0x08); without that facet the event select counts
something else. The simulator counts microcode-sequencer uops (30 % of heavy operations) only
with the facet set. Through perf, the event carries the kernel's frontend field and the
simulated kernel sets the register: tma_microcode_sequencer (UOPS_RETIRED.MS / SLOTS) reads
0.3 * heavy operations, and the count per cycle 0.3 * h * 6 slots. Through the registers,
which pmugated never lets write MSR_PEBS_FRONTEND, the event is not programmed and its nodes are
null with the reason, and asked for by name it is refused, never a count of another facet.
Ice Lake-SP's files use IDQ.MS_UOPS, which needs no facet: counted both ways."""

import json
import os

import pmugatetest as t

HEAVY, MS_SHARE, WIDTH = 0.40, 0.30, 6
# heavy operations the largest level-2 node, so that --drilldown measures its children
PROFILE = dict(t.STENCIL, retiring=0.50, heavy_operations=HEAVY, backend_bound=0.20, memory_bound=0.10)
BOUND = 1e-3


def sim(model, counters):
    s = t.Sim(model, smt=False, rules=[("0-3", PROFILE)])
    if counters != "msr":
        s.daemon.stop()
        s.daemon = t.Daemon(s.dir, ["--backend=sim", "--sim-model=" + model,
                                    "--sim-config=" + os.path.join(s.dir, "sim.conf"), "--counters=" + counters])
    return s


def check(tap, model, counters):
    s = sim(model, counters)
    try:
        r = s.json("topdown", "-l", "3", "--drilldown", "-c", "0-1", "-S", "1s", "-O", "json")
        nodes = {m["name"]: m for m in r["metrics"]}
        agg = r["aggregate"]
        got, node = agg["metrics"].get("tma_microcode_sequencer"), nodes.get("tma_microcode_sequencer", {})
        tap.eq(r["drilldown"], ["tma_heavy_operations"], "%s %s: drilled into Heavy Operations" % (model, counters))
        if model == "icx" or counters == "perf":
            tap.ok(got is not None and abs(got - MS_SHARE * HEAVY) <= BOUND,
                   "%s %s: tma_microcode_sequencer reads %.2f within %g" % (model, counters, MS_SHARE * HEAVY, BOUND),
                   (got, node.get("unavailable")))
        else:
            why = node.get("unavailable") or ""
            tap.ok(got is None and "MSR_PEBS_FRONTEND" in why and "perf" in why and
                   "UOPS_RETIRED.MS" not in agg["counts"],
                   "%s msr: tma_microcode_sequencer is null, its event not programmed, with the reason" % model,
                   (got, why, sorted(agg["counts"])))
        if model == "icx":
            return
        rc, out, err = s.run("stat", "-e", "UOPS_RETIRED.MS,CPU_CLK_UNHALTED.THREAD", "-c", "0", "-S", "0.3s",
                             "-O", "json")
        if counters == "perf":
            counts = json.loads(out)["aggregate"]["counts"] if rc == 0 else {}
            ms, clk = (counts.get(e, {}).get("value") for e in ("UOPS_RETIRED.MS", "CPU_CLK_UNHALTED.THREAD"))
            want = MS_SHARE * HEAVY * WIDTH
            tap.ok(ms and clk and abs(ms / clk - want) <= BOUND * want,
                   "%s perf: UOPS_RETIRED.MS counts %.2f per cycle, with the facet set" % (model, want), (rc, err, counts))
        else:
            tap.ok(rc == 1 and "UOPS_RETIRED.MS needs MSR_PEBS_FRONTEND = 0x8, which pmugated never writes" in err
                   and not out, "%s msr: stat -e UOPS_RETIRED.MS is refused with the reason" % model, (rc, out, err))
    finally:
        s.stop()


def test_sapphire_rapids(tap):
    for counters in ("msr", "perf"):
        check(tap, "spr", counters)


def test_emerald_rapids(tap):
    for counters in ("msr", "perf"):
        check(tap, "emr", counters)


def test_granite_rapids(tap):
    """The generated Granite Rapids files keep the formula (contrib/tma/gen-topdown.py leaves
    UOPS_RETIRED.MS to the client), so the same holds there."""
    for counters in ("msr", "perf"):
        check(tap, "gnr", counters)


def test_ice_lake(tap):
    for counters in ("msr", "perf"):
        check(tap, "icx", counters)


if __name__ == "__main__":
    raise SystemExit(t.Tap().run([test_sapphire_rapids, test_emerald_rapids, test_granite_rapids, test_ice_lake]))

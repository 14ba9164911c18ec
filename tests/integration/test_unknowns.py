#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Unknown is never 0: on the simulated PMU, a command shorter than one rotation of the event
sets leaves some events without a counter; every node that needs one of them is n/a with the
reason (table footer, JSON metrics_na), whatever function its formula puts the unknown through
(perf's max(0, a - b) for the difference nodes), and the nodes whose events were all counted
keep their values."""

import json
import sys

import pmugatetest as t

Sim = t.Sim
STENCIL = t.STENCIL
L2_DIFFERENCES = ["tma_fetch_bandwidth", "tma_machine_clears", "tma_core_bound"]
# each difference node and the sibling it subtracts
SIBLING = {"tma_fetch_bandwidth": "tma_fetch_latency", "tma_machine_clears": "tma_branch_mispredicts",
           "tma_core_bound": "tma_memory_bound"}
REASON = "not counted long enough"


def short_run(sim, level, fmt):
    rc, out, err = sim.run("topdown", "-l", str(level), "-C", "0", "-O", fmt, "--", "sleep", "0.05")
    if rc != 0:
        raise AssertionError("pmugate topdown: exit %d: %s" % (rc, err))
    return out + err


def parse_json(text):
    return json.loads(text[text.index("{"):text.rindex("}") + 1])


def test_ice_lake_differences(tap):
    """icx level 2: the level-2 counters take turns; in 50 ms the first set alone counted."""
    sim = Sim("icx", rules=[("0-7", STENCIL)])
    try:
        r = parse_json(short_run(sim, 2, "json"))
        for row in [r["aggregate"]] + r["per_cpu"]:
            values, na = row["metrics"], row["metrics_na"]
            for node in L2_DIFFERENCES:
                if values[SIBLING[node]] is None:
                    tap.ok(values[node] is None, "icx: %s is n/a like %s, not %r" % (node, SIBLING[node], values[node]))
                    tap.ok(REASON in na.get(node, ""), "icx: %s says why it is n/a" % node, repr(na.get(node)))
            tap.ok(all(values[m] is not None for m in ("tma_frontend_bound", "tma_bad_speculation",
                                                        "tma_backend_bound", "tma_retiring")),
                   "icx: level 1 (PERF_METRICS, always counted) keeps its values", repr(values))
            tap.ok(all(v is None for k, v in values.items() if k in na) and
                   all(k in na for k, v in values.items() if v is None),
                   "icx: metrics_na names exactly the n/a nodes", repr(na))
        tap.ok(any(r["aggregate"]["metrics"][SIBLING[n]] is None for n in L2_DIFFERENCES),
               "icx: the 50 ms run left a level-2 set uncounted (the case under test)")
        text = short_run(sim, 2, "table")
        for label in ("Fetch Bandwidth", "Machine Clears", "Core Bound"):
            line = next((x for x in text.splitlines() if x.strip().startswith(label)), "")
            tap.ok("0.0 %" not in line, "icx table: %s is not printed as 0.0 %%" % label, line)
        tap.ok(" n/a: " in text and REASON in text, "icx table: the footer says why nodes are n/a", text)
    finally:
        sim.stop()


def test_skylake_smt_short(tap):
    """skx with SMT on: level 1 takes turns on four counters per thread. A 50 ms command gives
    n/a for the nodes that need a rotated event, not for all: the events every node needs are
    in the first set."""
    sim = Sim("skx", rules=[("0-7", STENCIL)])
    try:
        for level in (1, 2):
            r = parse_json(short_run(sim, level, "json"))
            values, na = r["aggregate"]["metrics"], r["aggregate"]["metrics_na"]
            known = [k for k, v in values.items() if v is not None]
            unknown = [k for k, v in values.items() if v is None]
            tap.ok(known, "skx SMT on, -l %d, 50 ms: some nodes have values" % level, repr(values))
            tap.ok(unknown and all(REASON in na.get(k, "") for k in unknown),
                   "skx SMT on, -l %d, 50 ms: the others are n/a, not counted long enough" % level, repr(na))
            if "tma_retiring" in known:
                tap.ok(abs(values["tma_retiring"] / 100 - STENCIL["retiring"]) < 1e-3,
                       "skx SMT on, -l %d: a node with all its events counted is right" % level,
                       repr(values["tma_retiring"]))
    finally:
        sim.stop()


NOT_MODELLED = ["FP_ARITH_INST_RETIRED.SCALAR_DOUBLE", "MEM_LOAD_RETIRED.L3_MISS"]


def test_not_modelled(tap):
    """Events the simulator has no model of count 0 there: pmugate says <not modelled> (as perf
    says <not supported>) instead of printing 0, in every format, and a metric that uses one
    is n/a with that reason. An extra event a profile lists is modelled (on every CPU: the
    simulator's list is the node's) and counts where that profile runs."""
    extra = dict(STENCIL)
    extra["event.0xd1.0x01"] = 0.4          # MEM_LOAD_RETIRED.L1_HIT on Skylake-SP
    sim = Sim("skx", rules=[("0-1,4-5", STENCIL), ("2-3,6-7", extra)])
    try:
        events = ",".join(NOT_MODELLED + ["UOPS_ISSUED.ANY", "INST_RETIRED.ANY", "MEM_LOAD_RETIRED.L1_HIT"])
        rc, out, err = sim.run("stat", "-e", events, "-c", "0", "-S", "0.1s")
        err = out + err
        for e in NOT_MODELLED:
            line = next((x for x in err.splitlines() if x.rstrip().endswith(" " + e)), "")
            tap.ok("<not modelled>" in line, "skx table: %s is <not modelled>, not 0" % e, line)
        line = next((x for x in err.splitlines() if x.rstrip().endswith(" UOPS_ISSUED.ANY")), "")
        tap.ok(rc == 0 and "<not modelled>" not in line and "," in line,
               "skx table: a modelled event keeps its count", line)

        r = sim.json("stat", "-e", events, "-c", "0,2", "-S", "0.1s", "-O", "json")
        cpu0, cpu2 = r["per_cpu"]
        for e in NOT_MODELLED[:1]:
            c = cpu0["counts"][e]
            tap.ok(c.get("not_modelled") is True and c["value"] is None,
                   "skx JSON: %s is not_modelled with a null value" % e, repr(c))
        tap.ok("not_modelled" not in cpu0["counts"]["INST_RETIRED.ANY"],
               "skx JSON: a fixed-counter event is never marked", repr(cpu0["counts"]["INST_RETIRED.ANY"]))
        tap.ok("not_modelled" not in cpu2["counts"]["MEM_LOAD_RETIRED.L1_HIT"] and
               (cpu2["counts"]["MEM_LOAD_RETIRED.L1_HIT"]["value"] or 0) > 0,
               "skx JSON: an extra event a profile lists is modelled and counts",
               repr(cpu2["counts"]["MEM_LOAD_RETIRED.L1_HIT"]))

        rc, out, err = sim.run("stat", "-e", events, "-c", "0", "-S", "0.1s", "-O", "csv")
        rows = [x.split(",") for x in out.splitlines()]
        row = next((x for x in rows if len(x) > 5 and x[4] == NOT_MODELLED[0] and x[2] == "0"), None)
        tap.ok(row is not None and row[5] == "<not modelled>", "skx CSV: the value column says <not modelled>",
               repr(row))

        r = sim.json("stat", "-g", "FLOPS_DP", "-c", "0", "-S", "0.1s", "-O", "json")
        m = {x["name"]: x for x in r["metrics"]}
        tap.ok(r["aggregate"]["metrics"]["dp_mflops"] is None and
               "not modelled" in (m["dp_mflops"]["unavailable"] or ""),
               "skx FLOPS_DP: DP [MFLOP/s] is n/a because its events are not modelled, not 0",
               repr((r["aggregate"]["metrics"]["dp_mflops"], m["dp_mflops"]["unavailable"])))
        tap.ok(r["aggregate"]["metrics"]["cpi"] is not None, "skx FLOPS_DP: CPI (modelled events) has its value")
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_ice_lake_differences, test_skylake_smt_short, test_not_modelled]))

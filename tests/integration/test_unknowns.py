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


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_ice_lake_differences, test_skylake_smt_short]))

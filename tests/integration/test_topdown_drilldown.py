#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate topdown --drilldown through the real daemon and CLI on the simulated Sapphire Rapids.

The profile makes Fetch Latency the largest level-2 node (0.40 of the slots) and gives three of
its level-3 children's events known rates per unhalted cycle (tma_icache_misses 0.08,
tma_dsb_switches 0.03, tma_lcp 0.02). `topdown -l 3 --drilldown` first runs level 2 alone,
finds Fetch Latency, and then measures at level 3 only its children: their events, and no
event only another node's children use, are programmed (the JSON's counts are the programmed
events), fewer events than the whole level 3 in fewer event sets, the measured nodes within the
bound docs/TOPDOWN.md states for a multiplexed count over the cycles, every other level-3 node
null with the reason "not drilled into" (never 0) in JSON, "<not drilled into>" in CSV, and
n/a in the table. --drilldown with level 1 or 2, or with stat, is refused."""

import json
import os

import pmugatetest as t

RATIO_BOUND = 1e-3
ICACHE, DSB2MITE, LCP = 0.08, 0.03, 0.02
NODES = {"tma_icache_misses": ICACHE, "tma_dsb_switches": DSB2MITE, "tma_lcp": LCP}
# (code, umask) on Sapphire Rapids, as in test_topdown_deep.py
EVENTS = {"ICACHE_DATA.STALLS": ((0x80, 0x04), ICACHE), "DSB2MITE_SWITCHES.PENALTY_CYCLES": ((0x61, 0x02), DSB2MITE),
          "DECODE.LCP": ((0x87, 0x01), LCP)}
LARGEST_L2 = "tma_fetch_latency"
NOT_DRILLED = "not drilled into"


def profile():
    p = dict(t.STENCIL, retiring=0.25, frontend_bound=0.45, fetch_latency=0.40, backend_bound=0.20,
             memory_bound=0.10)
    for (code, umask), rate in EVENTS.values():
        p["event.0x%02x.0x%02x" % (code, umask)] = rate
    return p


def children(r, parent):
    return {m["name"] for m in r["metrics"] if m["parent"] == parent}


def check_level3(tap, sim):
    full = sim.json("topdown", "-l", "3", "-c", "0-1", "-S", "2s", "-O", "json")
    rc, out, err = sim.run("topdown", "-l", "3", "--drilldown", "-c", "0-1", "-S", "2s", "-O", "json")
    tap.ok(rc == 0, "topdown -l 3 --drilldown runs", err)
    r = t.fractions(json.loads(out))
    tap.ok("level 2's largest node is %s" % LARGEST_L2 in err, "it says which level-2 node it drills into", err)
    tap.eq(r["drilldown"], [LARGEST_L2], "JSON names the node drilled into")
    tap.eq(full["drilldown"], None, "without --drilldown, \"drilldown\" is null")
    agg = r["aggregate"]
    level = {m["name"]: m for m in r["metrics"]}
    kids = children(r, LARGEST_L2)
    measured = {n for n, m in level.items() if m["level"] == 3 and m["unavailable"] != NOT_DRILLED}
    tap.eq(measured, kids, "at level 3 exactly the children of %s are measured" % LARGEST_L2)
    left = [m for m in r["metrics"] if m["level"] == 3 and m["parent"] != LARGEST_L2]
    tap.ok(left and all(m["unavailable"] == NOT_DRILLED and agg["metrics"][m["name"]] is None for m in left),
           "the %d other level-3 nodes are null, 'not drilled into'" % len(left),
           [(m["name"], m["unavailable"], agg["metrics"][m["name"]]) for m in left if
            m["unavailable"] != NOT_DRILLED or agg["metrics"][m["name"]] is not None])
    tap.ok(all(m["unavailable"] is None or m["unavailable"].startswith("not modelled")
               for m in r["metrics"] if m["level"] <= 2),
           "levels 1 and 2 are measured whole")
    for node, want in NODES.items():
        got = agg["metrics"][node]
        tap.ok(got is not None and abs(got - want) <= RATIO_BOUND,
               "%s reads the profile's rate %.2f within %g" % (node, want, RATIO_BOUND), "got %r" % got)
    # the events programmed: the counts are those of the programmed events only
    events, all_events = set(agg["counts"]), set(full["aggregate"]["counts"])
    tap.ok(events < all_events and len(events) < len(all_events),
           "fewer events programmed: %d of level 3's %d" % (len(events), len(all_events)))
    tap.ok(set(EVENTS) <= events, "the drilled nodes' events are programmed", sorted(events))
    for name in ("MEM_LOAD_RETIRED.L1_MISS", "ARITH.DIV_ACTIVE", "EXE_ACTIVITY.BOUND_ON_STORES"):
        tap.ok(name in all_events and name not in events,
               "%s (only nodes not drilled into use it) is not programmed" % name)
    tap.ok(r["event_sets"] < full["event_sets"],
           "fewer event sets take turns: %d, not %d" % (r["event_sets"], full["event_sets"]))
    # the same in the table and CSV
    rc, out, err = sim.run("topdown", "-l", "3", "--drilldown", "-c", "0", "-S", "1s")
    tap.ok(rc == 0 and "drilled into %s" % LARGEST_L2 in out and "n/a: tma_divider not drilled into" in out,
           "the table names the node drilled into and says why the others are n/a", out[-3000:] + err)
    rc, out, err = sim.run("topdown", "-l", "3", "--drilldown", "-c", "0", "-S", "1s", "-O", "csv")
    rows = [x.split(",") for x in out.splitlines()]
    header = rows[0] if rows else []
    name, value = (header.index("name"), header.index("value")) if "value" in header else (0, 0)
    divider = [x for x in rows if len(x) > value and x[name] == "tma_divider"]
    icache = [x for x in rows if len(x) > value and x[name] == "tma_icache_misses"]
    tap.ok(rc == 0 and divider and all(x[value] == "<not drilled into>" for x in divider) and icache and
           all(abs(float(x[value]) / 100 - ICACHE) <= RATIO_BOUND for x in icache),
           "CSV: '<not drilled into>' for a node left out, the value for a measured one", out[:2000] + err)


def check_jsonl(tap, sim):
    """-I applies to the last run: every JSON line names the drilldown and says why a node is null."""
    rc, out, err = sim.run("topdown", "-l", "3", "--drilldown", "-c", "0", "-I", "500ms", "-S", "1.5s", "-O", "jsonl")
    lines = [json.loads(x) for x in out.splitlines() if x.strip()] if rc == 0 else []
    tap.ok(len(lines) >= 2 and all(x["drilldown"] == [LARGEST_L2] and x["aggregate"]["metrics"]["tma_divider"] is None
                                   and x["aggregate"]["metrics_na"].get("tma_divider") == NOT_DRILLED for x in lines),
           "jsonl: each interval names the drilldown, and a node left out is null, 'not drilled into'",
           (rc, err, out[:1500]))


def check_level4(tap, sim):
    full = sim.json("topdown", "-l", "4", "-c", "0", "-S", "2s", "-O", "json")
    rc, out, err = sim.run("topdown", "-l", "4", "--drilldown", "-c", "0", "-S", "2s", "-O", "json")
    tap.ok(rc == 0, "topdown -l 4 --drilldown runs", err)
    r = t.fractions(json.loads(out))
    drill = r["drilldown"]
    tap.ok(len(drill) == 2 and drill[0] == LARGEST_L2, "level 4: drilled into %s, then %r" % (LARGEST_L2, drill))
    level3 = {m["name"]: r["aggregate"]["metrics"][m["name"]] for m in r["metrics"]
              if m["parent"] == LARGEST_L2 and r["aggregate"]["metrics"][m["name"]] is not None}
    tap.ok(len(drill) == 2 and level3 and drill[1] == max(level3, key=level3.get),
           "the level-3 node drilled into is the largest child of %s" % LARGEST_L2, level3)
    # a node pmugate cannot count at all (offcore-response, the TSC) keeps that reason
    left4 = {m["name"] for m in r["metrics"] if m["level"] == 4 and m["unavailable"] == NOT_DRILLED}
    level4 = {m["name"] for m in r["metrics"] if m["level"] == 4}
    kids = children(r, drill[1]) if len(drill) == 2 else set()
    cannot = {m["name"] for m in full["metrics"] if m["level"] == 4 and m["unavailable"] and
              not m["unavailable"].startswith("not modelled")}
    tap.ok(kids and left4 == level4 - kids - cannot and all(r["aggregate"]["metrics"][n] is None for n in left4),
           "at level 4 only the children of %s are measured" % (drill[1:] or ["?"])[0], level4 - left4)
    tap.ok(len(r["aggregate"]["counts"]) < len(full["aggregate"]["counts"]),
           "level 4: %d events programmed, not %d" % (len(r["aggregate"]["counts"]),
                                                       len(full["aggregate"]["counts"])))


def refusals(tap, sim):
    for args, why in ((["topdown", "-l", "1", "--drilldown", "-S", "1s"], "-l 3 or -l 4"),
                      (["topdown", "-l", "2", "--drilldown", "-S", "1s"], "-l 3 or -l 4"),
                      (["topdown", "-l", "3", "--drilldown", "-c", "0"], "give a COMMAND or -S"),
                      (["stat", "-e", "cycles", "--drilldown", "-S", "1s"], "pmugate topdown")):
        rc, out, err = sim.run(*args)
        tap.ok(rc == 2 and why in err and not out, "refused: pmugate %s" % " ".join(args), (rc, out, err))


def wrapper(tap, sim):
    """With a command, as toplev, the command runs once per level: twice for level 3."""
    rc, out, err = sim.run("topdown", "-l", "3", "--drilldown", "-C", "0", "-O", "json", "--",
                           "sh", "-c", "echo ran; sleep 0.5")
    r = json.loads(err[err.index("{"):]) if "{" in err else {}
    tap.ok(rc == 0 and out.count("ran") == 2 and r.get("drilldown") == [LARGEST_L2],
           "wrapper mode: the command runs for level 2, then for level 3 drilled", (rc, out, err[-1500:]))
    rc, out, err = sim.run("topdown", "-l", "3", "--drilldown", "-C", "0", "--", "sh", "-c", "echo ran; exit 3")
    tap.ok(rc == 3 and out.count("ran") == 1 and "'sh' exited with status 3 in the run measuring level 2" in err,
           "wrapper mode: a command that fails in the level-2 run ends the drilldown with its status", (rc, out, err))


def test_drilldown(tap):
    sim = t.Sim("spr", rules=[("0-7", profile())])
    try:
        check_level3(tap, sim)
        check_jsonl(tap, sim)
        check_level4(tap, sim)
        refusals(tap, sim)
        wrapper(tap, sim)
    finally:
        sim.stop()


def test_perf_path(tap):
    """Through perf a whole level 3 exceeds one perf_open and is refused; drilled, it fits."""
    sim = t.Sim("spr", rules=[("0-7", profile())])
    sim.daemon.stop()
    sim.daemon = t.Daemon(sim.dir, ["--backend=sim", "--sim-model=spr",
                                    "--sim-config=" + os.path.join(sim.dir, "sim.conf"), "--counters=perf"])
    try:
        rc, out, err = sim.run("topdown", "-l", "3", "-c", "0", "-S", "0.5s", "-O", "json")
        tap.ok(rc == 1 and "one perf_open holds" in err, "perf path: a whole level 3 does not fit one perf_open", err)
        rc, out, err = sim.run("topdown", "-l", "4", "--drilldown", "-c", "0", "-S", "1s", "-O", "json")
        r = t.fractions(json.loads(out)) if rc == 0 else {}
        got = (r.get("aggregate") or {}).get("metrics", {}).get("tma_icache_misses")
        tap.ok(rc == 0 and r["drilldown"][0] == LARGEST_L2 and got is not None and abs(got - ICACHE) <= RATIO_BOUND,
               "perf path: -l 4 --drilldown fits and reads tma_icache_misses within the bound", (rc, err, got))
    finally:
        sim.stop()


if __name__ == "__main__":
    raise SystemExit(t.Tap().run([test_drilldown, test_perf_path]))

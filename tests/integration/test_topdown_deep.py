#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""TopDown levels 3 and 4 (the group files contrib/tma/gen-topdown.py writes from perf's metric
JSON) through the real daemon and CLI on the simulated PMU of Ice Lake-SP and Sapphire Rapids.

The simulator counts the level-1/2 events from its profile; a profile's extra events
(docs/SIMULATOR.md, event.0xEE.0xUU) give level-3 events known rates per unhalted cycle. A
level-3 node that is such an event over the unhalted cycles (tma_icache_misses,
tma_dsb_switches, tma_lcp) must then read that rate: the event is multiplexed and scaled by
the time its set counted, the cycles come from a fixed counter, so on the simulator's steady
workload the node is within RATIO_BOUND of the rate (docs/TOPDOWN.md, "Levels 3 and 4"). A node
using an event the simulator does not model (it would count 0) is n/a, "not modelled"; hello's
sim_events says which encodings the simulator counts."""

import os
import tempfile

import pmugatetest as t

RATIO_BOUND = 1e-3
ICACHE, DSB2MITE, LCP = 0.08, 0.03, 0.02
# (code, umask) of the events, from perf's event lists as pmugate resolves them
EVENTS = {
    "icx": {"ICACHE_DATA.STALLS": (0x80, 0x04), "DSB2MITE_SWITCHES.PENALTY_CYCLES": (0xab, 0x02),
            "DECODE.LCP": (0x87, 0x01)},
    "spr": {"ICACHE_DATA.STALLS": (0x80, 0x04), "DSB2MITE_SWITCHES.PENALTY_CYCLES": (0x61, 0x02),
            "DECODE.LCP": (0x87, 0x01)},
}
RATES = {"ICACHE_DATA.STALLS": ICACHE, "DSB2MITE_SWITCHES.PENALTY_CYCLES": DSB2MITE, "DECODE.LCP": LCP}
NODES = {"tma_icache_misses": ICACHE, "tma_dsb_switches": DSB2MITE, "tma_lcp": LCP}
L3 = {"icx": 26, "spr": 29}
L4 = {"icx": 41, "spr": 45}


def profile(model):
    p = dict(t.STENCIL)
    for name, (code, umask) in EVENTS[model].items():
        p["event.0x%02x.0x%02x" % (code, umask)] = RATES[name]
    return p


def check_level3(tap, model, sim):
    r = sim.json("topdown", "-l", "3", "-c", "0-1", "-S", "2s", "-O", "json")
    metrics = {m["name"]: m for m in r["metrics"]}
    tap.eq(sum(1 for m in r["metrics"] if m["level"] == 3), L3[model],
           "%s: topdown -l 3 reports perf's %d level-3 nodes" % (model, L3[model]))
    tap.ok(all(m["parent"] and metrics[m["parent"]]["level"] == 2 for m in r["metrics"] if m["level"] == 3),
           "%s: every level-3 node has a level-2 parent" % model)
    tap.ok(r["event_sets"] > 1, "%s: level 3 takes turns in %d event sets" % (model, r["event_sets"]))
    agg = r["aggregate"]
    for node, want in NODES.items():
        got = agg["metrics"][node]
        tap.ok(got is not None and abs(got - want) <= RATIO_BOUND,
               "%s: %s reads the profile's rate %.2f within %g" % (model, node, want, RATIO_BOUND),
               "got %r" % got)
        scale = agg["metrics_scale"][node]
        tap.ok(scale is not None and scale > 1.5, "%s: %s reports its multiplexing scale (%r)" % (model, node, scale))
    tap.ok(agg["metrics_scale"]["tma_retiring"] == 1.0 or model == "icx",
           "%s: a PERF_METRICS node is never scaled" % model, agg["metrics_scale"])
    tap.eq(agg["thresholds"].get("tma_icache_misses"), True,
           "%s: tma_icache_misses %.2f crosses perf's threshold (> 0.05 under Fetch Latency > 0.1)" % (model, ICACHE))
    tap.eq(agg["thresholds"].get("tma_dsb_switches"), False,
           "%s: tma_dsb_switches %.2f does not cross its threshold (> 0.05)" % (model, DSB2MITE))
    tap.ok(all(not m["estimate"] for m in r["metrics"]), "%s: no node is an estimate" % model)
    # the divider's event has no rate in the simulator: not 0, but n/a with the reason, and the
    # event itself is not counted
    div = metrics["tma_divider"]
    event = (div["unavailable"] or "").split(" ")[-1]
    tap.ok(div["unavailable"] and div["unavailable"].startswith("not modelled") and
           agg["metrics"]["tma_divider"] is None and event in agg["counts"] and
           agg["counts"][event]["value"] is None,
           "%s: a node whose event the simulator does not model is null, 'not modelled'" % model,
           (div, agg["metrics"]["tma_divider"], agg["counts"].get(event)))
    tap.ok(metrics["tma_icache_misses"]["unavailable"] is None,
           "%s: a node whose events the profile gives rates is modelled" % model)
    for cpu in r["per_cpu"]:
        got = cpu["metrics"]["tma_icache_misses"]
        tap.ok(got is not None and abs(got - ICACHE) <= RATIO_BOUND,
               "%s: tma_icache_misses on CPU %d within the bound" % (model, cpu["cpu"]), "got %r" % got)

    rc, out, err = sim.run("topdown", "-l", "3", "-c", "0", "-S", "1s")
    line = [x for x in out.splitlines() if x.rstrip().split("  ")[-1:] and " tma_icache_misses " in x + " "]
    tap.ok(rc == 0 and line and "<==" in line[0] and "%)" in line[0],
           "%s: the table marks the node over its threshold and shows its share of the time" % model,
           out[:3000] + err)
    tap.ok("n/a: tma_divider not modelled: the simulator does not count " in out,
           "%s: the table says why a node is n/a on the simulator" % model, out[-3000:])


def check_level4(tap, model, sim):
    r = sim.json("stat", "-g", "topdown-l4", "-c", "0", "-S", "1s", "-O", "json")
    metrics = {m["name"]: m for m in r["metrics"]}
    tap.eq(sum(1 for m in r["metrics"] if m["level"] == 4), L4[model],
           "%s: stat -g topdown-l4 reports perf's %d level-4 nodes" % (model, L4[model]))
    gone = metrics["tma_false_sharing"]
    tap.ok(gone["unavailable"] and "offcore" in gone["unavailable"] and
           r["aggregate"]["metrics"]["tma_false_sharing"] is None,
           "%s: a node pmugate cannot count is null with the reason, not 0" % model, gone)
    # 0.3 s is a few of the 100 ms turns: some sets never count, and their nodes are n/a, not
    # 0 (muparser's max(0, NaN) would give 0)
    r = sim.json("topdown", "-l", "4", "-c", "0", "-S", "0.3s", "-O", "json")
    agg = r["aggregate"]
    never = [n for n, s in agg["metrics_scale"].items() if s is None]
    tap.ok(never and all(agg["metrics"][n] is None for n in never),
           "%s: the %d nodes whose events never ran are null" % (model, len(never)),
           {n: agg["metrics"][n] for n in never})
    rc, out, err = sim.run("topdown", "-l", "4", "-c", "0", "-S", "0.5s")
    tap.ok(rc == 0 and "n/a: tma_false_sharing uses the offcore-response event" in out,
           "%s: the table says why the node is n/a" % model, out[-2000:] + err)


def estimates(tap, sim):
    """A node computed with published retire latencies (Granite Rapids' level 4) is marked in
    every output; the daemon has no Granite Rapids yet, so a group of the same form on spr."""
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "spr"))
        with open(os.path.join(d, "spr", "retlat.conf"), "w") as f:
            f.write("[group]\nevents = ICACHE_DATA.STALLS CPU_CLK_UNHALTED.THREAD\n"
                    "[metric tma_code_l2_miss]\nunit = %\nestimate = retire-latency\n"
                    "formula = ICACHE_DATA.STALLS * 137 / CPU_CLK_UNHALTED.THREAD / 1000\n"
                    "[metric measured]\nunit = %\nformula = ICACHE_DATA.STALLS / CPU_CLK_UNHALTED.THREAD\n")
        env = {"PMUGATE_GROUP_PATH": d + ":" + t.GROUPS}
        rc, out, err = sim.run("stat", "-g", "retlat", "-c", "0", "-S", "0.3s", env=env)
        rows = {x.split()[-1] if "(estimate)" not in x else "tma_code_l2_miss": x for x in out.splitlines()
                if "tma_code_l2_miss" in x or " measured" in x}
        tap.ok(rc == 0 and "(estimate)" in rows.get("tma_code_l2_miss", "") and
               "(estimate)" not in rows.get("measured", "x (estimate)"),
               "spr: the table marks the estimated node only", out + err)
        rc, out, err = sim.run("stat", "-g", "retlat", "-c", "0", "-S", "0.3s", "-O", "csv", env=env)
        lines = out.splitlines()
        est = [x for x in lines if ",metric,tma_code_l2_miss," in x]
        meas = [x for x in lines if ",metric,measured," in x]
        header = lines[0].split(",") if lines else []
        column = header.index("estimate") if "estimate" in header else -1
        tap.ok(rc == 0 and column > 0 and est and all(x.split(",")[column] == "1" for x in est)
               and meas and all(x.split(",")[column] == "" for x in meas),
               "spr: CSV has an estimate column, 1 for the estimated node only", out[:1500] + err)
        r = t.fractions(__import__("json").loads(sim.run("stat", "-g", "retlat", "-c", "0", "-S", "0.3s",
                                                         "-O", "json", env=env)[1]))
        flags = {m["name"]: m["estimate"] for m in r["metrics"]}
        tap.eq(flags, {"tma_code_l2_miss": True, "measured": False}, "spr: JSON marks \"estimate\": true")


def test_sapphire_rapids(tap):
    sim = t.Sim("spr", rules=[("0-7", profile("spr"))])
    try:
        check_level3(tap, "spr", sim)
        check_level4(tap, "spr", sim)
        estimates(tap, sim)
    finally:
        sim.stop()


def test_ice_lake(tap):
    sim = t.Sim("icx", rules=[("0-7", profile("icx"))])
    try:
        check_level3(tap, "icx", sim)
        check_level4(tap, "icx", sim)
        r = sim.json("topdown", "-l", "3", "-c", "0", "-S", "0.5s", "-O", "json")
        seq = [m for m in r["metrics"] if m["name"] == "tma_microcode_sequencer"]
        tap.ok(seq and seq[0]["level"] == 3 and seq[0]["parent"] == "tma_heavy_operations",
               "icx: level 2's helper tma_microcode_sequencer is reported at level 3", seq)
    finally:
        sim.stop()


if __name__ == "__main__":
    raise SystemExit(t.Tap().run([test_sapphire_rapids, test_ice_lake]))

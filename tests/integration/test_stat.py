#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate stat on the simulated PMU: events by Intel name (pmugate's table and libpfm4), raw
codes and modifiers, counter constraints, multiplexing with its scale, groups (shipped and a
user's own, read at run time), outputs, wrapper mode, and the refusals."""

import json
import os
import sys

import pmugatetest as t
from pmugatetest import Sim, STENCIL, SOLVER

EXACT = 1e-6
MUX_BOUND = 1e-4
# MEM_INST_RETIRED.ALL_LOADS (0xd0/0x81 on SPR) is in libpfm4's list but not pmugate's table;
# the simulator counts it at a rate per unhalted cycle the test chooses.
LOADS_PER_CYCLE = 0.375
LOADS = dict(STENCIL, **{"event.0xd0.0x81": LOADS_PER_CYCLE})


def counts(doc, cpu=None):
    v = doc["aggregate"] if cpu is None else [c for c in doc["per_cpu"] if c["cpu"] == cpu][0]
    return {e: c["value"] for e, c in v["counts"].items()}


def test_events(tap):
    sim = Sim("spr", rules=[("0-7", LOADS)])
    try:
        r = sim.json("stat", "-e", "CPU_CLK_UNHALTED.THREAD,INST_RETIRED.ANY,MEM_INST_RETIRED.ALL_LOADS,"
                     "BR_MISP_RETIRED.ALL_BRANCHES:u,BR_MISP_RETIRED.ALL_BRANCHES,r10ad,INT_MISC.UOP_DROPPING", "-c", "0-1",
                     "-S", "0.5s",
                     "-O", "json")
        c = counts(r)
        tap.eq(r["metrics"], [], "events alone have no metrics")
        tap.ok(abs(c["INST_RETIRED.ANY"] / c["CPU_CLK_UNHALTED.THREAD"] - STENCIL["ipc"]) < EXACT,
               "INST_RETIRED.ANY / cycles = the profile's IPC (%.7f)" % (c["INST_RETIRED.ANY"] / c["CPU_CLK_UNHALTED.THREAD"]))
        tap.ok(abs(c["MEM_INST_RETIRED.ALL_LOADS"] / c["CPU_CLK_UNHALTED.THREAD"] - LOADS_PER_CYCLE) < EXACT,
               "an event only libpfm4 knows is encoded right (counts at the simulated rate)")
        tap.ok(abs(c["BR_MISP_RETIRED.ALL_BRANCHES:u"] / c["BR_MISP_RETIRED.ALL_BRANCHES"] - STENCIL["user_fraction"])
               < EXACT, ":u counts user mode only")
        tap.ok(c["r10ad"] > 0 and abs(c["r10ad"] - c["INT_MISC.UOP_DROPPING"]) <= 2,
               "a raw code counts as its named event (r10ad = INT_MISC.UOP_DROPPING)")
        per = [counts(r, cpu) for cpu in (0, 1)]
        tap.ok(all(abs(c[e] - sum(p[e] for p in per)) < 1e-6 * c[e] + 1 for e in c), "aggregate counts sum the CPUs")
        tap.eq(r["event_sets"], 1, "seven events fit the counters")
    finally:
        sim.stop()


def test_constraints_and_multiplexing(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        # two events that only PMC0 counts cannot share a set
        r = sim.json("stat", "-e", "TOPDOWN.SLOTS,TOPDOWN.BAD_SPEC_SLOTS,TOPDOWN.BR_MISPREDICT_SLOTS", "-c", "0",
                     "-S", "1s", "-O", "json")
        tap.eq(r["event_sets"], 2, "two PMC0-only events take turns")
        c = counts(r)
        tap.ok(abs(c["TOPDOWN.BR_MISPREDICT_SLOTS"] / c["TOPDOWN.SLOTS"] - STENCIL["branch_mispredicts"]) < MUX_BOUND,
               "the multiplexed PMC0-only event, scaled, gives the profile's branch mispredicts (%.6f)" %
               (c["TOPDOWN.BR_MISPREDICT_SLOTS"] / c["TOPDOWN.SLOTS"]))
        scale = r["aggregate"]["counts"]["TOPDOWN.BAD_SPEC_SLOTS"]["scale"]
        tap.ok(1.3 < scale < 3.5, "the scale is reported with the counts (%.3f)" % scale)

        # ten GP events on eight counters
        events = ["INT_MISC.UOP_DROPPING", "INT_MISC.CLEARS_COUNT", "UOPS_RETIRED.SLOTS", "UOPS_RETIRED.HEAVY",
                  "TOPDOWN.BACKEND_BOUND_SLOTS", "TOPDOWN.MEMORY_BOUND_SLOTS", "IDQ_BUBBLES.CORE",
                  "BR_MISP_RETIRED.ALL_BRANCHES", "MACHINE_CLEARS.COUNT", "TOPDOWN.SLOTS_P"]
        r = sim.json("stat", "-e", ",".join(events + ["TOPDOWN.SLOTS"]), "-c", "0-1", "-S", "1s", "-O", "json")
        tap.eq(r["event_sets"], 2, "ten GP events on eight counters: two sets")
        for cpu in (0, 1):
            c = counts(r, cpu)
            checks = (("UOPS_RETIRED.SLOTS", STENCIL["retiring"]), ("UOPS_RETIRED.HEAVY", STENCIL["heavy_operations"]),
                      ("TOPDOWN.MEMORY_BOUND_SLOTS", STENCIL["memory_bound"]), ("TOPDOWN.SLOTS_P", 1.0))
            worst = max(abs(c[e] / c["TOPDOWN.SLOTS"] - want) for e, want in checks)
            tap.ok(worst < MUX_BOUND, "CPU %d: scaled counts / SLOTS match the profile within %g (worst %.2e)" % (
                cpu, MUX_BOUND, worst))
        text = sim.run("stat", "-e", ",".join(events), "-c", "0", "-S", "0.5s")[1]
        tap.ok("%)" in text, "the table shows how long each multiplexed event counted, as perf does", text)
    finally:
        sim.stop()


def test_groups(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        r = sim.json("stat", "-g", "ipc", "-c", "0-3", "-S", "0.5s", "-O", "json")
        tap.ok(abs(r["aggregate"]["metrics"]["ipc"] - STENCIL["ipc"]) < EXACT, "the shipped ipc group gives the IPC")
        tap.eq(r["group"], "ipc", "the JSON names the group")

        # a user's group: read at run time from a directory, no rebuild
        user = os.path.join(sim.dir, "groups")
        os.makedirs(os.path.join(user, "spr"))
        with open(os.path.join(user, "spr", "mine.conf"), "w") as f:
            f.write("[group]\ndescription = mine\nevents = UOPS_RETIRED.SLOTS TOPDOWN.SLOTS\n"
                    "[metric retired_share]\nlabel = Retired share\nunit = %\n"
                    "formula = SMT_on ? UOPS_RETIRED.SLOTS / TOPDOWN.SLOTS : -1\n")
        env = {"PMUGATE_GROUP_PATH": user + ":" + os.path.join(t.SOURCE, "client", "groups")}
        rc, out, err = sim.run("stat", "-g", "mine", "-c", "0", "-S", "0.3s", "-O", "json", env=env)
        tap.ok(rc == 0 and abs(json.loads(out)["aggregate"]["metrics"]["retired_share"] / 100 - STENCIL["retiring"]) < EXACT,
               "a user's group from $PMUGATE_GROUP_PATH measures its formula", err)
        rc, out, _ = sim.run("stat", "-g", "mine", "-e", "INST_RETIRED.ANY", "-c", "0", "-S", "0.3s", env=env)
        tap.ok(rc == 0 and "Retired share" in out and "INST_RETIRED.ANY" in out, "a group and extra events together", out)

        with open(os.path.join(user, "spr", "broken.conf"), "w") as f:
            f.write("[group]\nevents = UOPS_RETIRED.SLOTS\n[metric x]\nformula = UOPS_RETIRED.SLOTS +\n")
        rc, _, err = sim.run("stat", "-g", "broken", "-c", "0", "-S", "0.1s", env=env)
        tap.ok(rc == 1 and "broken.conf" in err and "formula of 'x'" in err, "a bad formula is refused with its file", err)
        with open(os.path.join(user, "spr", "typo.conf"), "w") as f:
            f.write("[group]\nevents = UOPS_RETIRED.SLOTS\nevnets = X\n")
        rc, _, err = sim.run("stat", "-g", "typo", "-c", "0", "-S", "0.1s", env=env)
        tap.ok(rc == 1 and "typo.conf:3" in err, "a bad line is refused with file and line", err)
    finally:
        sim.stop()


def test_wrapper_and_outputs(tap):
    sim = Sim("icx", rules=[("0-7", SOLVER)])
    try:
        rc, out, err = sim.run("stat", "-e", "INST_RETIRED.ANY,CPU_CLK_UNHALTED.THREAD", "-c", "0", "-O", "csv", "--",
                               "sh", "-c", "sleep 0.3; exit 7")
        tap.eq(rc, 7, "stat passes the command's exit status through")
        out = err
        rows = [l.split(",") for l in out.splitlines()]
        tap.ok(rows[0][0] == "time" and any(r[2] == "0" and r[4] == "INST_RETIRED.ANY" for r in rows[1:]),
               "CSV carries per-CPU counts", out)
        elapsed = float(rows[1][1])
        tap.ok(0.25 < elapsed < 1.0, "the time covers the command (%.3f s)" % elapsed)

        rc, out, _ = sim.run("stat", "-e", "INST_RETIRED.ANY", "-c", "0-1", "-I", "250ms", "-S", "1s", "-O", "csv")
        times = sorted({r.split(",")[0] for r in out.splitlines()[1:]})
        tap.ok(rc == 0 and 3 <= len(times) <= 5 and out.splitlines()[0].startswith("time,"),
               "-I prints rows per interval under one header (%d intervals)" % len(times), out)
    finally:
        sim.stop()


def test_refusals(tap):
    sim = Sim("skx", smt=True, rules=[("0-7", STENCIL)])
    try:
        for args, what, expect in (
                (["-e", "NO_SUCH.EVENT"], "an unknown event", "NO_SUCH.EVENT"),
                (["-e", "INT_MISC.RECOVERY_CYCLES_ANY"], "an AnyThread event", "AnyThread"),
                (["-e", "OFFCORE_RESPONSE_0.ANY_REQUEST"], "an event needing extra registers", "extra registers"),
                (["-e", "topdown-retiring"], "PERF_METRICS counts on a model without them", "topdown-retiring"),
                (["-e", "r200000"], "a raw code with AnyThread", "r200000"),
                (["-e", "UOPS_ISSUED.ANY:c=999"], "a bad counter mask", "c="),
                (["-g", "no-such-group"], "an unknown group", "no-such-group")):
            rc, _, err = sim.run("stat", *args, "-c", "0", "-S", "0.1s")
            tap.ok(rc == 1 and expect in err, "stat refuses %s and says why" % what, err)
        rc, _, err = sim.run("stat", "-c", "0", "-S", "0.1s")
        tap.ok(rc == 2 and "-e" in err, "stat without events or a group is a usage error", err)
        rc, _, err = sim.run("stat", "-e", "INST_RETIRED.ANY", "-c", "0", "-I", "fast")
        tap.ok(rc == 2 and "-I" in err, "a bad interval is a usage error", err)
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_events, test_constraints_and_multiplexing, test_groups, test_wrapper_and_outputs,
                          test_refusals]))

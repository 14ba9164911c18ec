#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The topology the daemon reports, through the CLI on the simulated PMU: a CPU whose SMT
sibling is offline has its whole core, so it gets perf's SMT-off TopDown formulas (perf's
SMT_on is the machine's, and its SMT formulas would halve the core's cycles: Retiring twice
the truth, Backend Bound negative). Every node equals the profile and none is negative, alone
or beside CPUs whose siblings are online and measured."""

import sys

import pmugatetest as t

EXACT = 1e-6
L1 = {"tma_frontend_bound": "frontend_bound", "tma_bad_speculation": "bad_speculation",
      "tma_backend_bound": "backend_bound", "tma_retiring": "retiring"}


def check(tap, model, what, r):
    for row in [r["aggregate"]] + r["per_cpu"]:
        where = "aggregate" if "cpu" not in row else "CPU %d" % row["cpu"]
        values = row["metrics"]
        worst = max(abs(values[m] - t.STENCIL[p]) for m, p in L1.items())
        tap.ok(worst <= EXACT, "%s %s, %s: level 1 equals the profile (worst %.1e)" % (model, what, where, worst),
               repr(values))
        tap.ok(all(v is not None and v >= 0 for v in values.values()),
               "%s %s, %s: no negative fraction" % (model, what, where), repr(values))


def test_sibling_offline(tap):
    for model in ("skx", "clx"):
        # four cores, CPU n + 4 is CPU n's sibling: CPU 0's is offline
        sim = t.Sim(model, rules=[("0-7", t.STENCIL)], extra="[inject]\noffline_cpus = 4\n")
        try:
            for cpus, what in (("0", "-c 0 (sibling offline)"), ("0,1,5", "-c 0,1,5 (one core alone, one whole)"),
                               ("0-3", "-c 0-3")):
                r = sim.json("topdown", "-l", "1", "-c", cpus, "-S", "0.3s", "-O", "json")
                check(tap, model, what, r)
            rc, out, err = sim.run("topdown", "-l", "1", "-c", "0", "-S", "0.3s")
            line = next((x for x in (out + err).splitlines() if x.strip().startswith("Retiring")), "")
            tap.ok("40.0 %" in line, "%s -c 0 table: Retiring 40.0 %% as the profile" % model, line)
        finally:
            sim.stop()


# Level 2 with SMT on: every node sums the core's two threads (perf's SMT formulas), each
# sibling's counts brought to this CPU's window by the TSC read right after its GLOBAL_CTRL
# write. Whatever delays that read on one CPU and not at the other edge of its window
# lengthens that window alone: the first CPU of a batch, cold after the idle interval, was
# 1.3e-6 off and its sibling as much the other way. What is left is the counts' own jitter.
CORE_EXACT = 2e-7
L2 = dict(L1, tma_heavy_operations="heavy_operations", tma_branch_mispredicts="branch_mispredicts",
          tma_fetch_latency="fetch_latency", tma_memory_bound="memory_bound")
DIFFERENCES = {"tma_light_operations": ("retiring", "heavy_operations"),
               "tma_machine_clears": ("bad_speculation", "branch_mispredicts"),
               "tma_fetch_bandwidth": ("frontend_bound", "fetch_latency"),
               "tma_core_bound": ("backend_bound", "memory_bound")}


def test_smt_core_wide_exact(tap):
    if t.SANITIZED:
        # the bound is the daemon's time between a CPU's GLOBAL_CTRL write and its TSC read;
        # under the sanitizers every access there costs several times more
        tap.skip("SMT core-wide values within 2e-7", "the sanitizers slow the daemon's accesses this bound times")
        return
    for model in ("skx", "clx"):
        # four cores, CPU n + 4 is CPU n's sibling; both threads of every core measured
        sim = t.Sim(model, rules=[("0-7", t.STENCIL)])
        try:
            r = sim.json("topdown", "-l", "2", "-c", "0-3,4-7", "-S", "1s", "-O", "json")
            for row in r["per_cpu"]:
                values = row["metrics"]
                truth = {m: t.STENCIL[p] for m, p in L2.items()}
                truth.update({m: t.STENCIL[a] - t.STENCIL[b] for m, (a, b) in DIFFERENCES.items()})
                errors = {m: abs(values[m] - w) if values.get(m) is not None else float("inf")
                          for m, w in truth.items()}
                worst = max(errors, key=errors.get)
                tap.ok(errors[worst] <= CORE_EXACT, "%s CPU %d: every level-2 node within %.0e of the profile "
                       "(worst %s %.1e)" % (model, row["cpu"], CORE_EXACT, worst, errors[worst]), repr(values))
        finally:
            sim.stop()


# the simulated parts' nominal clocks (docs/SIMULATOR.md)
NOMINAL_MHZ = {"zen4": 2400, "zen5": 2500}


def test_amd_clock_at_the_node(tap):
    """AMD clock_mhz (unhalted cycles per second: clock x utilization) is averaged over the CPUs
    a row sums, not summed: the node of CPUs at 0.9 and 0.5 utilization reads their mean."""
    for model in ("zen4", "zen5"):
        busy, idle = dict(t.STENCIL, utilization=0.9), dict(t.STENCIL, utilization=0.5)
        sim = t.Sim(model, cores_per_ccx=4, rules=[("0-3", busy), ("4-7", idle)])
        try:
            mhz = NOMINAL_MHZ[model]
            for group in ("CLOCK", "ipc"):
                r = sim.json("stat", "-g", group, "-c", "0-1,4-5", "-S", "0.3s", "-O", "json")
                per_cpu = {c["cpu"]: c["metrics"]["clock_mhz"] for c in r["per_cpu"]}
                node = r["aggregate"]["metrics"]["clock_mhz"]
                want = {0: 0.9 * mhz, 1: 0.9 * mhz, 4: 0.5 * mhz, 5: 0.5 * mhz}
                tap.ok(all(abs(per_cpu[c] - w) < 0.02 * w for c, w in want.items()),
                       "%s %s: clock_mhz per CPU is clock x utilization" % (model, group), repr(per_cpu))
                tap.ok(abs(node - 0.7 * mhz) < 0.02 * mhz,
                       "%s %s: the node's clock_mhz is the CPUs' mean (%.0f, want %.0f), not their sum" % (
                           model, group, node, 0.7 * mhz), repr(node))
                if group != "CLOCK":
                    continue
                # the simulated cores run at their base clock whatever their load: the clock
                # while running is 1 x nominal at 0.9 and at 0.5 utilization alike
                ratios = {c["cpu"]: c["metrics"].get("frequency_ratio") for c in r["per_cpu"]}
                ratios["node"] = r["aggregate"]["metrics"].get("frequency_ratio")
                tap.ok(all(v is not None and abs(v - 1.0) < 1e-3 for v in ratios.values()),
                       "%s CLOCK: frequency_ratio, the clock while running apart from utilization, is 1 x "
                       "nominal on busy and idle CPUs" % model, repr(ratios))
        finally:
            sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_sibling_offline, test_smt_core_wide_exact, test_amd_clock_at_the_node]))

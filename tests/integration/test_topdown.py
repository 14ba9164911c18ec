#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate topdown on the simulated PMU of every model: measured TopDown level 1 and 2 against
the workload profile the simulator runs, within the bounds docs/TOPDOWN.md states.

Bounds: PERF_METRICS holds 8-bit fractions, so on Ice Lake-SP and Sapphire Rapids a node read
from one byte is within Q = 1/255 of the profile and a node computed as the difference of two
bytes within 2Q. Generic-counter recipes (Skylake-SP, Cascade Lake) are exact up to integer
counts: 1e-6; per CPU when core-wide, where a sibling's count is aligned to the CPU's window by
TSC readings one register operation from the window's edges, 1e-4 (a few microseconds a second
between two operations' timing, more in a sanitizer build). Multiplexed generic counters (Ice Lake-SP level 2, Skylake) are scaled by the
time each set counted; on the simulator's steady workload the scaling adds at most MUX_BOUND
(1e-4) to a purely generic-counter ratio."""

import json
import os
import subprocess
import sys

import pmugatetest as t

Q = 1.0 / 255
EXACT = 1e-6
CORE_WIDE = 1e-4
MUX_BOUND = 1e-4
# The simulator's driver and the two workloads are the harness's (tests/integration/pmugatetest.py).
GROUPS, STENCIL, SOLVER, Sim = t.GROUPS, t.STENCIL, t.SOLVER, t.Sim

L1 = ["tma_frontend_bound", "tma_bad_speculation", "tma_backend_bound", "tma_retiring"]
L2 = ["tma_fetch_latency", "tma_fetch_bandwidth", "tma_branch_mispredicts", "tma_machine_clears",
      "tma_memory_bound", "tma_core_bound", "tma_light_operations", "tma_heavy_operations"]
# Level-2 nodes perf computes as a difference of two nodes (two bytes on PERF_METRICS models).
DIFFERENCES = {"tma_fetch_bandwidth", "tma_machine_clears", "tma_core_bound", "tma_light_operations"}


def expected(p):
    return {
        "tma_frontend_bound": p["frontend_bound"],
        "tma_bad_speculation": p["bad_speculation"],
        "tma_backend_bound": p["backend_bound"],
        "tma_retiring": p["retiring"],
        "tma_fetch_latency": p["fetch_latency"],
        "tma_fetch_bandwidth": p["frontend_bound"] - p["fetch_latency"],
        "tma_branch_mispredicts": p["branch_mispredicts"],
        "tma_machine_clears": p["bad_speculation"] - p["branch_mispredicts"],
        "tma_memory_bound": p["memory_bound"],
        "tma_core_bound": p["backend_bound"] - p["memory_bound"],
        "tma_heavy_operations": p["heavy_operations"],
        "tma_light_operations": p["retiring"] - p["heavy_operations"],
    }


def bound(model, metric, core_wide=False):
    if model in ("skx", "clx"):
        return CORE_WIDE if core_wide else EXACT
    if model == "icx" and metric in L2:
        # level 2 multiplies generic-counter ratios with level-1 nodes (or subtracts them)
        return (2 * Q if metric in DIFFERENCES else Q) + MUX_BOUND
    return (2 * Q if metric in DIFFERENCES else Q) + EXACT


def check_metrics(tap, model, values, profile, metrics, what, core_wide=False):
    want = expected(profile)
    worst = max(abs(values[m] - want[m]) / bound(model, m, core_wide) for m in metrics)
    detail = "\n".join("%-24s measured %.6f profile %.6f diff %+.2e bound %.1e" % (
        m, values[m], want[m], values[m] - want[m], bound(model, m, core_wide)) for m in metrics)
    tap.ok(worst <= 1.0, "%s: %s within the bound (worst %.2f of it)" % (model, what, worst), detail)
    return detail


def test_sapphire_rapids(tap):
    sim = Sim("spr", rules=[("0-1,4-5", STENCIL), ("2-3,6-7", SOLVER)])
    try:
        r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "0.5s", "-O", "json")
        tap.eq([m["name"] for m in r["metrics"]], L1, "spr level 1 reports the four level-1 nodes")
        for cpu in r["per_cpu"]:
            check_metrics(tap, "spr", cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, L1,
                          "level 1 on CPU %d" % cpu["cpu"])

        r = sim.json("topdown", "-l", "2", "-c", "0-3", "-S", "1s", "-O", "json")
        tap.eq(r["event_sets"], 1, "spr level 2 needs no multiplexing")
        tap.ok(set(r["aggregate"]["counts"]) >= {"TOPDOWN.SLOTS", "topdown-retiring", "topdown-heavy-ops",
                                                  "INT_MISC.UOP_DROPPING"},
               "raw counts carry Intel's names and the topdown-* slot counts")
        for cpu in r["per_cpu"]:
            check_metrics(tap, "spr", cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, L1 + L2,
                          "level 1 and 2 on CPU %d" % cpu["cpu"])

        # The aggregate is computed from summed counts (perf's way): the CPUs weigh by their
        # slots, and the two profiles run at different utilizations.
        slots = {c["cpu"]: c["counts"]["TOPDOWN.SLOTS"]["value"] for c in r["per_cpu"]}
        total = sum(slots.values())
        mix = {k: sum((STENCIL if cpu < 2 else SOLVER)[k] * s for cpu, s in slots.items()) / total
               for k in STENCIL}
        check_metrics(tap, "spr", r["aggregate"]["metrics"], mix, L1 + L2, "aggregate = slot-weighted profile mix")
        mean = sum(c["metrics"]["tma_backend_bound"] for c in r["per_cpu"]) / len(r["per_cpu"])
        tap.ok(abs(mean - mix["backend_bound"]) > 4 * Q,
               "the aggregate is not the mean of per-CPU ratios (%.4f vs %.4f)" % (mix["backend_bound"], mean))
        agg = r["aggregate"]["counts"]
        sum4 = sum(agg["topdown-" + n]["value"] for n in ("retiring", "bad-spec", "fe-bound", "be-bound"))
        tap.ok(abs(r["aggregate"]["metrics"]["tma_retiring"] - agg["topdown-retiring"]["value"] / sum4) < 1e-12,
               "aggregate retiring = summed topdown-retiring / summed level-1 slots")
        tap.ok(all(agg[e]["value"] == sum(c["counts"][e]["value"] for c in r["per_cpu"]) for e in agg),
               "aggregate counts are the sums of the per-CPU counts")
        tap.ok(abs(sum(r["aggregate"]["metrics"][m] for m in L1) - 1.0) < 1e-9, "level 1 sums to 1")
        tap.ok(r["resets"] >= 1 and r["elapsed"] >= 0.9, "the JSON carries resets and time (%d, %.3f s)" % (
            r["resets"], r["elapsed"]))
    finally:
        sim.stop()


def test_many_reset_periods(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        r = sim.json("topdown", "-l", "2", "-c", "0,1", "-S", "2s", "--reset-period=20ms", "-O", "json")
        tap.ok(r["resets"] >= 50, "a 2 s run with a 20 ms reset period spans many windows (%d)" % r["resets"])
        for cpu in r["per_cpu"]:
            check_metrics(tap, "spr", cpu["metrics"], STENCIL, L1 + L2,
                          "%d reset periods, CPU %d" % (r["resets"], cpu["cpu"]))
        slots = r["aggregate"]["counts"]["TOPDOWN.SLOTS"]["value"]
        tap.ok(slots > 1e10, "slot counts accumulate over the windows (%.3g)" % slots)
    finally:
        sim.stop()


def test_ice_lake(tap):
    sim = Sim("icx", rules=[("0-1,4-5", STENCIL), ("2-3,6-7", SOLVER)])
    try:
        r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "0.5s", "-O", "json")
        tap.eq(r["event_sets"], 1, "icx level 1 fits the counters")
        for cpu in r["per_cpu"]:
            check_metrics(tap, "icx", cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, L1,
                          "level 1 on CPU %d" % cpu["cpu"])

        r = sim.json("topdown", "-l", "2", "-c", "0-3", "-S", "1.5s", "-O", "json")
        tap.eq(r["event_sets"], 3, "icx level 2 multiplexes three event sets, level 1's two correction events "
               "pinned in each")
        pinned = ("INT_MISC.UOP_DROPPING", "INT_MISC.CLEARS_COUNT")
        scales = [c["scale"] for e, c in r["aggregate"]["counts"].items()
                  if not e.startswith("topdown-") and e != "TOPDOWN.SLOTS" and e not in pinned]
        tap.ok(all(2.0 < s < 4.5 for s in scales), "level-2 generic counters ran about a third of the time "
               "(scales %s)" % sorted(set(round(s, 3) for s in scales)))
        tap.ok(all(r["aggregate"]["counts"][e]["scale"] == 1.0 for e in pinned),
               "level 1's correction events counted all the time")
        tap.eq(r["aggregate"]["counts"]["TOPDOWN.SLOTS"]["scale"], 1.0, "SLOTS is not multiplexed")
        for cpu in r["per_cpu"]:
            p = STENCIL if cpu["cpu"] < 2 else SOLVER
            check_metrics(tap, "icx", cpu["metrics"], p, L1 + L2, "multiplexed level 2 on CPU %d" % cpu["cpu"])
            # ratios of generic counters alone show the multiplexing error itself
            c = {e: v["value"] for e, v in cpu["counts"].items()}
            tap.ok(abs(c["UOPS_RETIRED.SLOTS"] / c["TOPDOWN.SLOTS"] - p["retiring"]) < MUX_BOUND,
                   "multiplexed UOPS_RETIRED.SLOTS / SLOTS = retiring within %g on CPU %d" % (MUX_BOUND, cpu["cpu"]))
            tap.ok(abs(cpu["metrics"]["tma_fetch_latency"] - p["fetch_latency"]) < MUX_BOUND,
                   "multiplexed fetch latency (generic counters only) within %g on CPU %d" % (MUX_BOUND, cpu["cpu"]))
    finally:
        sim.stop()


def test_skylake_smt_off(tap):
    # the kernel's NMI watchdog holds fixed counter 1: cycles move to a GP counter
    sim = Sim("skx", smt=False, rules=[("0-1", STENCIL), ("2-3", SOLVER)], extra="[inject]\nnmi_watchdog = yes\n")
    try:
        before = sim.run("read", "-c", "0", "IA32_FIXED_CTR_CTRL", "IA32_PERF_GLOBAL_CTRL", "IA32_PERFEVTSEL0")[1]
        for level, metrics in (("1", L1), ("2", L1 + L2)):
            r = sim.json("topdown", "-l", level, "-c", "0-3", "-S", "0.6s", "-O", "json")
            for cpu in r["per_cpu"]:
                check_metrics(tap, "skx", cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, metrics,
                              "SMT off, level %s on CPU %d" % (level, cpu["cpu"]))
        tap.ok(r["event_sets"] >= 2, "skx level 2 multiplexes its 15 GP events (%d sets)" % r["event_sets"])
        after = sim.run("read", "-c", "0", "IA32_FIXED_CTR_CTRL", "IA32_PERF_GLOBAL_CTRL", "IA32_PERFEVTSEL0")[1]
        tap.eq(after, before, "stopping restores what was programmed; the watchdog's bits are untouched")
        tap.ok("0x00000000000000b0" in before, "the watchdog field (FIXED_CTR_CTRL[7:4] = 0xb) was there", before)
    finally:
        sim.stop()


def test_skylake_smt_on(tap):
    # siblings of a core run different workloads: CPUs 0-3 are thread 0 of cores 0-3, 4-7 thread 1
    sim = Sim("skx", smt=True, rules=[("0-3", STENCIL), ("4-7", SOLVER)])
    try:
        # thread 0 alone: perf's ONE_THREAD_ACTIVE / REF_XCLK estimate of core clocks
        r = sim.json("topdown", "-l", "2", "-c", "0-1", "-S", "1s", "-O", "json")
        tap.eq(r["event_sets"], 4, "SMT-on skx level 2 multiplexes on 4 counters per thread")
        tap.ok("CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE" in r["aggregate"]["counts"], "SMT on adds ONE_THREAD_ACTIVE")
        for cpu in r["per_cpu"]:
            check_metrics(tap, "skx", cpu["metrics"], STENCIL, L1 + L2, "SMT on, not core-wide, CPU %d" % cpu["cpu"])
    finally:
        sim.stop()

    sim = Sim("skx", smt=True, rules=[("0,2", STENCIL), ("1,3", SOLVER)], cores=2)
    try:
        # every thread of both cores: core-wide, THREAD_ANY and RECOVERY_CYCLES_ANY from the
        # summed threads of each core
        r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "1s", "-O", "json")
        for cpu in r["per_cpu"]:
            check_metrics(tap, "skx", cpu["metrics"], STENCIL if cpu["cpu"] in (0, 2) else SOLVER, L1,
                          "SMT on, core-wide, CPU %d" % cpu["cpu"], core_wide=True)
        # perf's core-wide formula on the summed counts, recomputed here
        c = {e: v["value"] for e, v in r["aggregate"]["counts"].items()}
        core_clks = c["CPU_CLK_UNHALTED.THREAD"] / 2 * (1 + c["CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE"] /
                                                        c["CPU_CLK_UNHALTED.REF_XCLK"])
        slots = 4 * core_clks
        retiring = c["UOPS_RETIRED.RETIRE_SLOTS"] / slots
        tap.ok(abs(r["aggregate"]["metrics"]["tma_retiring"] - retiring) < 1e-9,
               "the aggregate applies perf's formula to the summed counts")
        # A thread's slots are 4 * CLKS * (2 - its sibling's utilization) / 2; weighing by the
        # measured cycles keeps the few microseconds between CPUs' counting windows out.
        weights = {}
        for cpu in r["per_cpu"]:
            p = STENCIL if cpu["cpu"] in (0, 2) else SOLVER
            weights[cpu["cpu"]] = (p, cpu["counts"]["CPU_CLK_UNHALTED.THREAD"]["value"] * (2 - p["utilization"]))
        mix = {k: sum(p[k] * w for p, w in weights.values()) / sum(w for _, w in weights.values()) for k in STENCIL}
        check_metrics(tap, "skx", r["aggregate"]["metrics"], mix, L1, "core-wide aggregate = slot-weighted mix")
    finally:
        sim.stop()


def skx_core_wide_l1(threads):
    """perf's SMT-on level-1 formulas (skx-metrics.json) for each thread of one core, with the
    core's AnyThread counts taken as the sums of its threads' counts."""
    core = {e: sum(c[e] for c in threads) for e in threads[0]}
    thread_any = core["CPU_CLK_UNHALTED.THREAD"] / 2 * (1 + core["CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE"] /
                                                        core["CPU_CLK_UNHALTED.REF_XCLK"])
    slots = 4 * thread_any / 2
    recovery = core["INT_MISC.RECOVERY_CYCLES"] / 2
    out = []
    for c in threads:
        fe = c["IDQ_UOPS_NOT_DELIVERED.CORE"] / slots
        out.append({"tma_frontend_bound": fe,
                    "tma_bad_speculation": (c["UOPS_ISSUED.ANY"] - c["UOPS_RETIRED.RETIRE_SLOTS"] +
                                            4 * recovery) / slots,
                    "tma_backend_bound": 1 - fe - (c["UOPS_ISSUED.ANY"] + 4 * recovery) / slots,
                    "tma_retiring": c["UOPS_RETIRED.RETIRE_SLOTS"] / slots})
    return out


def test_skylake_unequal_siblings(tap):
    # thread 0 of both cores busy 98 % of the time, thread 1 half the time: the siblings'
    # counts must be aligned by wall-clock windows, not by their unhalted time bases
    busy = dict(STENCIL, utilization=0.98)
    half = dict(SOLVER, utilization=0.5)
    sim = Sim("skx", smt=True, rules=[("0-1", busy), ("2-3", half)], cores=2)
    try:
        r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "1s", "-O", "json")
        counts = {c["cpu"]: {e: v["value"] for e, v in c["counts"].items()} for c in r["per_cpu"]}
        metrics = {c["cpu"]: c["metrics"] for c in r["per_cpu"]}
        for core, threads in ((0, (0, 2)), (1, (1, 3))):
            want = skx_core_wide_l1([counts[cpu] for cpu in threads])
            for cpu, w in zip(threads, want):
                worst = max(abs(metrics[cpu][m] - w[m]) for m in L1)
                tap.ok(worst < CORE_WIDE, "unequal siblings: CPU %d of core %d has perf's formula on its core's "
                       "counts (worst %.1e)" % (cpu, core, worst),
                       "\n".join("%s %.6f perf %.6f" % (m, metrics[cpu][m], w[m]) for m in L1))
        c = {e: v["value"] for e, v in r["aggregate"]["counts"].items()}
        core_clks = c["CPU_CLK_UNHALTED.THREAD"] / 2 * (1 + c["CPU_CLK_UNHALTED.ONE_THREAD_ACTIVE"] /
                                                        c["CPU_CLK_UNHALTED.REF_XCLK"])
        retiring = c["UOPS_RETIRED.RETIRE_SLOTS"] / (4 * core_clks)
        tap.ok(abs(r["aggregate"]["metrics"]["tma_retiring"] - retiring) < CORE_WIDE,
               "unequal siblings: the aggregate is perf's formula on the summed counts (%.6f, perf %.6f)" %
               (r["aggregate"]["metrics"]["tma_retiring"], retiring))
    finally:
        sim.stop()


def test_cascade_lake(tap):
    sim = Sim("clx", smt=False, rules=[("0-3", SOLVER)])
    try:
        r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "0.5s", "-O", "json")
        tap.eq(r["model"], "clx", "clx measures with its own recipe")
        check_metrics(tap, "clx", r["aggregate"]["metrics"], SOLVER, L1, "level 1")
    finally:
        sim.stop()


def test_outputs_and_wrapper(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        # the README's first command, as a wrapper
        rc, out, err = sim.run("topdown", "-l", "2", "-C", "0-3", "--", "sleep", "0.5")
        tap.eq(rc, 0, "topdown -l 2 -C 0-3 -- sleep 0.5 exits with sleep's status")
        tap.eq(out, "", "in wrapper mode the results go to stderr, as perf's do")
        out = err
        lines = out.splitlines()
        labels = [l[:30].rstrip() for l in lines if "%" in l and "tma_" in l]
        tap.ok(labels[:3] == ["  Frontend Bound", "    Fetch Latency", "    Fetch Bandwidth"],
               "the table prints the tree: level-1 nodes with their children indented", out)
        tap.ok(any("TOPDOWN.SLOTS" in l for l in lines) and "seconds time elapsed" in out,
               "the table lists raw counts and the time", out)

        rc, _, _ = sim.run("topdown", "-c", "0", "--", "sh", "-c", "exit 3")
        tap.eq(rc, 3, "the command's exit status passes through")
        rc, _, _ = sim.run("topdown", "-c", "0", "--", "sh", "-c", "kill -TERM $$")
        tap.eq(rc, 128 + 15, "a command killed by a signal gives 128 + signal")
        rc, _, err = sim.run("topdown", "-c", "0", "--", "/nonexistent/command")
        tap.ok(rc == 127 and "/nonexistent/command" in err, "a missing command gives 127 and says so", err)

        # the simulated CPU numbers are pinned on the host too, so stay within its CPUs
        affinity = os.path.join(sim.dir, "affinity")
        pin = max(os.sched_getaffinity(0))
        rc, out, err = sim.run("topdown", "-C", str(pin), "-O", "json", "--", sys.executable, "-c",
                               "import os; print('mine'); open(%r, 'w').write(repr(sorted(os.sched_getaffinity(0))))" %
                               affinity)
        with open(affinity) as f:
            tap.eq(f.read(), "[%d]" % pin, "-C pins the command to the CPUs")
        tap.eq(out, "mine\n", "the wrapped command keeps its stdout")
        r = json.loads(err)
        tap.eq((r["cpus"], r["command"]["exit_status"]), ([pin], 0), "and measures those CPUs")

        csv_path = os.path.join(sim.dir, "out.csv")
        rc, out, _ = sim.run("topdown", "-c", "0-1", "-S", "0.3s", "-O", "csv", "-o", csv_path)
        with open(csv_path) as f:
            rows = [l.split(",") for l in f.read().splitlines()]
        tap.eq((rc, out), (0, ""), "-o writes the output to the file")
        tap.eq(rows[0], ["time", "elapsed", "cpu", "type", "name", "value", "unit", "raw", "scale", "stddev",
                         "threshold", "estimate", "error_bound", "partial"], "CSV header")
        kinds = {(r[2], r[3], r[4]) for r in rows[1:]}
        tap.ok({("all", "count", "TOPDOWN.SLOTS"), ("0", "count", "topdown-be-bound"), ("1", "metric", "tma_retiring"),
                ("all", "metric", "tma_frontend_bound")} <= kinds, "CSV rows: per-CPU and aggregate counts and metrics")
        ret = [(float(r[5]), r[6]) for r in rows[1:] if r[2] == "all" and r[4] == "tma_retiring"][0]
        tap.ok(abs(ret[0] / 100 - STENCIL["retiring"]) <= Q and ret[1] == "%",
               "CSV metric values are in their unit, which the row names (%.4f %s)" % ret)

        rc, out, _ = sim.run("topdown", "-c", "0", "-I", "200ms", "-S", "1s", "-O", "jsonl")
        docs = [t.fractions(json.loads(l)) for l in out.splitlines()]
        tap.ok(4 <= len(docs) <= 6, "-I 200ms -S 1s prints about five intervals as JSON lines (%d)" % len(docs))
        tap.ok(all(abs(d["elapsed"] - 0.2) < 0.1 for d in docs[:-1]), "each interval covers about 200 ms",
               [d["elapsed"] for d in docs])
        tap.ok(all(abs(d["aggregate"]["metrics"]["tma_retiring"] - STENCIL["retiring"]) <= Q for d in docs),
               "every interval has the profile's retiring")
    finally:
        sim.stop()


def test_large_machine(tap):
    # 1024 CPUs do not fit one batch of the daemon's operation limit: the sample is split
    sim = Sim("spr", sockets=4, cores=128, rules=[("0-511", STENCIL), ("512-1023", SOLVER)])
    try:
        r = sim.json("topdown", "-l", "2", "-c", "N:", "-S", "0.5s", "-O", "json")
        tap.eq(len(r["per_cpu"]), 1024, "-c N: measures every online CPU of a 1024-CPU machine")
        worst = max(max(abs(c["metrics"][m] - expected(STENCIL if c["cpu"] < 512 else SOLVER)[m]) / bound("spr", m)
                        for m in L1 + L2) for c in r["per_cpu"])
        tap.ok(worst <= 1.0, "all 1024 CPUs within the bound (worst %.2f of it)" % worst)
    finally:
        sim.stop()


def test_refusals(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        for args, what in ((["-l", "5"], "level 5"), (["-C", "0", "-c", "1", "--", "true"], "-C with -c"),
                           (["-S", "1s", "--", "true"], "-S with a command"), (["-O", "xml"], "an unknown format"),
                           (["-C", "0"], "-C without a command")):
            rc, _, err = sim.run("topdown", *args)
            tap.ok(rc == 2 and err, "topdown refuses %s (usage, exit 2)" % what, err)
        rc, _, err = sim.run("topdown", "-c", "99", "-S", "0.1s")
        tap.ok(rc == 1 and "99" in err, "a CPU the machine lacks is refused by name", err)
        rc, _, err = sim.run("topdown", "-c", "0", "-S", "0.1s", env={"PMUGATE_GROUP_PATH": sim.dir,
                                                                       "PMUGATE_GROUP_DIR": sim.dir})
        tap.ok(rc == 1 and "topdown-l1" in err, "without its group files topdown says which group is missing", err)
    finally:
        sim.stop()


def test_example_program(tap):
    """client/examples/topdown-example.c, the API's short example, works as documented."""
    example = os.path.join(t.BUILD, "client", "topdown-example")
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        p = subprocess.run([example, sim.daemon.socket], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, PMUGATE_GROUP_PATH=GROUPS))
        labels = ("Retiring", "Bad Speculation", "Frontend Bound", "Backend Bound", "Memory Bound")
        tap.ok(p.returncode == 0 and all(label in p.stdout for label in labels),
               "the example program prints the TopDown level 2 tree", p.stdout + p.stderr)
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_sapphire_rapids, test_many_reset_periods, test_ice_lake, test_skylake_smt_off,
                          test_skylake_smt_on, test_skylake_unequal_siblings, test_cascade_lake, test_outputs_and_wrapper, test_large_machine,
                          test_refusals, test_example_program]))

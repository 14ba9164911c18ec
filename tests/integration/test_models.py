#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The models issue 24 adds, through the real daemon and CLI on the simulated PMU: each starts
with its allowlist, `pmugate info` names it and the TMA release of its TopDown files, TopDown
levels 1 and 2 read the simulator's profile within the bounds docs/TOPDOWN.md states (those of
test_topdown.py), levels 3 and 4 load and read the profile's rates where generated (those of
test_topdown_deep.py), and the usual groups run, with memory bandwidth per socket from the
kernel's uncore PMUs and energy in the model's RAPL units (those of test_package_groups.py)."""

import os
import sys

import pmugatetest as t
import test_package_groups as pkg
import test_topdown as td
import test_topdown_deep as deep
from pmugatetest import Sim, STENCIL, SOLVER

# key -> (label, family-6 model numbers, TMA release, the model whose events it shares; the
# bounds are test_topdown.py's for PERF_METRICS models)
MODELS = {
    "emr": ("Emerald Rapids", [0xCF], "5.2", "spr"),
    "gnr": ("Granite Rapids", [0xAD, 0xAE], "5.2", "spr"),
}
# Sierra Forest's E-cores: TMA 3.6, their own level 2, generic counters only (no SMT)
SRF = ("Sierra Forest", [0xAF], "3.6")
SRF_L1 = ["tma_frontend_bound", "tma_bad_speculation", "tma_backend_bound", "tma_retiring"]
SRF_L2 = ["tma_ifetch_latency", "tma_ifetch_bandwidth", "tma_branch_mispredicts", "tma_machine_clears",
          "tma_core_bound", "tma_resource_bound"]
# the shared groups whose events Sierra Forest has, and its own (client/groups/srf/) from the
# E-core events
SRF_GROUPS = ("BRANCH", "CLOCK", "MEM", "ipc", "ENERGY", "topdown-l1", "topdown-l2", "topdown-l3",
              "L2", "L3", "FLOPS_DP", "FLOPS_SP", "DATA", "TLB_DATA")
# rates per unhalted cycle of the E-core events of Sierra Forest's own groups, given to the
# simulator as a profile's extra events (code, umask)
SRF_RATES = {"L2_REQUEST.HIT": (0x24, 0x02, 0.02), "L2_REQUEST.MISS": (0x24, 0x01, 0.005),
             "MEM_LOAD_UOPS_RETIRED.L2_HIT": (0xd1, 0x02, 0.01), "MEM_LOAD_UOPS_RETIRED.L2_MISS": (0xd1, 0x80, 0.004),
             "L2_LINES_IN.S": (0x25, 0x02, 0.001), "L2_LINES_IN.E": (0x25, 0x04, 0.002),
             "L2_LINES_IN.M": (0x25, 0x08, 0.0005), "L2_LINES_IN.F": (0x25, 0x10, 0.0015),
             "L2_LINES_OUT.NON_SILENT": (0x26, 0x02, 0.002), "MEM_LOAD_UOPS_RETIRED.L3_HIT": (0xd1, 0x1c, 0.003),
             "MEM_LOAD_UOPS_L3_MISS_RETIRED.ALL": (0xd3, 0xff, 0.001), "FP_FLOPS_RETIRED.FP64": (0xc8, 0x01, 0.5),
             "FP_FLOPS_RETIRED.FP32": (0xc8, 0x02, 0.25), "MEM_UOPS_RETIRED.ALL_LOADS": (0xd0, 0x81, 0.3),
             "MEM_UOPS_RETIRED.ALL_STORES": (0xd0, 0x82, 0.1), "DTLB_LOAD_MISSES.WALK_COMPLETED": (0x08, 0x0e, 0.001),
             "DTLB_LOAD_MISSES.WALK_PENDING": (0x08, 0x10, 0.03), "DTLB_STORE_MISSES.WALK_COMPLETED": (0x49, 0x0e, 0.0005),
             "DTLB_STORE_MISSES.WALK_PENDING": (0x49, 0x10, 0.01)}
# TOPDOWN_FE_BOUND.ICACHE slots per unhalted cycle in the level-3 profile: tma_icache_misses
# reads a sixth of it
SRF_ICACHE = 0.48
# level-3 and level-4 node counts of the generated files: Emerald Rapids' perf metrics have no
# tma_cxl_mem_bound; Granite Rapids adds five branch-mispredict children (some read n/a: their
# events need MSR_PEBS_FRONTEND, docs/TOPDOWN.md)
DEEP = {"emr": (28, 45), "gnr": (34, 45)}


def check_info(tap, model, sim):
    label, numbers, tma = (MODELS[model][:3] if model in MODELS else SRF)
    rc, out, err = sim.run("info", "--json")
    r = __import__("json").loads(out) if rc == 0 else {}
    cpu = r.get("cpu", {})
    tap.ok(rc == 0 and cpu.get("key") == model and cpu.get("name") == label and cpu.get("model") in numbers,
           "%s: the daemon starts on the simulated %s (family 6 model 0x%x)" % (model, label, numbers[0]), out + err)
    tap.eq((r.get("topdown") or {}).get("tma_version"), tma, "%s: info --json names TMA %s" % (model, tma))
    rc, out, err = sim.run("info")
    tap.ok(rc == 0 and "TopDown:       Intel TMA %s" % tma in out, "%s: info names TMA %s" % (model, tma), out + err)


def check_topdown(tap, model, sim):
    r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "0.5s", "-O", "json")
    tap.eq([m["name"] for m in r["metrics"]], td.L1, "%s level 1 reports the four level-1 nodes" % model)
    for cpu in r["per_cpu"]:
        td.check_metrics(tap, model, cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, td.L1,
                         "level 1 on CPU %d" % cpu["cpu"])
    r = sim.json("topdown", "-l", "2", "-c", "0-3", "-S", "1s", "-O", "json")
    tap.eq(r["event_sets"], 1, "%s level 2 needs no multiplexing" % model)
    for cpu in r["per_cpu"]:
        td.check_metrics(tap, model, cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, td.L1 + td.L2,
                         "level 1 and 2 on CPU %d" % cpu["cpu"])


def test_topdown_l1_l2(tap):
    for model in MODELS:
        sim = Sim(model, rules=[("0-1,4-5", STENCIL), ("2-3,6-7", SOLVER)])
        try:
            check_info(tap, model, sim)
            check_topdown(tap, model, sim)
        finally:
            sim.stop()


def test_topdown_deep(tap):
    for model in DEEP:
        shared = MODELS[model][3]
        deep.EVENTS[model] = deep.EVENTS[shared]
        deep.L3[model], deep.L4[model] = DEEP[model]
        sim = Sim(model, rules=[("0-7", deep.profile(model))])
        try:
            deep.check_level3(tap, model, sim)
            deep.check_level4(tap, model, sim)
        finally:
            sim.stop()


def srf_expected(p):
    return {
        "tma_frontend_bound": p["frontend_bound"], "tma_bad_speculation": p["bad_speculation"],
        "tma_backend_bound": p["backend_bound"], "tma_retiring": p["retiring"],
        "tma_ifetch_latency": p["fetch_latency"], "tma_ifetch_bandwidth": p["frontend_bound"] - p["fetch_latency"],
        "tma_branch_mispredicts": p["branch_mispredicts"],
        "tma_machine_clears": p["bad_speculation"] - p["branch_mispredicts"],
        # the simulator's memory_bound stands for Resource Bound on the E-cores (docs/SIMULATOR.md)
        "tma_core_bound": p["backend_bound"] - p["memory_bound"], "tma_resource_bound": p["memory_bound"],
    }


def srf_check(tap, values, profile, metrics, bound, what):
    want = srf_expected(profile)
    # a difference of two multiplexed ratios (Resource Bound) is within twice the bound
    bounds = {m: bound * (2 if m == "tma_resource_bound" else 1) for m in metrics}
    worst = max(abs(values[m] - want[m]) / bounds[m] for m in metrics)
    detail = "\n".join("%-24s measured %.6f profile %.6f bound %.1e" % (m, values[m], want[m], bounds[m])
                       for m in metrics)
    tap.ok(worst <= 1.0, "srf: %s within the bound (worst %.2f of it)" % (what, worst), detail)


def test_sierra_forest(tap):
    sim = Sim("srf", smt=False, rules=[("0-1", STENCIL), ("2-3", SOLVER)])
    try:
        check_info(tap, "srf", sim)
        r = sim.json("topdown", "-l", "1", "-c", "0-3", "-S", "0.5s", "-O", "json")
        tap.eq([m["name"] for m in r["metrics"]], SRF_L1, "srf level 1 reports the four level-1 nodes")
        tap.eq(r["event_sets"], 1, "srf level 1: four slot events on generic counters, one set")
        for cpu in r["per_cpu"]:
            # one set, no multiplexing: exact up to integer counts
            srf_check(tap, cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, SRF_L1, td.EXACT,
                      "level 1 on CPU %d" % cpu["cpu"])
        r = sim.json("topdown", "-l", "2", "-c", "0-3", "-S", "1s", "-O", "json")
        tap.eq([m["name"] for m in r["metrics"] if m["level"] == 2], SRF_L2,
               "srf level 2 is the E-core tree's: IFetch Latency/Bandwidth, Mispredicts, Clears, Core/Resource Bound")
        tap.eq({m["name"]: m["parent"] for m in r["metrics"] if m["level"] == 2},
               dict(zip(SRF_L2, ["tma_frontend_bound"] * 2 + ["tma_bad_speculation"] * 2 + ["tma_backend_bound"] * 2)),
               "srf level-2 parents")
        tap.ok(r["event_sets"] > 1, "srf level 2: nine slot events on eight counters take turns (%d sets)" %
               r["event_sets"])
        for cpu in r["per_cpu"]:
            srf_check(tap, cpu["metrics"], STENCIL if cpu["cpu"] < 2 else SOLVER, SRF_L1 + SRF_L2,
                      td.MUX_BOUND + td.EXACT, "level 1 and 2 on CPU %d (multiplexed)" % cpu["cpu"])
    finally:
        sim.stop()

    profile = dict(STENCIL, **{"event.0x71.0x20": SRF_ICACHE})
    sim = Sim("srf", smt=False, rules=[("0-3", profile)])
    try:
        r = sim.json("topdown", "-l", "3", "-c", "0-1", "-S", "2s", "-O", "json")
        level3 = [m for m in r["metrics"] if m["level"] == 3]
        tap.eq(len(level3), 16, "srf: topdown -l 3 reports perf's 16 level-3 nodes")
        agg = r["aggregate"]["metrics"]
        got = agg["tma_icache_misses"]
        tap.ok(got is not None and abs(got - SRF_ICACHE / 6) <= deep.RATIO_BOUND,
               "srf: tma_icache_misses reads the profile's ICACHE slots over 6 slots per cycle", "got %r" % got)
        core = STENCIL["backend_bound"] - STENCIL["memory_bound"]
        got = agg["tma_allocation_restriction"]
        tap.ok(got is not None and abs(got - core) <= 2 * td.MUX_BOUND,
               "srf: tma_allocation_restriction is Core Bound (%.2f)" % core, "got %r" % got)
        node = [m for m in level3 if m["name"] == "tma_predecode"][0]
        tap.ok(agg["tma_predecode"] is None and (node["unavailable"] or "").startswith("not modelled"),
               "srf: a level-3 event the simulator does not model is n/a, not 0", node)
        rc, out, err = sim.run("topdown", "-l", "4", "-c", "0", "-S", "0.1s")
        tap.ok(rc != 0 and "srf" in err, "srf: no level 4 (TMA 3.6 stops at level 3), said with the model", err)
    finally:
        sim.stop()

    sim = Sim("srf", sockets=2, cores=2, smt=False, extra=pkg.IMC + pkg.RAPL)
    try:
        for g in SRF_GROUPS:
            rc, out, err = sim.run("stat", "-g", g, "-c", "0-3", "-S", "0.05s", "-O", "json")
            tap.ok(rc == 0, "srf: group %s loads and measures" % g, err)
        rc, out, err = sim.run("stat", "-g", "FLOPS_AVX", "-c", "0", "-S", "0.05s")
        tap.ok(rc != 0 and "not for CPU model srf" in err, "srf: FLOPS_AVX (no FP_ARITH events) is refused", err)
    finally:
        sim.stop()
    sierra_forest_groups(tap)


def sierra_forest_groups(tap):
    """Sierra Forest's own groups read the rates the profile gives their E-core events: one event
    set each, so exact up to integer counts (the ratios of test_package_groups.py's FLOPS)."""
    rate = {name: r for name, (_, _, r) in SRF_RATES.items()}
    profile = dict(STENCIL, **{"event.0x%02x.0x%02x" % (c, u): r for c, u, r in SRF_RATES.values()})
    lines_in = sum(rate["L2_LINES_IN." + s] for s in "SEMF")
    # (group, metric, expected, per cycle: the metric is a rate over the window, compared per
    # unhalted cycle)
    cases = (("L2", "l2_bandwidth", 64 * (rate["L2_REQUEST.HIT"] + rate["L2_REQUEST.MISS"]), True),
             ("L2", "l2_request_miss_ratio", rate["L2_REQUEST.MISS"] / (rate["L2_REQUEST.HIT"] + rate["L2_REQUEST.MISS"]),
              False),
             ("L2", "l2_miss_ratio", rate["MEM_LOAD_UOPS_RETIRED.L2_MISS"] /
              (rate["MEM_LOAD_UOPS_RETIRED.L2_HIT"] + rate["MEM_LOAD_UOPS_RETIRED.L2_MISS"]), False),
             ("L3", "l3_load_bandwidth", 64 * lines_in, True),
             ("L3", "l3_evict_bandwidth", 64 * rate["L2_LINES_OUT.NON_SILENT"], True),
             ("L3", "l3_miss_ratio", rate["MEM_LOAD_UOPS_L3_MISS_RETIRED.ALL"] /
              (rate["MEM_LOAD_UOPS_RETIRED.L3_HIT"] + rate["MEM_LOAD_UOPS_L3_MISS_RETIRED.ALL"]), False),
             ("FLOPS_DP", "dp_mflops", rate["FP_FLOPS_RETIRED.FP64"], True),
             ("FLOPS_DP", "dp_flops_per_cycle", rate["FP_FLOPS_RETIRED.FP64"], False),
             ("FLOPS_SP", "sp_mflops", rate["FP_FLOPS_RETIRED.FP32"], True),
             ("DATA", "load_to_store_ratio", rate["MEM_UOPS_RETIRED.ALL_LOADS"] / rate["MEM_UOPS_RETIRED.ALL_STORES"],
              False),
             ("TLB_DATA", "dtlb_load_miss_duration",
              rate["DTLB_LOAD_MISSES.WALK_PENDING"] / rate["DTLB_LOAD_MISSES.WALK_COMPLETED"], False),
             ("TLB_DATA", "dtlb_store_miss_duration",
              rate["DTLB_STORE_MISSES.WALK_PENDING"] / rate["DTLB_STORE_MISSES.WALK_COMPLETED"], False),
             # built into the simulator's srf: one retired instruction in five is a branch
             ("BRANCH", "instructions_per_branch", 5.0, False))
    sim = Sim("srf", smt=False, rules=[("0-3", profile)])
    try:
        results = {}
        for group in sorted({c[0] for c in cases}):
            results[group] = sim.json("stat", "-g", group, "-c", "0-1", "-S", "0.3s", "-O", "json")
            r = results[group]
            tap.ok(r["event_sets"] == 1 and not any(c.get("not_modelled") for c in r["aggregate"]["counts"].values()),
                   "srf: group %s counts its E-core events in one set, all simulated" % group)
        for group, metric, want, per_cycle in cases:
            r = results[group]
            got = r["aggregate"]["metrics"][metric]
            if per_cycle and got is not None:
                # MBytes/s or MFLOP/s over the window, per unhalted cycle
                got = got * 1e6 * r["window"] / r["aggregate"]["counts"]["CPU_CLK_UNHALTED.THREAD"]["value"]
            # integer counts: the rarest event (0.0005 per cycle) counts some 10^5 in a run
            tap.ok(got is not None and abs(got - want) <= 1e-4 * abs(want),
                   "srf %s: %s is the profile's %.6g within 1e-4" % (group, metric, want), "got %r" % got)
    finally:
        sim.stop()


def test_discovery(tap):
    """The real (dev) backend on fake machines: /proc/cpuinfo's family and model pick the model
    and its allowlist, hello reports its PMU."""
    cases = (("emr", "emr", "Emerald Rapids", 4, 2), ("gnr", "gnr", "Granite Rapids", 4, 2),
             ("gnr-d", "gnr", "Granite Rapids-D", 4, 2), ("srf", "srf", "Sierra Forest", 3, 0))
    for fake, key, label, fixed, metrics in cases:
        d = t.workdir()
        m = t.FakeMachine(os.path.join(d, "root"), fake, sockets=1, cores=2, smt=key != "srf")
        dm = t.Daemon(d, ["--root=" + m.root])
        try:
            h = t.Client(dm.socket).call("hello")
            tap.eq((h["cpu"]["key"], h["cpu"]["name"], h["backend"]), (key, label, "dev"),
                   "%s: family 6 model 0x%x is %s, on the dev backend" % (fake, t.MODELS[fake][1], label))
            tap.eq((h["pmu"]["fixed_counters"], h["pmu"]["perf_metrics"]), (fixed, metrics),
                   "%s: %d fixed counters, PERF_METRICS level %d" % (fake, fixed, metrics))
            names = {r[7] for r in h["registers"]}
            tap.eq("MSR_PERF_METRICS" in names, metrics > 0,
                   "%s: the allowlist has PERF_METRICS only where the model has it" % fake)
        finally:
            dm.stop()


def test_groups(tap):
    pkg.MODELS = tuple(MODELS)
    pkg.test_memory_bandwidth(tap)
    pkg.test_energy(tap)
    pkg.test_flops(tap)
    pkg.test_every_group(tap)
    # memory bandwidth from the uncore PMUs and energy in Sapphire Rapids' units on the E-cores
    pkg.MODELS = ("srf",)
    pkg.test_memory_bandwidth(tap)
    pkg.test_energy(tap)


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_topdown_l1_l2, test_topdown_deep, test_sierra_forest, test_discovery,
                          test_groups]))

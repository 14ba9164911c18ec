#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The models issue 24 adds, through the real daemon and CLI on the simulated PMU: each starts
with its allowlist, `pmugate info` names it and the TMA release of its TopDown files, TopDown
levels 1 and 2 read the simulator's profile within the bounds docs/TOPDOWN.md states (those of
test_topdown.py), levels 3 and 4 load and read the profile's rates where generated (those of
test_topdown_deep.py), and the usual groups run, with memory bandwidth per socket from the
kernel's uncore PMUs and energy in the model's RAPL units (those of test_package_groups.py)."""

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
# level-3 and level-4 node counts of the generated files: Emerald Rapids' perf metrics have no
# tma_cxl_mem_bound; Granite Rapids adds five branch-mispredict children (some read n/a: their
# events need MSR_PEBS_FRONTEND, docs/TOPDOWN.md)
DEEP = {"emr": (28, 45), "gnr": (34, 45)}


def check_info(tap, model, sim):
    label, numbers, tma, _ = MODELS[model]
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


def test_groups(tap):
    pkg.MODELS = tuple(MODELS)
    pkg.test_memory_bandwidth(tap)
    pkg.test_energy(tap)
    pkg.test_flops(tap)
    pkg.test_every_group(tap)


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_topdown_l1_l2, test_topdown_deep, test_groups]))

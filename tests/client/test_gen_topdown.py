#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""contrib/tma/gen-topdown.py: the committed TopDown level-3/4 group files (and Grace's level 1)
are its output, and a formula it cannot translate is an error naming the node, never a node that
silently reads 0."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.environ.get("PMUGATE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "contrib", "tma", "gen-topdown.py")
DATA = os.path.join(SOURCE, "contrib", "tma", "perf-json")
GROUPS = os.path.join(SOURCE, "client", "groups")
n = failed = 0


def ok(cond, desc, detail=""):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, desc))
    if not cond:
        failed += 1
        for line in str(detail).splitlines()[:30]:
            print("#   " + line)


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def committed_equal_output():
    with tempfile.TemporaryDirectory() as out:
        rc, _, err = run("--out", out)
        ok(rc == 0, "the generator runs on the committed data", err)
        for model in sorted(os.listdir(out)):
            for name in sorted(os.listdir(os.path.join(out, model))):
                mine = open(os.path.join(out, model, name)).read()
                path = os.path.join(GROUPS, model, name)
                theirs = open(path).read() if os.path.exists(path) else None
                ok(mine == theirs, "client/groups/%s/%s is the generator's output" % (model, name),
                   "run contrib/tma/gen-topdown.py and commit the result")
    rc, _, err = run("--check")
    ok(rc == 0, "--check passes on the committed tree", err)


def with_formula(node, expr, field="MetricExpr"):
    """Runs the generator for spr over a copy of perf's JSON in which node's field is expr."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        shutil.copytree(DATA, data)
        path = os.path.join(data, "spr", "spr-metrics.json")
        metrics = json.load(open(path))
        for m in metrics:
            if m["MetricName"] == node:
                m[field] = expr
        json.dump(metrics, open(path, "w"))
        return run("--data", data, "--groups", GROUPS, "--out", os.path.join(tmp, "out"), "--models", "spr")


def errors_name_the_node():
    cases = [
        ("tma_divider", "ARITH.DIV_ACTIVE / (tma_info_thread_clks", "a missing parenthesis"),
        ("tma_divider", "frobnicate(ARITH.DIV_ACTIVE) / tma_info_thread_clks", "an unknown function"),
        ("tma_divider", "ARITH.DIV_ACTIVE * #no_such_constant", "an unknown #constant"),
        ("tma_divider", "ARITH.DIV_ACTIVE % 2", "perf's '%'"),
        ("tma_divider", "tma_no_such_node / tma_info_thread_clks", "an unknown metric"),
        ("tma_divider", "ARITH.DIV_ACTIVE:R / tma_info_thread_clks", "a retire latency with no published mean"),
        ("tma_divider", "uncore_cha_0@event\\=0x1@ / tma_info_thread_clks", "another PMU's event"),
        ("tma_divider", "1 if ARITH.DIV_ACTIVE > 0", "'if' without 'else'"),
    ]
    for node, expr, what in cases:
        rc, _, err = with_formula(node, expr)
        ok(rc != 0 and node in err, "%s in %s: an error naming it" % (what, node), "exit %d: %s" % (rc, err))
    rc, _, err = with_formula("tma_divider", "tma_divider > (0.2", "MetricThreshold")
    ok(rc != 0 and "tma_divider" in err, "a malformed MetricThreshold: an error naming the node", err)


def lowering():
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = run("--out", tmp, "--models", "gnr,icx")
        ok(rc == 0, "gnr and icx generate", err)
        gnr = open(os.path.join(tmp, "gnr", "topdown-l4.conf")).read()
        # perf without --record-tpebs: MEM_INST_RETIRED.LOCK_LOADS:R is rint(63.76)
        ok("formula = MEM_INST_RETIRED.LOCK_LOADS * 64 / tma_info_thread_clks" in gnr,
           "a retire latency becomes perf's rounded published mean", gnr[:2000])
        section = gnr.split("[metric tma_lock_latency]")[1].split("\n\n")[0]
        ok("estimate = retire-latency" in section, "and the node is marked an estimate", section)
        # FRONTEND_RETIRED.L2_MISS counts the facet MSR_PEBS_FRONTEND selects (perf's MSRIndex
        # 0x3F7), a register on the daemon's never-list
        section = gnr.split("[metric tma_code_l2_miss]")[1].split("\n\n")[0]
        ok("unavailable = " in section and "formula" not in section and "MSR_PEBS_FRONTEND" in section,
           "a node whose event needs a PEBS facet register is unavailable with the reason", section)
        # UOPS_RETIRED.MS's facet is in pmugate's event table: the client decides per path, so
        # the formula stays
        section = gnr.split("[metric tma_microcode_sequencer]")[1].split("\n\n")[0]
        ok("formula = UOPS_RETIRED.MS / tma_info_thread_slots" in section and "unavailable" not in section,
           "UOPS_RETIRED.MS, whose facet the event table carries, keeps its formula", section)
        section = gnr.split("[metric tma_false_sharing]")[1].split("\n\n")[0]
        ok("unavailable = " in section and "formula" not in section and "OCR." in section,
           "an offcore-response node is unavailable with the reason, not a formula", section)
        icx = open(os.path.join(tmp, "icx", "topdown-l3.conf")).read()
        ok("EXE_ACTIVITY.3_PORTS_UTIL:umask=0x80" in icx and "EXE_ACTIVITY.3_PORTS_UTIL_umask_0x80" in icx,
           "cpu@EV\\,umask\\=N@ becomes the event with umask=N", "")
        ok(" ? " in icx and " if " not in icx.split("[group]")[1], "perf's 'if else' becomes '? :'", "")


def with_arm_formula(node, expr, field="MetricExpr"):
    """Runs the generator for grace over a copy of the data in which node's field of the core's
    TopdownL1 file is expr."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        shutil.copytree(DATA, data)
        path = os.path.join(data, "grace", "neoverse-v2-topdown-l1.json")
        metrics = json.load(open(path))
        for m in metrics:
            if m["MetricName"] == node:
                m[field] = expr
        json.dump(metrics, open(path, "w"))
        return run("--data", data, "--groups", GROUPS, "--out", os.path.join(tmp, "out"), "--models", "grace")


def arm():
    """Grace's level 1: perf's percent shares as fractions, the N2 erratum test decided for
    Grace's MIDR, and errors naming the node for what it cannot decide or does not know."""
    grace = open(os.path.join(GROUPS, "grace", "topdown-l1.conf")).read()
    ok("formula = STALL_SLOT_BACKEND / (CPU_CYCLES * slots_width) - BR_MIS_PRED * 3 / CPU_CYCLES" in grace,
       "perf's 100 * (...) in percent of slots is written as the fraction", grace)
    ok("strcmp_cpuid_str" not in grace and "STALL_SLOT - CPU_CYCLES" not in grace,
       "the Neoverse N2 erratum branch is decided for Grace (another part): the stall slots as counted", grace)
    cases = [
        ("backend_bound", "100 * (STALL_SLOT_BACKEND / (CPU_CYCLES * #slots) - L2D_CACHE_FROB / CPU_CYCLES)",
         "an unknown event"),
        ("retiring", "100 * ((STALL_SLOT) if strcmp_cpuid_str(0x410fd4f1) else (STALL_SLOT - CPU_CYCLES))",
         "a test of Grace's own revision"),
        ("retiring", "100 * (OP_RETIRED / (OP_SPEC", "a missing parenthesis"),
        ("frontend_bound", "100 * strcmp_cpuid_str(0x410fd490)", "strcmp_cpuid_str() outside a condition"),
    ]
    for node, expr, what in cases:
        rc, _, err = with_arm_formula(node, expr)
        ok(rc != 0 and node in err, "grace: %s in %s: an error naming it" % (what, node), "exit %d: %s" % (rc, err))
    rc, _, err = with_arm_formula("retiring", "garbage", "ScaleUnit")
    ok(rc != 0 and "retiring" in err, "grace: a ScaleUnit that is no share of slots names the node", err)


committed_equal_output()
errors_name_the_node()
lowering()
arm()
print("1..%d" % n)
sys.exit(1 if failed else 0)

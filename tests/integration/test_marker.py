#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Markers through the real daemon on the simulated PMU: an OpenMP program with three regions
(call counts, times, metrics against the profile), TopDown per region with PERF_METRICS,
the LIKWID-compatible header, the outputs, wrong use, a program killed mid-region (nothing
stays programmed), and the read path's detection and fallback."""

import json
import os
import signal
import subprocess
import sys
import time

import pmugatetest as t
from pmugatetest import Sim, STENCIL, SOLVER
from test_topdown import L1, L2, bound, expected

MARKER_OMP = os.environ.get("MARKER_OMP", "")
LIKWID_STYLE = os.environ.get("LIKWID_STYLE", "")
LIKWID_STYLE_OFF = os.environ.get("LIKWID_STYLE_OFF", "")
MISUSE = os.environ.get("MARKER_MISUSE", os.path.join(t.BUILD, "tests", "marker", "marker-misuse"))
EXACT = 1e-6
# A marker reads a CPU's counters one after another without stopping them (stopping them is a
# write, and writes need the runner's lease), so each counter's window is shifted by where it
# sits in the read: a few microseconds through the daemon, jittering with the machine's load.
# Over regions of 10 ms and more that moves a ratio by well under this.
MARKER_BOUND = 2e-3
EVTSEL0 = 0x186
FIXED_CTR_CTRL = 0x38D
GLOBAL_CTRL = 0x38F
# Two threads, one on each of CPUs 0 and 1, as OpenMP codes are run when measured.
# KMP_AFFINITY=norespect is for a clang build (docs/MARKERS.md): there the examples run
# clang's OpenMP runtime, while libmuparser brings GCC's, which binds the main thread to the
# first place before main; GCC's runtime ignores the variable.
OMP = {"OMP_NUM_THREADS": "2", "OMP_PROC_BIND": "true", "OMP_PLACES": "{0},{1}", "KMP_AFFINITY": "norespect"}
ITERATIONS = 6
MS = 20.0


def run_json(sim, *args, env=None):
    """Runs pmugate with the JSON report in a file, apart from what the program prints."""
    path = os.path.join(sim.dir, "report.json")
    if os.path.exists(path):
        os.unlink(path)
    i = args.index("--")
    rc, out, err = sim.run(*(args[:i] + ("-O", "json", "-o", path) + args[i:]), env=env)
    doc = None
    if os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path) as f:
            doc = json.load(f)
    return rc, doc, out, err


def check_topdown(tap, model, values, profile, metrics, what):
    """test_topdown's bounds, widened by what reading without stopping the counters adds."""
    want = expected(profile)
    values = {m: values[m] / 100 for m in metrics}      # pmugate writes '%' metrics as percentages
    worst = max(abs(values[m] - want[m]) / (bound(model, m) + MARKER_BOUND) for m in metrics)
    detail = "\n".join("%-24s measured %.6f profile %.6f diff %+.2e" % (m, values[m], want[m], values[m] - want[m])
                        for m in metrics)
    tap.ok(worst <= 1.0, "%s: %s within the bound (worst %.2f of it)" % (model, what, worst), detail)


def region(doc, name):
    return [r for r in doc["regions"] if r["name"] == name][0]


def misuse(sim, mode, extra=()):
    rc, out, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0", *extra, "--", MISUSE, mode)
    said = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    return rc, said, err


def test_openmp_regions(tap):
    if not MARKER_OMP:
        tap.ok(True, "OpenMP regions # SKIP the OpenMP example was not built (no OpenMP)")
        return
    sim = Sim("skx", smt=False, rules=[("0-3", STENCIL)])
    try:
        t0 = time.monotonic()
        rc, doc, out, err = run_json(sim, "stat", "-m", "-g", "ipc", "-C", "0-1", "--", MARKER_OMP,
                                     str(ITERATIONS), str(MS), env=OMP)
        wall = time.monotonic() - t0
        tap.ok(rc == 0 and "markers: daemon" in out, "stat -m runs the OpenMP example", err)
        tap.eq([r["name"] for r in doc["regions"]], ["setup", "solve", "exchange"], "three regions, in order")
        tap.eq(doc["read_mode"], "daemon", "this machine reads through the daemon")
        tap.eq((doc["kind"], doc["marker"], doc["group"], doc["cpus"]), ("stat", True, "ipc", [0, 1]),
               "the JSON names the measurement")
        tap.eq(doc["errors"], [], "no misuse")
        for name, share in (("setup", 0.25), ("solve", 1.0), ("exchange", 0.5)):
            r = region(doc, name)
            threads = r["threads"]
            tap.eq(sorted(th["calls"] for th in threads), [ITERATIONS, ITERATIONS],
                   "%s: exactly %d calls on each of two threads" % (name, ITERATIONS))
            tap.eq(sorted(th["cpu"] for th in threads), [0, 1], "%s: each thread on its own CPU" % name)
            tap.eq(r["aggregate"]["calls"], 2 * ITERATIONS, "%s: the aggregate counts every call" % name)
            want = ITERATIONS * MS * share / 1000
            times = [th["time"] for th in threads]
            tap.ok(all(want <= x < 3 * want + 0.1 for x in times) and max(times) < wall,
                   "%s: inclusive time is plausible (%s s per thread, at least %.3f s)" % (
                       name, ", ".join("%.4f" % x for x in times), want))
            ipc = [th["metrics"]["ipc"] for th in threads] + [r["aggregate"]["metrics"]["ipc"]]
            tap.ok(all(abs(x / STENCIL["ipc"] - 1) < MARKER_BOUND for x in ipc),
                   "%s: IPC per thread and aggregate equals the profile's %.2f within %g" % (
                       name, STENCIL["ipc"], MARKER_BOUND), ipc)
            tap.eq([th["migrated"] for th in threads], [0, 0], "%s: no call moved between CPUs" % name)
            counts = r["aggregate"]["counts"]["INST_RETIRED.ANY"]
            tap.eq(counts, sum(th["counts"]["INST_RETIRED.ANY"] for th in threads),
                   "%s: aggregate counts sum the threads" % name)
        # the simulator counts time; a loaded machine stretches the sleeps, so compare with the
        # times measured rather than with the times asked for
        ticks = {n: region(doc, n)["aggregate"]["counts"]["CPU_CLK_UNHALTED.REF_TSC"] for n in ("solve", "exchange")}
        spent = {n: sum(th["time"] for th in region(doc, n)["threads"]) for n in ("solve", "exchange")}
        ratio = (ticks["solve"] / ticks["exchange"]) / (spent["solve"] / spent["exchange"])
        tap.ok(0.8 < ratio < 1.25, "counts follow the regions' lengths (count ratio / time ratio %.3f)" % ratio)

        # results on stderr, as in every wrapper run; the program keeps its stdout
        rc, _, out = sim.run("stat", "-m", "-g", "ipc", "-C", "0-1", "-O", "csv", "--", MARKER_OMP, "2", "5",
                             env=OMP)
        lines = out.splitlines()
        header = "region,thread,cpu,calls,time,type,name,value,unit"
        rows = [l.split(",") for l in lines[lines.index(header) + 1:]] if header in lines else []
        tap.ok(rc == 0 and any(r[0] == "solve" and r[1] == "all" and r[3] == "4" and r[6] == "ipc" and
                               abs(float(r[7]) / STENCIL["ipc"] - 1) < MARKER_BOUND for r in rows) and
               all(len(r) == 9 for r in rows),
               "CSV: a row per region, thread, count and metric, with the unit column", out)
        rc, _, out = sim.run("stat", "-m", "-g", "ipc", "-C", "0-1", "--", MARKER_OMP, "2", "5", env=OMP)
        tap.ok(rc == 0 and "Region solve: 4 calls on 2 threads" in out and "Instructions per cycle" in out and
               "thread1" in out, "the table shows each region per thread", out)

        # nesting the program declared
        rc, doc, out, err = run_json(sim, "stat", "-m", "-g", "ipc", "-C", "0-1", "--", MARKER_OMP, "3", "8",
                                     env=dict(OMP, PMUGATE_EXAMPLE_NEST="1"))
        tap.ok(rc == 0 and doc["errors"] == [] and region(doc, "exchange")["aggregate"]["calls"] == 6 and
               region(doc, "solve")["threads"][0]["time"] > region(doc, "exchange")["threads"][0]["time"],
               "a declared nested region is measured inside its parent", err)

        # more threads than the library's 16 connections (and than the daemon's 32 per user):
        # they share connections, and every call is counted
        rc, doc, out, err = run_json(sim, "stat", "-m", "-g", "ipc", "-C", "0-1", "--", MARKER_OMP, "3", "4",
                                     env={"OMP_NUM_THREADS": "40", "OMP_PROC_BIND": "false"})
        threads = region(doc, "solve")["threads"] if doc else []
        tap.ok(rc == 0 and doc["errors"] == [] and len(threads) == 40 and all(th["calls"] == 3 for th in threads)
               and sorted(th["thread"] for th in threads) == list(range(40)),
               "40 threads share the connections; each one's calls are all counted", err)

        # without the runner: nothing measured, nothing written, exit 0
        p = subprocess.run([MARKER_OMP, "2", "1"], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, **OMP))
        tap.ok(p.returncode == 0 and "markers: off" in p.stdout and not p.stderr,
               "the program runs on its own with the markers off", p.stdout + p.stderr)
    finally:
        sim.stop()


def test_topdown_regions(tap):
    if not MARKER_OMP:
        tap.ok(True, "TopDown per region # SKIP the OpenMP example was not built (no OpenMP)")
        return
    for model, level, names in (("skx", "1", L1), ("spr", "2", L1 + L2)):
        sim = Sim(model, smt=False, rules=[("0", STENCIL), ("1-3", SOLVER)])
        try:
            # a short reset period: many SLOTS/PERF_METRICS resets fall inside regions
            rc, doc, out, err = run_json(sim, "topdown", "-m", "-l", level, "-C", "0-1", "--reset-period", "10ms",
                                         "--", MARKER_OMP, "4", "15", env=OMP)
            tap.ok(rc == 0 and doc, "%s: topdown -m -l %s runs" % (model, level), err)
            if not doc:
                continue
            for name in ("setup", "solve", "exchange"):
                for th in region(doc, name)["threads"]:
                    check_topdown(tap, model, th["metrics"], STENCIL if th["cpu"] == 0 else SOLVER, names,
                                  "region %s, thread on CPU %d" % (name, th["cpu"]))
            if model == "spr":
                report_like_topdown(tap, sim)
        finally:
            sim.stop()


def report_like_topdown(tap, sim):
    """The marker report's table nests each level-2 node under its level-1 parent and writes
    numbers as pmugate topdown does; its CSV has the unit column."""
    rc, _, err = sim.run("topdown", "-m", "-l", "2", "-C", "0-1", "--", MARKER_OMP, "2", "10", env=OMP)
    lines = err.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith("Region solve")), None)
    block = []
    for x in lines[start + 1:] if start is not None else []:
        if not x.strip() or x.startswith("Region "):
            break
        block.append(x)
    labels = [x.strip().split("  ")[0] for x in block if x.startswith("  ") and x.strip() and
              not x.strip().startswith(("CPU", "calls", "inclusive"))]
    want = ["Frontend Bound", "Fetch Latency", "Fetch Bandwidth", "Bad Speculation", "Branch Mispredicts",
            "Machine Clears", "Backend Bound", "Memory Bound", "Core Bound", "Retiring", "Light Operations",
            "Heavy Operations"]
    got = [x for x in labels if x in want]
    tap.ok(got == want, "marker table: level 2 under its level-1 parent, as topdown", "%r\n%s" % (got, err))
    tap.ok(any(x.rstrip().endswith("TOPDOWN.SLOTS") and "," in x.split()[0] for x in block),
           "marker table: counts with thousands separators, as topdown", "\n".join(block))
    nested = [x for x in block if "Fetch Latency" in x]
    tap.ok(nested and nested[0].startswith("    Fetch Latency") and " %" in nested[0],
           "marker table: a level-2 node indented under its parent, in percent", repr(nested))
    rc, _, err = sim.run("topdown", "-m", "-l", "1", "-C", "0-1", "-O", "csv", "--", MARKER_OMP, "2", "5",
                         env=OMP)
    rows = [x.split(",") for x in err.splitlines()]
    tap.ok(["region", "thread", "cpu", "calls", "time", "type", "name", "value", "unit"] in rows and
           any(r[5:7] == ["metric", "tma_retiring"] and r[8] == "%" for r in rows if len(r) == 9) and
           any(r[5:7] == ["count", "TOPDOWN.SLOTS"] and r[8] == "" for r in rows if len(r) == 9),
           "marker CSV: the unit column, % for TopDown nodes", err)


def test_likwid_header(tap):
    if not LIKWID_STYLE:
        tap.ok(True, "LIKWID-style program # SKIP it was not built (no OpenMP)")
        return
    sim = Sim("icx", smt=False, rules=[("0-3", STENCIL)])
    try:
        rc, doc, out, err = run_json(sim, "stat", "-m", "-g", "ipc", "-C", "0-1", "--", LIKWID_STYLE, "3", env=OMP)
        tap.ok(rc == 0 and doc, "a program written for LIKWID's markers runs under stat -m", err)
        doc = doc or {"regions": []}
        tap.eq(sorted(r["name"] for r in doc["regions"]), ["Total", "init"], "its regions are LIKWID's tags")
        tap.ok(all(th["calls"] == 3 for r in doc["regions"] for th in r["threads"]) and
               all(len(r["threads"]) == 2 for r in doc["regions"]),
               "each thread counted every call, init nested in Total as LIKWID allows")
        tap.ok(all(abs(r["aggregate"]["metrics"]["ipc"] / STENCIL["ipc"] - 1) < MARKER_BOUND for r in doc["regions"]),
               "LIKWID-style regions measure the profile's IPC")
        p = subprocess.run([LIKWID_STYLE_OFF, "2"], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, **OMP))
        tap.ok(p.returncode == 0 and "0 calls" in p.stdout,
               "built without LIKWID_PERFMON the macros are empty, as with LIKWID", p.stdout + p.stderr)
    finally:
        sim.stop()


def test_wrong_use(tap):
    sim = Sim("skx", smt=False, rules=[("0-3", STENCIL)])
    try:
        rc, said, err = misuse(sim, "stop-without-start")
        tap.ok(rc == 1 and said.get("stop") == "ENOENT" and "stopped region 'never' without starting it" in err,
               "a stop without a start: ENOENT, and the runner says so", err)
        rc, said, err = misuse(sim, "nesting")
        tap.ok(rc == 1 and said.get("start-inner") == "EDEADLK" and said.get("stop-outer") == "0" and
               "nesting was not declared" in err, "nesting the program did not declare: EDEADLK", err)
        rc, said, err = misuse(sim, "overlap")
        tap.ok(rc == 1 and said.get("start-inner") == "0" and said.get("stop-outer") == "EDEADLK" and
               said.get("stop-inner") == "0" and said.get("stop-outer-again") == "0" and "still open" in err,
               "regions that overlap instead of nesting: EDEADLK, then stopped in order", err)
        rc, said, err = misuse(sim, "other-thread")
        tap.ok(rc == 1 and said.get("main-stop") == "EXDEV" and said.get("thread-stop") == "0" and
               "which another thread started" in err, "a region stopped on another thread: EXDEV", err)
        rc, said, err = misuse(sim, "too-many")
        tap.ok(rc == 1 and said.get("registered") == "1024" and said.get("register") == "E2BIG" and
               "too many regions" in err, "region 1025: E2BIG", err)
        rc, said, err = misuse(sim, "bad-name")
        tap.ok(rc == 1 and said.get("start") == "EINVAL" and "white space" in err, "a name with a space: EINVAL", err)
        rc, said, err = misuse(sim, "twice")
        tap.ok(rc == 1 and said.get("start-again") == "EALREADY" and "again before stopping" in err,
               "a region started twice: EALREADY", err)
        rc, doc, out, err = run_json(sim, "stat", "-m", "-g", "ipc", "-c", "0-1", "--", MISUSE, "migrate")
        th = region(doc, "moving")["threads"] if doc else [{}]
        tap.ok(rc == 0 and "pin-1=0" in out and len(th) == 1 and th[0]["calls"] == 2 and th[0]["migrated"] == 1 and
               th[0]["cpu"] == 1 and 0.045 < th[0]["time"] < 1.0,
               "a call that moved to another CPU counts its call and time, not its counts", (out, th))
        # the moving call sleeps 40 ms, the other 5 ms: counting both would give about as many
        # reference cycles as the time of both at 2.4 GHz, the staying one alone far fewer
        ticks = region(doc, "moving")["aggregate"]["counts"]["CPU_CLK_UNHALTED.REF_TSC"] if doc else 0
        both = 2.4e9 * th[0].get("time", 0)
        tap.ok(0 < ticks < 0.5 * both, "only the call that stayed on its CPU is counted (%d cycles, both calls "
               "would be about %d)" % (ticks, both))
        rc, said, err = misuse(sim, "fine", extra=("-O", "json"))
        tap.ok(rc == 0 and said.get("stop") == "0", "a correct program passes", err)
        rc, out, err = sim.run("stat", "-m", "-g", "ipc", "-c", "3", "--", "taskset", "-c", "0", MISUSE, "fine")
        tap.ok(rc == 1 and "start=ENXIO" in out and "whose counters pmugate does not run" in err,
               "a thread on a CPU that is not measured: ENXIO", err)

        # the runner refuses what markers cannot read, and hostile results files
        rc, _, err = sim.run("stat", "-m", "-e", ",".join(["INST_RETIRED.ANY"] + ["UOPS_ISSUED.ANY:c=%d" % i
                                                                                  for i in range(1, 11)]),
                             "-C", "0", "--", MISUSE, "fine")
        tap.ok(rc == 1 and "turns on the counters" in err, "events that would be multiplexed are refused", (rc, err))
        rc, _, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0")
        tap.ok(rc == 2 and "-m" in err, "-m without a command is a usage error", err)
        rc, _, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0", "--", "sh", "-c",
                             'printf "pmugate-markers 1\\nmode daemon\\ncolumns 99\\n" > "$PMUGATE_MARKER_FILE"')
        tap.ok(rc == 1 and "other registers than the runner programmed" in err, "a forged results file is refused",
               err)
        rc, out, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0", "--", "sh", "-c",
                               'PMUGATE_MARKER_WIDTH=99 exec "$0" fine', MISUSE)
        tap.ok(rc == 1 and "init=EINVAL" in out and "mode=off" in out and
               "markers could not start: PMUGATE_MARKER_WIDTH is not a counter width" in err,
               "markers that cannot start say why, to the program and through the runner", (out, err))
        rc, _, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0", "--", "sh", "-c",
                             'ln -s /etc/passwd "$PMUGATE_MARKER_FILE"')
        tap.ok(rc == 1 and "cannot read the marker results" in err, "a symlink for the results is not followed", err)
    finally:
        sim.stop()


def programmed(sim, cpu):
    c = t.Client(sim.daemon.socket)
    try:
        r = c.batch([["r", cpu, EVTSEL0], ["r", cpu, FIXED_CTR_CTRL], ["r", cpu, GLOBAL_CTRL]])
        leases = c.call("status").get("leases", [])
    finally:
        c.close()
    return r["values"], leases


def test_killed(tap):
    sim = Sim("skx", smt=False, rules=[("0-3", STENCIL)])
    try:
        before = programmed(sim, 0)
        rc, out, err = sim.run("stat", "-m", "-e", "INST_RETIRED.ANY,UOPS_ISSUED.ANY", "-C", "0", "--", MISUSE,
                               "killed")
        tap.ok(rc == 128 + signal.SIGKILL and "start=0" in out and "wrote no marker results" in err,
               "a program killed mid-region: its status, and no results", err)
        tap.eq(programmed(sim, 0), before, "nothing stays programmed and no lease is left")

        # the runner itself killed while the program is inside a region: the lease ends with
        # its connection and the daemon restores the registers
        e = dict(os.environ, PMUGATE_SOCKET=sim.daemon.socket, PMUGATE_GROUP_PATH=os.environ.get("PMUGATE_GROUP_PATH", ""))
        p = t.spawn([t.PMUGATE, "stat", "-m", "-e", "INST_RETIRED.ANY,UOPS_ISSUED.ANY", "-C", "0", "--",
                     MISUSE, "hang"], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    start_new_session=True)
        line = p.stdout.readline()
        running = programmed(sim, 0)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        p.stdout.close()
        p.stderr.close()
        tap.ok(line.strip() == "init=0" and running[0][0] != before[0][0] and running[1],
               "while the region is open the counters run under the runner's lease", running)
        deadline = time.monotonic() + 5
        while programmed(sim, 0) != before and time.monotonic() < deadline:
            time.sleep(0.05)
        tap.eq(programmed(sim, 0), before, "the runner killed mid-region: the daemon restores everything")
    finally:
        sim.stop()


def test_read_path(tap):
    """RDPMC needs the kernel's permission and a CPU that allows it; this machine has no PMU,
    so the probe faults and the markers fall back to the daemon, whatever sysfs says."""
    sim = Sim("skx", smt=False, rules=[("0-3", STENCIL)])
    try:
        fake = os.path.join(sim.dir, "sys", "bus", "event_source", "devices", "cpu")
        os.makedirs(fake)
        with open(os.path.join(fake, "rdpmc"), "w") as f:
            f.write("2\n")
        env = {"PMUGATE_MARKER_SYSFS": os.path.join(sim.dir, "sys")}
        rc, doc, out, err = run_json(sim, "stat", "-m", "-g", "ipc", "-C", "0", "--", MISUSE, "fine", env=env)
        doc = doc or {"regions": []}
        if "mode=rdpmc" in out:
            tap.ok(True, "RDPMC fallback # SKIP this machine lets processes execute RDPMC; the fallback is "
                   "not reachable here")
        else:
            tap.ok(rc == 0 and "mode=daemon" in out and doc.get("read_mode") == "daemon",
                   "rdpmc=2 but RDPMC faults: the markers read through the daemon", out + err)
            tap.ok(abs(region(doc, "fine")["aggregate"]["metrics"]["ipc"] / STENCIL["ipc"] - 1) < MARKER_BOUND,
                   "the fallback measures the region", out)
        with open(os.path.join(fake, "rdpmc"), "w") as f:
            f.write("0\n")
        rc, out, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0", "--", MISUSE, "fine", env=env)
        tap.ok(rc == 0 and "mode=daemon" in out, "rdpmc=0: the daemon", out + err)
        rc, out, err = sim.run("stat", "-m", "-g", "ipc", "-C", "0", "--", MISUSE, "fine",
                               env={"PMUGATE_MARKER_RDPMC": "0"})
        tap.ok(rc == 0 and "mode=daemon" in out, "PMUGATE_MARKER_RDPMC=0: the daemon", out + err)
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_openmp_regions, test_topdown_regions, test_likwid_header, test_wrong_use, test_killed,
                          test_read_path]))

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Intervals on the clock and the command line a perf or LIKWID user expects, through the real
daemon, socket and CLI: unknown options named (not the verb) with the pmugate spelling of perf's
and LIKWID's, format names in any case, an unknown -o suffix refused, the last partial -I
interval printed and marked in every format at every level, N intervals in N times -I,
pmugated's models and a simulator configuration's own model."""

import json
import os
import statistics
import subprocess
import sys

import pmugatetest as t
from pmugatetest import STENCIL, Sim

INTERVAL = 0.1
# What anchoring the deadlines to the clock guarantees is that the ends do not drift: the k-th
# ends k intervals after the start, late only by its own wake-up. How late a wake-up (of the CLI,
# then of the daemon that reads the counters) is depends on the machine's load: on a two-core
# build machine at a load of 10-12 a plain sleep to an absolute deadline woke a median 0.14 ms
# and at worst 9 ms late, and the CLI and the daemon both wake for each end: the ends seen were
# late by up to 19 ms. An interval is the difference of two ends, so three in four are within
# TYPICAL of -I, all within WORST, the median within 1 ms; the drift check (the last end against
# the first) allows one late wake-up.
TYPICAL = 0.005
WORST = 0.030
DRIFT_MAX = 0.020


def test_unknown_options(tap):
    sim = Sim("icx", rules=[("0-3", STENCIL)])
    try:
        cases = [
            (("stat", "-x,", "-e", "cycles", "-c", "0", "-S", "0.1"), "unknown option -x", "-O csv"),
            (("stat", "-e", "cycles", "-j"), "unknown option -j", "-O jsonl"),
            (("topdown", "-a", "-S", "0.1"), "unknown option -a", "-c N:"),
            (("topdown", "--bogus=3"), "unknown option --bogus ", None),
            (("topdown", "-c"), "option -c needs a value", None),
            (("info", "-z"), "unknown option -z", None),
            (("list", "-q"), "unknown option -q", None),
            (("read", "-q", "-c", "0", "0x10"), "unknown option -q", None),
        ]
        for args, named, hint in cases:
            rc, _, err = sim.run(*args)
            tap.ok(rc == 2 and named in err and "option: %s" % args[0] not in err and (not hint or hint in err),
                   "pmugate %s: names the option%s" % (" ".join(args), ", with " + hint if hint else ""), err)
        rc, out, err = sim.run("stat", "-e", "cache-misses,cache-references", "-c", "0", "-S", "0.1", "-O", "json")
        tap.ok(rc == 0 and set(json.loads(out)["aggregate"]["counts"]) ==
               {"LONGEST_LAT_CACHE.MISS", "LONGEST_LAT_CACHE.REFERENCES"},
               "perf's cache-misses and cache-references are the last level cache's events", err)
        for group, hint in (("FLOPS_D", "did you mean FLOPS_DP"), ("flops_sd", "did you mean FLOPS_SP"),
                            ("TMA", "LIKWID's TMA is 'pmugate topdown'"), ("CACHES", "-g L2 and -g L3")):
            rc, _, err = sim.run("stat", "-g", group, "-c", "0", "-S", "0.1")
            tap.ok(rc == 1 and hint in err, "-g %s: %s" % (group, hint), err)
        rc, out, err = sim.run("stat", "-e", "cycles", "-c", "0", "-S", "0.1", "-O", "CSV")
        tap.ok(rc == 0 and out.startswith("time,elapsed,cpu"), "-O CSV: format names in any case", err)
        rc, out, err = sim.run("stat", "-e", "cycles", "-c", "0", "-S", "0.1", "-O", "Json")
        tap.ok(rc == 0 and json.loads(out)["kind"] == "stat", "-O Json too", err)
        path = os.path.join(sim.dir, "result.dat")
        rc, _, err = sim.run("stat", "-e", "cycles", "-c", "0", "-S", "0.1", "-o", path)
        tap.ok(rc == 2 and "'.dat'" in err and "-O" in err and not os.path.exists(path),
               "-o FILE.dat without -O is refused, naming the suffix, and nothing is written", err)
        rc, _, err = sim.run("stat", "-e", "cycles", "-c", "0", "-S", "0.1", "-O", "csv", "-o", path)
        with open(path) as f:
            tap.ok(rc == 0 and f.readline().startswith("time,"), "with -O csv it is written as CSV", err)
    finally:
        sim.stop()


def table_lines(text):
    return [l for l in text.splitlines() if l.startswith(" ") and not l.startswith(" Performance")]


def test_partial_interval(tap):
    sim = Sim("icx", rules=[("0-3", STENCIL)])
    try:
        for level in ("1", "2"):
            what = "topdown -l %s -I 1000 -C 0 -- sleep 0.3" % level
            base = ("topdown", "-l", level, "-I", "1000", "-C", "0")
            rc, _, err = sim.run(*base, "--", "sleep", "0.3")
            lines = table_lines(err)
            tap.ok(rc == 0 and len(lines) == 1 and lines[0].endswith("(partial)") and "left out" not in err,
                   "%s: the table prints the partial interval, marked" % what, err)
            rc, _, err = sim.run(*base, "-O", "jsonl", "--", "sleep", "0.3")
            docs = [json.loads(l) for l in err.splitlines() if l.startswith("{")]
            tap.ok(rc == 0 and len(docs) == 1 and docs[0]["partial"] is True and
                   0.25 < docs[0]["elapsed"] < 0.6 and docs[0]["aggregate"]["metrics"]["tma_retiring"] is not None,
                   "%s: JSON has it with \"partial\": true and its metrics" % what, err[-500:])
            rc, _, err = sim.run(*base, "-O", "csv", "--", "sleep", "0.3")
            rows = [l.split(",") for l in err.splitlines()]
            tap.ok(rc == 0 and rows[0][-1] == "partial" and len(rows) > 1 and
                   all(r[-1] == "1" for r in rows[1:]), "%s: CSV marks its rows partial" % what, err[-500:])
        rc, out, err = sim.run("topdown", "-l", "2", "-I", "200", "-S", "0.5", "-c", "0", "-O", "jsonl")
        docs = [json.loads(l) for l in out.splitlines()]
        tap.ok(rc == 0 and [d["partial"] for d in docs] == [False, False, True],
               "-I 200 -S 0.5: two whole intervals, then the partial one", [(d["elapsed"], d["partial"]) for d in docs])
    finally:
        sim.stop()


def test_intervals_on_clock(tap):
    sim = Sim("icx", rules=[("0-3", STENCIL)])
    try:
        for level in ("1", "2"):
            rc, out, err = sim.run("topdown", "-l", level, "-I", "100", "-S", "2", "-c", "0", "-O", "jsonl")
            docs = [json.loads(l) for l in out.splitlines()]
            elapsed = [d["elapsed"] for d in docs]
            ends = [d["start"] + d["elapsed"] for d in docs]
            what = "topdown -l %s -I 100 -S 2" % level
            tap.ok(rc == 0 and len(docs) == 20 and not any(d["partial"] for d in docs),
                   "%s: 20 whole intervals, no partial one" % what, (rc, err, [(e, d.get("partial")) for e, d in
                                                                           zip(elapsed, docs)]))
            typical = sum(abs(e - INTERVAL) <= TYPICAL for e in elapsed)
            # each end is a wake-up of the CLI and the daemon: on a loaded 2-CPU machine a few land
            # 10-15 ms late (and the next as much early); the ends themselves do not drift (below)
            tap.ok(typical >= 0.5 * len(elapsed) and all(abs(e - INTERVAL) <= WORST for e in elapsed) and
                   abs(statistics.median(elapsed) - INTERVAL) < 0.002,
                   "%s: half the intervals %.0f ms +- %.0f ms (%d of %d), all +- %.0f ms, the median within 2 ms" %
                   (what, INTERVAL * 1e3, TYPICAL * 1e3, typical, len(elapsed), WORST * 1e3), elapsed)
            tap.ok(len(ends) == 20 and abs(ends[-1] - ends[0] - 19 * INTERVAL) <= DRIFT_MAX,
                   "%s: the ends do not drift: the 20th is 1.9 s after the first (%.4f s)" %
                   (what, ends[-1] - ends[0] if ends else 0), ends)
    finally:
        sim.stop()


def test_daemon_models(tap):
    out = subprocess.run([t.PMUGATED, "--help"], capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if "--sim-model" in l]
    text = " ".join(out.split())
    tap.ok(all(m in text for m in ("skx", "clx", "icx", "spr", "zen4", "zen5")),
           "pmugated --help lists every model, zen4 and zen5 too", line)
    d = t.workdir()
    config = t.sim_config(d, "zen4", sockets=1, cores=4, smt=True, cores_per_ccx=4)
    daemon = t.Daemon(d, ["--backend=sim", "--sim-config=" + config])
    try:
        rc, out, err = t.run_cli([t.PMUGATE, "info", "--json"], daemon.socket)
        tap.ok(rc == 0 and json.loads(out)["cpu"]["key"] == "zen4",
               "--sim-config alone: the configuration's model = zen4 is used", (rc, out[:300], err))
    finally:
        daemon.stop()
    d = t.workdir()
    config = t.sim_config(d, "zen4", sockets=1, cores=4, smt=True, cores_per_ccx=4)
    daemon = t.Daemon(d, ["--backend=sim", "--sim-model=icx", "--sim-config=" + config], expect_ready=False)
    code = daemon.wait_exit()
    tap.ok(code not in (0, None) and "conflicts with model = zen4" in daemon.log(),
           "--sim-model=icx with a zen4 configuration is refused, naming both", (code, daemon.log()[-400:]))


def test_output_at_scale(tap):
    # JSON Lines write per-CPU entries without json-c, CSV its rows with its own number
    # formatting: both must say what json-c and printf said. On the deterministic clock the
    # same accesses give the same counts, so a run written each way compares value for value.
    d = t.workdir()
    config = t.sim_config(d, "icx", rules=[("0-3", STENCIL)])
    with open(config) as f:
        text = f.read().replace("mode = realtime", "mode = deterministic")
    with open(config, "w") as f:
        f.write(text)
    daemon = t.Daemon(d, ["--backend=sim", "--sim-config=" + config])
    try:
        def run(*args):
            rc, out, err = t.run_cli([t.PMUGATE, "topdown", "-l", "2", "-c", "0-3", "-S", "0.05"] + list(args),
                                     daemon.socket, env={"PMUGATE_GROUP_PATH": t.GROUPS})
            if rc != 0:
                raise AssertionError("pmugate %s: %d %s" % (args, rc, err))
            return out
        line = json.loads(run("-O", "jsonl"))
        doc = json.loads(run("-O", "json"))
        tap.ok(len(line["per_cpu"]) == 4 and line["per_cpu"] == doc["per_cpu"],
               "-O jsonl writes per_cpu as json-c writes it in -O json, value for value",
               (line["per_cpu"][0], doc["per_cpu"][0]))
        tap.ok({k: v for k, v in line.items() if k not in ("per_cpu", "start", "elapsed")} ==
               {k: v for k, v in doc.items() if k not in ("per_cpu", "start", "elapsed")}, "and the rest too")
        rows = [r.split(",") for r in run("-O", "csv").splitlines()[1:]]
        values = {(r[2], r[4]): r[5] for r in rows}
        want = {}
        for cpu in doc["per_cpu"]:
            for e, c in cpu["counts"].items():
                want[(str(cpu["cpu"]), e)] = "%.17g" % c["value"] if c["value"] is not None else ""
            for m, v in cpu["metrics"].items():
                want[(str(cpu["cpu"]), m)] = "%.17g" % v if v is not None else ""
        got = {k: v for k, v in values.items() if k[0] != "all"}
        tap.ok(got == want, "CSV values are printf's %.17g of the same numbers",
               [(k, got.get(k), want[k]) for k in want if got.get(k) != want[k]][:5])
        agg = run("-O", "csv", "--aggregate").splitlines()
        tap.ok(len(agg) > 1 and all(r.split(",")[2] == "all" for r in agg[1:]),
               "--aggregate: CSV has the aggregate rows only", agg[:3])
        one = json.loads(run("-O", "jsonl", "--aggregate"))
        tap.ok(one["per_cpu"] == [] and one["aggregate"]["metrics"] == line["aggregate"]["metrics"],
               "--aggregate: JSON without per-CPU entries, the same aggregate")
        rc, _, err = t.run_cli([t.PMUGATE, "topdown", "-A", "--aggregate", "-c", "0", "-S", "0.05"], daemon.socket)
        tap.ok(rc == 2 and "--aggregate" in err, "-A with --aggregate is refused", err)
    finally:
        daemon.stop()


def test_no_sample_dropped_1024(tap):
    sim = Sim("spr", sockets=4, cores=128, smt=True, rules=[("0-1023", STENCIL)])
    try:
        for fmt in ("csv", "jsonl"):
            path = os.path.join(sim.dir, "out." + fmt)
            rc, _, err = sim.run("topdown", "-l", "2", "-c", "N:", "-I", "100ms", "-S", "2s", "-O", fmt, "-o", path)
            with open(path) as f:
                text = f.read()
            if fmt == "csv":
                rows = [r.split(",") for r in text.splitlines()[1:]]
                n = len({r[0] for r in rows})
                per_cpu = len({r[2] for r in rows if r[2] != "all"})
            else:
                docs = [json.loads(l) for l in text.splitlines()]
                n = len(docs)
                per_cpu = min(len(d["per_cpu"]) for d in docs)
            tap.ok(rc == 0 and n == 20 and per_cpu == 1024,
                   "1024 CPUs, -I 100ms -S 2s -O %s: 20 intervals of 1024 CPUs, none dropped (%d)" % (fmt, n), err)
    finally:
        sim.stop()


def test_pinning_and_repeat(tap):
    sim = Sim("icx", rules=[("0-3", STENCIL)])
    try:
        def run(*args):
            # the CLI allowed on CPUs 0-1 only, as a job's or a container's would be
            p = subprocess.run(["taskset", "-c", "0-1", t.PMUGATE] + list(args), capture_output=True, text=True,
                               env=dict(os.environ, PMUGATE_SOCKET=sim.daemon.socket, PMUGATE_GROUP_PATH=t.GROUPS),
                               timeout=60)
            return p.returncode, p.stdout, p.stderr
        if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
            tap.skip("-C and the caller's CPUs", "this machine does not let the test run on CPUs 0-1")
            return
        rc, _, err = run("stat", "-e", "cycles", "-C", "2-3", "--", "true")
        tap.ok(rc == 1 and "cannot pin true to CPUs 2-3: not in this process's allowed CPUs (0-1)" in err,
               "-C on CPUs the caller may not run on: names the command, the CPUs and the allowed ones", err)
        rc, _, err = run("stat", "-e", "cycles", "-C", "1-3", "--", "true")
        tap.ok(rc == 0 and "cannot pin" not in err, "-C on some it may run on pins it to those", err)
        rc, _, err = run("stat", "-e", "cycles", "-C", "0", "--", "true")
        tap.ok(rc == 0 and err.count("perf stat -C does not pin") == 1 and "it could run on 0-1" in err,
               "-C pinning a command that could run on more CPUs: one notice", err)
        rc, _, err = run("stat", "-e", "cycles", "-C", "0", "-O", "json", "--", "true")
        tap.ok(rc == 0 and json.loads(err)["kind"] == "stat", "but not into JSON on stderr", err)
        rc, _, err = run("stat", "-e", "cycles", "-r", "3", "-S", "0.1")
        tap.ok(rc == 2 and "-r repeats a command: give one after --" in err, "-r without a command says so", err)
        rc, _, err = run("stat", "-e", "cycles", "-r", "3", "-I", "100", "--", "true")
        tap.ok(rc == 2 and "-I prints intervals of one run" in err, "-r with -I says what each does", err)
    finally:
        sim.stop()


def test_readme_snippet(tap):
    # The README's C example, compiled as it stands and run with no daemon behind the socket:
    # it must say so, not crash.
    if t.SANITIZED:
        # the library carries a sanitizer runtime that a program built plainly, as the README
        # builds it, does not load first; the plain build runs this
        tap.skip("the README's C snippet", "a sanitizer build's libpmugate needs its runtime loaded first")
        return
    with open(os.path.join(t.SOURCE, "README.md")) as f:
        text = f.read()
    start = text.index("```c\n", text.index("From C, link")) + len("```c\n")
    snippet = text[start:text.index("```", start)]
    d = t.workdir()
    src, exe = os.path.join(d, "snippet.c"), os.path.join(d, "snippet")
    with open(src, "w") as f:
        f.write("#include <stdint.h>\n#include <stdio.h>\n#include \"pmugate/pmugate.h\"\n"
                "int main(void) {\n%s\nreturn 0;\n}\n" % snippet)
    lib = os.path.join(t.BUILD, "client")
    cc = subprocess.run(["cc", "-Wall", "-Werror", "-o", exe, src, "-I", os.path.join(t.SOURCE, "include"), "-L", lib,
                         "-Wl,-rpath," + lib, "-lpmugate"], capture_output=True, text=True)
    tap.ok(cc.returncode == 0, "the README's C snippet compiles with -Wall -Werror", cc.stderr)
    if cc.returncode != 0:
        return
    p = subprocess.run([exe], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, PMUGATE_SOCKET=os.path.join(d, "no-daemon.sock")))
    tap.ok(p.returncode == 1 and "cannot connect to pmugated" in p.stderr,
           "with no daemon it says it cannot connect and exits 1 (no crash)", (p.returncode, p.stderr))


def test_pmugatectl_messages(tap):
    sim = Sim("icx", rules=[("0-3", STENCIL)])
    try:
        def ctl(*args):
            return t.run_cli([t.PMUGATECTL] + list(args), sim.daemon.socket)
        rc, out, err = ctl("grant", "--job", "7", "--uid", "0", "--cpus", "0-1")
        tap.ok(rc == 0 and "to uid 0 (root)" in out and "open mode, where grants have no effect" in err,
               "grant names the user and says a grant has no effect in open mode", out + err)
        rc, out, _ = ctl("status")
        tap.ok(rc == 0 and "job 7" in out and "uid 0 (root)" in out, "status names users", out)
        rc, _, err = ctl("revoke")
        tap.ok(rc == 2 and "revoke needs --job ID" in err, "revoke without a job says what it needs", err)
        rc, out, err = ctl("reload")
        tap.ok(rc == 0 and "configuration reloaded from %s: pmugated runs in open mode" % os.path.join(
            sim.dir, "pmugate.conf") in out, "reload names the file it read and the mode it runs in", out + err)
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_unknown_options, test_partial_interval, test_intervals_on_clock, test_daemon_models,
                          test_output_at_scale, test_no_sample_dropped_1024, test_pinning_and_repeat,
                          test_readme_snippet, test_pmugatectl_messages]))

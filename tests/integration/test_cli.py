#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The measuring command line as perf and likwid-perfctr users expect it, through the real
daemon and socket: event names in any case and perf's generic names, 'pmugate list', units in
every output format, -o patterns and suffixes, CPU expressions and the caller's own CPUs, job
mode's CPUs, --help everywhere, one error prefix and exit status 2 for bad arguments, interrupted
runs, -r repeats."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pmugatetest as t
from pmugatetest import GROUPS, SOLVER, STENCIL, Sim
from test_topdown import Q

USER = t.UNPRIVILEGED_UID


def counts(doc):
    return {e: c["value"] for e, c in doc["aggregate"]["counts"].items()}


def test_event_names(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        lower = counts(sim.json("stat", "-e", "inst_retired.any,cpu_clk_unhalted.thread", "-c", "0", "-S", "0.3s",
                                "-O", "json"))
        tap.ok(set(lower) == {"INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD"},
               "lower-case names are shown in their one spelling", lower)
        ipc = lower["INST_RETIRED.ANY"] / lower["CPU_CLK_UNHALTED.THREAD"]
        tap.ok(abs(ipc - STENCIL["ipc"]) < 1e-6, "inst_retired.any counts on its fixed counter like "
               "INST_RETIRED.ANY (IPC %.6f)" % ipc)
        r = sim.json("stat", "-e", "instructions,cycles,ref-cycles,branches,branch-misses", "-c", "0", "-S", "0.3s",
                     "-O", "json")
        c = counts(r)
        tap.eq(sorted(c), sorted(["INST_RETIRED.ANY", "CPU_CLK_UNHALTED.THREAD", "CPU_CLK_UNHALTED.REF_TSC",
                                  "BR_INST_RETIRED.ALL_BRANCHES", "BR_MISP_RETIRED.ALL_BRANCHES"]),
               "perf's generic names resolve to the Intel events")
        tap.ok(c["INST_RETIRED.ANY"] > 0 and c["CPU_CLK_UNHALTED.THREAD"] > 0 and c["BR_MISP_RETIRED.ALL_BRANCHES"] > 0,
               "and count", c)
        rc, _, err = sim.run("stat", "-e", "cycles,CPU_CLK_UNHALTED.THREAD", "-c", "0", "-S", "0.1s")
        tap.ok(rc == 1 and "listed twice" in err, "an event named twice in two spellings is refused", err)
        rc, _, err = sim.run("stat", "-e", "INST_RETIRED.AN", "-c", "0", "-S", "0.1s")
        tap.ok(rc == 1 and "did you mean INST_RETIRED.ANY" in err and "libpfm4:" not in err,
               "an unknown name gets the closest known names", err)
        rc, _, err = sim.run("stat", "-e", "instrutions", "-c", "0", "-S", "0.1s")
        tap.ok(rc == 1 and "instructions" in err, "a misspelt generic name too", err)
    finally:
        sim.stop()


def test_list(tap):
    sim = Sim("icx", rules=[("0-7", STENCIL)])
    try:
        rc, out, err = sim.run("list", "events", "inst_retired")
        line = [l for l in out.splitlines() if l.split()[:1] == ["INST_RETIRED.ANY"]]
        tap.ok(rc == 0 and "Ice Lake-SP (icx)" in out and line and "fixed counter 0" in line[0],
               "list events PATTERN shows the model's events with descriptions", out + err)
        rc, out, _ = sim.run("list", "events", "mem_inst_retired.all_loads")
        tap.ok(rc == 0 and "MEM_INST_RETIRED.ALL_LOADS" in out and "load" in out.lower(),
               "libpfm4's events are listed with their descriptions", out)
        rc, out, _ = sim.run("list", "events", "cycles")
        tap.ok(any(l.split()[:1] == ["cycles"] for l in out.splitlines()), "perf's generic names are listed", out)
        rc, out, _ = sim.run("list", "groups")
        names = [l.split()[0] for l in out.splitlines()[1:] if l.strip()]
        tap.ok(rc == 0 and {"topdown-l1", "topdown-l2", "ipc"} <= set(names), "list groups shows the model's groups",
               out)
        rc, out, _ = sim.run("list", "metrics", "retiring")
        tap.ok(rc == 0 and "topdown-l1/tma_retiring" in out and "[%]" in out, "list metrics shows each group's metrics "
               "with units", out)
        rc, out, _ = sim.run("list")
        tap.ok(rc == 0 and "Events for" in out and "Groups for" in out and "Metrics" in out, "list alone shows all three")
        rc, _, err = sim.run("list", "events", "no-such-thing-anywhere")
        tap.ok(rc == 1 and "nothing matches" in err, "a pattern that matches nothing says so", err)
        rc, _, err = sim.run("list", "events", "a", "b")
        tap.ok(rc == 2 and err.startswith("pmugate: "), "list with too many arguments is a usage error", err)
        r = sim.json("stat", "-g", "IPC", "-c", "0", "-S", "0.2s", "-O", "json")
        tap.eq(r["group"], "ipc", "group names are case-insensitive (-g IPC loads ipc)")
    finally:
        sim.stop()


def test_units_and_files(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        rc, out, _ = sim.run("topdown", "-c", "0", "-S", "0.3s", "-O", "json")
        r = json.loads(out)
        units = {m["name"]: m["unit"] for m in r["metrics"]}
        ret = r["aggregate"]["metrics"]["tma_retiring"]
        tap.ok(units["tma_retiring"] == "%" and abs(ret - 100 * STENCIL["retiring"]) <= 100 * Q,
               "JSON: a '%%' metric's value is a percentage (%.3f)" % ret)
        r = json.loads(sim.run("stat", "-g", "ipc", "-c", "0", "-S", "0.2s", "-O", "json")[1])
        tap.ok(all(m["unit"] for m in r["metrics"]) and abs(r["aggregate"]["metrics"]["ipc"] - STENCIL["ipc"]) < 1e-6,
               "every shipped metric carries a unit, and the value is in it", r["metrics"])
        rc, out, _ = sim.run("topdown", "-c", "0", "-S", "0.2s")
        tap.ok("40.0 %" in out, "the table shows the same percentage", out)
        # Units as long as "cycles/insn" widen the value columns: every row ends its columns
        # where the header ends them.
        rc, out, _ = sim.run("stat", "-g", "ipc", "-c", "0-1", "-A", "-S", "0.2s")
        lines = [l for l in out.splitlines() if l.strip() and "Performance" not in l and "elapsed" not in l]
        header = lines[0] if lines else ""
        ends = [m.end() for m in re.finditer(r"\S+", header)]
        rows = [l for l in lines[1:] if "cycles/insn" in l or "insn/cycle" in l]
        tap.ok(rc == 0 and len(ends) == 3 and len(rows) == 2 and
               all(all(l[e - 1] != " " and (e == len(l) or l[e] == " ") for e in ends) for l in rows),
               "the table's value columns stay aligned with long units", out)

        # -I: JSON Lines on stdout, one document when asked, one table line per interval
        rc, out, _ = sim.run("topdown", "-c", "0", "-I", "100ms", "-S", "0.45s", "-O", "jsonl")
        lines = [json.loads(l) for l in out.splitlines()]
        tap.ok(4 <= len(lines) <= 6 and all("aggregate" in d for d in lines), "-O jsonl: one object per line")
        rc, out, _ = sim.run("topdown", "-c", "0", "-I", "100ms", "-S", "0.45s", "-O", "json-doc")
        doc = json.loads(out)
        tap.ok(4 <= len(doc["intervals"]) <= 6 and doc["kind"] == "topdown", "-O json-doc: one document of intervals")
        rc, out, _ = sim.run("topdown", "-l", "2", "-c", "0", "-I", "100ms", "-S", "0.45s")
        rows = [l for l in out.splitlines() if l.strip() and not l.startswith("#") and "Performance" not in l]
        tap.ok(rc == 0 and len(rows) == 5 and all(len(l.split()) == 2 + 12 for l in rows[:-1]) and
               rows[-1].split()[2 + 12:] == ["(partial)"],
               "-I table: one line per interval with every level-2 metric, the last partial one marked", out)

        # -o: patterns, and the format from the suffix
        pattern = os.path.join(sim.dir, "out-%h-%j-%r-%%.json")
        host = os.uname().nodename.split(".")[0]
        for rank in ("0", "1"):
            rc, _, err = sim.run("topdown", "-c", "0", "-S", "0.1s", "-o", pattern,
                                 env={"SLURM_JOB_ID": "77", "SLURM_PROCID": rank})
            tap.eq(rc, 0, "-o with a pattern, rank %s" % rank)
        for rank in ("0", "1"):
            path = os.path.join(sim.dir, "out-%s-77-%s-%%.json" % (host, rank))
            with open(path) as f:
                tap.eq(json.load(f)["kind"], "topdown", "%%h %%j %%r expand: rank %s has its own JSON file" % rank)
        rc, _, _ = sim.run("topdown", "-c", "0", "-S", "0.1s", "-o", os.path.join(sim.dir, "p-%p.csv"))
        made = [f for f in os.listdir(sim.dir) if f.startswith("p-") and f.endswith(".csv")]
        with open(os.path.join(sim.dir, made[0])) as f:
            tap.ok(len(made) == 1 and made[0][2:-4].isdigit() and f.readline().startswith("time,elapsed,cpu"),
                   "%p is the pid, and .csv writes CSV", made)
        rc, _, _ = sim.run("topdown", "-c", "0", "-S", "0.1s", "-o", os.path.join(sim.dir, "t.txt"))
        with open(os.path.join(sim.dir, "t.txt")) as f:
            tap.ok("Performance counter stats" in f.read(), ".txt writes the table")
        rc, _, _ = sim.run("topdown", "-c", "0", "-S", "0.1s", "-O", "csv", "-o", os.path.join(sim.dir, "o.json"))
        with open(os.path.join(sim.dir, "o.json")) as f:
            tap.ok(f.readline().startswith("time,"), "-O beats the suffix")
        rc, _, err = sim.run("topdown", "-c", "0", "-S", "0.1s", "-o", os.path.join(sim.dir, "x-%q"))
        tap.ok(rc == 2 and "%q" in err, "an unknown %-sequence is a usage error", err)

        # wrapper mode: results on stderr, the command keeps stdout
        rc, out, err = sim.run("stat", "-e", "instructions", "-c", "0", "--", "echo", "hello")
        tap.ok(rc == 0 and out == "hello\n" and "INST_RETIRED.ANY" in err, "wrapper results go to stderr", out + err)
    finally:
        sim.stop()


def test_cpu_selection(tap):
    sim = Sim("skx", sockets=2, cores=4, smt=True, rules=[("0-15", STENCIL)])
    try:
        for expr, want in (("S1:0-1", [4, 5]), ("S0:3-4", [3, 8]), ("N:0-1", [0, 1]), ("S0:0@S1:0", [0, 4]),
                           ("S0:0,S1:0", [0, 4]), ("C1:0", [4]), ("M0:1", [1]), ("2,1", [2, 1])):
            r = sim.json("stat", "-e", "instructions", "-c", expr, "-S", "0.1s", "-O", "json")
            tap.eq(r["cpus"], want, "-c %s selects %s" % (expr, want))
        for expr, message, status in (("3-1", "CPU list '3-1' is descending", 2), ("99", "CPU 99 does not exist", 1),
                                      ("S0:8", "S0 has 8 CPUs", 1), ("S5:", "no socket 5", 1),
                                      ("Q0:1", "not a domain", 2)):
            rc, _, err = sim.run("stat", "-e", "instructions", "-c", expr, "-S", "0.1s")
            tap.ok(rc == status and message in err and "Invalid argument" not in err,
                   "-c %s: '%s', exit %d" % (expr, message, status), err)
        # without -c or -C: the CPUs the caller may run on
        rc, out, err = t.run_cli(["taskset", "-c", "1", t.PMUGATE, "stat", "-e", "instructions", "-S", "0.1s", "-O",
                                  "json"], sim.daemon.socket, env={"PMUGATE_GROUP_PATH": GROUPS})
        tap.ok(rc == 0 and json.loads(out)["cpus"] == [1], "the default CPUs are the caller's affinity", out + err)
    finally:
        sim.stop()


def job_daemon():
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=2, cores=2, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = job\nadmin_groups = %d\nuser_groups = %d\n" % (t.ADMIN_GID, t.USER_GID))
    return t.Daemon(d, ["--root=" + m.root], config=conf)


def test_job_mode(tap):
    dm = job_daemon()
    try:
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket, uid=USER, gid=USER, groups=[t.USER_GID])
        tap.ok(rc == 0 and "read no, write no" in out, "info: a job-mode user without a grant can neither read nor "
               "write", out + err)
        r = json.loads(t.run_cli([t.PMUGATE, "info", "--json"], dm.socket, uid=USER, gid=USER, groups=[t.USER_GID])[1])
        tap.eq((r["caller"]["read"], r["caller"]["write"]), (False, False), "and --json says the same")
        rc, out, err = t.run_cli([t.PMUGATECTL, "grant", "--job", "42", "--uid", str(USER), "--cpus", "0-1"], dm.socket)
        tap.eq(rc, 0, "the admin grants job 42 on CPUs 0-1")
        rc, out, err = t.run_cli([t.PMUGATE, "info"], dm.socket, uid=USER, gid=USER, groups=[t.USER_GID])
        tap.ok(rc == 0 and "read yes, write yes" in out, "with the grant, read and write", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "topdown", "-C", "2-3", "--", "true"], dm.socket, uid=USER, gid=USER,
                                 groups=[t.USER_GID], env={"PMUGATE_GROUP_PATH": GROUPS})
        tap.ok(rc == 1 and "-C 2-3: CPUs 2-3 are not in your job (job 42 has CPUs 0-1)" in err,
               "CPUs outside the job are named", err)
    finally:
        dm.stop()


def test_manners(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        for prog, verbs in ((t.PMUGATE, ["info", "read", "write", "topdown", "stat", "list"]),
                            (t.PMUGATECTL, ["status", "grant", "revoke", "reset", "reload", "jobmap"])):
            for verb in verbs:
                rc, out, err = t.run_cli([prog, verb, "--help"], "/nonexistent/socket")
                tap.ok(rc == 0 and out.startswith("Usage: %s %s" % (os.path.basename(prog), verb)) and not err,
                       "%s %s --help" % (os.path.basename(prog), verb), out + err)
        for argv in (["topdown", "--bogus"], ["topdown", "-l"], ["stat", "-x"], ["info", "--bogus"],
                     ["list", "--bogus"], ["--bogus"], ["read", "-c", "0"], ["topdown", "-r", "0", "--", "true"]):
            rc, _, err = t.run_cli([t.PMUGATE] + argv, sim.daemon.socket)
            tap.ok(rc == 2 and err.startswith("pmugate: ") and "\n" == err[-1] and err.count("\n") == 1,
                   "pmugate %s: exit 2, one line with the program's prefix" % " ".join(argv), err)
        rc, _, err = t.run_cli([t.PMUGATECTL, "grant", "--bogus"], sim.daemon.socket)
        tap.ok(rc == 2 and err.startswith("pmugatectl: "), "pmugatectl: exit 2 and its own prefix", err)
        rc, _, err = t.run_cli([t.PMUGATECTL, "status"], "/nonexistent/socket")
        tap.ok(rc == 1 and err.startswith("pmugatectl: cannot connect"), "pmugatectl's connection errors are its own",
               err)
    finally:
        sim.stop()


def test_interrupt_and_repeat(tap):
    sim = Sim("spr", rules=[("0-7", STENCIL)])
    try:
        for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
            env = dict(os.environ, PMUGATE_SOCKET=sim.daemon.socket, PMUGATE_GROUP_PATH=GROUPS)
            p = t.spawn([t.PMUGATE, "topdown", "-c", "0", "-S", "30s", "-O", "json"], env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            p.send_signal(sig)
            out, err = p.communicate(timeout=20)
            doc = json.loads(out) if out else {}
            tap.ok(p.returncode == 128 + sig and doc.get("interrupted") == name and 0.5 < doc["elapsed"] < 10 and
                   "interrupted by %s" % name in err,
                   "%s during -S: the partial result, marked, and exit %d" % (name, 128 + sig), (out[:300], err))
        # a progress line on a terminal (script(1) gives pmugate one), none in a pipe
        env = dict(os.environ, PMUGATE_SOCKET=sim.daemon.socket, PMUGATE_GROUP_PATH=GROUPS)
        try:
            p = subprocess.run(["script", "-qec", "%s topdown -c 0 -S 2.2s -o /dev/null" % t.PMUGATE, "/dev/null"],
                               env=env, capture_output=True, text=True, timeout=60)
            tap.ok(p.returncode == 0 and "measuring, 1 of 2.2 s" in p.stdout,
                   "a long -S shows its progress on a terminal", p.stdout[-300:])
        except FileNotFoundError:
            tap.ok(True, "progress on a terminal # SKIP script(1) is missing")
        rc, _, err = sim.run("topdown", "-c", "0", "-S", "2.2s", "-o", "/dev/null")
        tap.ok(rc == 0 and "measuring" not in err, "and none when stderr is not a terminal", err)
        rc, out, err = sim.run("stat", "-e", "instructions", "-c", "0", "-r", "3", "-O", "json", "--", "sleep", "0.1")
        r = json.loads(err)
        c = r["aggregate"]["counts"]["INST_RETIRED.ANY"]
        tap.ok(rc == 0 and r["runs"] == 3 and c["stddev"] is not None and c["value"] > 0,
               "-r 3: the mean and standard deviation over three runs", err[:400])
        rc, out, err = sim.run("stat", "-g", "ipc", "-c", "0", "-r", "2", "-O", "json", "--", "sleep", "0.1")
        r = json.loads(err)
        tap.ok(rc == 0 and r["group"] == "ipc" and r["runs"] == 2 and "ipc" in r["aggregate"]["metrics_stddev"],
               "-r with a group: the group and each metric's spread", err[:400])
        rc, out, err = sim.run("topdown", "-c", "0", "-r", "2", "--", "sleep", "0.1")
        tap.ok(rc == 0 and "( +-" in err and "2 runs" in err, "-r in the table shows the spread", err)
    finally:
        sim.stop()


def test_multiplexed_intervals(tap):
    # Ice Lake-SP level 2 needs three event sets on the generic counters
    sim = Sim("icx", rules=[("0-7", STENCIL)])
    try:
        rc, out, err = sim.run("topdown", "-l", "2", "-c", "0-1", "-I", "100ms", "-S", "0.65s", "-O", "jsonl")
        docs = [json.loads(l) for l in out.splitlines()]
        tap.ok(rc == 0 and len(docs) == 7 and [d["partial"] for d in docs] == [False] * 6 + [True],
               "-I 100ms -S 0.65s on a multiplexed level 2: six intervals of 100 ms, then the partial one (%d)" %
               len(docs), err)
        # the partial one lacks the sets that had no turn in it
        docs = docs[:-1]
        nulls = [(d["start"], m) for d in docs for m, v in d["aggregate"]["metrics"].items() if v is None]
        tap.eq(nulls, [], "every interval has all twelve metrics: the sets take turns within each interval")
        tap.ok(all(d["samples"] == docs[0]["event_sets"] == 3 for d in docs),
               "each interval holds one turn of each of the three sets", [d["samples"] for d in docs])
        worst = max(abs(d["aggregate"]["metrics"][m] / 100 - STENCIL[k])
                    for d in docs for m, k in (("tma_retiring", "retiring"), ("tma_frontend_bound", "frontend_bound"),
                                               ("tma_memory_bound", "memory_bound")))
        tap.ok(worst <= Q + 1e-4, "and the values are right in every interval (worst %.5f)" % worst)
        c = docs[0]["aggregate"]["counts"]
        tap.ok(c["INT_MISC.UOP_DROPPING"]["scale"] == 1.0 and c["INT_MISC.CLEARS_COUNT"]["scale"] == 1.0 and
               c["UOPS_ISSUED.ANY"]["scale"] > 1.5,
               "level 1's correction events stay on counters in every set (scale 1); level 2's take turns")
        rc, _, err = sim.run("topdown", "-l", "2", "-c", "0", "-I", "20ms", "-S", "0.1s")
        tap.ok(rc == 1 and "use -I 30ms or longer" in err, "an interval too short for every set's turn is refused "
               "with the minimum", err)
    finally:
        sim.stop()


def png_info(path):
    """(width, height, {tEXt key: value}) of a PNG, from its chunks."""
    import struct
    import zlib
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG" % path)
    at, size, text = 8, None, {}
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            text[key.decode()] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, value = body.partition(b"\0")
            text[key.decode()] = zlib.decompress(value[1:]).decode("latin-1")
        at += 12 + length
    return size[0], size[1], text


def test_plot(tap):
    try:
        import matplotlib.image
    except ImportError:
        tap.ok(True, "pmugate plot # SKIP needs python3-matplotlib, which this machine lacks (contrib/install-deps.sh)")
        return
    sim = Sim("spr", rules=[("0-1", STENCIL), ("2-3", SOLVER)])
    try:
        outputs = {}
        for fmt, suffix in (("csv", "csv"), ("jsonl", "jsonl"), ("json-doc", "json")):
            path = os.path.join(sim.dir, "timeline.%s" % suffix)
            rc, _, err = sim.run("topdown", "-l", "2", "-c", "0-3", "-I", "100ms", "-S", "0.65s", "-O", fmt, "-o", path)
            tap.eq(rc, 0, "a -I %s timeline to plot" % fmt)
            outputs[fmt] = path
        for fmt, path in outputs.items():
            png = os.path.join(sim.dir, "plot-%s.png" % fmt)
            rc, out, err = t.run_cli([t.PMUGATE, "plot", "-o", png, path], sim.daemon.socket)
            tap.ok(rc == 0 and out.strip() == png, "pmugate plot renders the %s timeline" % fmt, err)
            width, height, text = png_info(png)
            tap.eq((width, height), (1000, 800), "%s: the PNG has the default 10x8 inch size at 100 dpi" % fmt)
            description = text.get("Description", "")
            tap.ok(all(m in description for m in ("tma_retiring", "tma_backend_bound", "tma_memory_bound",
                                                  "tma_heavy_operations")) and "over 4 CPUs" in description,
                   "%s: level 1 and level 2 series and a 4-CPU heatmap are drawn" % fmt, description)
            pixels = matplotlib.image.imread(png)
            colors = len({tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::97]})
            tap.ok(pixels.std() > 0.05 and colors > 20, "%s: the image is not empty (%d colors sampled)" %
                   (fmt, colors))
        png = os.path.join(sim.dir, "small.png")
        rc, _, err = t.run_cli([t.PMUGATE, "plot", "--size", "6x4", "-m", "tma_memory_bound", "-o", png,
                                outputs["csv"]], sim.daemon.socket)
        width, height, text = png_info(png)
        tap.ok(rc == 0 and (width, height) == (600, 400) and "heatmap: tma_memory_bound" in text["Description"],
               "--size and -m choose the size and the heatmap's metric", err)
        bad = os.path.join(sim.dir, "bad.csv")
        with open(bad, "w") as f:
            f.write("not,a,pmugate,file\n1,2,3,4\n")
        rc, _, err = t.run_cli([t.PMUGATE, "plot", bad], sim.daemon.socket)
        tap.ok(rc == 1 and err.startswith("pmugate-plot: "), "a file that is not pmugate output is refused", err)
        rc, _, err = t.run_cli([t.PMUGATE, "plot", "-m", "no_such_metric", outputs["csv"]], sim.daemon.socket)
        tap.ok(rc == 1 and "no_such_metric" in err, "an unknown metric is refused", err)
        rc, _, err = t.run_cli([t.PMUGATE, "plot", "--size", "0x0", outputs["csv"]], sim.daemon.socket)
        tap.ok(rc == 2, "a bad --size is a usage error", err)
        rc, out, _ = t.run_cli([t.PMUGATE, "plot", "--help"], sim.daemon.socket)
        tap.ok(rc == 0 and "usage: pmugate plot" in out, "pmugate plot --help")
    finally:
        sim.stop()


def daemon_requests(sim):
    rc, out, err = t.run_cli([t.PMUGATECTL, "status"], sim.daemon.socket)
    line = [l for l in out.splitlines() if l.startswith("Requests:")]
    if rc != 0 or not line:
        raise AssertionError("pmugatectl status: %s" % (out + err))
    return int(line[0].split()[1])


def test_round_trips(tap):
    # A TopDown level 2 sample on Sapphire Rapids is one round trip: at 512 CPUs (it was two), at
    # 4096 (it was eight), and with multiplexing and SMT alignment, which add operations per CPU.
    cases = [
        ("spr", 2, 128, ["topdown", "-l", "2"], 1, "512 CPUs, Sapphire Rapids TopDown level 2"),
        ("spr", 8, 256, ["topdown", "-l", "2"], 1, "4096 CPUs, Sapphire Rapids TopDown level 2"),
        # the most a sample does per CPU: event sets taking turns (their EVTSELs written), SMT
        # siblings' windows timed by the TSC before and after
        ("skx", 8, 256, ["topdown", "-l", "2"], 2, "4096 CPUs, Skylake-SP TopDown level 2 (multiplexed, SMT)"),
    ]
    for model, sockets, cores, command, sets, what in cases:
        n_cpus = sockets * cores * 2
        sim = Sim(model, sockets=sockets, cores=cores, rules=[("0-%d" % (n_cpus - 1), STENCIL)])
        try:
            runs = []
            for duration in ("1s", "2s"):
                before = daemon_requests(sim)
                r = sim.json(*command, "-c", "N:", "-S", duration, "--reset-period=100ms", "-O", "json")
                runs.append((daemon_requests(sim) - before - 1, r["samples"], r["event_sets"]))
            requests = runs[1][0] - runs[0][0]
            samples = runs[1][1] - runs[0][1]
            tap.ok(samples > 0 and requests == samples and runs[0][2] >= sets,
                   "%s: one daemon round trip per sample (%d more requests for %d more samples, %d event sets)" %
                   (what, requests, samples, runs[0][2]), runs)
        finally:
            sim.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_event_names, test_list, test_units_and_files, test_cpu_selection, test_job_mode,
                          test_manners, test_interrupt_and_repeat, test_multiplexed_intervals,
                          test_plot, test_round_trips]))

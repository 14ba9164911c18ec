#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Client CPU of the pmugate command line per measured CPU and sample, for each output.

Usage: bench/run-bench-output.py [--sockets=N] [--cores=N] [--interval=MS] [--duration=S] [BUILD_DIR]

Starts BUILD_DIR/daemon/pmugated with the simulated PMU of a Sapphire Rapids of N sockets (4)
of N cores (128), SMT on (1024 CPUs; --sockets=8 --cores=256 is 4096), on the realtime clock,
and runs 'pmugate topdown -l 2 -c N: -I INTERVAL -S DURATION' (100 ms, 2 s), and again for twice
the duration, for each output:
the table (the aggregate line only: the library alone plus one line, the floor), CSV and JSON
with every CPU's rows, and CSV and JSON with --aggregate. For each it prints the intervals
written and asked for (fewer: samples dropped because writing took longer than -I), the bytes
written, and the client's CPU time (user + system, from wait4()) divided by the measured CPUs
and the intervals written; "marginal" is what the longer run cost more per CPU and interval it
wrote more, which leaves out start-up (connecting, programming every CPU, group files). Output goes to a file on tmpfs. Needs root, as the daemon does. Not a
test: it prints numbers, it does not judge them.
"""

import json
import os
import subprocess
import sys
import time

import benchnode

SIM_CONFIG = "[machine]\nmodel = spr\nsockets = %d\ncores = %d\nsmt = yes\n[clock]\nmode = realtime\n"
OUTPUTS = [
    ("table (aggregate)", ["-O", "table"]),
    ("csv", ["-O", "csv"]),
    ("jsonl", ["-O", "jsonl"]),
    ("csv --aggregate", ["-O", "csv", "--aggregate"]),
    ("jsonl --aggregate", ["-O", "jsonl", "--aggregate"]),
]


def intervals(kind, path):
    with open(path) as f:
        text = f.read()
    if kind.startswith("csv"):
        return len({line.split(",", 1)[0] for line in text.splitlines()[1:]}), len(text)
    if kind.startswith("json"):
        docs = [json.loads(line) for line in text.splitlines()]
        return len(docs), len(text)
    return len([line for line in text.splitlines() if line.startswith(" ") and "all" in line.split()[:2]]), len(text)


def main(argv):
    shape = {"--sockets": 4, "--cores": 128, "--interval": 100, "--duration": 2}
    rest = []
    for a in argv:
        key, _, value = a.partition("=")
        if key in shape and value.replace(".", "", 1).isdigit() and float(value) > 0:
            shape[key] = float(value) if key == "--duration" else int(value)
        else:
            rest.append(a)
    if any(a in ("-h", "--help") for a in rest) or len(rest) > 1 or any(a.startswith("-") for a in rest):
        print(__doc__.strip())
        return 0 if rest and rest[0] in ("-h", "--help") else 2
    build = os.path.abspath(rest[0] if rest else "build")
    rc = benchnode.check_programs(build, ["client/pmugate"], "run-bench-output.py")
    if rc is not None:
        return rc
    groups = os.path.join(benchnode.SOURCE, "client", "groups")
    os.environ.setdefault("PMUGATE_GROUP_PATH", groups)
    pt = benchnode.harness(build)
    work = pt.workdir()
    config = os.path.join(work, "sim.conf")
    n_cpus = shape["--sockets"] * shape["--cores"] * 2
    with open(config, "w") as f:
        f.write(SIM_CONFIG % (shape["--sockets"], shape["--cores"]))
    daemon = pt.Daemon(work, ["--backend=sim", "--sim-model=spr", "--sim-config=" + config])
    out_dir = "/dev/shm" if os.path.isdir("/dev/shm") else work
    asked = int(round(shape["--duration"] * 1000 / shape["--interval"]))
    print("%d CPUs, topdown -l 2 -c N: -I %dms -S %gs: %d intervals asked for" %
          (n_cpus, shape["--interval"], shape["--duration"], asked))
    print("%-18s %10s %12s %10s %14s %14s" % ("output", "intervals", "bytes", "CPU s", "us/CPU/sample",
                                              "marginal"))
    try:
        for kind, args in OUTPUTS:
            runs = []
            for duration in (shape["--duration"], 2 * shape["--duration"]):
                path = os.path.join(out_dir, "pmugate-bench-output-%d" % os.getpid())
                argv = [os.path.join(build, "client", "pmugate"), "--socket=" + daemon.socket, "topdown", "-l", "2",
                        "-c", "N:", "-I", "%dms" % shape["--interval"], "-S", "%gs" % duration, "-o", path] + args
                proc = subprocess.Popen(argv, env=dict(os.environ, PMUGATE_GROUP_PATH=groups), stderr=subprocess.PIPE)
                _, status, usage = os.wait4(proc.pid, 0)
                err = proc.stderr.read().decode()
                if os.waitstatus_to_exitcode(status) != 0:
                    print("%-18s failed (%d): %s" % (kind, os.waitstatus_to_exitcode(status), err.strip()))
                    break
                written, size = intervals(kind, path)
                os.unlink(path)
                runs.append((written, size, usage.ru_utime + usage.ru_stime))
            if len(runs) < 2:
                continue
            (n1, b1, c1), (n2, b2, c2) = runs
            per_sample = (c2 - c1) * 1e6 / n_cpus / (n2 - n1) if n2 > n1 else float("nan")
            print("%-18s %5d/%-4d %12d %10.3f %14.2f %14.2f" % (kind, n1, asked, b1, c1, c1 * 1e6 / n_cpus / max(n1, 1),
                                                                per_sample))
            print("%-18s %5d/%-4d %12d %10.3f %14.2f" % ("", n2, 2 * asked, b2, c2, c2 * 1e6 / n_cpus / max(n2, 1)))
    finally:
        daemon.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

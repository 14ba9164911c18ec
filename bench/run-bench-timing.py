#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The overhead of `pmugate timing --mode ips` on the program it samples: the suite's timing
loop (random loads from a 32 MiB array) run alone and under pmugate timing, in pairs of
alternating order, through a real pmugated on a fake Sapphire Rapids of this machine's CPUs
(IP mode samples the real kernel's cpu-clock), and the samples per second it recorded.

Usage: bench/run-bench-timing.py [BUILD_DIR] [-- --pairs=N --rounds=R --period=NS]

Each pair runs `timing_loop 0 R` (R rounds of 100000 random loads: a fixed amount of work)
alone (A) and as `pmugate timing --mode ips [--period NS] -- timing_loop 0 R` (B), the order
alternating from pair to pair; the wall time of each is measured around the whole command
(B's includes pmugate's start, the daemon's open and the analysis), and the loop reports the
CPU time its work took (in B, with the sampling interrupts the kernel charges to it). Prints each pair, the median and mean of B/A of both
times, and the samples per second of B. Needs root, as the daemon does. Not a test: it prints numbers.
"""

import json
import os
import statistics
import subprocess
import sys
import time

import benchnode


def options(extra):
    o = {"pairs": 10, "rounds": 1000, "period": 0}
    for a in extra:
        key, _, value = a.lstrip("-").partition("=")
        if key not in o:
            raise SystemExit("unknown option %s" % a)
        o[key] = type(o[key])(value)
    return o


def run(argv, env=None):
    """(wall seconds of the whole command, CPU seconds the loop itself reports)"""
    start = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    took = time.monotonic() - start
    if p.returncode != 0:
        raise SystemExit("%s: exit %d: %s" % (" ".join(argv), p.returncode, p.stderr))
    return took, float(p.stdout.split()[1])


def main():
    status, build, extra, command = benchnode.parse(sys.argv[1:], __doc__, "run-bench-timing.py",
                                                    os.path.join("tests", "timing_loop"))
    if status is not None:
        return status
    o = options(extra)
    pt = benchnode.harness(build)
    loop = os.path.join(build, "tests", "timing_loop")
    pmugate = os.path.join(build, "client", "pmugate")
    d = pt.workdir()
    m = pt.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=os.cpu_count() or 1, smt=False)
    with open("/proc/sys/kernel/perf_event_max_sample_rate") as f:
        m._write("proc/sys/kernel/perf_event_max_sample_rate", f.read())
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nadmin_groups = %d\nuser_groups = %d\n" % (pt.ADMIN_GID, pt.USER_GID))
    daemon = pt.Daemon(d, ["--root=" + m.root], config=conf)
    env = dict(os.environ, PMUGATE_SOCKET=daemon.socket)
    out = os.path.join(d, "timing.json")
    pairs, rates = [], []
    try:
        print("# %s" % command)
        print("# pair  order  alone_s  timing_s  wall_ratio  loop_cpu_A  loop_cpu_B  cpu_ratio  samples/s")
        cpu_pairs = []
        for i in range(o["pairs"]):
            b_argv = [pmugate, "timing", "--mode", "ips", "--format", "json", "-o", out]
            if o["period"]:
                b_argv += ["--period", str(o["period"])]
            b_argv += ["--", loop, "0", str(o["rounds"])]
            order = "AB" if i % 2 == 0 else "BA"
            times = {}
            for which in order:
                if which == "A":
                    times["A"] = run([loop, "0", str(o["rounds"])])
                else:
                    if os.path.exists(out):
                        os.unlink(out)
                    times["B"] = run(b_argv, env)
                    with open(out) as f:
                        doc = json.load(f)
                    rates.append(doc["samples"] / doc["elapsed"] if doc["elapsed"] > 0 else float("nan"))
            pairs.append(times["B"][0] / times["A"][0])
            cpu_pairs.append(times["B"][1] / times["A"][1])
            print("%6d  %5s  %7.3f  %8.3f  %10.3f  %10.3f  %10.3f  %9.3f  %9.0f" % (
                i, order, times["A"][0], times["B"][0], pairs[-1], times["A"][1], times["B"][1], cpu_pairs[-1],
                rates[-1]))
        for what, values in (("wall", pairs), ("loop CPU", cpu_pairs)):
            print("%s B/A: median %.4f, mean %.4f, min %.4f, max %.4f over %d pairs" % (
                what, statistics.median(values), statistics.mean(values), min(values), max(values), len(values)))
        print("samples/s (B, over its elapsed time): median %.0f" % statistics.median(rates))
    finally:
        daemon.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

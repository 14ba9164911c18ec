#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The perf path benchmark: TopDown level 2 through pmugated's perf_event path on simulated
Sapphire Rapids machines of 64, 256, 1024 and 4096 CPUs, against the floor of reading the same
groups in one process.

Usage: bench/run-bench-perf.py [--cpus=64,256,1024,4096] [--samples=N] [--no-cli] [BUILD_DIR]

For each size: starts BUILD_DIR/daemon/pmugated on the simulator with --counters=perf, runs
bench-perf (N samples through the library, the daemon's request counter and CPU time, a
perf_open's cost), then `pmugate topdown -l 2` on every CPU twice, for one second with and
without -I 20ms, for the CLI's own CPU per interval; stops the daemon and runs
bench-perf-floor on the same machine with the groups bench-perf wrote. Needs root, as the
daemon does. Not a test: it prints numbers, it does not judge them.
"""

import os
import resource
import subprocess
import sys

import benchnode

SIM_CONFIG = "[machine]\nmodel = spr\nsockets = %d\ncores = %d\nsmt = yes\n[clock]\nmode = realtime\n"
# CPUs -> (sockets, cores per socket), SMT on
SHAPES = {64: (1, 32), 256: (2, 64), 1024: (4, 128), 4096: (8, 256)}
# the daemon's tick of the simulator's perf driver (PERF_SIM_TICK_USEC)
SIM_TICK_USEC = 4000
CLI_SECONDS = 1.0
CLI_INTERVAL_MS = 20


def keyvalues(text):
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    return out


def requests(pt, daemon):
    return pt.Client(daemon.socket).call("status")["counters"]["requests"]


def cli_cpu(pt, build, daemon, cpus, interval):
    """The CLI's CPU time (user + system, s) for one run of topdown -l 2 on cpus, and the
    daemon requests it made."""
    argv = [os.path.join(build, "client", "pmugate"), "topdown", "-l", "2", "-c", "0-%d" % (cpus - 1),
            "-S", "%gs" % CLI_SECONDS, "-O", "csv", "-o", "/dev/null"]
    if interval:
        argv[4:4] = ["-I", "%dms" % CLI_INTERVAL_MS]
    env = dict(os.environ, PMUGATE_SOCKET=daemon.socket)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    req0 = requests(pt, daemon)
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    req1 = requests(pt, daemon)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), p.stderr.strip()))
    # the second status is one request of its own
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, req1 - req0 - 1


def run_size(pt, build, cpus, samples, cli):
    sockets, cores = SHAPES[cpus]
    work = pt.workdir()
    config = os.path.join(work, "sim.conf")
    plan = os.path.join(work, "plan.txt")
    with open(config, "w") as f:
        f.write(SIM_CONFIG % (sockets, cores))
    daemon = pt.Daemon(work, ["--backend=sim", "--sim-model=spr", "--sim-config=" + config, "--counters=perf"])
    try:
        p = subprocess.run([os.path.join(build, "bench", "bench-perf"), "--socket=" + daemon.socket,
                            "--daemon-pid=%d" % daemon.proc.pid, "--samples=%d" % samples, "--plan=" + plan],
                           stdout=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError("bench-perf failed at %d CPUs" % cpus)
        got = keyvalues(p.stdout)
        if cli:
            with_i, req_i = cli_cpu(pt, build, daemon, cpus, True)
            without, req_none = cli_cpu(pt, build, daemon, cpus, False)
            intervals = CLI_SECONDS * 1000 / CLI_INTERVAL_MS
            got["cli_requests_per_interval"] = (req_i - req_none) / intervals
            # an interval the CLI could not keep up with is no sample: per perf_read it made
            got["cli_cpu_us_per_sample"] = (with_i - without) * 1e6 / max(req_i - req_none, 1)
    finally:
        daemon.stop()
    for tick, prefix in ((0, ""), (SIM_TICK_USEC, "ticked_")):
        p = subprocess.run([os.path.join(build, "bench", "bench-perf-floor"), "--sim-model=spr",
                            "--sim-config=" + config, "--plan=" + plan, "--samples=%d" % samples,
                            "--tick-usec=%d" % tick], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if p.returncode != 0:
            raise RuntimeError("bench-perf-floor failed at %d CPUs" % cpus)
        got.update({prefix + k: v for k, v in keyvalues(p.stdout).items()})
    return got


ROWS = [
    ("events per CPU (groups)", lambda g: "%d (%d)" % (g["events_per_cpu"], g["groups"])),
    ("round trips per sample", lambda g: "%.2f" % g["round_trips_per_sample"]),
    ("sample wall time", lambda g: "%.0f us" % g["sample_wall_us"]),
    ("daemon CPU per sample", lambda g: "%.0f us" % g["daemon_cpu_us"]),
    ("daemon CPU per CPU and sample", lambda g: "%.0f ns" % g["daemon_cpu_ns_per_cpu"]),
    ("floor, ticked every 4 ms as well", lambda g: "%.0f ns" % g["ticked_floor_cpu_ns_per_cpu"]),
    ("**daemon / floor** (both ticked)",
     lambda g: "**%.2f**" % (g["daemon_cpu_ns_per_cpu"] / g["ticked_floor_cpu_ns_per_cpu"])),
    ("floor, no tick", lambda g: "%.0f ns" % g["floor_cpu_ns_per_cpu"]),
    ("simulator's tick, events open, idle", lambda g: "%.1f ms/s" % (g["tick_cpu_us_per_s"] / 1e3)),
    ("library: client CPU per sample", lambda g: "%.0f us" % g["client_cpu_us"]),
    ("  per CPU", lambda g: "%.0f ns" % g["client_cpu_ns_per_cpu"]),
    ("CLI (-I %dms): requests per interval" % CLI_INTERVAL_MS,
     lambda g: "%.2f" % g["cli_requests_per_interval"] if "cli_requests_per_interval" in g else "-"),
    ("CLI: CPU per sample (per request)",
     lambda g: "%.0f us" % g["cli_cpu_us_per_sample"] if "cli_cpu_us_per_sample" in g else "-"),
    ("perf_open + leases held: wall", lambda g: "%.2f ms" % (g["open_wall_us"] / 1e3)),
    ("perf_open: daemon CPU", lambda g: "%.2f ms" % (g["open_daemon_cpu_us"] / 1e3)),
    ("  per event opened", lambda g: "%.0f ns" % g["open_daemon_ns_per_event"]),
    ("floor: the same opens", lambda g: "%.2f ms (%.0f ns/event)" % (g["floor_open_us"] / 1e3,
                                                                    g["floor_open_ns_per_event"])),
]


def main(argv):
    sizes = sorted(SHAPES)
    samples = 200
    cli = True
    rest = []
    for a in argv:
        key, _, value = a.partition("=")
        if key == "--cpus" and value and all(v.isdigit() and int(v) in SHAPES for v in value.split(",")):
            sizes = [int(v) for v in value.split(",")]
        elif key == "--samples" and value.isdigit() and int(value) > 0:
            samples = int(value)
        elif a == "--no-cli":
            cli = False
        else:
            rest.append(a)
    if any(a in ("-h", "--help") for a in rest) or len(rest) > 1 or any(a.startswith("-") for a in rest):
        print(__doc__.strip())
        return 0 if rest and rest[0] in ("-h", "--help") else 2
    build = os.path.abspath(rest[0] if rest else "build")
    rc = benchnode.check_programs(build, ["bench/bench-perf", "bench/bench-perf-floor", "client/pmugate"],
                                  "run-bench-perf.py")
    if rc is not None:
        return rc
    os.environ.setdefault("PMUGATE_GROUP_PATH", os.path.join(benchnode.SOURCE, "client", "groups"))
    pt = benchnode.harness(build)
    results = {}
    for cpus in sizes:
        results[cpus] = run_size(pt, build, cpus, samples, cli)
        sys.stderr.write("%d CPUs done\n" % cpus)
    print("TopDown level 2 via perf on the simulated Sapphire Rapids, %d samples" % samples)
    print("| | " + " | ".join("%d CPUs" % c for c in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name, fmt in ROWS:
        print("| %s | " % name + " | ".join(fmt(results[c]) for c in sizes) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

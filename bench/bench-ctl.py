#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Times pmugatectl grant and revoke end to end, as a Slurm Prolog and Epilog run them.

Usage: bench/bench-ctl.py [BUILD_DIR] [--runs=N]   (BUILD_DIR defaults to "build", N to 200)

Starts BUILD_DIR/daemon/pmugated on a fake Sapphire Rapids machine in a temporary directory on
tmpfs (as run-bench.py does), then has BUILD_DIR/bench/bench-spawn run, N times each in
interleaved blocks of 10, the whole process as an admin command is run: spawn, exec, dynamic
loading, connect, request, reply, exit:
  pmugatectl --version                           the cost of starting the process alone
  pmugatectl grant --job J --uid U               a new job's grant (the Prolog's command)
  pmugatectl revoke --job J                      its revoke (the Epilog's command)
and for comparison `pmugate --version`, a program linked with all of libpmugate (libpfm4,
muparser, the C++ runtime). Prints the median, 90th percentile and maximum of the wall time and
the median CPU time (user + system, which depends little on other load) in milliseconds.
Not a test: it prints numbers, it does not judge them. Needs root, as the daemon does.
"""

import os
import statistics
import subprocess
import sys

import benchnode


def timed(spawn, runs, argv, env):
    """Milliseconds of each of runs runs of argv, from bench-spawn (posix_spawn, no Python
    in the timed path); "%d" in argv becomes the run's number."""
    p = subprocess.run([spawn, str(runs)] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), p.returncode, p.stderr.decode()))
    return [tuple(float(x) for x in line.split()) for line in p.stdout.splitlines()]


def summary(name, samples):
    wall = sorted(w for w, _ in samples)
    cpu = sorted(c for _, c in samples)
    p90 = wall[min(len(wall) - 1, int(len(wall) * 0.9))]
    print("%-38s wall: median %6.2f  p90 %6.2f  max %6.2f ms   CPU: median %5.2f ms   (n=%d)" %
          (name, statistics.median(wall), p90, wall[-1], statistics.median(cpu), len(wall)))


def main(argv):
    runs = 200
    args = []
    for a in argv:
        if a.startswith("--runs="):
            runs = int(a.split("=", 1)[1])
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            args.append(a)
    if len(args) > 1:
        print(__doc__.strip())
        return 2
    build = os.path.abspath(args[0] if args else "build")
    ctl = os.path.join(build, "client", "pmugatectl")
    pmugate = os.path.join(build, "client", "pmugate")
    spawn = os.path.join(build, "bench", "bench-spawn")
    rc = benchnode.check_programs(build, ["client/pmugatectl", "client/pmugate", "bench/bench-spawn"],
                                  "bench-ctl.py")
    if rc is not None:
        return rc

    with benchnode.FakeNode(build, "pmugate-bench-ctl-", sockets=2, cores=8) as node:
        daemon = node.daemon
        env = dict(os.environ, PMUGATE_SOCKET=daemon.socket)
        sock = "--socket=" + daemon.socket
        print("command: bench/bench-ctl.py %s --runs=%d\n" % (args[0] if args else "build", runs))
        commands = [("/bin/true (the floor: any process)", ["/bin/true"]),
                    ("pmugatectl --version", [ctl, "--version"]),
                    ("pmugatectl grant", [ctl, sock, "grant", "--job", "bench-%d", "--uid", "1000"]),
                    ("pmugatectl revoke", [ctl, sock, "revoke", "--job", "bench-%d"]),
                    ("pmugate --version (all of libpmugate)", [pmugate, "--version"])]
        results = {name: [] for name, _ in commands}
        # Short interleaved blocks, so that load from elsewhere hits every command alike; the
        # first block of each warms the page cache and is not counted. Grant and revoke blocks
        # alternate so that every revoke finds its job granted.
        block = 10
        for b in range(runs // block + 1):
            for name, argv in commands:
                samples = timed(spawn, block, [a.replace("bench-%d", "bench-%d-%%d" % b) for a in argv], env)
                if b:
                    results[name] += samples
        for name, samples in results.items():
            summary(name, samples)
        if not daemon.alive():
            sys.stderr.write("pmugated exited during the run:\n%s" % daemon.log())
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs bench-rpc against a real pmugated serving a fake Sapphire Rapids machine.

Usage: bench/run-bench.py [BUILD_DIR] [-- BENCH-RPC OPTIONS]   (BUILD_DIR defaults to "build")

Builds the fake machine (2 sockets x 8 cores, SMT on: 32 CPUs) in a temporary directory on
tmpfs (/dev/shm, or /tmp when /dev/shm is missing), starts BUILD_DIR/daemon/pmugated on it
with its runtime directory (grants file, lease journals) in the same place, as /run is tmpfs
on a real system, waits for READY=1, runs BUILD_DIR/bench/bench-rpc, stops the daemon and
removes everything. Needs root, as the daemon does. Not a test: it prints numbers, it does
not judge them.
"""

import os
import sys

import benchnode


def main(argv):
    rc, build, extra, command = benchnode.parse(argv, __doc__, "run-bench.py", "bench/bench-rpc")
    if rc is not None:
        return rc
    bench = os.path.join(build, "bench", "bench-rpc")
    # tmpfs makes a pread a plain memory copy: the lowest floor there is, and so the hardest
    # comparison for the daemon. Real pages, so every read copies data and the benchmark can
    # check the daemon returned what the file holds; an idle PMU, or the daemon would refuse the
    # benchmark's writes to counters that look held by another PMU user.
    with benchnode.FakeNode(build, "pmugate-bench-", sockets=2, cores=8, filled=True, idle_pmu=True) as node:
        print("command: %s\n" % command)
        return node.run([bench, "--socket=" + node.daemon.socket, "--root=" + node.root,
                         "--cpus=%d" % node.machine.ncpus, "--runtime-dir=" + node.runtime,
                         "--daemon-pid=%d" % node.daemon.proc.pid] + extra)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

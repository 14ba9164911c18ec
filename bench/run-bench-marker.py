#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs bench-marker against a real pmugated serving a fake Sapphire Rapids machine.

Usage: bench/run-bench-marker.py [BUILD_DIR] [-- BENCH-MARKER OPTIONS]   (BUILD_DIR defaults to "build")

The same set-up as run-bench.py (fake machine on tmpfs, the daemon from BUILD_DIR as 'nobody',
READY=1 awaited), then BUILD_DIR/bench/bench-marker on CPU 0. Needs root, as the daemon does.
Not a test: it prints numbers, it does not judge them.
"""

import os
import sys

import benchnode


def main(argv):
    rc, build, extra, command = benchnode.parse(argv, __doc__, "run-bench-marker.py", "bench/bench-marker")
    if rc is not None:
        return rc
    bench = os.path.join(build, "bench", "bench-marker")
    with benchnode.FakeNode(build, "pmugate-bench-marker-", sockets=1, cores=4, filled=True) as node:
        print("command: %s\n" % command)
        return node.run([bench, "--socket=" + node.daemon.socket, "--cpu=0"] + extra)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

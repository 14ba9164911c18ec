#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs bench-measure against a real pmugated serving a simulated machine.

Usage: bench/run-bench-measure.py [--sockets=N] [--cores=N] [BUILD_DIR] [-- BENCH-MEASURE OPTIONS]

Starts BUILD_DIR/daemon/pmugated with the simulated PMU of a Sapphire Rapids of N sockets (4)
of N cores (128), SMT on (1024 CPUs; --sockets=8 --cores=256 is 4096), on the realtime clock,
runs BUILD_DIR/bench/bench-measure with the daemon's pid so that it can report the daemon's
memory, and stops the daemon. Needs root, as the daemon does. Not a test: it prints numbers,
it does not judge them.
"""

import os
import subprocess
import sys

import benchnode

SIM_CONFIG = "[machine]\nmodel = spr\nsockets = %d\ncores = %d\nsmt = yes\n[clock]\nmode = realtime\n"


def main(argv):
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    shape = {"--sockets": 4, "--cores": 128}
    rest = []
    for a in argv:
        key, _, value = a.partition("=")
        if key in shape and value.isdigit() and int(value) > 0:
            shape[key] = int(value)
        else:
            rest.append(a)
    argv = rest
    if any(a in ("-h", "--help") for a in argv) or len(argv) > 1 or any(a.startswith("-") for a in argv):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    build = os.path.abspath(argv[0] if argv else "build")
    bench = os.path.join(build, "bench", "bench-measure")
    rc = benchnode.check_programs(build, ["bench/bench-measure"], "run-bench-measure.py")
    if rc is not None:
        return rc
    os.environ.setdefault("PMUGATE_GROUP_PATH", os.path.join(benchnode.SOURCE, "client", "groups"))
    pt = benchnode.harness(build)

    work = pt.workdir()
    config = os.path.join(work, "sim.conf")
    with open(config, "w") as f:
        f.write(SIM_CONFIG % (shape["--sockets"], shape["--cores"]))
    daemon = pt.Daemon(work, ["--backend=sim", "--sim-model=spr", "--sim-config=" + config])
    try:
        return subprocess.run([bench, "--socket=" + daemon.socket, "--daemon-pid=%d" % daemon.proc.pid] +
                              extra).returncode
    finally:
        daemon.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

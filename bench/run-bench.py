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
import shutil
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MSR_PERFEVTSEL0 = 0x186
MSR_FIXED_CTR_CTRL = 0x38D
EVTSEL_ENABLE = 1 << 22
FIXED_CTRL_ENABLE = 0x3333  # OS and USR of fixed counters 0-3


def main(argv):
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if any(a in ("-h", "--help") for a in argv) or len(argv) > 1:
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    build = os.path.abspath(argv[0] if argv else "build")
    bench = os.path.join(build, "bench", "bench-rpc")
    pmugated = os.path.join(build, "daemon", "pmugated")
    for path in (bench, pmugated):
        if not os.access(path, os.X_OK):
            sys.stderr.write("%s is missing: build first (ninja -C %s)\n" % (path, build))
            return 1
    if os.geteuid() != 0:
        sys.stderr.write("run-bench.py needs root: pmugated opens the msr files as root and drops to 'nobody'\n")
        return 1

    # The harness reads these when it is imported.
    os.environ["PMUGATED"] = pmugated
    os.environ["PMUGATE_SOURCE_DIR"] = SOURCE
    os.environ["PMUGATE_BUILD_DIR"] = build
    sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
    import pmugatetest as pt

    # tmpfs makes a pread a plain memory copy: the lowest floor there is, and so the hardest
    # comparison for the daemon.
    base = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
    work = tempfile.mkdtemp(prefix="pmugate-bench-", dir=base)
    daemon = None
    try:
        # The daemon runs as 'nobody' after start-up and must reach its socket in here.
        os.chmod(work, 0o755)
        root = os.path.join(work, "root")
        machine = pt.FakeMachine(root, model="spr", sockets=2, cores=8, smt=True)
        # Real pages instead of holes, with varied bytes, so every read copies data and the
        # benchmark can check the daemon returned what the file holds.
        for cpu in range(machine.ncpus):
            with open(machine.path("dev/cpu/%d/msr" % cpu), "r+b") as f:
                f.write(os.urandom(4096))
            # An idle PMU: with a random enable bit a counter would look held by another PMU
            # user, and the daemon would refuse the benchmark's writes to it.
            for i in range(8):
                v = machine.msr(cpu, MSR_PERFEVTSEL0 + i)
                machine.set_msr(cpu, MSR_PERFEVTSEL0 + i, v & ~EVTSEL_ENABLE)
            v = machine.msr(cpu, MSR_FIXED_CTR_CTRL)
            machine.set_msr(cpu, MSR_FIXED_CTR_CTRL, v & ~FIXED_CTRL_ENABLE)

        config = os.path.join(work, "pmugate.conf")
        # The benchmark's own group gets read rights; root is admin in any case.
        pt.write_config(config, admin_gids=(0,), user_gids=(os.getgid(),))
        # Grants and lease journals are files the daemon rewrites on every grant, revoke and
        # first write of a register under a lease; on a real system they live in /run (tmpfs).
        runtime = os.path.join(work, "run")
        daemon = pt.Daemon(work, ["--root=" + root, "--runtime-dir=" + runtime], config=config,
                           allowlist_dir=os.path.join(SOURCE, "policy", "allowlists"), user="nobody")

        sys.stdout.flush()
        argv_bench = [bench, "--socket=" + daemon.socket, "--root=" + root,
                      "--cpus=%d" % machine.ncpus, "--runtime-dir=" + runtime,
                      "--daemon-pid=%d" % daemon.proc.pid] + extra
        print("command: %s\n" % " ".join(["bench/run-bench.py", argv[0] if argv else "build"] +
                                        (["--"] + extra if extra else [])))
        sys.stdout.flush()
        rc = os.spawnv(os.P_WAIT, bench, argv_bench)
        if not daemon.alive():
            sys.stderr.write("pmugated exited during the run:\n%s" % daemon.log())
            rc = rc or 1
        return rc
    finally:
        if daemon is not None:
            daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs bench-marker against a real pmugated serving a fake Sapphire Rapids machine.

Usage: bench/run-bench-marker.py [BUILD_DIR] [-- BENCH-MARKER OPTIONS]   (BUILD_DIR defaults to "build")

The same set-up as run-bench.py (fake machine on tmpfs, the daemon from BUILD_DIR as 'nobody',
READY=1 awaited), then BUILD_DIR/bench/bench-marker on CPU 0. Needs root, as the daemon does.
Not a test: it prints numbers, it does not judge them.
"""

import os
import shutil
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if any(a in ("-h", "--help") for a in argv) or len(argv) > 1:
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    build = os.path.abspath(argv[0] if argv else "build")
    bench = os.path.join(build, "bench", "bench-marker")
    pmugated = os.path.join(build, "daemon", "pmugated")
    for path in (bench, pmugated):
        if not os.access(path, os.X_OK):
            sys.stderr.write("%s is missing: build first (ninja -C %s)\n" % (path, build))
            return 1
    if os.geteuid() != 0:
        sys.stderr.write("run-bench-marker.py needs root: pmugated opens the msr files as root\n")
        return 1
    os.environ["PMUGATED"] = pmugated
    os.environ["PMUGATE_SOURCE_DIR"] = SOURCE
    os.environ["PMUGATE_BUILD_DIR"] = build
    sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
    import pmugatetest as pt

    base = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
    work = tempfile.mkdtemp(prefix="pmugate-bench-marker-", dir=base)
    daemon = None
    try:
        os.chmod(work, 0o755)
        root = os.path.join(work, "root")
        machine = pt.FakeMachine(root, model="spr", sockets=1, cores=4, smt=True)
        for cpu in range(machine.ncpus):
            with open(machine.path("dev/cpu/%d/msr" % cpu), "r+b") as f:
                f.write(os.urandom(4096))
        config = os.path.join(work, "pmugate.conf")
        pt.write_config(config, admin_gids=(0,), user_gids=(os.getgid(),))
        daemon = pt.Daemon(work, ["--root=" + root, "--runtime-dir=" + os.path.join(work, "run")], config=config,
                           allowlist_dir=os.path.join(SOURCE, "policy", "allowlists"), user="nobody")
        print("command: %s\n" % " ".join(["bench/run-bench-marker.py", argv[0] if argv else "build"] +
                                        (["--"] + extra if extra else [])))
        sys.stdout.flush()
        rc = os.spawnv(os.P_WAIT, bench, [bench, "--socket=" + daemon.socket, "--cpu=0"] + extra)
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

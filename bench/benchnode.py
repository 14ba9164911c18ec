# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the benchmark drivers share: the programs of a build checked, and a real pmugated from
that build serving a fake Sapphire Rapids in a temporary directory on tmpfs, as 'nobody', with
its grants and lease journals there too (on a real system they live in /run, also tmpfs)."""

import os
import shutil
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MSR_PERFEVTSEL0 = 0x186
MSR_FIXED_CTR_CTRL = 0x38D
EVTSEL_ENABLE = 1 << 22
FIXED_CTRL_ENABLE = 0x3333  # OS and USR of fixed counters 0-3


def parse(argv, doc, name, program):
    """[BUILD_DIR] [-- OPTIONS]: (exit status or None, build directory, options after --, the
    command line to print) with build/program checked as check_programs() does."""
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if any(a in ("-h", "--help") for a in argv) or len(argv) > 1:
        print(doc.strip())
        return (0 if argv and argv[0] in ("-h", "--help") else 2), None, None, None
    build = os.path.abspath(argv[0] if argv else "build")
    command = " ".join(["bench/" + name, argv[0] if argv else "build"] + (["--"] + extra if extra else []))
    return check_programs(build, [program], name), build, extra, command


def check_programs(build, programs, name):
    """None when every program of build is there and we are root, else the exit status, said why."""
    for path in [os.path.join(build, "daemon", "pmugated")] + [os.path.join(build, p) for p in programs]:
        if not os.access(path, os.X_OK):
            sys.stderr.write("%s is missing: build first (ninja -C %s)\n" % (path, build))
            return 1
    if os.geteuid() != 0:
        sys.stderr.write("%s needs root: pmugated opens the msr files as root and drops to 'nobody'\n" % name)
        return 1
    return None


def harness(build):
    """The integration tests' harness, pointed at build (it reads these when imported)."""
    os.environ["PMUGATED"] = os.path.join(build, "daemon", "pmugated")
    os.environ["PMUGATE_SOURCE_DIR"] = SOURCE
    os.environ["PMUGATE_BUILD_DIR"] = build
    sys.path.insert(0, os.path.join(SOURCE, "tests", "integration"))
    import pmugatetest
    return pmugatetest


class FakeNode:
    """with FakeNode(build, "pmugate-bench-", sockets=2, cores=8) as node: node.daemon serves
    node.machine until the block ends, then the directory goes. filled: every msr file gets real
    pages of random bytes instead of holes, so that each read copies data; idle_pmu: no enable
    bit set, so that no counter looks held by another PMU user."""

    def __init__(self, build, prefix, sockets, cores, filled=False, idle_pmu=False):
        self.pt = harness(build)
        self.prefix, self.sockets, self.cores = prefix, sockets, cores
        self.filled, self.idle_pmu = filled, idle_pmu
        self.daemon = None

    def __enter__(self):
        base = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
        self.work = tempfile.mkdtemp(prefix=self.prefix, dir=base)
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self):
        pt = self.pt
        # The daemon runs as 'nobody' after start-up and must reach its socket in here.
        os.chmod(self.work, 0o755)
        self.root = os.path.join(self.work, "root")
        self.machine = pt.FakeMachine(self.root, model="spr", sockets=self.sockets, cores=self.cores, smt=True)
        for cpu in range(self.machine.ncpus):
            if self.filled:
                with open(self.machine.path("dev/cpu/%d/msr" % cpu), "r+b") as f:
                    f.write(os.urandom(4096))
            if self.idle_pmu:
                for i in range(8):
                    v = self.machine.msr(cpu, MSR_PERFEVTSEL0 + i)
                    self.machine.set_msr(cpu, MSR_PERFEVTSEL0 + i, v & ~EVTSEL_ENABLE)
                v = self.machine.msr(cpu, MSR_FIXED_CTR_CTRL)
                self.machine.set_msr(cpu, MSR_FIXED_CTR_CTRL, v & ~FIXED_CTRL_ENABLE)
        config = os.path.join(self.work, "pmugate.conf")
        # The benchmark's own group gets read rights; root is admin in any case.
        pt.write_config(config, admin_gids=(0,), user_gids=(os.getgid(),))
        self.runtime = os.path.join(self.work, "run")
        self.daemon = pt.Daemon(self.work, ["--root=" + self.root, "--runtime-dir=" + self.runtime],
                                config=config, allowlist_dir=os.path.join(SOURCE, "policy", "allowlists"),
                                user="nobody")

    def run(self, argv):
        """Runs a benchmark program to its end; its exit status, or 1 when the daemon died."""
        sys.stdout.flush()
        rc = os.spawnv(os.P_WAIT, argv[0], argv)
        if not self.daemon.alive():
            sys.stderr.write("pmugated exited during the run:\n%s" % self.daemon.log())
            rc = rc or 1
        return rc

    def __exit__(self, *exc):
        if self.daemon is not None:
            self.daemon.stop()
        shutil.rmtree(self.work, ignore_errors=True)
        return False

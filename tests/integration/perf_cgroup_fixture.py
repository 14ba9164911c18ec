# SPDX-License-Identifier: LGPL-2.1-or-later
"""Real job cgroups in this host's cgroup v2 hierarchy, for tests of per-job counting (perf
scope "job"): each job a root-owned directory "<v2>/pmugate-perf-test-PID-N/job_<ID>" as a batch
system makes it, busy loops of a known amount of CPU time run inside them (pinned to one CPU that
the jobs share), and each job's own CPU time as the kernel accounts it (cpu.stat), to compare a
count against.

A daemon under --root looks for the v2 hierarchy at <root>/sys/fs/cgroup (a unified host) or
<root>/sys/fs/cgroup/unified (a hybrid one): with machine_root given, the fixture mounts the same
v2 hierarchy at <machine_root>/sys/fs/cgroup/unified, so that the fake machine's daemon finds the
real job directories there (and the fake cpuset files of pmugatetest.Cgroup(version=2) would be
hidden: give such jobs' grants explicit CPUs). remove() ends what still runs in the jobs and
removes the directories and the mount; it also runs at exit."""

import atexit
import os
import subprocess
import sys
import time

# Spins until this process has used the given CPU time, after a line on stdin says go (so that
# every loop of a test starts together and they share the CPU the whole time).
_BUSY = ("import sys, time\n"
         "sys.stdin.readline()\n"
         "end = time.process_time() + float(sys.argv[1])\n"
         "while time.process_time() < end:\n"
         "    pass\n")

_count = 0


def v2_mount():
    """Where this host mounts the cgroup v2 hierarchy (from /proc/self/mountinfo), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[:1] == ["cgroup2"]:
                return left.split()[4]
    return None


def usable():
    """None when job cgroups can be made here, else why not (for a TAP skip)."""
    if os.geteuid() != 0:
        return "needs root"
    if v2_mount() is None:
        return "no cgroup v2 hierarchy on this host"
    return None


class BusyLoop:
    """A process spinning for a known CPU time inside a job's cgroup, pinned to one CPU."""

    def __init__(self, job_dir, cpu_seconds, cpu, uid=None):
        def enter():
            with open(os.path.join(job_dir, "cgroup.procs"), "w") as f:
                f.write("0")
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})
            if uid is not None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)

        self.cpu_seconds = cpu_seconds
        self.proc = subprocess.Popen([sys.executable, "-c", _BUSY, str(cpu_seconds)], stdin=subprocess.PIPE,
                                     preexec_fn=enter, close_fds=True)
        self.pid = self.proc.pid
        self.used = None        # its CPU time in seconds (user and system), once waited for

    def go(self):
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.close()

    def wait(self, timeout=60):
        """Waits for the loop to end; returns the CPU time it used, in seconds."""
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.used = usage.ru_utime + usage.ru_stime
                if self.proc.returncode != 0:
                    raise RuntimeError("busy loop %d failed: %d" % (self.pid, self.proc.returncode))
                return self.used
            if time.monotonic() > deadline:
                self.proc.kill()
                raise TimeoutError("busy loop %d did not end" % self.pid)
            time.sleep(0.01)


class JobCgroups:
    """Real v2 cgroups of jobs (IDs as strings), root's, as a batch system makes them."""

    def __init__(self, jobs=("1001", "1002"), machine_root=None, slurm=False):
        """slurm: the jobs' directories are where Slurm puts them and the daemon's job map
        looks for a job by its id alone, "<v2>/system.slice/pmugate-perf-test-PID-N_slurmstepd.scope/
        job_<ID>" (system.slice made when the host has none, and removed again)."""
        global _count
        mount = v2_mount()
        if mount is None:
            raise RuntimeError("no cgroup v2 hierarchy on this host")
        _count += 1
        self.v2 = mount
        self.made_slice = None
        if slurm:
            if not os.path.isdir(mount + "/system.slice"):
                os.mkdir(mount + "/system.slice", 0o755)
                self.made_slice = mount + "/system.slice"
            self.base = "/system.slice/pmugate-perf-test-%d-%d_slurmstepd.scope" % (os.getpid(), _count)
        else:
            self.base = "/pmugate-perf-test-%d-%d" % (os.getpid(), _count)
        self.jobs = list(jobs)
        self.mounted = None
        self.loops = []
        os.mkdir(self.v2 + self.base, 0o755)
        atexit.register(self.remove)
        for job in self.jobs:
            os.mkdir(self.dir(job), 0o755)
        if machine_root is not None:
            where = os.path.join(machine_root, "sys/fs/cgroup/unified")
            os.makedirs(where, exist_ok=True)
            subprocess.run(["mount", "-t", "cgroup2", "none", where], check=True)
            self.mounted = where

    def rel(self, job):
        """The job's path in the v2 hierarchy, as /proc/PID/cgroup names it ("0::" line)."""
        return "%s/job_%s" % (self.base, job)

    def dir(self, job):
        return self.v2 + self.rel(job)

    def enter(self, job, pid):
        """Moves a process (all its threads) into the job's cgroup."""
        with open(os.path.join(self.dir(job), "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def preexec(self, job, cpu=None):
        """A preexec_fn for subprocess: the child enters the job (and is pinned to cpu)."""
        def enter():
            with open(os.path.join(self.dir(job), "cgroup.procs"), "w") as f:
                f.write("0")
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})
        return enter

    def busy(self, seconds_by_job, cpu=0, uid=None):
        """Starts a busy loop in each job, all pinned to cpu, each spinning its job's CPU
        seconds once go() is called on it; returns {job: BusyLoop}."""
        loops = {job: BusyLoop(self.dir(job), seconds, cpu, uid) for job, seconds in seconds_by_job.items()}
        self.loops.extend(loops.values())
        return loops

    def run_busy(self, seconds_by_job, cpu=0, uid=None):
        """Runs busy loops together on one shared CPU to their end; returns {job: CPU seconds
        each used}."""
        loops = self.busy(seconds_by_job, cpu, uid)
        for loop in loops.values():
            loop.go()
        return {job: loop.wait() for job, loop in loops.items()}

    def cpu_usage(self, job):
        """The CPU time the job's tasks used so far, in seconds (cpu.stat usage_usec)."""
        with open(os.path.join(self.dir(job), "cpu.stat")) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        raise RuntimeError("no usage_usec in %s/cpu.stat" % self.dir(job))

    def procs(self, job):
        with open(os.path.join(self.dir(job), "cgroup.procs")) as f:
            return [int(p) for p in f.read().split()]

    def remove(self):
        for loop in self.loops:
            if loop.proc.returncode is None:
                loop.proc.kill()
                try:
                    loop.wait(timeout=5)
                except (RuntimeError, TimeoutError):
                    pass
        self.loops = []
        if self.mounted:
            subprocess.run(["umount", self.mounted], check=False)
            self.mounted = None
        top = self.v2 + self.base
        if not os.path.isdir(top):
            return
        try:
            with open(os.path.join(top, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            pass
        for d in [self.dir(job) for job in self.jobs] + [top] + ([self.made_slice] if self.made_slice else []):
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)

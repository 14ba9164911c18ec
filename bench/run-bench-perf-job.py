#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Per-job counting against per-CPU on the real kernel: cpu-clock in scope job (a cgroup
event of the job's real v2 cgroup) and in scope cpu, on this machine's first two CPUs.

Usage: bench/run-bench-perf-job.py [--reads=N] [--rounds=N] [--seconds=S] [BUILD_DIR]

Starts BUILD_DIR/daemon/pmugated in job mode on a fake Sapphire Rapids of 2 CPUs (the real
kernel's CPUs 0 and 1: software events open there), grants a job to a user and makes the job's
real v2 cgroup (tests/integration/perf_cgroup_fixture.py). Then, in --rounds interleaved rounds:

1. bench-perf --read-scope=job and --read-scope=cpu, as the user inside the job: the median and
   90th percentile of a perf_read round trip and the daemon's CPU per read;
2. two workloads pinned to CPU 0 for --seconds each, with no event open, with the job's cgroup
   events open and with the CPUs' events open (a client of the user's holds them): a busy loop
   in the job (its iterations per second) and a ping-pong over a pipe between a process in the
   job and one outside it (round trips per second: every one switches cgroups twice, where the
   kernel switches the job's cgroup events in and out);
3. bench-perf --open-cost as root: perf_open and perf_close of cpu-clock as 1 fd and as 4
   groups of 8 on both CPUs (64 fds), through the daemon and its forked opener (one socket
   round trip per fd), against the same perf_event_open() calls in one process: the wall time,
   the daemon's and the opener's CPU, and the cost of each further fd.

Prints the median of the rounds. Needs root (the daemon, the cgroups). Not a test.
"""

import json
import os
import statistics
import subprocess
import sys
import time

import benchnode

USER, GID = 61300, 61300
JOB = "9001"

# As the user, in the job: perf_open of cpu-clock in the scope argv[2], "ready", then holds
# the events until stdin closes.
HOLDER = """
import json, sys, pmugatetest as t
c = t.Client(sys.argv[1])
r = c.call("perf_open", scope=sys.argv[2], cpus=[0, 1], groups=[[dict(pmu="software", config=0)]])
print(json.dumps(r.get("ok", False) or r), flush=True)
sys.stdin.read()
"""

# Counts loop iterations for argv[1] seconds after "go".
LOOP = """
import sys, time
sys.stdin.readline()
n = 0
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    n += 1
print(n, flush=True)
"""

# Ping-pong: the parent (outside the job) writes a byte, the child (in the job, argv[2])
# answers, for argv[1] seconds; prints the round trips.
PINGPONG = """
import os, sys, time
a_r, a_w = os.pipe()
b_r, b_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(a_w)
    os.close(b_r)
    with open(sys.argv[2], "w") as f:
        f.write(str(os.getpid()))
    while True:
        if not os.read(a_r, 1):
            os._exit(0)
        os.write(b_w, b"x")
os.close(a_r)
os.close(b_w)
n = 0
time.sleep(0.05)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    os.write(a_w, b"x")
    os.read(b_r, 1)
    n += 1
os.close(a_w)
os.waitpid(pid, 0)
print(n, flush=True)
"""


def keyvalues(text):
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    return out


def pinned(cpu):
    def pin():
        os.sched_setaffinity(0, {cpu})
    return pin


def main(argv):
    reads, rounds, seconds = 2000, 5, 1.0
    rest = []
    for a in argv:
        key, _, value = a.partition("=")
        if key == "--reads" and value.isdigit() and int(value) > 0:
            reads = int(value)
        elif key == "--rounds" and value.isdigit() and int(value) > 0:
            rounds = int(value)
        elif key == "--seconds" and value.replace(".", "", 1).isdigit() and float(value) > 0:
            seconds = float(value)
        else:
            rest.append(a)
    if any(a in ("-h", "--help") for a in rest) or len(rest) > 1 or any(a.startswith("-") for a in rest):
        print(__doc__.strip())
        return 0 if rest and rest[0] in ("-h", "--help") else 2
    build = os.path.abspath(rest[0] if rest else "build")
    rc = benchnode.check_programs(build, ["bench/bench-perf", "client/pmugatectl"], "run-bench-perf-job.py")
    if rc is not None:
        return rc
    pt = benchnode.harness(build)
    import perf_cgroup_fixture as fixture
    why = fixture.usable()
    if why:
        sys.stderr.write("run-bench-perf-job.py: %s\n" % why)
        return 1
    if len(os.sched_getaffinity(0)) < 2:
        sys.stderr.write("run-bench-perf-job.py: needs CPUs 0 and 1\n")
        return 1

    work = pt.workdir()
    m = pt.FakeMachine(os.path.join(work, "root"), "spr", sockets=1, cores=2, smt=False)
    conf = os.path.join(work, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = job\nadmin_groups = %d\nuser_groups = %d\n" % (pt.ADMIN_GID, GID))
    m.set_user("benchuser", USER, GID, [GID])
    daemon = pt.Daemon(work, ["--root=" + m.root], config=conf)
    jobs = None
    holders = []
    try:
        rc, _, err = pt.run_cli([pt.PMUGATECTL, "grant", "--job", JOB, "--uid", str(USER), "--cpus", "0,1"],
                                daemon.socket)
        if rc != 0:
            raise RuntimeError("grant: %s" % err)
        jobs = fixture.JobCgroups((JOB,), machine_root=m.root)
        procs = os.path.join(jobs.dir(JOB), "cgroup.procs")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(pt.__file__))
        as_user = pt.as_user(USER, GID, [GID], procs)

        def read_cost(scope):
            p = subprocess.run([os.path.join(build, "bench", "bench-perf"), "--socket=" + daemon.socket,
                                "--daemon-pid=%d" % daemon.proc.pid, "--read-scope=" + scope,
                                "--reads=%d" % reads], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=as_user)
            if p.returncode != 0:
                raise RuntimeError("bench-perf --read-scope=%s: %s" % (scope, p.stderr.strip()))
            return keyvalues(p.stdout)

        def hold(scope):
            h = subprocess.Popen(["/usr/bin/python3", "-c", HOLDER, daemon.socket, scope], env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=as_user)
            got = json.loads(h.stdout.readline() or "false")
            if got is not True:
                raise RuntimeError("the holder's perf_open in scope %s failed: %r" % (scope, got))
            holders.append(h)
            return h

        def release(h):
            h.stdin.close()
            h.wait(timeout=10)
            holders.remove(h)

        def loop():
            def enter():
                with open(procs, "w") as f:
                    f.write("0")
                os.sched_setaffinity(0, {0})
            p = subprocess.Popen([sys.executable, "-c", LOOP, str(seconds)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, preexec_fn=enter)
            time.sleep(0.05)
            out, _ = p.communicate("go\n", timeout=seconds + 30)
            return int(out) / seconds

        def pingpong():
            p = subprocess.run([sys.executable, "-c", PINGPONG, str(seconds), procs], stdout=subprocess.PIPE,
                               text=True, preexec_fn=pinned(0), timeout=seconds + 30)
            return int(p.stdout) / seconds

        def open_cost():
            p = subprocess.run([os.path.join(build, "bench", "bench-perf"), "--socket=" + daemon.socket,
                                "--daemon-pid=%d" % daemon.proc.pid, "--open-cost=20"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                raise RuntimeError("bench-perf --open-cost: %s" % p.stderr.strip())
            return keyvalues(p.stdout)

        results = {}

        def add(key, value):
            results.setdefault(key, []).append(value)

        for _ in range(rounds):
            for scope in ("job", "cpu"):
                got = read_cost(scope)
                add("read_median_" + scope, got["read_median_us"])
                add("read_p90_" + scope, got["read_p90_us"])
                add("read_daemon_" + scope, got["read_daemon_cpu_us"])
            got = open_cost()
            for shape in ("0", "1"):
                for what in ("wall", "daemon", "opener", "direct"):
                    add("open_%s_%s" % (what, shape), got["open_%s_us_%s" % (what, shape)])
            fds = got["open_fds_1"]
            for state in ("none", "job", "cpu"):
                h = hold(state) if state != "none" else None
                add("loop_" + state, loop())
                add("pingpong_" + state, pingpong())
                if h:
                    release(h)
    finally:
        for h in holders:
            h.kill()
        daemon.stop()
        if jobs:
            jobs.remove()

    med = {k: statistics.median(v) for k, v in results.items()}
    print("cpu-clock on CPUs 0 and 1, job mode, real kernel; medians of %d rounds" % rounds)
    print("| | scope job (cgroup events) | scope cpu |")
    print("|---|---|---|")
    print("| perf_read round trip, median | %.1f us | %.1f us |" % (med["read_median_job"], med["read_median_cpu"]))
    print("| perf_read round trip, p90 | %.1f us | %.1f us |" % (med["read_p90_job"], med["read_p90_cpu"]))
    print("| daemon CPU per perf_read | %.1f us | %.1f us |" % (med["read_daemon_job"], med["read_daemon_cpu"]))
    print()
    print("| workload on CPU 0 | no events | job's cgroup events | CPUs' events |")
    print("|---|---|---|---|")
    for name, key, unit in (("busy loop in the job", "loop", "iterations/s"),
                            ("ping-pong across the job's cgroup", "pingpong", "round trips/s")):
        base = med[key + "_none"]
        print("| %s (%s) | %.0f | %.0f (%.3f) | %.0f (%.3f) |" % (
            name, unit, base, med[key + "_job"], med[key + "_job"] / base, med[key + "_cpu"],
            med[key + "_cpu"] / base))
    print()
    print("| perf_open of cpu-clock (root, scope cpu) | 1 fd | %d fds | per further fd |" % fds)
    print("|---|---|---|---|")
    for what, name in (("wall", "through the daemon: wall"), ("daemon", "daemon CPU"),
                       ("opener", "opener CPU"), ("direct", "perf_event_open() in one process: wall")):
        one, many = med["open_%s_0" % what], med["open_%s_1" % what]
        print("| %s | %.1f us | %.1f us | %.2f us |" % (name, one, many, (many - one) / (fds - 1)))
    print("(ratios to no events; every round: %s)" % json.dumps({k: [round(x, 1) for x in v]
                                                                  for k, v in sorted(results.items())}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

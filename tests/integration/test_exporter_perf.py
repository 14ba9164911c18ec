#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate-exporter on a node counting through perf (docs/EXPORTER.md, "Per-job series"): the
simulated PMU behind --counters=perf in job mode, two jobs in two real v2 cgroups of root's where
Slurm puts them, each with a grant of the same CPU 0, running busy loops of known CPU time there.
The exporter samples the CPUs through the perf path (a user's lease still takes a CPU from it), and
each job's instructions and cycles come from the job's own cgroup events: proportional to the
job's own CPU time, not all of the shared CPU's counts given to the first job. A monitor naming a
job that does not exist is refused, a user cannot name a job, and a user measuring its job beside
the exporter gets its multiplexing scale with every read and counts that match the profile."""

import json
import os
import subprocess
import sys

import exportertest as x
import perf_cgroup_fixture as fixture
import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1
OTHER_GID = 4999
HW_CYCLES, HW_INSTRUCTIONS = 0, 1
ROW_TARGET, ROW_GROUP, ROW_STATUS, ROW_ENABLED, ROW_RUNNING, ROW_VALUES = range(6)

AGENT = """
import json, sys, pmugatetest as t
c = t.Client(sys.argv[1])
for line in sys.stdin:
    req = json.loads(line)
    op = req.pop("op")
    print(json.dumps(c.call(op, **req)), flush=True)
"""


class Agent:
    """A client with a connection of its own, as another identity (and in a cgroup)."""

    def __init__(self, socket_path, uid, gid, groups=(), join=None):
        env = dict(os.environ, PYTHONPATH=os.path.dirname(t.__file__))
        self.p = t.spawn(["/usr/bin/python3", "-c", AGENT, socket_path], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, preexec_fn=t.as_user(uid, gid, list(groups), join))

    def call(self, op, **fields):
        self.p.stdin.write(json.dumps(dict(op=op, **fields)) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def err(r):
    return r.get("error", {}).get("name", "ok"), r.get("error", {}).get("reason", "")


def hw(config):
    return dict(pmu="hardware", config=config)


class PerfNode:
    """A job-mode daemon on a simulated Sapphire Rapids of 2 cores (this machine's CPUs, on which
    the cgroup events really count) whose counters go through perf."""

    def __init__(self):
        self.dir = t.workdir()
        self.machine = t.FakeMachine(os.path.join(self.dir, "root"), "spr", sockets=1, cores=2, smt=False)
        self.machine.set_user("user", USER, OTHER_GID, [t.USER_GID])
        self.machine.set_user("other", OTHER_USER, OTHER_GID, [t.USER_GID])
        self.conf = os.path.join(self.dir, "pmugate.conf")
        x.write_config(self.conf)
        sim = os.path.join(self.dir, "sim.conf")
        with open(sim, "w") as f:
            f.write("[machine]\nmodel = spr\nsockets = 1\ncores = 2\nsmt = no\n[clock]\nmode = realtime\n")
        self.daemon = t.Daemon(self.dir, ["--root=" + self.machine.root, "--backend=sim", "--sim-model=spr",
                                          "--sim-config=" + sim, "--counters=perf"], config=self.conf)

    def admin(self, op, **kw):
        return t.Client(self.daemon.socket).call(op, **kw)

    def stop(self):
        self.daemon.stop()


def job_series(metrics, name, job):
    return x.series(metrics, name, jobid=job)


def value(metrics, name, job):
    s = job_series(metrics, name, job)
    return next(iter(s.values())) if s else None


def source(metrics, job):
    on = [dict(k)["source"] for k, v in job_series(metrics, "pmugate_job_counting_info", job).items() if v == 1]
    return on[0] if len(on) == 1 else None


def test_cpus_through_perf(tap, node, ex, jobs):
    hello = t.Client(node.daemon.socket).call("hello")
    tap.eq(hello.get("counting", {}).get("via"), "perf", "the node counts through perf")
    ex.wait(lambda: all(x.state(ex.metrics(), str(c)) == "monitored" for c in (0, 1)),
            "the exporter measures both CPUs")
    tap.ok(True, "the exporter measures both CPUs through the perf path")
    tap.ok("event=perf-open verdict=allowed" in node.daemon.audit(), "its measurement is perf_open's")
    with x.UserLease(x_node(node), 1, uid=OTHER_USER) as lease:
        tap.ok(lease.ok, "a user leases CPU 1 (job 12's grant covers it)")
        ex.wait(lambda: x.state(ex.metrics(), "1") == "user_lease", "the exporter yields CPU 1")
        tap.ok(True, "the exporter yields CPU 1 to the user's lease (preempted, as on the MSR path)")
    ex.wait(lambda: x.state(ex.metrics(), "1") == "monitored", "the exporter measures CPU 1 again")
    tap.ok(True, "and measures it again once the user lets go")


def x_node(node):
    """What exportertest.UserLease needs of a node: its daemon."""
    class N:
        daemon = node.daemon
    return N


def test_job_series_from_cgroups(tap, node, ex, jobs):
    ex.wait(lambda: source(ex.metrics(), "11") == "cgroup" and source(ex.metrics(), "12") == "cgroup",
            "both jobs counted by their cgroups")
    tap.ok(True, "both jobs' series say their source is their cgroup (pmugate_job_counting_info)")
    ex.wait_samples(2)
    before = ex.metrics()
    used = jobs.run_busy({"11": 0.6, "12": 0.2}, cpu=0, uid=USER)
    ex.wait_samples(3)
    after = ex.metrics()
    got = {}
    for job in ("11", "12"):
        got[job] = {q: (value(after, "pmugate_job_%s_total" % q, job) or 0) -
                       (value(before, "pmugate_job_%s_total" % q, job) or 0)
                    for q in ("instructions", "cycles")}
    detail = "counted %r, loops used %r s" % (got, used)
    tap.ok(all(got[j]["cycles"] > 0 and got[j]["instructions"] > 0 for j in got),
           "both jobs sharing CPU 0 count instructions and cycles of their own", detail)
    if not all(got[j]["cycles"] > 0 for j in got):
        return
    per_second = {j: got[j]["cycles"] / used[j] for j in got}
    print("# %s; cycles per CPU second %r" % (detail, per_second), flush=True)
    tap.ok(abs(per_second["11"] / per_second["12"] - 1) < 0.25,
           "each job's cycles are proportional to its own CPU time (not the shared CPU's split by CPU shares)",
           "cycles per CPU second %r; %s" % (per_second, detail))
    ratio = got["11"]["instructions"] / got["12"]["instructions"]
    tap.ok(abs(ratio / (used["11"] / used["12"]) - 1) < 0.25, "and so are their instructions", detail)
    for job in ("11", "12"):
        ipc = got[job]["instructions"] / got[job]["cycles"]
        tap.ok(abs(ipc - x.PROFILE["ipc"]) < 0.05, "job %s's IPC is the profile's" % job, ipc)
    status, _, body = ex.get("/jobs/12")
    summary = json.loads(body) if status == 200 else {}
    tap.ok(summary.get("counted_by") == "cgroup" and summary.get("instructions", 0) > 0 and
           abs(summary.get("ipc", 0) - x.PROFILE["ipc"]) < 0.05,
           "job 12's summary says its counts are its cgroup's, with its own IPC", summary)
    enabled = value(after, "pmugate_job_cgroup_enabled_seconds_total", "11")
    running = value(after, "pmugate_job_cgroup_running_seconds_total", "11")
    tap.ok(enabled and running and 0 < running <= enabled * 1.0001,
           "the scale of the job's counts is exported (running and enabled seconds)", (enabled, running))


def test_refusals(tap, node, ex, jobs):
    mon = Agent(node.daemon.socket, x.MONITOR, x.MONITOR)
    try:
        name, why = err(mon.call("perf_open", scope="job", job="999", groups=[[hw(HW_CYCLES)]]))
        tap.ok(name == "no-grant" and "999" in why, "a monitor naming a job that does not exist is refused", why)
        r = mon.call("perf_open", scope="job", job="12", groups=[[hw(HW_CYCLES)]])
        tap.ok(r.get("ok") and r.get("targets") == [0, 1], "a monitor may count a job it names, on the job's CPUs (0-1)", r)
        name, why = err(mon.call("perf_open", scope="cpu", cpus=[0], job="12", groups=[[hw(HW_CYCLES)]]))
        tap.ok(name == "bad-field" and "'job'" in why, "'job' belongs to scope job only", why)
    finally:
        mon.close()
    user = Agent(node.daemon.socket, USER, OTHER_GID, [t.USER_GID],
                 join=os.path.join(jobs.dir("11"), "cgroup.procs"))
    try:
        name, why = err(user.call("perf_open", scope="job", job="11", groups=[[hw(HW_CYCLES)]]))
        tap.ok(name == "not-authorized" and "monitor" in why, "a user cannot use the 'job' key, even for its own job",
               why)
        r = user.call("perf_open", scope="job", groups=[[hw(HW_CYCLES)]])
        tap.ok(r.get("ok"), "while scope job without it counts the user's own job", r)
    finally:
        user.close()


def test_user_beside_exporter(tap, node, ex, jobs):
    """A user's job-scope measurement and the exporter's job events share the counters through the
    kernel: the user's reads carry their scale, and its counts are right once scaled."""
    ex.wait(lambda: source(ex.metrics(), "11") == "cgroup", "the exporter counts job 11")
    user = Agent(node.daemon.socket, USER, OTHER_GID, [t.USER_GID],
                 join=os.path.join(jobs.dir("11"), "cgroup.procs"))
    try:
        r = user.call("perf_open", scope="job", groups=[[hw(HW_CYCLES), hw(HW_INSTRUCTIONS)]])
        tap.ok(r.get("ok"), "the user opens cycles and instructions of its job beside the exporter", r)
        if not r.get("ok"):
            return
        used = jobs.run_busy({"11": 0.4}, cpu=0, uid=USER)
        rows = user.call("perf_read", handle=r["handle"])["rows"]
        row = rows[0]
        enabled, running = row[ROW_ENABLED], row[ROW_RUNNING]
        tap.ok(enabled > 0 and 0 < running <= enabled, "each read carries time_enabled and time_running", row)
        scale = enabled / running if running else 0
        cycles, instructions = (v * scale for v in row[ROW_VALUES])
        tap.ok(cycles > 0 and abs(instructions / cycles - x.PROFILE["ipc"]) < 0.05,
               "its scaled counts give the profile's IPC", (cycles, instructions, scale))
        mon = ex.metrics()
        tap.ok(value(mon, "pmugate_job_cgroup_running_seconds_total", "11") is not None,
               "and the exporter's own counts of the job carry their scale too")
        tap.ok(used["11"] > 0, "the user's loop ran", used)
    finally:
        user.close()
    # the same through the CLI: its result carries each event's scale
    loop = jobs.busy({"11": 1.5}, cpu=0, uid=USER)["11"]
    loop.go()
    stat = t.spawn([t.PMUGATE, "stat", "-e", "INST_RETIRED.ANY,CPU_CLK_UNHALTED.THREAD", "--scope", "job", "-c", "0",
                    "-S", "0.8", "-O", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   env=dict(os.environ, PMUGATE_SOCKET=node.daemon.socket, PMUGATE_GROUP_PATH=t.GROUPS),
                   preexec_fn=lambda: (jobs.preexec("11")(), t.as_user(USER, t.USER_GID, [t.USER_GID])()))
    stdout, stderr = stat.communicate(timeout=60)
    loop.wait()
    tap.ok(stat.returncode == 0, "pmugate stat --scope job beside the exporter", stderr)
    if stat.returncode != 0:
        return
    counts = json.loads(stdout)["aggregate"]["counts"]
    inst, cyc = counts["INST_RETIRED.ANY"], counts["CPU_CLK_UNHALTED.THREAD"]
    # scale is time_enabled / time_running, what a count was multiplied by (1: never multiplexed)
    tap.ok(all(isinstance(c.get("scale"), (int, float)) and c["scale"] >= 1 for c in (inst, cyc)),
           "the CLI's result reports each event's scale", (inst, cyc))
    tap.ok(cyc["value"] > 0 and abs(inst["value"] / cyc["value"] - x.PROFILE["ipc"]) < 0.05,
           "and its scaled counts give the profile's IPC", (inst, cyc))


def main():
    tap = t.Tap()
    if not os.path.exists(x.EXPORTER):
        print("1..0 # SKIP pmugate-exporter not built (libmicrohttpd missing)")
        return 0
    why = fixture.usable()
    if why:
        print("1..0 # SKIP two jobs in real v2 cgroups: %s" % why)
        return 0
    node = PerfNode()
    jobs = ex = None
    try:
        jobs = fixture.JobCgroups(("11", "12"), machine_root=node.machine.root, slurm=True)
        # explicit CPUs: the fixture's mount hides the fake machine's cpuset files
        node.admin("grant", job="11", uid=USER, cpus=[0])
        node.admin("grant", job="12", uid=OTHER_USER, cpus=[0, 1])
        ex = x.Exporter(node, ["--interval=200ms"])

        def bind(f):
            def run(tp):
                f(tp, node, ex, jobs)
            run.__name__ = f.__name__
            return run
        return tap.run([bind(f) for f in (test_cpus_through_perf, test_job_series_from_cgroups, test_refusals,
                                          test_user_beside_exporter)])
    finally:
        if ex:
            ex.stop()
        node.stop()
        if jobs:
            jobs.remove()


sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate timing -p of a process that already runs several threads (docs/TIMING.md), through
the real daemon, socket and CLI. On this machine's real kernel in IP mode: a program whose three
threads spin before the recording begins, and a fourth started during it, is sampled in every
thread (the records' tids, the JSON's threads), most samples in the threads' hot function. On
the simulator in branch mode the same target's threads each give branch stacks. The wire's
"tid": a thread of the process is opened, the process without it refused naming it; hostile: a
tid that is no thread of the pid, another user's thread, a thread that ended at once, tid with
on_exec, the per-user event limit reached (a clear reason, from the CLI too); the daemon keeps
serving. "tids": several threads in one handle (fds thread by thread), refused past 64 threads
or 253 events, with a duplicate, or with a thread not of the pid. Programs of more threads than
a user's 16 timing handles: 24 threads pinned one per CPU recorded with -p in a few requests
(the threads grouped by affinity, each group's events on its own CPUs only: the audit's
timing-open lines counted), and 24 unpinned threads."""

import json
import os
import subprocess
import sys
import time

import pmugatetest as t
import test_lbr_timing as lbr
import test_timing_open as wire

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1
THREADS = os.environ.get("PMUGATE_TIMING_THREADS", os.path.join(t.BUILD, "tests", "timing_threads"))

# A process of three threads besides its main one; one more thread starts and ends at once,
# and its tid is printed (the thread that "exits at once").
SLEEPERS = """
import threading, time
ended = threading.Thread(target=lambda: None)
ended.start()
ended.join()
print(ended.native_id, flush=True)
[threading.Thread(target=time.sleep, args=(60,), daemon=True).start() for _ in range(3)]
time.sleep(60)
"""


# A connection of its own as another identity, one JSON request a line (as test_perf_open's).
AGENT = """
import json, sys, pmugatetest as t
c = t.Client(sys.argv[1])
for line in sys.stdin:
    req = json.loads(line)
    op = req.pop("op")
    print(json.dumps(c.call(op, **req)), flush=True)
"""
CPU_CLOCK = 0


class Agent:
    def __init__(self, dm, uid=USER, gid=wire.OTHER_GID, groups=(t.USER_GID,)):
        env = dict(os.environ, PYTHONPATH=os.path.dirname(t.__file__))
        self.p = t.spawn(["/usr/bin/python3", "-c", AGENT, dm.socket], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, preexec_fn=t.as_user(uid, gid, list(groups)))

    def call(self, op, **fields):
        self.p.stdin.write(json.dumps(dict(op=op, **fields)) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())


def tasks(pid):
    return sorted(int(x) for x in os.listdir("/proc/%d/task" % pid))


def start_threads(seconds, late, uid=USER, gid=t.USER_GID, groups=(t.USER_GID,), n=3, pin=False):
    """The threaded target as uid, its n threads running (pinned one per CPU, round robin):
    (process, its tids then)."""
    p = t.spawn([THREADS, str(seconds), str(late), str(n)] + (["pin"] if pin else []), stdout=subprocess.PIPE,
                text=True,
                preexec_fn=t.as_user(uid, gid, list(groups)))
    line = p.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError("the threaded target did not start: %r" % line)
    return p, tasks(p.pid)


def per_thread(doc):
    return {th["tid"]: th["samples"] for th in doc.get("threads", []) if th.get("tid") is not None}


def test_real_kernel(tap):
    """IP mode on this machine's kernel: every thread of a running process sampled."""
    out = lbr.outdir()
    dm = lbr.real_node()
    target = None
    try:
        target, listed = start_threads(3.0, 1.2)
        tap.ok(len(listed) == 4, "the target runs its main thread and three spinning ones", listed)
        path = os.path.join(out, "threads.json")
        rc, _, err = t.run_cli([t.PMUGATE, "timing", "--mode", "ips", "-p", str(target.pid), "--duration", "2.2",
                                "--format", "json", "-o", path], dm.socket, uid=USER, gid=t.USER_GID,
                               groups=[t.USER_GID], timeout=120)
        doc = json.load(open(path)) if rc == 0 else {}
        tap.ok(rc == 0 and doc.get("pid") == target.pid, "pmugate timing -p of a process of 4 threads: recorded",
               err)
        counts = per_thread(doc)
        spinning = [tid for tid in listed if tid != target.pid]
        tap.ok(all(counts.get(tid, 0) >= 20 for tid in spinning),
               "samples from each of the three threads running before the recording: %s" %
               [counts.get(tid, 0) for tid in spinning], (counts, err))
        late = [tid for tid in counts if tid not in listed]
        tap.ok(len(late) == 1 and counts[late[0]] >= 10,
               "the thread started during the recording is followed (inherit from the main thread's events)",
               counts)
        tap.ok(all(th["pid"] == target.pid for th in doc.get("threads", [])), "every sample's pid is the process's",
               doc.get("threads"))
        funcs = {f["function"]: f["share"] for f in doc.get("functions", [])}
        tap.ok(funcs.get("thread_hot", 0) > 0.6, "most samples in the threads' hot function: %.2f" %
               funcs.get("thread_hot", 0), list(funcs.items())[:4])
        tap.ok(doc.get("samples", 0) == sum(th["samples"] for th in doc.get("threads", [])),
               "the threads' samples add up to the total", (doc.get("samples"), counts))
        # the table says the same per thread
        target.wait(timeout=30)
        target, listed = start_threads(2.0, -1)
        # while it records: one ring per CPU, the other threads' events of the CPU writing into it
        cli = t.spawn([t.PMUGATE, "timing", "--mode", "ips", "-p", str(target.pid), "--duration", "1.0"],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                      env=dict(os.environ, PMUGATE_SOCKET=dm.socket),
                      preexec_fn=t.as_user(USER, t.USER_GID, [t.USER_GID]))
        try:
            time.sleep(0.5)
            with open("/proc/%d/maps" % cli.pid) as f:
                rings = sum(1 for line in f if "[perf_event]" in line)
            table, err = cli.communicate(timeout=60)
            rc = cli.returncode
        finally:
            t.end(cli)
        cpus = len(os.sched_getaffinity(target.pid))
        tap.ok(rings == cpus, "4 threads on %d CPUs: %d rings mapped, one per CPU (PERF_EVENT_IOC_SET_OUTPUT)" %
               (cpus, rings))
        tap.ok(rc == 0 and "samples of 3 threads:" in table and all("tid %d:" % tid in table for tid in listed[1:]),
               "the table lists the samples of each thread", table + err)
        tap.ok(dm.alive(), "the daemon keeps serving")
    finally:
        if target:
            t.end(target)
        dm.stop()


def timing_opens(dm):
    return [line for line in dm.audit().splitlines() if "event=timing-open verdict=allowed" in line]


def test_many_threads(tap):
    """More threads than a user's timing handles, on this machine's kernel in IP mode: 24
    threads pinned one per CPU (12 per CPU here) in a few requests, and 24 unpinned ones."""
    out = lbr.outdir()
    dm = lbr.real_node()
    target = None
    ncpu = len(os.sched_getaffinity(0))
    try:
        for pin in (True, False):
            what = "24 threads pinned one per CPU" if pin else "24 unpinned threads"
            before = len(timing_opens(dm))
            target, listed = start_threads(4.0, -1, n=24, pin=pin)
            spinning = [tid for tid in listed if tid != target.pid]
            cpus = {tid: os.sched_getaffinity(tid) for tid in listed}
            tap.ok(len(spinning) == 24 and (not pin or all(len(cpus[tid]) == 1 for tid in spinning)),
                   "%s running (affinities %s)" % (what, sorted({len(c) for c in cpus.values()})))
            path = os.path.join(out, "many-%s.json" % ("pinned" if pin else "unpinned"))
            rc, _, err = t.run_cli([t.PMUGATE, "timing", "--mode", "ips", "-p", str(target.pid), "--duration", "2.0",
                                    "--format", "json", "-o", path], dm.socket, uid=USER, gid=t.USER_GID,
                                   groups=[t.USER_GID], timeout=120)
            doc = json.load(open(path)) if rc == 0 else {}
            tap.ok(rc == 0 and doc.get("pid") == target.pid, "pmugate timing -p of %s: recorded" % what, err)
            counts = per_thread(doc)
            tap.ok(all(counts.get(tid, 0) >= 10 for tid in spinning),
                   "samples from every one of the 24 threads: min %d" % min(counts.get(tid, 0) for tid in spinning),
                   counts)
            opens = timing_opens(dm)[before:]
            # pinned: the main thread's group on all CPUs and one group per CPU; unpinned: one
            want = 1 + ncpu if pin else 1
            tap.ok(len(opens) == want, "%s: %d timing_open requests (audit), %d wanted (the threads grouped by "
                   "affinity)" % (what, len(opens), want), opens)
            events = sum(int(line.split("count=")[1].split()[0]) for line in opens if "count=" in line)
            tap.ok(events == (24 + ncpu if pin else 25 * ncpu),
                   "%s: %d events in all (each thread on the CPUs of its affinity only)" % (what, events), opens)
            funcs = {f["function"]: f["share"] for f in doc.get("functions", [])}
            tap.ok(funcs.get("thread_hot", 0) > 0.6, "most samples in the threads' hot function: %.2f" %
                   funcs.get("thread_hot", 0), list(funcs.items())[:4])
            t.end(target)
            target = None
        tap.ok(dm.alive(), "the daemon keeps serving")
    finally:
        if target:
            t.end(target)
        dm.stop()


def test_simulator_branches(tap):
    """Branch mode on the simulated Sapphire Rapids: the threads of a running process each
    give branch stacks (the simulator's rings cannot share: each fd is its own ring)."""
    out = lbr.outdir()
    s, _ = lbr.sim("spr", lbr.LOOP, lbr.BASELINE)
    target = None
    try:
        target, listed = start_threads(3.0, -1)
        path = os.path.join(out, "sim-threads.json")
        rc, _, err = lbr.cli(s, "timing", "-p", str(target.pid), "--duration", "1.2", "--format", "json", "-o",
                             path)
        doc = json.load(open(path)) if rc == 0 else {}
        counts = per_thread(doc)
        tap.ok(rc == 0 and doc.get("mode") == "branches" and doc.get("samples", 0) > 0,
               "simulated branch mode, -p of a process of 4 threads: recorded", err)
        tap.ok(all(counts.get(tid, 0) > 0 for tid in listed if tid != target.pid),
               "branch stacks from each spinning thread: %s" % counts, (listed, counts))
        tap.ok(doc and any(b.get("function") == "load_one" for b in doc.get("blocks", [])),
               "their blocks are the configured ones, named", doc and doc.get("blocks", [])[:2])
        tap.ok(s.daemon.alive(), "the simulator's daemon keeps serving")
    finally:
        if target:
            t.end(target)
        s.stop()


def test_wire(tap):
    d, m, dm = wire.start()
    groups = [t.USER_GID]
    sleepers = t.spawn(["/usr/bin/python3", "-c", SLEEPERS], stdout=subprocess.PIPE, text=True,
                       preexec_fn=t.as_user(USER, wire.OTHER_GID, groups))
    ended = int(sleepers.stdout.readline())
    mine = t.spawn(["/usr/bin/python3", "-c", "import time; time.sleep(60)"],
                   preexec_fn=t.as_user(USER, wire.OTHER_GID, groups))
    theirs = t.spawn(["/usr/bin/python3", "-c", SLEEPERS], stdout=subprocess.PIPE, text=True,
                     preexec_fn=t.as_user(OTHER_USER, wire.OTHER_GID, groups))
    theirs.stdout.readline()
    holder = None
    try:
        time.sleep(0.3)
        threads = [tid for tid in tasks(sleepers.pid) if tid != sleepers.pid]
        their_threads = [tid for tid in tasks(theirs.pid) if tid != theirs.pid]
        base = dict(mode="ips", on_exec=False, cpus=[0, 1], period=wire.IPS_PERIOD)

        r = wire.call_timing(dm, **dict(base, pid=sleepers.pid, tid=threads[0]))
        tap.ok(r.get("ok") and r.get("fds") == 2, "a thread of one's own process: opened, one fd per CPU", r)
        r = wire.call_timing(dm, **dict(base, pid=sleepers.pid, tid=sleepers.pid))
        tap.ok(r.get("ok"), "its main thread by tid: opened", r)
        name, why = wire.err(wire.call_timing(dm, **dict(base, pid=sleepers.pid)))
        tap.ok(name == "bad-field" and "runs 4 threads" in why and "'tids'" in why and "per-user limit" in why,
               "the process without tids: refused, naming tids and the per-user limit", why)
        every = tasks(sleepers.pid)
        r = wire.call_timing(dm, **dict(base, pid=sleepers.pid, tids=every))
        tap.ok(r.get("ok") and r.get("fds") == 2 * len(every) and r.get("tids") == every and r.get("cpus") == [0, 1],
               "all 4 threads by tids in one handle: one fd per thread and CPU", r)
        tap.ok("tids %d-%d" % (every[0], every[-1]) in dm.audit() or "tids " in dm.audit(),
               "the open of threads is audited with their tids")
        cases = [
            ("a tid of another process of one's own", dict(base, pid=sleepers.pid, tid=mine.pid), "bad-field",
             "is not a thread of process %d" % sleepers.pid),
            ("another user's thread under one's own pid", dict(base, pid=sleepers.pid, tid=their_threads[0]),
             "bad-field", "is not a thread of process"),
            ("another user's thread under its own pid", dict(base, pid=theirs.pid, tid=their_threads[0]),
             "not-authorized", "is not yours"),
            ("a thread that ended at once", dict(base, pid=sleepers.pid, tid=ended), "bad-field",
             "is not a thread of process"),
            ("tid with on_exec", dict(base, pid=sleepers.pid, tid=threads[0], on_exec=True), "bad-field",
             "'on_exec' is not accepted"),
            ("tid 0", dict(base, pid=sleepers.pid, tid=0), "bad-field", "'tid'"),
            ("tid not a number", dict(base, pid=sleepers.pid, tid="1"), "bad-field", "'tid'"),
            ("tid past a pid's range", dict(base, pid=sleepers.pid, tid=1 << 31), "bad-field", "'tid'"),
            ("tid of process 1", dict(base, pid=1, tid=1), "not-authorized", "process 1"),
            ("65 tids", dict(base, pid=sleepers.pid, tids=list(range(100000, 100065))), "too-many-ops",
             "at most 64"),
            ("64 tids on 4 CPUs (256 events)", dict(base, pid=sleepers.pid, tids=list(range(100000, 100064)),
                                                    cpus=[0, 1, 2, 3]), "too-many-ops", "256 events, at most 253"),
            ("a duplicate tid", dict(base, pid=sleepers.pid, tids=[threads[0], threads[1], threads[0]]),
             "bad-field", "names thread %d twice" % threads[0]),
            ("tids with a thread not of pid", dict(base, pid=sleepers.pid, tids=[threads[0], mine.pid]),
             "bad-field", "%d is not a thread of process %d" % (mine.pid, sleepers.pid)),
            ("tids with another user's thread", dict(base, pid=sleepers.pid, tids=[threads[0], their_threads[0]]),
             "bad-field", "is not a thread of process"),
            ("tids and tid both", dict(base, pid=sleepers.pid, tids=[threads[0]], tid=threads[1]), "bad-field",
             "send one of them"),
            ("empty tids", dict(base, pid=sleepers.pid, tids=[]), "bad-field", "at least one thread"),
            ("tids with on_exec", dict(base, pid=sleepers.pid, tids=threads, on_exec=True), "bad-field",
             "'on_exec' is not accepted"),
        ]
        for desc, fields, want_name, want_why in cases:
            name, why = wire.err(wire.call_timing(dm, **fields))
            tap.ok(name == want_name and want_why in why, "%s: refused (%s)" % (desc, want_name), why)
        tap.ok("tid %d" % threads[0] in dm.audit(), "the open of a thread is audited with its tid")

        # The per-user limit of perf events: 1024 held by counting events on another
        # connection of the same uid, then a thread's timing events cannot pass it.
        holder = Agent(dm, groups=(t.USER_GID, wire.LBR_GID))
        big = [[dict(pmu="software", config=CPU_CLOCK)] * 8] * 4
        full = [holder.call("perf_open", scope="cpu", cpus=[0, 1], groups=big) for _ in range(16)]
        tap.ok(all(r.get("ok") for r in full), "1024 events held by one connection of the uid",
               [wire.err(r) for r in full if not r.get("ok")][:1])
        name, why = wire.err(wire.call_timing(dm, **dict(base, pid=sleepers.pid, tid=threads[1])))
        tap.ok(name == "limit" and "1024 per user" in why and "one per thread and CPU" in why,
               "a thread's timing_open past the per-user limit: refused with the reason", why)
        rc, _, err = t.run_cli([t.PMUGATE, "timing", "--mode", "ips", "-p", str(sleepers.pid), "--duration", "0.2"],
                               dm.socket, uid=USER, gid=wire.OTHER_GID, groups=[t.USER_GID, wire.LBR_GID])
        tap.ok(rc == 1 and "1024 per user" in err and "one per thread and CPU" in err,
               "pmugate timing -p at the limit: exit 1, the daemon's reason", err)
        for r in full:
            holder.call("perf_close", handle=r["handle"])
        rc, _, err = t.run_cli([t.PMUGATE, "timing", "--mode", "ips", "-p", str(sleepers.pid), "--duration", "0.2"],
                               dm.socket, uid=USER, gid=wire.OTHER_GID, groups=[t.USER_GID, wire.LBR_GID])
        tap.ok(rc == 0, "below the limit again, pmugate timing -p of the 4 threads records", err)
        # more threads than a user's timing handles (each its own affinity, 2 CPUs: one request
        # of 64 threads for each 64): 21 threads in one request; past 16 requests, said before any open
        many = t.spawn(["/usr/bin/python3", "-c", "import threading, time\n"
                        "def spin():\n    while True:\n        pass\n"
                        "[threading.Thread(target=spin, daemon=True).start() for _ in range(20)]\n"
                        "print('ready', flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True,
                       preexec_fn=t.as_user(USER, wire.OTHER_GID, groups))
        try:
            many.stdout.readline()
            rc, _, err = t.run_cli([t.PMUGATE, "timing", "--mode", "ips", "-p", str(many.pid), "--duration", "0.3"],
                                   dm.socket, uid=USER, gid=wire.OTHER_GID, groups=[t.USER_GID, wire.LBR_GID])
            tap.ok(rc == 0, "pmugate timing -p of 21 threads (more than a user's 16 timing handles): recorded", err)
        finally:
            t.end(many)
        tap.ok(dm.alive(), "the daemon keeps serving")
    finally:
        if holder:
            holder.p.stdin.close()
            t.end(holder.p)
        for p in (sleepers, mine, theirs):
            t.end(p)
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_wire, test_real_kernel, test_many_threads, test_simulator_branches]))

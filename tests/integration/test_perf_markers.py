#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Markers in the perf read mode through the real daemon (simulated PMU, counters via perf):
a program whose threads burn a known CPU time and touch a known number of pages in their
regions, run by an unprivileged user under `pmugate stat -m -e task-clock,page-faults`; each
thread opens its own events through the daemon (scope process, "thread", handoff) and reads
them without a round trip per region. Also the daemon's "thread" checks, and a -e list that
mixes software and counter events."""

import ctypes
import json
import os
import re
import sys
import threading
import time

import pmugatetest as t

BURN = os.environ.get("MARKER_PERF_BURN", os.path.join(t.BUILD, "tests", "client", "marker", "marker_perf_burn"))
USER = dict(uid=t.UNPRIVILEGED_UID, gid=t.USER_GID, groups=(t.USER_GID,))
THREADS = 2             # beside the main thread
CALLS = 4
MS = 25.0
PAGES = 64
# task-clock counts the thread's CPU time, which is what the program burns by: the markers'
# own reads and the page touching add little
TIME_BOUND = 0.10


def start_daemon(counters="perf"):
    d = t.workdir()
    args = ["--backend=sim", "--sim-model=skx", "--sim-config=" + t.sim_config(d, "skx")]
    if counters:
        args.append("--counters=" + counters)
    return t.Daemon(d, args)


def run_markers(daemon, *program, events="task-clock,page-faults"):
    """pmugate stat -m as the unprivileged user, the JSON report in a file it may write."""
    report = os.path.join(daemon.workdir, "report.json")
    if os.path.exists(report):
        os.unlink(report)
    os.chmod(daemon.workdir, 0o777)
    rc, out, err = t.run_cli([t.PMUGATE, "stat", "-m", "-e", events, "-O", "json", "-o", report, "--"] + list(program),
                             daemon.socket, **USER)
    doc = None
    if os.path.exists(report) and os.path.getsize(report) > 0:
        with open(report) as f:
            doc = json.load(f)
    return rc, doc, out, err


def requests(daemon):
    """The daemon's count of requests served, from pmugatectl status (as root)."""
    rc, out, err = t.run_cli([t.PMUGATECTL, "status"], daemon.socket)
    m = re.search(r"^Requests:\s+(\d+)", out, re.M)
    if rc != 0 or not m:
        raise AssertionError("pmugatectl status: %d %s %s" % (rc, out, err))
    return int(m.group(1))


def region(doc, name):
    return [r for r in doc["regions"] if r["name"] == name][0]


def test_regions(tap):
    """Each region's task-clock is its burn, its page-faults at least the pages touched."""
    daemon = start_daemon()
    try:
        rc, doc, out, err = run_markers(daemon, BURN, str(THREADS), str(CALLS), str(MS), str(PAGES))
        tap.ok(rc == 0 and doc is not None and "markers: perf" in out,
               "stat -m -e task-clock,page-faults runs the program in the perf read mode", out + err)
        if doc is None:
            return
        tap.eq(doc["read_mode"], "perf", "the report says read_mode perf")
        tap.eq(doc["errors"], [], "no misuse")
        tap.eq([r["name"] for r in doc["regions"]], ["main", "burn", "touch"], "three regions, in order")
        main = region(doc, "main")
        tap.eq([(th["thread"], th["calls"]) for th in main["threads"]], [(0, 1)],
               "main: the main thread alone (its events are its own, not its process's)")
        got = main["threads"][0]["counts"]["task-clock"] / 1e6
        tap.ok(abs(got / MS - 1) < TIME_BOUND, "main: task-clock %.2f ms for a burn of %.1f ms" % (got, MS))
        burn, touch = region(doc, "burn"), region(doc, "touch")
        for r in (burn, touch):
            tap.eq(sorted((th["thread"], th["calls"]) for th in r["threads"]),
                   [(i, CALLS) for i in range(THREADS + 1)],
                   "%s: %d calls on each of %d threads" % (r["name"], CALLS, THREADS + 1))
            tap.eq([th["migrated"] for th in r["threads"]], [0] * (THREADS + 1),
                   "%s: no call dropped (the events follow their thread across CPUs)" % r["name"])
        want = CALLS * MS
        clocks = [th["counts"]["task-clock"] / 1e6 for th in burn["threads"]]
        tap.ok(all(abs(c / want - 1) < TIME_BOUND for c in clocks),
               "burn: task-clock per thread within %d %% of %d x %.1f ms (%s ms)" % (
                   TIME_BOUND * 100, CALLS, MS, ", ".join("%.2f" % c for c in clocks)))
        tap.eq(burn["aggregate"]["counts"]["task-clock"], sum(th["counts"]["task-clock"] for th in burn["threads"]),
               "burn: the aggregate sums the threads")
        faults = [th["counts"]["page-faults"] for th in touch["threads"]]
        tap.ok(all(f >= CALLS * PAGES for f in faults) and all(f < CALLS * PAGES * 2 + 64 for f in faults),
               "touch: page-faults per thread at least the %d pages touched (%s)" % (CALLS * PAGES, faults))
        clocks = [th["counts"]["task-clock"] / 1e6 for th in touch["threads"]]
        tap.ok(all(c < want / 4 for c in clocks), "touch: its task-clock is not the burn's (%s ms)" % clocks)
        audit = daemon.audit()
        opens = [l for l in audit.splitlines() if "event=perf-open" in l and "verdict=allowed" in l]
        tap.eq(len(opens), THREADS + 1, "one perf_open per thread, audited")
        closes = [l for l in audit.splitlines() if "event=perf-close" in l]
        tap.eq(len(closes), THREADS + 1, "each closed at the markers' close")
    finally:
        daemon.stop()


def test_no_round_trip_per_region(tap):
    """The daemon serves as many requests for 2 calls per thread as for 40."""
    daemon = start_daemon()
    try:
        served = []
        for calls in (2, 40):
            before = requests(daemon)
            rc, doc, out, err = run_markers(daemon, BURN, str(THREADS), str(calls), "1", "4")
            after = requests(daemon)
            tap.ok(rc == 0 and doc and doc["read_mode"] == "perf", "%d calls per thread run" % calls, out + err)
            served.append(after - before)
        tap.ok(served[0] == served[1] and served[0] > 0,
               "the same requests for 2 and for 40 calls per thread: none per region (%s)" % served)
    finally:
        daemon.stop()


def test_any_counting_path(tap):
    """Software events need no PMU: the perf read mode works where counters go via MSRs too."""
    daemon = start_daemon(counters="msr")
    try:
        rc, doc, out, err = run_markers(daemon, BURN, "1", "2", "10", "8")
        tap.ok(rc == 0 and doc is not None and doc["read_mode"] == "perf",
               "counters via msr: software events still read in the perf read mode", out + err)
    finally:
        daemon.stop()


def test_hardware_groups(tap):
    """Where counters go via perf, -g takes the perf read mode too: the runner names the
    group's perf events (fixed events by their pseudo-encodings) to the program and keeps the
    formulas. The simulator's hardware events live in the daemon and have no fd to hand off,
    so here each thread's perf_open is refused: that the refusal reaches the report, once per
    thread and not per region, is what can be checked without a PMU."""
    daemon = start_daemon()
    try:
        before = requests(daemon)
        report = os.path.join(daemon.workdir, "hw.json")
        os.chmod(daemon.workdir, 0o777)
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-m", "-g", "ipc", "-C", "0", "-O", "json", "-o", report, "--",
                                  BURN, "1", "5", "1", "1"], daemon.socket,
                                 env={"PMUGATE_GROUP_PATH": os.path.join(t.SOURCE, "client", "groups")}, **USER)
        served = requests(daemon) - before
        doc = json.load(open(report)) if os.path.exists(report) and os.path.getsize(report) else {}
        tap.ok(rc == 1 and doc.get("read_mode") == "perf" and doc.get("group") == "ipc",
               "-g ipc with counters via perf: the perf read mode, the group named", out + err)
        counts = doc["regions"][0]["aggregate"]["counts"] if doc.get("regions") else {}
        tap.eq(sorted(counts), ["CPU_CLK_UNHALTED.REF_TSC", "CPU_CLK_UNHALTED.THREAD", "INST_RETIRED.ANY"],
               "the group's events are the report's columns")
        texts = [e["text"] for e in doc.get("errors", [])]
        tap.ok(len(texts) == 2 and all("could not open its perf events" in x for x in texts),
               "each thread's refused perf_open is reported", texts)
        leases = [l for l in daemon.audit().splitlines() if "event=lease" in l]
        tap.eq(leases, [], "the runner took no lease: the program's threads count themselves")
        tap.ok(served < 12, "a refusal is not asked again at every region (%d requests)" % served)
    finally:
        daemon.stop()


def test_mixed_events(tap):
    """Software and counter events together: through MSRs the markers cannot read both; through
    perf they are the measurement's perf groups."""
    daemon = start_daemon(counters="msr")
    try:
        rc, doc, out, err = run_markers(daemon, BURN, "1", "1", "1", "1", events="task-clock,INST_RETIRED.ANY")
        tap.ok(rc != 0 and "'INST_RETIRED.ANY' is not one of perf's software events" in err,
               "counters via msr: -e mixing software and counter events is refused, naming the event", err)
    finally:
        daemon.stop()
    daemon = start_daemon()
    try:
        rc, doc, out, err = run_markers(daemon, BURN, "1", "1", "1", "1", events="task-clock,INST_RETIRED.ANY")
        counts = doc["regions"][0]["aggregate"]["counts"] if doc and doc.get("regions") else {}
        tap.ok(doc is not None and doc["read_mode"] == "perf" and sorted(counts) == ["INST_RETIRED.ANY", "task-clock"],
               "counters via perf: both are the measurement's perf groups, read in the perf read mode", out + err)
    finally:
        daemon.stop()


def reason(reply):
    return (reply.get("error") or {}).get("reason", "")


def open_thread(client, pid, **extra):
    req = dict(scope="process", pid=pid, thread=True, follow=False,
               groups=[[{"pmu": "software", "config": 1}]])
    req.update(extra)
    return client.call("perf_open", **req)


def thread_checks():
    """In a child as the unprivileged user: the daemon's "thread" key on a Python thread."""
    # the uid change left the child undumpable, which the daemon (as perf and ptrace) refuses
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    out = {}
    stop = threading.Event()
    started = threading.Event()
    tid = []

    def spin():
        tid.append(threading.get_native_id())
        started.set()
        while not stop.is_set():
            sum(range(1000))

    th = threading.Thread(target=spin)
    th.start()
    started.wait()
    c = t.Client(os.environ["PMUGATE_SOCKET"])
    try:
        r = open_thread(c, tid[0])
        out["own"] = {k: r.get(k) for k in ("handle", "targets", "error")}
        time.sleep(0.2)
        if "handle" in r:
            rows = c.call("perf_read", handle=r["handle"])["rows"]
            out["spun_ns"] = rows[0][5][0]
        r = open_thread(c, 0)
        out["main"] = {k: r.get(k) for k in ("handle", "targets", "error")}
        out["init"] = reason(open_thread(c, 1))
        out["follow"] = reason(open_thread(c, tid[0], follow=True))
        out["cpu"] = reason(c.call("perf_open", scope="cpu", cpus=[0], thread=True,
                                   groups=[[{"pmu": "software", "config": 1}]]))
    finally:
        stop.set()
        th.join()
    # join() returns before the kernel has taken the thread out of /proc/PID/task
    deadline = time.monotonic() + 5
    while os.path.exists("/proc/self/task/%d" % tid[0]) and time.monotonic() < deadline:
        time.sleep(0.01)
    out["ended"] = reason(open_thread(c, tid[0]))
    out["pid"] = os.getpid()
    c.close()
    return out


def test_thread_key(tap):
    daemon = start_daemon()
    try:
        os.environ["PMUGATE_SOCKET"] = daemon.socket
        got = t.in_child_as(t.UNPRIVILEGED_UID, t.USER_GID, (t.USER_GID,), thread_checks)
        tap.ok("handle" in got["own"] and got["own"]["targets"] == [got["pid"]],
               "a thread of the caller's own process (not its leader) is counted, target its process", got["own"])
        tap.ok(got.get("spun_ns", 0) > 50e6, "its task-clock is that thread's spinning (%.1f ms of 200 ms)" % (
            got.get("spun_ns", 0) / 1e6))
        tap.ok("handle" in got["main"], "tid 0: the caller's main thread", got["main"])
        tap.ok("not a thread of your process" in got["init"], "a thread of another process is refused", got["init"])
        tap.ok("'follow' must be false" in got["follow"], "a thread alone does not follow", got["follow"])
        tap.ok("belong to scope 'process'" in got["cpu"], "'thread' belongs to scope process", got["cpu"])
        tap.ok("not a thread of your process" in got["ended"], "a thread that ended is refused", got["ended"])
    finally:
        daemon.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_regions, test_no_round_trip_per_region, test_any_counting_path, test_hardware_groups,
                          test_mixed_events, test_thread_key]))

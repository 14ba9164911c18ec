#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""pmugate stat and topdown through the daemon's perf path (docs/PERF.md): the kernel's software
events by perf's names counting a command and its children from its exec (pmugate stat -e
task-clock -- COMMAND, like perf stat) or an attached process (-p), on a node whose counters go
via msr; and on the simulated PMU with --counters=perf, TopDown and groups equal to the register
path's on the same profile, an event the kernel never scheduled n/a with its reason, and a job's
package events withheld."""

import json
import os
import re
import subprocess
import sys
import time

import perf_cgroup_fixture as fixture
import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1

# Spins until this process has used SECONDS of CPU: CPU time, not wall time, so that a loaded
# machine still gives the counted CPU time the check expects.
BUSY = "import sys, time\nwhile time.process_time() < float(sys.argv[1]): pass\n"


def node(mode="open"):
    """A real daemon on a fake Sapphire Rapids of 2 CPUs (this machine's): counters via msr,
    software events through the real kernel."""
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = %s\nadmin_groups = %d\nuser_groups = %d\n" % (mode, t.ADMIN_GID, t.USER_GID))
    m.set_user("user", USER, t.USER_GID, [t.USER_GID])
    m.set_user("other", OTHER_USER, t.USER_GID, [t.USER_GID])
    out = os.path.join(d, "out")
    os.mkdir(out)
    os.chmod(out, 0o777)
    return d, out, t.Daemon(d, ["--root=" + m.root], config=conf)


def cli(dm, *args, uid=USER, timeout=60):
    return t.run_cli([t.PMUGATE] + list(args), dm.socket, uid=uid, gid=t.USER_GID, groups=[t.USER_GID],
                     env={"PMUGATE_GROUP_PATH": t.GROUPS}, timeout=timeout)


def count(doc, event):
    return doc["aggregate"]["counts"][event]["value"]


def test_task_clock_of_a_command_and_its_children(tap):
    d, out, dm = node()
    try:
        path = os.path.join(out, "cmd.json")
        # 0.3 s of CPU in the command, 0.2 s in a child it forks and waits for
        script = 'python3 -c "$0" 0.3; (python3 -c "$0" 0.2) & wait'
        rc, _, err = cli(dm, "stat", "-e", "task-clock,page-faults,context-switches", "-O", "json", "-o", path,
                         "--", "sh", "-c", script, BUSY)
        tap.eq(rc, 0, "pmugate stat -e task-clock -- COMMAND exits with the command's status")
        doc = json.load(open(path)) if rc == 0 else {}
        ms = count(doc, "task-clock") / 1e6 if doc else 0
        tap.ok(ms >= 500, "task-clock counts the command and its child: %.0f ms >= 500 ms" % ms, err)
        tap.ok(ms < 5000, "and not the whole node: %.0f ms" % ms)
        tap.ok(doc and count(doc, "page-faults") > 0, "page-faults counted", doc)
        tap.ok(doc and doc["per_cpu"] and len(doc["per_cpu"]) == 1, "one row: the process, not the CPUs")

        rc, _, err = cli(dm, "stat", "-e", "task-clock", "--", "python3", "-c", BUSY, "0.1")
        tap.ok(rc == 0 and re.search(r"[0-9.]+ msec\s+task-clock\s+# [0-9.]+ CPUs utilized", err),
               "the table gives task-clock in msec with CPUs utilized, as perf", err)
        tap.ok("for 'python3' and its children" in err, "the title names the command", err)

        # counting starts at the exec: pmugate's own set-up and the fork are not counted
        rc, _, err = cli(dm, "stat", "-e", "task-clock", "-O", "json", "-o", os.path.join(out, "true.json"), "--",
                         "true")
        doc = json.load(open(os.path.join(out, "true.json"))) if rc == 0 else {}
        tap.ok(doc and count(doc, "task-clock") / 1e6 < 100, "a command that does nothing counts almost nothing",
               doc or err)

        # intervals (-I) through the same accumulators: each interval's task-clock is its own
        rc, _, err = cli(dm, "stat", "-e", "task-clock", "-I", "100ms", "-O", "csv", "--", "python3", "-c", BUSY,
                         "0.5")
        rows = [line.split(",") for line in err.splitlines() if ",all,count,task-clock," in line]
        # (interval length, task-clock) in ms: one thread counts at most its interval
        per = [(float(r[1]) * 1e3, float(r[5]) / 1e6) for r in rows if r[5]]
        tap.ok(rc == 0 and len(per) >= 3 and all(0 <= ms <= 1.1 * span + 1 for span, ms in per) and
               sum(ms for _, ms in per) >= 450,
               "-I 100ms: %d intervals of task-clock, each within its interval, %.0f ms in all"
               % (len(per), sum(ms for _, ms in per)), err)

        rc, _, err = cli(dm, "stat", "-e", "task-clock", "--", "sh", "-c", "exit 3")
        tap.eq(rc, 3, "the command's exit status is passed on")
        tap.ok(dm.alive(), "the daemon serves on")
    finally:
        dm.stop()


def test_attach_to_a_process(tap):
    d, out, dm = node()
    busy = None
    try:
        busy = t.spawn(["/usr/bin/python3", "-c", BUSY, "1.5"], preexec_fn=t.as_user(USER, t.USER_GID, [t.USER_GID]))
        time.sleep(0.2)
        rc, stdout, err = cli(dm, "stat", "-e", "task-clock", "-p", str(busy.pid), "-O", "json")
        tap.eq(rc, 0, "pmugate stat -p PID ends when the process exits")
        doc = json.loads(stdout) if rc == 0 else {}
        ms = count(doc, "task-clock") / 1e6 if doc else 0
        tap.ok(ms >= 300, "task-clock of the attached process: %.0f ms of its 1.5 s" % ms, err)
        tap.ok(doc and doc["cpus"] == [busy.pid], "its row is the pid", doc)
        busy.wait(timeout=30)

        busy = t.spawn(["/usr/bin/python3", "-c", BUSY, "30"], preexec_fn=t.as_user(USER, t.USER_GID, [t.USER_GID]))
        time.sleep(0.2)
        rc, _, err = cli(dm, "stat", "-e", "task-clock", "-p", str(busy.pid), uid=OTHER_USER)
        tap.ok(rc != 0 and "failed" in err,
               "another user's process cannot be attached to", err)
        rc, _, err = cli(dm, "stat", "-e", "task-clock", "-p", str(busy.pid), "-C", "0")
        tap.eq(rc, 2, "-p with -C is a usage error")
    finally:
        if busy and busy.poll() is None:
            busy.kill()
            busy.wait()
        dm.stop()


def test_software_events_on_any_node(tap):
    """A node whose counters go via msr still counts software events by name, through perf;
    hardware events in scope process there are refused with the daemon's reason."""
    d, out, dm = node()
    try:
        rc, _, err = cli(dm, "stat", "-e", "cpu-clock,minor-faults,major-faults,cs,migrations", "--", "true")
        tap.ok(rc == 0 and "cpu-clock" in err and "context-switches" in err, "perf's software names and aliases",
               err)
        rc, _, err = cli(dm, "stat", "-e", "task-clock", "--scope", "cpu", "-c", "0", "-S", "0.2")
        tap.ok(rc == 0 and "task-clock" in err + _, "task-clock per CPU with --scope cpu", err)
        rc, _, err = cli(dm, "stat", "-e", "INST_RETIRED.ANY", "--scope", "process", "--", "true")
        tap.ok(rc != 0 and "starting the counters failed: " in err and "groups[0][0]" in err,
               "hardware events in scope process where the kernel has no such PMU: the daemon's reason", err)
        rc, _, err = cli(dm, "stat", "-e", "task-clock", "--scope", "process")
        tap.eq(rc, 2, "--scope process without a command or -p is a usage error")
    finally:
        dm.stop()


def test_job_scope(tap):
    """Job mode: two jobs share CPU 0; pmugate stat --scope job counts its own job's tasks."""
    why = fixture.usable()
    if why:
        tap.skip("pmugate stat --scope job", why)
        return
    d, out, dm = node("job")
    jobs = None
    try:
        jobs = fixture.JobCgroups(("21", "22"), machine_root=os.path.join(d, "root"))
        for job, uid in (("21", USER), ("22", OTHER_USER)):
            rc, _, err = t.run_cli([t.PMUGATECTL, "grant", "--job", job, "--uid", str(uid), "--cpus", "0"], dm.socket)
            tap.eq(rc, 0, "job %s granted CPU 0" % job)
        loops = {"21": fixture.BusyLoop(jobs.dir("21"), 0.4, 0, USER),
                 "22": fixture.BusyLoop(jobs.dir("22"), 0.4, 0, OTHER_USER)}
        jobs.loops.extend(loops.values())
        stat = t.spawn([t.PMUGATE, "stat", "-e", "task-clock", "--scope", "job", "-c", "0", "-S", "4", "-O", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, PMUGATE_SOCKET=dm.socket),
                       preexec_fn=lambda: (jobs.preexec("21")(), t.as_user(USER, t.USER_GID, [t.USER_GID])()))
        # the loops spin once the events are open (the daemon audits the open), so that all
        # of job 21's loop is counted however long pmugate takes to start on a busy machine
        deadline = time.monotonic() + 20
        while "event=perf-open verdict=allowed" not in dm.audit() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        for loop in loops.values():
            loop.go()
        used = {job: loop.wait() for job, loop in loops.items()}
        stdout, err = stat.communicate(timeout=30)
        tap.eq(stat.returncode, 0, "pmugate stat --scope job in job mode")
        doc = json.loads(stdout) if stat.returncode == 0 else {}
        sec = count(doc, "task-clock") / 1e9 if doc else 0
        # at least the 0.4 s its loop spun after go, at most what its tasks used in all (the
        # loop's start-up, pmugate's own): the other job's 0.4 s on the same CPU is not in it
        tap.ok(0.38 <= sec < used["21"] + 0.15,
               "the job's task-clock is its own (%.3f s used), not the other job's on the same CPU: %.3f s"
               % (used["21"], sec), err)
        rc, _, err = t.run_cli([t.PMUGATE, "stat", "-e", "task-clock", "--scope", "job", "-c", "0", "-S", "0.1"],
                               dm.socket, uid=USER, gid=t.USER_GID, groups=[t.USER_GID])
        tap.ok(rc != 0 and "failed" in err, "outside the job's cgroup scope job is refused with the daemon's reason",
               err)
    finally:
        dm.stop()
        if jobs:
            jobs.remove()


# ------------------------------------------------------------------ the simulated PMU through perf


def sims(model, counters, **kw):
    s = t.Sim(model, **kw)
    if counters != "msr":
        s.daemon.stop()
        s.daemon = t.Daemon(s.dir, ["--backend=sim", "--sim-model=" + model,
                                    "--sim-config=" + os.path.join(s.dir, "sim.conf"), "--counters=" + counters])
    return s


def perf_has_core_pmu(s):
    c = t.Client(s.daemon.socket)
    h = c.call("hello")
    c.close()
    return any(p[1] == "core" for p in h.get("pmus", [])), h.get("counting", {}).get("via")


# event 0xee with umasks 1 to 11: events the simulator counts (docs/SIMULATOR.md, extra events),
# more of them than there are counters
MUX_EVENTS = {"event.0xee.0x%02x" % u: 0.01 * u for u in range(1, 12)}
PROFILE = [("0-7", dict(t.STENCIL, **MUX_EVENTS))]


def test_topdown_equals_msr_path(tap):
    for model, level in (("icx", "1"), ("spr", "1"), ("spr", "2"), ("skx", "1"), ("zen4", "1")):
        kw = dict(cores_per_ccx=4) if model == "zen4" else {}
        results = {}
        for counters in ("msr", "perf"):
            s = sims(model, counters, rules=PROFILE, **kw)
            try:
                if counters == "perf":
                    core, via = perf_has_core_pmu(s)
                    if not core or via != "perf":
                        tap.skip("%s topdown -l %s via perf" % (model, level),
                                 "the simulator serves no core PMU through perf here")
                        break
                results[counters] = s.json("topdown", "-l", level, "-c", "0-3", "-O", "json", "-S", "0.3")
            finally:
                s.stop()
        if len(results) < 2:
            continue
        msr, perf = results["msr"], results["perf"]
        diffs = {k: abs(v - perf["aggregate"]["metrics"][k]) for k, v in msr["aggregate"]["metrics"].items()
                 if v is not None and perf["aggregate"]["metrics"].get(k) is not None}
        tap.ok(diffs and max(diffs.values()) <= 1e-2,
               "%s: TopDown level %s via perf equals the MSR path's (%d metrics)" % (model, level, len(diffs)), diffs)


def test_group_equals_msr_path_and_not_scheduled(tap):
    results = {}
    for counters in ("msr", "perf"):
        s = sims("icx", counters, rules=PROFILE)
        try:
            if counters == "perf":
                core, via = perf_has_core_pmu(s)
                if not core or via != "perf":
                    tap.skip("icx group via perf", "the simulator serves no core PMU through perf here")
                    return
            results[counters] = s.json("stat", "-g", "ipc", "-c", "0-3", "-O", "json", "-S", "0.3")
            if counters == "perf":
                # more GP events than counters: the kernel multiplexes the groups (a group it
                # never schedules is n/a: test_measure_perf.c, where the rows are made so)
                rc, out, err = s.run("stat", "-e", ",".join(["INT_MISC.CLEARS_COUNT"] + ["r%02xee" % i for i in range(1, 12)]),
                                     "-c", "0", "-O", "json", "-S", "0.2")
                doc = json.loads(out) if rc == 0 else {}
                counts = doc.get("aggregate", {}).get("counts", {})
                # r023c..r0b3c have no model in the simulator: <not modelled>, not never run
                never = [k for k, v in counts.items() if v["value"] is None and not v.get("not_modelled")]
                shares = [1 / v["scale"] for v in counts.values() if v["value"] is not None]
                tap.ok(rc == 0 and len(counts) == 12 and all(0 < x < 1 for x in shares) and
                       (not never or "never scheduled" in doc.get("withheld", "")),
                       "12 events on 8 counters take turns: each scaled by its share of the time "
                       "(time_running / time_enabled) or n/a with the reason", (shares, never, err))
        finally:
            s.stop()
    msr, perf = results["msr"], results["perf"]
    for k, v in msr["aggregate"]["metrics"].items():
        p = perf["aggregate"]["metrics"].get(k)
        tap.ok(v is not None and p is not None and abs(v - p) <= 1e-2 * max(1.0, abs(v)),
               "group ipc: %s via perf (%r) equals the MSR path's (%r)" % (k, p, v))


sys.exit(t.Tap().run([test_task_clock_of_a_command_and_its_children, test_attach_to_a_process,
                      test_software_events_on_any_node, test_job_scope, test_topdown_equals_msr_path,
                      test_group_equals_msr_path_and_not_scheduled]))

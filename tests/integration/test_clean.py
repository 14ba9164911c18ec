#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A lease leaves the PMU clean, through the real daemon and socket: overflow status the holder
caused is cleared at every lease end (release, disconnect, revoke) and never a foreign counter's;
a Zen 4 CPU is never handed back with an overflow bit for the NMI watchdog's PMI handler to trip
over (the simulator reports the PMI nobody handles); an INT bit a third party left in an event
select never ends up beside a user's EN; a journal kept after a failed restore survives the next
lease request and the CPU is not leased until it is restored; and an admin's reset reaches
CPUs above 4096."""

import json
import os
import re
import subprocess
import sys
import time

import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OTHER_GID = 4999

# Intel
EVTSEL0, PMC0, A_PMC0 = 0x186, 0xC1, 0x4C1
GLOBAL_STATUS, GLOBAL_CTRL = 0x38E, 0x38F
EN, USR, OS, INT = 1 << 22, 1 << 16, 1 << 17, 1 << 20
CYCLES = 0x3C | USR | OS | EN
# AMD
PERF_CTL0, PERF_CTR0 = 0xC0010200, 0xC0010201
AMD_STATUS, AMD_GLOBAL_CTL = 0xC0000300, 0xC0000301
AMD_CYCLES = 0x76 | USR | OS | EN

NEAR_WRAP = (1 << 48) - 20000
STRAY = re.compile(r"Simulated CPU (\d+): the kernel's PMI handler \(NMI watchdog\) finds overflow status (0x[0-9a-f]+)")


def name(r):
    return "ok" if r.get("ok") else r["error"]["name"]


def reason(r):
    return r.get("error", {}).get("reason", "")


def config(path, mode="open"):
    with open(path, "w") as f:
        f.write("[access]\nmode = %s\nadmin_groups = %d\nuser_groups = %d\n" % (mode, t.ADMIN_GID, t.USER_GID))
    return path


def sim(model, extra="", mode="open", sockets=1, cores=4, smt=True):
    d = t.workdir()
    path = os.path.join(d, "sim.conf")
    with open(path, "w") as f:
        f.write("[machine]\nmodel = %s\nsockets = %d\ncores = %d\nsmt = %s\n[clock]\nmode = realtime\n%s" % (
            model, sockets, cores, "yes" if smt else "no", extra))
    return d, t.Daemon(d, ["--backend=sim", "--sim-model=" + model, "--sim-config=" + path],
                       config=config(os.path.join(d, "pmugate.conf"), mode))


AGENT = """
import json, sys, pmugatetest as t
c = t.Client(sys.argv[1])
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps(c.call(req.pop("op"), **req)), flush=True)
"""


class Agent:
    """A user's client that keeps its connection, run as the unprivileged test user."""

    def __init__(self, dm, uid=USER, gid=OTHER_GID, groups=(t.USER_GID,)):
        env = dict(os.environ, PYTHONPATH=os.path.dirname(t.__file__))
        self.p = t.spawn([sys.executable, "-c", AGENT, dm.socket], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, preexec_fn=t.as_user(uid, gid, list(groups)))

    def call(self, op, **fields):
        self.p.stdin.write(json.dumps(dict(op=op, **fields)) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise ConnectionError("the agent's connection ended")
        return json.loads(line)

    def batch(self, ops):
        return self.call("batch", ops=ops)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def values(c, ops):
    r = c.batch(ops)
    if not r.get("ok"):
        raise AssertionError(r)
    return r["values"]


def overflow_intel(a, cpu):
    """PMC0 of cpu counts cycles from just below the wrap, with its global enable."""
    return a.batch([["w", cpu, A_PMC0, NEAR_WRAP], ["w", cpu, EVTSEL0, CYCLES], ["wm", cpu, GLOBAL_CTRL, 1, 1]])


def wait_status(c, cpu, reg, bit):
    deadline = time.time() + 5
    while time.time() < deadline:
        if values(c, [["r", cpu, reg]])[0] & bit:
            return True
        time.sleep(0.01)
    return False


def test_lease_end_paths(tap):
    """Release, disconnect and revoke each leave GLOBAL_STATUS, the event select and the counter
    clean; a lease of a job mode grant, as on a cluster."""
    d, dm = sim("spr", mode="job")
    try:
        root = t.Client(dm.socket)
        rc, out, err = t.run_cli([t.PMUGATECTL, "grant", "--job", "7", "--uid", str(USER), "--cpus", "1-3"], dm.socket)
        tap.eq(rc, 0, "job 7 is granted CPUs 1-3: " + out + err)
        paths = {1: "release", 2: "disconnect", 3: "revoke"}
        agents = {}
        for cpu, path in paths.items():
            a = agents[cpu] = Agent(dm)
            tap.eq(name(a.call("lease", cpus=[cpu])), "ok", "%s: the user leases CPU %d" % (path, cpu))
            tap.eq(name(overflow_intel(a, cpu)), "ok", "%s: and programs PMC0 just below its wrap" % path)
            tap.ok(wait_status(root, cpu, GLOBAL_STATUS, 1), "%s: PMC0 wrapped and set its GLOBAL_STATUS bit" % path)
        tap.eq(name(agents[1].call("release")), "ok", "release")
        agents[2].close()
        r = root.call("revoke", job="7")
        tap.ok(r.get("revoked"), "revoke of job 7 ends the lease on CPU 3", r)
        time.sleep(0.1)
        for cpu, path in paths.items():
            status, evtsel, pmc, gctl = values(root, [["r", cpu, GLOBAL_STATUS], ["r", cpu, EVTSEL0], ["r", cpu, PMC0],
                                                      ["r", cpu, GLOBAL_CTRL]])
            tap.eq(status, 0, "%s: the overflow bit the holder caused is cleared" % path)
            tap.eq((evtsel, pmc, gctl), (0, 0, 0), "%s: event select, counter and global enable are clean" % path)
        agents[1].close()
        agents[3].close()
    finally:
        dm.stop()


def test_zen4_handed_back(tap):
    """Zen 4 with the NMI watchdog on PMC0 (every second here): a CPU handed back with its
    holder's overflow bit set makes the kernel's PMI handler warn at each watchdog NMI. The
    simulator says so while the lease is held; after the release it must have nothing to say."""
    d, dm = sim("zen4", "[inject]\nnmi_watchdog = yes\nwatchdog_thresh = 1\n", smt=False)
    try:
        c = t.Client(dm.socket)
        tap.eq(c.call("hello")["foreign"]["gp_mask"], 0x1, "the watchdog's PMC0 is foreign")
        c.call("lease", cpus=[1])
        r = c.batch([["w", 1, PERF_CTR0 + 2, NEAR_WRAP], ["w", 1, PERF_CTL0 + 2, AMD_CYCLES],
                     ["wm", 1, AMD_GLOBAL_CTL, 2, 2]])
        tap.eq(name(r), "ok", "PMC1 counts cycles just below its wrap")
        tap.ok(wait_status(c, 1, AMD_STATUS, 2), "its wrap set bit 1 of PerfCntrGlobalStatus")
        c.batch([["wm", 1, AMD_GLOBAL_CTL, 0, 2]])
        time.sleep(1.6)
        values(c, [["r", 1, AMD_STATUS]])
        held = [m for m in STRAY.findall(dm.log()) if m[0] == "1"]
        tap.ok(held and int(held[-1][1], 16) == 2,
               "while the lease holds it, the simulator reports the watchdog's PMI finding bit 1", held)
        c.call("release")
        status = values(c, [["r", 1, AMD_STATUS]])[0]
        tap.eq(status & ~1, 0, "the release clears the holder's overflow bit")
        before = len([m for m in STRAY.findall(dm.log()) if m[0] == "1"])
        time.sleep(1.6)
        values(c, [["r", 1, AMD_STATUS], ["r", 1, PERF_CTR0]])
        after = len([m for m in STRAY.findall(dm.log()) if m[0] == "1"])
        tap.eq(after, before, "after the release no watchdog PMI finds a stray overflow bit on CPU 1")
        tap.eq(values(c, [["r", 1, PERF_CTL0]])[0] & EN, EN, "the watchdog's own counter kept running")
    finally:
        dm.stop()


def test_int_left_by_a_third_party(tap):
    """A fake Sapphire Rapids: something other than pmugated left INT (and an event) in
    PERFEVTSEL0 of CPU 1, without EN. A user's masked write of EN must not start a counter that
    interrupts; the lease's end leaves no INT either."""
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2, smt=False)
    m.set_msr(1, EVTSEL0, INT | 0x2E)
    dm = t.Daemon(d, ["--root=" + m.root], config=config(os.path.join(d, "pmugate.conf")))
    try:
        a = Agent(dm)
        tap.eq(name(a.call("lease", cpus=[1])), "ok", "the user leases CPU 1")
        r = a.batch([["wm", 1, EVTSEL0, EN | USR, EN | USR]])
        tap.eq(name(r), "ok", "and sets EN and USR with a masked write")
        v = m.msr(1, EVTSEL0)
        tap.eq(v & (EN | USR | 0xFF), EN | USR | 0x2E, "EN and USR are set, the user's other bits kept (0x%x)" % v)
        tap.eq(v & INT, 0, "the INT bit the user may not write is the clean value, not the one left there")
        tap.eq(r["values"][0] & INT, 0, "the reply reports the value written")
        a.call("release")
        v = m.msr(1, EVTSEL0)
        tap.eq(v, 0x2E, "the release puts the event back, stopped and without INT (0x%x)" % v)
        a.close()
    finally:
        dm.stop()


def test_kept_journal(tap):
    """A restore that fails (PMC0 of CPU 1 refuses writes) keeps the journal. The next lease of
    CPU 1 neither deletes nor replaces it: it is refused while a retry still fails, an admin's
    reset says so too, and the next start restores it."""
    inject = "[inject]\neio_msr = 0xC1\neio_cpus = 1\neio_writes_only = yes\n"
    d, dm = sim("spr", inject, smt=False)
    journal = os.path.join(dm.runtime_dir, "state", "lease-cpu1")
    try:
        c = t.Client(dm.socket)
        c.call("lease", cpus=[1])
        tap.eq(name(c.batch([["w", 1, EVTSEL0, 0x11]])), "ok", "an event select written (PMC0 journaled with it)")
        c.call("release")
        tap.ok(os.path.exists(journal), "the release could not zero PMC0: the journal is kept", dm.log())
        kept = open(journal).read()
        other = t.Client(dm.socket)
        r = other.call("lease", cpus=[1])
        tap.ok(name(r) == "internal" and "could not be put back" in reason(r),
               "the next lease of CPU 1 is refused while the restore still fails", r)
        r = other.batch([["w", 1, EVTSEL0 + 1, 0x33]])
        tap.eq(name(r), "no-lease", "so nothing is written there, and nothing journaled")
        tap.ok(os.path.exists(journal) and open(journal).read() == kept, "the kept journal is untouched")
        tap.eq(name(other.call("lease", cpus=[2])), "ok", "other CPUs are leased as usual")
        tap.eq(name(other.batch([["w", 2, EVTSEL0, 0x22]])), "ok", "and journaled")
        r = t.run_cli([t.PMUGATECTL, "reset", "-c", "1"], dm.socket)
        tap.ok(r[0] != 0 and os.path.exists(journal), "an admin's reset retries, fails, says so and keeps it", r)
    finally:
        dm.stop()

    path = os.path.join(d, "sim.conf")
    with open(path) as f:
        text = f.read().replace(inject, "")
    with open(path, "w") as f:
        f.write(text)
    dm = t.Daemon(d, ["--backend=sim", "--sim-model=spr", "--sim-config=" + path],
                  config=os.path.join(d, "pmugate.conf"))
    try:
        tap.ok(not os.path.exists(journal), "the next start restores the kept journal and removes it", dm.log())
        c = t.Client(dm.socket)
        tap.eq(name(c.call("lease", cpus=[1])), "ok", "and CPU 1 is leased again")
        tap.eq(values(c, [["r", 1, EVTSEL0]])[0], 0, "clean")
    finally:
        dm.stop()


def test_reset_above_4096(tap):
    """5120 simulated CPUs: an admin's reset of every CPU reaches CPU 5000."""
    d, dm = sim("spr", sockets=8, cores=320, smt=True)
    try:
        cpu = 5000
        a = t.Client(dm.socket)
        tap.eq(name(a.call("lease", cpus=[cpu])), "ok", "a client leases CPU %d" % cpu)
        tap.eq(name(a.batch([["w", cpu, EVTSEL0, CYCLES]])), "ok", "and programs it")
        rc, out, err = t.run_cli([t.PMUGATECTL, "reset"], dm.socket)
        tap.eq(rc, 0, "pmugatectl reset (every CPU) succeeds: " + out + err)
        b = t.Client(dm.socket)
        tap.eq(values(b, [["r", cpu, EVTSEL0]])[0], 0, "CPU %d's event select is clean" % cpu)
        tap.eq(name(a.batch([["r", cpu, PMC0]])), "preempted", "its holder is told its lease ended")
        rc, out, err = t.run_cli([t.PMUGATECTL, "reset", "-c", "0-5119"], dm.socket)
        tap.eq(rc, 0, "a list of 5120 CPUs goes in more than one request: " + out + err)
    finally:
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_lease_end_paths, test_zen4_handed_back, test_int_left_by_a_third_party,
                          test_kept_journal, test_reset_above_4096]))

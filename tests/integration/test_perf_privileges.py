#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The perf_event path's privileges: after start-up the serving process holds no capability,
and its one child, the perf opener, holds CAP_PERFMON alone as the daemon's user (SECURITY.md,
"The perf_event path: who opens")."""

import os
import pwd
import shutil
import signal
import stat
import sys
import time

import pmugatetest as t

CAP_PERFMON = 38
PERFMON = 1 << CAP_PERFMON
SIM = ["--backend=sim", "--sim-model=spr"]
SETPRIV = shutil.which("setpriv")


def status(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def caps(st):
    return {k: int(st[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}


def children(pid):
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if int(status(int(name)).get("PPid", "0")) == pid:
                found.append(int(name))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return found


def wait_gone(pid, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if status(pid).get("State", "").startswith("Z"):
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def nobody():
    pw = pwd.getpwnam("nobody")
    return pw.pw_uid, pw.pw_gid


def test_privileges_after_start_up(tap):
    uid, gid = nobody()
    d = t.workdir()
    dm = t.Daemon(d, SIM)
    try:
        server = dm.proc.pid
        st = status(server)
        tap.eq(caps(st), {"CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0, "CapAmb": 0},
               "the serving process holds no capability in any set")
        tap.eq(st["NoNewPrivs"], "1", "the serving process has no_new_privs")
        tap.eq(st["Uid"].split(), [str(uid)] * 4, "the serving process runs as the daemon's user, not root")

        kids = children(server)
        tap.eq(len(kids), 1, "the serving process has one child, the perf opener")
        if len(kids) != 1:
            return
        opener = kids[0]
        st = status(opener)
        tap.eq(caps(st), {"CapInh": 0, "CapPrm": PERFMON, "CapEff": PERFMON, "CapBnd": PERFMON, "CapAmb": 0},
               "the opener holds CAP_PERFMON alone: permitted, effective and bounding set; nothing "
               "inheritable or ambient")
        tap.eq(st["NoNewPrivs"], "1", "the opener has no_new_privs")
        tap.eq(st["Uid"].split(), [str(uid)] * 4, "the opener runs as the daemon's user")
        tap.eq(st["Gid"].split(), [str(gid)] * 4, "in the user's group")
        tap.eq(st["Groups"], "", "with no supplementary group")
        # The kernel gives the /proc files of a process that is not dumpable to root.
        tap.eq(os.stat("/proc/%d/status" % opener).st_uid, 0, "the opener is not dumpable")
        fds = sorted(int(n) for n in os.listdir("/proc/%d/fd" % opener))
        tap.eq(fds, [0, 1, 2, 3], "the opener keeps stdin, stdout, stderr and its socket, nothing of the server's")
        tap.ok(stat.S_ISSOCK(os.stat("/proc/%d/fd/3" % opener).st_mode), "fd 3 is its socket")
        tap.ok("Perf opener started (process %d)" % opener in dm.log(), "start-up logs the opener", dm.log())
    finally:
        dm.stop()


def test_killed_opener(tap):
    d = t.workdir()
    dm = t.Daemon(d, SIM)
    try:
        kids = children(dm.proc.pid)
        tap.eq(len(kids), 1, "the daemon has its opener")
        if len(kids) != 1:
            return
        os.kill(kids[0], signal.SIGKILL)
        tap.ok(wait_gone(kids[0]), "the opener is killed")
        r = t.Client(dm.socket).call("hello")
        tap.ok("error" not in r and dm.alive(), "the daemon keeps serving without its opener", r)
    finally:
        dm.stop()


def test_opener_dies_with_the_daemon(tap):
    d = t.workdir()
    dm = t.Daemon(d, SIM)
    try:
        kids = children(dm.proc.pid)
        tap.eq(len(kids), 1, "the daemon has its opener")
        if len(kids) != 1:
            return
        dm.proc.send_signal(signal.SIGKILL)
        dm.proc.wait(timeout=10)
        tap.ok(wait_gone(kids[0]), "a killed daemon takes its opener with it (PR_SET_PDEATHSIG)")
    finally:
        dm.stop()


def test_started_without_root(tap):
    desc = "a daemon started as a user starts its opener with what it has: no capability"
    if not SETPRIV:
        tap.skip(desc, "setpriv is not installed")
        return
    uid, gid = nobody()
    d = t.workdir()
    os.chown(d, uid, gid)
    os.chown(t.runtime_parent(d), uid, gid)
    wrapper = [SETPRIV, "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups", "--inh-caps=-all",
               "--"]
    dm = t.Daemon(d, SIM, wrapper=wrapper)
    try:
        kids = children(dm.proc.pid)
        tap.eq(len(kids), 1, "the daemon started as a user has its opener")
        if len(kids) != 1:
            return
        st = status(kids[0])
        tap.eq((int(st["CapPrm"], 16), int(st["CapEff"], 16), st["Uid"].split()), (0, 0, [str(uid)] * 4),
               desc)
        tap.eq(st["NoNewPrivs"], "1", "and no_new_privs")
        tap.ok("Perf opener runs without CAP_PERFMON" in dm.log() and "perf_event_paranoid" in dm.log(),
               "the log says the opener runs without CAP_PERFMON, so perf_event_paranoid decides", dm.log())
    finally:
        dm.stop()


if os.geteuid() != 0:
    print("1..0 # SKIP the privilege drop is tested as root")
    sys.exit(0)
sys.exit(t.Tap().run([test_privileges_after_start_up, test_killed_opener, test_opener_dies_with_the_daemon,
                      test_started_without_root]))

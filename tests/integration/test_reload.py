#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reload through the real daemon: SIGHUP (systemctl reload) reloads instead of killing the
daemon with registers programmed, a refused file keeps the old policy, a reload that takes a
user's rights ends its lease with a restore, and a user taken out of a group loses that group's
rights on connections already open."""

import os
import signal
import socket
import sys
import time

import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1
EVTSEL0, PMC0 = 0x186, 0xC1
NO_GID = 4999            # a gid no configuration here names
USER_PGID, OTHER_PGID = 5000, 5001   # primary groups, named by no configuration here
PRESET = 0               # what the event select held before anyone leased the CPU: clean


def config(path, user_gids=(t.USER_GID,), extra=""):
    t.write_config(path, user_gids=user_gids, extra=extra)
    os.chmod(path, 0o644)


def start(d):
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=4, smt=False)
    m.set_user("user", USER, USER_PGID, [t.USER_GID])
    m.set_user("other", OTHER_USER, OTHER_PGID, [t.USER_GID])
    for cpu in range(4):
        m.set_msr(cpu, EVTSEL0, PRESET)
    conf = os.path.join(d, "pmugate.conf")
    config(conf)
    return m, conf, t.Daemon(d, ["--root=" + m.root], config=conf)


class ConnectedAs:
    """A connection opened by a child process with another identity (the kernel records it at
    connect time), handed to the test over SCM_RIGHTS; the child waits until close()."""

    def __init__(self, path, uid, gid, groups):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                ours.close()
                t.as_user(uid, gid, groups)()
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.connect(path)
                socket.send_fds(theirs, [b"x"], [s.fileno()])
                theirs.recv(1)
            finally:
                os._exit(0)
        theirs.close()
        _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        self.wake = ours
        self.client = t.Client.__new__(t.Client)
        self.client.sock = socket.socket(fileno=fds[0])
        self.client.sock.settimeout(10)
        self.client.next_id = 1

    def close(self):
        self.client.close()
        # A byte, not EOF: children forked later hold copies of this end.
        self.wake.send(b"x")
        self.wake.close()
        os.waitpid(self.pid, 0)


def notifications(dm, want, timeout=10):
    """The sd_notify messages up to one containing want."""
    seen = []
    dm.notify.settimeout(0.1)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            msg = dm.notify.recv(4096).decode()
        except socket.timeout:
            continue
        seen.append(msg)
        if want in msg:
            break
    return seen


def wait_log(dm, text, timeout=10):
    deadline = time.time() + timeout
    while text not in dm.log() and time.time() < deadline:
        time.sleep(0.02)
    return text in dm.log()


def err(r):
    return (r.get("error") or {}).get("name")


def test_sighup(tap):
    d = t.workdir()
    m, conf, dm = start(d)
    user = other = None
    try:
        user = ConnectedAs(dm.socket, USER, USER_PGID, [t.USER_GID])
        other = ConnectedAs(dm.socket, OTHER_USER, OTHER_PGID, [t.USER_GID])
        uc, oc = user.client, other.client
        tap.eq(uc.call("lease", cpus=[0]).get("cpus"), [0], "the user leases CPU 0")
        tap.eq(oc.call("lease", cpus=[1]).get("cpus"), [1], "another user leases CPU 1")
        r = uc.batch([["w", 0, EVTSEL0, 0x43003C]])
        r2 = oc.batch([["w", 1, EVTSEL0, 0x4300C4]])
        tap.ok(r.get("ok") and r2.get("ok"), "both program their event selects", (r, r2))

        dm.proc.send_signal(signal.SIGHUP)
        seen = notifications(dm, "READY=1")
        tap.ok(any("RELOADING=1" in s and "MONOTONIC_USEC=" in s for s in seen) and "READY=1" in seen[-1],
               "SIGHUP: RELOADING=1 (with the time), then READY=1 to systemd", seen)
        tap.ok(dm.alive(), "the daemon survives SIGHUP", dm.log())
        tap.eq((m.msr(0, EVTSEL0), m.msr(1, EVTSEL0)), (0x43003C, 0x4300C4),
               "the registers the leases programmed are as they were")
        r = uc.batch([["w", 0, PMC0, 1000], ["r", 0, EVTSEL0]])
        tap.eq((r.get("ok"), r.get("values")), (True, [1000, 0x43003C]),
               "the user's lease and connection are still there")
        tap.ok("event=reload verdict=allowed" in dm.audit(), "the reload is audited", dm.audit())

        # A file that does not load: refused with the reason in the log, the old policy stays.
        with open(conf, "a") as f:
            f.write("[limits]\nclients = lots\n")
        dm.proc.send_signal(signal.SIGHUP)
        seen = notifications(dm, "READY=1")
        tap.ok(dm.alive() and wait_log(dm, "Configuration reload (SIGHUP) refused, the old policy stays in force")
               and "'lots'" in dm.log(), "a bad file is refused at SIGHUP, saying why", dm.log())
        tap.ok(any("refused" in s for s in seen), "... and systemd's status says so", seen)
        tap.ok(uc.batch([["r", 0, EVTSEL0]]).get("ok"), "... and the old policy stays in force")

        # A file that takes the users' group away: their leases end with a restore.
        config(conf, user_gids=(NO_GID,))
        dm.proc.send_signal(signal.SIGHUP)
        notifications(dm, "READY=1")
        tap.eq((m.msr(0, EVTSEL0), m.msr(0, PMC0), m.msr(1, EVTSEL0)), (PRESET, 0, PRESET),
               "a reload that takes the users' rights restores what their leases wrote")
        r = oc.batch([["r", 1, EVTSEL0]])
        tap.eq(err(r), "revoked", "... and the holder hears of it (revoked)")
        tap.ok("event=lease-end" in dm.audit(), "... audited", dm.audit())
        tap.ok(dm.alive(), "the daemon serves on")
    finally:
        for c in (user, other):
            if c:
                c.close()
        dm.stop()


def test_group_removal(tap):
    """The connection was opened with USER_GID; the group database stops listing the user in it;
    after a reload the open connection has no rights from it."""
    d = t.workdir()
    m, conf, dm = start(d)
    user = other = None
    try:
        user = ConnectedAs(dm.socket, USER, USER_PGID, [t.USER_GID])
        other = ConnectedAs(dm.socket, OTHER_USER, OTHER_PGID, [t.USER_GID])
        second = ConnectedAs(dm.socket, USER, USER_PGID, [t.USER_GID])
        uc, oc = user.client, other.client
        uc.call("lease", cpus=[2])
        oc.call("lease", cpus=[3])
        r = uc.batch([["w", 2, EVTSEL0, 0x43003C]])
        oc.batch([["w", 3, EVTSEL0, 0x43003C]])
        tap.ok(r.get("ok") and m.msr(2, EVTSEL0) == 0x43003C, "the user programs CPU 2", r)
        m.set_user("user", USER, USER_PGID, [])
        rc, out, errs = t.run_cli([t.PMUGATECTL, "reload"], dm.socket)
        tap.eq(rc, 0, "the admin reloads")
        tap.eq(m.msr(2, EVTSEL0), PRESET, "the lease of the user taken out of the group ended with a restore")
        r = uc.batch([["r", 2, EVTSEL0]])
        tap.eq(err(r), "revoked", "the user hears of it")
        r = uc.batch([["r", 2, EVTSEL0]])
        tap.eq(err(r), "not-authorized", "and her open connection has no rights any more")
        r = uc.call("lease", cpus=[2])
        tap.eq(err(r), "not-authorized", "not even to lease again")
        tap.eq(err(second.client.call("lease", cpus=[1])), "not-authorized", "nor has her other connection")
        second.close()
        tap.ok(wait_log(dm, "uid %d" % USER) and "no longer lists it as a member" in dm.log(),
               "the log says why", dm.log())
        tap.eq(m.msr(3, EVTSEL0), 0x43003C, "a user still in the group keeps her lease")
        tap.ok(oc.batch([["r", 3, EVTSEL0]]).get("ok"), "... and her rights")

        # A user the database does not know keeps no group rights on an open connection; a
        # primary group the database no longer gives is narrowed away just the same.
        m.set_user("other", OTHER_USER + 100, OTHER_USER, [t.USER_GID])
        dm.proc.send_signal(signal.SIGHUP)
        notifications(dm, "READY=1")
        tap.eq(err(oc.batch([["r", 3, EVTSEL0]])), "revoked", "a uid the database does not know loses its lease")
        tap.eq(m.msr(3, EVTSEL0), PRESET, "... restored")
        third = ConnectedAs(dm.socket, OTHER_USER, t.USER_GID, [])
        try:
            tap.ok(third.client.call("lease", cpus=[3]).get("ok"), "a new connection gets the kernel's word again")
            m.set_user("other", OTHER_USER, OTHER_PGID, [])
            dm.proc.send_signal(signal.SIGHUP)
            notifications(dm, "READY=1")
            tap.eq(err(third.client.call("lease", cpus=[1])), "revoked", "its lease ends at the reload")
            tap.eq(err(third.client.call("lease", cpus=[1])), "not-authorized",
                   "a primary gid the database no longer gives counts no more after a reload")
        finally:
            third.close()
        # Never widened: once a reload narrowed a group away, the database naming it again gives
        # nothing back to the open connection. (A connection with no role at all is refused as it
        # connects, so the narrowing is what can leave one without a group.)
        fourth = ConnectedAs(dm.socket, USER, USER_PGID, [t.USER_GID])
        try:
            m.set_user("user", USER, USER_PGID, [])
            rc, _, _ = t.run_cli([t.PMUGATECTL, "reload"], dm.socket)
            tap.eq(err(fourth.client.call("lease", cpus=[1])), "not-authorized",
                   "the group taken away at a reload counts no more")
            m.set_user("user", USER, USER_PGID, [t.USER_GID])
            rc, _, _ = t.run_cli([t.PMUGATECTL, "reload"], dm.socket)
            tap.eq(err(fourth.client.call("lease", cpus=[1])), "not-authorized",
                   "a reload never adds a group to an open connection, not even one it had")
        finally:
            fourth.close()
        tap.ok(dm.alive(), "the daemon serves on")
    finally:
        for c in (user, other):
            if c:
                c.close()
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_sighup, test_group_removal]))

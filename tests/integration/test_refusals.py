#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The refusal rule through the real daemon: a refused request gets one error reply and one
audit record (with the CPUs and registers it names, and for a busy CPU the holder the reply
may not name), counted once; a batch refused in a later slice is answered the same way as one
refused at once."""

import os
import sys

import pmugatetest as t

USER = t.UNPRIVILEGED_UID
PMC0, NEVER = 0xC1, 0x600


def start(extra=""):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=4, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nmode = open\nadmin_groups = %d\nuser_groups = %d\n%s" % (t.ADMIN_GID, t.USER_GID, extra))
    return t.Daemon(d, ["--root=" + m.root], config=conf)


def denies(dm, code):
    return [l for l in dm.audit().splitlines() if "event=deny" in l and "code=%s" % code in l]


def denials(dm):
    return t.Client(dm.socket).call("status")["counters"]["denials"]


def test_limit_audited_once(tap):
    dm = start("[limits]\nleases_per_uid = 1\n")
    try:
        before = denials(dm)

        def take():
            c = t.Client(dm.socket)
            first = c.call("lease", cpus=[0])
            over = c.call("lease", cpus=[1])
            return [first.get("ok"), over.get("error", {})]
        first, over = t.in_child_as(USER, 4999, [t.USER_GID], take)
        tap.ok(first and over.get("name") == "limit" and "at most 1" in over.get("reason", ""),
               "a lease over leases_per_uid is refused, naming the limit", over)
        got = denies(dm, "limit")
        tap.ok(len(got) == 1, "the refusal is one audit record", got)
        tap.ok(got and "op=lease" in got[0] and "uid=%d" % USER in got[0], "naming the request and the caller", got)
        tap.eq(denials(dm) - before, 1, "and one denial in the daemon's counters")
    finally:
        dm.stop()


def test_busy_audited_once(tap):
    dm = start()
    try:
        holder = t.Client(dm.socket)
        tap.ok(holder.call("lease", cpus=[2])["ok"], "root leases CPU 2")
        before = denials(dm)

        def take():
            return t.Client(dm.socket).call("lease", cpus=[2]).get("error", {})
        err = t.in_child_as(USER, 4999, [t.USER_GID], take)
        tap.ok(err.get("name") == "busy", "another user's lease is refused as busy", err)
        tap.ok("another user" in err.get("reason", "") and "uid 0" not in err.get("reason", ""),
               "the reply does not name the holder", err)
        got = denies(dm, "busy")
        tap.ok(len(got) == 1, "the refusal is one audit record", got)
        tap.ok(got and "cpus=2" in got[0] and "leased by uid 0" in got[0],
               "which names the CPU and the holder the reply may not name", got)
        tap.eq(denials(dm) - before, 1, "and one denial in the daemon's counters")
    finally:
        dm.stop()


def test_sliced_batch_refusal(tap):
    dm = start()
    try:
        ops = [["r", i % 4, PMC0] for i in range(3000)]
        ops[2500] = ["r", 1, NEVER]
        before = denials(dm)

        def run():
            return t.Client(dm.socket).batch(ops).get("error", {})
        err = t.in_child_as(USER, 4999, [t.USER_GID], run)
        tap.ok(err.get("name") == "reg-forbidden" and err.get("op") == 2500 and "op 2500" in err.get("reason", ""),
               "a batch of several slices refused at op 2500 says so", err)
        got = denies(dm, "reg-forbidden")
        tap.ok(len(got) == 1, "the refusal is one audit record", got)
        tap.ok(got and "op=batch" in got[0] and "cpus=1" in got[0] and "regs=0x600" in got[0],
               "naming the refused op's CPU and register", got)
        tap.eq(denials(dm) - before, 1, "and one denial in the daemon's counters")
        tap.ok(t.Client(dm.socket).call("hello")["ok"], "the daemon keeps serving")
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_limit_audited_once, test_busy_audited_once, test_sliced_batch_refusal]))

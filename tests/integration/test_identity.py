#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Identity comes from the kernel (SO_PEERCRED, SO_PEERGROUPS): real uid and gid switches in
forked children, and what each role may do."""

import os
import sys

import pmugatetest as t

UID = t.UNPRIVILEGED_UID


def start():
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "icx", sockets=1, cores=2, smt=False)
    return m, t.Daemon(d, ["--root=" + m.root])


def as_child(gid, groups, fn):
    return t.in_child_as(UID, gid, groups, fn)


def test_roles(tap):
    m, dm = start()
    try:
        s = dm.socket

        def probe():
            c = t.Client(s)
            h = c.call("hello")["caller"]
            rd = c.batch([["r", 0, 0xC1]])
            c.call("lease", cpus=[0])
            wr = c.batch([["w", 0, 0x186, 0x43003C]])
            c.call("release")
            st = c.call("status")
            return {"caller": h, "read": rd.get("ok"), "write": wr.get("ok"),
                    "write_error": wr.get("error", {}), "read_error": rd.get("error", {}),
                    "status": st.get("ok"), "status_error": st.get("error", {})}

        # a uid without a role takes no connection slot: refused at connect, with the reason
        r = as_child(4999, [], lambda: t.Client(s).recv())
        tap.ok(not r["ok"] and r["error"]["name"] == "not-authorized" and "uid %d is not in a group" % UID in
               r["error"]["reason"] and "ask your admin" in r["error"]["reason"],
               "an unknown uid is seen as itself, with no role, and refused at connect with a reason", r)

        r = as_child(4999, [t.USER_GID], probe)
        tap.eq(r["caller"]["role"], "user", "a member of user_groups (supplementary) is a user")
        tap.ok(r["read"] and r["write"] and not r["status"], "a user may read, and write under a lease, but not see status", r)
        tap.eq(m.msr(0, 0x186), 0, "the user's write was restored when it released its lease")

        r = as_child(t.USER_GID, [], probe)
        tap.eq(r["caller"]["role"], "user", "the primary gid counts as well")

        r = as_child(4999, [t.OTHER_GID, t.ADMIN_GID], probe)
        tap.ok(r["caller"]["role"] == "admin" and r["read"] and r["write"] and r["status"],
               "a member of admin_groups may read, write and see status", r)
        tap.eq(r["caller"]["pid"] > 1, True, "the caller's pid comes from the kernel")
    finally:
        dm.stop()


def test_cli_as_users(tap):
    m, dm = start()
    try:
        s = dm.socket
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "0", "IA32_PMC0"], s, uid=UID, gid=4999)
        tap.ok(rc == 1 and "not in a group allowed" in err and err.count("\n") == 1,
               "the CLI refuses an unprivileged uid in one line", err)
        rc, out, err = t.run_cli([t.PMUGATE, "info"], s, uid=UID, gid=4999)
        tap.ok(rc != 0 and "not in a group allowed" in err and "ask your admin" in err and err.count("\n") == 1,
               "info tells an unprivileged uid, refused at connect, why in one line", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "0-1", "IA32_PMC0"], s, uid=UID, gid=t.USER_GID)
        tap.ok(rc == 0 and out.count("IA32_PMC0") == 2, "a user reads through the CLI", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-c", "0", "IA32_PMC0=5"], s, uid=UID, gid=t.USER_GID)
        tap.ok(rc == 0 and "(written)" in out, "a user writes through the CLI under a lease", out + err)
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-c", "0", "IA32_PMC0=5"], s, uid=UID, gid=4999)
        tap.ok(rc == 1 and "not in a group allowed" in err, "an outsider's CLI write is refused with the reason", err)
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], s, uid=UID, gid=t.USER_GID)
        tap.ok(rc == 1 and "needs root" in err, "pmugatectl status is refused for a user", err)
        rc, out, err = t.run_cli([t.PMUGATECTL, "status"], s, uid=UID, gid=4999, groups=[t.ADMIN_GID])
        tap.ok(rc == 0 and "Clients:" in out, "pmugatectl status works for an admin group member", out + err)
        tap.ok(dm.alive(), "the daemon kept serving")
    finally:
        dm.stop()


def test_missing_group_opens_nothing(tap):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), "icx", sockets=1, cores=2, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    with open(conf, "w") as f:
        f.write("[access]\nuser_groups = no-such-group-pmugate-test\n")
    dm = t.Daemon(d, ["--root=" + m.root], config=conf)
    try:
        r = t.in_child_as(UID, 4999, [], lambda: t.Client(dm.socket).recv())
        tap.eq(r.get("error", {}).get("name"), "not-authorized",
               "user_groups naming a group that does not exist admits nobody, not everybody")
        tap.ok("no-such-group-pmugate-test' does not exist" in dm.log(), "and the daemon warns about it", dm.log())
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_roles, test_cli_as_users, test_missing_group_opens_nothing]))

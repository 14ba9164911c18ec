#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What one user learns of another through the real daemon, socket and CLI: energy readings
(a power side channel) only for a user holding every CPU they count, in open and job mode, on
Intel RAPL and AMD core and package energy, the admin's opt-in, and the CLI's "not counted"
with the reason; a busy lease named in full only to admins (a user and a monitor learn that
another user holds it, the same uid its own pid); a write's reply without the bits the register
kept."""

import os
import sys

import pmugatetest as t
from pmugatetest import Sim

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1
MONITOR = USER + 2
MONITOR_GID = 4250
PKG_ENERGY, PKG_POWER_INFO = 0x611, 0x614
AMD_CORE_ENERGY, AMD_PKG_ENERGY, AMD_RAPL_UNIT = 0xC001029A, 0xC001029B, 0xC0010299
EVTSEL0, GLOBAL_CTRL = 0x186, 0x38F
EVTSEL_MASK = 0xFFC7FFFF
INT, EN = 1 << 20, 1 << 22
USER_IDS = (USER, 4999, [t.USER_GID])


def start(model="spr", mode="open", extra="", **machine):
    d = t.workdir()
    m = t.FakeMachine(os.path.join(d, "root"), model, **machine)
    conf = os.path.join(d, "pmugate.conf")
    t.write_config(conf, extra="mode = %s\nmonitor_groups = %d\n%s" % (mode, MONITOR_GID, extra))
    return m, t.Daemon(d, ["--root=" + m.root], config=conf)


def outcome(r):
    if r.get("ok"):
        return "ok"
    return "%s: %s" % (r["error"]["name"], r["error"]["reason"])


def reads(sock, ops, lease=None):
    """As the child: the outcome of each read op alone, after leasing lease (if any)."""
    def run():
        c = t.Client(sock)
        out = {}
        if lease is not None:
            out["lease"] = outcome(c.call("lease", cpus=lease))
        for key, op in ops.items():
            out[key] = outcome(c.batch([op]))
        return out
    return run


def name(result):
    return result.split(":")[0]


def test_energy_open_mode(tap):
    """Two sockets of two cores, no SMT: package 0 is CPUs 0-1."""
    m, dm = start(sockets=2, cores=2, smt=False)
    try:
        ops = {"pkg0": ["r", 0, PKG_ENERGY], "pkg1": ["r", 2, PKG_ENERGY], "info": ["r", 0, PKG_POWER_INFO]}
        got = t.in_child_as(*USER_IDS, reads(dm.socket, ops))
        tap.eq(name(got["pkg0"]), "no-lease", "by default a user without leases does not read package energy")
        tap.ok("MSR_PKG_ENERGY_STATUS" in got["pkg0"] and "all of package 0" in got["pkg0"] and
               "CPUs 0-1 are not leased" in got["pkg0"] and "side channel" in got["pkg0"] and
               "energy_read_shared" in got["pkg0"],
               "the refusal names the register, what it counts, the missing CPUs and the admin's opt-in",
               got["pkg0"])
        tap.eq(got["info"], "ok", "a package register that is not energy stays readable")
        got = t.in_child_as(*USER_IDS, reads(dm.socket, ops, lease=[0]))
        tap.ok(name(got["pkg0"]) == "no-lease" and "CPU 1 is not leased" in got["pkg0"],
               "one CPU of the package leased is not enough", got["pkg0"])
        got = t.in_child_as(*USER_IDS, reads(dm.socket, ops, lease=[0, 1]))
        tap.eq((got["pkg0"], name(got["pkg1"])), ("ok", "no-lease"),
               "leases on all of package 0 read its energy, not package 1's")
        got = t.in_child_as(MONITOR, 4999, [MONITOR_GID], reads(dm.socket, ops))
        tap.eq((got["pkg0"], got["pkg1"]), ("ok", "ok"), "a monitor (the exporter) reads every package's energy")
        got = t.in_child_as(OTHER_USER, 4999, [t.ADMIN_GID], reads(dm.socket, ops))
        tap.eq((got["pkg0"], got["pkg1"]), ("ok", "ok"), "an admin reads every package's energy")

        rc, out, err = t.run_cli([t.PMUGATE, "read", "-c", "0", "MSR_PKG_ENERGY_STATUS"], dm.socket,
                                 uid=USER, gid=4999, groups=[t.USER_GID])
        tap.ok(rc != 0 and "side channel" in out + err and "energy_read_shared" in out + err,
               "pmugate read: the user is told why, not shown a number", out + err)
        audit = dm.audit()
        tap.ok("side channel" in audit and "uid=%d" % USER in audit.replace('"', ""),
               "the refusal is audited", audit[-600:])
    finally:
        dm.stop()

    m, dm = start(sockets=2, cores=2, smt=False, extra="[rights]\nenergy_read_shared = yes\n")
    try:
        got = t.in_child_as(*USER_IDS, reads(dm.socket, {"pkg0": ["r", 0, PKG_ENERGY], "pkg1": ["r", 2, PKG_ENERGY]}))
        tap.eq(got, {"pkg0": "ok", "pkg1": "ok"}, "energy_read_shared = yes gives every user every package's energy")
    finally:
        dm.stop()


def test_energy_job_mode_amd(tap):
    """Zen 4, one socket of two cores with SMT: core 0 is CPUs 0 and 2, core 1 CPUs 1 and 3."""
    for extra, shared in (("", False), ("[rights]\nenergy_read_shared = yes\npackage_read_shared = yes\n", True)):
        m, dm = start("zen4", mode="job", extra=extra, sockets=1, cores=2, smt=True)
        try:
            ops = {"core": ["r", 0, AMD_CORE_ENERGY], "pkg": ["r", 0, AMD_PKG_ENERGY], "unit": ["r", 0, AMD_RAPL_UNIT]}
            t.run_cli([t.PMUGATECTL, "grant", "--job", "61", "--uid", str(USER), "--cpus", "0"], dm.socket)
            got = t.in_child_as(*USER_IDS, reads(dm.socket, ops))
            if shared:
                tap.eq(got, {"core": "ok", "pkg": "ok", "unit": "ok"},
                       "opted in: a job holding one thread reads core and package energy")
                continue
            tap.ok(name(got["core"]) == "out-of-scope" and "AMD_CORE_ENERGY_STAT" in got["core"] and
                   "job 61 does not hold CPU 2" in got["core"],
                   "a job holding one thread of a core does not read the core's energy (it counts both)",
                   got["core"])
            tap.eq(name(got["pkg"]), "out-of-scope", "nor the package's")
            t.run_cli([t.PMUGATECTL, "grant", "--job", "61", "--uid", str(USER), "--cpus", "0,2"], dm.socket)
            got = t.in_child_as(*USER_IDS, reads(dm.socket, ops))
            tap.eq(got["core"], "ok", "a job holding the whole core reads its energy")
            tap.ok(name(got["pkg"]) == "out-of-scope" and "all of package 0" in got["pkg"] and
                   "CPUs 1,3" in got["pkg"], "the whole core is not the package", got["pkg"])
            t.run_cli([t.PMUGATECTL, "grant", "--job", "61", "--uid", str(USER), "--cpus", "0-3"], dm.socket)
            got = t.in_child_as(*USER_IDS, reads(dm.socket, ops))
            tap.eq(got, {"core": "ok", "pkg": "ok", "unit": "ok"}, "a job holding the package reads all of it")
        finally:
            dm.stop()


def test_energy_cli_not_counted(tap):
    """pmugate stat as a user: energy of a package it holds whole is measured, of one it holds
    in part is not counted, with the daemon's reason, never 0."""
    sim = Sim("spr", sockets=2, cores=2, smt=False, extra="[rapl]\npackage_watts = 180\n")
    sim.daemon.stop()
    conf = os.path.join(sim.dir, "user.conf")
    t.write_config(conf)
    sim.daemon = t.Daemon(sim.dir, sim.daemon.argv[-3:], config=conf)
    try:
        rc, out, err = t.run_cli([t.PMUGATE, "stat", "-e", "PWR_PKG_ENERGY,INST_RETIRED.ANY", "-c", "0-2", "-S",
                                  "0.3s", "-O", "json"], sim.daemon.socket, uid=USER, gid=4999, groups=[t.USER_GID])
        r = __import__("json").loads(out) if rc == 0 else {"per_package": [], "withheld": ""}
        pk = {p["package"]: p for p in r["per_package"]}
        tap.ok(rc == 0 and 0 in pk and abs(pk[0]["counts"]["PWR_PKG_ENERGY"]["value"] / r["elapsed"] - 180) < 180 * 0.05,
               "the user measures package 0's energy, whose CPUs it leased whole", err)
        tap.ok(1 in pk and pk[1]["counts"]["PWR_PKG_ENERGY"]["value"] is None,
               "package 1's energy, of which it leased CPU 2 only, is not counted (null, not 0)")
        tap.ok("PWR_PKG_ENERGY" in r["withheld"] and "package 1" in r["withheld"] and
               "CPU 3 is not leased" in r["withheld"] and "energy_read_shared" in r["withheld"],
               "the result says why", r["withheld"])
    finally:
        sim.stop()


class Holder:
    """A client of another identity that holds leases until stopped."""

    def __init__(self, sock, uid, gid, groups, cpus):
        r, w = os.pipe()
        self.stop_r, self.stop_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(r)
            os.close(self.stop_w)
            try:
                t.as_user(uid, gid, groups)()
                c = t.Client(sock)
                ok = c.call("lease", cpus=cpus).get("ok")
                os.write(w, b"1" if ok else b"0")
                os.read(self.stop_r, 1)
            finally:
                os._exit(0)
        os.close(w)
        os.close(self.stop_r)
        self.ok = os.read(r, 1) == b"1"
        os.close(r)

    def stop(self):
        os.close(self.stop_w)
        os.waitpid(self.pid, 0)


def lease_reason(sock, cpus):
    def run():
        c = t.Client(sock)
        return outcome(c.call("lease", cpus=cpus))
    return run


def test_busy_names_holder_to_admins_only(tap):
    m, dm = start(sockets=1, cores=4, smt=False, extra="[rights]\njobmap_uids = no\n")
    holder = Holder(dm.socket, USER, 4999, [t.USER_GID], [1])
    try:
        tap.ok(holder.ok, "a user holds CPU 1")
        pid = str(holder.pid)
        other = t.in_child_as(OTHER_USER, 4999, [t.USER_GID], lease_reason(dm.socket, [0, 1]))
        tap.ok(other.startswith("busy:") and "CPU 1 is leased by another user" in other and
               str(USER) not in other and pid not in other and "job" not in other,
               "another user is told the CPU is busy, not by whom", other)
        mon = t.in_child_as(MONITOR, 4999, [MONITOR_GID], lease_reason(dm.socket, [1]))
        tap.ok(mon.startswith("busy:") and "another user" in mon and str(USER) not in mon and pid not in mon,
               "so is a monitor (jobmap_uids = no)", mon)
        same = t.in_child_as(*USER_IDS, lease_reason(dm.socket, [1]))
        tap.ok(same.startswith("busy:") and "another connection of yours" in same and "pid " + pid in same,
               "the same uid sees its own connection's pid", same)
        admin = t.in_child_as(OTHER_USER, 4999, [t.ADMIN_GID], lease_reason(dm.socket, [1]))
        tap.ok(admin.startswith("busy:") and "uid %d" % USER in admin and "pid " + pid in admin,
               "an admin is told the holder's uid and pid", admin)
        audit = dm.audit()
        tap.ok("leased by uid %d (pid %s" % (USER, pid) in audit,
               "the audit keeps the holder's details for every refusal", audit[-800:])
    finally:
        holder.stop()
        dm.stop()


def test_write_reply_shows_only_written_bits(tap):
    m, dm = start(sockets=1, cores=2, smt=False)
    try:
        c = t.Client(dm.socket)
        tap.ok(c.call("lease", cpus=[0, 1]).get("ok"), "a lease on CPUs 0-1")
        # Set by someone else while the lease is held: bits outside what the write names. (The
        # fake machine's MSR files are byte-addressed: neighbouring registers go on other CPUs.)
        m.set_msr(0, EVTSEL0, INT)
        m.set_msr(1, EVTSEL0, 0x0300D1)
        m.set_msr(0, GLOBAL_CTRL, 1 << 40)
        r = c.batch([["w", 0, EVTSEL0, 0xFFFFFFFFFFFFFFFF], ["wm", 1, EVTSEL0, 0x3C, 0xFF],
                     ["w", 0, GLOBAL_CTRL, 0x1]])
        tap.eq(r.get("status"), [0, 0, 0], "the writes run")
        values = r.get("values", [None] * 3)
        tap.eq(values[0], EVTSEL_MASK, "an event select's reply shows the bits written, not the INT bit "
               "someone else set (bit 20 is outside the write mask)")
        tap.eq(values[1], 0x3C, "a masked write's reply shows only the bits of its mask")
        tap.eq(values[2], 0x1, "a global control's reply shows only the written bits")
        c.close()
    finally:
        dm.stop()


if __name__ == "__main__":
    sys.exit(t.Tap().run([test_energy_open_mode, test_energy_job_mode_amd, test_energy_cli_not_counted,
                          test_busy_names_holder_to_admins_only, test_write_reply_shows_only_written_bits]))

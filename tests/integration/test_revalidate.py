#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A lease never outlives its right, scope fails closed, and shared registers are owned once,
through the real daemon: revoked and replaced grants, a job whose cgroup loses CPUs, reloads
that demote a role; PCI units whose package is unknown or has no online CPU, packages from the
kernel's NUMA topology, PCI domains, discovery among many unrelated functions; core- and
package-scope registers and IMC units journaled once and restored when their holder no longer
holds every CPU that shares them."""

import json
import os
import shutil
import subprocess
import sys
import time

import pmugatetest as t

USER = t.UNPRIVILEGED_UID
OTHER_USER = USER + 1
OTHER_GID = 4999
EVTSEL0, PMC0 = 0x186, 0xC1
CORE_CTL, PKG_CTL = 0x6F0, 0x6F8
BOX_CTL, IMC_CTR0 = 0xF4, 0xA0


def config(path, mode="open", user_gid=t.USER_GID, extra=""):
    with open(path, "w") as f:
        f.write("[access]\nmode = %s\nadmin_groups = %d\nuser_groups = %d\n%s" % (
            mode, t.ADMIN_GID, user_gid, extra))


def start(mode="open", machine=None, allowlist_dir=t.ALLOWLISTS, **kw):
    d = t.workdir()
    m = machine(os.path.join(d, "root")) if machine else t.FakeMachine(os.path.join(d, "root"), "spr", sockets=2,
                                                                       cores=2, smt=False)
    conf = os.path.join(d, "pmugate.conf")
    config(conf, mode, **kw)
    # The group database a reload narrows open connections' groups to: both users are in theirs.
    m.set_user("user", USER, OTHER_GID, [t.USER_GID])
    m.set_user("other", OTHER_USER, OTHER_GID, [t.USER_GID])
    return d, m, conf, t.Daemon(d, ["--root=" + m.root], config=conf, allowlist_dir=allowlist_dir)


def ctl(dm, *args):
    return t.run_cli([t.PMUGATECTL] + list(args), dm.socket)


def name(r):
    return "ok" if r.get("ok") else r["error"]["name"]


def reason(r):
    return r.get("error", {}).get("reason", "")


AGENT = """
import json, sys, pmugatetest as t
c = t.Client(sys.argv[1])
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps(c.call(req.pop("op"), **req)), flush=True)
"""


class Agent:
    """A client that keeps its connection, run as another identity (and in a cgroup), driven
    one request at a time."""

    def __init__(self, dm, uid=USER, gid=OTHER_GID, groups=(t.USER_GID,), join=None):
        env = dict(os.environ, PYTHONPATH=os.path.dirname(t.__file__))
        self.p = t.spawn(["/usr/bin/python3", "-c", AGENT, dm.socket], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True,
                         preexec_fn=t.as_user(uid, gid, list(groups), join))

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


def leases(dm):
    """{cpu: (uid, job, registers journaled)} from status."""
    return {l[0]: (l[1], l[4], l[5]) for l in t.Client(dm.socket).call("status")["leases"]}


def test_revoke_one_of_two_grants(tap):
    d, m, conf, dm = start("job")
    try:
        for cpu in range(4):
            m.set_msr(cpu, EVTSEL0, 0x11)
        ctl(dm, "grant", "--job", "A", "--uid", str(USER), "--cpus", "0-1")
        ctl(dm, "grant", "--job", "B", "--uid", str(USER), "--cpus", "2-3")
        a = Agent(dm)
        tap.eq(name(a.call("lease", cpus=[0, 2])), "ok", "a user with grants A (CPUs 0-1) and B (2-3) leases CPUs 0 and 2")
        tap.eq(name(a.batch([["w", 0, EVTSEL0, 0x43003C], ["w", 2, EVTSEL0, 0x43003C]])), "ok", "and programs both")
        tap.eq({c: v[1] for c, v in leases(dm).items()}, {0: "A", 2: "B"},
               "each lease records the job whose grant gave its CPU")

        r = t.Client(dm.socket).call("revoke", job="B")
        tap.eq((r["revoked"], r["leases_ended"]), (True, 1), "revoking B ends exactly one lease")
        tap.eq(m.msr(2, EVTSEL0), 0x11, "the lease on B's CPU 2 is restored at once")
        tap.eq(m.msr(0, EVTSEL0), 0x43003C, "the lease on A's CPU 0 is left alone")
        tap.eq(sorted(leases(dm)), [0], "status lists only the lease on CPU 0")
        r = a.batch([["r", 0, PMC0]])
        tap.ok(name(r) == "revoked" and "on CPU 2 " in reason(r) and "job B" in reason(r),
               "the holder's next request hears which lease ended and why", r)
        tap.eq(name(a.batch([["w", 0, EVTSEL0, 0x53003C]])), "ok", "once told, it goes on with what A still gives it")
        r = a.batch([["w", 2, EVTSEL0, 0x43003C]])
        tap.eq(name(r), "out-of-scope", "CPU 2 is not the user's any more")

        ctl(dm, "grant", "--job", "C", "--uid", str(OTHER_USER), "--cpus", "2-3")
        b = Agent(dm, uid=OTHER_USER)
        tap.eq(name(b.call("lease", cpus=[2, 3])), "ok", "the next job on CPUs 2-3 leases them")
        tap.eq(name(b.batch([["r", 2, EVTSEL0]])), "ok", "and finds them clean")
        audit = dm.audit()
        tap.ok("event=lease-end" in audit and "job=B" in audit and "job B's grant was revoked" in audit,
               "the lease's end is audited with its job and the reason", audit)
        a.close()
        b.close()
    finally:
        dm.stop()


def test_replaced_grant(tap):
    d, m, conf, dm = start("job")
    try:
        m.set_msr(2, EVTSEL0, 0x11)
        ctl(dm, "grant", "--job", "B", "--uid", str(USER), "--cpus", "2-3")
        a = Agent(dm)
        a.call("lease", cpus=[2, 3])
        tap.eq(name(a.batch([["w", 2, EVTSEL0, 0x43003C]])), "ok", "job B's user programs CPU 2")
        rc, out, err = ctl(dm, "grant", "--job", "B", "--uid", str(USER), "--cpus", "0-1")
        tap.ok(rc == 0 and "replaced" in out, "the admin grants job B again, on CPUs 0-1", out + err)
        tap.eq(m.msr(2, EVTSEL0), 0x11, "the leases on the CPUs B lost end at once, restored")
        tap.eq(leases(dm), {}, "no lease is left")
        r = a.batch([["r", 0, PMC0]])
        tap.ok(name(r) == "revoked" and "CPUs 2-3" in reason(r), "the holder is told", r)
        tap.eq(name(a.call("lease", cpus=[0])), "ok", "and may lease the job's new CPUs")

        # A grant replaced for another uid takes the job's leases from the old one.
        rc, out, err = ctl(dm, "grant", "--job", "B", "--uid", str(OTHER_USER), "--cpus", "0-1")
        tap.eq(leases(dm), {}, "a grant handed to another uid ends the old uid's leases")
        a.close()
    finally:
        dm.stop()


def write_fake_cpuset(cg, cpus):
    fname = "cpuset.effective_cpus" if cg.version == 1 else "cpuset.cpus.effective"
    with open(os.path.join(cg.fake_job_dir, fname), "w") as f:
        f.write(cpus + "\n")


def test_shrunken_cpuset(tap):
    d, m, conf, dm = start("job")
    cg = t.Cgroup(m.root, "41", "2-3", version=2)
    try:
        for cpu in range(4):
            m.set_msr(cpu, EVTSEL0, 0x11)
        ctl(dm, "grant", "--job", "41", "--uid", str(USER))
        a = Agent(dm, join=cg.procs)
        tap.eq(name(a.call("lease", cpus=[2, 3])), "ok", "a job whose cgroup holds CPUs 2-3 leases them")
        tap.eq(name(a.batch([["w", 3, EVTSEL0, 0x43003C], ["w", 2, EVTSEL0, 0x43003C]])), "ok", "and programs them")

        write_fake_cpuset(cg, "2")
        r = a.batch([["r", 2, PMC0]])
        tap.ok(name(r) == "revoked" and "on CPU 3 " in reason(r) and "no longer gives CPU 3" in reason(r),
               "the job's cgroup lost CPU 3: its next request says the lease on it ended", r)
        tap.eq((m.msr(3, EVTSEL0), m.msr(2, EVTSEL0)), (0x11, 0x43003C), "CPU 3 is restored, CPU 2 stays the job's")
        tap.eq(sorted(leases(dm)), [2], "status lists the lease on CPU 2 only")

        # The holder says nothing more; a request for the CPU finds its lease stale.
        write_fake_cpuset(cg, "3")
        admin = t.Client(dm.socket)
        tap.eq(name(admin.call("lease", cpus=[2])), "ok",
               "the cgroup lost CPU 2 too: an admin's lease on it is not refused as busy")
        tap.eq(m.msr(2, EVTSEL0), 0x11, "and the job's programming of it was restored first")
        r = a.batch([["r", 3, PMC0]])
        tap.eq(name(r), "revoked", "the holder hears of it at its next request")
        a.close()
    finally:
        dm.stop()
        cg.remove()


def test_cpuset_walk_stops_at_the_job(tap):
    d, m, conf, dm = start("job")
    cg = t.Cgroup(m.root, "43", "2-3", version=2)
    try:
        ctl(dm, "grant", "--job", "43", "--uid", str(USER))
        # The job's own directory has no cpuset file; the directory above it does.
        fname = "cpuset.cpus.effective"
        os.unlink(os.path.join(cg.fake_job_dir, fname))
        with open(os.path.join(os.path.dirname(cg.fake_job_dir), fname), "w") as f:
            f.write("0-3\n")
        a = Agent(dm, join=cg.procs)
        scope = a.call("hello")["caller"]["scope"]
        tap.ok("cpus" not in scope and "cannot read the CPUs of job 43" in scope.get("reason", ""),
               "a job's CPUs are never read from an ancestor's cgroup", scope)
        tap.eq(name(a.batch([["r", 0, PMC0]])), "no-grant", "and the job gets no CPUs at all")
        a.close()
    finally:
        dm.stop()
        cg.remove()


def test_reload(tap):
    d, m, conf, dm = start("open")
    try:
        m.set_msr(1, EVTSEL0, 0x11)
        a = Agent(dm)
        a.call("lease", cpus=[1])
        a.batch([["w", 1, EVTSEL0, 0x43003C]])
        config(conf, "open")
        rc, out, err = ctl(dm, "reload")
        tap.ok(rc == 0 and m.msr(1, EVTSEL0) == 0x43003C and sorted(leases(dm)) == [1],
               "a reload that changes nothing keeps the lease", out + err)

        config(conf, "open", user_gid=t.OTHER_GID)
        ctl(dm, "reload")
        tap.eq(m.msr(1, EVTSEL0), 0x11, "user_groups no longer naming the user: the lease ends at the reload")
        tap.eq(leases(dm), {}, "and is gone from status")
        r = a.batch([["r", 1, PMC0]])
        tap.ok(name(r) == "revoked" and "may no longer program counters" in reason(r), "the holder is told why", r)

        config(conf, "open")
        ctl(dm, "reload")
        a.call("lease", cpus=[1])
        a.batch([["w", 1, EVTSEL0, 0x43003C]])
        config(conf, "open", extra="monitor_users = %d\n" % USER)
        ctl(dm, "reload")
        tap.eq((m.msr(1, EVTSEL0), leases(dm)), (0x11, {}), "a user made a monitor loses the lease it took as a user")
        tap.eq(name(a.batch([["r", 1, PMC0]])), "revoked", "and is told")

        config(conf, "open")
        ctl(dm, "reload")
        a.call("lease", cpus=[1])
        a.batch([["w", 1, EVTSEL0, 0x43003C]])
        ctl(dm, "grant", "--job", "9", "--uid", str(USER), "--cpus", "0-3")
        config(conf, "job")
        ctl(dm, "reload")
        tap.eq((m.msr(1, EVTSEL0), leases(dm)), (0x11, {}),
               "open -> job: a lease taken without a job grant ends, even with a grant now")
        r = a.batch([["r", 1, PMC0]])
        tap.eq(name(r), "revoked", "and its holder is told")
        tap.eq(name(a.call("lease", cpus=[1])), "ok", "a new lease under the grant is fine")
        a.close()
    finally:
        dm.stop()


def skx(offline=(), **kw):
    return lambda root: t.FakeMachine(root, "skx", sockets=2, cores=2, smt=False, offline=offline, **kw)


def units_by_bus(dm):
    return {u[1]: u[4] for u in t.Client(dm.socket).call("hello")["units"]}


def test_offline_socket(tap):
    d, m, conf, dm = start("open", machine=skx(offline=(2, 3)))
    try:
        units = t.Client(dm.socket).call("hello")["units"]
        socket1 = [u for u in units if ":ae:" in u[1]]
        tap.ok(len(socket1) == 6 and all(u[4] == -1 for u in socket1),
               "socket 1 is offline: its units' package is unknown", units)
        unit, bdf = socket1[0][0], socket1[0][1]
        m.set_pci(bdf, BOX_CTL, 0x100)
        a = Agent(dm)
        a.call("lease", cpus=[0, 1])
        r = a.batch([["pw", unit, BOX_CTL, 0x103]])
        tap.ok(name(r) == "not-authorized" and "only an admin" in reason(r),
               "a user cannot write a unit of the offline socket", r)
        tap.eq(m.pci(bdf, BOX_CTL), 0x100, "and nothing was written")
        tap.eq(name(a.batch([["pr", unit, BOX_CTL]])), "ok", "reading it stays possible")

        admin = t.Client(dm.socket)
        r = admin.batch([["pw", unit, BOX_CTL, 0x103]])
        tap.ok(name(r) == "no-lease" and "lease on CPU 0" in reason(r),
               "an admin needs a lease on the first online CPU to write it", r)
        a.call("release")
        admin.call("lease", cpus=[0])
        tap.eq(name(admin.batch([["pw", unit, BOX_CTL, 0x103]])), "ok", "with it, the admin writes the unit")
        tap.eq(m.pci(bdf, BOX_CTL), 0x103, "the write landed")
        admin.call("release")
        tap.eq(m.pci(bdf, BOX_CTL), 0, "and is restored when that lease ends, clean: not frozen")
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-u", str(unit), "IMC_PMON_BOX_CTL=0x103"], dm.socket)
        tap.ok(rc == 0 and "103 (written)" in out,
               "pmugate write -u leases the first online CPU for such a unit by itself", out + err)
        a.close()
    finally:
        dm.stop()


def test_packages_from_numa(tap):
    # Socket 0's IMC sits on bus 0xae, socket 1's on 0x3a: bus order says the opposite.
    d, m, conf, dm = start("job", machine=skx(imc_buses=[0xAE, 0x3A]))
    try:
        got = units_by_bus(dm)
        tap.ok(all(p == 0 for b, p in got.items() if ":ae:" in b) and all(p == 1 for b, p in got.items() if ":3a:" in b),
               "each unit's package is its NUMA node's, not its rank in bus order", got)
        ctl(dm, "grant", "--job", "5", "--uid", str(USER), "--cpus", "0-1")
        units = t.Client(dm.socket).call("hello")["units"]
        mine = [u[0] for u in units if ":ae:" in u[1]][0]
        other = [u for u in units if ":3a:" in u[1]][0]
        m.set_pci(other[1], BOX_CTL, 0x100)
        a = Agent(dm)
        a.call("lease", cpus=[0, 1])
        r = a.batch([["pw", other[0], BOX_CTL, 0x103]])
        tap.ok(name(r) == "out-of-scope" and "package 1" in reason(r),
               "a job holding all of package 0 cannot write socket 1's unit on the lower bus", r)
        tap.eq(m.pci(other[1], BOX_CTL), 0x100, "nothing was written")
        tap.eq(name(a.batch([["pw", mine, BOX_CTL, 0x103]])), "ok", "its own package's unit it may write")
        a.close()
    finally:
        dm.stop()

    def odd_topology(root):
        fm = t.FakeMachine(root, "skx", sockets=2, cores=2, smt=False)
        # node 0's CPUs span both packages; node 1 is unknown to the device
        fm._write("sys/devices/system/node/node0/cpulist", "0-3\n")
        for bdf in fm.units:
            if ":ae:" in bdf:
                fm._write("sys/bus/pci/devices/%s/numa_node" % bdf, "-1\n")
        return fm
    d, m, conf, dm = start("open", machine=odd_topology)
    try:
        got = set(units_by_bus(dm).values())
        tap.eq(got, {-1}, "a node spanning two packages, or numa_node -1: the package is unknown")
        r = t.in_child_as(USER, OTHER_GID, [t.USER_GID], lambda: name(t.Client(dm.socket).batch(
            [["pw", 0, BOX_CTL, 0x103]])))
        tap.eq(r, "not-authorized", "and only an admin may write such a unit")
    finally:
        dm.stop()

    d, m, conf, dm = start("open", machine=skx(numa=False))
    try:
        tap.eq(set(units_by_bus(dm).values()), {-1}, "no numa_node file: the package is unknown")
    finally:
        dm.stop()


def test_pci_domain(tap):
    # Each socket's IMC on bus 0x3a, in PCI domains of their own: only the domain tells them apart.
    d, m, conf, dm = start("open", machine=skx(imc_domain=[0x0000, 0x0001], imc_buses=[0x3A, 0x3A]))
    try:
        got = units_by_bus(dm)
        tap.ok(len(got) == 12 and all(p == (0 if b.startswith("0000:") else 1) for b, p in got.items()),
               "two domains with the same bus: each unit gets its own socket's package", got)
    finally:
        dm.stop()
    for domain in (0x0001, 0x10000):
        d, m, conf, dm = start("open", machine=skx(imc_domain=domain))
        try:
            units = t.Client(dm.socket).call("hello")["units"]
            prefix = "%04x" % domain
            tap.ok(len(units) == 12 and all(u[1].startswith(prefix + ":") for u in units),
                   "PCI domain %s: the units keep their domain" % prefix, units)
            tap.eq(sorted(u[4] for u in units), [0] * 6 + [1] * 6, "PCI domain %s: packages from NUMA" % prefix)
            m.set_pci(units[0][1], IMC_CTR0, 0x123456789A, width=8)
            r = t.Client(dm.socket).batch([["pr", units[0][0], IMC_CTR0]])
            tap.eq(r.get("values"), [0x123456789A], "PCI domain %s: the daemon reads the right function" % prefix)
        finally:
            dm.stop()


def test_many_unrelated_functions(tap):
    def crowded(root):
        fm = t.FakeMachine(root, "skx", sockets=2, cores=2, smt=False)
        for i in range(2048):
            fm.add_pci("0000:%02x:%02x.%d" % (1 + i // 256, (i // 8) % 32, i % 8), 0x8086, 0x1000 + i % 7, listed=False)
        return fm
    d, m, conf, dm = start("open", machine=crowded)
    try:
        units = t.Client(dm.socket).call("hello")["units"]
        tap.eq(len(units), 12, "2048 unrelated PCI functions do not crowd out the 12 IMC channels")
        tap.ok(all(u[3] in (0x2042, 0x2046, 0x204A) for u in units), "and none of them is served", units[:3])
    finally:
        dm.stop()


def test_allowlist_with_shared_registers(d):
    out = os.path.join(d, "allowlists")
    os.makedirs(out)
    shutil.copy(os.path.join(t.ALLOWLISTS, "intel-spr.conf"), out)
    with open(os.path.join(out, "intel-spr.conf"), "a") as f:
        f.write("msr 0x6F0  0xFF  core     core-pmu  TEST_CORE_CTL\n"
                "msr 0x6F8  0xFF  package  core-pmu  TEST_PKG_CTL\n")
    return out


def test_core_and_package_registers(tap):
    d = t.workdir()
    allow = test_allowlist_with_shared_registers(d)
    # One socket, two cores of two threads: core 0 is CPUs 0 and 2, core 1 is CPUs 1 and 3.
    m = t.FakeMachine(os.path.join(d, "root"), "spr", sockets=1, cores=2, smt=True)
    conf = os.path.join(d, "pmugate.conf")
    config(conf, "open")
    dm = t.Daemon(d, ["--root=" + m.root], config=conf, allowlist_dir=allow)
    try:
        m.set_msr(0, CORE_CTL, 0x5)
        m.set_msr(0, PKG_CTL, 0x7)
        a, b = Agent(dm), Agent(dm, uid=OTHER_USER)
        a.call("lease", cpus=[0])
        b.call("lease", cpus=[2])
        r = a.batch([["w", 0, CORE_CTL, 0x55]])
        tap.ok(name(r) == "no-lease" and "CPU 2 is not leased" in reason(r),
               "a lease on one thread does not write the core's register", r)
        r = b.batch([["w", 2, CORE_CTL, 0x66]])
        tap.ok(name(r) == "no-lease" and "CPU 0 is not leased" in reason(r), "nor does one on its sibling", r)
        tap.eq(m.msr(0, CORE_CTL), 0x5, "so two sibling leases never both remember it and restore over each other")
        tap.eq(name(a.batch([["w", 0, EVTSEL0, 0x43003C]])), "ok", "thread registers stay each lease's own")

        b.call("release")
        a.call("lease", cpus=[0, 2])
        tap.eq(name(a.batch([["w", 0, CORE_CTL, 0x55], ["w", 2, CORE_CTL, 0x56]])), "ok",
               "holding both threads, the core's register is writable through either")
        got = leases(dm)
        tap.eq((got[0][2], got[2][2]), (2 + 1, 0),
               "it is journaled once, under the core's first CPU (beside EVTSEL0 and the PMC0 it starts)")
        a.call("release", cpus=[2])
        tap.eq(m.msr(0, CORE_CTL), 0x5, "letting go of one thread restores the core's register at once")
        tap.eq(m.msr(0, EVTSEL0), 0x43003C, "while the remaining lease keeps its own registers")

        r = a.batch([["w", 0, PKG_CTL, 0x77]])
        tap.ok(name(r) == "no-lease" and "every CPU of package 0" in reason(r),
               "a package register needs leases on every CPU of the package", r)
        a.call("lease", cpus=[0, 1, 2, 3])
        before = leases(dm)[0][2]
        tap.eq(name(a.batch([["w", 0, PKG_CTL, 0x77], ["w", 3, PKG_CTL, 0x78]])), "ok", "with all four, it is writable")
        got = leases(dm)
        tap.eq((got[0][2] - before, got[3][2]), (1, 0),
               "and journaled once, under the package's first CPU, whichever CPU named it")
        a.call("release", cpus=[1])
        tap.eq(m.msr(0, PKG_CTL), 0x7, "letting go of any CPU of the package restores it")
        a.close()
        b.close()
        rc, out, err = t.run_cli([t.PMUGATE, "write", "-c", "0", "TEST_CORE_CTL=0x55", "TEST_PKG_CTL=0x77"], dm.socket)
        tap.ok(rc == 0 and out.count("(written)") == 2,
               "pmugate write leases the threads of the core and the CPUs of the package by itself", out + err)
        # the daemon restores them when it sees the connection close, which may come a moment
        # after the CLI's exit status
        deadline = time.monotonic() + 5
        while (m.msr(0, CORE_CTL), m.msr(0, PKG_CTL)) != (0x5, 0x7) and time.monotonic() < deadline:
            time.sleep(0.01)
        tap.eq((m.msr(0, CORE_CTL), m.msr(0, PKG_CTL)), (0x5, 0x7), "and the registers are back when it exits")
    finally:
        dm.stop()

    d, m, conf, dm = start("open", machine=skx())
    try:
        units = t.Client(dm.socket).call("hello")["units"]
        unit, bdf = [(u[0], u[1]) for u in units if u[4] == 0][0]
        m.set_pci(bdf, BOX_CTL, 0x100)
        admin = t.Client(dm.socket)
        admin.call("lease", cpus=[0, 1])
        tap.eq(name(admin.batch([["pw", unit, BOX_CTL, 0x103]])), "ok", "an IMC unit of package 0 is written")
        admin.call("release", cpus=[1])
        tap.eq(m.pci(bdf, BOX_CTL), 0, "and restored (clean: not frozen) as soon as its holder no longer holds "
               "all of package 0")
    finally:
        dm.stop()


def test_cli_says_revoked(tap):
    d, m, conf, dm = start("job")
    try:
        ctl(dm, "grant", "--job", "A", "--uid", str(USER), "--cpus", "0-1")
        ctl(dm, "grant", "--job", "B", "--uid", str(USER), "--cpus", "2-3")
        env = dict(os.environ, PMUGATE_SOCKET=dm.socket)
        p = t.spawn([t.PMUGATE, "stat", "-e", "INST_RETIRED.ANY", "-c", "2", "-I", "100ms", "-S", "20s"], env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    preexec_fn=t.as_user(USER, OTHER_GID, [t.USER_GID]))
        deadline = time.time() + 10
        while time.time() < deadline and 2 not in leases(dm):
            time.sleep(0.05)
        tap.ok(2 in leases(dm), "pmugate stat measures CPU 2 under job B's grant")
        ctl(dm, "revoke", "--job", "B")
        out, err = p.communicate(timeout=20)
        tap.ok(p.returncode == 1 and "[revoked]" in err and "job B's grant was revoked" in err,
               "when B is revoked the CLI stops with a line that says so", err)
        tap.eq(len(err.strip().splitlines()), 1, "and only that line: the daemon already restored the registers")
    finally:
        dm.stop()


sys.exit(t.Tap().run([test_revoke_one_of_two_grants, test_replaced_grant, test_shrunken_cpuset,
                      test_cpuset_walk_stops_at_the_job, test_reload, test_offline_socket, test_packages_from_numa,
                      test_pci_domain, test_many_unrelated_functions, test_core_and_package_registers,
                      test_cli_says_revoked]))
